// The jail every step that touches candidate code runs in (the compiler, the runner child):
// bubblewrap (bwrap) with new user, PID, network, IPC, UTS and cgroup namespaces, all
// capabilities dropped, a new session, killed with its parent, an explicit environment and a
// filesystem of /usr read-only, a minimal /dev, a private /tmp and only the paths a step
// names. docs/design.md section 7 says what this stops and what it does not.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "support/process.h"

namespace ollie::sandbox {

// A host path seen at `dest` inside the jail.
struct Bind {
  std::string source;  // host path (made absolute)
  std::string dest;    // path inside the jail
};

// Binds are made parents first (by the depth of `dest`), so one at /tmp does not hide one
// below it.
struct Jail {
  std::vector<Bind> read_only;
  std::vector<Bind> read_only_if_present;  // skipped when the source does not exist
  std::vector<Bind> writable;
  // The whole environment inside ("NAME=value"); nothing is inherited.
  std::vector<std::string> environment;
  std::string cwd = "/";                    // inside the jail
  bool proc = false;                        // a /proc of the jail's own processes only
  uint64_t tmp_bytes = uint64_t{64} << 20;  // the private /tmp's size limit
};

// bwrap's options for `jail` (everything between "bwrap" and "--"): the namespaces, /usr and
// its /bin, /lib, /lib64, /sbin links, /etc/ld.so.cache, /dev, /tmp, the binds, the
// environment, the working directory.
std::vector<std::string> options(const Jail& jail);

// The command line that runs `command` (argv; argv[0] a path inside the jail) in `jail`:
// the bwrap executable, options(jail), "--", command.
std::vector<std::string> command_line(const Jail& jail, const std::vector<std::string>& command);

// The same, with options(jail) read by bwrap from a memfd (`bwrap --args FD`) instead of its
// command line, which every process of the user can read (/proc/PID/cmdline), and the
// processes inside the jail too (bwrap's own process is PID 1 there). The caller puts `fd`
// at `child_fd` in the child; bwrap closes it before running the command.
struct ArgsFd {
  process::Fd fd;
  std::vector<std::string> argv;
};
ArgsFd command_line_with_args_fd(const Jail& jail, const std::vector<std::string>& command,
                                 int child_fd);

// Throws UserError unless bwrap can set up a jail here: the first call runs
// `bwrap <a minimal jail> true`, later calls repeat its answer. The message says what failed
// (bwrap missing, or its own error, e.g. user namespaces disabled) and what to do.
void check_available();

// The bwrap executable: "bwrap" found in PATH (or the test seam's path); absolute.
std::string bwrap_path();

// Test seam: use `path` as the bwrap executable from now on (empty: back to PATH) and forget
// check_available's answer.
void set_bwrap_path_for_testing(const std::string& path);

// bwrap exits with 128 + N when the command inside was killed by signal N. The exit status
// as if the command had run outside: a "killed by signal" for those codes (so SIGSYS, a
// forbidden system call, SIGSEGV, SIGKILL, SIGXCPU still show), the rest unchanged.
process::ExitStatus status_inside(const process::ExitStatus& outside);
// The same for a raw wait status (waitpid's).
int wait_status_inside(int wait_status);

// True when `path` (absolute) is visible inside every jail as the same file: under /usr, or
// reached through the /bin, /lib, /lib64, /sbin links.
bool visible_in_every_jail(const std::string& path);

}  // namespace ollie::sandbox
