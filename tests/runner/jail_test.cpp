// Tests of the runner child's jail (runner.cpp's spawn, support/sandbox.h): what a kernel's
// static constructor tries outside (files, /etc/passwd, ollie's command line, a datagram, a
// daemon) leaves no trace; a hung kernel's forked daemon dies with it; the environment a
// kernel sees is the same in a verify-like run, a timed run and a sanitizer run, and holds
// nothing of ours; load errors name the kernel's real path.
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include <gtest/gtest.h>

#include "build/build.h"
#include "runner/runner.h"
#include "spec/spec.h"

namespace {

namespace fs = std::filesystem;
using ollie::interp::Tensor;
using ollie::runner::Options;
using ollie::runner::Outcome;
using ollie::runner::Status;

struct ScratchDir {
  std::string path;
  ScratchDir() {
    char tmpl[] = "/tmp/ollie-jail-test-XXXXXX";
    const char* d = mkdtemp(tmpl);
    if (!d) throw std::runtime_error("mkdtemp failed");
    path = d;
  }
  ~ScratchDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

const std::string& scratch() {
  static const ScratchDir dir;
  return dir.path;
}

std::string build_so(const std::string& name, const std::string& body,
                     const std::string& flags = "-O1") {
  const std::string src = scratch() + "/" + name + ".cpp";
  const std::string so = scratch() + "/" + name + ".so";
  std::ofstream(src) << body;
  const std::string cmd =
      "g++ -std=c++20 " + flags + " -shared -fPIC -o '" + so + "' '" + src + "'";
  if (std::system(cmd.c_str()) != 0)
    throw std::runtime_error("test kernel failed to compile: " + name);
  return so;
}

Options options() {
  Options o;
  o.runner_path = OLLIE_RUNNER;
  o.timeout_seconds = 20;
  return o;
}

ollie::ir::Graph vector_graph(int n) {
  return ollie::spec::compile_spec(
      "test.py",
      "import numpy as np\nDIMS = dict(N=" + std::to_string(n) +
          ")\ndef f(x: \"f32[N]\") -> \"f32[N]\":\n    return x + 1.0\n",
      {});
}

std::vector<Tensor> zeros(int n) {
  Tensor t;
  t.dtype = ollie::ir::DType::F32;
  t.shape = {n};
  t.data.assign(static_cast<size_t>(n), 0.0);
  return {t};
}

// The pids of live processes whose name (/proc/PID/comm) is `name`.
std::vector<std::string> processes_named(const std::string& name) {
  std::vector<std::string> found;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string pid = e.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream comm(e.path() / "comm");
    std::string line;
    std::getline(comm, line);
    std::ifstream stat(e.path() / "stat");
    std::string state;
    std::getline(stat, state);
    const size_t paren = state.rfind(')');
    const bool zombie = paren != std::string::npos && state.substr(paren + 2, 1) == "Z";
    if (line == name && !zombie) found.push_back(pid);
  }
  return found;
}

// Waits up to 5 s for the processes named `name` to be gone (killing the jail's PID
// namespace takes a moment after bwrap is killed); the ones still there.
std::vector<std::string> survivors(const std::string& name) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  std::vector<std::string> left = processes_named(name);
  while (!left.empty() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    left = processes_named(name);
  }
  for (const std::string& pid : left) ::kill(std::stoi(pid), SIGKILL);  // don't leak them
  return left;
}

// A UDP socket on 127.0.0.1 (the port the kernel is told), non-blocking.
struct Listener {
  int fd = -1;
  int port = 0;
  Listener() {
    fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      throw std::runtime_error("cannot open the test's UDP socket");
    port = ntohs(a.sin_port);
  }
  ~Listener() { ::close(fd); }
  bool received() const {
    char buf[64];
    return ::recv(fd, buf, sizeof buf, MSG_DONTWAIT) >= 0;
  }
};

