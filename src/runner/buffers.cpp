// Buffer layout and dtype conversion of runner requests (buffers.h).
#include "runner/buffers.h"

#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <limits>

#include "support/error.h"
#include "support/half.h"
#include "support/random.h"

namespace ollie::runner::detail {

namespace proto = protocol;

namespace {

uint64_t round_up(uint64_t n, uint64_t page) { return (n + page - 1) / page * page; }

uint64_t random_seed() {
  uint64_t seed = 0;
  if (getrandom(&seed, sizeof seed, 0) != sizeof seed)
    seed = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  return seed;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

template <typename T>
void store_as(char* dst, const std::vector<double>& values) {
  auto* out = reinterpret_cast<T*>(dst);
  const double* in = values.data();
  const size_t n = values.size();
  size_t i = 0;
  // Blocks of a fixed size, which the compiler turns into vector conversions.
  for (; i + 16 <= n; i += 16)
    for (size_t j = 0; j < 16; ++j) out[i + j] = static_cast<T>(in[i + j]);
  for (; i < n; ++i) out[i] = static_cast<T>(in[i]);
}

template <typename T>
void load_as(const char* src, std::vector<double>& values) {
  for (size_t i = 0; i < values.size(); ++i) {
    T v;
    std::memcpy(&v, src + i * sizeof(T), sizeof(T));
    values[i] = static_cast<double>(v);
  }
}

// 16-bit floats as their bit patterns, converted as numpy (f16) and ml_dtypes (bf16) do.
template <uint16_t (*ToBits)(double)>
void store_half(char* dst, const std::vector<double>& values) {
  for (size_t i = 0; i < values.size(); ++i) {
    const uint16_t bits = ToBits(values[i]);
    std::memcpy(dst + 2 * i, &bits, 2);
  }
}

template <float (*FromBits)(uint16_t)>
void load_half(const char* src, std::vector<double>& values) {
  for (size_t i = 0; i < values.size(); ++i) {
    uint16_t bits;
    std::memcpy(&bits, src + 2 * i, 2);
    values[i] = static_cast<double>(FromBits(bits));
  }
}

void load(const char* src, ir::DType dtype, std::vector<double>& values) {
  switch (dtype) {
    case ir::DType::F32: return load_as<float>(src, values);
    case ir::DType::F64: return load_as<double>(src, values);
    case ir::DType::I32: return load_as<int32_t>(src, values);
    case ir::DType::I64: return load_as<int64_t>(src, values);
    case ir::DType::F16: return load_half<ollie_half::f16_to_float>(src, values);
    case ir::DType::BF16: return load_half<ollie_half::bf16_to_float>(src, values);
    case ir::DType::Bool:
      // Anything but 0 or 1 (the poison, or garbage) must not pass as a truth value.
      for (size_t i = 0; i < values.size(); ++i) {
        const auto b = static_cast<unsigned char>(src[i]);
        values[i] = b <= 1 ? b : std::numeric_limits<double>::quiet_NaN();
      }
      return;
  }
}

}  // namespace

Mapping::Mapping(int fd, size_t bytes, bool populate) : bytes_(bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | (populate ? MAP_POPULATE : 0),
                 fd, 0);
  if (p == MAP_FAILED)
    throw UserError(std::string("runner: cannot map the buffer memory: ") + std::strerror(errno));
  base_ = static_cast<char*>(p);
}

Mapping::~Mapping() { munmap(base_, bytes_); }

std::vector<int64_t> bound_dims(const ir::Graph& graph) {
  std::vector<int64_t> dims;
  for (const auto& name : graph.dims) {
    auto it = graph.bound_dims.find(name);
    if (it == graph.bound_dims.end())
      throw UserError("runner: dim '" + name + "' has no value; bind it in DIMS or with --dims " +
                      name + "=...");
    dims.push_back(it->second);
  }
  return dims;
}

void check_inputs(const ir::Graph& graph, const std::vector<interp::Tensor>& inputs) {
  if (inputs.size() != graph.params.size())
    throw UserError("runner: the kernel '" + graph.entry + "' takes " +
                    std::to_string(graph.params.size()) + " inputs but " +
                    std::to_string(inputs.size()) + " were given; pass one tensor per parameter");
  for (size_t i = 0; i < graph.params.size(); ++i) {
    auto shape = ir::evaluate_shape(graph.params[i].shape, graph.bound_dims);
    if (shape != inputs[i].shape)
      throw UserError("runner: input '" + graph.params[i].name + "' has shape " +
                      shape_text(inputs[i].shape) + " but the kernel expects " + shape_text(shape) +
                      " at the bound dims");
    if (static_cast<int64_t>(inputs[i].data.size()) != ir::element_count(shape))
      throw UserError("runner: input '" + graph.params[i].name + "' holds " +
                      std::to_string(inputs[i].data.size()) + " values but its shape " +
                      shape_text(shape) + " needs " + std::to_string(ir::element_count(shape)));
  }
}

std::vector<Slot> input_slots(const ir::Graph& graph, Role role) {
  std::vector<Slot> slots;
  for (const auto& p : graph.params)
    slots.push_back({p.dtype, ir::evaluate_shape(p.shape, graph.bound_dims), role});
  return slots;
}

std::vector<Slot> output_slots(const ir::Graph& graph, Role role) {
  std::vector<Slot> slots;
  for (const auto& r : graph.results)
    slots.push_back({r.dtype, ir::evaluate_shape(r.shape, graph.bound_dims), role});
  return slots;
}

Layout plan(const ir::Graph& graph, std::vector<Slot> slots, uint64_t header_bytes,
            uint64_t results_bytes, Placement placement) {
  return plan(bound_dims(graph), 1, std::move(slots), header_bytes, results_bytes, placement);
}

Layout plan(std::vector<int64_t> dims, size_t dims_groups, std::vector<Slot> slots,
            uint64_t header_bytes, uint64_t results_bytes, Placement placement) {
  Layout layout;
  layout.dims = std::move(dims);
  layout.dims_groups = std::max<size_t>(dims_groups, 1);
  layout.slots = std::move(slots);
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  layout.header_size = round_up(header_bytes + layout.slots.size() * sizeof(proto::Buffer) +
                                    layout.dims.size() * sizeof(int64_t),
                                page);
  uint64_t cursor = layout.header_size;
  random::Xoshiro256 rng(placement == Placement::Random ? random_seed() : 0);
  for (const Slot& slot : layout.slots) {
    cursor += page;  // guard page before every buffer
    const uint64_t bytes = slot.bytes();
    uint64_t offset = cursor;
    if (placement == Placement::End && bytes > 0)
      offset = cursor + round_up(bytes, page) - round_up(bytes, proto::kAlignment);
    else if (placement == Placement::Random)
      offset = cursor + rng.next() % (page / proto::kAlignment) * proto::kAlignment;
    layout.buffers.push_back({offset, bytes});
    cursor = round_up(std::max(offset + bytes, cursor + 1), page);
  }
  cursor += page;  // and one after the last
  layout.results_offset = cursor;
  layout.total_size = cursor + round_up(results_bytes, page);
  return layout;
}

void store(char* dst, ir::DType dtype, const std::vector<double>& values) {
  switch (dtype) {
    case ir::DType::F32: return store_as<float>(dst, values);
    case ir::DType::F64: return store_as<double>(dst, values);
    case ir::DType::I32: return store_as<int32_t>(dst, values);
    case ir::DType::I64: return store_as<int64_t>(dst, values);
    case ir::DType::F16: return store_half<ollie_half::double_to_f16>(dst, values);
    case ir::DType::BF16: return store_half<ollie_half::double_to_bf16>(dst, values);
    case ir::DType::Bool:
      for (size_t i = 0; i < values.size(); ++i) dst[i] = values[i] != 0 ? 1 : 0;
      return;
  }
}

bool holds(const char* at, ir::DType dtype, const std::vector<double>& values) {
  std::vector<char> expected(values.size() * static_cast<size_t>(ir::dtype_bytes(dtype)));
  store(expected.data(), dtype, values);
  return expected.empty() || std::memcmp(expected.data(), at, expected.size()) == 0;
}

interp::Tensor read_tensor(const char* base, const Layout& layout, size_t b) {
  interp::Tensor t;
  t.dtype = layout.slots[b].dtype;
  t.shape = layout.slots[b].shape;
  t.data.resize(static_cast<size_t>(ir::element_count(t.shape)));
  load(base + layout.buffers[b].offset, t.dtype, t.data);
  return t;
}

std::string check_slack(const char* base, const Layout& layout, const ir::Graph& graph) {
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  size_t output = 0;
  for (size_t b = 0; b < layout.slots.size(); ++b) {
    if (layout.slots[b].role != Role::Output) continue;
    const proto::Buffer& buf = layout.buffers[b];
    const uint64_t first = buf.offset / page * page, end = buf.offset + buf.bytes;
    const uint64_t last = round_up(std::max(end, first + 1), page);
    auto intact = [&](uint64_t from, uint64_t to) {
      for (uint64_t i = from; i < to; ++i)
        if (static_cast<unsigned char>(base[i]) != 0xFF) return false;
      return true;
    };
    const std::string name = graph.results.size() > 1
                                 ? "output " + std::to_string(output % graph.results.size())
                                 : "the output";
    if (!intact(end, last))
      return "the kernel wrote past the end of " + name +
             " (into the bytes between its last element and the "
             "guard page after it)";
    if (!intact(first, buf.offset))
      return "the kernel wrote before the start of " + name +
             " (into the bytes between the guard page and its first element)";
    ++output;
  }
  return "";
}

void poison_around(char* base, const Layout& layout, Role filled) {
  // plan() lays buffers out in increasing order.
  uint64_t from = layout.header_size;
  for (size_t b = 0; b < layout.buffers.size(); ++b) {
    const proto::Buffer& buf = layout.buffers[b];
    if (layout.slots[b].role != filled || buf.bytes == 0) continue;
    OLLIE_CHECK(buf.offset >= from, "runner buffers out of order");
    std::memset(base + from, 0xFF, buf.offset - from);
    from = buf.offset + buf.bytes;
  }
  std::memset(base + from, 0xFF, layout.results_offset - from);
}

}  // namespace ollie::runner::detail
