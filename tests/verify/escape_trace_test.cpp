// An escape attempt leaves no trace: the red-team kernels whose load-time code sends a
// UDP datagram, appends to a file in /tmp, leaves a setsid daemon or copies the parent's
// command line to /tmp are verified with a marker and a port of this run baked into their
// source; afterwards no datagram may have reached the port, no file under /tmp or the
// test's temp dir may name or contain the marker, and no process may carry it in its
// command line or environment (issue 16). Whatever the verdict (refused, a sandbox kill),
// nothing may be left behind. A self-test first plants each kind of trace and checks the
// detectors see it. Traces found are removed (files deleted, marker processes killed).
#include <arpa/inet.h>
#include <dirent.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "spec/spec.h"
#include "verify/verify.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
namespace v = ollie::verify;

std::string read_all(const fs::path& p, size_t limit = size_t{1} << 20) {
  std::ifstream in(p, std::ios::binary);
  std::string text(limit, '\0');
  in.read(text.data(), static_cast<std::streamsize>(limit));
  text.resize(static_cast<size_t>(std::max<std::streamsize>(0, in.gcount())));
  return text;
}

// A UDP socket bound to 127.0.0.1 on a free port.
struct Listener {
  int fd = -1;
  int port = 0;
  Listener() {
    fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
      port = ntohs(a.sin_port);
  }
  ~Listener() {
    if (fd >= 0) close(fd);
  }
  // Datagrams waiting now (read and counted).
  int drain() const {
    int n = 0;
    char buf[2048];
    while (recv(fd, buf, sizeof buf, MSG_DONTWAIT) >= 0) ++n;
    return n;
  }
};

// Whether `text` (a file's first MiB) is ollie's own copy of the kernel: its source (with
// the marker's #define) or a build product (an ELF object holds the marker as data).
bool build_artifact(const std::string& text) {
  return text.rfind(
             "\x7f"
             "ELF",
             0) == 0 ||
         text.find("#define OLLIE_RT_MARKER") != std::string::npos;
}

// Regular files under `dir` (to `depth` levels, `skip` and below left out) changed since
// `since` whose name, or first MiB unless it is a build artifact, contains `marker`.
void files_with_marker(const fs::path& dir, const std::string& marker, fs::file_time_type since,
                       int depth, const fs::path& skip, std::vector<fs::path>& found) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    const fs::directory_entry& e = *it;
    std::error_code ec2;
    if (e.is_symlink(ec2)) continue;
    if (e.is_directory(ec2)) {
      if (depth > 0 && !fs::equivalent(e.path(), skip, ec2))
        files_with_marker(e.path(), marker, since, depth - 1, skip, found);
      continue;
    }
    if (!e.is_regular_file(ec2) || e.last_write_time(ec2) < since || ec2) continue;
    const std::string text = read_all(e.path());
    if (e.path().filename().string().find(marker) != std::string::npos ||
        (text.find(marker) != std::string::npos && !build_artifact(text)))
      found.push_back(e.path());
  }
}

// Processes whose command line or environment contains `marker` (other than this one).
std::vector<pid_t> processes_with_marker(const std::string& marker) {
  std::vector<pid_t> found;
  DIR* proc = opendir("/proc");
  if (!proc) return found;
  while (dirent* d = readdir(proc)) {
    const pid_t pid = static_cast<pid_t>(std::atoi(d->d_name));
    if (pid <= 0 || pid == getpid()) continue;
    const fs::path p = fs::path("/proc") / d->d_name;
    if (read_all(p / "cmdline").find(marker) != std::string::npos ||
        read_all(p / "environ").find(marker) != std::string::npos)
      found.push_back(pid);
  }
  closedir(proc);
  return found;
}

std::string random_marker() {
  std::random_device rd;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%08x%08x", rd(), rd());
  return "ollie-rt-" + std::to_string(getpid()) + "-" + hex;
}

// Everything one run left behind; cleans it up as it looks.
struct Traces {
  int datagrams = 0;
  std::vector<fs::path> files;
  std::vector<pid_t> processes;
  std::string text() const {
    std::string t = std::to_string(datagrams) + " datagram(s); files:";
    for (const auto& f : files) t += " " + f.string();
    t += "; processes:";
    for (pid_t p : processes) t += " " + std::to_string(p);
    return t;
  }
};

// `build_cache`: where ollie compiled the kernel: not searched (copies of the kernel's
// source and its builds elsewhere, e.g. in a jail's directory, are recognized and skipped).
Traces collect(const Listener& listener, const std::string& marker, fs::file_time_type since,
               const fs::path& build_cache) {
  // A daemon or a late write gets a moment to show.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  Traces t;
  t.datagrams = listener.drain();
  for (const fs::path& dir : {fs::path("/tmp"), fs::path(::testing::TempDir())})
    files_with_marker(dir, marker, since, 4, build_cache, t.files);
  std::sort(t.files.begin(), t.files.end());
  t.files.erase(std::unique(t.files.begin(), t.files.end()), t.files.end());
  t.processes = processes_with_marker(marker);
  for (pid_t p : t.processes) kill(p, SIGKILL);  // ours: they carry this run's marker
  std::error_code ec;
  for (const auto& f : t.files) fs::remove(f, ec);
  return t;
}

