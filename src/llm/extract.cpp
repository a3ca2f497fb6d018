// extract_code: the kernel source in a model's answer, whatever shape the answer has
// (fenced blocks with or without a language, several blocks, prose around unfenced code),
// or a clear "no code" when there is none; extract_plan: an answer's ```schedule and
// ```rewrites blocks.
#include <algorithm>
#include <cctype>
#include <regex>

#include "llm/llm.h"
#include "support/strings.h"

namespace ollie::llm {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string join(const std::vector<std::string>& lines, size_t begin, size_t end) {
  std::string out;
  for (size_t i = begin; i < end; ++i) out += lines[i] + "\n";
  return out;
}

// Skips a comment, string or character literal starting at `i`; returns the index after
// it, or `i` when there is none there.
size_t skip_non_code(const std::string& s, size_t i) {
  if (s.compare(i, 2, "//") == 0) {
    size_t e = s.find('\n', i);
    return e == std::string::npos ? s.size() : e;
  }
  if (s.compare(i, 2, "/*") == 0) {
    size_t e = s.find("*/", i + 2);
    return e == std::string::npos ? s.size() : e + 2;
  }
  if (s[i] == '"' || s[i] == '\'') {
    char quote = s[i];
    size_t j = i + 1;
    while (j < s.size() && s[j] != quote && s[j] != '\n') j += s[j] == '\\' ? 2 : 1;
    return std::min(j + 1, s.size());
  }
  return i;
}

// The index just past the bracket that closes the one at `open` ('(' or '{'), skipping
// comments and literals; npos when it is not closed.
size_t matching_close(const std::string& s, size_t open) {
  const char o = s[open], c = o == '(' ? ')' : '}';
  int depth = 0;
  for (size_t i = open; i < s.size();) {
    size_t after = skip_non_code(s, i);
    if (after != i) {
      i = after;
      continue;
    }
    if (s[i] == o) ++depth;
    if (s[i] == c && --depth == 0) return i + 1;
    ++i;
  }
  return std::string::npos;
}

// A definition of ollie_kernel in `code`: the offsets of the name and of the end of its
// body (or of the text when the body is not closed). nullopt when there is none (only a
// declaration or a mention).
struct Definition {
  size_t name = 0, body_end = 0;
};
std::optional<Definition> last_kernel_definition(const std::string& code) {
  static const std::regex name(R"(\bollie_kernel\s*\()");
  std::optional<Definition> found;
  for (auto it = std::sregex_iterator(code.begin(), code.end(), name); it != std::sregex_iterator();
       ++it) {
    size_t at = static_cast<size_t>(it->position(0));
    size_t paren = code.find('(', at);
    size_t after = matching_close(code, paren);
    if (after == std::string::npos) continue;
    size_t next = code.find_first_not_of(" \t\r\n", after);
    if (next == std::string::npos || code[next] != '{') continue;
    size_t end = matching_close(code, next);
    found = Definition{at, end == std::string::npos ? code.size() : end};
  }
  return found;
}

bool looks_like_cpp(const std::string& code) {
  bool has_braces = code.find('{') != std::string::npos && code.find('}') != std::string::npos;
  return code.find("#include") != std::string::npos ||
         (has_braces && code.find(';') != std::string::npos);
}

bool cpp_language(const std::string& info) {
  static const char* const names[] = {"",  "cpp", "c++", "cxx", "cc",
                                      "c", "h",   "hpp", "hxx", "cplusplus"};
  std::string first = lower(info.substr(0, info.find_first_of(" \t{")));
  return std::find(std::begin(names), std::end(names), first) != std::end(names);
}

struct Block {
  std::string language;
  std::string code;
  bool closed = true;
};

// Markdown fenced blocks: a line of 3+ backticks or tildes (optionally indented, with an
// info string) up to a line of at least as many of the same character. A block left open
// (a truncated answer) runs to the end.
std::vector<Block> fenced_blocks(const std::vector<std::string>& lines) {
  std::vector<Block> blocks;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string t = strings::trim(lines[i], strings::kLineBlanks);
    if (t.size() < 3 || (t[0] != '`' && t[0] != '~')) continue;
    char fence = t[0];
    size_t run = t.find_first_not_of(fence);
    if (run == std::string::npos) run = t.size();
    if (run < 3) continue;
    Block block;
    block.language = strings::trim(t.substr(run), strings::kLineBlanks);
    if (fence == '`' && block.language.find('`') != std::string::npos)
      continue;  // inline code, not a fence
    size_t j = i + 1;
    for (; j < lines.size(); ++j) {
      std::string u = strings::trim(lines[j], strings::kLineBlanks);
      size_t n = u.find_first_not_of(fence);
      if (n == std::string::npos && u.size() >= run) break;
    }
    block.closed = j < lines.size();
    block.code = join(lines, i + 1, std::min(j, lines.size()));
    blocks.push_back(std::move(block));
    i = j;
  }
  return blocks;
}

// A line of prose rather than code (outside any braces).
bool code_like_line(const std::string& line) {
  static const std::regex starts(
      R"(^(#|//|/\*|\*|extern\b|static\b|inline\b|template\b|namespace\b|using\b|typedef\b|struct\b|class\b|union\b|enum\b|const\b|constexpr\b|void\b|float\b|double\b|int\b|unsigned\b|signed\b|long\b|short\b|char\b|bool\b|auto\b|size_t\b|u?int(8|16|32|64)_t\b|std::|__))");
  std::string t = strings::trim(line, strings::kLineBlanks);
  if (t.empty()) return true;
  if (t.find_first_of(";{}") != std::string::npos) return true;
  return std::regex_search(t, starts);
}

