// The runner's parent side, shared by runner.cpp (calls) and timed.cpp (timed runs):
// writing a request into a memfd, and running ollie-runner on it in its jail until it
// reports, fails or times out. Internal to the runner stage.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "runner/buffers.h"
#include "runner/child/protocol.h"
#include "runner/runner.h"
#include "support/process.h"

namespace ollie::runner::detail {

[[noreturn]] void fail_errno(const std::string& what);
// Throws UserError unless `name` is a C identifier.
void check_entry_symbol(const std::string& name);
// The runner executable (options.runner_path, or next to ours); throws UserError when
// it (or a sanitizer run's runtime) is missing.
std::string find_runner(const Options& options);

// The kernels a request names, with their .so paths in the runner's jail.
struct Named {
  std::string so_path;
  std::string entry_symbol;
};
// Where the child finds kernel k inside its jail (the host path is bound there read-only).
std::string so_path_in_jail(size_t k);

// 64 random bits (never 0) that the child's report must carry back: a report the kernel
// forges lacks them (protocol.h).
uint64_t run_nonce();

// Creates the memfd: the header, the inputs and poisoned outputs. `fill(base)` stores
// the request's values into the buffers, writing every byte of each buffer of role
// `filled`; every other byte after the header is 0xFF.
template <typename Fill>
process::Fd make_request(const std::vector<Named>& kernels, const Layout& layout,
                         protocol::RequestHeader header, const Options& options, Role filled,
                         const Fill& fill) {
  process::Fd fd(memfd_create("ollie-buffers", MFD_CLOEXEC));
  if (fd.get() < 0) fail_errno("memfd_create");
  if (ftruncate(fd.get(), static_cast<off_t>(layout.total_size)) != 0)
    fail_errno("cannot size the buffer memory");
  Mapping map(fd.get(), layout.total_size, /*populate=*/true);
  char* base = map.base();
  poison_around(base, layout, filled);

  std::memcpy(header.magic, protocol::kRequestMagic, sizeof header.magic);
  header.version = protocol::kVersion;
  header.n_dims = static_cast<uint32_t>(layout.dims.size() / layout.dims_groups);
  header.total_size = layout.total_size;
  header.header_size = layout.header_size;
  header.path_len = static_cast<uint32_t>(kernels[0].so_path.size());
  header.entry_len = static_cast<uint32_t>(kernels[0].entry_symbol.size());
  if (kernels.size() > 1) {
    header.path2_len = static_cast<uint32_t>(kernels[1].so_path.size());
    header.entry2_len = static_cast<uint32_t>(kernels[1].entry_symbol.size());
  }
  header.n_kernels = static_cast<uint32_t>(kernels.size());
  header.results_offset = layout.results_offset;
  header.flags = protocol::kProtect | (options.sandbox ? protocol::kSandbox : 0u) |
                 (options.sanitize ? protocol::kSanitize : 0u) |
                 (layout.dims_groups > 1 ? protocol::kDimsPerCall : 0u);
  if (options.sandbox) {
    header.memory_bytes = options.memory_bytes;
    // CPU time of all threads: the wall limit times the threads that may run, plus slack.
    const double threads =
        options.threads > 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency());
    header.cpu_seconds = static_cast<uint64_t>(std::ceil(options.timeout_seconds * threads)) + 1;
  }
  // No parent check: in its jail's PID namespace the runner's parent is bwrap, not us, and
  // bwrap's --die-with-parent ends the jail with us.
  header.parent_pid = 0;
  char* at = base;
  auto put = [&at](const void* src, size_t bytes) {
    if (bytes) std::memcpy(at, src, bytes);
    at += bytes;
  };
  put(&header, sizeof header);
  put(layout.buffers.data(), layout.buffers.size() * sizeof(protocol::Buffer));
  put(layout.dims.data(), layout.dims.size() * sizeof(int64_t));
  for (const Named& k : kernels) {
    put(k.so_path.data(), k.so_path.size());
    put(k.entry_symbol.data(), k.entry_symbol.size());
  }
  fill(base);
  return fd;
}

// Runs `runner` in its jail on the request in `memfd` (the kernels `so_paths`) until it
// reports, fails or times out; every report must carry `nonce`. Messages name the
// kernels by their paths here, not in the jail.
Outcome execute(const std::string& runner, const std::vector<std::string>& so_paths, int memfd,
                uint64_t nonce, const std::string& what, const Options& options);

}  // namespace ollie::runner::detail
