// Helpers shared by the `ollie` verbs: loading specs, inputs, array files.
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <random>

#include <unistd.h>

#include "cli/cli.h"
#include "rewrite/rewrite.h"
#include "verify/verify.h"
#include "spec/spec.h"

namespace ollie::cli {

std::string bound_shape_str(const ir::Shape& shape, const ir::DimBindings& dims) {
  auto values = ir::evaluate_shape(shape, dims);
  std::string s = "[";
  for (size_t i = 0; i < values.size(); ++i) s += (i ? ", " : "") + std::to_string(values[i]);
  return s + "]";
}

// ---------------------------------------------------------------------------- eval

npy::ElementType element_type(ir::DType t) {
  switch (t) {
    case ir::DType::F32: return npy::ElementType::F32;
    case ir::DType::F64: return npy::ElementType::F64;
    case ir::DType::I32: return npy::ElementType::I32;
    case ir::DType::I64: return npy::ElementType::I64;
    case ir::DType::Bool: return npy::ElementType::Bool;
    case ir::DType::F16: return npy::ElementType::F16;
    case ir::DType::BF16: return npy::ElementType::BF16;
  }
  return npy::ElementType::F64;
}

const char* element_type_name(npy::ElementType t) {
  switch (t) {
    case npy::ElementType::F32: return "float32";
    case npy::ElementType::F64: return "float64";
    case npy::ElementType::I32: return "int32";
    case npy::ElementType::I64: return "int64";
    case npy::ElementType::Bool: return "bool";
    case npy::ElementType::F16: return "float16";
    case npy::ElementType::BF16: return "bfloat16";
  }
  return "?";
}

// Seeded random inputs: normal(0, 1) for floats, small integers for ints, coin flips for
// bools (the verifier's normal suite).
std::vector<interp::Tensor> random_inputs(const ir::Graph& graph, uint64_t seed) {
  return verify::make_inputs(graph, seed, verify::Distribution::Normal);
}

bool has_suffix(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// An .npz, or an .npy when the entry has exactly one parameter.
npy::ArrayList read_arrays(const ir::Graph& graph, const std::string& path) {
  if (!has_suffix(path, ".npy")) return npy::read_npz(path);
  if (graph.params.size() != 1)
    throw UserError(
        fmt::format("--inputs {}: an .npy file holds one array but {} takes {} parameters; "
                    "pass an .npz with one array per parameter name",
                    path, graph.entry, graph.params.size()));
  return {{graph.params[0].name, npy::read_npy(path)}};
}

// "out.npy" -> "out<suffix>.npy": where the bounds go beside the values.
std::string npy_sibling(const std::string& path, const std::string& suffix) {
  return path.substr(0, path.size() - 4) + suffix + ".npy";
}

std::vector<interp::Tensor> file_inputs(const ir::Graph& graph, const std::string& path) {
  npy::ArrayList arrays = read_arrays(graph, path);
  std::string keys;
  for (const auto& [name, array] : arrays) keys += (keys.empty() ? "" : ", ") + name;
  std::vector<interp::Tensor> inputs;
  for (const auto& p : graph.params) {
    auto it = std::find_if(arrays.begin(), arrays.end(),
                           [&](const auto& kv) { return kv.first == p.name; });
    if (it == arrays.end())
      throw UserError(
          fmt::format("--inputs {}: no array named '{}' (the entry's parameter); the file has: {}",
                      path, p.name, keys.empty() ? "nothing" : keys));
    const npy::Array& a = it->second;
    interp::Tensor t;
    t.dtype = p.dtype;
    t.shape = a.shape;
    t.data = a.data;
    if (a.type != element_type(p.dtype))
      std::cerr << fmt::format("note: input '{}' is {}, converted to {} as the spec declares\n",
                               p.name, element_type_name(a.type), ir::dtype_name(p.dtype));
    inputs.push_back(std::move(t));
  }
  for (const auto& [name, array] : arrays) {
    bool known = std::any_of(graph.params.begin(), graph.params.end(),
                             [&](const ir::Param& p) { return p.name == name; });
    if (!known)
      std::cerr << fmt::format("note: --inputs {}: array '{}' is not a parameter; ignored\n", path,
                               name);
  }
  return inputs;
}

npy::Array to_array(const interp::Tensor& t) { return to_array_as(t, ir::DType::F64); }

npy::Array to_array_as(const interp::Tensor& t, ir::DType dtype) {
  npy::Array a;
  a.type = element_type(dtype);
  a.shape = t.shape;
  a.data = t.data;
  return a;
}

std::vector<interp::Tensor> obtain_inputs(const ir::Graph& graph, const std::string& inputs_path,
                                          int64_t seed) {
  if (!inputs_path.empty()) {
    if (seed >= 0)
      throw UserError("--seed draws random inputs; it cannot be combined with --inputs");
    auto inputs = file_inputs(graph, inputs_path);
    std::cout << "inputs: " << inputs_path << "\n";
    return inputs;
  }
  uint64_t s = seed >= 0 ? static_cast<uint64_t>(seed) : std::random_device{}() & 0x7fffffffu;
  std::cout << fmt::format(
      "inputs: random (normal(0,1) floats, contraction weights scaled by 1/sqrt(fan-in), as "
      "verify's normal suite), seed {} (rerun with --seed {})\n",
      s, s);
  return random_inputs(graph, s);
}

void write_arrays(const std::string& path, const npy::ArrayList& arrays, const std::string& what) {
  if (!has_suffix(path, ".npy")) {
    npy::write_npz(path, arrays);
    return;
  }
  if (arrays.size() != 1)
    throw UserError(fmt::format("{} {}: {} arrays to write but an .npy file holds one; use an .npz",
                                what, path, arrays.size()));
  npy::write_npy(path, arrays[0].second);
}

}  // namespace ollie::cli
