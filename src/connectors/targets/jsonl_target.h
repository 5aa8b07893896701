// The JSONL file target: one line per change, {"op", "key", "after",
// "position"}, appended to <root>/<directory>/<table>.jsonl (mode 0640) and
// fsynced per batch. `root` is the operator's --jsonl-root; `directory` is
// relative inside it and `table` one file name (guard/jsonl_path.h), so
// nothing is written anywhere else. The file is rotated to
// <table>.<epoch ms>.jsonl past rotate_bytes. Every failure (ENOSPC, EACCES,
// EIO) is an outage: nothing is refused, nothing counts as delivered before
// the fsync, and a failed append is cut back. A file
// is a log, so a redelivered change appears again: `position` (topic/
// partition/offset) lets a reader drop the repeat.
#pragma once

#include <string>

#include "connectors/targets/target.h"

namespace sluice::connectors::targets {

struct JsonlTargetOptions {
  std::string root;       // the operator's --jsonl-root
  std::string directory;  // relative to root
  std::string table;
  std::size_t rotate_bytes = 64 * 1024 * 1024;
};

class JsonlTarget : public Target {
 public:
  explicit JsonlTarget(JsonlTargetOptions options) : options_(std::move(options)) {}
  common::Result<std::vector<RejectedChange>> Apply(
      const std::vector<TargetChange>& batch) override;

 private:
  JsonlTargetOptions options_;
};

}  // namespace sluice::connectors::targets
