// Internal to search/: a candidate and an evaluation as the run database stores them and
// back (the chain writes and reads them; a replay reads a recorded run's).
#pragma once

#include <cstdint>

#include "search/search.h"
#include "store/store.h"

namespace ollie::search {

store::Evaluation to_row(int64_t candidate, const Evaluation& e, double cost);
// Throws UserError when the row's verdict is not a verify::verdict_name (verdict_of).
Evaluation evaluation_from_row(const store::Evaluation& row);
// The row's verdict, parsed from the text the run database holds.
verify::Verdict verdict_of(const store::Evaluation& row);
Candidate from_row(const store::Candidate& c);

}  // namespace ollie::search
