// The .npz format: a zip archive of "<name>.npy" entries (numpy.savez and
// savez_compressed), read and written through libzip.
#include <zip.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <list>
#include <memory>
#include <set>

#include "npy/npy.h"
#include "support/error.h"

namespace ollie::npy {
namespace {

constexpr char kSuffix[] = ".npy";
constexpr size_t kSuffixLen = 4;

std::string zip_code_message(int code) {
  zip_error_t error;
  zip_error_init_with_code(&error, code);
  std::string message = zip_error_strerror(&error);
  zip_error_fini(&error);
  return message;
}

struct ArchiveCloser {
  void operator()(zip_t* archive) const { zip_discard(archive); }
};
using Archive = std::unique_ptr<zip_t, ArchiveCloser>;

struct FileCloser {
  void operator()(zip_file_t* file) const { zip_fclose(file); }
};

std::string read_entry(zip_t* archive, zip_uint64_t index, const std::string& what) {
  std::unique_ptr<zip_file_t, FileCloser> file(zip_fopen_index(archive, index, 0));
  if (!file) {
    throw UserError(what +
                    ": cannot read the entry: " + zip_error_strerror(zip_get_error(archive)));
  }
  // Read in chunks rather than trusting the declared size, which a damaged archive may
  // overstate; libzip checks the CRC when the entry ends.
  std::string bytes;
  char buffer[1 << 16];
  for (;;) {
    zip_int64_t n = zip_fread(file.get(), buffer, sizeof buffer);
    if (n < 0) {
      throw UserError(what + ": cannot read the entry: " + zip_file_strerror(file.get()));
    }
    if (n == 0) break;
    bytes.append(buffer, static_cast<size_t>(n));
  }
  return bytes;
}

}  // namespace

ArrayList read_npz(const std::string& path) {
  // Read the file ourselves so that a missing file is reported with the system's words.
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw UserError("cannot open '" + path + "': " + std::strerror(errno));
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (in.bad()) throw UserError("cannot read '" + path + "': " + std::strerror(errno));
  }

  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* source = zip_source_buffer_create(bytes.data(), bytes.size(), 0, &error);
  if (!source) {
    std::string message = zip_error_strerror(&error);
    zip_error_fini(&error);
    throw UserError("cannot open '" + path + "': " + message);
  }
  Archive archive(zip_open_from_source(source, ZIP_RDONLY, &error));
  if (!archive) {
    std::string message = zip_error_strerror(&error);
    zip_error_fini(&error);
    zip_source_free(source);
    throw UserError("cannot open '" + path + "': " + message +
                    " (an .npz must be a zip archive written by numpy.savez)");
  }
  zip_error_fini(&error);

  ArrayList arrays;
  std::set<std::string> seen;
  zip_int64_t entries = zip_get_num_entries(archive.get(), 0);
  for (zip_int64_t i = 0; i < entries; ++i) {
    auto index = static_cast<zip_uint64_t>(i);
    const char* raw_name = zip_get_name(archive.get(), index, 0);
    if (!raw_name) {
      throw UserError("cannot read '" + path + "': entry " + std::to_string(i) + ": " +
                      zip_error_strerror(zip_get_error(archive.get())));
    }
    std::string name = raw_name;
    if (name.size() <= kSuffixLen ||
        name.compare(name.size() - kSuffixLen, kSuffixLen, kSuffix) != 0) {
      throw UserError(path + ": entry '" + name +
                      "' is not a .npy file; an .npz must hold "
                      "only '<name>.npy' entries, as numpy.savez writes");
    }
    std::string key = name.substr(0, name.size() - kSuffixLen);
    if (!seen.insert(key).second) {
      throw UserError(path + ": the array '" + key + "' appears twice in the archive");
    }
    std::string what = path + ":" + name;
    arrays.emplace_back(key, parse_npy(read_entry(archive.get(), index, what), what));
  }
  return arrays;
}

void write_npz(const std::string& path, const ArrayList& arrays) {
  // Serialize everything first so a bad array leaves no half-written archive behind.
  std::list<std::string> payloads;  // stable addresses: libzip reads them at zip_close
  std::set<std::string> seen;
  for (const auto& [key, array] : arrays) {
    if (!seen.insert(key).second) {
      throw UserError("cannot write '" + path + "': the array name '" + key +
                      "' is used twice; names in an .npz must be unique");
    }
    try {
      payloads.push_back(serialize_npy(array));
    } catch (const UserError& e) {
      throw UserError(path + ":" + key + kSuffix + ": " + e.what());
    }
  }

  if (arrays.empty()) {
    // libzip deletes an archive with no entries on close; numpy writes an empty zip,
    // which is just the end-of-central-directory record.
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    static constexpr char kEmptyZip[22] = {'P', 'K', 5, 6};
    out.write(kEmptyZip, sizeof kEmptyZip);
    out.close();
    if (!out) throw UserError("cannot write '" + path + "': " + std::strerror(errno));
    return;
  }

  int code = 0;
  Archive archive(zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &code));
  if (!archive) {
    throw UserError("cannot open '" + path + "' for writing: " + zip_code_message(code));
  }
  auto zip_failure = [&](const std::string& doing) {
    return UserError("cannot write '" + path + "': " + doing + ": " +
                     zip_error_strerror(zip_get_error(archive.get())));
  };
  auto payload = payloads.begin();
  for (const auto& [key, array] : arrays) {
    std::string name = key + kSuffix;
    zip_source_t* source = zip_source_buffer(archive.get(), payload->data(), payload->size(), 0);
    ++payload;
    if (!source) throw zip_failure("entry '" + name + "'");
    zip_int64_t index = zip_file_add(archive.get(), name.c_str(), source, ZIP_FL_ENC_UTF_8);
    if (index < 0) {
      zip_source_free(source);
      throw zip_failure("entry '" + name + "'");
    }
    if (zip_set_file_compression(archive.get(), static_cast<zip_uint64_t>(index), ZIP_CM_STORE, 0) <
        0) {
      throw zip_failure("entry '" + name + "'");
    }
  }
  if (zip_close(archive.get()) < 0) throw zip_failure("closing the archive");
  archive.release();  // zip_close freed it
}

}  // namespace ollie::npy
