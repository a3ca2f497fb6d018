// The `ollie` command: ties the pipeline stages together behind verbs.
// Exit codes: 0 success, 1 bad input (message on stderr), 2 bad command line,
// 3 internal error (a bug in ollie).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <random>

#include <unistd.h>

#include "interp/interp.h"
#include "ir/ir.h"
#include "npy/npy.h"
#include "spec/spec.h"

namespace {

using namespace ollie;

struct SpecFlags {
  std::string spec_path;
  std::string entry;
  std::string dims;
};

void add_spec_flags(CLI::App* cmd, SpecFlags& flags) {
  cmd->add_option("spec", flags.spec_path, "the numpy spec file (.py)")->required();
  cmd->add_option("--entry", flags.entry, "the entry function (default: the only annotated function)");
  cmd->add_option("--dims", flags.dims, "override dim sizes, e.g. --dims M=256,N=128");
}

ir::Graph load(const SpecFlags& flags) {
  spec::SpecOptions options;
  options.entry = flags.entry;
  if (!flags.dims.empty()) options.dim_overrides = spec::parse_dims_flag(flags.dims);
  return spec::load_spec(flags.spec_path, options);
}

std::string grouped(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (n < 0 ? "-" : "") + out;
}

std::string bound_shape_str(const ir::Shape& shape, const ir::DimBindings& dims) {
  auto values = ir::evaluate_shape(shape, dims);
  std::string s = "[";
  for (size_t i = 0; i < values.size(); ++i) s += (i ? ", " : "") + std::to_string(values[i]);
  return s + "]";
}

// ---------------------------------------------------------------------------- check

int run_check(const SpecFlags& flags) {
  ir::Graph graph = load(flags);
  std::cout << ir::to_text(graph) << "\n";
  std::cout << "bound shapes:\n";
  auto show = [&](const ir::Param& p) {
    std::cout << fmt::format("  {:<10} {}{} = {}\n", p.name, ir::dtype_name(p.dtype), ir::shape_str(p.shape),
                             bound_shape_str(p.shape, graph.bound_dims));
  };
  for (const auto& p : graph.params) show(p);
  for (const auto& r : graph.results) show(r);
  ir::Cost c = ir::cost(graph);
  std::cout << "cost:\n";
  std::cout << fmt::format("  flops             {}\n", grouped(c.flops));
  std::cout << fmt::format("  compulsory bytes  {}  (inputs read once, outputs written once)\n",
                           grouped(c.compulsory_bytes));
  if (c.compulsory_bytes > 0)
    std::cout << fmt::format("  intensity         {:.3g} flop/byte\n",
                             static_cast<double>(c.flops) / static_cast<double>(c.compulsory_bytes));
  return 0;
}

// ---------------------------------------------------------------------------- eval

npy::ElementType element_type(ir::DType t) {
  switch (t) {
    case ir::DType::F32: return npy::ElementType::F32;
    case ir::DType::F64: return npy::ElementType::F64;
    case ir::DType::I32: return npy::ElementType::I32;
    case ir::DType::I64: return npy::ElementType::I64;
    case ir::DType::Bool: return npy::ElementType::Bool;
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
  }
  return "?";
}

// Seeded random inputs: normal(0, 1) for floats, small integers for ints, coin flips for bools.
std::vector<interp::Tensor> random_inputs(const ir::Graph& graph, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_int_distribution<int> small(-8, 8);
  std::bernoulli_distribution coin(0.5);
  std::vector<interp::Tensor> inputs;
  for (const auto& p : graph.params) {
    interp::Tensor t;
    t.dtype = p.dtype;
    t.shape = ir::evaluate_shape(p.shape, graph.bound_dims);
    t.data.resize(static_cast<size_t>(ir::element_count(t.shape)));
    for (double& v : t.data) {
      switch (p.dtype) {
        case ir::DType::F32: v = static_cast<float>(normal(rng)); break;
        case ir::DType::F64: v = normal(rng); break;
        case ir::DType::I32: case ir::DType::I64: v = small(rng); break;
        case ir::DType::Bool: v = coin(rng) ? 1.0 : 0.0; break;
      }
    }
    inputs.push_back(std::move(t));
  }
  return inputs;
}

bool has_suffix(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// An .npz, or an .npy when the entry has exactly one parameter.
npy::ArrayList read_arrays(const ir::Graph& graph, const std::string& path) {
  if (!has_suffix(path, ".npy")) return npy::read_npz(path);
  if (graph.params.size() != 1)
    throw UserError(fmt::format("--inputs {}: an .npy file holds one array but {} takes {} parameters; "
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
    auto it = std::find_if(arrays.begin(), arrays.end(), [&](const auto& kv) { return kv.first == p.name; });
    if (it == arrays.end())
      throw UserError(fmt::format("--inputs {}: no array named '{}' (the entry's parameter); the file has: {}",
                                  path, p.name, keys.empty() ? "nothing" : keys));
    const npy::Array& a = it->second;
    interp::Tensor t;
    t.dtype = p.dtype;
    t.shape = a.shape;
    t.data = a.data;
    if (a.type != element_type(p.dtype))
      std::cerr << fmt::format("note: input '{}' is {}, converted to {} as the spec declares\n", p.name,
                               element_type_name(a.type), ir::dtype_name(p.dtype));
    inputs.push_back(std::move(t));
  }
  for (const auto& [name, array] : arrays) {
    bool known = std::any_of(graph.params.begin(), graph.params.end(), [&](const ir::Param& p) { return p.name == name; });
    if (!known) std::cerr << fmt::format("note: --inputs {}: array '{}' is not a parameter; ignored\n", path, name);
  }
  return inputs;
}

npy::Array to_array(const interp::Tensor& t) {
  npy::Array a;
  a.type = npy::ElementType::F64;
  a.shape = t.shape;
  a.data = t.data;
  return a;
}

// The reference holds values and bounds in double, and a contraction packs copies of
// its operands: refuse dims whose estimate exceeds this machine's memory up front, with
// a clear message, rather than be killed by the kernel halfway.
void check_reference_fits(const ir::Graph& graph) {
  double inputs = 0, largest = 0;
  ir::ValueId largest_id = 0;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const ir::Node& n = graph.nodes[i];
    double count = 1;
    for (int64_t d : ir::evaluate_shape(n.shape, graph.bound_dims)) count *= static_cast<double>(d);
    if (n.kind == ir::OpKind::Input) inputs += count;
    if (count > largest) {
      largest = count;
      largest_id = static_cast<ir::ValueId>(i);
    }
  }
  const double bytes_per_element = 16;  // value and bound, both double
  const double estimate = (inputs + 6 * largest) * bytes_per_element;
  const double memory = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE));
  if (estimate > 0.8 * memory) {
    const ir::Node& n = graph.node(largest_id);
    throw UserError(fmt::format(
        "at these dims the reference needs about {:.1f} GiB but this machine has {:.1f} GiB (largest value: %{} {}{} "
        "= {:.3g} elements); choose smaller sizes with --dims",
        estimate / (1 << 30), memory / (1 << 30), largest_id, ir::dtype_name(n.dtype), ir::shape_str(n.shape), largest));
  }
}

