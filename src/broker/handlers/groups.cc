// FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
// DescribeGroups, ListGroups: wire layouts only; rules live in
// groups::GroupCoordinator.
#include "broker/handlers/handlers.h"
#include "broker/protocol/api.h"

namespace sluice::broker::handlers {

namespace err = protocol::error;

Reply FindCoordinator(Broker& b, const RequestContext& ctx, Reader& in, Writer& out) {
  const int v = ctx.api_version;
  std::string key = in.String();  // group or transactional id; this node coordinates all
  std::int8_t key_type = v >= 1 ? in.Int8() : 0;
  if (v >= 1) out.Int32(0);
  if (key_type == 0 && !ctx.MayUseGroup(key)) {
    out.Int16(err::kGroupAuthorizationFailed);
    if (v >= 1) out.NullableString("not authorized for this group");
    out.Int32(-1);
    out.String("");
    out.Int32(-1);
    return Reply::kSend;
  }
  if (key_type != 0) {
    out.Int16(err::kCoordinatorNotAvailable);
    if (v >= 1) out.NullableString("transactions are not supported");
    out.Int32(-1);
    out.String("");
    out.Int32(-1);
    return Reply::kSend;
  }
  out.Int16(err::kNone);
  if (v >= 1) out.NullableString(std::nullopt);
  out.Int32(b.options().node_id);
  out.String(b.advertised_host());
  out.Int32(b.advertised_port());
  return Reply::kSend;
}

Reply JoinGroup(Broker& b, const RequestContext& ctx, Reader& in, Writer& out) {
  const int v = ctx.api_version;
  groups::JoinRequest req;
  req.group_id = in.String();
  req.session_timeout_ms = in.Int32();
  req.rebalance_timeout_ms = v >= 1 ? in.Int32() : req.session_timeout_ms;
  req.member_id = in.String();
  if (v >= 5) in.NullableString();  // group_instance_id: static membership not supported
  req.protocol_type = in.String();
  std::int32_t np = in.ArrayLength();
  for (std::int32_t i = 0; i < np; ++i) {
    groups::Protocol p;
    p.name = in.String();
    p.metadata = std::string(in.Bytes());
    req.protocols.push_back(std::move(p));
  }
  req.client_id = ctx.client_id;
  req.client_host = ctx.client_host;
  req.member_id_required = v >= 4;
  groups::JoinResult r;
  if (ctx.MayUseGroup(req.group_id)) {
    r = b.groups().Join(req);
  } else {
    r.error = err::kGroupAuthorizationFailed;
    r.generation = -1;
    r.member_id = req.member_id;
  }
  if (v >= 2) out.Int32(0);
  out.Int16(r.error);
  out.Int32(r.generation);
  out.String(r.protocol_name);
  out.String(r.leader);
  out.String(r.member_id);
  out.ArrayLength(r.members.size());
  for (const auto& [id, meta] : r.members) {
    out.String(id);
    if (v >= 5) out.NullableString(std::nullopt);
    out.Bytes(meta);
  }
  return Reply::kSend;
}

Reply SyncGroup(Broker& b, const RequestContext& ctx, Reader& in, Writer& out) {
  const int v = ctx.api_version;
  std::string group = in.String();
  std::int32_t generation = in.Int32();
  std::string member = in.String();
  if (v >= 3) in.NullableString();
  std::vector<std::pair<std::string, std::string>> assignments;
  std::int32_t n = in.ArrayLength();
  for (std::int32_t i = 0; i < n; ++i) {
    std::string id = in.String();
    assignments.emplace_back(id, std::string(in.Bytes()));
  }
  groups::SyncResult r;
  if (ctx.MayUseGroup(group)) {
    r = b.groups().Sync(group, generation, member, assignments);
  } else {
    r.error = err::kGroupAuthorizationFailed;
  }
  if (v >= 1) out.Int32(0);
  out.Int16(r.error);
  out.Bytes(r.assignment);
  return Reply::kSend;
}

Reply Heartbeat(Broker& b, const RequestContext& ctx, Reader& in, Writer& out) {
  std::string group = in.String();
  std::int32_t generation = in.Int32();
  std::string member = in.String();
  if (ctx.api_version >= 3) in.NullableString();
  if (ctx.api_version >= 1) out.Int32(0);
  out.Int16(ctx.MayUseGroup(group) ? b.groups().Heartbeat(group, generation, member)
                                   : err::kGroupAuthorizationFailed);
  return Reply::kSend;
}

Reply LeaveGroup(Broker& b, const RequestContext& ctx, Reader& in, Writer& out) {
  const int v = ctx.api_version;
  std::string group = in.String();
  std::vector<std::string> members;
  if (v >= 3) {
    std::int32_t n = in.ArrayLength();
    for (std::int32_t i = 0; i < n; ++i) {
      members.push_back(in.String());
      in.NullableString();
    }
  } else {
    members.push_back(in.String());
  }
  std::vector<std::int16_t> errors;
  for (const auto& m : members)
    errors.push_back(ctx.MayUseGroup(group) ? b.groups().Leave(group, m)
                                            : err::kGroupAuthorizationFailed);
  if (v >= 1) out.Int32(0);
  if (v >= 3) {
    out.Int16(err::kNone);
    out.ArrayLength(members.size());
    for (std::size_t i = 0; i < members.size(); ++i) {
      out.String(members[i]);
      out.NullableString(std::nullopt);
      out.Int16(errors[i]);
    }
  } else {
    out.Int16(errors.empty() ? err::kNone : errors[0]);
  }
  return Reply::kSend;
}

Reply DescribeGroups(Broker& b, const RequestContext& ctx, Reader& in, Writer& out) {
  const int v = ctx.api_version;
  auto ids = in.StringArray();
  if (v >= 3) in.Bool();
  if (v >= 1) out.Int32(0);
  out.ArrayLength(ids.size());
  for (const auto& id : ids) {
    auto d = ctx.MayUseGroup(id) ? b.groups().Describe(id) : groups::GroupDescription{};
    if (!ctx.MayUseGroup(id)) d.group_id = id;
    out.Int16(ctx.MayUseGroup(id) ? err::kNone : err::kGroupAuthorizationFailed);
    out.String(d.group_id);
    out.String(groups::GroupStateName(d.state));
    out.String(d.protocol_type);
    out.String(d.protocol);
    out.ArrayLength(d.members.size());
    for (const auto& m : d.members) {
      out.String(m.member_id);
      if (v >= 4) out.NullableString(std::nullopt);
      out.String(m.client_id);
      out.String(m.client_host);
      out.Bytes(m.metadata);
      out.Bytes(m.assignment);
    }
    if (v >= 3) out.Int32(INT32_MIN);
  }
  return Reply::kSend;
}

Reply ListGroups(Broker& b, const RequestContext& ctx, Reader&, Writer& out) {
  if (ctx.api_version >= 1) out.Int32(0);
  out.Int16(err::kNone);
  auto groups = b.groups().List();
  std::erase_if(groups, [&](const auto& g) { return !ctx.MayUseGroup(g.first); });
  out.ArrayLength(groups.size());
  for (const auto& [id, type] : groups) {
    out.String(id);
    out.String(type);
  }
  return Reply::kSend;
}

}  // namespace sluice::broker::handlers