TEST(EscapeTrace, DetectorsSeePlantedTraces) {
  Listener listener;
  ASSERT_GT(listener.port, 0);
  const std::string marker = random_marker();
  const auto since = fs::file_time_type::clock::now() - std::chrono::seconds(2);
  const fs::path file = fs::path(::testing::TempDir()) / "planted.txt";
  std::ofstream(file) << "contains " << marker << "\n";
  const int s = socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(listener.port));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_GT(sendto(s, "x", 1, 0, reinterpret_cast<sockaddr*>(&to), sizeof to), 0);
  close(s);
  char sh[] = "sh", c[] = "-c", sleep[] = "sleep 20; exit 0";
  std::string zero = marker;
  char* const argv[] = {sh, c, sleep, zero.data(), nullptr};
  // In a process group of its own: the shell's `sleep` child (no marker) is killed with
  // it afterwards, instead of holding the test's output open for 20 s.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  pid_t child = 0;
  const int spawned = posix_spawn(&child, "/bin/sh", nullptr, &attr, argv, environ);
  posix_spawnattr_destroy(&attr);
  ASSERT_EQ(spawned, 0);
  const Traces t = collect(listener, marker, since, fs::path());
  waitpid(child, nullptr, 0);
  kill(-child, SIGKILL);
  EXPECT_EQ(t.datagrams, 1);
  EXPECT_EQ(t.files, std::vector<fs::path>{file});
  EXPECT_EQ(t.processes, std::vector<pid_t>{child});
  EXPECT_FALSE(fs::exists(file));
}

struct EscapeCase {
  std::string kernel;                 // tests/redteam/<kernel>.cpp
  ollie::ir::DimBindings small_dims;  // cheap dims to verify at
};

void PrintTo(const EscapeCase& c, std::ostream* os) { *os << c.kernel; }

class EscapeTrace : public ::testing::TestWithParam<EscapeCase> {};

TEST_P(EscapeTrace, LeavesNoDatagramFileOrProcess) {
  const EscapeCase& c = GetParam();
  Listener listener;
  ASSERT_GT(listener.port, 0);
  const std::string marker = random_marker();
  const std::string source =
      "#define OLLIE_RT_MARKER \"" + marker + "\"\n#define OLLIE_RT_PORT " +
      std::to_string(listener.port) + "\n" +
      read_all(fs::path(OLLIE_SOURCE_DIR) / "tests/redteam" / (c.kernel + ".cpp"));
  const std::string example = c.kernel.substr(0, c.kernel.find("__"));
  const std::string spec = std::string(OLLIE_SOURCE_DIR) + "/examples/" + example + ".py";
  const v::GraphAt graph_at = [&](const ollie::ir::DimBindings& dims) {
    ollie::spec::SpecOptions o;
    o.dim_overrides = dims;
    return ollie::spec::load_spec(spec, o);
  };
  v::Options options;
  options.runner_path = OLLIE_RUNNER;
  options.timeout_seconds = 10;
  // A cache of this test's own (every build has a new marker: nothing to reuse), removed.
  const fs::path cache = fs::path(::testing::TempDir()) / ("ollie-escape-trace-" + marker);
  options.cache_dir = cache.string();
  const auto since = fs::file_time_type::clock::now() - std::chrono::seconds(2);
  const v::Report r = v::verify(graph_at(c.small_dims), source, graph_at, options);
  const Traces t = collect(listener, marker, since, cache);
  std::error_code ec;
  fs::remove_all(cache, ec);
  // The marker and port lines must not have broken the build (else nothing was tried).
  EXPECT_NE(r.verdict, v::Verdict::CompileError) << r.message;
  EXPECT_NE(r.verdict, v::Verdict::LoadError) << r.message;
  EXPECT_EQ(t.datagrams, 0) << c.kernel << " (verdict " << v::verdict_name(r.verdict) << ") left "
                            << t.text();
  EXPECT_TRUE(t.files.empty()) << c.kernel << " (verdict " << v::verdict_name(r.verdict)
                               << ") left " << t.text();
  EXPECT_TRUE(t.processes.empty())
      << c.kernel << " (verdict " << v::verdict_name(r.verdict) << ") left " << t.text();
}

INSTANTIATE_TEST_SUITE_P(
    Kernels, EscapeTrace,
    ::testing::Values(
        EscapeCase{"softmax__ctor_sends_udp_datagram", {{"M", 4}, {"N", 40}}},
        EscapeCase{"rmsnorm__global_object_appends_tmp_file", {{"T", 4}, {"D", 40}}},
        EscapeCase{"layernorm__static_init_forks_setsid_daemon", {{"T", 4}, {"D", 40}}},
        EscapeCase{"attention_causal__init_array_steals_parent_cmdline", {{"S", 16}, {"D", 8}}}),
    [](const auto& p) { return p.param.kernel; });

}  // namespace
