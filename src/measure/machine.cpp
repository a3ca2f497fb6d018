// This machine's identity (CPU model, ISA, cores), its caches and memory, the triad's array
// size, MachinePeaks as JSON, and the per-machine cache file.
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "measure/measure.h"
#include "support/error.h"
#include "support/strings.h"

namespace fs = std::filesystem;

namespace ollie::measure {

namespace {

using strings::trim;  // spaces, tabs, CR and LF

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return "";
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// "key : value" lines of the first processor in /proc/cpuinfo.
std::map<std::string, std::string> cpuinfo_first_processor() {
  std::map<std::string, std::string> out;
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (trim(line).empty()) {
      if (!out.empty()) break;
      continue;
    }
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = trim(line.substr(0, colon));
    if (!out.count(key)) out[key] = trim(line.substr(colon + 1));
  }
  return out;
}

// Sizes as sysfs writes them: "48K", "266240K", "2M", "1024".
int64_t parse_size(const std::string& text) {
  std::string t = trim(text);
  if (t.empty()) return 0;
  char* end = nullptr;
  long long v = std::strtoll(t.c_str(), &end, 10);
  if (end == t.c_str() || v < 0) return 0;
  int64_t scale = 1;
  if (*end == 'K' || *end == 'k') scale = int64_t{1} << 10;
  if (*end == 'M' || *end == 'm') scale = int64_t{1} << 20;
  if (*end == 'G' || *end == 'g') scale = int64_t{1} << 30;
  return static_cast<int64_t>(v) * scale;
}

// Number of CPUs in a sysfs list such as "0-3,8,10-11".
int count_cpu_list(const std::string& list) {
  int n = 0;
  std::stringstream ss(trim(list));
  std::string part;
  while (std::getline(ss, part, ',')) {
    size_t dash = part.find('-');
    if (dash == std::string::npos) {
      if (!trim(part).empty()) ++n;
    } else {
      n += std::atoi(part.substr(dash + 1).c_str()) - std::atoi(part.substr(0, dash).c_str()) + 1;
    }
  }
  return n;
}

std::string mib(int64_t bytes) {
  std::ostringstream s;
  double m = static_cast<double>(bytes) / double(1 << 20);
  if (m >= 10 || m == static_cast<int64_t>(m))
    s << static_cast<int64_t>(m + 0.5) << " MiB";
  else
    s << std::fixed << std::setprecision(1) << m << " MiB";
  return s.str();
}

std::string ratio_text(double r) {
  std::ostringstream s;
  s << std::setprecision(3) << r;
  return s.str();
}

}  // namespace

MachineIdentity host_identity() {
  MachineIdentity id;
  auto info = cpuinfo_first_processor();
  if (info.count("model name")) {
    id.cpu_model = info["model name"];
  } else if (info.count("CPU implementer")) {
    id.cpu_model = "CPU implementer " + info["CPU implementer"] + " part " + info["CPU part"];
  } else {
    id.cpu_model = "unknown CPU";
  }

  std::set<std::string> flags;
  std::stringstream fs_(info.count("flags") ? info["flags"] : info["Features"]);
  std::string f;
  while (fs_ >> f) flags.insert(f);
  // The vector ISA that matters for float32 kernels, widest first.
  static const char* kOrder[] = {
      "avx512f",     "avx512bw", "avx512vl", "avx512dq", "avx512cd", "avx512_vnni", "avx512_bf16",
      "avx512_fp16", "amx_tile", "amx_bf16", "avx_vnni", "fma",      "avx2",        "avx",
      "f16c",        "sse4_2",   "sve2",     "sve",      "asimdhp",  "asimd"};
  for (const char* name : kOrder) {
    if (flags.count(name)) id.isa += (id.isa.empty() ? "" : " ") + std::string(name);
  }
  if (id.isa.empty()) id.isa = "none known";

  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) id.cores = CPU_COUNT(&set);
  if (id.cores <= 0) id.cores = static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  return id;
}

int64_t llc_bytes() {
  int best_level = 0;
  int64_t best = 0;
  std::error_code ec;
  fs::path dir = "/sys/devices/system/cpu/cpu0/cache";
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (name.rfind("index", 0) != 0) continue;
    std::string type = trim(read_file(entry.path() / "type"));
    if (type != "Data" && type != "Unified") continue;
    int level = std::atoi(read_file(entry.path() / "level").c_str());
    int64_t size = parse_size(read_file(entry.path() / "size"));
    if (size > 0 && level > best_level) {
      best_level = level;
      best = size;
    }
  }
  if (best > 0) return best;
#ifdef _SC_LEVEL3_CACHE_SIZE
  long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (l3 > 0) return l3;
  long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  if (l2 > 0) return l2;
#endif
  return 0;
}

