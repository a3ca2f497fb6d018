// CommandModel: an external proposer (`--proposer-cmd`). Runs `/bin/sh -c COMMAND` in its
// own process group (support/process.h), feeds it the prompt on stdin while reading its
// stdout and stderr (one loop, so neither side can block the other), enforces the time
// limit on the whole group, and always reaps it.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "llm/llm.h"
#include "support/error.h"
#include "support/process.h"
#include "support/strings.h"

namespace ollie::llm {
namespace {

using Clock = std::chrono::steady_clock;

// A proposer prints one kernel; more than this is a runaway loop, not an answer.
constexpr size_t kMaxStdout = size_t{16} << 20;
// Enough stderr for the end of a traceback or a compiler's complaint.
constexpr size_t kStderrKeep = size_t{64} << 10;
// Between SIGTERM and SIGKILL on a timeout: time to flush and clean up temporary files.
constexpr double kGraceSeconds = 1.0;
// After the group was killed, how long to wait for the end of its output: a process that
// left the group (setsid) could hold the pipe open for ever.
constexpr double kDrainSeconds = 1.0;

// Runs the command on `input`. When it is done (or stdout passed kMaxStdout), whatever
// it left in its group is killed too.
process::RunResult run(const std::string& command, const std::string& input,
                       double timeout_seconds) {
  return process::run({.argv = {"/bin/sh", "-c", command},
                       .search_path = false,
                       .cwd = "",
                       .input = input,
                       .merge_stderr = false,
                       .stdout_limit = kMaxStdout,
                       .stderr_tail = kStderrKeep,
                       .timeout_seconds = timeout_seconds,
                       .grace_seconds = kGraceSeconds,
                       .kill_group_on_exit = true,
                       .kill_on_overflow = true,
                       .drain_seconds = kDrainSeconds});
}

// What goes to the command's stdin.
std::string input_text(const ModelRequest& request) {
  std::string text;
  if (!request.system.empty()) {
    text = request.system;
    while (!text.empty() && text.back() == '\n') text.pop_back();
    text += "\n\n";
  }
  text += request.user;
  if (!text.empty() && text.back() != '\n') text += '\n';
  return text;
}

// The last lines of stderr for a message.
std::string stderr_tail(const std::string& err) {
  constexpr int kLines = 20;
  constexpr size_t kChars = 4000;
  std::string t = err;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ' || t.back() == '\r')) t.pop_back();
  if (t.empty()) return "(nothing on stderr)";
  size_t at = t.size();
  for (int lines = 0; lines < kLines && at != std::string::npos && at > 0; ++lines)
    at = t.rfind('\n', at - 1);
  size_t from = at == std::string::npos ? 0 : at + 1;
  if (t.size() - from > kChars) from = t.size() - kChars;
  return (from > 0 ? "...\n" : "") + strings::printable(t.substr(from));
}

std::string format_seconds(double s) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", s);
  return buffer;
}

}  // namespace

CommandModel::CommandModel(CommandConfig config) : config_(std::move(config)) {
  if (config_.command.find_first_not_of(" \t\n") == std::string::npos)
    throw UserError(
        "--proposer-cmd is empty: give the command that reads a prompt on stdin and prints a "
        "kernel");
  if (!(config_.timeout_seconds > 0))
    throw UserError("--proposer-timeout must be a positive number of seconds (got " +
                    format_seconds(config_.timeout_seconds) + ")");
}

ModelAnswer CommandModel::complete(const ModelRequest& request) {
  const auto start = Clock::now();
  ModelAnswer a;
  a.attempts = 1;
  a.request = input_text(request);
  const process::RunResult o = run(config_.command, a.request, config_.timeout_seconds);
  a.seconds = std::chrono::duration<double>(Clock::now() - start).count();

  std::string shown =
      config_.command.size() > 200 ? config_.command.substr(0, 200) + "..." : config_.command;
  const std::string who = "--proposer-cmd '" + strings::printable(shown) + "'";
  const std::string tail = stderr_tail(o.err);
  if (o.failure) {
    a.status = Status::CommandFailed;
    a.error = "cannot start /bin/sh for " + who + ": " + o.failure.call +
              " failed: " + std::strerror(o.failure.error);
  } else if (o.overflowed) {
    a.status = Status::BadAnswer;
    a.error = who + " printed more than " + std::to_string(kMaxStdout >> 20) +
              " MiB on standard output and was stopped; a proposer prints one kernel";
  } else if (o.timed_out) {
    a.status = Status::Timeout;
    a.error = who + " did not finish within " + format_seconds(config_.timeout_seconds) +
              " s and was stopped with its process group (raise --proposer-timeout if it needs "
              "longer): " +
              tail;
  } else if (o.status.exited && o.status.exit_code == 0) {
    a.status = Status::Ok;
    a.text = o.out;
  } else {
    a.status = Status::CommandFailed;
    std::string how;
    if (!o.status.exited) {
      how = "was killed by " + process::signal_name(o.status.signal);
    } else {
      const int code = o.status.exit_code;
      how = "exited with status " + std::to_string(code);
      if (code == 127) how += " (command not found: check the command and PATH)";
      if (code == 126) how += " (found but not executable: check its permissions)";
      if (code > 128 && code < 128 + 65)
        how += " (what it ran was killed by " + process::signal_name(code - 128) + ")";
    }
    a.error = who + " " + how + ": " + tail;
  }
  a.raw_answer = o.overflowed ? o.out.substr(0, kStderrKeep) : o.out;
  if (!a.ok() && !o.err.empty()) a.raw_answer += "\n--- stderr (the end) ---\n" + o.err;
  return a;
}

}  // namespace ollie::llm