// Unfenced code: the ollie_kernel definition, the code-like lines before it (includes,
// helpers, `extern "C"`) up to the first line of prose, and nothing after its body.
std::optional<std::string> unfenced_kernel(std::string_view answer) {
  std::string text(answer);
  auto def = last_kernel_definition(text);
  if (!def) return std::nullopt;
  std::vector<std::string> lines = strings::split_lines(text, strings::LineEnd::CrLf);
  auto line_of = [&](size_t offset) {
    return static_cast<size_t>(std::count(text.begin(), text.begin() + offset, '\n'));
  };
  size_t first = line_of(def->name);
  size_t last = line_of(def->body_end > 0 ? def->body_end - 1 : 0);
  // The brace depth at the start of each line (braces in comments and literals skipped).
  std::vector<int> depth(lines.size(), 0);
  int d = 0;
  for (size_t l = 0; l < lines.size(); ++l) {
    depth[l] = d;
    const std::string& s = lines[l];
    for (size_t i = 0; i < s.size();) {
      if (size_t after = skip_non_code(s, i); after != i) {
        i = after;
        continue;
      }
      if (s[i] == '{') ++d;
      if (s[i] == '}') d = std::max(0, d - 1);
      ++i;
    }
  }
  while (first > 0 && (depth[first - 1] > 0 || code_like_line(lines[first - 1]))) --first;
  while (first < last && strings::trim(lines[first], strings::kLineBlanks).empty()) ++first;
  return join(lines, first, std::min(last + 1, lines.size()));
}

}  // namespace

ExtractedCode extract_code(std::string_view answer) {
  ExtractedCode out;
  std::vector<std::string> lines = strings::split_lines(answer, strings::LineEnd::CrLf);
  std::vector<Block> blocks = fenced_blocks(lines);
  out.fenced_blocks = static_cast<int>(blocks.size());
  const std::string of = " of " + std::to_string(blocks.size());

  int defining = -1, longest = -1;
  for (size_t i = 0; i < blocks.size(); ++i) {
    const Block& b = blocks[i];
    bool defines = last_kernel_definition(b.code).has_value();
    if (!cpp_language(b.language) && !defines) continue;
    if (defines) defining = static_cast<int>(i);
    if (looks_like_cpp(b.code) &&
        (longest < 0 || b.code.size() > blocks[static_cast<size_t>(longest)].code.size()))
      longest = static_cast<int>(i);
  }
  if (defining >= 0) {
    const Block& b = blocks[static_cast<size_t>(defining)];
    out.found = true;
    out.code = b.code;
    out.how = "fenced block " + std::to_string(defining + 1) + of + " (defines ollie_kernel" +
              (b.closed ? ")" : "; the fence is not closed, the answer may be cut)");
    return out;
  }
  if (longest >= 0) {
    out.found = true;
    out.code = blocks[static_cast<size_t>(longest)].code;
    out.how = "fenced block " + std::to_string(longest + 1) + of +
              " (the longest C++ block; none defines ollie_kernel)";
    return out;
  }
  if (auto code = unfenced_kernel(answer)) {
    out.found = true;
    out.code = *code;
    out.how = blocks.empty()
                  ? "unfenced code around the ollie_kernel definition"
                  : "unfenced code around the ollie_kernel definition (no fenced block is C++)";
    return out;
  }
  out.how = blocks.empty()
                ? "no code: the answer has no fenced block and no ollie_kernel definition"
                : "no code: none of the " + std::to_string(blocks.size()) +
                      " fenced blocks is C++ and the answer has no ollie_kernel definition";
  return out;
}

ExtractedPlan extract_plan(std::string_view answer) {
  ExtractedPlan out;
  const std::vector<std::string> lines = strings::split_lines(answer, strings::LineEnd::CrLf);
  const std::vector<Block> blocks = fenced_blocks(lines);
  int schedule = -1, rewrites = -1;
  for (size_t i = 0; i < blocks.size(); ++i) {
    const std::string& info = blocks[i].language;
    const std::string language = lower(info.substr(0, info.find_first_of(" \t{")));
    if (language == "schedule") schedule = static_cast<int>(i);
    if (language == "rewrites" || language == "rewrite") rewrites = static_cast<int>(i);
  }
  if (schedule < 0 && rewrites < 0) return out;
  out.found = true;
  const std::string of = " of " + std::to_string(blocks.size());
  const std::pair<int, const char*> parts[] = {{schedule, "schedule"}, {rewrites, "rewrites"}};
  for (const auto& [index, name] : parts) {
    if (index < 0) continue;
    const Block& b = blocks[static_cast<size_t>(index)];
    if (!out.how.empty()) out.how += ", ";
    out.how += std::string("```") + name + " block " + std::to_string(index + 1) + of;
    if (!b.closed)
      out.problem = std::string("the ```") + name +
                    " block is not closed: the answer was cut (answer with a shorter plan)";
  }
  if (schedule >= 0) {
    out.has_schedule = true;
    out.schedule = blocks[static_cast<size_t>(schedule)].code;
  }
  if (rewrites >= 0) out.rewrites = blocks[static_cast<size_t>(rewrites)].code;
  return out;
}

}  // namespace ollie::llm
