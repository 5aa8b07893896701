// fdatasync with a witness. SyncFile is how broker storage makes a file's
// bytes durable; in the test-only mode turned on by RecordSyncedLengthsTo, it
// also appends "<length> <path>" to a journal after each successful sync, so
// a test can simulate a power cut: kill the broker with -9 and cut every
// file back to the last length the journal vouches for.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>

#include "common/status.h"

namespace sluice::broker::storage {

// Test-only: record every synced length in `journal` (appended to). Call once,
// before the broker opens its storage.
void RecordSyncedLengthsTo(const std::filesystem::path& journal);

// Test-only simulated fault: while `marker` exists, every append fails as a
// full disk would (ENOSPC), before writing anything.
void SimulateDiskFullWhileExists(const std::filesystem::path& marker);
bool SimulatedDiskFull();

// Test-only simulated slow disk: every SyncFile waits this long before its
// fdatasync, so writes pile up unsynced (and unacknowledged) in between,
// which is what a power cut can take.
void SimulateSlowSync(std::chrono::milliseconds delay);

// Makes every byte written to `fd` so far durable (fdatasync). `path` names
// the file in errors and in the journal.
common::Status SyncFile(int fd, const std::string& path);

// Makes a directory's entries durable (files created, renamed or removed in it).
common::Status SyncDirectory(const std::filesystem::path& dir);

}  // namespace sluice::broker::storage
