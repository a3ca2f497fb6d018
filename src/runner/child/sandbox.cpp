// ollie-runner's sandbox (see sandbox.h).
//
// How the filter protects the guarded block B = [b, b + S) (S = 2^n, b a multiple of S)
// with argument comparisons alone (seccomp cannot add an address to a length): the S bytes
// below B, the pad P = [b - S, b), are reserved too. For mprotect, munmap and madvise:
//   * an address in B or in P kills (one masked comparison each: addr & ~(S-1) == b or
//     b - S), whatever the length;
//   * a length above S kills, wherever the address: a range that starts below P and
//     reaches B must be longer than P.
// A range starting below P and shorter than S can reach P, never B; one starting above B
// never reaches back. mmap kills with an address in B or P, and with MAP_FIXED and a
// length above S; mremap kills with an old address in B or P, and with MREMAP_FIXED (a
// mapping growing in place stops at P, which is mapped). pkey_mprotect and
// remap_file_pages kill outright. Not covered: plain loads and stores (a kernel that
// finds the runner's mappings can write what is writable there: the outputs, and in
// timed mode the runner's own view and the times) and unmapping part of the pad from
// below (address space beyond the kernel's limit, at most S). No legitimate call starts
// in B or P (nothing else lives there) or is longer than S (S is at least twice the
// kernel's address-space limit).
#include "runner/child/sandbox.h"

#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace ollie::runner::child {