int64_t l2_bytes() {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/sys/devices/system/cpu/cpu0/cache", ec)) {
    if (entry.path().filename().string().rfind("index", 0) != 0) continue;
    const std::string type = trim(read_file(entry.path() / "type"));
    if (type != "Data" && type != "Unified") continue;
    if (std::atoi(read_file(entry.path() / "level").c_str()) != 2) continue;
    const int64_t size = parse_size(read_file(entry.path() / "size"));
    if (size > 0) return size;
  }
#ifdef _SC_LEVEL2_CACHE_SIZE
  const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  if (l2 > 0) return l2;
#endif
  return 0;
}

int threads_per_core() {
  return std::max(
      1, count_cpu_list(read_file("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list")));
}

int64_t available_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("MemAvailable:", 0) == 0) {
      std::stringstream ss(line.substr(13));
      int64_t kb = 0;
      ss >> kb;
      return kb * 1024;
    }
  }
  return 0;
}

TriadSize triad_array_size(int64_t llc, int64_t max_array_bytes, int64_t available) {
  TriadSize t;
  std::string llc_text =
      llc > 0 ? "the last-level cache (" + mib(llc) + ")" : "an assumed 32 MiB cache (none found)";
  int64_t cache = llc > 0 ? llc : int64_t{32} << 20;
  int64_t want = 4 * cache;
  t.bytes = want;
  t.why = "4 x " + llc_text + " = " + mib(want) + " per array";
  std::string cap;
  if (max_array_bytes > 0 && t.bytes > max_array_bytes) {
    t.bytes = max_array_bytes;
    cap = "capped at " + mib(max_array_bytes) + " per array (the calibration's limit)";
  }
  if (available > 0 && t.bytes > available / 8) {
    t.bytes = available / 8;
    cap = "capped at " + mib(t.bytes) + " per array (1/8 of the " + mib(available) +
          " available memory, so the three arrays take at most 3/8 of it)";
  }
  t.bytes = std::max<int64_t>(t.bytes / 4096 * 4096, int64_t{1} << 20);
  if (!cap.empty()) {
    t.why += ", " + cap + ": " +
             ratio_text(static_cast<double>(t.bytes) / static_cast<double>(cache)) +
             " x the cache per array, " +
             ratio_text(3.0 * static_cast<double>(t.bytes) / static_cast<double>(cache)) +
             " x for the three";
    if (t.bytes < 2 * cache)
      t.why += " (NOT out of cache: the bandwidth is the cache's, not memory's)";
  }
  return t;
}

TriadSize llc_triad_array_size(int64_t llc) {
  TriadSize t;
  const int64_t cache = llc > 0 ? llc : int64_t{32} << 20;
  t.bytes = std::max<int64_t>(cache / 8 / 4096 * 4096, int64_t{64} << 10);
  t.why = "1/8 of " +
          (llc > 0 ? "the last-level cache (" + mib(llc) + ")"
                   : std::string("an assumed 32 MiB cache (none found)")) +
          " = " + mib(t.bytes) + " per array: the three take 3/8 of it";
  return t;
}

// ---------------------------------------------------------------------------- JSON

void to_json(nlohmann::json& j, const MachinePeaks& p) {
  j = nlohmann::json{
      {"format", p.format},
      {"cpu_model", p.cpu_model},
      {"isa", p.isa},
      {"cores", p.cores},
      {"threads_per_core", p.threads_per_core},
      {"date", p.date},
      {"compiler", p.compiler},
      {"vector_bits", p.vector_bits},
      {"fma_chains", p.fma_chains},
      {"clock_hz", p.clock_hz},
      {"fma_flops_1core", p.fma_flops_1core},
      {"fma_flops_all", p.fma_flops_all},
      {"triad_bytes_per_s_1core", p.triad_bytes_per_s_1core},
      {"triad_bytes_per_s_all", p.triad_bytes_per_s_all},
      {"llc_bytes", p.llc_bytes},
      {"triad_array_bytes", p.triad_array_bytes},
      {"triad_sizing", p.triad_sizing},
      {"triad_convention", p.triad_convention},
      {"llc_bytes_per_s_1core", p.llc_bytes_per_s_1core},
      {"llc_bytes_per_s_all", p.llc_bytes_per_s_all},
      {"llc_triad_array_bytes", p.llc_triad_array_bytes},
      {"bf16_dot_flops_1core", p.bf16_dot_flops_1core},
      {"bf16_dot_flops_all", p.bf16_dot_flops_all},
      {"f16_fma_flops_1core", p.f16_fma_flops_1core},
      {"f16_fma_flops_all", p.f16_fma_flops_all},
      {"load_average", p.load_average},
      {"seconds", p.seconds},
  };
}

