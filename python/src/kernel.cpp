// ollie._ollie.Kernel: a verified kernel loaded into this process (ollie.load). The api
// compiles it with its adapter (api::build_callable); this file dlopens the shared object,
// checks that its signature text is the spec's, and runs its entry point with the GIL
// released. `run` views the arrays through the buffer protocol (no copy, well under a
// microsecond each) and passes their data pointers when dtype, C-contiguity and 64-byte
// alignment are what the kernel ABI needs; otherwise it returns the index of the first
// array that is not, and the Python layer (python/ollie/_load.py) raises or copies. Shapes
// are checked there, and outputs allocated there (aligned_offset places them).
#include <dlfcn.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdlib>
#include <memory>

#include "bindings.h"
#include "support/error.h"

namespace ollie::python {
namespace {

using Entry = void (*)(void* const* buffers, const int64_t* dims);
constexpr uintptr_t kAlignment = 64;  // docs/design.md section 3

// A buffer-protocol view of one array, released with it.
class View {
 public:
  View(PyObject* object, bool writable)
      : ok_(PyObject_GetBuffer(object, &view_, writable ? PyBUF_RECORDS : PyBUF_RECORDS_RO) == 0) {
    if (!ok_) PyErr_Clear();
  }
  View(const View&) = delete;
  View& operator=(const View&) = delete;
  ~View() {
    if (ok_) PyBuffer_Release(&view_);
  }
  // Viewed, of `dtype`, row-major without gaps (axes of size 1 may have any stride) and on
  // a 64-byte boundary.
  bool fits(ir::DType dtype) const {
    if (!ok_ || view_.itemsize != ir::dtype_bytes(dtype) || !format_is(dtype)) return false;
    Py_ssize_t expected = view_.itemsize;
    for (int i = view_.ndim; i-- > 0;) {
      if (view_.shape[i] != 1 && view_.strides[i] != expected) return false;
      expected *= view_.shape[i];
    }
    return reinterpret_cast<uintptr_t>(view_.buf) % kAlignment == 0;
  }
  void* data() const { return view_.buf; }

 private:
  bool format_is(ir::DType dtype) const {
    const char* f = view_.format != nullptr ? view_.format : "B";
    if (*f == '<' || *f == '=' || *f == '@') ++f;
    if (f[0] == '\0' || f[1] != '\0') return false;
    switch (dtype) {
      case ir::DType::F32: return *f == 'f';
      case ir::DType::F64: return *f == 'd';
      case ir::DType::I32: return *f == 'i' || *f == 'l';  // itemsize checked: 4 bytes
      case ir::DType::I64: return *f == 'l' || *f == 'q';  // 8 bytes
      case ir::DType::Bool: return *f == '?';
      case ir::DType::F16: return *f == 'e';
      case ir::DType::BF16: return false;  // refused before a call (python/ollie/_load.py)
    }
    return false;
  }

  Py_buffer view_{};
  bool ok_ = false;
};

// How many bytes into `array` (a writable byte buffer) the first 64-byte boundary is.
int64_t aligned_offset(nb::handle array) {
  View v(array.ptr(), true);
  if (v.data() == nullptr) throw UserError("aligned_offset: not a writable buffer");
  return static_cast<int64_t>((kAlignment - reinterpret_cast<uintptr_t>(v.data()) % kAlignment) %
                              kAlignment);
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

  // One call on `inputs` and `outputs` (shapes already checked) with `dims` in the graph's
  // order: -1, or the index of the first input (then output, counted after the inputs)
  // whose dtype or layout the ABI does not take (then nothing ran).
  int64_t run(const nb::list& inputs, const std::vector<int64_t>& dims,
              const nb::list& outputs) const {
    const size_t n_in = in_dtypes_.size(), n_out = out_dtypes_.size();
    if (inputs.size() != n_in || outputs.size() != n_out || dims.size() != dims_count_)
      throw InternalError("ollie._ollie.Kernel.run: wrong argument counts");
    std::vector<std::unique_ptr<View>> views;
    std::vector<void*> buffers;
    for (size_t i = 0; i < n_in + n_out; ++i) {
      const bool is_input = i < n_in;
      views.push_back(
          std::make_unique<View>(is_input ? inputs[i].ptr() : outputs[i - n_in].ptr(), !is_input));
      if (!views.back()->fits(is_input ? in_dtypes_[i] : out_dtypes_[i - n_in]))
        return static_cast<int64_t>(i);
      buffers.push_back(views.back()->data());
    }
    nb::gil_scoped_release unlocked;
    entry_(buffers.data(), dims.data());
    return -1;
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
      .def("run", &Kernel::run, nb::arg("inputs"), nb::arg("dims"), nb::arg("outputs"))
      .def_prop_ro("so_path", &Kernel::so_path);
  m.def("aligned_offset", &aligned_offset, nb::arg("array"));
}

}  // namespace ollie::python