namespace {

std::vector<sock_filter> loader_program, kernel_program;

// What no kernel and no loader needs: sockets, new processes, exec, other processes'
// memory, file-system changes, limits, prctl, signals to other processes. (arch_prctl is
// allowed for one request only: add_arch_prctl_rule.)
const int kForbidden[] = {
    SCMP_SYS(socket),
    SCMP_SYS(socketpair),
    SCMP_SYS(connect),
    SCMP_SYS(bind),
    SCMP_SYS(listen),
    SCMP_SYS(accept),
    SCMP_SYS(accept4),
    SCMP_SYS(sendto),
    SCMP_SYS(sendmsg),
    SCMP_SYS(sendmmsg),
    SCMP_SYS(recvfrom),
    SCMP_SYS(recvmsg),
    SCMP_SYS(recvmmsg),
    SCMP_SYS(fork),
    SCMP_SYS(vfork),
    SCMP_SYS(execve),
    SCMP_SYS(execveat),
    SCMP_SYS(ptrace),
    SCMP_SYS(process_vm_readv),
    SCMP_SYS(process_vm_writev),
    SCMP_SYS(unlink),
    SCMP_SYS(unlinkat),
    SCMP_SYS(rename),
    SCMP_SYS(renameat),
    SCMP_SYS(renameat2),
    SCMP_SYS(mkdir),
    SCMP_SYS(mkdirat),
    SCMP_SYS(rmdir),
    SCMP_SYS(link),
    SCMP_SYS(linkat),
    SCMP_SYS(symlink),
    SCMP_SYS(symlinkat),
    SCMP_SYS(mknod),
    SCMP_SYS(mknodat),
    SCMP_SYS(chmod),
    SCMP_SYS(fchmod),
    SCMP_SYS(fchmodat),
    SCMP_SYS(chown),
    SCMP_SYS(fchown),
    SCMP_SYS(lchown),
    SCMP_SYS(fchownat),
    SCMP_SYS(truncate),
    SCMP_SYS(utimensat),
    SCMP_SYS(mount),
    SCMP_SYS(umount2),
    SCMP_SYS(chroot),
    SCMP_SYS(pivot_root),
    SCMP_SYS(unshare),
    SCMP_SYS(setns),
    SCMP_SYS(chdir),
    SCMP_SYS(fchdir),
    SCMP_SYS(setrlimit),
    SCMP_SYS(prlimit64),
    SCMP_SYS(prctl),
    SCMP_SYS(memfd_create),
    SCMP_SYS(kill),
    SCMP_SYS(tkill),
    SCMP_SYS(pidfd_open),
    SCMP_SYS(pidfd_send_signal),
    SCMP_SYS(pidfd_getfd),
    SCMP_SYS(kcmp),
    SCMP_SYS(bpf),
    SCMP_SYS(perf_event_open),
    SCMP_SYS(io_uring_setup),
    SCMP_SYS(userfaultfd),
    SCMP_SYS(keyctl),
    SCMP_SYS(add_key),
    SCMP_SYS(request_key),
    SCMP_SYS(init_module),
    SCMP_SYS(finit_module),
    SCMP_SYS(delete_module),
    SCMP_SYS(reboot),
    SCMP_SYS(swapon),
    SCMP_SYS(swapoff),
    SCMP_SYS(acct),
    SCMP_SYS(sethostname),
    SCMP_SYS(setdomainname),
    SCMP_SYS(settimeofday),
    SCMP_SYS(clock_settime),
    SCMP_SYS(adjtimex),
    SCMP_SYS(clock_adjtime),
    SCMP_SYS(shmat),
    SCMP_SYS(shmget),
    SCMP_SYS(pkey_mprotect),
    SCMP_SYS(pkey_alloc),
    SCMP_SYS(remap_file_pages),
    SCMP_SYS(process_madvise),
};

const int kOpens[] = {SCMP_SYS(open), SCMP_SYS(openat), SCMP_SYS(openat2), SCMP_SYS(creat),
                      SCMP_SYS(open_by_handle_at)};

bool deny(scmp_filter_ctx ctx, int sys, unsigned count = 0, scmp_arg_cmp a = {},
          scmp_arg_cmp b = {}, scmp_arg_cmp c = {}) {
  if (sys < 0) return true;  // unknown to this libseccomp or architecture
  const scmp_arg_cmp args[] = {a, b, c};
  return seccomp_rule_add_array(ctx, SCMP_ACT_KILL_PROCESS, sys, count, args) == 0;
}

// arch_prctl: only the permission a kernel that uses AMX must ask for before its first tile
// instruction, arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) (Linux 5.16+; without it
// the first tile instruction raises SIGILL). Anything else (ARCH_SET_FS, ARCH_SET_GS,
// another feature, CPUID faulting) kills. Both stages: a constructor may ask as well.
constexpr uint64_t kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;

bool add_arch_prctl_rule(scmp_filter_ctx ctx) {
  return deny(ctx, SCMP_SYS(arch_prctl), 1, SCMP_A0(SCMP_CMP_NE, kArchReqXcompPerm)) &&
         deny(ctx, SCMP_SYS(arch_prctl), 2, SCMP_A0(SCMP_CMP_EQ, kArchReqXcompPerm),
              SCMP_A1(SCMP_CMP_NE, kXfeatureXtiledata));
}

bool add_block_rules(scmp_filter_ctx ctx, const GuardedBlock& block) {
  const uint64_t size = uint64_t{1} << block.log2_size, mask = ~(size - 1);
  const uint64_t b = reinterpret_cast<uint64_t>(block.base), pad = b - size;
  bool ok = true;
  for (int sys : {SCMP_SYS(mprotect), SCMP_SYS(munmap), SCMP_SYS(madvise)}) {
    ok = ok && deny(ctx, sys, 1, SCMP_A0(SCMP_CMP_MASKED_EQ, mask, b));
    ok = ok && deny(ctx, sys, 1, SCMP_A0(SCMP_CMP_MASKED_EQ, mask, pad));
    ok = ok && deny(ctx, sys, 1, SCMP_A1(SCMP_CMP_GT, size));
  }
  ok = ok && deny(ctx, SCMP_SYS(mmap), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, mask, b));
  ok = ok && deny(ctx, SCMP_SYS(mmap), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, mask, pad));
  ok = ok && deny(ctx, SCMP_SYS(mmap), 2, SCMP_A1(SCMP_CMP_GT, size),
                  SCMP_A3(SCMP_CMP_MASKED_EQ, MAP_FIXED, MAP_FIXED));
  ok = ok && deny(ctx, SCMP_SYS(mremap), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, mask, b));
  ok = ok && deny(ctx, SCMP_SYS(mremap), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, mask, pad));
  ok =
      ok && deny(ctx, SCMP_SYS(mremap), 1, SCMP_A3(SCMP_CMP_MASKED_EQ, MREMAP_FIXED, MREMAP_FIXED));
  return ok;
}

bool add_loader_rules(scmp_filter_ctx ctx, const GuardedBlock& block) {
  bool ok = true;
  for (int sys : kForbidden) ok = ok && deny(ctx, sys);
  ok = ok && add_arch_prctl_rule(ctx);
  // Read-only opens only: the loader's, and what libgomp (sysfs, with OMP_PROC_BIND or
  // OMP_PLACES) and the sanitizer runtime (/proc/self/maps) read at load, some without
  // O_CLOEXEC. A constructor can read what the jail lets it see; it cannot write it, send
  // it, or keep it past the run. creat and the opens whose flags hide in a struct or a
  // handle not at all.
  const int flags_arg[][2] = {{SCMP_SYS(open), 1}, {SCMP_SYS(openat), 2}};
  for (const auto& [sys, arg] : flags_arg)
    for (uint64_t mask :
         {uint64_t{O_WRONLY}, uint64_t{O_RDWR}, uint64_t{O_CREAT}, uint64_t{O_TRUNC}})
      ok = ok && deny(ctx, sys, 1,
                      scmp_arg_cmp{static_cast<unsigned>(arg), SCMP_CMP_MASKED_EQ, mask, mask});
  for (int sys : {SCMP_SYS(creat), SCMP_SYS(openat2), SCMP_SYS(open_by_handle_at)})
    ok = ok && deny(ctx, sys);
  // New threads yes, new processes no; clone3 hides its flags in a struct: ENOSYS makes
  // glibc fall back to clone.
  ok = ok && deny(ctx, SCMP_SYS(clone), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0));
  ok = ok && seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0) == 0;
  // Signals to this process only (abort() raises with tgkill).
  const uint64_t self = static_cast<uint64_t>(getpid());
  for (int sys : {SCMP_SYS(tgkill), SCMP_SYS(rt_sigqueueinfo), SCMP_SYS(rt_tgsigqueueinfo)})
    ok = ok && deny(ctx, sys, 1, SCMP_A0(SCMP_CMP_NE, self));
  // The runner installs the second filter itself; nobody gets a listener.
  ok = ok && deny(ctx, SCMP_SYS(seccomp), 1,
                  SCMP_A1(SCMP_CMP_MASKED_EQ, SECCOMP_FILTER_FLAG_NEW_LISTENER,
                          SECCOMP_FILTER_FLAG_NEW_LISTENER));
  return ok && add_block_rules(ctx, block);
}

