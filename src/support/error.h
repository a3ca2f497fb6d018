// Errors shared by every stage: a UserError is bad input (the message says what
// to do), an InternalError is a bug in ollie. SourceLoc points into a spec file.
#pragma once

#include <stdexcept>
#include <string>

namespace ollie {

// A position in a source file: 1-based line and column. line == 0 means "no position".
struct SourceLoc {
  int line = 0;
  int col = 0;
  bool valid() const { return line > 0; }
};

// Bad input from the user. what() is the complete, formatted message.
class UserError : public std::runtime_error {
 public:
  explicit UserError(const std::string& message) : std::runtime_error(message) {}
};

// A broken invariant inside ollie: always a bug, never the user's fault.
class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& message)
      : std::logic_error("internal error (a bug in ollie): " + message) {}
};

// Formats "file:line:col: error: message", the source line, a caret under the
// column, and an optional "hint: ..." line saying what to write instead.
std::string format_diagnostic(const std::string& file, const std::string& source, SourceLoc loc,
                              const std::string& message, const std::string& hint = "");

// A UserError located in a spec file, formatted with format_diagnostic.
class SpecError : public UserError {
 public:
  SpecError(const std::string& file, const std::string& source, SourceLoc loc,
            const std::string& message, const std::string& hint = "")
      : UserError(format_diagnostic(file, source, loc, message, hint)),
        loc_(loc),
        message_(message) {}
  SourceLoc loc() const { return loc_; }
  // The bare message, without position, source line or hint.
  const std::string& message() const { return message_; }

 private:
  SourceLoc loc_;
  std::string message_;
};

}  // namespace ollie

#define OLLIE_CHECK(cond, msg)                                                                     \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      throw ::ollie::InternalError(std::string(__FILE__) + ":" + std::to_string(__LINE__) + ": " + \
                                   (msg));                                                         \
  } while (0)