struct EvalFlags {
  std::string inputs;
  std::string out;
  std::string save_inputs;
  int64_t seed = -1;
};

int run_eval(const SpecFlags& flags, const EvalFlags& eval) {
  ir::Graph graph = load(flags);
  check_reference_fits(graph);
  std::vector<interp::Tensor> inputs;
  if (!eval.inputs.empty()) {
    if (eval.seed >= 0) throw UserError("--seed draws random inputs; it cannot be combined with --inputs");
    inputs = file_inputs(graph, eval.inputs);
    std::cout << "inputs: " << eval.inputs << "\n";
  } else {
    uint64_t seed = eval.seed >= 0 ? static_cast<uint64_t>(eval.seed) : std::random_device{}() & 0x7fffffffu;
    inputs = random_inputs(graph, seed);
    std::cout << fmt::format("inputs: random (normal(0,1) floats), seed {} (rerun with --seed {})\n", seed, seed);
  }
  interp::Result result = interp::evaluate(graph, inputs);

  for (size_t i = 0; i < result.values.size(); ++i) {
    const auto& v = result.values[i];
    const auto& b = result.bounds[i];
    double max_abs = 0, max_bound = 0, max_rel = 0;
    size_t unbounded = 0;
    for (size_t k = 0; k < v.data.size(); ++k) {
      max_abs = std::max(max_abs, std::fabs(v.data[k]));
      if (std::isinf(b.data[k])) {
        ++unbounded;
        continue;
      }
      max_bound = std::max(max_bound, b.data[k]);
      if (v.data[k] != 0 && std::isfinite(v.data[k])) max_rel = std::max(max_rel, b.data[k] / std::fabs(v.data[k]));
    }
    const ir::Param& r = graph.results[i];
    std::cout << fmt::format("out{}: {}{} = {}  max|value| {:.6g}  max bound {:.3g}  max bound/|value| {:.3g}\n", i,
                             ir::dtype_name(r.dtype), ir::shape_str(r.shape), bound_shape_str(r.shape, graph.bound_dims),
                             max_abs, max_bound, max_rel);
    if (unbounded)
      std::cout << fmt::format("  warning: {} of {} elements have no finite bound (an intermediate overflows "
                               "the dtype or divides by a value that may be zero); any value is accepted there\n",
                               unbounded, v.data.size());
  }
  if (!eval.out.empty() && has_suffix(eval.out, ".npy")) {
    if (result.values.size() != 1)
      throw UserError(fmt::format("--out {}: {} has {} results; an .npy file holds one array: use an .npz",
                                  eval.out, graph.entry, result.values.size()));
    std::string bound_path = npy_sibling(eval.out, "_bound");
    npy::write_npy(eval.out, to_array(result.values[0]));
    npy::write_npy(bound_path, to_array(result.bounds[0]));
    std::cout << "wrote " << eval.out << " (reference values) and " << bound_path << " (error bounds), float64\n";
  } else if (!eval.out.empty()) {
    npy::ArrayList arrays;
    for (size_t i = 0; i < result.values.size(); ++i) {
      arrays.emplace_back("out" + std::to_string(i), to_array(result.values[i]));
      arrays.emplace_back("out" + std::to_string(i) + "_bound", to_array(result.bounds[i]));
    }
    npy::write_npz(eval.out, arrays);
    std::cout << "wrote " << eval.out << " (out<i>: reference values, out<i>_bound: error bounds, float64)\n";
  }
  if (!eval.save_inputs.empty()) {
    npy::ArrayList arrays;
    for (size_t i = 0; i < inputs.size(); ++i) {
      npy::Array a;
      a.type = element_type(graph.params[i].dtype);
      a.shape = inputs[i].shape;
      a.data = inputs[i].data;
      arrays.emplace_back(graph.params[i].name, std::move(a));
    }
    if (has_suffix(eval.save_inputs, ".npy")) {
      if (arrays.size() != 1)
        throw UserError(fmt::format("--save-inputs {}: {} takes {} parameters; an .npy file holds one array: "
                                    "use an .npz", eval.save_inputs, graph.entry, arrays.size()));
      npy::write_npy(eval.save_inputs, arrays[0].second);
    } else {
      npy::write_npz(eval.save_inputs, arrays);
    }
    std::cout << "wrote " << eval.save_inputs << " (the inputs)\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ollie: a superoptimizing compiler for tensor kernels written as numpy"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "ollie 0.1.0");

  SpecFlags check_flags;
  CLI::App* check = app.add_subcommand("check", "parse a spec; print its IR, bound shapes, FLOPs and bytes");
  add_spec_flags(check, check_flags);

  SpecFlags eval_flags;
  EvalFlags eval;
  CLI::App* eval_cmd = app.add_subcommand("eval", "run the reference interpreter; write values and error bounds");
  add_spec_flags(eval_cmd, eval_flags);
  eval_cmd->add_option("--inputs", eval.inputs, "inputs: an .npz with one array per parameter name (or an .npy for one parameter)");
  eval_cmd->add_option("--out", eval.out, "write out<i> and out<i>_bound (float64) to this .npz (or X.npy and X_bound.npy for one result)");
  eval_cmd->add_option("--seed", eval.seed, "seed for random inputs (default: a fresh one, printed)")
      ->check(CLI::NonNegativeNumber);
  eval_cmd->add_option("--save-inputs", eval.save_inputs, "write the inputs used to this .npz (or .npy for one parameter)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }

  try {
    if (*check) return run_check(check_flags);
    if (*eval_cmd) return run_eval(eval_flags, eval);
  } catch (const UserError& e) {
    std::cerr << e.what() << "\n";
    return 1;
  } catch (const InternalError& e) {
    std::cerr << e.what() << "\n";
    return 3;
  } catch (const std::bad_alloc&) {
    std::cerr << "error: out of memory (try smaller --dims)\n";
    return 1;
  }
  return 0;
}
