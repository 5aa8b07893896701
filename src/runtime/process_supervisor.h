// The embedded launcher's engine: keeps local processes running, restarting
// a process that exits with exponential backoff, and says how often it did
// (a crash loop is visible, not hidden). Kubernetes does this job in
// production; see kubernetes_manifest.h.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace sluice::runtime {

struct ProcessSpec {
  std::vector<std::string> argv;
  std::vector<std::string> env;  // "KEY=value", added to this process's environment
  std::string log_path;          // stdout and stderr, appended; empty: inherit
};

struct ProcessExit {
  std::string key;
  int exit_code;  // -1 when killed by a signal
  int signal;     // 0 unless killed by a signal
  int restarts;   // restarts so far, before the next one
  // The last line the process wrote to its log_path (at most 500 bytes of
  // it), usually why it exited; empty without a log.
  std::string last_line;
};

struct SupervisorOptions {
  std::chrono::milliseconds initial_backoff{500};
  std::chrono::milliseconds max_backoff{30'000};
  // A process that ran this long without exiting resets its backoff.
  std::chrono::milliseconds healthy_after{30'000};
  // Each child gets PR_SET_PDEATHSIG(SIGKILL): it dies with this process,
  // even a SIGKILLed one (the orchestrator's workers: a dead back end's
  // pods must not run on beside the new leader's). The kernel ties this to
  // the thread that forked, so Ensure must be called from a thread that
  // lives as long as the processes should (restarts fork on the
  // supervisor's own thread). `sluice up` sets it for its broker, and the
  // orchestrator for its workers.
  bool die_with_parent = false;
};

class ProcessSupervisor {
 public:
  explicit ProcessSupervisor(SupervisorOptions options = {});
  ~ProcessSupervisor();  // stops every process (TERM, then KILL after 5 s)

  // Called from the supervisor thread each time a supervised process exits
  // on its own (not when asked to stop).
  void OnExit(std::function<void(const ProcessExit&)> callback);

  // Starts `key` if it is not running, then keeps it running.
  void Ensure(const std::string& key, ProcessSpec spec);
  // Stops and forgets `key`: SIGTERM, then SIGKILL once `grace` passed.
  // Returns true when the process had to be killed.
  bool Stop(const std::string& key, std::chrono::milliseconds grace);
  // Stops and forgets every process, all at once under one grace. Returns
  // how many had to be killed.
  int StopAll(std::chrono::milliseconds grace);
  // SIGKILLs and forgets every process at once, with no SIGTERM first: a
  // process that lost the right to run them (a back end no longer leading)
  // must not let them report a clean STOPPED. Returns how many there were.
  int KillAll();
  bool IsRunning(const std::string& key) const;
  // Whether `key` is kept running: running, or waiting out its restart
  // backoff after an exit (not stopped or forgotten).
  bool Supervises(const std::string& key) const;
  std::optional<pid_t> Pid(const std::string& key) const;
  int Restarts(const std::string& key) const;
  std::vector<std::string> Keys() const;

 private:
  // Forgets every process and returns them (key, pid) for stopping.
  std::vector<std::pair<std::string, pid_t>> TakeAll();

  struct Child {
    ProcessSpec spec;
    pid_t pid = -1;
    int restarts = 0;
    std::chrono::milliseconds backoff{0};
    std::chrono::steady_clock::time_point started{};
    std::chrono::steady_clock::time_point restart_at{};
  };
  void Loop();
  pid_t Spawn(const ProcessSpec& spec);

  SupervisorOptions options_;
  mutable std::mutex mu_;
  std::map<std::string, Child> children_;
  std::function<void(const ProcessExit&)> on_exit_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace sluice::runtime
