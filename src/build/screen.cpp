// A build behind the screens (screen.h): the source screen on every unit, the build, then
// the object screen on the shared object, with the time the screens took.
#include "build/screen.h"

#include <chrono>

namespace ollie::build {
namespace {

double since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

std::string ScreenedResult::message() const {
  constexpr size_t kShown = 8;
  std::string out = "refused: the kernel asks for what a kernel never needs:\n";
  for (size_t k = 0; k < refusals.size() && k < kShown; ++k) out += refusals[k].text() + "\n";
  if (refusals.size() > kShown)
    out += "... (" + std::to_string(refusals.size() - kShown) + " more)\n";
  return out;
}

ScreenedResult compile_screened(Driver& driver, const Request& request, bool sanitized) {
  ScreenedResult out;
  auto start = std::chrono::steady_clock::now();
  for (const Unit& unit : request.units) {
    std::vector<Refusal> found = screen_source(unit.name, unit.source);
    out.refusals.insert(out.refusals.end(), found.begin(), found.end());
  }
  out.screen_seconds = since(start);
  if (out.refused()) return out;
  out.built = driver.compile(request);
  if (!out.built.ok) return out;
  start = std::chrono::steady_clock::now();
  out.refusals = screen_object(out.built.so_path, sanitized);
  out.screen_seconds += since(start);
  return out;
}

}  // namespace ollie::build
