// The api's kernel for the caller's own process (api.h, build_callable): a kernel the
// caller has checked against its certificate, compiled with its adapter by the build
// driver (the verifier's very build, so usually a cache hit) for the caller to load.
#include "api/api.h"
#include "build/build.h"
#include "emit/emit.h"
#include "support/error.h"

namespace ollie::api {

CallableKernel build_callable(const ir::Graph& graph, const std::string& kernel_source,
                              const std::string& symbol, const std::string& compiler) {
  emit::check_symbol(symbol);
  build::Request request;
  request.units = {{"kernel.cpp", kernel_source},
                   {"ollie_adapter.cpp", build::adapter_source(graph, {.kernel = symbol})}};
  if (!compiler.empty()) request.toolchain.compiler = compiler;
  build::Driver driver;
  const build::Result built = driver.compile(request);
  if (!built.ok)
    throw UserError("the kernel does not compile (" + built.compiler_version + "):\n" + built.log);
  CallableKernel out;
  out.so_path = built.so_path;
  out.entry_symbol = build::AdapterNames{}.entry;
  out.signature_symbol = build::AdapterNames{}.signature;
  out.signature = build::signature_text(graph);
  return out;
}

}  // namespace ollie::api
