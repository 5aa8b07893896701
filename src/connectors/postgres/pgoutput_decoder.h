// Decodes the messages of PostgreSQL's built-in logical decoding plugin,
// pgoutput (protocol versions 1 and 2, the latter adding streamed in-progress
// transactions). Pure parsing: bytes in, one typed message out. Malformed or
// truncated input yields an error Status, never a crash or a partial value.
// Format: PostgreSQL docs, "Logical Replication Message Formats".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/status.h"
#include "connectors/change_event.h"

namespace sluice::connectors::postgres {

// One column value of a TupleData.
struct TupleValue {
  enum class Kind : char {
    kNull = 'n',
    kUnchangedToast = 'u',  // an UPDATE left this TOASTed value alone; not NULL
    kText = 't',
    kBinary = 'b',
  };
  Kind kind = Kind::kNull;
  std::string data;  // for kText / kBinary
};
using TupleData = std::vector<TupleValue>;

struct BeginMessage {
  Lsn final_lsn = 0;             // LSN of the commit record
  std::int64_t commit_time = 0;  // microseconds since 2000-01-01
  std::uint32_t xid = 0;
};
struct CommitMessage {
  std::uint8_t flags = 0;
  Lsn commit_lsn = 0;
  Lsn end_lsn = 0;  // what to confirm so a restart does not resend it
  std::int64_t commit_time = 0;
};
struct OriginMessage {
  Lsn commit_lsn = 0;
  std::string name;
};
struct RelationColumn {
  bool key = false;  // part of the replica identity
  std::string name;
  std::uint32_t type_oid = 0;
  std::int32_t type_modifier = -1;
};
struct RelationMessage {
  std::uint32_t xid = 0;  // only inside a streamed block
  std::uint32_t relation_id = 0;
  std::string namespace_name;  // "" means pg_catalog
  std::string relation_name;
  char replica_identity = 'd';  // d(efault), n(othing), f(ull), i(ndex)
  std::vector<RelationColumn> columns;
};
struct TypeMessage {
  std::uint32_t xid = 0;
  std::uint32_t type_oid = 0;
  std::string namespace_name;
  std::string type_name;
};
struct InsertMessage {
  std::uint32_t xid = 0;
  std::uint32_t relation_id = 0;
  TupleData new_tuple;
};
struct UpdateMessage {
  std::uint32_t xid = 0;
  std::uint32_t relation_id = 0;
  // 'K': old key columns (the key changed), 'O': the whole old row (REPLICA
  // IDENTITY FULL), 0: no old tuple was sent.
  char old_kind = 0;
  TupleData old_tuple;
  TupleData new_tuple;
};
struct DeleteMessage {
  std::uint32_t xid = 0;
  std::uint32_t relation_id = 0;
  char old_kind = 'K';  // 'K' or 'O', as for updates
  TupleData old_tuple;
};
struct TruncateMessage {
  std::uint32_t xid = 0;
  bool cascade = false;
  bool restart_identity = false;
  std::vector<std::uint32_t> relation_ids;
};
struct LogicalMessage {
  std::uint32_t xid = 0;
  bool transactional = false;
  Lsn lsn = 0;
  std::string prefix;
  std::string content;
};
struct StreamStartMessage {
  std::uint32_t xid = 0;
  bool first_segment = false;
};
struct StreamStopMessage {};
struct StreamCommitMessage {
  std::uint32_t xid = 0;
  std::uint8_t flags = 0;
  Lsn commit_lsn = 0;
  Lsn end_lsn = 0;
  std::int64_t commit_time = 0;
};
struct StreamAbortMessage {
  std::uint32_t xid = 0;
  std::uint32_t subxid = 0;  // == xid when the whole transaction aborted
};

using PgOutputMessage =
    std::variant<BeginMessage, CommitMessage, OriginMessage, RelationMessage, TypeMessage,
                 InsertMessage, UpdateMessage, DeleteMessage, TruncateMessage, LogicalMessage,
                 StreamStartMessage, StreamStopMessage, StreamCommitMessage, StreamAbortMessage>;

// Stateful only in one respect: inside a Stream Start/Stop block, protocol
// v2 prefixes data messages with the transaction id, so the decoder tracks
// whether it is in such a block.
class PgOutputDecoder {
 public:
  // `in_stream`: start as if inside a Stream Start/Stop block (to decode a
  // streamed transaction's messages again, as kept by a TransactionSpool).
  explicit PgOutputDecoder(bool in_stream = false) : in_stream_(in_stream) {}

  common::Result<PgOutputMessage> Decode(std::string_view message);

  bool in_stream() const { return in_stream_; }

 private:
  bool in_stream_ = false;
};

}  // namespace sluice::connectors::postgres
