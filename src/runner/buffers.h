// Internal to runner/: the layout of a request's buffers in the memfd (guard pages,
// placement, the header region; see protocol.h) and the conversion of values between
// interp's doubles and each dtype's bytes. The session (spawning the child, the
// protocol, turning its end into an Outcome) is runner.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "interp/interp.h"
#include "ir/ir.h"
#include "runner/child/protocol.h"
#include "runner/runner.h"

namespace ollie::runner::detail {

// Owns one shared mapping of a memfd.
class Mapping {
 public:
  // `populate`: fault every page in now, in one go (cheaper than a fault per page for
  // memory about to be written in full).
  Mapping(int fd, size_t bytes, bool populate = false);
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping();
  char* base() const { return base_; }

 private:
  char* base_ = nullptr;
  size_t bytes_ = 0;
};

// What a run needs, laid out: every buffer of the table (see protocol.h) with its dtype,
// shape, role and byte offset.
enum class Role { Input, Output, Staged, Check };

struct Slot {
  ir::DType dtype = ir::DType::F32;
  std::vector<int64_t> shape;
  Role role = Role::Input;
  uint64_t bytes() const {
    return static_cast<uint64_t>(ir::element_count(shape)) *
           static_cast<uint64_t>(ir::dtype_bytes(dtype));
  }
};

struct Layout {
  std::vector<Slot> slots;                // in buffer-table order
  std::vector<protocol::Buffer> buffers;  // the same order
  std::vector<int64_t> dims;  // graph.dims order; with dims_groups > 1, one group per call
  size_t dims_groups = 1;
  uint64_t header_size = 0;
  uint64_t results_offset = 0;  // timed mode
  uint64_t total_size = 0;
};

// The dims values in graph.dims order; throws for an unbound dim.
std::vector<int64_t> bound_dims(const ir::Graph& graph);

// Checks one set of inputs against the graph's params at the bound dims.
void check_inputs(const ir::Graph& graph, const std::vector<interp::Tensor>& inputs);

// One slot per graph param (input_slots) or result (output_slots), at the bound dims.
std::vector<Slot> input_slots(const ir::Graph& graph, Role role);
std::vector<Slot> output_slots(const ir::Graph& graph, Role role);

// Places `slots` after a header of `header_bytes`: each buffer's pages are its own, with
// a guard page before and after; within its pages it sits at the start or at the end.
Layout plan(const ir::Graph& graph, std::vector<Slot> slots, uint64_t header_bytes,
            uint64_t results_bytes, Placement placement);
// The same with the dims table given: `dims_groups` groups of the graph's dims (one per
// call, protocol::kDimsPerCall).
Layout plan(std::vector<int64_t> dims, size_t dims_groups, std::vector<Slot> slots,
            uint64_t header_bytes, uint64_t results_bytes, Placement placement);

// Writes 0xFF (the poison) over every byte after the header region up to the results,
// except the buffers of role `filled`, which the caller writes in full.
void poison_around(char* base, const Layout& layout, Role filled);

// `values` stored at `dst` as `dtype` (bool: 1 for non-zero).
void store(char* dst, ir::DType dtype, const std::vector<double>& values);

// Whether `at` still holds `values` stored as `dtype` (byte for byte what store() writes).
bool holds(const char* at, ir::DType dtype, const std::vector<double>& values);

// Buffer `b` of the layout read back as a Tensor (a bool byte other than 0 or 1: NaN).
interp::Tensor read_tensor(const char* base, const Layout& layout, size_t b);

// A kernel that writes past either end of an output, into the rest of its pages, leaves
// the guard pages alone; the poison there shows it. Empty when every byte is intact.
std::string check_slack(const char* base, const Layout& layout, const ir::Graph& graph);

}  // namespace ollie::runner::detail
