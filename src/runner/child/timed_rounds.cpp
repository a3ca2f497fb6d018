// The timed rounds of ollie-runner (see timed_rounds.h and protocol.h): the round
// structure, and in fresh mode the inputs no call has seen before, drawn from getrandom
// right before the clock starts, and the timed calls kept for checking, chosen after the
// fact.
#include "runner/child/timed_rounds.h"

#include <signal.h>
#include <sys/random.h>
#include <sys/time.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "runner/child/seal.h"

namespace ollie::runner::child {

namespace {

namespace proto = protocol;

double now() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

// Writes every cache line of the flush buffer (and reads one value back, so the
// compiler cannot drop the stores).
void flush_caches(char* flush, uint64_t bytes) {
  volatile char sink = 0;
  for (uint64_t i = 0; i < bytes; i += 64) flush[i] = static_cast<char>(flush[i] + 1);
  sink = flush[bytes / 2];
  (void)sink;
}

// The rounds' state: the request, where everything lies in the runner's view, and in
// fresh mode the draws of the call about to be made.
class Rounds {
 public:
  explicit Rounds(const TimedRequest& request)
      : rq_(request),
        h_(*request.header),
        n_in_(h_.n_inputs),
        n_out_(h_.n_outputs),
        n_sets_(h_.n_sets),
        live_(request.buffers),
        staged_(live_ + n_in_ + n_out_),
        check_(staged_ + n_sets_ * n_in_),
        view_(request.view),
        times_(request.times),
        rotation_(n_in_),
        points_(n_in_ * h_.fresh_points),
        element_bytes_(n_in_, 1),
        seen_(request.entries.size()),
        fastest_(request.entries.size(), 0.0),
        clocked_(request.entries.size(), 0) {
    if (h_.fresh) std::memcpy(element_bytes_.data(), view_ + h_.fresh_offset, n_in_ * 4);
    for (uint32_t& e : element_bytes_) e = e == 0 ? 1 : e;
    copies_.resize(n_sets_ * n_in_);
    for (size_t s = 0; s < n_sets_; ++s)
      for (size_t i = 0; i < n_in_; ++i)
        copies_[s * n_in_ + i] = {at(live_[i]), at(staged_[s * n_in_ + i]), live_[i].bytes};
  }

  // Round r: every kernel once, in turn (reversed on odd rounds). False when the fresh
  // inputs could not be drawn (results.fresh_errno says why).
  bool round(uint32_t r, bool timed);
  uint32_t fresh_errno() const { return errno_; }
  // Kernel k's fastest call on the clock so far (0: none yet).
  double fastest(size_t k) const { return k < fastest_.size() ? fastest_[k] : 0; }
  // Two kernels, each clocked at least twice (the first ten times unless its calls took
  // 10 ms together), and the first's fastest call more than `ratio` times the second's
  // (RequestHeader::abandon_ratio).
  bool first_slower_than(double ratio) const;

 private:
  uint64_t elem(size_t i) const { return element_bytes_[i]; }
  uint64_t count(size_t i) const { return live_[i].bytes / elem(i); }
  char* at(const proto::Buffer& b) const { return view_ + b.offset; }
  bool random(void* out, size_t bytes);
  void load(size_t set);
  bool refill(size_t set);
  bool freshen();
  void poison();
  void call(size_t k);
  void run_kernel(size_t k);
  void after_call();
  bool fresh_input_intact(size_t i, char* message, size_t size) const;
  bool keep(size_t k, uint32_t r);

