// The build driver: content-addressed cache of compiled candidates, one compiler run per
// key (across threads and, through atomic renames, across processes), parallel batches;
// every candidate compile runs in a sandbox (support/sandbox.h) that sees only /usr and the
// build's own directories.
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "build/build.h"
#include "support/process.h"
#include "support/sandbox.h"
#include "support/sha256.h"

namespace fs = std::filesystem;

namespace ollie::build {

struct Driver::State {
  std::string cache_dir;
  double time_limit = 120;
  std::atomic<int64_t> compiler_runs{0};
  std::mutex mu;
  std::condition_variable cv;
  std::set<std::string> in_flight;  // keys being compiled by some thread of this driver
};

namespace {

// A compiler that writes more than this is stuck in a template explosion; keeping the
// head of it is enough for feedback and keeps a batch of bad candidates from eating memory.
constexpr size_t kMaxCompilerOutput = size_t{16} << 20;

// Runs argv[0] (searched in PATH, no shell: source names and flags are never interpreted)
// in directory `cwd` (empty: ours), stdin from /dev/null, stdout and stderr interleaved in
// one capture, in its own process group: g++ runs cc1plus and as as children, and at the
// time limit the whole group must die, or an orphaned cc1plus keeps the pipe open and the
// CPU busy. `failure` is set only when the program could not be started.
process::RunResult run_compiler(const std::vector<std::string>& argv, const std::string& cwd,
                                double time_limit_seconds) {
  OLLIE_CHECK(!argv.empty(), "run_compiler needs a program");
  process::RunResult p = process::run({.argv = argv,
                                       .search_path = true,
                                       .cwd = cwd,
                                       .input = std::nullopt,
                                       .merge_stderr = true,
                                       .stdout_limit = kMaxCompilerOutput,
                                       .stderr_tail = 0,
                                       .timeout_seconds = time_limit_seconds,
                                       .grace_seconds = 0,
                                       .kill_group_on_exit = false,
                                       .kill_on_overflow = false,
                                       .drain_seconds = 0});
  if (p.failure && !p.failure.in_spawn)
    throw InternalError(p.failure.call + " failed: " + std::strerror(p.failure.error));
  if (p.wait_error != 0)
    throw InternalError(std::string("waitpid failed: ") + std::strerror(p.wait_error));
  return p;
}

// The compiler as posix_spawnp would find it: `name` itself when it holds a '/' (made
// absolute), else the first executable of that name in PATH; "" when there is none. Not
// resolved through symlinks: clang++ is a link whose name picks the language.
std::string find_compiler(const std::string& name) {
  if (name.find('/') != std::string::npos) return fs::absolute(name).lexically_normal().string();
  const char* path = std::getenv("PATH");
  std::string dirs = path && *path ? path : "/usr/local/bin:/usr/bin:/bin";
  for (size_t start = 0; start <= dirs.size();) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    start = end + 1;
    const fs::path candidate = fs::absolute(dir.empty() ? "." : dir) / name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.lexically_normal().string();
  }
  return "";
}

// A compile's jail: /usr (system headers, the toolchain), the build directory `work`
// read-write at its own path (so the paths in diagnostics are the real ones) and `tmp` as
// /tmp, the TMPDIR (on disk, and assembler messages name /tmp/ccXXXXXX.s as they always
// did), no network, no /proc, no environment of ours but PATH (CPATH and the like would
// change a build without changing its key). A compiler outside /usr is bound
// read-only at its own path: its installation prefix when it sits in a bin/ directory (a
// toolchain under /opt), else the file alone.
sandbox::Jail compiler_jail(const std::string& compiler, const fs::path& work,
                            const fs::path& tmp) {
  sandbox::Jail jail;
  if (!sandbox::visible_in_every_jail(compiler)) {
    const fs::path dir = fs::path(compiler).parent_path();
    const bool prefix = dir.filename() == "bin" && dir.parent_path() != dir.root_path();
    const std::string bound = prefix ? dir.parent_path().string() : compiler;
    jail.read_only.push_back({bound, bound});
  }
  // /tmp first: a build directory under /tmp is then bound on top of it.
  jail.writable = {{tmp.string(), "/tmp"}, {work.string(), work.string()}};
  jail.environment = {"PATH=/usr/local/bin:/usr/bin:/bin", "TMPDIR=/tmp"};
  jail.cwd = work.string();
  return jail;
}

// Runs a candidate's compile, `argv` (argv[0] the compiler's name), in its jail
// (compiler_jail) in `work`; the exit status as the compiler's own (a compiler killed by
// a signal inside shows that signal).
process::RunResult run_jailed_compiler(const std::vector<std::string>& argv, const fs::path& work,
                                       const fs::path& tmp, double time_limit_seconds) {
  sandbox::check_available();
  const std::string compiler = find_compiler(argv[0]);
  if (compiler.empty()) {
    process::RunResult missing;
    missing.failure = {ENOENT, "posix_spawnp " + argv[0], true};
    return missing;
  }
  std::vector<std::string> inside = argv;
  inside[0] = compiler;
  const sandbox::Jail jail = compiler_jail(compiler, work, tmp);
  process::RunResult p =
      run_compiler(sandbox::command_line(jail, inside), work.string(), time_limit_seconds);
  // bwrap's own failure (exit 1, its message first) says nothing about the source: it must
  // not be cached as a compile error.
  if (p.status.exited && p.status.exit_code == 1 && p.out.rfind("bwrap: ", 0) == 0)
    throw UserError("cannot run the C++ compiler '" + compiler +
                    "' in its sandbox: " + p.out.substr(0, p.out.find('\n')) +
                    "; check that the compiler and the build cache are readable");
  p.status = sandbox::status_inside(p.status);
  return p;
}

constexpr const char* kSoName = "kernel.so";
constexpr const char* kLogName = "log.txt";
constexpr const char* kMetaName = "meta.txt";
// Bump when the cache layout or the meaning of a key changes.
constexpr const char* kKeyVersion = "ollie-build-1";

// Length-prefixed, so ("ab","c") and ("a","bc") hash differently.
void put(std::string& key, const std::string& field) {
  key += std::to_string(field.size());
  key += ':';
  key += field;
}

// -march=native code is only valid on the CPU it was built on, and the cache may be shared
// between machines; what native resolves to follows from these cpuinfo lines.
const std::string& host_cpu_identity() {
  static const std::string identity = [] {
    std::ifstream in("/proc/cpuinfo");
    std::string line, out;
    std::set<std::string> seen;
    while (std::getline(in, line)) {
      if (line.empty()) break;  // the first processor is enough
      std::string name = line.substr(0, line.find(':'));
      while (!name.empty() && (name.back() == ' ' || name.back() == '\t')) name.pop_back();
      if (name == "vendor_id" || name == "cpu family" || name == "model" || name == "model name" ||
          name == "flags" || name == "CPU implementer" || name == "CPU part" || name == "Features")
        out += line + "\n";
    }
    return out;
  }();
  return identity;
}

bool wants_native(const std::vector<std::string>& flags) {
  return std::any_of(flags.begin(), flags.end(),
                     [](const std::string& f) { return f.find("=native") != std::string::npos; });
}

bool is_compiled(const std::string& name) {
  for (const char* ext : {".cpp", ".cc", ".cxx", ".c"}) {
    std::string e = ext;
    if (name.size() > e.size() && name.compare(name.size() - e.size(), e.size(), e) == 0)
      return true;
  }
  return false;
}

void check_units(const Request& request) {
  if (request.units.empty())
    throw UserError("a build needs at least one source unit; none were given");
  std::set<std::string> names;
  bool any_compiled = false;
  for (const auto& unit : request.units) {
    const std::string& n = unit.name;
    if (n.empty() || n == "." || n == ".." || n.find('/') != std::string::npos ||
        n.find('\0') != std::string::npos || n == kSoName)
      throw UserError("bad source unit name '" + n +
                      "': give a plain file name such as 'kernel.cpp'");
    if (!names.insert(n).second)
      throw UserError("source unit '" + n + "' is given twice; give each file once");
    any_compiled = any_compiled || is_compiled(n);
  }
  if (!any_compiled)
    throw UserError(
        "no unit of the build is a source file to compile; name the kernel 'kernel.cpp' "
        "(units ending in .cpp, .cc, .cxx or .c are compiled)");
}

std::vector<std::string> command_for(const Request& request) {
  std::vector<std::string> argv = {request.toolchain.compiler};
  argv.insert(argv.end(), request.toolchain.flags.begin(), request.toolchain.flags.end());
  argv.push_back("-o");
  argv.push_back(kSoName);
  for (const auto& unit : request.units)
    if (is_compiled(unit.name)) argv.push_back(unit.name);
  return argv;
}

std::string compute_key(const Request& request, const std::string& version) {
  std::string data = kKeyVersion;
  put(data, request.toolchain.compiler);
  put(data, version);
  put(data, std::to_string(request.toolchain.flags.size()));
  for (const auto& f : request.toolchain.flags) put(data, f);
  put(data, wants_native(request.toolchain.flags) ? host_cpu_identity() : "");
  put(data, std::to_string(request.units.size()));
  for (const auto& u : request.units) {
    put(data, u.name);
    put(data, u.source);
  }
  return sha256_hex(data);
}

// meta.txt: one "name value" per line; values escape '\\' and newlines.
std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else
      out += c;
  }
  return out;
}

