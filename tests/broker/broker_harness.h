// Test harness: runs the real `sluice broker` binary on a free port with a
// scratch data dir, and runs client programs (kcat, /usr/bin/python3
// scripts) against it as subprocesses.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace sluice::testing {

int FreePort();

class BrokerProcess {
 public:
  // extra_args are appended after `broker --listen ... --data-dir ...`.
  explicit BrokerProcess(std::vector<std::string> extra_args = {});
  ~BrokerProcess();

  void Start();  // blocks until the port accepts connections
  void Stop();   // SIGTERM and wait
  void Kill();   // SIGKILL: a crash, no clean shutdown

  // Test-only storage mode (before Start): the broker journals the length of
  // every file it fdatasyncs, which PowerCut needs.
  void RecordSyncedLengths();
  // A simulated power loss: SIGKILL, then every segment, index and offsets
  // file is cut back to the last length the broker synced (0 when never),
  // as if the page cache were gone. With `torn`, random bytes are appended
  // to each partition's active segment, as a write half on disk would leave.
  // Returns the bytes cut off.
  std::int64_t PowerCut(bool torn = false, unsigned seed = 1);
  void Restart() {
    Stop();
    Start();
  }

  std::string bootstrap() const { return "127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }
  pid_t pid() const { return pid_; }  // -1 when not running
  const std::filesystem::path& data_dir() const { return data_dir_; }
  std::string log() const;

 private:
  std::filesystem::path root_, data_dir_;
  std::vector<std::string> extra_args_;
  std::filesystem::path synced_journal_;
  int port_;
  pid_t pid_ = -1;
};

struct CommandResult {
  int exit_code = -1;
  std::string out;
};

// Runs `command` through /bin/sh; stdout is captured, stderr goes to ours.
CommandResult RunShell(const std::string& command);

// /usr/bin/python3 <SLUICE_SOURCE_DIR>/tests/broker/clients/<script> <args...>
CommandResult RunPython(const std::string& script, const std::string& args);

std::string SourceDir();

}  // namespace sluice::testing
