// Shared pieces of the extension module ollie._ollie (python/src/): numpy conversions of
// the api's tensors and one function per file that adds its part of the module. Only the
// public C++ API (api/api.h) is used.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstdint>
#include <string>
#include <vector>

#include "api/api.h"

namespace ollie::python {

namespace nb = nanobind;

// A C-contiguous float64 array as the binding receives one (Python converts first).
using F64Array = nb::ndarray<const double, nb::c_contig, nb::device::cpu>;

// A new numpy float64 array owning `data`, shaped `shape`.
nb::object to_numpy(std::vector<double>&& data, const std::vector<int64_t>& shape);
// The tensor for `param` from a float64 array; UserError naming the parameter when its
// shape differs from the param's bound shape.
interp::Tensor to_tensor(const F64Array& array, const ir::Param& param, const ir::Graph& graph);
std::vector<interp::Tensor> to_tensors(const std::vector<F64Array>& arrays, const ir::Graph& graph);
// The spec as SpecRef from the module's arguments.
api::SpecRef spec_ref(const std::string& path, const std::string& entry, const std::string& dims);

void bind_optimize(nb::module_& m);
void bind_kernel(nb::module_& m);

}  // namespace ollie::python