  const TimedRequest& rq_;
  const proto::RequestHeader& h_;
  const size_t n_in_, n_out_, n_sets_;
  const proto::Buffer* live_;
  const proto::Buffer* staged_;
  const proto::Buffer* check_;
  char* view_;
  double* times_;
  std::vector<uint64_t> rotation_, points_;  // fresh: the call's draws
  std::vector<uint32_t> element_bytes_;      // fresh: per input (from the fresh region)
  std::vector<uint64_t> seen_;               // fresh: timed calls per kernel so far
  std::vector<double> fastest_;              // per kernel: its fastest call on the clock
  std::vector<uint32_t> clocked_;            // per kernel: its calls on the clock
  double clocked_seconds_ = 0;               // the first kernel's calls on the clock, in all
  std::vector<InputCopy> copies_;            // not fresh: what the live inputs of set s hold
  uint64_t calls_ = 0;                       // kernel calls so far (the checks name them)
  size_t loaded_set_ = SIZE_MAX;             // not fresh: the set the live inputs hold
  size_t set_ = 0;                           // fresh: the set of the call being prepared
  uint32_t errno_ = 0;
};

// Fills `out` from the kernel's unpredictable source: getrandom (nothing in the
// process's memory, the kernel's included, predicts it).
bool Rounds::random(void* out, size_t bytes) {
  char* p = static_cast<char*>(out);
  while (bytes > 0) {
    const ssize_t n = getrandom(p, bytes, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      errno_ = n < 0 ? static_cast<uint32_t>(errno) : EIO;
      return false;
    }
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

// Not fresh: the live inputs hold `set` as staged.
void Rounds::load(size_t set) {
  if (set == loaded_set_) return;
  for (size_t i = 0; i < n_in_; ++i)
    std::memcpy(at(live_[i]), at(staged_[set * n_in_ + i]), live_[i].bytes);
  loaded_set_ = set;
}

// Fresh: the live inputs hold `set` rotated by a random 1..N-1 elements each (every
// element moves, so no sample of positions reads what it read before).
bool Rounds::refill(size_t set) {
  set_ = set;
  if (!random(rotation_.data(), rotation_.size() * sizeof(uint64_t))) return false;
  for (size_t i = 0; i < n_in_; ++i) {
    const uint64_t n = count(i), e = elem(i);
    rotation_[i] = n > 1 ? 1 + rotation_[i] % (n - 1) : 0;
    const char* src = at(staged_[set * n_in_ + i]);
    char* dst = at(live_[i]);
    const uint64_t head = (n - rotation_[i]) * e;
    std::memcpy(dst, src + rotation_[i] * e, head);
    std::memcpy(dst + head, src, rotation_[i] * e);
  }
  return true;
}

// Fresh, the last step before the clock starts: fresh_points elements of every input, at
// positions drawn now, take the next set's values at the same positions.
bool Rounds::freshen() {
  if (!random(points_.data(), points_.size() * sizeof(uint64_t))) return false;
  const size_t m = h_.fresh_points, other = (set_ + 1) % n_sets_;
  for (size_t i = 0; i < n_in_; ++i) {
    const uint64_t n = count(i), e = elem(i);
    const char* src = at(staged_[other * n_in_ + i]);
    char* dst = at(live_[i]);
    for (size_t j = 0; j < m; ++j) {
      uint64_t& p = points_[i * m + j];
      p = n > 0 ? p % n : 0;  // an empty input has nothing to change (the parent skips it)
      if (n > 0) std::memcpy(dst + p * e, src + p * e, e);
    }
  }
  return true;
}

void Rounds::poison() {
  for (size_t o = 0; o < n_out_; ++o)
    std::memset(at(live_[n_in_ + o]), 0xFF, live_[n_in_ + o].bytes);
}

void Rounds::call(size_t k) {
  run_kernel(k);
  after_call();
}

// Kernel k's call itself; the first kernel's under the call limit (RequestHeader::
// call_limit_seconds): an alarm armed right before, disarmed right after, whose default
// action ends the child.
void Rounds::run_kernel(size_t k) {
  const bool limited = k == 0 && h_.call_limit_seconds > 0;
  if (limited) {
    itimerval limit{};
    const double s = h_.call_limit_seconds;
    limit.it_value.tv_sec = static_cast<time_t>(s);
    limit.it_value.tv_usec =
        static_cast<suseconds_t>((s - static_cast<double>(limit.it_value.tv_sec)) * 1e6);
    if (limit.it_value.tv_sec == 0 && limit.it_value.tv_usec == 0) limit.it_value.tv_usec = 1;
    setitimer(ITIMER_REAL, &limit, nullptr);
  }
  rq_.entries[k](rq_.live, rq_.dims);
  if (limited) {
    const itimerval off{};
    setitimer(ITIMER_REAL, &off, nullptr);
  }
}

bool Rounds::first_slower_than(double ratio) const {
  if (fastest_.size() != 2 || clocked_[0] < 2 || clocked_[1] < 2 || fastest_[1] <= 0) return false;
  // A fastest call to trust: of two calls that took 10 ms or more together (a slow
  // kernel, the case worth stopping), else of ten (microseconds are noisy).
  if (clocked_[0] < 10 && clocked_seconds_ < 0.01) return false;
  return fastest_[0] > ratio * fastest_[1];
}

// Fresh: input i holds what refill and freshen wrote (the set rotated by rotation_[i],
// then points_ from the next set): every point checked alone, the stretches between the
// points compared with the rotated set. Otherwise `message` says where it differs.
bool Rounds::fresh_input_intact(size_t i, char* message, size_t size) const {
  const uint64_t n = count(i), e = elem(i), r = rotation_[i], m = h_.fresh_points;
  if (n == 0) return true;
  const char* live = at(live_[i]);
  const char* src = at(staged_[set_ * n_in_ + i]);
  const char* other = at(staged_[((set_ + 1) % n_sets_) * n_in_ + i]);
  std::vector<uint64_t> points(points_.begin() + static_cast<ptrdiff_t>(i * m),
                               points_.begin() + static_cast<ptrdiff_t>((i + 1) * m));
  std::sort(points.begin(), points.end());
  auto differs = [&](uint64_t element) {
    std::snprintf(message, size, "the kernel changed its read-only input %zu (element %llu)", i,
                  static_cast<unsigned long long>(element));
    return false;
  };
  for (uint64_t p : points)
    if (std::memcmp(live + p * e, other + p * e, e) != 0) return differs(p);
  // live[a, b) against the set rotated by r: element q of live is element (q + r) % n.
  auto stretch = [&](uint64_t a, uint64_t b) {
    while (a < b) {
      const uint64_t from = (a + r) % n, len = std::min(b - a, n - from);
      if (std::memcmp(live + a * e, src + from * e, len * e) != 0) return false;
      a += len;
    }
    return true;
  };
  uint64_t a = 0;
  for (uint64_t p : points) {
    if (!stretch(a, p)) return differs(a);
    a = std::max(a, p + 1);
  }
  return stretch(a, n) || differs(a);
}

// After every kernel call (warm-up, warm and timed alike): the floating-point environment
// and the read-only inputs as the kernel found them (seal.h); otherwise the child reports
// Tampered and ends.
void Rounds::after_call() {
  ++calls_;
  if (h_.fresh == 0) {
    check_after_call(&copies_[loaded_set_ * n_in_], n_in_, calls_);
    return;
  }
  check_after_call(nullptr, 0, calls_);
  char message[256];
  for (size_t i = 0; i < n_in_; ++i) {
    if (fresh_input_intact(i, message, sizeof message)) continue;
    char full[400];
    std::snprintf(full, sizeof full, "%s during call %llu", message,
                  static_cast<unsigned long long>(calls_));
    report_tampered(full);
  }
}

// Fresh: whether timed call number seen_[k] of kernel k joins the check sample
// (reservoir sampling, decided now, after the call, from getrandom); if so its outputs
// and draws go to the chosen slot.
bool Rounds::keep(size_t k, uint32_t r) {
  const uint64_t n = ++seen_[k], slots = h_.check_calls;
  uint64_t slot = n - 1;
  if (n > slots) {
    if (!random(&slot, sizeof slot)) return false;
    slot %= n;
    if (slot >= slots) return true;
  }
  for (size_t o = 0; o < n_out_; ++o)
    std::memcpy(at(check_[(k * slots + slot) * n_out_ + o]), at(live_[n_in_ + o]),
                live_[n_in_ + o].bytes);
  char* entry =
      view_ + proto::fresh_log_offset(h_) + (k * slots + slot) * proto::fresh_entry_bytes(h_);
  const proto::FreshEntry head{1, static_cast<uint32_t>(k), r, static_cast<uint32_t>(set_)};
  std::memcpy(entry, &head, sizeof head);
  std::memcpy(entry + sizeof head, rotation_.data(), rotation_.size() * sizeof(uint64_t));
  std::memcpy(entry + sizeof head + rotation_.size() * sizeof(uint64_t), points_.data(),
              points_.size() * sizeof(uint64_t));
  return true;
}

bool Rounds::round(uint32_t r, bool timed) {
  const size_t set = r % n_sets_, n_kernels = rq_.entries.size();
  const bool fresh = h_.fresh != 0;
  if (!fresh) load(set);
  for (size_t turn = 0; turn < n_kernels; ++turn) {
    const size_t k = r % 2 == 0 ? turn : n_kernels - 1 - turn;
    poison();
    if (timed && h_.warm_call) {
      // Wakes the kernel's thread pool (and whatever else it keeps warm) right before
      // the timed call. On the next input set (fresh: rotated and changed too), so that
      // the warm call never sees the timed call's inputs; the timed call's outputs are
      // its own (poisoned again).
      const size_t next = (set + 1) % n_sets_;
      if (fresh && !(refill(next) && freshen())) return false;
      if (!fresh) load(next);
      call(k);
      poison();
    }
    if (fresh && !refill(set)) return false;
    if (!fresh) load(set);
    if (rq_.flush) flush_caches(rq_.flush, h_.flush_bytes);
    if (fresh && !freshen()) return false;  // the last writes before the clock
    const double t0 = now();
    run_kernel(k);
    const double t1 = now();
    if (timed) times_[k * h_.max_rounds + r] = t1 - t0;
    fastest_[k] = clocked_[k]++ == 0 ? t1 - t0 : std::min(fastest_[k], t1 - t0);
    if (k == 0) clocked_seconds_ += t1 - t0;
    after_call();
    if (fresh) {
      if (timed && !keep(k, r)) return false;
      continue;
    }
    for (size_t o = 0; o < n_out_; ++o)
      std::memcpy(at(check_[(k * n_sets_ + set) * n_out_ + o]), at(live_[n_in_ + o]),
                  live_[n_in_ + o].bytes);
  }
  return true;
}

// The call limit's alarm must end the child: SIGALRM at its default action and not
// blocked, whatever the child inherited.
void default_alarm() {
  signal(SIGALRM, SIG_DFL);
  sigset_t alarm;
  sigemptyset(&alarm);
  sigaddset(&alarm, SIGALRM);
  sigprocmask(SIG_UNBLOCK, &alarm, nullptr);
}

// Whether the timed rounds go on after `rounds` of them, `elapsed` seconds in.
bool more_rounds(const proto::RequestHeader& h, uint32_t rounds, double elapsed) {
  if (rounds >= h.max_rounds) return false;
  if (h.cap_seconds > 0 && elapsed >= h.cap_seconds &&
      rounds >= std::min<uint32_t>(h.min_rounds, 2))
    return false;
  return rounds < h.min_rounds || elapsed < h.budget_seconds;
}

}  // namespace

void run_timed(const TimedRequest& request) {
  const proto::RequestHeader& h = *request.header;
  if (h.call_limit_seconds > 0) default_alarm();
  Rounds rounds_of(request);
  const bool pace = h.abandon_ratio > 0;
  bool abandoned = false;
  const double warm_start = now();
  bool ok = true;
  for (uint32_t r = 0; r < h.warmup && ok && !abandoned; ++r) {
    ok = rounds_of.round(r, false);
    abandoned = ok && pace && rounds_of.first_slower_than(h.abandon_ratio);
  }
  const double start = now();
  uint32_t rounds = 0;
  while (ok && !abandoned && more_rounds(h, rounds, now() - start)) {
    ok = rounds_of.round(rounds, true);
    if (ok) ++rounds;
    abandoned = ok && pace && rounds_of.first_slower_than(h.abandon_ratio);
  }
  proto::TimedResults results{};
  results.rounds = rounds;
  results.warmup_seconds = start - warm_start;
  results.fresh_errno = rounds_of.fresh_errno();
  results.abandoned = abandoned ? 1 : 0;
  results.fastest[0] = rounds_of.fastest(0);
  results.fastest[1] = rounds_of.fastest(1);
  // The times were kept in the child's private mapping until now (the kernel's calls are over).
  std::memcpy(request.view + h.results_offset, &results, sizeof results);
  std::memcpy(request.view + h.results_offset + sizeof results, request.times,
              request.entries.size() * h.max_rounds * sizeof(double));
}

}  // namespace ollie::runner::child
