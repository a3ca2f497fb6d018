// The spec front end's entry points: read a file, parse and elaborate it, and parse
// the --dims flag.
#include "spec/spec.h"

#include <cctype>
#include <fstream>
#include <sstream>

#include "spec/elaborate.h"
#include "spec/parser.h"
#include "support/strings.h"

namespace ollie::spec {

ir::Graph load_spec(const std::string& path, const SpecOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw UserError("cannot read spec file '" + path +
                    "': check that the path exists and is readable");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw UserError("cannot read spec file '" + path + "'");
  return compile_spec(path, text.str(), options);
}

ir::Graph compile_spec(const std::string& file, const std::string& source,
                       const SpecOptions& options) {
  Module module = parse_module(file, source);
  return elaborate(module, options);
}

ir::DimBindings parse_dims_flag(const std::string& text) {
  ir::DimBindings out;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string item = strings::trim(
        text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos), " \t");
    pos = comma == std::string::npos ? text.size() + 1 : comma + 1;
    if (item.empty()) {
      if (comma == std::string::npos && !out.empty()) break;
      throw UserError("--dims: empty item in '" + text +
                      "'; expected NAME=SIZE, e.g. --dims M=256,N=128");
    }
    size_t eq = item.find('=');
    if (eq == std::string::npos)
      throw UserError("--dims: '" + item + "': expected NAME=SIZE, e.g. --dims M=256,N=128");
    std::string name = strings::trim(item.substr(0, eq), " \t");
    std::string size = strings::trim(item.substr(eq + 1), " \t");
    bool name_ok =
        !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_');
    for (char c : name)
      name_ok = name_ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
    if (!name_ok)
      throw UserError("--dims: '" + item + "': expected NAME=SIZE where NAME is a dim name like M");
    bool size_ok = !size.empty() && size.size() <= 12;
    for (char c : size) size_ok = size_ok && std::isdigit(static_cast<unsigned char>(c));
    if (!size_ok || std::stoll(size) < 1)
      throw UserError("--dims: '" + item + "': size must be a positive integer");
    if (out.count(name)) throw UserError("--dims: dim '" + name + "' given twice");
    out[name] = std::stoll(size);
  }
  return out;
}

}  // namespace ollie::spec