void from_json(const nlohmann::json& j, MachinePeaks& p) {
  auto get = [&](const char* key, auto& field) {
    if (!j.is_object() || !j.contains(key))
      throw UserError(std::string("machine peaks JSON: field \"") + key + "\" is missing");
    try {
      j.at(key).get_to(field);
    } catch (const nlohmann::json::exception& e) {
      throw UserError(std::string("machine peaks JSON: field \"") + key +
                      "\" has the wrong type (" + e.what() + ")");
    }
  };
  get("format", p.format);
  get("cpu_model", p.cpu_model);
  get("isa", p.isa);
  get("cores", p.cores);
  get("threads_per_core", p.threads_per_core);
  get("date", p.date);
  get("compiler", p.compiler);
  get("vector_bits", p.vector_bits);
  get("fma_chains", p.fma_chains);
  get("clock_hz", p.clock_hz);
  get("fma_flops_1core", p.fma_flops_1core);
  get("fma_flops_all", p.fma_flops_all);
  get("triad_bytes_per_s_1core", p.triad_bytes_per_s_1core);
  get("triad_bytes_per_s_all", p.triad_bytes_per_s_all);
  get("llc_bytes", p.llc_bytes);
  get("triad_array_bytes", p.triad_array_bytes);
  get("triad_sizing", p.triad_sizing);
  get("triad_convention", p.triad_convention);
  // Measured since format 1 was written: a cache without them reads as "not measured".
  auto optional = [&](const char* key, auto& field) {
    if (j.contains(key)) get(key, field);
  };
  optional("llc_bytes_per_s_1core", p.llc_bytes_per_s_1core);
  optional("llc_bytes_per_s_all", p.llc_bytes_per_s_all);
  optional("llc_triad_array_bytes", p.llc_triad_array_bytes);
  optional("bf16_dot_flops_1core", p.bf16_dot_flops_1core);
  optional("bf16_dot_flops_all", p.bf16_dot_flops_all);
  optional("f16_fma_flops_1core", p.f16_fma_flops_1core);
  optional("f16_fma_flops_all", p.f16_fma_flops_all);
  get("load_average", p.load_average);
  get("seconds", p.seconds);
}

std::string to_json_text(const MachinePeaks& p) {
  nlohmann::json j = p;
  return j.dump(2) + "\n";
}

// ---------------------------------------------------------------------------- cache

std::string default_cache_dir() {
  auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v ? v : "";
  };
  if (!env("OLLIE_CACHE_DIR").empty()) return env("OLLIE_CACHE_DIR");
  if (!env("XDG_CACHE_HOME").empty()) return (fs::path(env("XDG_CACHE_HOME")) / "ollie").string();
  if (!env("HOME").empty()) return (fs::path(env("HOME")) / ".cache" / "ollie").string();
  throw UserError(
      "cannot place the machine cache: HOME is not set; set OLLIE_CACHE_DIR to a directory");
}

CachedPeaks machine_peaks(const std::string& cache_dir, bool recalibrate,
                          const CalibrateOptions& options) {
  if (cache_dir.empty())
    throw UserError("the machine cache directory is empty; set OLLIE_CACHE_DIR");
  CachedPeaks out;
  MachineIdentity here = host_identity();
  // A process confined to fewer CPUs (taskset, a cpuset) keeps its own figures, so it never
  // overwrites the whole machine's.
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  const std::string name = online > 0 && here.cores < online
                               ? "machine-" + std::to_string(here.cores) + "cpus.json"
                               : "machine.json";
  out.path = (fs::path(cache_dir) / name).string();

  if (recalibrate) {
    out.why = "asked to recalibrate";
  } else if (!fs::exists(out.path)) {
    out.why = "no cached figures yet";
  } else {
    try {
      const nlohmann::json json = nlohmann::json::parse(read_file(out.path));
      MachinePeaks cached = json.get<MachinePeaks>();
      if (cached.format != MachinePeaks{}.format) {
        out.why =
            "the cached figures are of an older format (" + std::to_string(cached.format) + ")";
      } else if (!json.contains("bf16_dot_flops_1core")) {
        out.why = "the cached figures predate the low-precision peaks";
      } else if (cached.cpu_model != here.cpu_model) {
        out.why = "the cached figures are for another CPU (" + cached.cpu_model + ")";
      } else if (cached.isa != here.isa) {
        out.why = "the cached figures are for another ISA (" + cached.isa + ")";
      } else if (cached.cores != here.cores) {
        out.why = "the cached figures are for " + std::to_string(cached.cores) +
                  " cores, this process has " + std::to_string(here.cores);
      } else {
        out.peaks = cached;
        out.why = "cached";
        return out;
      }
    } catch (const std::exception& e) {
      out.why = std::string("the cache file could not be read (") + e.what() + ")";
    }
  }

  out.peaks = calibrate(options);
  out.measured_now = true;
  std::error_code ec;
  fs::create_directories(cache_dir, ec);
  if (ec)
    throw UserError("cannot create the machine cache directory " + cache_dir + ": " + ec.message());
  std::string tmp = out.path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream f(tmp);
    f << to_json_text(out.peaks);
    if (!f)
      throw UserError("cannot write " + tmp + " (set OLLIE_CACHE_DIR to a writable directory)");
  }
  fs::rename(tmp, out.path, ec);
  if (ec) throw UserError("cannot write " + out.path + ": " + ec.message());
  return out;
}

}  // namespace ollie::measure