// A kernel whose static constructor tries every way out before the runner calls anything;
// out[i] = 1 where attempt i worked inside the jail.
std::string escaping_kernel(const std::string& tmp_file, const std::string& scratch_file, int port,
                            const std::string& daemon_name) {
  return R"(#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cstdint>
#include <cstring>
static float seen[6];
static bool write_file(const char* path) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return false;
  bool ok = write(fd, "escaped\n", 8) == 8;
  close(fd);
  return ok;
}
static bool read_file(const char* path, const char* needle) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return false;
  char buf[8192];
  ssize_t n = read(fd, buf, sizeof buf);
  close(fd);
  return n > 0 && memmem(buf, static_cast<size_t>(n), needle, strlen(needle)) != nullptr;
}
__attribute__((constructor)) static void escape() {
  seen[0] = write_file(")" +
         tmp_file + R"(");
  seen[1] = write_file(")" +
         scratch_file + R"(");
  seen[2] = read_file("/etc/passwd", "root:");
  seen[3] = read_file("/proc/)" +
         std::to_string(::getpid()) + R"(/cmdline", "test_runner");
  int s = socket(AF_INET, SOCK_DGRAM, 0);
  if (s >= 0) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons()" +
         std::to_string(port) + R"();
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    seen[4] = sendto(s, "escaped", 7, 0, reinterpret_cast<sockaddr*>(&a), sizeof a) == 7;
    close(s);
  }
  pid_t p = fork();
  if (p == 0) {
    setsid();
    if (fork() == 0) {
      prctl(PR_SET_NAME, ")" +
         daemon_name + R"(");
      for (;;) sleep(1000);
    }
    _exit(0);
  }
  seen[5] = p > 0;
}
extern "C" void ollie_entry(void* const* buffers, const int64_t* dims) {
  float* y = static_cast<float*>(buffers[1]);
  for (int64_t i = 0; i < dims[0]; ++i) y[i] = i < 6 ? seen[i] : 0.0f;
}
)";
}

TEST(RunnerJail, AConstructorsEscapeAttemptsLeaveNoTrace) {
  const std::string tag = std::to_string(::getpid());
  const std::string tmp_file = "/tmp/ollie-jail-escape-" + tag;
  const std::string scratch_file = scratch() + "/escaped-" + tag;
  const std::string daemon = "ojail-d" + tag.substr(tag.size() > 6 ? tag.size() - 6 : 0);
  Listener listener;
  const std::string so =
      build_so("escape", escaping_kernel(tmp_file, scratch_file, listener.port, daemon));
  const Outcome out = ollie::runner::run(so, vector_graph(8), zeros(8), options());
  // Rejected once constructors run under the filter; with the jail alone, the attempts
  // have no effect outside.
  ASSERT_TRUE(out.status == Status::Ok || out.status == Status::Forbidden) << out.message;
  EXPECT_FALSE(fs::exists(tmp_file));
  EXPECT_FALSE(fs::exists(scratch_file));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(listener.received());
  EXPECT_EQ(survivors(daemon), std::vector<std::string>{});
  if (out.status == Status::Ok) {
    const std::vector<double>& seen = out.outputs[0].data;
    EXPECT_EQ(seen[0], 1.0);  // the constructor ran: it could write its private /tmp
    EXPECT_EQ(seen[1], 0.0);  // the test's directory is not there
    EXPECT_EQ(seen[2], 0.0);  // no /etc/passwd
    EXPECT_EQ(seen[3], 0.0);  // our /proc entry is not in the jail's PID namespace
    // seen[4]: the datagram goes out on the jail's own loopback (bwrap brings one up in the
    // new network namespace), where nothing listens; it never reached ours (checked above).
  }
}

TEST(RunnerJail, AHungKernelAndTheDaemonItForkedAreKilledAtTheTimeout) {
  const std::string tag = std::to_string(::getpid());
  const std::string daemon = "ojail-h" + tag.substr(tag.size() > 6 ? tag.size() - 6 : 0);
  const std::string so = build_so("hang_fork", R"(#include <sys/prctl.h>
#include <unistd.h>
#include <cstdint>
extern "C" void ollie_entry(void* const*, const int64_t*) {
  if (fork() == 0) {
    setsid();
    if (fork() == 0) {
      prctl(PR_SET_NAME, ")" + daemon + R"(");
      for (;;) sleep(1000);
    }
    _exit(0);
  }
  for (;;) {}
}
)");
  // Without the seccomp filter (which kills fork): the jail alone ends the daemon.
  Options o = options();
  o.sandbox = false;
  o.timeout_seconds = 1;
  const auto start = std::chrono::steady_clock::now();
  const Outcome out = ollie::runner::run(so, vector_graph(8), zeros(8), o);
  EXPECT_EQ(out.status, Status::Timeout) << out.message;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10);
  EXPECT_EQ(survivors(daemon), std::vector<std::string>{});
}

