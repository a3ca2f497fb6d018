// The bubblewrap jail (sandbox.h): its command line, the availability probe, exit statuses.
#include "support/sandbox.h"

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>

#include "support/error.h"

namespace fs = std::filesystem;

namespace ollie::sandbox {
namespace {

// The top-level directories a merged-/usr system links into /usr (Debian 12: bin, lib,
// lib32, lib64, sbin); a system without the merge has them as directories.
constexpr const char* kUsrLinks[] = {"bin", "sbin", "lib", "lib32", "lib64", "libx32"};

struct Probe {
  std::mutex mu;
  std::string bwrap_override;
  std::optional<std::string> bwrap;  // resolved path, "" when not found
  std::optional<bool> recent;        // bwrap >= 0.8 (--disable-userns, --size)
  bool checked = false;
  std::string error;  // check_available's answer: empty when bwrap works
};

Probe& probe() {
  static Probe p;
  return p;
}

std::string find_in_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path && *path ? path : "/usr/local/bin:/usr/bin:/bin";
  for (size_t start = 0; start <= dirs.size();) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    const std::string dir = dirs.substr(start, end - start);
    start = end + 1;
    if (dir.empty() || dir[0] != '/') continue;  // a relative PATH entry is never trusted
    const std::string candidate = dir + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

// The top-level links into /usr (as symlinks, or read-only binds where they are real
// directories), /usr itself and the dynamic loader's cache.
void add_system(std::vector<std::string>& out) {
  for (const char* s : {"--ro-bind", "/usr", "/usr"}) out.push_back(s);
  for (const char* name : kUsrLinks) {
    const fs::path host = fs::path("/") / name;
    std::error_code ec;
    const fs::file_status st = fs::symlink_status(host, ec);
    if (ec || !fs::exists(st)) continue;
    if (fs::is_symlink(st)) {
      const fs::path target = fs::read_symlink(host, ec);
      if (ec) continue;
      out.insert(out.end(), {"--symlink", target.string(), host.string()});
    } else if (fs::is_directory(st)) {
      out.insert(out.end(), {"--ro-bind", host.string(), host.string()});
    }
  }
  out.insert(out.end(), {"--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache"});
}

// Whether `bwrap --version` says 0.8 or later (an unreadable answer counts as recent, and the
// probe then shows bwrap's own error for an option it lacks).
bool parse_recent(const std::string& version_text) {
  const size_t at = version_text.find_first_of("0123456789");
  if (at == std::string::npos) return true;
  int major = 0, minor = 0;
  if (std::sscanf(version_text.c_str() + at, "%d.%d", &major, &minor) != 2) return true;
  return major > 0 || minor >= 8;
}

bool recent_bwrap() {
  const std::string bwrap = bwrap_path();
  Probe& p = probe();
  std::lock_guard<std::mutex> lock(p.mu);
  if (!p.recent) {
    process::RunOptions version;
    version.argv = {bwrap, "--version"};
    version.stdout_limit = 256;
    version.timeout_seconds = 10;
    const process::RunResult r = process::run(version);
    p.recent = r.failure || parse_recent(r.out);
  }
  return *p.recent;
}

std::string absolute(const std::string& path) {
  return fs::absolute(path).lexically_normal().string();
}

// The jail's binds, parents before children (a bind at /tmp would otherwise hide one made
// below it earlier), in the order given where the depth is the same.
void add_binds(std::vector<std::string>& out, const Jail& jail) {
  struct Mount {
    const char* flag;
    const Bind* bind;
  };
  std::vector<Mount> mounts;
  for (const Bind& b : jail.read_only) mounts.push_back({"--ro-bind", &b});
  for (const Bind& b : jail.read_only_if_present) mounts.push_back({"--ro-bind-try", &b});
  for (const Bind& b : jail.writable) mounts.push_back({"--bind", &b});
  auto depth = [](const Mount& m) {
    int n = 0;
    for (const auto& part : fs::path(m.bind->dest).lexically_normal().relative_path()) {
      (void)part;
      ++n;
    }
    return n;
  };
  std::stable_sort(mounts.begin(), mounts.end(),
                   [&](const Mount& a, const Mount& b) { return depth(a) < depth(b); });
  for (const Mount& m : mounts)
    out.insert(out.end(), {m.flag, absolute(m.bind->source), m.bind->dest});
}

// The probe: a minimal jail running /usr/bin/true. Empty when it worked, else the message.
std::string run_probe(const std::string& bwrap) {
  if (bwrap.empty() || ::access(bwrap.c_str(), X_OK) != 0)
    return "ollie compiles and runs every candidate kernel inside a bubblewrap sandbox, and "
           "bubblewrap ('bwrap') is not installed" +
           (bwrap.empty() ? std::string(" (not found in PATH)")
                          : " (no executable " + bwrap + ")") +
           ": install it with scripts/setup.sh (or `apt install bubblewrap`)";
  Jail jail;
  std::vector<std::string> argv = {bwrap};
  for (std::string& o : options(jail)) argv.push_back(std::move(o));
  argv.insert(argv.end(), {"--", "/usr/bin/true"});
  const process::RunResult r = process::run({.argv = argv,
                                             .search_path = false,
                                             .cwd = "",
                                             .input = std::nullopt,
                                             .merge_stderr = true,
                                             .stdout_limit = 4096,
                                             .stderr_tail = 0,
                                             .timeout_seconds = 30,
                                             .grace_seconds = 0,
                                             .kill_group_on_exit = true,
                                             .kill_on_overflow = false,
                                             .drain_seconds = 1});
  if (!r.failure && !r.timed_out && r.status.exited && r.status.exit_code == 0) return "";
  std::string what;
  if (r.failure)
    what = "cannot start " + bwrap + ": " + std::strerror(r.failure.error);
  else if (r.timed_out)
    what = "`bwrap ... true` did not finish within 30 s";
  else
    what = "`bwrap ... true` failed (" +
           (r.status.exited ? "exit status " + std::to_string(r.status.exit_code)
                            : process::signal_name(r.status.signal)) +
           ")" + (r.out.empty() ? "" : ": " + r.out.substr(0, r.out.find_last_not_of('\n') + 1));
  return "ollie compiles and runs every candidate kernel inside a bubblewrap sandbox, and "
         "bubblewrap cannot set one up here: " +
         what +
         ". It needs user namespaces: enable them (`sysctl -w kernel.unprivileged_userns_clone=1`"
         " on Debian's kernels, `sysctl -w user.max_user_namespaces=10000` where that is 0, "
         "`sysctl -w kernel.apparmor_restrict_unprivileged_userns=0` on Ubuntu 24.04); in a "
         "container, let it create namespaces (e.g. docker run --security-opt "
         "seccomp=unconfined --security-opt apparmor=unconfined). Install bubblewrap with "
         "scripts/setup.sh";
}

}  // namespace

std::vector<std::string> options(const Jail& jail) {
  std::vector<std::string> out = {
      "--unshare-all",   // user (where it can), pid, net, ipc, uts, cgroup namespaces
      "--unshare-user",  // always: as root, --unshare-all alone skips the user namespace
      "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--clearenv"};
  const bool recent = recent_bwrap();
  if (recent) out.push_back("--disable-userns");  // no nested user namespace inside
  for (const std::string& e : jail.environment) {
    const size_t eq = e.find('=');
    OLLIE_CHECK(eq != std::string::npos && eq > 0, "a jail's environment entry needs NAME=: " + e);
    out.insert(out.end(), {"--setenv", e.substr(0, eq), e.substr(eq + 1)});
  }
  add_system(out);
  out.insert(out.end(), {"--dev", "/dev"});
  if (recent) out.insert(out.end(), {"--size", std::to_string(jail.tmp_bytes)});
  out.insert(out.end(), {"--tmpfs", "/tmp"});
  if (jail.proc) out.insert(out.end(), {"--proc", "/proc"});
  // After /tmp: a bind below /tmp lands in the private tmpfs (or on a bind at /tmp).
  add_binds(out, jail);
  out.insert(out.end(), {"--chdir", jail.cwd.empty() ? "/" : jail.cwd});
  return out;
}

std::vector<std::string> command_line(const Jail& jail, const std::vector<std::string>& command) {
  std::vector<std::string> argv = {bwrap_path()};
  for (std::string& o : options(jail)) argv.push_back(std::move(o));
  argv.push_back("--");
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

ArgsFd command_line_with_args_fd(const Jail& jail, const std::vector<std::string>& command,
                                 int child_fd) {
  std::string text;
  for (const std::string& o : options(jail)) {
    OLLIE_CHECK(o.find('\0') == std::string::npos, "a jail option holds a NUL byte");
    text += o;
    text += '\0';
  }
  ArgsFd out;
  out.fd.reset(::memfd_create("ollie-jail-args", MFD_CLOEXEC));
  if (!out.fd.open())
    throw UserError(std::string("cannot create the sandbox's argument memfd: ") +
                    std::strerror(errno));
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(out.fd.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw UserError(std::string("cannot write the sandbox's arguments: ") + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
  if (::lseek(out.fd.get(), 0, SEEK_SET) != 0)
    throw UserError(std::string("cannot rewind the sandbox's arguments: ") + std::strerror(errno));
  out.argv = {bwrap_path(), "--args", std::to_string(child_fd), "--"};
  out.argv.insert(out.argv.end(), command.begin(), command.end());
  return out;
}

std::string bwrap_path() {
  Probe& p = probe();
  std::lock_guard<std::mutex> lock(p.mu);
  if (!p.bwrap) p.bwrap = p.bwrap_override.empty() ? find_in_path("bwrap") : p.bwrap_override;
  return *p.bwrap;
}

void set_bwrap_path_for_testing(const std::string& path) {
  Probe& p = probe();
  std::lock_guard<std::mutex> lock(p.mu);
  p.bwrap_override = path;
  p.bwrap.reset();
  p.recent.reset();
  p.checked = false;
  p.error.clear();
}

void check_available() {
  const std::string bwrap = bwrap_path();
  Probe& p = probe();
  {
    std::lock_guard<std::mutex> lock(p.mu);
    if (p.checked) {
      if (!p.error.empty()) throw UserError(p.error);
      return;
    }
  }
  // Outside the lock: two threads may both probe the first time, with the same answer.
  std::string error = run_probe(bwrap);
  {
    std::lock_guard<std::mutex> lock(p.mu);
    p.checked = true;
    p.error = error;
  }
  if (!error.empty()) throw UserError(error);
}

process::ExitStatus status_inside(const process::ExitStatus& outside) {
  if (!outside.exited || outside.exit_code <= 128 || outside.exit_code >= 128 + 65) return outside;
  process::ExitStatus inside;
  inside.signal = outside.exit_code - 128;
  return inside;
}

int wait_status_inside(int wait_status) {
  if (!WIFEXITED(wait_status)) return wait_status;
  const int code = WEXITSTATUS(wait_status);
  // A wait status whose low 7 bits name the signal and whose core flag is clear.
  return code > 128 && code < 128 + 65 ? code - 128 : wait_status;
}

bool visible_in_every_jail(const std::string& path) {
  const fs::path p = fs::path(path).lexically_normal();
  if (!p.is_absolute()) return false;
  auto it = p.begin();
  if (++it == p.end()) return false;
  const std::string top = it->string();
  if (top == "usr") return true;
  // Linked into /usr, or bound read-only where the system has real directories.
  for (const char* name : kUsrLinks)
    if (top == name) return true;
  return false;
}

}  // namespace ollie::sandbox
