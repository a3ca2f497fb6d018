// The scale simulation of shared runs (docs/distributed.md, "How far one server goes"):
// N worker processes against one PostgreSQL run, each with a stand-in evaluator (a sleep of
// --eval-ms, no compiling) doing what a worker does per candidate: look it up, claim it,
// add it, record its evaluation and an event in one transaction, a step, and the run's
// counts twice (the budget and the progress line, as the search does every step). Prints
// the storage operations per second, claim conflicts, duplicate evaluations (must be 0),
// the database's share of a worker's time, and the mean times of one counts() and of one
// best(20) (every 8 candidates, as a worker refreshes the run's best).
// --prefill N first fills the run with N evaluated candidates and their steps (a long run).
//
//   bench_distributed_sim URL --workers 1,4,16,64 --seconds 5 [--eval-ms 0] [--pool 20000]
//                         [--prefill 0]
// bench/distributed_sim.sh starts a throwaway server and runs it.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <libpq-fe.h>

#include "store/schema.h"
#include "store/store.h"
#include "support/error.h"
#include "support/sha256.h"

using namespace ollie;
using Clock = std::chrono::steady_clock;

namespace {

struct Stats {
  long ops = 0, ours = 0, busy = 0, evaluated = 0, counts = 0, bests = 0;
  double db_seconds = 0, wall = 0, count_seconds = 0, best_seconds = 0;
};

std::string kernel(long i) { return "// stand-in kernel " + std::to_string(i) + "\n"; }

// One worker: until `seconds` pass, candidates of the pool in a random order.
Stats work(const store::Location& where, double seconds, int eval_ms, long pool, uint64_t seed) {
  Stats st;
  store::Store s = store::Store::open(where);
  store::Worker w;
  w.name = "sim:" + std::to_string(::getpid());
  w.fingerprint = "sim";
  w.machine_json = "{}";
  w.chains = 1;
  const int chain = s.add_worker(w).first_chain;
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<long> pick(0, pool - 1);
  const auto start = Clock::now();
  auto since = [](Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  };
  int64_t step = 0;
  while (since(start) < seconds) {
    const std::string source = kernel(pick(rng));
    const std::string hash = sha256_hex(source);
    auto t0 = Clock::now();
    const store::Claim c = s.claim(hash, 60);
    st.ops += 2;  // the claim, and its look for an evaluation
    st.db_seconds += since(t0);
    if (c == store::Claim::Evaluated) {
      ++st.evaluated;
      continue;
    }
    if (c == store::Claim::Evaluating) {
      ++st.busy;
      continue;
    }
    ++st.ours;
    if (eval_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(eval_ms));
    t0 = Clock::now();
    store::Candidate cand;
    cand.source = source;
    cand.proposer = "sim";
    const int64_t id = s.add_candidate(cand);
    store::Evaluation e;
    e.candidate = id;
    e.verdict = "pass";
    e.median_seconds = 1e-3;
    {
      auto tx = s.transaction();
      s.add_evaluation(e);
      s.add_event("sim", "evaluated");
      tx.commit();
    }
    store::Step row;
    row.step = step++;
    row.chain = chain;
    row.proposed = row.current = id;
    s.add_step(row);
    s.heartbeat();
    st.ops += 7;  // candidate, begin, evaluation, event, commit, step, heartbeat
    st.db_seconds += since(t0);
    t0 = Clock::now();
    for (int i = 0; i < 2; ++i) s.counts();
    st.count_seconds += since(t0);
    st.db_seconds += since(t0);
    st.ops += 2;
    st.counts += 2;
    if (step % 8 == 0) {  // the run's best, as a worker refreshes it every 8 steps
      t0 = Clock::now();
      s.best(20);
      st.best_seconds += since(t0);
      st.db_seconds += since(t0);
      ++st.ops;
      ++st.bests;
    }
  }
  st.wall = since(start);
  s.stop_worker();
  return st;
}

// N evaluated candidates and their steps written straight into the run (one statement
// each), and the run's counters counted again from the rows.
void prefill(const std::string& url, const std::string& run, long n) {
  PGconn* conn = PQconnectdb(url.c_str());
  const std::string n_text = std::to_string(n);
  const std::string sql =
      "SET search_path TO \"" + run +
      "\"; INSERT INTO candidates(hash, source, schedule, rewrites, proposer, created) SELECT "
      "md5('p' || i), 'prefill ' || i, '', '', 'sim', '' FROM generate_series(1, " +
      n_text +
      ") i; INSERT INTO evaluations(candidate, verdict, message, penalty, certificate_json, "
      "median_seconds, min_seconds, mad_seconds, ratio_vs_baseline, rounds, cost, eval_seconds, "
      "created) SELECT id, 'pass', '', 0, '{}', 1e-3, 1e-3, 0, 1, 5, 0, 0, '' FROM candidates; "
      "INSERT INTO steps(step, chain, proposed, \"current\", accepted, temperature, "
      "cost_current, cost_proposed, note, created) SELECT id, 0, id, id, 1, 0, 0, 0, '', '' "
      "FROM candidates; " +
      store::schema::kRecountCounters + "; ANALYZE";
  PGresult* r = PQexec(conn, sql.c_str());
  const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
  const std::string error = PQerrorMessage(conn);
  PQclear(r);
  PQfinish(conn);
  if (!ok) throw std::runtime_error("prefill: " + error);
}

void run(const std::string& url, int workers, double seconds, int eval_ms, long pool,
         long prefilled) {
  store::Location where = store::Location::parse(
      url, "sim-" + std::to_string(::getpid()) + "-" + std::to_string(workers));
  {
    store::RunInfo info;
    info.spec_path = "sim.py";
    info.spec_source = "sim";
    info.entry = "sim";
    info.dims_json = info.options_json = "{}";
    info.machine_json = R"({"fingerprint": "sim"})";  // the workers' machine kind
    store::Store::create(where, info);
  }
  if (prefilled > 0) prefill(url, where.run, prefilled);
  std::vector<std::pair<pid_t, int>> children;
  for (int i = 0; i < workers; ++i) {
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error("pipe");
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(fds[0]);
      const Stats st = work(where, seconds, eval_ms, pool, static_cast<uint64_t>(i) + 1);
      const std::string line = std::to_string(st.ops) + " " + std::to_string(st.ours) + " " +
                               std::to_string(st.busy) + " " + std::to_string(st.evaluated) + " " +
                               std::to_string(st.db_seconds) + " " + std::to_string(st.wall) + " " +
                               std::to_string(st.counts) + " " + std::to_string(st.count_seconds) +
                               " " + std::to_string(st.bests) + " " +
                               std::to_string(st.best_seconds);
      if (::write(fds[1], line.data(), line.size()) < 0) ::_exit(1);
      ::_exit(0);
    }
    ::close(fds[1]);
    children.emplace_back(pid, fds[0]);
  }
  Stats total;
  for (auto [pid, fd] : children) {
    char buf[256] = {};
    const ssize_t n = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    ::waitpid(pid, nullptr, 0);
    if (n <= 0) continue;
    Stats st;
    std::istringstream in(buf);
    in >> st.ops >> st.ours >> st.busy >> st.evaluated >> st.db_seconds >> st.wall >> st.counts >>
        st.count_seconds >> st.bests >> st.best_seconds;
    total.bests += st.bests;
    total.best_seconds += st.best_seconds;
    total.counts += st.counts;
    total.count_seconds += st.count_seconds;
    total.ops += st.ops;
    total.ours += st.ours;
    total.busy += st.busy;
    total.evaluated += st.evaluated;
    total.db_seconds += st.db_seconds;
    total.wall = std::max(total.wall, st.wall);
  }
  store::Store s = store::Store::open(where);
  const store::Counts n = s.counts();
  std::printf(
      "%3d workers: %8.0f storage ops/s, %6.0f evaluations/s, claim conflicts %ld, already "
      "evaluated %ld, duplicate evaluations %lld, database %.0f%% of a worker's time, "
      "counts() %.2f ms, best(20) %.2f ms\n",
      workers, static_cast<double>(total.ops) / total.wall,
      static_cast<double>(n.evaluations - prefilled) / total.wall, total.busy, total.evaluated,
      static_cast<long long>(n.evaluations - n.candidates),
      100 * total.db_seconds / (total.wall * workers),
      total.counts > 0 ? 1e3 * total.count_seconds / static_cast<double>(total.counts) : 0.0,
      total.bests > 0 ? 1e3 * total.best_seconds / static_cast<double>(total.bests) : 0.0);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: bench_distributed_sim postgresql://... [--workers 1,4,16,64] "
                 "[--seconds 5] [--eval-ms 0] [--pool 20000]\n");
    return 2;
  }
  std::string url = argv[1], workers = "1,4,16,64";
  double seconds = 5;
  int eval_ms = 0;
  long pool = 20000, prefilled = 0;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--workers")
      workers = value;
    else if (flag == "--seconds")
      seconds = std::atof(value.c_str());
    else if (flag == "--eval-ms")
      eval_ms = std::atoi(value.c_str());
    else if (flag == "--pool")
      pool = std::atol(value.c_str());
    else if (flag == "--prefill")
      prefilled = std::atol(value.c_str());
  }
  try {
    std::istringstream list(workers);
    for (std::string n; std::getline(list, n, ',');)
      run(url, std::stoi(n), seconds, eval_ms, pool, prefilled);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
