// A real one-node Slurm cluster for the tests of the launch recipe (docs/distributed.md,
// "Testing"): Debian's slurm-wlm daemons, slurmctld and slurmd, started as children of the
// test process with a configuration in a temporary directory (ports of their own, no
// munge: auth/none, the node this machine with its CPUs), so `sbatch` runs a job array here
// in about a second. A watchdog process stops both daemons and removes the directory when
// the test process ends, however it ends. Missing binaries fail the test with what to run
// (scripts/setup.sh), unless OLLIE_SKIP_SLURM_TESTS=1 is set, which skips it instead.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

namespace ollie::test {

class SlurmCluster {
 public:
  // The cluster of this test process, started on first use; nullptr when skipped
  // (OLLIE_SKIP_SLURM_TESTS=1) or when it cannot start (the test has then failed with the
  // reason).
  static SlurmCluster* get() {
    static std::unique_ptr<SlurmCluster> cluster;
    static std::string error;
    if (skipped()) return nullptr;
    if (!cluster && error.empty()) {
      auto c = std::unique_ptr<SlurmCluster>(new SlurmCluster());
      error = c->start();
      if (error.empty()) cluster = std::move(c);
    }
    if (!cluster) ADD_FAILURE() << error;
    return cluster.get();
  }
  static bool skipped() {
    const char* s = std::getenv("OLLIE_SKIP_SLURM_TESTS");
    return s && std::string(s) == "1";
  }

  // `SLURM_CONF=... ` to put before sbatch, squeue and the like.
  std::string env() const { return "SLURM_CONF=" + dir_ + "/slurm.conf "; }

  // Waits until job `id` has left the queue (true), or `seconds` passed.
  bool wait_for(const std::string& id, double seconds) const {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    const std::string cmd = env() + "squeue -h -j " + id + " 2> /dev/null | grep -q .";
    while (std::chrono::steady_clock::now() < end) {
      if (std::system(cmd.c_str()) != 0) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return false;
  }

  ~SlurmCluster() {
    for (pid_t p : {ctld_, slurmd_})
      if (p > 0) ::kill(p, SIGTERM);
    for (pid_t p : {ctld_, slurmd_})
      if (p > 0) reap(p);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    if (watchdog_fd_ >= 0) ::close(watchdog_fd_);
  }

 private:
  SlurmCluster() = default;

  // Waits up to 5 s for a daemon told to stop, then kills it.
  static void reap(pid_t p) {
    for (int i = 0; i < 50; ++i) {
      if (::waitpid(p, nullptr, WNOHANG) != 0) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ::kill(p, SIGKILL);
    ::waitpid(p, nullptr, 0);
  }

  static std::string sbin(const char* name) {
    for (const char* dir : {"/usr/sbin/", "/usr/bin/", "/usr/local/sbin/"})
      if (std::filesystem::exists(std::string(dir) + name)) return std::string(dir) + name;
    return "";
  }

  static std::string output_of(const std::string& cmd) {
    std::string out;
    if (FILE* p = ::popen(cmd.c_str(), "r")) {
      char buf[256];
      while (std::fgets(buf, sizeof buf, p)) out += buf;
      ::pclose(p);
    }
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    return out;
  }

  std::string config() const {
    const std::string host = output_of("hostname -s");
    const std::string user = output_of("id -un");
    const int port = 20000 + static_cast<int>(::getpid() % 20000) * 2;
    std::ostringstream c;
    c << "ClusterName=ollietest\nSlurmctldHost=" << host << "(127.0.0.1)\nAuthType=auth/none\n"
      << "CredType=cred/none\nSlurmUser=" << user << "\nSlurmdUser=" << user
      << "\nSlurmctldPort=" << port << "\nSlurmdPort=" << port + 1 << "\nStateSaveLocation=" << dir_
      << "/state\nSlurmdSpoolDir=" << dir_ << "/spool\nSlurmctldPidFile=" << dir_
      << "/slurmctld.pid\nSlurmdPidFile=" << dir_ << "/slurmd.pid\n"
      << "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
      << "SelectType=select/cons_tres\nSelectTypeParameters=CR_CPU\n"
      << "SchedulerType=sched/builtin\nReturnToService=2\nMpiDefault=none\n"
      << "JobCompType=jobcomp/none\nAccountingStorageType=accounting_storage/none\n"
      << "SlurmctldLogFile=" << dir_ << "/slurmctld.log\nSlurmdLogFile=" << dir_
      << "/slurmd.log\nNodeName=" << host
      << " NodeAddr=127.0.0.1 CPUs=" << std::thread::hardware_concurrency() << " State=UNKNOWN\n"
      << "PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n";
    return c.str();
  }

  // A daemon in the foreground (-D), as a child of this process.
  pid_t spawn(const std::string& path, const char* extra) const {
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::setenv("SLURM_CONF", (dir_ + "/slurm.conf").c_str(), 1);
      const int null = ::open("/dev/null", O_RDWR);
      ::dup2(null, 1);
      ::dup2(null, 2);
      if (extra)
        ::execl(path.c_str(), path.c_str(), "-D", extra, static_cast<char*>(nullptr));
      else
        ::execl(path.c_str(), path.c_str(), "-D", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    return pid;
  }

  std::string start() {
    const std::string ctld = sbin("slurmctld"), slurmd = sbin("slurmd");
    if (ctld.empty() || slurmd.empty() || sbin("sbatch").empty())
      return "the Slurm daemons (slurmctld, slurmd) or sbatch are missing: run scripts/setup.sh "
             "(it installs Debian's slurm-wlm), or set OLLIE_SKIP_SLURM_TESTS=1 to skip the "
             "Slurm test";
    std::string pattern = (std::filesystem::temp_directory_path() / "ollie-slurm.XXXXXX").string();
    if (!::mkdtemp(pattern.data())) return "cannot create a temporary directory";
    dir_ = pattern;
    std::filesystem::create_directories(dir_ + "/state");
    std::filesystem::create_directories(dir_ + "/spool");
    std::ofstream(dir_ + "/slurm.conf") << config();
    ctld_ = spawn(ctld, "-i");
    slurmd_ = spawn(slurmd, nullptr);
    start_watchdog();
    // Up when the node is idle (about a second).
    const std::string idle = env() + "sinfo -h -o %T 2> /dev/null | grep -q idle";
    for (int i = 0; i < 150; ++i) {
      if (std::system(idle.c_str()) == 0) return "";
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    std::ifstream log(dir_ + "/slurmctld.log"), dlog(dir_ + "/slurmd.log");
    std::stringstream out;
    out << log.rdbuf() << dlog.rdbuf();
    return "the Slurm test cluster did not come up in 30 s: " + out.str();
  }

  // A shell that waits for this process's end (the pipe's write end closes with it), then
  // stops the daemons and removes the directory.
  void start_watchdog() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return;
    const std::string script = "cat > /dev/null; kill " + std::to_string(ctld_) + " " +
                               std::to_string(slurmd_) + " 2> /dev/null; sleep 1; rm -rf " + dir_;
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::dup2(fds[0], 0);
      ::setsid();
      ::execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(fds[0]);
    watchdog_fd_ = fds[1];
  }

  std::string dir_;
  pid_t ctld_ = -1, slurmd_ = -1;
  int watchdog_fd_ = -1;
};

}  // namespace ollie::test
