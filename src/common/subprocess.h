// Running another program: argv in, exit status and combined output back.
// No shell is involved, so arguments are never re-parsed.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace sluice::common {

struct ProcessResult {
  int exit_code = -1;  // -1 when the program could not be started or was killed
  std::string output;  // stdout and stderr interleaved
};

ProcessResult RunProcess(const std::vector<std::string>& argv);

// Prefixes argv so it runs as os_user when this process is root, and as is
// otherwise (PostgreSQL refuses to run as root).
std::vector<std::string> AsUser(const std::string& os_user, std::vector<std::string> argv);

bool RunningAsRoot();

// Path of this process's own binary, to launch more of itself (workers, the
// broker); "sluice" (looked up on PATH) when /proc cannot say.
std::string SelfExecutablePath();

// In a child just forked by `parent`: SIGKILL it when the forking thread
// goes (PR_SET_PDEATHSIG, even when the parent is SIGKILLed), and exit at
// once if the parent is already gone. Async-signal-safe.
void DieWithParent(pid_t parent);

}  // namespace sluice::common
