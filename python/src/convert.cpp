// numpy arrays to and from the api's tensors (interp::Tensor: float64 values and a shape).
#include <fmt/format.h>

#include "bindings.h"
#include "support/error.h"

namespace ollie::python {

nb::object to_numpy(std::vector<double>&& data, const std::vector<int64_t>& shape) {
  auto* owned = new std::vector<double>(std::move(data));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<double>*>(p); });
  std::vector<size_t> sizes(shape.begin(), shape.end());
  nb::ndarray<nb::numpy, double> array(owned->data(), sizes.size(), sizes.data(), owner);
  return nb::cast(array, nb::rv_policy::reference);
}

interp::Tensor to_tensor(const F64Array& array, const ir::Param& param, const ir::Graph& graph) {
  const std::vector<int64_t> want = ir::evaluate_shape(param.shape, graph.bound_dims);
  std::vector<int64_t> got(array.ndim());
  for (size_t i = 0; i < array.ndim(); ++i) got[i] = static_cast<int64_t>(array.shape(i));
  if (got != want)
    throw UserError(fmt::format("input '{}': shape ({}) but {} takes {}{} = ({}) at these dims",
                                param.name, fmt::join(got, ", "), graph.entry,
                                ir::dtype_name(param.dtype), ir::shape_str(param.shape),
                                fmt::join(want, ", ")));
  interp::Tensor t;
  t.dtype = param.dtype;
  t.shape = got;
  t.data.assign(array.data(), array.data() + array.size());
  return t;
}

std::vector<interp::Tensor> to_tensors(const std::vector<F64Array>& arrays,
                                       const ir::Graph& graph) {
  if (arrays.size() != graph.params.size())
    throw UserError(
        fmt::format("{} takes {} inputs, got {}", graph.entry, graph.params.size(), arrays.size()));
  std::vector<interp::Tensor> tensors;
  for (size_t i = 0; i < arrays.size(); ++i)
    tensors.push_back(to_tensor(arrays[i], graph.params[i], graph));
  return tensors;
}

api::SpecRef spec_ref(const std::string& path, const std::string& entry, const std::string& dims) {
  return api::SpecRef{.spec_path = path, .entry = entry, .dims = dims};
}

}  // namespace ollie::python
