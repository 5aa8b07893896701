#include "broker_harness.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <gtest/gtest.h>

namespace sluice::testing {

namespace fs = std::filesystem;

int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

std::string SourceDir() {
  const char* s = std::getenv("SLUICE_SOURCE_DIR");
  return s ? s : ".";
}

BrokerProcess::BrokerProcess(std::vector<std::string> extra_args)
    : extra_args_(std::move(extra_args)) {
  char tmpl[] = "/tmp/sluice-broker-test-XXXXXX";
  root_ = ::mkdtemp(tmpl);
  data_dir_ = root_ / "data";
  port_ = FreePort();
}

BrokerProcess::~BrokerProcess() {
  Stop();
  std::error_code ec;
  if (!::testing::Test::HasFailure())
    fs::remove_all(root_, ec);  // keep the evidence when a test failed
}

void BrokerProcess::Start() {
  const char* bin = std::getenv("SLUICE_BIN");
  if (!bin) throw std::runtime_error("SLUICE_BIN is not set");
  std::vector<std::string> args = {bin,        "--log-level", "info",       "broker",
                                   "--listen", bootstrap(),   "--data-dir", data_dir_.string()};
  args.insert(args.end(), extra_args_.begin(), extra_args_.end());
  std::string log = (root_ / "broker.log").string();
  pid_ = ::fork();
  if (pid_ == 0) {
    FILE* f = std::freopen(log.c_str(), "a", stdout);
    if (f) ::dup2(::fileno(stdout), 2);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(bin, argv.data());
    ::_exit(127);
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (std::chrono::steady_clock::now() < deadline) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port_));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    if (ok) return;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("broker exited at start:\n" + this->log());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  throw std::runtime_error("broker did not start listening:\n" + this->log());
}

void BrokerProcess::Stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

void BrokerProcess::Kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

void BrokerProcess::RecordSyncedLengths() {
  synced_journal_ = root_ / "synced-lengths.journal";
  extra_args_.push_back("--test-record-synced-lengths");
  extra_args_.push_back(synced_journal_.string());
}

std::int64_t BrokerProcess::PowerCut(bool torn, unsigned seed) {
  if (synced_journal_.empty()) throw std::runtime_error("PowerCut needs RecordSyncedLengths()");
  Kill();
  std::map<std::string, std::int64_t> synced;
  {
    std::ifstream in(synced_journal_);
    std::string line;
    while (std::getline(in, line)) {
      auto space = line.find(' ');
      if (space == std::string::npos) continue;
      synced[line.substr(space + 1)] = std::stoll(line.substr(0, space));
    }
  }
  std::mt19937 rng(seed);
  std::int64_t cut = 0;
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(data_dir_)) {
    auto ext = e.path().extension();
    if (e.is_regular_file() && (ext == ".log" || ext == ".index")) files.push_back(e.path());
  }
  for (const auto& path : files) {
    auto it = synced.find(path.string());
    auto keep = static_cast<std::uintmax_t>(it == synced.end() ? 0 : it->second);
    auto size = fs::file_size(path);
    if (keep < size) {
      fs::resize_file(path, keep);
      cut += static_cast<std::int64_t>(size - keep);
    }
    // Garbage after every active segment: a write half on disk, or junk that
    // recovery must tell from a batch either way.
    bool active_segment = path.extension() == ".log" && path.filename() != "offsets.log" &&
                          std::none_of(files.begin(), files.end(), [&](const fs::path& other) {
                            return other.parent_path() == path.parent_path() &&
                                   other.extension() == ".log" &&
                                   other.filename() > path.filename();
                          });
    if (torn && active_segment) {
      std::ofstream out(path, std::ios::app | std::ios::binary);
      std::string garbage(1 + rng() % 200, '\0');
      for (auto& c : garbage) c = static_cast<char>(rng());
      out << garbage;
    }
  }
  return cut;
}

std::string BrokerProcess::log() const {
  std::ifstream in(root_ / "broker.log");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

CommandResult RunShell(const std::string& command) {
  CommandResult r;
  FILE* p = ::popen(command.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

CommandResult RunPython(const std::string& script, const std::string& args) {
  return RunShell("timeout 120 /usr/bin/python3 " + SourceDir() + "/tests/broker/clients/" +
                  script + " " + args);
}

}  // namespace sluice::testing
