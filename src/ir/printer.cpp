// The stable text form of a Graph (shown by `ollie check`, pinned by golden tests).
#include <cstdio>
#include <sstream>

#include "ir/ir.h"

namespace ollie::ir {

namespace {

std::string type_str(DType t, const Shape& s) { return std::string(dtype_name(t)) + shape_str(s); }

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

char label_char(int l) {
  if (l < 26) return static_cast<char>('a' + l);
  if (l < 52) return static_cast<char>('A' + (l - 26));
  return '?';
}

std::string labels_str(const std::vector<int>& labels) {
  std::string s;
  for (int l : labels) s += label_char(l);
  return s;
}

std::string int_list(const std::vector<int>& xs) {
  std::string s = "[";
  for (size_t i = 0; i < xs.size(); ++i) s += (i ? "," : "") + std::to_string(xs[i]);
  return s + "]";
}

std::string operands_str(const Node& n) {
  std::string s;
  for (size_t i = 0; i < n.operands.size(); ++i)
    s += (i ? ", %" : " %") + std::to_string(n.operands[i]);
  return s;
}

}  // namespace

std::string to_text(const Graph& g) {
  std::ostringstream out;
  out << "entry " << g.entry << "(";
  for (size_t i = 0; i < g.params.size(); ++i)
    out << (i ? ", " : "") << g.params[i].name << ": "
        << type_str(g.params[i].dtype, g.params[i].shape);
  out << ") -> (";
  for (size_t i = 0; i < g.results.size(); ++i)
    out << (i ? ", " : "") << type_str(g.results[i].dtype, g.results[i].shape);
  out << ")\n";
  out << "dims";
  for (const auto& d : g.dims) {
    out << " " << d;
    if (auto it = g.bound_dims.find(d); it != g.bound_dims.end()) out << "=" << it->second;
  }
  out << "\n";
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    out << "%" << i << ": " << type_str(n.dtype, n.shape) << " = " << op_name(n.kind);
    switch (n.kind) {
      case OpKind::Input: out << " " << n.name; break;
      case OpKind::Const:
        out << " " << (n.const_dim ? "dim(" + n.const_dim->str() + ")" : number(n.const_value));
        break;
      case OpKind::Iota: out << " axis=" << n.axis; break;
      case OpKind::PowI: out << operands_str(n) << " " << n.exponent; break;
      case OpKind::Convert: out << (n.weak ? ".weak" : "") << operands_str(n); break;
      case OpKind::Transpose: out << operands_str(n) << " perm=" << int_list(n.axes); break;
      case OpKind::Reduce:
        out << "." << reduce_name(n.reduce) << operands_str(n) << " axes=" << int_list(n.axes);
        break;
      case OpKind::Concat:
      case OpKind::Gather:
        out << (n.along ? ".along" : "") << operands_str(n) << " axis=" << n.axis;
        break;
      case OpKind::Slice: {
        out << operands_str(n) << " [";
        for (size_t a = 0; a < n.slices.size(); ++a) {
          const auto& s = n.slices[a];
          out << (a ? ", " : "") << s.start.str() << ":" << s.stop.str();
          if (s.step != 1) out << ":" << s.step;
        }
        out << "]";
        break;
      }
      case OpKind::Contract:
        out << operands_str(n) << " (" << labels_str(n.lhs_labels) << ","
            << labels_str(n.rhs_labels) << "->" << labels_str(n.out_labels) << ")";
        break;
      case OpKind::ExpContract:
        out << operands_str(n) << " (" << labels_str(n.lhs_labels) << ","
            << labels_str(n.rhs_labels) << "->" << labels_str(n.out_labels) << ")"
            << (n.base2 ? " base=2" : "");
        break;
      default: out << operands_str(n); break;
    }
    if (!n.name.empty() && n.kind != OpKind::Input) out << "  # " << n.name;
    out << "\n";
  }
  out << "return";
  for (size_t i = 0; i < g.outputs.size(); ++i) out << (i ? ", %" : " %") << g.outputs[i];
  out << "\n";
  return out.str();
}

}  // namespace ollie::ir