std::string unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      char c = s[++i];
      out += c == 'n' ? '\n' : c == 'r' ? '\r' : c;
    } else {
      out += s[i];
    }
  }
  return out;
}

void write_file(const fs::path& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary);
  out << content;
  out.close();
  if (!out)
    throw UserError("cannot write '" + path.string() +
                    "' in the build cache: " + std::strerror(errno) +
                    "; make the cache writable or point OLLIE_CACHE_DIR at a writable directory");
}

std::optional<std::string> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string meta_text(const Result& r) {
  std::ostringstream out;
  out << "ok " << (r.ok ? 1 : 0) << "\n"
      << "key " << r.key << "\n"
      << "compiler_version " << escape(r.compiler_version) << "\n"
      << "compile_seconds " << r.seconds << "\n";
  for (const auto& arg : r.command) out << "arg " << escape(arg) << "\n";
  return out.str();
}

// A complete entry, or nullopt when there is none (or it is damaged).
std::optional<Result> load_entry(const fs::path& dir, const std::string& key) {
  auto meta = read_file(dir / kMetaName);
  if (!meta) return std::nullopt;
  Result r;
  r.key = key;
  bool have_ok = false;
  std::istringstream lines(*meta);
  std::string line;
  while (std::getline(lines, line)) {
    size_t space = line.find(' ');
    std::string name = line.substr(0, space);
    std::string value = space == std::string::npos ? "" : unescape(line.substr(space + 1));
    if (name == "ok") {
      r.ok = value == "1";
      have_ok = true;
    } else if (name == "compiler_version") {
      r.compiler_version = value;
    } else if (name == "arg") {
      r.command.push_back(value);
    }
  }
  auto log = read_file(dir / kLogName);
  if (!have_ok || !log) return std::nullopt;
  r.log = *log;
  if (r.ok) {
    r.so_path = (dir / kSoName).string();
    if (!fs::exists(r.so_path)) return std::nullopt;
  }
  r.cache_hit = true;
  return r;
}

