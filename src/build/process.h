// Internal to build/: runs one child process (no shell) with captured output and a time
// limit. Shared by the compiler runs and the --version probe.
#pragma once

#include <string>
#include <vector>

namespace ollie::build::detail {

struct ProcessResult {
  int spawn_errno = 0;     // non-zero: the program could not be started (e.g. ENOENT)
  bool timed_out = false;  // killed (with its whole process group) at the time limit
  bool exited = false;     // exited normally with exit_code; otherwise killed by `signal`
  int exit_code = -1;
  int signal = 0;
  bool truncated = false;  // output exceeded the capture limit; the rest was dropped
  std::string output;      // stdout and stderr interleaved, as the child wrote them
  double seconds = 0;
};

// Runs argv[0] (searched in PATH) with argv, in directory `cwd` (empty: ours), stdin from
// /dev/null, in its own process group.
ProcessResult run_process(const std::vector<std::string>& argv, const std::string& cwd,
                          double time_limit_seconds);

}  // namespace ollie::build::detail
