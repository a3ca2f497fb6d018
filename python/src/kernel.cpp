// ollie._ollie.Kernel: a verified kernel loaded into this process (ollie.load). The api
// compiles it with its adapter (api::build_callable); this file dlopens the shared object,
// checks that its signature text is the spec's, and runs its entry point with the GIL
// released. `run` takes the arrays themselves (numpy, or anything nanobind views without a
// copy) and passes their data pointers when dtype, C-contiguity and 64-byte alignment are
// what the kernel ABI needs; otherwise it returns the index of the first array that is not,
// and the Python layer (python/ollie/_load.py) raises or copies. Shapes are checked there.
#include <dlfcn.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdlib>
#include <optional>
#include <utility>

#include "bindings.h"
#include "support/error.h"

namespace ollie::python {
namespace {

using Entry = void (*)(void* const* buffers, const int64_t* dims);
using Input = nb::ndarray<nb::ro, nb::device::cpu>;
using Output = nb::ndarray<nb::device::cpu>;
constexpr uintptr_t kAlignment = 64;  // docs/design.md section 3

nb::dlpack::dtype dlpack_dtype(ir::DType t) {
  switch (t) {
    case ir::DType::F32: return nb::dtype<float>();
    case ir::DType::F64: return nb::dtype<double>();
    case ir::DType::I32: return nb::dtype<int32_t>();
    case ir::DType::I64: return nb::dtype<int64_t>();
    case ir::DType::Bool: return nb::dtype<bool>();
  }
  return nb::dtype<double>();
}

// Row-major without gaps (axes of size 1 may have any stride), on a 64-byte boundary.
template <typename Array>
bool abi_layout(const Array& a) {
  int64_t expected = 1;
  for (size_t i = a.ndim(); i-- > 0;) {
    if (a.shape(i) != 1 && a.stride(i) != expected) return false;
    expected *= static_cast<int64_t>(a.shape(i));
  }
  return reinterpret_cast<uintptr_t>(a.data()) % kAlignment == 0;
}

// A new 64-byte aligned numpy array (uninitialized; the kernel writes every element) and
// its data.
std::pair<nb::object, void*> aligned_output(const std::vector<int64_t>& shape, ir::DType dtype) {
  size_t count = 1;
  for (int64_t d : shape) count *= static_cast<size_t>(d);
  const size_t bytes = count * static_cast<size_t>(ir::dtype_bytes(dtype));
  void* data = std::aligned_alloc(kAlignment,
                                  (bytes + kAlignment - 1) / kAlignment * kAlignment + kAlignment);
  if (data == nullptr) throw std::bad_alloc();
  nb::capsule owner(data, [](void* p) noexcept { std::free(p); });
  std::vector<size_t> sizes(shape.begin(), shape.end());
  nb::object array = nb::cast(
      nb::ndarray<nb::numpy>(data, sizes.size(), sizes.data(), owner, nullptr, dlpack_dtype(dtype)),
      nb::rv_policy::reference);
  return {std::move(array), data};
}

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
    for (const ir::Param& p : graph.params) in_dtypes_.push_back(p.dtype);
    for (const ir::Param& r : graph.results) out_dtypes_.push_back(r.dtype);
    dims_count_ = graph.dims.size();
  }

  // One call on `inputs` (shapes already checked) with `dims` in the graph's order: the
  // outputs (new arrays shaped `out_shapes`, or `outs`), or the index of the first input
  // (then output, counted after the inputs) whose dtype or layout the ABI does not take.
  nb::object run(const std::vector<Input>& inputs, const std::vector<int64_t>& dims,
                 const std::vector<std::vector<int64_t>>& out_shapes,
                 const std::optional<std::vector<Output>>& outs) const {
    if (inputs.size() != in_dtypes_.size() || dims.size() != dims_count_ ||
        out_shapes.size() != out_dtypes_.size() || (outs && outs->size() != out_dtypes_.size()))
      throw InternalError("ollie._ollie.Kernel.run: wrong argument counts");
    std::vector<void*> buffers;
    buffers.reserve(inputs.size() + out_dtypes_.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i].dtype() != dlpack_dtype(in_dtypes_[i]) || !abi_layout(inputs[i]))
        return nb::int_(i);
      buffers.push_back(const_cast<void*>(inputs[i].data()));
    }
    nb::list results;
    for (size_t o = 0; o < out_dtypes_.size(); ++o) {
      if (outs) {
        const Output& a = (*outs)[o];
        if (a.dtype() != dlpack_dtype(out_dtypes_[o]) || !abi_layout(a))
          return nb::int_(inputs.size() + o);
        buffers.push_back(a.data());
      } else {
        auto [array, data] = aligned_output(out_shapes[o], out_dtypes_[o]);
        buffers.push_back(data);
        results.append(array);
      }
    }
    {
      nb::gil_scoped_release unlocked;
      entry_(buffers.data(), dims.data());
    }
    return results;
  }

  const std::string& so_path() const { return so_path_; }

 private:
  std::string so_path_;
  Entry entry_ = nullptr;
  std::vector<ir::DType> in_dtypes_, out_dtypes_;
  size_t dims_count_ = 0;
};

}  // namespace

void bind_kernel(nb::module_& m) {
  nb::class_<Kernel>(m, "Kernel")
      .def(nb::init<const std::string&, const std::string&, const std::string&, const std::string&,
                    const std::string&, const std::string&>(),
           nb::arg("spec"), nb::arg("entry"), nb::arg("dims"), nb::arg("kernel_source"),
           nb::arg("symbol"), nb::arg("compiler"))
      .def("run", &Kernel::run, nb::arg("inputs"), nb::arg("dims"), nb::arg("out_shapes"),
           nb::arg("outs").none())
      .def_prop_ro("so_path", &Kernel::so_path);
}

}  // namespace ollie::python
