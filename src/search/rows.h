// Internal to search/: a candidate and an evaluation as the run database stores them and
// back (the chain writes and reads them; a replay reads a recorded run's).
#pragma once

#include <cstdint>

#include "search/search.h"
#include "store/store.h"

namespace ollie::search {

store::Evaluation to_row(int64_t candidate, const Evaluation& e, double cost);
Evaluation evaluation_from_row(const store::Evaluation& row);
Candidate from_row(const store::Candidate& c);

}  // namespace ollie::search
