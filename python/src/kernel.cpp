// ollie._ollie.Kernel: a verified kernel loaded into this process (ollie.load). The api
// compiles it with its adapter (api::build_callable); this file dlopens the shared object,
// checks that its signature text is the spec's, and calls its entry point on buffer
// addresses with the GIL released. The Python layer checks dtypes, shapes and alignment
// first: a kernel trusts its arguments.
#include <dlfcn.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>

#include "bindings.h"
#include "support/error.h"

namespace ollie::python {
namespace {

using Entry = void (*)(void* const* buffers, const int64_t* dims);

class Kernel {
 public:
  Kernel(const std::string& spec, const std::string& entry, const std::string& dims,
         const std::string& kernel_source, const std::string& symbol, const std::string& compiler) {
    const ir::Graph graph = api::load(spec_ref(spec, entry, dims));
    api::CallableKernel built;
    {
      nb::gil_scoped_release unlocked;
      built = api::build_callable(graph, kernel_source, symbol, compiler);
    }
    so_path_ = built.so_path;
    // Never closed: an OpenMP kernel leaves its thread pool behind.
    void* handle = dlopen(so_path_.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr)
      throw UserError("cannot load the kernel's shared object " + so_path_ + ": " + dlerror());
    const auto* signature = static_cast<const char*>(dlsym(handle, built.signature_symbol.c_str()));
    if (signature == nullptr || built.signature != signature)
      throw UserError("the kernel's shared object " + so_path_ + " was built for '" +
                      (signature ? signature : "?") + "', not for '" + built.signature + "'");
    entry_ = reinterpret_cast<Entry>(dlsym(handle, built.entry_symbol.c_str()));
    if (entry_ == nullptr)
      throw UserError("the kernel's shared object " + so_path_ + " has no " + built.entry_symbol);
    arity_ = graph.params.size() + graph.results.size();
    dims_count_ = graph.dims.size();
  }

  // One call: `buffers` are the inputs' then the outputs' data addresses (as the ABI
  // orders them), `dims` the sizes in the graph's dims order.
  void call(const std::vector<uintptr_t>& buffers, const std::vector<int64_t>& dims) const {
    if (buffers.size() != arity_ || dims.size() != dims_count_)
      throw UserError("internal: the kernel takes " + std::to_string(arity_) + " buffers and " +
                      std::to_string(dims_count_) + " dims");
    std::vector<void*> pointers(buffers.size());
    for (size_t i = 0; i < buffers.size(); ++i) pointers[i] = reinterpret_cast<void*>(buffers[i]);
    nb::gil_scoped_release unlocked;
    entry_(pointers.data(), dims.data());
  }

  const std::string& so_path() const { return so_path_; }

 private:
  std::string so_path_;
  Entry entry_ = nullptr;
  size_t arity_ = 0, dims_count_ = 0;
};

}  // namespace

void bind_kernel(nb::module_& m) {
  nb::class_<Kernel>(m, "Kernel")
      .def(nb::init<const std::string&, const std::string&, const std::string&, const std::string&,
                    const std::string&, const std::string&>(),
           nb::arg("spec"), nb::arg("entry"), nb::arg("dims"), nb::arg("kernel_source"),
           nb::arg("symbol"), nb::arg("compiler"))
      .def("call", &Kernel::call, nb::arg("buffers"), nb::arg("dims"))
      .def_prop_ro("so_path", &Kernel::so_path);
}

}  // namespace ollie::python
