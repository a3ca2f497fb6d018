// The report's sections other than the charts (internal to src/report/), each an HTML
// fragment with every database string escaped.
#pragma once

#include <string>

#include "report/run_data.h"

namespace ollie::report {

std::string summary_section(const RunData& d);
std::string best_kernel_section(const RunData& d);
std::string diff_section(const RunData& d);
std::string certificate_section(const RunData& d);
std::string model_calls_section(const RunData& d);
std::string events_section(const RunData& d);

}  // namespace ollie::report
