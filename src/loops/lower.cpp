// lower(): the driver of lowering. Builds the stages of a graph (build_stages.cpp),
// applies a schedule's directives to them in order (apply.cpp), and realizes the loop
// nests (realize.cpp); also the stage listing a schedule names, and the host's target.
#include <algorithm>
#include <thread>

#include <unistd.h>

#include "loops/stages.h"

namespace ollie::loops {

Target host_target() {
  Target t;
  __builtin_cpu_init();
  t.vector_bytes = __builtin_cpu_supports("avx512f") ? 64
                   : __builtin_cpu_supports("avx2")  ? 32
                                                     : 16;
  t.bf16_dot = __builtin_cpu_supports("avx512bf16");
  t.cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // sysconf reports 0 or -1 where the C library does not know; keep the defaults then.
  if (const long l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE); l1 > 0) t.l1_bytes = l1;
  if (const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE); l2 > 0) t.l2_bytes = l2;
  return t;
}

namespace {

// The value ids named by `inline` directives so far, checked.
ir::ValueId inline_target(const ir::Graph& graph, const Stages& st, const Directive& d) {
  const int i = st.find(d.stage);
  if (i < 0) {
    std::string all;
    for (const auto& s : st.stages) all += (all.empty() ? "" : ", ") + s.name;
    throw ScheduleError(d, "there is no stage " + d.stage, "the stages are: " + all);
  }
  const Stage& s = st.stages[static_cast<size_t>(i)];
  if (s.buffer.rfind("out", 0) == 0 && st.buffer(s.buffer)->role == BufferRole::Output)
    throw ScheduleError(d, s.name + " is a result of the kernel; it must be stored", "");
  if (s.reduce || s.what == "concat part" || s.what == "copy" || s.buffer[0] != 't')
    throw ScheduleError(d, s.name + " is a " + s.what + ", not an elementwise value",
                        "only elementwise stages inline");
  const auto v = static_cast<ir::ValueId>(std::stoll(s.buffer.substr(1)));
  OLLIE_CHECK(static_cast<size_t>(v) < graph.nodes.size(), "inline: bad stage buffer " + s.buffer);
  return v;
}

}  // namespace

Kernel lower(const ir::Graph& graph, const Schedule& schedule) {
  return lower(graph, schedule, {});
}

Kernel lower(const ir::Graph& graph, const Schedule& schedule, const LowerStep& step) {
  std::set<ir::ValueId> inlined;
  Stages st = build_stages(graph, inlined);
  std::vector<const Directive*> applied;
  if (step) step(nullptr, realize(st));
  for (const auto& d : schedule.directives) {
    if (d.kind != DirectiveKind::Inline) {
      apply_directive(graph, st, d);
      applied.push_back(&d);
      if (step) step(&d, realize(st));
      continue;
    }
    // Inlining removes a stage: rebuild without it and replay what came before.
    std::set<ir::ValueId> more = inlined;
    more.insert(inline_target(graph, st, d));
    Stages rebuilt = build_stages(graph, more);
    for (const Directive* p : applied) {
      try {
        apply_directive(graph, rebuilt, *p);
      } catch (const ScheduleError& e) {
        throw ScheduleError(d, "an earlier directive (" + to_text(*p) + ") no longer applies",
                            e.reason());
      }
    }
    st = std::move(rebuilt);
    inlined = std::move(more);
    if (step) step(&d, realize(st));
  }
  return realize(st);
}

std::string describe_stages(const ir::Graph& graph) {
  const Stages st = build_stages(graph, {});
  std::string out;
  for (const auto& s : st.stages) {
    out += s.name + ":";
    for (size_t i = 0; i < s.loops.size(); ++i)
      out += std::string(i ? "," : "") + " for " + s.loops[i].name + " in [0, " +
             to_text(s.loops[i].extent) + ")" + (s.loops[i].reduction ? " reduce" : "");
    out += "  (" + s.what + ")\n";
  }
  return out;
}

}  // namespace ollie::loops
