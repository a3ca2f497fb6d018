// Blocks of 16-bit float loads and stores in plain vectorized loops (half_blocks.h).
#include "emit/half_blocks.h"

#include <optional>
#include <set>

#include "emit/vector_tile.h"

namespace ollie::emit {
namespace {

using ir::OpKind;
using loops::Expr;
using loops::ExprKind;
using loops::Stmt;

// Calls `f` on each load that every iteration performs: not those in a guarded select's
// arms (such a load may lie past its buffer's end where the select does not choose it).
template <class F>
void unconditional_loads(const Expr& e, const F& f) {
  if (e->kind == ExprKind::Load) {
    f(e);
    return unconditional_loads(e->args[0], f);
  }
  if (e->kind == ExprKind::Select && loops::is_guarded_select(e))
    return unconditional_loads(e->args[0], f);
  for (const Expr& a : e->args) unconditional_loads(a, f);
}

// Every load (a guarded arm's too) of `buffer`'s name into `out`.
void loaded_buffers(const Expr& e, std::set<std::string>& out) {
  loops::for_each_load(e, [&](const Expr& l) { out.insert(l->name); });
}

std::string element_text(const std::string& buffer, const Expr& index, const PlainPrinter& plain) {
  return buffer + "[" + plain.expr(index) + "]";
}

}  // namespace

std::vector<HalfBlock> half_blocks(const std::vector<Stmt>& stores, const std::vector<Expr>& values,
                                   const std::string& var,
                                   const std::map<std::string, ir::DType>& half_buffers,
                                   const PlainPrinter& plain, const std::string& prefix) {
  std::vector<Expr> all = values;
  std::map<std::string, int> stored;  // buffer -> stores
  for (const Stmt& s : stores) {
    all.push_back(s->index);
    all.push_back(s->value);
    ++stored[s->name];
  }
  std::set<std::string> loaded;
  for (const Expr& e : all) loaded_buffers(e, loaded);
  std::vector<HalfBlock> blocks;
  std::set<std::string> seen;  // element texts
  auto add = [&](const std::string& buffer, const Expr& index, bool store) {
    if (!half_buffers.count(buffer) || stride_of(index, var) != std::optional<int64_t>(1)) return;
    if (stored.count(buffer) && (stored[buffer] > 1 || loaded.count(buffer))) return;
    if (!seen.insert(element_text(buffer, index, plain)).second) return;
    blocks.push_back(
        {buffer, index, store, prefix + buffer + "_h" + std::to_string(blocks.size())});
  };
  for (const Expr& e : all)
    unconditional_loads(e, [&](const Expr& l) { add(l->name, l->args[0], false); });
  for (const Stmt& s : stores) add(s->name, s->index, true);
  return blocks;
}

std::map<std::string, std::string> half_block_lanes(const std::vector<HalfBlock>& blocks,
                                                    const std::string& lane,
                                                    const PlainPrinter& plain) {
  std::map<std::string, std::string> lanes;
  for (const HalfBlock& b : blocks)
    lanes[element_text(b.buffer, b.index, plain)] = b.name + "[" + lane + "]";
  return lanes;
}

namespace {
// The address of the block's first element: its index with the loop variable at `chunk`.
std::string first_element(const HalfBlock& b, const std::string& var, const std::string& chunk,
                          const PlainPrinter& plain) {
  const Expr at = loops::substitute(b.index, {{var, loops::make_var(chunk)}});
  return "&" + b.buffer + "[" + plain.expr(at) + "]";
}
}  // namespace

void write_half_block_heads(const std::vector<HalfBlock>& blocks, const std::string& var,
                            const std::string& chunk, const std::string& pad,
                            const PlainPrinter& plain, std::ostringstream& out) {
  for (const HalfBlock& b : blocks) {
    if (b.store)
      out << pad << "ollie_half::f32x16 " << b.name << ";\n";
    else
      out << pad << "const ollie_half::f32x16 " << b.name
          << " = ollie_half::ollie_vload<ollie_half::f32x16>("
          << first_element(b, var, chunk, plain) << ");\n";
  }
}

void write_half_block_tails(const std::vector<HalfBlock>& blocks, const std::string& var,
                            const std::string& chunk, const std::string& pad,
                            const PlainPrinter& plain, std::ostringstream& out) {
  for (const HalfBlock& b : blocks)
    if (b.store)
      out << pad << "ollie_half::ollie_vstore(" << first_element(b, var, chunk, plain) << ", "
          << b.name << ");\n";
}

}  // namespace ollie::emit
