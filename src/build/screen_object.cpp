// The object screen: reads a built kernel's ELF64 shared object with <elf.h> (no external
// tool) and refuses imports outside the allow-list (screen_imports.cpp), load-time code
// beyond the toolchain's own, ifunc resolvers and unexpected libraries. Macro tricks that
// hide a name from the source screen cannot hide it from the dynamic symbol table.
#include <elf.h>

#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "build/screen.h"
#include "build/screen_imports.h"
#include "support/error.h"

namespace ollie::build {
namespace {

class ElfFile {
 public:
  explicit ElfFile(const std::string& path) : path_(path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw UserError("cannot read the shared object '" + path + "'");
    std::ostringstream s;
    s << in.rdbuf();
    bytes_ = s.str();
    Elf64_Ehdr eh;
    if (!read(0, eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
        eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
        eh.e_type != ET_DYN || eh.e_shentsize != sizeof(Elf64_Shdr))
      throw UserError("'" + path + "' is not a 64-bit little-endian ELF shared object");
    sections_.resize(eh.e_shnum);
    for (size_t k = 0; k < sections_.size(); ++k)
      if (!read(eh.e_shoff + k * sizeof(Elf64_Shdr), sections_[k]))
        throw UserError("'" + path + "': section header " + std::to_string(k) + " is cut off");
    if (eh.e_shstrndx < sections_.size()) names_ = &sections_[eh.e_shstrndx];
  }

  template <typename T>
  bool read(uint64_t offset, T& out) const {
    if (offset > bytes_.size() || bytes_.size() - offset < sizeof(T)) return false;
    std::memcpy(&out, bytes_.data() + offset, sizeof(T));
    return true;
  }

  // The NUL-terminated string at `offset` in string table section `table`.
  std::string string_at(const Elf64_Shdr& table, uint64_t offset) const {
    if (offset >= table.sh_size || table.sh_offset > bytes_.size()) return "";
    const uint64_t start = table.sh_offset + offset;
    const uint64_t end = std::min<uint64_t>(bytes_.size(), table.sh_offset + table.sh_size);
    if (start >= end) return "";
    const char* p = bytes_.data() + start;
    return std::string(p, strnlen(p, end - start));
  }

  std::string section_name(const Elf64_Shdr& s) const {
    return names_ ? string_at(*names_, s.sh_name) : "";
  }
  const Elf64_Shdr* linked(const Elf64_Shdr& s) const {
    return s.sh_link < sections_.size() ? &sections_[s.sh_link] : nullptr;
  }

  // Every entry of an array section of T (symbols, dynamic entries, relocations).
  // Whether the section's bytes lie inside the file (a corrupt size never allocates).
  bool in_file(const Elf64_Shdr& s) const {
    return s.sh_offset <= bytes_.size() && s.sh_size <= bytes_.size() - s.sh_offset;
  }

  template <typename T>
  std::vector<T> entries(const Elf64_Shdr& s) const {
    if (!in_file(s))
      throw UserError("'" + path_ + "': section " + section_name(s) + " lies outside the file");
    std::vector<T> out(s.sh_size / sizeof(T));
    for (size_t k = 0; k < out.size(); ++k)
      if (!read(s.sh_offset + k * sizeof(T), out[k]))
        throw UserError("'" + path_ + "': section " + section_name(s) + " is cut off");
    return out;
  }

  const std::vector<Elf64_Shdr>& sections() const { return sections_; }

 private:
  std::string path_, bytes_;
  std::vector<Elf64_Shdr> sections_;
  const Elf64_Shdr* names_ = nullptr;
};

struct Symbol {
  std::string name;
  Elf64_Sym sym;
};

std::vector<Symbol> symbols(const ElfFile& elf, uint32_t type) {
  std::vector<Symbol> out;
  for (const auto& s : elf.sections()) {
    if (s.sh_type != type || !elf.linked(s)) continue;
    for (const auto& sym : elf.entries<Elf64_Sym>(s))
      out.push_back({elf.string_at(*elf.linked(s), sym.st_name), sym});
  }
  return out;
}

// The function each 8-byte entry of `array` points to: the relocation that fills it (a
// relative one's addend, or a symbol's name), named by the full symbol table when it can be.
std::vector<std::string> array_targets(const ElfFile& elf, const Elf64_Shdr& array,
                                       const std::vector<Symbol>& all,
                                       const std::vector<Symbol>& dynamic) {
  std::map<uint64_t, std::string> at;
  for (const auto& s : all)
    if (ELF64_ST_TYPE(s.sym.st_info) == STT_FUNC && !s.name.empty()) at[s.sym.st_value] = s.name;
  if (!elf.in_file(array)) throw UserError("an init or fini array lies outside the file");
  std::vector<std::string> out(array.sh_size / 8);
  for (size_t k = 0; k < out.size(); ++k) out[k] = "an unknown function";
  for (const auto& s : elf.sections()) {
    if (s.sh_type != SHT_RELA) continue;
    for (const auto& r : elf.entries<Elf64_Rela>(s)) {
      if (r.r_offset < array.sh_addr || r.r_offset >= array.sh_addr + array.sh_size) continue;
      const size_t k = (r.r_offset - array.sh_addr) / 8;
      const uint32_t sym = ELF64_R_SYM(r.r_info);
      if (sym != 0 && sym < dynamic.size()) {
        out[k] = dynamic[sym].name;
      } else {
        auto it = at.find(static_cast<uint64_t>(r.r_addend));
        char text[64];
        std::snprintf(text, sizeof text, "the function at 0x%llx",
                      static_cast<unsigned long long>(r.r_addend));
        out[k] = it != at.end() ? it->second : text;
      }
    }
  }
  return out;
}

// The toolchain's own load-time functions (crtbeginS.o), and the sanitizers' module
// constructors and destructors in a sanitized build.
bool toolchain_entry(const std::string& name, bool sanitized) {
  if (name == "frame_dummy" || name == "__do_global_dtors_aux") return true;
  return sanitized && (name.starts_with("_sub_I_00099_") || name.starts_with("_sub_D_00099_"));
}

void screen_load_time(const ElfFile& elf, const std::string& where, bool sanitized,
                      std::vector<Refusal>& out) {
  const std::vector<Symbol> all = symbols(elf, SHT_SYMTAB);
  const std::vector<Symbol> dynamic = symbols(elf, SHT_DYNSYM);
  for (const auto& s : elf.sections()) {
    const std::string name = elf.section_name(s);
    const bool array = s.sh_type == SHT_INIT_ARRAY || s.sh_type == SHT_FINI_ARRAY ||
                       s.sh_type == SHT_PREINIT_ARRAY;
    if (!array && name != ".ctors" && name != ".dtors") continue;
    if (s.sh_type == SHT_PREINIT_ARRAY || !array) {
      if (s.sh_size > 0)
        out.push_back({where, "has a " + name +
                                  " section: code that runs when the kernel is loaded, which a "
                                  "kernel never needs"});
      continue;
    }
    // Without a symbol table (a stripped build) only the count can be judged: the
    // toolchain's own one entry per array.
    const std::vector<std::string> targets = array_targets(elf, s, all, dynamic);
    for (const std::string& target : targets) {
      if (toolchain_entry(target, sanitized) || (all.empty() && targets.size() <= 1)) continue;
      out.push_back(
          {where,
           name + " runs `" + target + "` when the kernel is " +
               (s.sh_type == SHT_INIT_ARRAY ? "loaded" : "unloaded") +
               ": a kernel's code runs only when it is called (a namespace-scope object with a "
               "constructor or destructor, a constructor/destructor attribute, or "
               "<iostream> or <bits/stdc++.h>, whose stream objects are set up at load "
               "time: drop them, and make such objects function-local statics or "
               "constexpr)"});
    }
  }
  for (const auto& s : dynamic)
    if (ELF64_ST_TYPE(s.sym.st_info) == STT_GNU_IFUNC && s.sym.st_shndx != SHN_UNDEF)
      out.push_back({where, "defines the ifunc `" + s.name +
                                "`: its resolver runs when the kernel is loaded, which a kernel "
                                "never needs"});
}

void screen_libraries(const ElfFile& elf, const std::string& where, bool sanitized,
                      std::vector<Refusal>& out) {
  for (const auto& s : elf.sections()) {
    if (s.sh_type != SHT_DYNAMIC || !elf.linked(s)) continue;
    for (const auto& d : elf.entries<Elf64_Dyn>(s)) {
      if (d.d_tag != DT_NEEDED) continue;
      const std::string lib = elf.string_at(*elf.linked(s), d.d_un.d_val);
      if (!allowed_library(lib, sanitized))
        out.push_back({where, "needs the library `" + lib +
                                  "`: a kernel links only libc, libm, libmvec, libstdc++, "
                                  "libgcc_s and libgomp"});
    }
  }
}

std::string file_name(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

std::vector<std::string> imported_symbols(const std::string& so_path) {
  const ElfFile elf(so_path);
  std::vector<std::string> out;
  for (const auto& s : symbols(elf, SHT_DYNSYM))
    if (s.sym.st_shndx == SHN_UNDEF && !s.name.empty()) out.push_back(s.name);
  return out;
}

std::vector<Refusal> screen_object(const std::string& so_path, bool sanitized) {
  const std::string where = file_name(so_path);
  std::vector<Refusal> out;
  try {
    const ElfFile elf(so_path);
    for (const auto& s : symbols(elf, SHT_DYNSYM)) {
      if (s.sym.st_shndx != SHN_UNDEF || s.name.empty()) continue;
      if (const std::string why = import_refusal(s.name, sanitized); !why.empty())
        out.push_back({where, "imports `" + s.name + "`: " + why});
    }
    screen_load_time(elf, where, sanitized, out);
    screen_libraries(elf, where, sanitized, out);
  } catch (const UserError& e) {
    out.push_back({where, std::string("the built shared object cannot be screened: ") + e.what()});
  }
  return out;
}

}  // namespace ollie::build
