#include "connectors/postgres/pgoutput_decoder.h"

#include <fmt/format.h>

namespace sluice::connectors::postgres {

namespace {

using common::Result;
using common::Status;

// Bounds-checked big-endian reader: every read says whether it fitted, so a
// truncated message surfaces as an error at the first missing byte.
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}

  bool U8(std::uint8_t* out) {
    if (!Need(1)) return false;
    *out = static_cast<std::uint8_t>(data_[pos_++]);
    return true;
  }
  bool U16(std::uint16_t* out) {
    std::uint64_t v;
    if (!Be(2, &v)) return false;
    *out = static_cast<std::uint16_t>(v);
    return true;
  }
  bool U32(std::uint32_t* out) {
    std::uint64_t v;
    if (!Be(4, &v)) return false;
    *out = static_cast<std::uint32_t>(v);
    return true;
  }
  bool I32(std::int32_t* out) {
    std::uint32_t v;
    if (!U32(&v)) return false;
    *out = static_cast<std::int32_t>(v);
    return true;
  }
  bool U64(std::uint64_t* out) { return Be(8, out); }
  bool I64(std::int64_t* out) {
    std::uint64_t v;
    if (!U64(&v)) return false;
    *out = static_cast<std::int64_t>(v);
    return true;
  }
  // A NUL-terminated string.
  bool CString(std::string* out) {
    auto end = data_.find('\0', pos_);
    if (end == std::string_view::npos) {
      failed_ = "unterminated string";
      return false;
    }
    out->assign(data_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return true;
  }
  bool Bytes(std::size_t n, std::string* out) {
    if (!Need(n)) return false;
    out->assign(data_.substr(pos_, n));
    pos_ += n;
    return true;
  }
  bool AtEnd() const { return pos_ == data_.size(); }
  std::size_t pos() const { return pos_; }
  const std::string& failure() const { return failed_; }

 private:
  bool Need(std::size_t n) {
    if (data_.size() - pos_ < n) {
      failed_ =
          fmt::format("needs {} more bytes at offset {}, has {}", n, pos_, data_.size() - pos_);
      return false;
    }
    return true;
  }
  bool Be(int n, std::uint64_t* out) {
    if (!Need(n)) return false;
    std::uint64_t v = 0;
    for (int i = 0; i < n; ++i) v = (v << 8) | static_cast<std::uint8_t>(data_[pos_++]);
    *out = v;
    return true;
  }

  std::string_view data_;
  std::size_t pos_ = 0;
  std::string failed_;
};

Status Truncated(char type, const Reader& r) {
  return common::InvalidArgument(
      fmt::format("malformed pgoutput message '{}': {}", type, r.failure()));
}

#define READ_OR_FAIL(call) \
  if (!(call)) return Truncated(type, r)

Status ReadTuple(char type, Reader& r, TupleData* tuple) {
  std::uint16_t ncols;
  READ_OR_FAIL(r.U16(&ncols));
  tuple->clear();
  tuple->reserve(ncols);
  for (std::uint16_t i = 0; i < ncols; ++i) {
    std::uint8_t kind;
    READ_OR_FAIL(r.U8(&kind));
    TupleValue value;
    switch (kind) {
      case 'n':
        value.kind = TupleValue::Kind::kNull;
        break;
      case 'u':
        value.kind = TupleValue::Kind::kUnchangedToast;
        break;
      case 't':
      case 'b': {
        value.kind = kind == 't' ? TupleValue::Kind::kText : TupleValue::Kind::kBinary;
        std::int32_t len;
        READ_OR_FAIL(r.I32(&len));
        if (len < 0) {
          return common::InvalidArgument(
              fmt::format("malformed pgoutput message '{}': negative column length {}", type, len));
        }
        READ_OR_FAIL(r.Bytes(static_cast<std::size_t>(len), &value.data));
        break;
      }
      default:
        return common::InvalidArgument(fmt::format(
            "malformed pgoutput message '{}': unknown tuple value kind 0x{:02x} in column {}", type,
            kind, i));
    }
    tuple->push_back(std::move(value));
  }
  return Status::Ok();
}

#define TUPLE_OR_FAIL(tuple) SLUICE_RETURN_IF_ERROR(ReadTuple(type, r, &(tuple)))

}  // namespace

