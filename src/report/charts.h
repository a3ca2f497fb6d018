// The report's charts (internal to src/report/): the best time over wall-clock time and
// over evaluations per chain, with every candidate as a point, and the roofline chart.
#pragma once

#include <string>

#include "report/run_data.h"
#include "report/svg.h"

namespace ollie::report {

// The two progress charts with their legend and what lines they have (HTML).
std::string progress_charts(const RunData& d);
// The roofline chart (HTML), or a note when the run recorded no roofline.
std::string roofline_chart(const RunData& d);
// How a verdict is marked in the charts.
Marker verdict_marker(const std::string& verdict);

}  // namespace ollie::report
