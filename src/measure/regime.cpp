// The timing regime `optimize` uses when neither --cold nor --hot is given: cold caches
// when the working set outgrows the private caches of the kernel's threads or half the
// last-level cache (measure.h, docs/measurement.md).
#include <algorithm>
#include <cstdio>

#include "measure/measure.h"

namespace ollie::measure {

namespace {

std::string mib_text(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g MiB", bytes / (1 << 20));
  return text;
}

}  // namespace

Regime choose_regime(int64_t working_set_bytes, int64_t llc_bytes, int64_t l2_per_core,
                     int threads) {
  const double ws = static_cast<double>(std::max<int64_t>(working_set_bytes, 0));
  const double llc = static_cast<double>(llc_bytes > 0 ? llc_bytes : int64_t{32} << 20);
  const double llc_limit = kColdLlcFraction * llc;
  const int t = std::max(threads, 1);
  const double l2_total = static_cast<double>(std::max<int64_t>(l2_per_core, 0)) * t;
  const std::string llc_text = (llc_bytes > 0 ? "" : "an assumed ") + mib_text(llc) + " LLC";
  const std::string l2_text =
      mib_text(l2_total) + " of L2 for " + std::to_string(t) + " thread" + (t == 1 ? "" : "s");
  Regime r;
  if (ws > llc_limit) {
    r.cold = true;
    r.why = "the working set (" + mib_text(ws) + ") exceeds half the " + llc_text +
            ": a hot timing would measure a cache the kernel partly evicts itself";
  } else if (l2_total > 0 && ws > l2_total) {
    r.cold = true;
    r.why = "the working set (" + mib_text(ws) + ") exceeds the " + l2_text +
            ": in a model, what the other layers read between two calls evicts it from the "
            "shared cache, so it comes from DRAM";
  } else {
    r.why = "the working set (" + mib_text(ws) + ") fits " +
            (l2_total > 0 ? "the " + l2_text : "half the " + llc_text) +
            ": it stays in cache between calls";
  }
  return r;
}

}  // namespace ollie::measure