Result<PgOutputMessage> PgOutputDecoder::Decode(std::string_view message) {
  if (message.empty()) return common::InvalidArgument("empty pgoutput message");
  const char type = message[0];
  Reader r(message.substr(1));
  // Data messages carry the (sub)transaction id only inside a streamed block.
  auto stream_xid = [&](std::uint32_t* xid) { return !in_stream_ || r.U32(xid); };
  PgOutputMessage out;

  switch (type) {
    case 'B': {
      BeginMessage m;
      READ_OR_FAIL(r.U64(&m.final_lsn));
      READ_OR_FAIL(r.I64(&m.commit_time));
      READ_OR_FAIL(r.U32(&m.xid));
      out = m;
      break;
    }
    case 'C': {
      CommitMessage m;
      READ_OR_FAIL(r.U8(&m.flags));
      READ_OR_FAIL(r.U64(&m.commit_lsn));
      READ_OR_FAIL(r.U64(&m.end_lsn));
      READ_OR_FAIL(r.I64(&m.commit_time));
      out = m;
      break;
    }
    case 'O': {
      OriginMessage m;
      READ_OR_FAIL(r.U64(&m.commit_lsn));
      READ_OR_FAIL(r.CString(&m.name));
      out = std::move(m);
      break;
    }
    case 'R': {
      RelationMessage m;
      READ_OR_FAIL(stream_xid(&m.xid));
      READ_OR_FAIL(r.U32(&m.relation_id));
      READ_OR_FAIL(r.CString(&m.namespace_name));
      READ_OR_FAIL(r.CString(&m.relation_name));
      std::uint8_t ident;
      READ_OR_FAIL(r.U8(&ident));
      m.replica_identity = static_cast<char>(ident);
      std::uint16_t ncols;
      READ_OR_FAIL(r.U16(&ncols));
      m.columns.resize(ncols);
      for (auto& c : m.columns) {
        std::uint8_t flags;
        READ_OR_FAIL(r.U8(&flags));
        c.key = (flags & 1) != 0;
        READ_OR_FAIL(r.CString(&c.name));
        READ_OR_FAIL(r.U32(&c.type_oid));
        READ_OR_FAIL(r.I32(&c.type_modifier));
      }
      out = std::move(m);
      break;
    }
    case 'Y': {
      TypeMessage m;
      READ_OR_FAIL(stream_xid(&m.xid));
      READ_OR_FAIL(r.U32(&m.type_oid));
      READ_OR_FAIL(r.CString(&m.namespace_name));
      READ_OR_FAIL(r.CString(&m.type_name));
      out = std::move(m);
      break;
    }
    case 'I': {
      InsertMessage m;
      READ_OR_FAIL(stream_xid(&m.xid));
      READ_OR_FAIL(r.U32(&m.relation_id));
      std::uint8_t marker;
      READ_OR_FAIL(r.U8(&marker));
      if (marker != 'N') {
        return common::InvalidArgument(
            fmt::format("malformed pgoutput message 'I': expected 'N', got 0x{:02x}", marker));
      }
      TUPLE_OR_FAIL(m.new_tuple);
      out = std::move(m);
      break;
    }
    case 'U': {
      UpdateMessage m;
      READ_OR_FAIL(stream_xid(&m.xid));
      READ_OR_FAIL(r.U32(&m.relation_id));
      std::uint8_t marker;
      READ_OR_FAIL(r.U8(&marker));
      if (marker == 'K' || marker == 'O') {
        m.old_kind = static_cast<char>(marker);
        TUPLE_OR_FAIL(m.old_tuple);
        READ_OR_FAIL(r.U8(&marker));
      }
      if (marker != 'N') {
        return common::InvalidArgument(
            fmt::format("malformed pgoutput message 'U': expected 'N', got 0x{:02x}", marker));
      }
      TUPLE_OR_FAIL(m.new_tuple);
      out = std::move(m);
      break;
    }
    case 'D': {
      DeleteMessage m;
      READ_OR_FAIL(stream_xid(&m.xid));
      READ_OR_FAIL(r.U32(&m.relation_id));
      std::uint8_t marker;
      READ_OR_FAIL(r.U8(&marker));
      if (marker != 'K' && marker != 'O') {
        return common::InvalidArgument(fmt::format(
            "malformed pgoutput message 'D': expected 'K' or 'O', got 0x{:02x}", marker));
      }
      m.old_kind = static_cast<char>(marker);
      TUPLE_OR_FAIL(m.old_tuple);
      out = std::move(m);
      break;
    }
    case 'T': {
      TruncateMessage m;
      READ_OR_FAIL(stream_xid(&m.xid));
      std::uint32_t n;
      READ_OR_FAIL(r.U32(&n));
      std::uint8_t options;
      READ_OR_FAIL(r.U8(&options));
      m.cascade = (options & 1) != 0;
      m.restart_identity = (options & 2) != 0;
      // Check the length before reserving: a corrupt count must not allocate.
      if (n > (message.size() - 1 - r.pos()) / 4) {
        return common::InvalidArgument(fmt::format(
            "malformed pgoutput message 'T': {} relations do not fit in the message", n));
      }
      m.relation_ids.resize(n);
      for (auto& id : m.relation_ids) READ_OR_FAIL(r.U32(&id));
      out = std::move(m);
      break;
    }
    case 'M': {
      LogicalMessage m;
      READ_OR_FAIL(stream_xid(&m.xid));
      std::uint8_t flags;
      READ_OR_FAIL(r.U8(&flags));
      m.transactional = (flags & 1) != 0;
      READ_OR_FAIL(r.U64(&m.lsn));
      READ_OR_FAIL(r.CString(&m.prefix));
      std::int32_t len;
      READ_OR_FAIL(r.I32(&len));
      if (len < 0)
        return common::InvalidArgument("malformed pgoutput message 'M': negative length");
      READ_OR_FAIL(r.Bytes(static_cast<std::size_t>(len), &m.content));
      out = std::move(m);
      break;
    }
    case 'S': {
      StreamStartMessage m;
      READ_OR_FAIL(r.U32(&m.xid));
      std::uint8_t first;
      READ_OR_FAIL(r.U8(&first));
      m.first_segment = first == 1;
      if (!r.AtEnd()) break;  // reported below
      in_stream_ = true;
      out = m;
      break;
    }
    case 'E':
      if (!r.AtEnd()) break;
      in_stream_ = false;
      out = StreamStopMessage{};
      break;
    case 'c': {
      StreamCommitMessage m;
      READ_OR_FAIL(r.U32(&m.xid));
      READ_OR_FAIL(r.U8(&m.flags));
      READ_OR_FAIL(r.U64(&m.commit_lsn));
      READ_OR_FAIL(r.U64(&m.end_lsn));
      READ_OR_FAIL(r.I64(&m.commit_time));
      out = m;
      break;
    }
    case 'A': {
      StreamAbortMessage m;
      READ_OR_FAIL(r.U32(&m.xid));
      READ_OR_FAIL(r.U32(&m.subxid));
      // Protocol v4 (PostgreSQL 16, parallel apply) appends abort LSN and time.
      std::uint64_t ignored;
      if (!r.AtEnd()) {
        READ_OR_FAIL(r.U64(&ignored));
        READ_OR_FAIL(r.U64(&ignored));
      }
      out = m;
      break;
    }
    default:
      return common::InvalidArgument(
          fmt::format("unsupported pgoutput message type 0x{:02x}",
                      static_cast<unsigned>(static_cast<unsigned char>(type))));
  }
  if (!r.AtEnd()) {
    return common::InvalidArgument(fmt::format("malformed pgoutput message '{}': {} trailing bytes",
                                               type, message.size() - 1 - r.pos()));
  }
  return out;
}

}  // namespace sluice::connectors::postgres