// A kernel that writes its whole environment, one character per element (0 after the end).
const char* kEnvironmentKernel = R"(#include <cstdint>
#include <cstring>
extern char** environ;
extern "C" void ollie_entry(void* const* buffers, const int64_t* dims) {
  float* y = static_cast<float*>(buffers[1]);
  int64_t at = 0;
  for (char** e = environ; e && *e; ++e)
    for (const char* c = *e; at + 1 < dims[0]; ++c) {
      y[at++] = static_cast<float>(static_cast<unsigned char>(*c ? *c : '\n'));
      if (!*c) break;
    }
  for (; at < dims[0]; ++at) y[at] = 0.0f;
}
)";

std::string text_of(const std::vector<double>& codes) {
  std::string s;
  for (double c : codes) {
    if (c == 0) break;
    s += static_cast<char>(c);
  }
  return s;
}

// `env` without the three variables only a sanitizer run has.
std::string without_sanitizer(const std::string& env) {
  std::string out;
  size_t start = 0;
  for (size_t end; (end = env.find('\n', start)) != std::string::npos; start = end + 1) {
    const std::string line = env.substr(start, end - start + 1);
    if (line.rfind("LD_PRELOAD=", 0) != 0 && line.rfind("ASAN_OPTIONS=", 0) != 0 &&
        line.rfind("UBSAN_OPTIONS=", 0) != 0)
      out += line;
  }
  return out;
}

TEST(RunnerJail, TheKernelsEnvironmentIsTheSameInEveryModeAndHoldsNothingOfOurs) {
  ::setenv("OLLIE_JAIL_TEST_SECRET", "sk-not-for-kernels", 1);
  ::setenv("OMP_WAIT_POLICY", "passive", 1);
  ::setenv("OMP_PROC_BIND", "true", 1);
  const int n = 4096;
  const auto graph = vector_graph(n);
  Options o = options();
  o.threads = 2;
  const std::string so = build_so("environment", kEnvironmentKernel);
  const Outcome verify_like = ollie::runner::run(so, graph, zeros(n), o);
  ollie::runner::TimingOptions timing;
  timing.min_rounds = 1;
  timing.budget_seconds = 0;
  timing.warm_call = true;
  const auto timed = ollie::runner::time_kernels({{so}}, graph, {zeros(n)}, o, timing);
  Options sanitized = o;
  sanitized.sanitize = true;
  sanitized.sanitizer_runtime = ollie::build::sanitizer_runtime("g++");
  const std::string asan_so =
      build_so("environment_asan", kEnvironmentKernel, "-O1 -fsanitize=address,undefined");
  const Outcome sanitizer = ollie::runner::run(asan_so, graph, zeros(n), sanitized);
  ::unsetenv("OLLIE_JAIL_TEST_SECRET");
  ::unsetenv("OMP_WAIT_POLICY");
  ::unsetenv("OMP_PROC_BIND");
  ASSERT_EQ(verify_like.status, Status::Ok) << verify_like.message;
  ASSERT_EQ(timed.status, Status::Ok) << timed.message;
  ASSERT_EQ(sanitizer.status, Status::Ok) << sanitizer.message;
  const std::string env = text_of(verify_like.outputs[0].data);
  EXPECT_EQ(text_of(timed.set_outputs[0][0][0].data), env);
  EXPECT_EQ(without_sanitizer(text_of(sanitizer.outputs[0].data)), env);
  EXPECT_EQ(env.find("OLLIE_JAIL_TEST_SECRET"), std::string::npos) << env;
  EXPECT_EQ(env.find("OMP_PROC_BIND"), std::string::npos) << env;
  // The runner empties its environment once the kernel is loaded (libgomp has read its
  // OMP_* settings by then; tests/runner/seal_test.cpp checks them through libgomp).
  EXPECT_EQ(env, "");
}

TEST(RunnerJail, ALoadErrorNamesTheKernelsRealPath) {
  const std::string missing = scratch() + "/no-such-kernel.so";
  const Outcome out = ollie::runner::run(missing, vector_graph(8), zeros(8), options());
  EXPECT_EQ(out.status, Status::LoadError) << out.message;
  EXPECT_NE(out.message.find(missing), std::string::npos) << out.message;
  EXPECT_EQ(out.message.find("/sandbox/"), std::string::npos) << out.message;
}

}  // namespace