// Renames `dir` aside and deletes it, so a reader never sees it half deleted.
void discard(const fs::path& dir, const fs::path& tmp_root) {
  std::error_code ec;
  fs::path aside = tmp_root / (dir.filename().string() + ".discard." + std::to_string(::getpid()));
  fs::rename(dir, aside, ec);
  fs::remove_all(ec ? dir : aside, ec);
}

// A process killed mid-compile leaves its temp dir behind (never a half entry); anything
// this old is no live compile's, whatever the time limit.
void remove_stale_temps(const fs::path& tmp_root) {
  std::error_code ec;
  const auto cutoff = fs::file_time_type::clock::now() - std::chrono::hours(24);
  for (fs::directory_iterator it(tmp_root, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code ec2;
    auto when = fs::last_write_time(it->path(), ec2);
    if (!ec2 && when < cutoff) fs::remove_all(it->path(), ec2);
  }
}

std::string describe_failure(const process::RunResult& p, double limit) {
  if (p.timed_out) {
    std::ostringstream s;
    s << "\n[ollie] the compiler was killed after the time limit of " << limit << " s\n";
    return s.str();
  }
  if (!p.status.exited)
    return "\n[ollie] the compiler was killed by signal " + std::to_string(p.status.signal) + "\n";
  if (p.status.exit_code != 0)
    return "\n[ollie] the compiler exited with status " + std::to_string(p.status.exit_code) + "\n";
  return "";
}

Result compile_fresh(const std::string& cache_dir, double time_limit, std::atomic<int64_t>& runs,
                     const Request& request, const std::string& key, const std::string& version) {
  const fs::path root = cache_dir;
  const fs::path tmp_root = root / "tmp";
  std::error_code ec;
  fs::create_directories(tmp_root, ec);
  std::string pattern = (tmp_root / (key.substr(0, 16) + ".XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr)
    throw UserError("cannot create a build directory in the cache '" + root.string() +
                    "': " + std::strerror(errno) +
                    "; make it writable or set OLLIE_CACHE_DIR to a writable directory");
  const fs::path work = pattern;
  const fs::path tmp = work.string() + ".tmp";  // the compile's TMPDIR, removed after it
  struct RemoveTmp {
    const fs::path& tmp;
    ~RemoveTmp() {
      std::error_code ignored;
      fs::remove_all(tmp, ignored);
    }
  } remove_tmp{tmp};
  try {
    for (const auto& unit : request.units) write_file(work / unit.name, unit.source);
    fs::create_directory(tmp, ec);
    if (ec)
      throw UserError("cannot create a temporary directory in the cache '" + root.string() +
                      "': " + ec.message() +
                      "; make it writable or set OLLIE_CACHE_DIR to a writable directory");

    Result r;
    r.key = key;
    r.compiler_version = version;
    r.command = command_for(request);
    ++runs;
    process::RunResult p = run_jailed_compiler(r.command, work, tmp, time_limit);
    if (p.failure.error != 0)
      throw UserError("cannot run the C++ compiler '" + request.toolchain.compiler + "': " +
                      std::strerror(p.failure.error) + "; install it or name another compiler");
    r.seconds = p.seconds;
    r.log = p.out;
    if (p.overflowed) r.log += "\n[ollie] compiler output truncated\n";
    r.log += describe_failure(p, time_limit);
    r.ok = p.status.exited && p.status.exit_code == 0 && fs::exists(work / kSoName);
    if (p.status.exited && p.status.exit_code == 0 && !r.ok)
      r.log += "\n[ollie] the compiler produced no shared object\n";

    // A run cut short by the clock or a signal says nothing about the source: not cached.
    if (!p.status.exited) {
      fs::remove_all(work, ec);
      return r;
    }
    write_file(work / kLogName, r.log);
    write_file(work / kMetaName, meta_text(r));  // last: its presence marks a complete entry
    const fs::path entry = root / key;
    fs::rename(work, entry, ec);
    if (ec) {
      // Another process finished the same key first; its entry is as good as ours.
      fs::remove_all(work, ec);
      if (auto theirs = load_entry(entry, key)) {
        theirs->cache_hit = false;
        theirs->seconds = r.seconds;
        return *theirs;
      }
      throw UserError("cannot store a build in the cache '" + root.string() +
                      "'; make it writable or set OLLIE_CACHE_DIR to a writable directory");
    }
    r.so_path = r.ok ? (entry / kSoName).string() : "";
    return r;
  } catch (...) {
    fs::remove_all(work, ec);
    throw;
  }
}

}  // namespace

namespace {

// What a probe of a compiler (by name) answered, asked once per name; the probe runs
// outside the lock, so two threads may both ask the first time.
class PerCompiler {
 public:
  template <typename Probe>
  std::string get(const std::string& compiler, const Probe& probe) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = answers_.find(compiler);
      if (it != answers_.end()) return it->second;
    }
    std::string answer = probe(compiler);
    std::lock_guard<std::mutex> lock(mu_);
    answers_[compiler] = answer;
    return answer;
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::string> answers_;
};

std::string probe_compiler_version(const std::string& compiler) {
  if (compiler.empty()) throw UserError("no C++ compiler given; name one, e.g. 'g++'");
  process::RunResult p = run_compiler({compiler, "--version"}, "", 30);
  if (p.failure.error != 0)
    throw UserError("cannot run the C++ compiler '" + compiler +
                    "': " + std::strerror(p.failure.error) +
                    "; install it (e.g. apt install g++) or name another compiler");
  std::string first = p.out.substr(0, p.out.find('\n'));
  if (!p.status.exited || p.status.exit_code != 0 || first.empty())
    throw UserError("the C++ compiler '" + compiler + "' failed on --version" +
                    (p.timed_out ? " (no answer in 30 s)" : "") + ": " + p.out +
                    "; check the installation or name another compiler");
  return first;
}

}  // namespace

std::string compiler_version(const std::string& compiler) {
  static PerCompiler versions;
  return versions.get(compiler, probe_compiler_version);
}

Toolchain sanitizer_toolchain(const Toolchain& base) {
  Toolchain t = base;
  std::erase_if(t.flags, [](const std::string& f) { return f.rfind("-O", 0) == 0; });
  for (const char* flag : {"-O1", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                           "-fno-omit-frame-pointer", "-D_GLIBCXX_SANITIZE_VECTOR"})
    t.flags.push_back(flag);
  return t;
}

namespace {

std::string probe_sanitizer_runtime(const std::string& compiler) {
  process::RunResult p = run_compiler({compiler, "-print-file-name=libasan.so"}, "", 30);
  if (p.failure.error != 0)
    throw UserError("cannot run the C++ compiler '" + compiler + "': " +
                    std::strerror(p.failure.error) + "; install it or name another compiler");
  std::string path = p.out.substr(0, p.out.find('\n'));
  std::error_code ec;
  // A compiler without the runtime prints the bare name back.
  const fs::path resolved =
      path.find('/') == std::string::npos ? fs::path() : fs::canonical(path, ec);
  if (!p.status.exited || p.status.exit_code != 0 || resolved.empty() || ec ||
      !fs::is_regular_file(resolved))
    throw UserError("the C++ compiler '" + compiler + "' has no AddressSanitizer runtime (" +
                    compiler + " -print-file-name=libasan.so printed '" + path +
                    "'), which the full level's sanitizer build "
                    "needs; install it (e.g. apt install libasan8, or the gcc package) or verify "
                    "at the quick level");
  return resolved.string();
}

}  // namespace

std::string sanitizer_runtime(const std::string& compiler) {
  static PerCompiler runtimes;
  return runtimes.get(compiler, probe_sanitizer_runtime);
}

std::string default_cache_dir() {
  auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v ? v : "";
  };
  if (!env("OLLIE_CACHE_DIR").empty()) return env("OLLIE_CACHE_DIR");
  if (!env("XDG_CACHE_HOME").empty())
    return (fs::path(env("XDG_CACHE_HOME")) / "ollie" / "build").string();
  if (!env("HOME").empty()) return (fs::path(env("HOME")) / ".cache" / "ollie" / "build").string();
  throw UserError(
      "cannot place the build cache: HOME is not set; set OLLIE_CACHE_DIR to a directory");
}

