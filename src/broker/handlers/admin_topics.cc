// CreateTopics, DeleteTopics, CreatePartitions: single broker, replication 1.
#include "broker/handlers/handlers.h"
#include "broker/protocol/api.h"
#include "broker/storage/log_manager.h"

namespace sluice::broker::handlers {

namespace err = protocol::error;

namespace {
std::int16_t ErrorFor(const common::Status& st, std::int16_t invalid) {
  switch (st.code()) {
    case common::Code::kOk:
      return err::kNone;
    case common::Code::kAlreadyExists:
      return err::kTopicAlreadyExists;
    case common::Code::kNotFound:
      return err::kUnknownTopicOrPartition;
    case common::Code::kInvalidArgument:
      return invalid;
    default:
      return err::kUnknownServerError;
  }
}
}  // namespace

Reply CreateTopics(Broker& b, const RequestContext& ctx, Reader& in, Writer& out) {
  const int v = ctx.api_version;
  struct Req {
    std::string name;
    std::int32_t partitions;
    std::int16_t replication;
    std::int32_t assignments;
    std::map<std::string, std::string> configs;
  };
  std::vector<Req> reqs;
  std::int32_t nt = in.ArrayLength();
  for (std::int32_t t = 0; t < nt; ++t) {
    Req r;
    r.name = in.String();
    r.partitions = in.Int32();
    r.replication = in.Int16();
    r.assignments = std::max(0, in.ArrayLength());
    for (std::int32_t a = 0; a < r.assignments; ++a) {
      in.Int32();
      in.Int32Array();
    }
    std::int32_t nc = in.ArrayLength();
    for (std::int32_t c = 0; c < nc; ++c) {
      std::string k = in.String();
      auto val = in.NullableString();
      if (val) r.configs[k] = *val;
    }
    reqs.push_back(std::move(r));
  }
  in.Int32();  // timeout_ms
  bool validate_only = v >= 1 && in.Bool();

  if (v >= 2) out.Int32(0);
  out.ArrayLength(reqs.size());
  for (auto& r : reqs) {
    std::int16_t code = err::kNone;
    std::optional<std::string> message;
    if (r.assignments > 0) r.partitions = r.assignments;
    if (r.partitions == -1) r.partitions = b.options().default_partitions;
    if (!ctx.MayAdminister()) {
      code = err::kTopicAuthorizationFailed;
      message = "only the back end creates topics";
    } else if (r.replication != 1 && r.replication != -1) {
      code = err::kInvalidReplicationFactor;
      message = "this broker is a single node: replication factor must be 1";
    } else if (!storage::IsValidTopicName(r.name)) {
      code = err::kInvalidTopic;
      message = "topic names are 1-249 characters of [a-zA-Z0-9._-]";
    } else if (r.partitions <= 0) {
      code = err::kInvalidPartitions;
      message = "partition count must be positive";
    } else if (validate_only) {
      storage::TopicConfig probe;
      for (const auto& [k, val] : r.configs) {
        auto st = probe.Set(k, val);
        if (!st.ok()) {
          code = err::kInvalidConfig;
          message = st.message();
        }
      }
      if (code == err::kNone && b.logs().PartitionCount(r.name)) code = err::kTopicAlreadyExists;
    } else {
      auto st = b.logs().CreateTopic(r.name, r.partitions, r.configs);
      code = ErrorFor(st, err::kInvalidConfig);
      if (!st.ok()) message = st.message();
    }
    out.String(r.name);
    out.Int16(code);
    if (v >= 1) out.NullableString(message);
  }
  return Reply::kSend;
}

Reply DeleteTopics(Broker& b, const RequestContext& ctx, Reader& in, Writer& out) {
  auto names = in.StringArray();
  in.Int32();  // timeout_ms
  if (ctx.api_version >= 1) out.Int32(0);
  out.ArrayLength(names.size());
  for (const auto& n : names) {
    out.String(n);
    out.Int16(ctx.MayAdminister() ? ErrorFor(b.logs().DeleteTopic(n), err::kInvalidTopic)
                                  : err::kTopicAuthorizationFailed);
  }
  return Reply::kSend;
}

Reply CreatePartitions(Broker& b, const RequestContext& ctx, Reader& in, Writer& out) {
  std::vector<std::pair<std::string, std::int32_t>> reqs;
  std::int32_t nt = in.ArrayLength();
  for (std::int32_t t = 0; t < nt; ++t) {
    std::string name = in.String();
    std::int32_t count = in.Int32();
    std::int32_t na = in.ArrayLength();
    for (std::int32_t a = 0; a < na; ++a) in.Int32Array();
    reqs.emplace_back(name, count);
  }
  in.Int32();  // timeout_ms
  bool validate_only = in.Bool();
  out.Int32(0);
  out.ArrayLength(reqs.size());
  for (const auto& [name, count] : reqs) {
    common::Status st;
    if (!ctx.MayAdminister()) {
      out.String(name);
      out.Int16(err::kTopicAuthorizationFailed);
      out.NullableString("only the back end grows topics");
      continue;
    }
    if (validate_only) {
      auto cur = b.logs().PartitionCount(name);
      if (!cur) {
        st = common::NotFound("no such topic");
      } else if (count <= *cur) {
        st = common::InvalidArgument("partition count can only grow");
      }
    } else {
      st = b.logs().AddPartitions(name, count);
    }
    out.String(name);
    out.Int16(ErrorFor(st, err::kInvalidPartitions));
    out.NullableString(st.ok() ? std::nullopt : std::optional<std::string>(st.message()));
  }
  return Reply::kSend;
}

}  // namespace sluice::broker::handlers
