// Keeping the API key off the command line: erasing --llm-key's value from the process's
// argv memory after parsing, and reading the key from a file instead (--llm-key-file).
#include <algorithm>
#include <cctype>
#include <cstring>
#include <fstream>
#include <sstream>

#include "cli/cli.h"
#include "support/error.h"

namespace ollie::cli {

namespace {

void overwrite(char* text) { std::fill(text, text + std::strlen(text), '*'); }

}  // namespace

bool scrub_flag_values(int argc, char** argv, const std::string& flag) {
  bool found = false;
  const std::string with_value = flag + "=";
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) break;  // what follows is not an option
    if (flag == argv[i] && i + 1 < argc) {
      overwrite(argv[++i]);
      found = true;
    } else if (std::strncmp(argv[i], with_value.c_str(), with_value.size()) == 0) {
      overwrite(argv[i] + with_value.size());
      found = true;
    }
  }
  return found;
}

std::string read_key_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  if (in) text << in.rdbuf();
  if (!in || in.bad())
    throw UserError("cannot read the API key file '" + path + "' (--llm-key-file): " +
                    std::strerror(errno) + "; give a readable file holding only the key");
  std::string key = text.str();
  auto space = [](unsigned char c) { return std::isspace(c) != 0; };
  key.erase(key.begin(), std::find_if_not(key.begin(), key.end(), space));
  key.erase(std::find_if_not(key.rbegin(), key.rend(), space).base(), key.end());
  if (key.empty())
    throw UserError("the API key file '" + path +
                    "' (--llm-key-file) is empty; write the key into it, alone");
  if (std::any_of(key.begin(), key.end(), space))
    throw UserError("the API key file '" + path +
                    "' (--llm-key-file) holds more than one word; write the key into it, alone");
  return key;
}

}  // namespace ollie::cli