bool add_kernel_rules(scmp_filter_ctx ctx, bool sanitize) {
  bool ok = true;
  // The sanitizer runtime reads /proc/self/maps while it reports; it copes with a failed
  // open, not with being killed in the middle.
  const uint32_t open_action = sanitize ? SCMP_ACT_ERRNO(EACCES) : SCMP_ACT_KILL_PROCESS;
  for (int sys : kOpens)
    if (sys >= 0) ok = ok && seccomp_rule_add(ctx, open_action, sys, 0) == 0;
  ok = ok && deny(ctx, SCMP_SYS(seccomp));
  ok = ok && deny(ctx, SCMP_SYS(mprotect), 1, SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, PROT_EXEC));
  return ok;
}

// The filter as BPF, through a pipe (libseccomp 2.5 exports to a descriptor only).
bool export_program(scmp_filter_ctx ctx, std::vector<sock_filter>& program) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return false;
  const bool exported = seccomp_export_bpf(ctx, fds[1]) == 0;
  close(fds[1]);
  std::vector<char> bytes;
  char chunk[4096];
  for (ssize_t n; exported && (n = read(fds[0], chunk, sizeof chunk)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    bytes.insert(bytes.end(), chunk, chunk + n);
  }
  close(fds[0]);
  program.resize(bytes.size() / sizeof(sock_filter));
  if (!program.empty())
    std::memcpy(program.data(), bytes.data(), program.size() * sizeof(sock_filter));
  return exported && !program.empty() && bytes.size() % sizeof(sock_filter) == 0;
}

const char* install(std::vector<sock_filter>& program) {
  sock_fprog prog{static_cast<unsigned short>(program.size()), program.data()};
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0)
    return "cannot install the seccomp filter";
  return nullptr;
}

}  // namespace

bool reserve_block(uint64_t bytes, uint64_t min_bytes, GuardedBlock& block) {
  unsigned n = 21;
  while (n < 46 && ((uint64_t{1} << n) < bytes || (uint64_t{1} << n) < min_bytes)) ++n;
  // Under an address-space limit set from outside (ulimit -v) the wanted block may not
  // fit: then the smallest that holds `bytes` (a munmap or mprotect longer than it, of the
  // kernel's own memory, would then kill).
  void* p = MAP_FAILED;
  for (; p == MAP_FAILED; --n) {
    p = mmap(nullptr, 3 * (uint64_t{1} << n), PROT_NONE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p != MAP_FAILED) break;
    if ((uint64_t{1} << n) < 2 * bytes) return false;
  }
  const uint64_t size = uint64_t{1} << n;
  const uint64_t start = reinterpret_cast<uint64_t>(p);
  const uint64_t base = (start + size - 1) / size * size + size;  // the pad below stays inside
  if (base - size > start) munmap(p, base - size - start);
  if (base + size < start + 3 * size)
    munmap(reinterpret_cast<void*>(base + size), start + 3 * size - base - size);
  block.base = reinterpret_cast<char*>(base);
  block.log2_size = n;
  return true;
}

const char* prepare_filters(const GuardedBlock& block, bool sanitize) {
  scmp_filter_ctx loader = seccomp_init(SCMP_ACT_ALLOW), kernel = seccomp_init(SCMP_ACT_ALLOW);
  bool ok =
      loader && kernel && add_loader_rules(loader, block) && add_kernel_rules(kernel, sanitize);
  ok = ok && export_program(loader, loader_program) && export_program(kernel, kernel_program);
  if (loader) seccomp_release(loader);
  if (kernel) seccomp_release(kernel);
  return ok ? nullptr : "cannot build the seccomp filters";
}

const char* install_loader_filter() {
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return "cannot set no_new_privs";
  return install(loader_program);
}

const char* install_kernel_filter() { return install(kernel_program); }

}  // namespace ollie::runner::child
