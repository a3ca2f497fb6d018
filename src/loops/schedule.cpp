// The text form of schedules: one directive per line, parsed with located errors and
// printed back so that parse(print(s)) == s.
#include <cctype>
#include <sstream>

#include "loops/loops.h"

namespace ollie::loops {
namespace {

struct Syntax {
  DirectiveKind kind;
  const char* name;
  const char* usage;
  int min_args, max_args;  // after the stage; -1: unbounded
};

const Syntax kSyntax[] = {
    {DirectiveKind::Split, "split", "split STAGE LOOP FACTOR", 2, 2},
    {DirectiveKind::Reorder, "reorder", "reorder STAGE LOOP LOOP...", 2, -1},
    {DirectiveKind::Parallel, "parallel", "parallel STAGE LOOP", 1, 1},
    {DirectiveKind::Vectorize, "vectorize", "vectorize STAGE LOOP", 1, 1},
    {DirectiveKind::Unroll, "unroll", "unroll STAGE LOOP", 1, 1},
    {DirectiveKind::ComputeAt, "compute_at", "compute_at STAGE HOST LOOP", 2, 2},
    {DirectiveKind::Inline, "inline", "inline STAGE", 0, 0},
    {DirectiveKind::Pack, "pack", "pack STAGE BUFFER LOOP|root [transposed]", 2, 3},
    {DirectiveKind::Rfactor, "rfactor", "rfactor STAGE LOOP", 1, 1},
    {DirectiveKind::Accumulate, "accumulate", "accumulate STAGE LOOP", 1, 1},
    {DirectiveKind::Bf16Dot, "bf16_dot", "bf16_dot STAGE", 0, 0},
};

const Syntax& syntax(DirectiveKind k) {
  for (const auto& s : kSyntax)
    if (s.kind == k) return s;
  throw InternalError("schedule: unknown directive kind");
}

bool is_name(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.')) return false;
  return true;
}

}  // namespace

const char* directive_name(DirectiveKind kind) { return syntax(kind).name; }

std::string to_text(const Directive& d) {
  std::string s = std::string(directive_name(d.kind)) + " " + d.stage;
  for (const auto& a : d.args) s += " " + a;
  if (d.kind == DirectiveKind::Split) s += " " + std::to_string(d.factor);
  return s;
}

std::string to_text(const Schedule& s) {
  std::string out;
  for (const auto& d : s.directives) out += to_text(d) + "\n";
  return out;
}

Schedule parse_schedule(const std::string& text, const std::string& file) {
  Schedule out;
  std::istringstream lines(text);
  std::string line;
  // A ';' also ends a directive, so a schedule fits on a command line.
  int line_no = 0;
  while (std::getline(lines, line)) {
    ++line_no;
    const std::string code = line.substr(0, line.find('#'));
    size_t stmt_start = 0;
    while (stmt_start <= code.size()) {
      size_t stmt_end = code.find(';', stmt_start);
      if (stmt_end == std::string::npos) stmt_end = code.size();
      // Tokens with their columns.
      std::vector<std::pair<std::string, int>> tokens;
      for (size_t i = stmt_start; i < stmt_end;) {
        if (std::isspace(static_cast<unsigned char>(code[i]))) {
          ++i;
          continue;
        }
        size_t j = i;
        while (j < stmt_end && !std::isspace(static_cast<unsigned char>(code[j]))) ++j;
        tokens.push_back({code.substr(i, j - i), static_cast<int>(i) + 1});
        i = j;
      }
      stmt_start = stmt_end + 1;
      if (tokens.empty()) continue;
      auto fail = [&](size_t tok, const std::string& msg, const std::string& hint) -> void {
        const int col = tok < tokens.size() ? tokens[tok].second : static_cast<int>(stmt_end) + 1;
        throw SpecError(file, text, {line_no, col}, msg, hint);
      };
      const Syntax* syn = nullptr;
      for (const auto& s : kSyntax)
        if (tokens[0].first == s.name) syn = &s;
      if (!syn) {
        std::string all;
        for (const auto& s : kSyntax) all += std::string(all.empty() ? "" : ", ") + s.name;
        fail(0, "unknown schedule directive '" + tokens[0].first + "'", "directives are: " + all);
      }
      const int nargs = static_cast<int>(tokens.size()) - 2;
      if (tokens.size() < 2 || nargs < syn->min_args ||
          (syn->max_args >= 0 && nargs > syn->max_args))
        fail(
            tokens.size() < 2 ? 1 : std::min(tokens.size(), static_cast<size_t>(2 + syn->min_args)),
            std::string("wrong number of arguments to ") + syn->name,
            std::string("write: ") + syn->usage);
      Directive d{syn->kind, tokens[1].first, {}, 0, line_no};
      for (size_t t = 1; t < tokens.size(); ++t) {
        const bool is_factor = syn->kind == DirectiveKind::Split && t == 3;
        if (is_factor) {
          const std::string& f = tokens[t].first;
          int64_t v = 0;
          bool ok = !f.empty() && f.size() < 10;
          for (char c : f) ok = ok && std::isdigit(static_cast<unsigned char>(c));
          if (ok) v = std::stoll(f);
          if (!ok || v < 2)
            fail(t, "split factor must be an integer >= 2, got '" + f + "'", "e.g. split t3 n 16");
          d.factor = v;
        } else {
          if (!is_name(tokens[t].first))
            fail(t, "'" + tokens[t].first + "' is not a stage, loop or buffer name",
                 "names are letters, digits, '_' and '.', starting with a letter or '_'");
          if (t >= 2) d.args.push_back(tokens[t].first);
        }
      }
      out.directives.push_back(std::move(d));
    }
  }
  return out;
}

ScheduleError::ScheduleError(const Directive& directive, const std::string& reason,
                             const std::string& detail)
    : UserError((directive.line ? "schedule line " + std::to_string(directive.line) + ": "
                                : std::string()) +
                "cannot " + to_text(directive) + ": " + reason +
                (detail.empty() ? "" : "\n  " + detail)),
      directive_(directive),
      reason_(reason),
      detail_(detail) {}

}  // namespace ollie::loops
