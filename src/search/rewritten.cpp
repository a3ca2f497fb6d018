// A small most-recently-used cache of rewritten graphs (see rewritten.h).
#include "search/rewritten.h"

#include "rewrite/rewrite.h"

namespace ollie::search {

const ir::Graph& RewrittenGraphs::at(const std::string& chain) {
  if (chain.empty()) return spec_;
  for (auto it = recent_.begin(); it != recent_.end(); ++it)
    if (it->first == chain) {
      recent_.splice(recent_.begin(), recent_, it);
      return recent_.front().second;
    }
  recent_.emplace_front(chain, rewrite::replay(spec_, chain));
  if (recent_.size() > capacity_) recent_.pop_back();
  return recent_.front().second;
}

}  // namespace ollie::search