Driver::Driver(std::string cache_dir) : state_(std::make_shared<State>()) {
  if (cache_dir.empty()) throw UserError("the build cache directory is empty; set OLLIE_CACHE_DIR");
  std::error_code ec;
  fs::create_directories(fs::path(cache_dir) / "tmp", ec);
  if (ec)
    throw UserError("cannot create the build cache '" + cache_dir + "': " + ec.message() +
                    "; set OLLIE_CACHE_DIR to a writable directory");
  state_->cache_dir = fs::absolute(cache_dir).string();
  remove_stale_temps(fs::path(state_->cache_dir) / "tmp");
}

void Driver::set_time_limit(double seconds) {
  OLLIE_CHECK(seconds > 0, "the compile time limit must be positive");
  state_->time_limit = seconds;
}

int64_t Driver::compiler_runs() const { return state_->compiler_runs.load(); }

const std::string& Driver::cache_dir() const { return state_->cache_dir; }

Result Driver::compile(const Request& request) {
  check_units(request);
  const std::string version = compiler_version(request.toolchain.compiler);
  const std::string key = compute_key(request, version);
  State& st = *state_;
  {
    std::unique_lock<std::mutex> lock(st.mu);
    st.cv.wait(lock, [&] { return st.in_flight.count(key) == 0; });
    st.in_flight.insert(key);
  }
  struct Release {
    State& st;
    const std::string& key;
    ~Release() {
      {
        std::lock_guard<std::mutex> lock(st.mu);
        st.in_flight.erase(key);
      }
      st.cv.notify_all();
    }
  } release{st, key};

  const fs::path entry = fs::path(st.cache_dir) / key;
  if (fs::exists(entry)) {
    if (auto hit = load_entry(entry, key)) return *hit;
    discard(entry, fs::path(st.cache_dir) / "tmp");  // damaged (e.g. the .so was deleted)
  }
  return compile_fresh(st.cache_dir, st.time_limit, st.compiler_runs, request, key, version);
}

std::vector<Result> Driver::compile_all(const std::vector<Request>& requests, int jobs) {
  // Keys first (cheap), so identical requests are compiled once.
  std::vector<std::string> keys;
  std::map<std::string, size_t> first_of_key;
  std::vector<size_t> unique;
  for (size_t i = 0; i < requests.size(); ++i) {
    check_units(requests[i]);
    keys.push_back(compute_key(requests[i], compiler_version(requests[i].toolchain.compiler)));
    if (first_of_key.emplace(keys[i], i).second) unique.push_back(i);
  }
  std::vector<Result> results(requests.size());
  std::vector<std::exception_ptr> errors(requests.size());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t u; (u = next++) < unique.size();) {
      size_t i = unique[u];
      try {
        results[i] = compile(requests[i]);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  size_t threads = std::min(unique.size(), static_cast<size_t>(std::max(jobs, 1)));
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  for (size_t i = 0; i < requests.size(); ++i) {
    size_t first = first_of_key[keys[i]];
    if (errors[first]) std::rethrow_exception(errors[first]);
    results[i] = results[first];
  }
  return results;
}

}  // namespace ollie::build
