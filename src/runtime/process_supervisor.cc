#include "runtime/process_supervisor.h"

#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "common/subprocess.h"

extern char** environ;

namespace sluice::runtime {

using Steady = std::chrono::steady_clock;

ProcessSupervisor::ProcessSupervisor(SupervisorOptions options)
    : options_(options), thread_([this] { Loop(); }) {}

ProcessSupervisor::~ProcessSupervisor() {
  StopAll(std::chrono::milliseconds(5000));
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  thread_.join();
}

void ProcessSupervisor::OnExit(std::function<void(const ProcessExit&)> callback) {
  std::lock_guard lock(mu_);
  on_exit_ = std::move(callback);
}

pid_t ProcessSupervisor::Spawn(const ProcessSpec& spec) {
  // Build everything before fork: the child may only call async-signal-safe
  // functions.
  std::vector<char*> argv;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> env_storage;
  for (char** e = environ; *e; ++e) env_storage.emplace_back(*e);
  for (const auto& e : spec.env) env_storage.push_back(e);
  std::vector<char*> envp;
  for (auto& e : env_storage) envp.push_back(e.data());
  envp.push_back(nullptr);
  int log_fd = -1;
  if (!spec.log_path.empty()) {
    log_fd = open(spec.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  }
  sigset_t none;
  sigemptyset(&none);
  const pid_t parent = getpid();
  const bool die_with_parent = options_.die_with_parent;
  pid_t pid = fork();
  if (pid == 0) {
    if (die_with_parent) common::DieWithParent(parent);
    setpgid(0, 0);  // its own group, so a stop reaches its children too
    // A blocked signal stays blocked across exec: serve and up block
    // SIGTERM for their sigwait, and their workers then never heard a stop
    // (each was killed after the grace instead of flushing).
    sigprocmask(SIG_SETMASK, &none, nullptr);
    if (log_fd >= 0) {
      dup2(log_fd, STDOUT_FILENO);
      dup2(log_fd, STDERR_FILENO);
    }
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  if (pid > 0) setpgid(pid, pid);  // also here: whichever runs first wins the race
  if (log_fd >= 0) close(log_fd);
  return pid;
}

void ProcessSupervisor::Ensure(const std::string& key, ProcessSpec spec) {
  std::lock_guard lock(mu_);
  auto& child = children_[key];
  if (child.pid > 0) return;
  child.spec = std::move(spec);
  child.pid = Spawn(child.spec);
  child.started = Steady::now();
  spdlog::info("launched {} as pid {}", key, child.pid);
}

namespace {

// The last non-empty line of the file at `path`, read from its last 4 KiB,
// cut to 500 bytes.
std::string LastLine(const std::string& path) {
  if (path.empty()) return "";
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  std::string tail(4096, '\0');
  off_t size = lseek(fd, 0, SEEK_END);
  off_t from = size > static_cast<off_t>(tail.size()) ? size - static_cast<off_t>(tail.size()) : 0;
  ssize_t n = pread(fd, tail.data(), tail.size(), from);
  close(fd);
  tail.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == '\r')) tail.pop_back();
  auto nl = tail.rfind('\n');
  std::string line = nl == std::string::npos ? tail : tail.substr(nl + 1);
  if (line.size() > 500) line = line.substr(0, 500) + "...";
  return line;
}

// SIGTERM to every process (and its group) at once, then SIGKILL to those
// still there once `grace` passed: a stop of N processes takes one grace at
// most, not N. Returns how many had to be killed.
int Terminate(const std::vector<std::pair<std::string, pid_t>>& processes,
              std::chrono::milliseconds grace) {
  for (const auto& [key, pid] : processes)
    if (kill(-pid, SIGTERM) != 0) kill(pid, SIGTERM);
  auto deadline = Steady::now() + grace;
  auto left = processes;
  while (!left.empty() && Steady::now() < deadline) {
    std::erase_if(left, [](const auto& p) {
      int status;
      return waitpid(p.second, &status, WNOHANG) == p.second;
    });
    if (!left.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (const auto& [key, pid] : left) {
    if (kill(-pid, SIGKILL) != 0) kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    spdlog::warn("{} did not stop within {} ms; killed", key, grace.count());
  }
  return static_cast<int>(left.size());
}

}  // namespace

bool ProcessSupervisor::Stop(const std::string& key, std::chrono::milliseconds grace) {
  pid_t pid;
  {
    std::lock_guard lock(mu_);
    auto it = children_.find(key);
    if (it == children_.end()) return false;
    pid = it->second.pid;
    children_.erase(it);  // the loop no longer restarts or reaps it
  }
  if (pid <= 0) return false;
  return Terminate({{key, pid}}, grace) > 0;
}

std::vector<std::pair<std::string, pid_t>> ProcessSupervisor::TakeAll() {
  std::vector<std::pair<std::string, pid_t>> taken;
  std::lock_guard lock(mu_);
  for (const auto& [key, child] : children_)
    if (child.pid > 0) taken.emplace_back(key, child.pid);
  children_.clear();
  return taken;
}

int ProcessSupervisor::StopAll(std::chrono::milliseconds grace) {
  return Terminate(TakeAll(), grace);
}

int ProcessSupervisor::KillAll() {
  auto taken = TakeAll();
  for (const auto& [key, pid] : taken)
    if (kill(-pid, SIGKILL) != 0) kill(pid, SIGKILL);
  for (const auto& [key, pid] : taken) {
    int status;
    waitpid(pid, &status, 0);
  }
  return static_cast<int>(taken.size());
}

bool ProcessSupervisor::Supervises(const std::string& key) const {
  std::lock_guard lock(mu_);
  return children_.count(key) > 0;
}

bool ProcessSupervisor::IsRunning(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = children_.find(key);
  return it != children_.end() && it->second.pid > 0;
}

std::optional<pid_t> ProcessSupervisor::Pid(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = children_.find(key);
  if (it == children_.end() || it->second.pid <= 0) return std::nullopt;
  return it->second.pid;
}

int ProcessSupervisor::Restarts(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = children_.find(key);
  return it == children_.end() ? 0 : it->second.restarts;
}

std::vector<std::string> ProcessSupervisor::Keys() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> keys;
  for (const auto& [k, c] : children_) keys.push_back(k);
  return keys;
}

void ProcessSupervisor::Loop() {
  for (;;) {
    std::vector<ProcessExit> exits;
    std::function<void(const ProcessExit&)> callback;
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
      auto now = Steady::now();
      for (auto& [key, child] : children_) {
        if (child.pid > 0) {
          int status = 0;
          if (waitpid(child.pid, &status, WNOHANG) != child.pid) continue;
          child.pid = -1;
          bool was_healthy = now - child.started >= options_.healthy_after;
          child.backoff = was_healthy || child.backoff.count() == 0
                              ? options_.initial_backoff
                              : std::min(child.backoff * 2, options_.max_backoff);
          child.restart_at = now + child.backoff;
          exits.push_back({key, WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                           WIFSIGNALED(status) ? WTERMSIG(status) : 0, child.restarts,
                           LastLine(child.spec.log_path)});
          spdlog::warn("{} exited ({}); restarting in {} ms", key,
                       WIFSIGNALED(status) ? strsignal(WTERMSIG(status))
                                           : std::to_string(WEXITSTATUS(status)).c_str(),
                       child.backoff.count());
        } else if (now >= child.restart_at) {
          child.pid = Spawn(child.spec);
          child.started = now;
          ++child.restarts;
        }
      }
      callback = on_exit_;
    }
    if (callback)
      for (const auto& e : exits) callback(e);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace sluice::runtime
