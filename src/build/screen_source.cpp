// The source screen: a small C++ lexer (line splices, comments, string and raw string
// literals, digraph directives) over the candidate's own text, refusing what a kernel never
// needs with the line and column. Macros can hide names (token pasting); the object screen
// (screen_object.cpp) is the defence against that.
#include <cstring>
#include <string_view>
#include <unordered_map>

#include "build/screen.h"

namespace ollie::build {
namespace {

bool ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' ||
         static_cast<unsigned char>(c) >= 0x80;
}
bool ident_char(char c) { return ident_start(c) || (c >= '0' && c <= '9'); }
bool starts(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// Names refused wherever they appear as a token, and why.
const std::unordered_map<std::string_view, const char*>& refused_names() {
  static const char* const kAsm = "is inline assembly: a kernel is plain C++ (intrinsics are fine)";
  static const char* const kFrame = "reads the caller's stack frame: a kernel never needs it";
  static const char* const kEnv =
      "reads or changes the environment: a kernel's result depends only on its arguments";
  static const char* const kSys =
      "makes a system call or controls the process: a kernel only computes on its buffers";
  static const char* const kProc =
      "starts or changes processes: a kernel may use threads (OpenMP, std::thread), never "
      "processes";
  static const char* const kLoad = "loads code at run time: a kernel never needs it";
  static const char* const kMem =
      "changes memory protection: the inputs are read-only; use new/malloc for scratch memory";
  static const char* const kNet = "opens a socket: a kernel never needs the network";
  static const char* const kTime =
      "reads the time-stamp counter or draws hardware entropy: a kernel's result and speed "
      "must not depend on it";
  static const char* const kFp =
      "changes the floating-point environment (MXCSR, rounding, flush-to-zero): the spec's "
      "semantics are IEEE round-to-nearest, and the caller's environment must stay as it is";
  static const char* const kDetect =
      "detects the sanitizer build: a kernel must behave the same under every build";
  static const char* const kHide =
      "hides code from the sanitizers: every kernel is checked under AddressSanitizer and "
      "UndefinedBehaviorSanitizer";
  static const char* const kWhere =
      "names the file or the moment the kernel was built: a kernel must compute the same "
      "whatever it is compiled as, and where";
  static const std::unordered_map<std::string_view, const char*> names = {
      {"asm", kAsm},
      {"__FILE__", kWhere},
      {"__BASE_FILE__", kWhere},
      {"__FILE_NAME__", kWhere},
      {"__builtin_FILE", kWhere},
      {"source_location", kWhere},
      {"__DATE__", kWhere},
      {"__TIME__", kWhere},
      {"__TIMESTAMP__", kWhere},
      {"__asm", kAsm},
      {"__asm__", kAsm},
      {"__builtin_frame_address", kFrame},
      {"__builtin_return_address", kFrame},
      {"__builtin_extract_return_addr", kFrame},
      {"environ", kEnv},
      {"__environ", kEnv},
      {"_environ", kEnv},
      {"getenv", kEnv},
      {"secure_getenv", kEnv},
      {"setenv", kEnv},
      {"putenv", kEnv},
      {"unsetenv", kEnv},
      {"clearenv", kEnv},
      {"syscall", kSys},
      {"prctl", kSys},
      {"ptrace", kSys},
      {"fork", kProc},
      {"vfork", kProc},
      {"execve", kProc},
      {"execv", kProc},
      {"execvp", kProc},
      {"execvpe", kProc},
      {"execl", kProc},
      {"execlp", kProc},
      {"execle", kProc},
      {"fexecve", kProc},
      {"posix_spawn", kProc},
      {"posix_spawnp", kProc},
      {"popen", kProc},
      {"setsid", kProc},
      {"dlopen", kLoad},
      {"dlmopen", kLoad},
      {"dlsym", kLoad},
      {"dlvsym", kLoad},
      {"dl_iterate_phdr", kLoad},
      {"mprotect", kMem},
      {"pkey_mprotect", kMem},
      {"socket", kNet},
      {"__rdtsc", kTime},
      {"__rdtscp", kTime},
      {"_rdtsc", kTime},
      {"__builtin_ia32_rdtsc", kTime},
      {"__builtin_ia32_rdtscp", kTime},
      {"__builtin_readcyclecounter", kTime},
      {"_mm_setcsr", kFp},
      {"__builtin_ia32_ldmxcsr", kFp},
      {"_MM_SET_FLUSH_ZERO_MODE", kFp},
      {"_MM_SET_DENORMALS_ZERO_MODE", kFp},
      {"_MM_SET_ROUNDING_MODE", kFp},
      {"_MM_SET_EXCEPTION_MASK", kFp},
      {"_MM_SET_EXCEPTION_STATE", kFp},
      {"fesetround", kFp},
      {"fesetenv", kFp},
      {"feupdateenv", kFp},
      {"feholdexcept", kFp},
      {"feenableexcept", kFp},
      {"fedisableexcept", kFp},
      {"fesetexceptflag", kFp},
      {"__has_feature", kDetect},
      {"__has_extension", kDetect},
      {"no_sanitize", kHide},
      {"no_sanitize_address", kHide},
      {"no_address_safety_analysis", kHide},
      {"no_sanitize_thread", kHide},
      {"no_sanitize_undefined", kHide},
      {"no_sanitize_coverage", kHide},
      {"disable_sanitizer_instrumentation", kHide},
  };
  return names;
}

// Name prefixes refused wherever they appear, and why.
const char* refused_prefix(std::string_view name) {
  static const char* const kRuntime =
      "names the sanitizer runtime's interface: a kernel never talks to the sanitizers";
  static const char* const kDetect =
      "detects the sanitizer build: a kernel must behave the same under every build";
  static const std::pair<std::string_view, const char*> prefixes[] = {
      {"__asan_", kRuntime},
      {"__ubsan_", kRuntime},
      {"__sanitizer_", kRuntime},
      {"__lsan_", kRuntime},
      {"__tsan_", kRuntime},
      {"__msan_", kRuntime},
      {"__hwasan_", kRuntime},
      {"__SANITIZE_", kDetect},
      {"_GLIBCXX_SANITIZE", kDetect},
      {"_rdrand", "draws hardware entropy: a kernel's result must not depend on it"},
      {"_rdseed", "draws hardware entropy: a kernel's result must not depend on it"},
      {"_GLOBAL__",
       "names the compiler's static-initialization functions: a kernel never needs them"},
  };
  for (const auto& [prefix, why] : prefixes)
    if (starts(name, prefix)) return why;
  return nullptr;
}

// Attribute names (without surrounding __) refused inside __attribute__((...)) and [[...]].
const char* refused_attribute(std::string_view name) {
  if (starts(name, "__")) name.remove_prefix(2);
  if (name.size() > 2 && name.substr(name.size() - 2) == "__") name.remove_suffix(2);
  static const char* const kLoad =
      "runs code when the kernel is loaded or unloaded: a kernel's code runs only when it is "
      "called";
  static const char* const kPlace =
      "places or renames symbols (sections, aliases, weak or hidden symbols, versions): a "
      "kernel never needs it";
  static const char* const kHide =
      "hides code from the sanitizers: every kernel is checked under AddressSanitizer and "
      "UndefinedBehaviorSanitizer";
  static const std::pair<std::string_view, const char*> names[] = {
      {"constructor", kLoad},
      {"destructor", kLoad},
      {"init_priority", kLoad},
      {"ifunc", kLoad},
      {"target_clones", kLoad},
      {"section", kPlace},
      {"alias", kPlace},
      {"weak", kPlace},
      {"weakref", kPlace},
      {"visibility", kPlace},
      {"symver", kPlace},
      {"naked", kPlace},
      {"no_sanitize", kHide},
      {"no_sanitize_address", kHide},
      {"no_address_safety_analysis", kHide},
      {"no_sanitize_thread", kHide},
      {"no_sanitize_undefined", kHide},
      {"no_sanitize_coverage", kHide},
      {"disable_sanitizer_instrumentation", kHide},
  };
  for (const auto& [n, why] : names)
    if (name == n) return why;
  return nullptr;
}

class Screen {
 public:
  Screen(const std::string& name, const std::string& source) : name_(name) { splice(source); }

  std::vector<Refusal> run() {
    while (i_ < text_.size()) step();
    flush_strings();
    return std::move(found_);
  }

 private:
  // Translation phase 2: backslash (then blanks) newline joins lines. `at_` maps each
  // character of text_ to its offset in the original source, for line and column.
  void splice(const std::string& source) {
    for (size_t k = 0; k < source.size(); ++k) {
      if (source[k] == '\n') line_starts_.push_back(k + 1);
      if (source[k] == '\\') {
        size_t j = k + 1;
        while (j < source.size() && (source[j] == ' ' || source[j] == '\t' || source[j] == '\r'))
          ++j;
        if (j < source.size() && source[j] == '\n') {
          line_starts_.push_back(j + 1);
          k = j;
          continue;
        }
      }
      text_ += source[k];
      at_.push_back(k);
    }
    at_.push_back(source.size());
  }

  std::string where(size_t pos) const {
    const size_t off = at_[std::min(pos, at_.size() - 1)];
    size_t line = 0;
    while (line + 1 < line_starts_.size() && line_starts_[line + 1] <= off) ++line;
    return name_ + ":" + std::to_string(line + 1) + ":" +
           std::to_string(off - line_starts_[line] + 1);
  }
  void refuse(size_t pos, std::string reason) { found_.push_back({where(pos), std::move(reason)}); }

  char at(size_t k) const { return k < text_.size() ? text_[k] : '\0'; }
  bool blank(char c) const { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

  // Skips blanks and comments on the current logical line.
  void skip_blanks() {
    for (;;) {
      if (blank(at(i_))) {
        ++i_;
      } else if (at(i_) == '/' && at(i_ + 1) == '*') {
        const size_t end = text_.find("*/", i_ + 2);
        i_ = end == std::string::npos ? text_.size() : end + 2;
      } else {
        return;
      }
    }
  }

  void step() {
    const char c = at(i_);
    if (c == '\n') {
      line_start_ = true;
      ++i_;
      return;
    }
    if (blank(c)) {
      ++i_;
      return;
    }
    if (c == '/' && at(i_ + 1) == '/') {
      while (i_ < text_.size() && at(i_) != '\n') ++i_;
      return;
    }
    if (c == '/' && at(i_ + 1) == '*') {
      skip_blanks();
      return;
    }
    const bool first = line_start_;
    line_start_ = false;
    if (first && (c == '#' || (c == '%' && at(i_ + 1) == ':'))) {
      i_ += c == '#' ? 1 : 2;
      directive();
      return;
    }
    if (c == '"' || c == '\'' || (ident_start(c) && literal_prefix())) {
      literal();
      return;
    }
    flush_strings();
    if (ident_start(c)) {
      identifier();
    } else if ((c >= '0' && c <= '9') || (c == '.' && at(i_ + 1) >= '0' && at(i_ + 1) <= '9')) {
      number();
    } else {
      punctuator(c);
    }
  }

  // An encoding prefix or R right before a quote (u8"", LR"()", ...).
  bool literal_prefix() const {
    size_t k = i_;
    while (k < text_.size() && k - i_ < 3 && std::strchr("uU8LR", text_[k])) ++k;
    if (at(k) != '"' && at(k) != '\'') return false;
    std::string_view p(text_.data() + i_, k - i_);
    for (std::string_view ok : {"u8", "u", "U", "L", "R", "u8R", "uR", "UR", "LR"})
      if (p == ok) return true;
    return false;
  }

  // A string or character literal; strings' contents are collected (adjacent literals are
  // one string) and checked when the run ends.
  void literal() {
    const size_t start = i_;
    bool raw = false;
    while (at(i_) != '"' && at(i_) != '\'') raw |= at(i_++) == 'R';
    const char quote = at(i_++);
    std::string content;
    if (raw && quote == '"') {
      const size_t open = text_.find('(', i_);
      const std::string delim =
          ")" + text_.substr(i_, open == std::string::npos ? 0 : open - i_) + "\"";
      const size_t end = open == std::string::npos ? std::string::npos : text_.find(delim, open);
      const size_t stop = end == std::string::npos ? text_.size() : end;
      if (open != std::string::npos) content = text_.substr(open + 1, stop - open - 1);
      i_ = end == std::string::npos ? text_.size() : end + delim.size();
    } else {
      while (i_ < text_.size() && at(i_) != quote && at(i_) != '\n') {
        if (at(i_) == '\\' && i_ + 1 < text_.size()) content += text_[i_++];
        content += text_[i_++];
      }
      if (at(i_) == quote) ++i_;
    }
    if (quote != '"') return;
    if (strings_.empty()) strings_start_ = start;
    strings_ += content;
    if (pragma_string_) {
      pragma_string_ = false;
      check_pragma(start, content);
    }
  }

  void flush_strings() {
    if (strings_.empty()) return;
    check_string(strings_start_, strings_);
    strings_.clear();
  }

  void check_string(size_t pos, const std::string& s) {
    for (size_t k = s.find("/proc"); k != std::string::npos; k = s.find("/proc", k + 1))
      if (k + 5 >= s.size() || !ident_char(s[k + 5])) {
        refuse(pos, "names /proc: a kernel never reads the process's own files");
        break;
      }
    if (s.find("/dev/") != std::string::npos)
      refuse(pos, "names /dev/: a kernel never opens devices");
    if (s.find("/sys/") != std::string::npos)
      refuse(pos, "names /sys/: a kernel never reads the system's files");
    if (s.find(".incbin") != std::string::npos)
      refuse(pos, "names .incbin: a kernel never embeds files");
  }

  void number() {
    ++i_;
    while (i_ < text_.size()) {
      const char c = at(i_);
      if ((c == 'e' || c == 'E' || c == 'p' || c == 'P') &&
          (at(i_ + 1) == '+' || at(i_ + 1) == '-'))
        i_ += 2;
      else if (ident_char(c) || c == '.' || (c == '\'' && ident_char(at(i_ + 1))))
        ++i_;
      else
        break;
    }
  }

  void punctuator(char c) {
    if (c == '(') ++parens_;
    if (c == ')') {
      --parens_;
      while (!gnu_attributes_.empty() && parens_ <= gnu_attributes_.back())
        gnu_attributes_.pop_back();
    }
    if (c == '[') {
      if (at(i_ + 1) == '[') {
        std_attributes_.push_back(brackets_);
        brackets_ += 2;
        i_ += 2;
        return;
      }
      ++brackets_;
    }
    if (c == ']') {
      if (!std_attributes_.empty() && brackets_ == std_attributes_.back() + 2 &&
          at(i_ + 1) == ']') {
        std_attributes_.pop_back();
        brackets_ -= 2;
        i_ += 2;
        return;
      }
      --brackets_;
    }
    ++i_;
  }

  void identifier() {
    const size_t start = i_;
    while (i_ < text_.size() && ident_char(at(i_))) ++i_;
    const std::string_view name(text_.data() + start, i_ - start);
    const auto& names = refused_names();
    const bool in_gnu = !gnu_attributes_.empty() && parens_ == gnu_attributes_.back() + 2;
    const bool in_std = !std_attributes_.empty() && brackets_ == std_attributes_.back() + 2;
    const char* attribute = in_gnu || in_std ? refused_attribute(name) : nullptr;
    if (attribute) {
      refuse(start, "the attribute `" + std::string(name) + "` " + attribute);
    } else if (auto it = names.find(name); it != names.end()) {
      refuse(start, "`" + std::string(name) + "` " + it->second);
    } else if (const char* why = refused_prefix(name)) {
      refuse(start, "`" + std::string(name) + "` " + why);
    }
    if (name == "__attribute__" || name == "__attribute") gnu_attributes_.push_back(parens_);
    if (name == "__has_include" || name == "__has_include_next") has_include(start);
    if (name == "_Pragma") pragma_string_ = true;
  }

  // __has_include(<...>) or ("..."): the same rule as #include.
  void has_include(size_t start) {
    skip_blanks();
    if (at(i_) != '(') return refuse(start, "a computed __has_include: name the header itself");
    ++i_;
    ++parens_;
    skip_blanks();
    header_name(start, "__has_include");
  }

  void directive() {
    skip_blanks();
    const size_t start = i_;
    while (ident_char(at(i_))) ++i_;
    const std::string name = text_.substr(start, i_ - start);
    if (name == "include") {
      skip_blanks();
      header_name(start, "#include");
    } else if (name == "include_next" || name == "import" || name == "embed") {
      refuse(start, "#" + name + ": a kernel includes only <system headers> and its own header");
    } else if (name == "pragma") {
      const size_t end = text_.find('\n', i_);
      check_pragma(start,
                   text_.substr(i_, end == std::string::npos ? std::string::npos : end - i_));
    }
  }

  // <system header> or "file.h" next to the kernel; anything else is refused.
  void header_name(size_t start, const std::string& what) {
    const char open = at(i_);
    if (open != '<' && open != '"')
      return refuse(start, "a computed " + what + " (a macro): name the header itself");
    const char close = open == '<' ? '>' : '"';
    const size_t end = text_.find(close, i_ + 1);
    if (end == std::string::npos || text_.find('\n', i_) < end)
      return refuse(start, what + " without its closing " + std::string(1, close));
    const std::string path = text_.substr(i_ + 1, end - i_ - 1);
    i_ = end + 1;
    const bool escapes = path.empty() || path[0] == '/' || path.find("..") != std::string::npos ||
                         path.find('\\') != std::string::npos;
    if (escapes || (open == '"' && path.find('/') != std::string::npos))
      refuse(start, what + " " + open + path + close +
                        ": a kernel includes only <system headers> and the plain name of its own "
                        "header (\"entry.ollie.h\"), never a path");
  }

  void check_pragma(size_t pos, const std::string& text) {
    size_t k = text.find_first_not_of(" \t");
    const std::string words = k == std::string::npos ? "" : text.substr(k);
    for (std::string_view bad : {"weak", "redefine_extname", "GCC visibility"})
      if (starts(words, bad) && !ident_char(words.size() > bad.size() ? words[bad.size()] : ' '))
        refuse(pos, "#pragma " + std::string(bad) +
                        " places or renames symbols: a kernel never needs it");
  }

  std::string name_;
  std::string text_;
  std::vector<size_t> at_;
  std::vector<size_t> line_starts_ = {0};
  size_t i_ = 0;
  bool line_start_ = true;
  int parens_ = 0, brackets_ = 0;
  std::vector<int> gnu_attributes_;  // paren depth at each open __attribute__
  std::vector<int> std_attributes_;  // bracket depth at each open [[
  std::string strings_;              // adjacent string literals' contents so far
  size_t strings_start_ = 0;
  bool pragma_string_ = false;  // the next string literal is _Pragma's
  std::vector<Refusal> found_;
};

}  // namespace

std::vector<Refusal> screen_source(const std::string& name, const std::string& source) {
  return Screen(name, source).run();
}

}  // namespace ollie::build
