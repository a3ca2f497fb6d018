// Gathering the report's data from a run database (see run_data.h).
#include "report/run_data.h"

#include <time.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

namespace ollie::report {

namespace {

using store::Candidate;
using store::Evaluation;

// The latest evaluation of each candidate, and the first one's id and time.
struct EvalIndex {
  std::map<int64_t, Evaluation> latest;
  std::map<int64_t, Evaluation> first;
};

EvalIndex index_evaluations(const std::vector<Evaluation>& evals) {
  EvalIndex ix;
  for (const Evaluation& e : evals) {
    ix.latest[e.candidate] = e;
    ix.first.emplace(e.candidate, e);
  }
  return ix;
}

// A candidate's time on the search's clock, as `optimize`'s summary counts it: the
// side-by-side ratio to the baseline times the baseline's median, else its own median.
double time_of(const Evaluation& e, double baseline_seconds) {
  if (e.verdict != "pass" || e.median_seconds <= 0) return 0;
  if (baseline_seconds <= 0 || e.ratio_vs_baseline <= 0) return e.median_seconds;
  return baseline_seconds * e.ratio_vs_baseline;
}

// The first number after "model call " in `text`, or 0.
int64_t model_call_named(const std::string& text) {
  const std::string key = "model call ";
  const size_t at = text.find(key);
  if (at == std::string::npos) return 0;
  int64_t n = 0;
  for (size_t i = at + key.size();
       i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i)
    n = n * 10 + (text[i] - '0');
  return n;
}

Roof roof_of(const std::vector<store::EventRow>& events) {
  Roof r;
  for (const auto& e : events) {
    if (e.kind != "roofline") continue;
    const nlohmann::json j = nlohmann::json::parse(e.text, nullptr, false);
    if (!j.is_object()) continue;
    r.known = true;
    r.flops = j.value("flops", 0.0);
    r.bytes = j.value("bytes", 0.0);
    r.intensity = j.value("intensity", 0.0);
    r.peak_flops = j.value("peak_flops", 0.0);
    r.bandwidth = j.value("bandwidth", 0.0);
    r.bound_seconds = j.value("bound_seconds", 0.0);
    r.threads = j.value("threads", 0);
    r.ceiling = j.value("ceiling", std::string());
    r.memory_bound = j.value("memory_bound", false);
  }
  return r;
}

// "stopped: <reason>" after the session's last stop event; "running" while the last
// session (its roofline event) has none yet.
std::string state_of(const std::vector<store::EventRow>& events) {
  int64_t last_start = 0, last_stop = 0;
  std::string reason;
  for (const auto& e : events) {
    if (e.kind == "roofline") last_start = e.id;
    if (e.kind == "stop") last_stop = e.id, reason = e.text;
  }
  if (last_stop > last_start) return "stopped: " + reason;
  return last_start > 0 ? "running (or stopped without a clean exit)"
                        : "no stop recorded (running, or stopped without a clean exit)";
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return in ? s.str() : std::string();
}

// What became of each model call's answer: the llm proposer's events name the call
// ("model call 3: ..."), and so does the note of the step its kernel was evaluated in.
std::vector<CallRow> calls_with_outcomes(const std::vector<store::ModelCall>& calls,
                                         const std::vector<store::EventRow>& events,
                                         const std::vector<store::StepRow>& steps) {
  std::map<int64_t, std::string> outcome;
  for (const auto& e : events) {
    const int64_t n = model_call_named(e.text);
    if (n == 0) continue;
    if (e.kind == "llm-error") outcome[n] = "failed";
    if (e.kind == "llm-no-code") outcome[n] = "no usable code";
    if (e.kind == "llm-repeat") outcome[n] = "a kernel evaluated before";
    if (e.kind == "llm-refused") outcome[n] = "plan refused";
  }
  for (const auto& s : steps) {
    const int64_t n = model_call_named(s.step.note);
    const size_t arrow = s.step.note.rfind("-> ");
    if (n == 0 || arrow == std::string::npos) continue;
    outcome[n] = "candidate " + std::to_string(s.step.proposed) + ": " +
                 s.step.note.substr(arrow + 3) + (s.step.accepted ? ", accepted" : "");
  }
  std::vector<CallRow> rows;
  for (const auto& c : calls) {
    const auto it = outcome.find(c.id);
    rows.push_back({c, it != outcome.end() ? it->second
                       : c.status == "ok"  ? "answered (no step recorded)"
                                           : c.status});
  }
  return rows;
}

}  // namespace

double iso_seconds(const std::string& iso) {
  struct tm t = {};
  int y = 0, mo = 0, d = 0, h = 0, mi = 0;
  double s = 0;
  if (std::sscanf(iso.c_str(), "%d-%d-%dT%d:%d:%lf", &y, &mo, &d, &h, &mi, &s) != 6) return 0;
  t.tm_year = y - 1900;
  t.tm_mon = mo - 1;
  t.tm_mday = d;
  t.tm_hour = h;
  t.tm_min = mi;
  return static_cast<double>(timegm(&t)) + s;
}

namespace {

void add_points(RunData& d, const std::vector<Candidate>& cands, const EvalIndex& ix,
                const std::vector<store::StepRow>& steps) {
  std::map<int64_t, int> chain_of;
  for (const auto& s : steps) chain_of.emplace(s.step.proposed, s.step.chain);
  const double start = iso_seconds(d.run.created);
  for (const Candidate& c : cands) {
    const auto latest = ix.latest.find(c.id);
    if (latest == ix.latest.end()) continue;
    Point p;
    p.candidate = c.id;
    p.wall_seconds = std::max(0.0, iso_seconds(ix.first.at(c.id).created) - start);
    p.seconds = time_of(latest->second, d.baseline_seconds);
    p.proposer = c.proposer;
    p.verdict = latest->second.verdict;
    const auto chain = chain_of.find(c.id);
    p.chain = chain == chain_of.end() ? -1 : chain->second;
    d.points.push_back(p);
    if (p.verdict == "pass") ++d.passes;
  }
  // In the order of their first evaluations.
  std::sort(d.points.begin(), d.points.end(), [&](const Point& a, const Point& b) {
    return ix.first.at(a.candidate).id < ix.first.at(b.candidate).id;
  });
  for (size_t i = 0; i < d.points.size(); ++i) d.points[i].ordinal = static_cast<int64_t>(i) + 1;
}

// Each chain's best over the steps, from the baseline: a step's x is how many candidates
// the run had evaluated by then, or the time of the latest first evaluation among them.
void add_chain_bests(RunData& d, const std::vector<store::StepRow>& steps) {
  std::map<int64_t, const Point*> by_candidate;
  for (const Point& p : d.points) by_candidate[p.candidate] = &p;
  std::map<int, ChainBest> chains;
  int64_t evaluated = 1;
  double wall = 0;
  for (const auto& s : steps) {
    if (s.step.accepted) ++d.accepted_steps;
    const auto it = by_candidate.find(s.step.proposed);
    if (it == by_candidate.end()) continue;
    evaluated = std::max(evaluated, it->second->ordinal);
    wall = std::max(wall, it->second->wall_seconds);
    ChainBest& c = chains[s.step.chain];
    c.chain = s.step.chain;
    if (c.steps.empty() && d.baseline_seconds > 0) c.steps.push_back({1, 0, d.baseline_seconds});
    const double t = it->second->seconds;
    if (t > 0 && (c.steps.empty() || t < c.steps.back().seconds))
      c.steps.push_back({evaluated, wall, t});
  }
  for (auto& [chain, c] : chains) d.chains.push_back(std::move(c));
}

// The best: the candidate `optimize` wrote (the last that passed its final verification),
// else the fastest on the search's clock so far.
void add_best(RunData& d, const store::RunView& view, const EvalIndex& ix) {
  int64_t best = 0;
  for (const auto& e : d.events)
    if (e.kind == "final-verify" && e.text.size() > 6 &&
        e.text.compare(e.text.size() - 6, 6, ": pass") == 0)
      best = std::strtoll(e.text.c_str() + e.text.find(' ') + 1, nullptr, 10);
  d.best_fully_verified = best != 0;
  if (!best) {
    double fastest = 0;
    for (const Point& p : d.points)
      if (p.seconds > 0 && (fastest == 0 || p.seconds < fastest))
        fastest = p.seconds, best = p.candidate;
  }
  if (!best) return;
  d.best = view.candidate(best);
  const auto latest = ix.latest.find(best);
  if (!d.best || latest == ix.latest.end()) return;
  d.best_eval = view.evaluation(latest->second.id);
  // The baseline is 1 on the search's clock: its own side-by-side ratio is noise.
  d.best_seconds = d.best->proposer == "baseline" ? d.baseline_seconds
                                                  : time_of(*d.best_eval, d.baseline_seconds);
}

void add_lineage(RunData& d, const std::vector<Candidate>& cands,
                 const std::vector<store::StepRow>& steps) {
  std::map<int64_t, const Candidate*> by_id;
  for (const auto& c : cands) by_id[c.id] = &c;
  std::map<int64_t, std::string> note;
  for (const auto& s : steps) note.emplace(s.step.proposed, s.step.note);
  std::map<int64_t, double> seconds;
  for (const Point& p : d.points) seconds[p.candidate] = p.seconds;
  for (int64_t id = d.best ? d.best->id : 0; id != 0 && d.lineage.size() < 500;) {
    const auto it = by_id.find(id);
    if (it == by_id.end()) break;
    d.lineage.push_back({id, it->second->proposer, seconds[id], note[id]});
    id = it->second->parent;
  }
}

// The full verification's certificate beside the run database when it is this run's
// best's, else the best's own from the search (quick level).
void add_certificate(RunData& d) {
  namespace fs = std::filesystem;
  if (d.best_fully_verified) {
    const fs::path file = fs::path(d.db_path).parent_path() / "certificate.json";
    const std::string text = read_file(file);
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_object() &&
        j.value("spec", nlohmann::json::object()).value("sha256", "") == d.run.spec_sha256) {
      d.certificate_json = text;
      d.certificate_origin = file.filename().string() + " (the final answer's full verification)";
      return;
    }
  }
  if (d.best_eval) {
    d.certificate_json = d.best_eval->certificate_json;
    d.certificate_origin = "the run database (the search's verification of the best)";
  }
}

}  // namespace

RunData read_run_data(const std::string& db_path) {
  const store::RunView view = store::RunView::open(db_path);
  RunData d;
  d.db_path = db_path;
  d.run = view.run();
  d.marks = view.marks();
  d.events = view.events();
  const std::vector<Candidate> cands = view.candidates();
  const EvalIndex ix = index_evaluations(view.evaluations());
  const std::vector<store::StepRow> steps = view.steps();
  for (const Candidate& c : cands)
    if (c.proposer == "baseline") {
      d.baseline = view.candidate(c.id);
      const auto e = ix.latest.find(c.id);
      if (e != ix.latest.end()) d.baseline_seconds = time_of(e->second, 0);  // its median
      break;
    }
  add_points(d, cands, ix, steps);
  add_chain_bests(d, steps);
  add_best(d, view, ix);
  add_lineage(d, cands, steps);
  add_certificate(d);
  d.roof = roof_of(d.events);
  d.calls = calls_with_outcomes(view.model_calls(), d.events, steps);
  d.state = state_of(d.events);
  return d;
}

}  // namespace ollie::report
