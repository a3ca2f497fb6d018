// The .npy format (versions 1.0-3.0): header parsing, dtype decoding with byte
// swapping and Fortran-to-C reordering on read, and the canonical numpy layout on write.
#include "npy/npy.h"

#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>

#include "support/error.h"
#include "support/half.h"

namespace ollie::npy {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
// numpy aligns the data start so that the array can be memory-mapped efficiently.
constexpr size_t kAlign = 64;
// int64 values beyond 2^53 would silently lose digits when widened to double.
constexpr int64_t kMaxExactInt = int64_t{1} << 53;

[[noreturn]] void fail(const std::string& what, const std::string& message) {
  throw UserError(what + ": " + message);
}

std::string shape_repr(const std::vector<int64_t>& shape) {
  std::string out = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(shape[i]);
  }
  if (shape.size() == 1) out += ",";
  return out + ")";
}

// ---------------------------------------------------------------------------
// Header: a Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// Only the literal forms numpy writes (and hand-written variants of them) are accepted.

struct Header {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& what) : s_(text), what_(what) {}

  Header parse() {
    Header header;
    bool have_descr = false, have_order = false, have_shape = false;
    skip_ws();
    expect('{', "the header must be a Python dict starting with '{'");
    skip_ws();
    while (!at('}')) {
      std::string key = parse_string("a quoted key such as 'descr'");
      skip_ws();
      expect(':', "expected ':' after key '" + key + "'");
      skip_ws();
      if (key == "descr") {
        if (have_descr) error("key 'descr' appears twice");
        have_descr = true;
        if (at('[')) {
          fail(what_,
               "structured dtypes (a list 'descr') are not supported; save a plain "
               "numeric array instead");
        }
        header.descr = parse_string("the dtype string, e.g. '<f4'");
      } else if (key == "fortran_order") {
        if (have_order) error("key 'fortran_order' appears twice");
        have_order = true;
        header.fortran_order = parse_bool();
      } else if (key == "shape") {
        if (have_shape) error("key 'shape' appears twice");
        have_shape = true;
        header.shape = parse_shape();
      } else {
        error("unexpected key '" + key +
              "'; a .npy header has exactly the keys 'descr', 'fortran_order' and 'shape'");
      }
      skip_ws();
      if (at(',')) {
        ++pos_;
        skip_ws();
      } else if (!at('}')) {
        error("expected ',' or '}' after the value of '" + key + "'");
      }
    }
    ++pos_;
    skip_ws();
    if (pos_ != s_.size()) error("unexpected text after the closing '}'");
    if (!have_descr) error("missing key 'descr'");
    if (!have_order) error("missing key 'fortran_order'");
    if (!have_shape) error("missing key 'shape'");
    return header;
  }

 private:
  [[noreturn]] void error(const std::string& message) const {
    fail(what_, "malformed .npy header (" + message + ") at offset " + std::to_string(pos_) +
                    " of header " + quoted_header());
  }

  std::string quoted_header() const {
    std::string shown;
    for (char c : s_.substr(0, 200)) {
      // Keep the message printable whatever bytes the file holds.
      auto u = static_cast<unsigned char>(c);
      if (c == '\n')
        shown += "\\n";
      else if (u < 0x20 || u >= 0x7f)
        shown += '?';
      else
        shown += c;
    }
    if (s_.size() > 200) shown += "...";
    return "\"" + shown + "\"";
  }

  bool at(char c) const { return pos_ < s_.size() && s_[pos_] == c; }

  void skip_ws() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) {
      ++pos_;
    }
  }

  void expect(char c, const std::string& message) {
    if (!at(c)) error(message);
    ++pos_;
  }

  std::string parse_string(const std::string& expected) {
    if (!at('\'') && !at('"')) error("expected " + expected);
    char quote = s_[pos_++];
    size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] != quote) {
      if (s_[pos_] == '\\') error("escape sequences are not supported in header strings");
      ++pos_;
    }
    if (pos_ >= s_.size()) error("unterminated string");
    return s_.substr(start, pos_++ - start);
  }

  bool parse_bool() {
    if (s_.compare(pos_, 4, "True") == 0) {
      pos_ += 4;
      return true;
    }
    if (s_.compare(pos_, 5, "False") == 0) {
      pos_ += 5;
      return false;
    }
    error("'fortran_order' must be True or False");
  }

  int64_t parse_dim() {
    if (at('-')) {
      fail(what_, "shape has a negative size at offset " + std::to_string(pos_) + " of header " +
                      quoted_header() + "; sizes must be >= 0");
    }
    if (pos_ >= s_.size() || s_[pos_] < '0' || s_[pos_] > '9') {
      error("expected a non-negative integer size in 'shape'");
    }
    int64_t value = 0;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      int digit = s_[pos_] - '0';
      if (value > (std::numeric_limits<int64_t>::max() - digit) / 10) {
        fail(what_, "shape has a size too large for a 64-bit integer in header " + quoted_header());
      }
      value = value * 10 + digit;
      ++pos_;
    }
    if (at('L')) ++pos_;  // files written by Python 2 numpy spell longs as 5L
    return value;
  }

  std::vector<int64_t> parse_shape() {
    if (!at('(')) error("'shape' must be a tuple such as (), (5,) or (2, 3)");
    ++pos_;
    std::vector<int64_t> shape;
    bool trailing_comma = false;
    skip_ws();
    while (!at(')')) {
      shape.push_back(parse_dim());
      skip_ws();
      trailing_comma = false;
      if (at(',')) {
        ++pos_;
        trailing_comma = true;
        skip_ws();
      } else if (!at(')')) {
        error("expected ',' or ')' in 'shape'");
      }
    }
    ++pos_;
    // In Python (5) is the integer 5, not a tuple; numpy rejects it too.
    if (shape.size() == 1 && !trailing_comma) {
      error("a one-dimensional 'shape' needs a trailing comma, as in (5,)");
    }
    return shape;
  }

  const std::string& s_;
  const std::string& what_;
  size_t pos_ = 0;
};

// ---------------------------------------------------------------------------
// Dtypes

struct Dtype {
  ElementType type;
  size_t itemsize;
  bool swap;  // file byte order differs from the host's
};

const char* type_code(ElementType t) {
  switch (t) {
    case ElementType::F32: return "f4";
    case ElementType::F64: return "f8";
    case ElementType::I32: return "i4";
    case ElementType::I64: return "i8";
    case ElementType::Bool: return "b1";
    case ElementType::F16: return "f2";
    case ElementType::BF16: return "V2";
  }
  return "?";
}

size_t type_size(ElementType t) {
  switch (t) {
    case ElementType::F32: return 4;
    case ElementType::F64: return 8;
    case ElementType::I32: return 4;
    case ElementType::I64: return 8;
    case ElementType::Bool: return 1;
    case ElementType::F16:
    case ElementType::BF16: return 2;
  }
  return 0;
}

Dtype decode_descr(const std::string& descr, const std::string& what) {
  const std::string supported =
      "ollie reads float16 ('<f2'), float32 ('<f4'), float64 ('<f8'), int32 ('<i4'), int64 "
      "('<i8'), bool ('|b1') and ml_dtypes.bfloat16 ('<V2'); convert with "
      ".astype(np.float32) (or another of these) before saving";
  std::string code = descr;
  bool big = std::endian::native == std::endian::big;
  if (!code.empty() && (code[0] == '<' || code[0] == '>' || code[0] == '|' || code[0] == '=')) {
    if (code[0] == '<') big = false;
    if (code[0] == '>') big = true;
    code = code.substr(1);
  }
  bool swap = big != (std::endian::native == std::endian::big);
  if (code == "f4") return {ElementType::F32, 4, swap};
  if (code == "f8") return {ElementType::F64, 8, swap};
  if (code == "i4") return {ElementType::I32, 4, swap};
  if (code == "i8") return {ElementType::I64, 8, swap};
  if (code == "b1" || code == "?") return {ElementType::Bool, 1, false};
  if (code == "f2" || code == "e") return {ElementType::F16, 2, swap};
  // ml_dtypes.bfloat16 is a 2-byte void with a little-endian byte order ('<V2'); numpy's own
  // void (structured data, raw bytes) has none ('|V2') and is no number. ml_dtypes' '>V2'
  // is ambiguous: its arrays of that dtype hold swapped bytes or not depending on how they
  // were made (np.array(..., dtype) keeps little-endian bytes, astype swaps).
  if (descr == "<V2") return {ElementType::BF16, 2, false};
  if (descr == ">V2") {
    fail(what,
         "dtype '>V2' (a big-endian bfloat16) is ambiguous: ml_dtypes writes such files "
         "with bytes in either order; save it little-endian, as "
         "np.save(path, x.astype(ml_dtypes.bfloat16)) does ('<V2')");
  }
  if (!code.empty() && code[0] == 'V') {
    fail(what, "dtype '" + descr +
                   "' is raw bytes (numpy void), not numbers; ollie reads a 2-byte void only "
                   "as ml_dtypes.bfloat16 saves it ('<V2'). Save a bfloat16 array as "
                   "np.save(path, x.astype(ml_dtypes.bfloat16)), or another dtype (" +
                   supported + ")");
  }
  if (!code.empty() && code[0] == 'O') {
    fail(what, "dtype '" + descr +
                   "': object arrays are not supported; save a numeric "
                   "array (" +
                   supported + ")");
  }
  fail(what, "unsupported dtype '" + descr + "'; " + supported);
}

template <typename U>
U load(const char* p, bool swap) {
  U u;
  std::memcpy(&u, p, sizeof u);
  if (swap) {
    if constexpr (sizeof(U) == 2)
      u = __builtin_bswap16(u);
    else if constexpr (sizeof(U) == 4)
      u = __builtin_bswap32(u);
    else
      u = __builtin_bswap64(u);
  }
  return u;
}

// Reads `count` elements in file order, widened to double.
std::vector<double> decode_values(const char* p, size_t count, const Dtype& dt,
                                  const std::string& what) {
  std::vector<double> out(count);
  for (size_t i = 0; i < count; ++i, p += dt.itemsize) {
    switch (dt.type) {
      case ElementType::F32: out[i] = std::bit_cast<float>(load<uint32_t>(p, dt.swap)); break;
      case ElementType::F64: out[i] = std::bit_cast<double>(load<uint64_t>(p, dt.swap)); break;
      case ElementType::I32: out[i] = static_cast<int32_t>(load<uint32_t>(p, dt.swap)); break;
      case ElementType::I64: {
        auto v = static_cast<int64_t>(load<uint64_t>(p, dt.swap));
        if (v > kMaxExactInt || v < -kMaxExactInt) {
          fail(what, "int64 value " + std::to_string(v) + " (element " + std::to_string(i) +
                         " in file order) is larger than 2^53 in magnitude and cannot be held "
                         "exactly; ollie keeps values as doubles");
        }
        out[i] = static_cast<double>(v);
        break;
      }
      case ElementType::Bool: out[i] = *p != 0 ? 1.0 : 0.0; break;
      case ElementType::F16: out[i] = ollie_half::f16_to_float(load<uint16_t>(p, dt.swap)); break;
      case ElementType::BF16: out[i] = ollie_half::bf16_to_float(load<uint16_t>(p, dt.swap)); break;
    }
  }
  return out;
}

// Fortran order stores the first index fastest; ollie's arrays are C order.
std::vector<double> fortran_to_c(const std::vector<double>& f, const std::vector<int64_t>& shape) {
  size_t n = shape.size();
  std::vector<int64_t> fstride(n, 1);
  for (size_t k = 1; k < n; ++k) fstride[k] = fstride[k - 1] * shape[k - 1];
  std::vector<double> c(f.size());
  std::vector<int64_t> idx(n, 0);
  int64_t foff = 0;
  for (size_t ci = 0; ci < c.size(); ++ci) {
    c[ci] = f[static_cast<size_t>(foff)];
    // Advance the C-order multi-index (last index fastest), keeping foff in sync.
    for (size_t k = n; k-- > 0;) {
      if (++idx[k] < shape[k]) {
        foff += fstride[k];
        break;
      }
      foff -= (idx[k] - 1) * fstride[k];
      idx[k] = 0;
    }
  }
  return c;
}

std::string type_descr(ElementType t) {
  return std::string(t == ElementType::Bool ? "|" : "<") + type_code(t);
}

template <typename U>
void store_le(std::string& out, U u) {
  if constexpr (std::endian::native == std::endian::big) {
    if constexpr (sizeof(U) == 2)
      u = __builtin_bswap16(u);
    else if constexpr (sizeof(U) == 4)
      u = __builtin_bswap32(u);
    else
      u = __builtin_bswap64(u);
  }
  char buf[sizeof(U)];
  std::memcpy(buf, &u, sizeof u);
  out.append(buf, sizeof u);
}

template <typename I>
I to_integer(double v, size_t index, const char* type_name) {
  // The range test is written so that NaN fails it too.
  constexpr double lo = static_cast<double>(std::numeric_limits<I>::min());
  constexpr double hi = -lo;  // 2^31 or 2^63, exactly representable
  if (!(v >= lo && v < hi) || std::trunc(v) != v) {
    std::ostringstream os;
    os.precision(17);
    os << "cannot write value " << v << " (element " << index << ") as " << type_name
       << ": it is not an integer in range";
    throw UserError(os.str());
  }
  return static_cast<I>(v);
}

std::string read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError("cannot open '" + path + "': " + std::strerror(errno));
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw UserError("cannot read '" + path + "': " + std::strerror(errno));
  return bytes;
}

}  // namespace

Array parse_npy(const std::string& bytes, const std::string& what) {
  if (bytes.size() < kMagicLen || bytes.compare(0, kMagicLen, kMagic, kMagicLen) != 0) {
    fail(what,
         "not a .npy file (it does not start with the magic bytes \\x93NUMPY); write "
         "it with numpy.save");
  }
  if (bytes.size() < kMagicLen + 2) fail(what, "truncated .npy file: no format version");
  int major = static_cast<unsigned char>(bytes[6]);
  int minor = static_cast<unsigned char>(bytes[7]);
  if ((major != 1 && major != 2 && major != 3) || minor != 0) {
    fail(what, "unsupported .npy format version " + std::to_string(major) + "." +
                   std::to_string(minor) + "; ollie reads versions 1.0, 2.0 and 3.0");
  }
  size_t len_bytes = major == 1 ? 2 : 4;
  size_t header_start = kMagicLen + 2 + len_bytes;
  if (bytes.size() < header_start) fail(what, "truncated .npy file: no header length");
  uint64_t header_len = 0;
  for (size_t i = 0; i < len_bytes; ++i) {
    header_len |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
  }
  if (header_len > bytes.size() - header_start) {
    fail(what, "truncated .npy file: the header claims " + std::to_string(header_len) +
                   " bytes but only " + std::to_string(bytes.size() - header_start) + " follow");
  }
  Header header = HeaderParser(bytes.substr(header_start, header_len), what).parse();
  Dtype dt = decode_descr(header.descr, what);

  uint64_t count = 1;
  for (int64_t d : header.shape) {
    if (__builtin_mul_overflow(count, static_cast<uint64_t>(d), &count) ||
        count > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      fail(what, "shape " + shape_repr(header.shape) +
                     " is too large: its element count "
                     "overflows a 64-bit integer");
    }
  }
  uint64_t need = 0;
  if (__builtin_mul_overflow(count, static_cast<uint64_t>(dt.itemsize), &need)) {
    fail(what, "shape " + shape_repr(header.shape) + " is too large: its byte size overflows");
  }
  size_t data_start = header_start + header_len;
  uint64_t have = bytes.size() - data_start;
  std::string desc = std::to_string(count) + " " + type_code(dt.type) + " values of shape " +
                     shape_repr(header.shape);
  if (have < need) {
    fail(what, "truncated data: " + desc + " need " + std::to_string(need) +
                   " bytes but the file has " + std::to_string(have));
  }
  if (have > need) {
    fail(what, "data size mismatch: " + desc + " need " + std::to_string(need) +
                   " bytes but the file has " + std::to_string(have) +
                   " (extra bytes after the array)");
  }

  Array array;
  array.type = dt.type;
  array.shape = header.shape;
  array.data = decode_values(bytes.data() + data_start, static_cast<size_t>(count), dt, what);
  if (header.fortran_order && header.shape.size() > 1) {
    array.data = fortran_to_c(array.data, header.shape);
  }
  return array;
}

std::string serialize_npy(const Array& array) {
  uint64_t count = 1;
  for (int64_t d : array.shape) {
    if (d < 0)
      throw UserError("cannot write an array with negative size in shape " +
                      shape_repr(array.shape));
    if (__builtin_mul_overflow(count, static_cast<uint64_t>(d), &count)) {
      throw UserError("cannot write an array of shape " + shape_repr(array.shape) +
                      ": its element count overflows");
    }
  }
  if (count != array.data.size()) {
    throw UserError("cannot write an array of shape " + shape_repr(array.shape) + ": it needs " +
                    std::to_string(count) + " values but holds " +
                    std::to_string(array.data.size()));
  }

  std::string dict = "{'descr': '" + type_descr(array.type) +
                     "', 'fortran_order': False, 'shape': " + shape_repr(array.shape) + ", }";
  // Version 1.0 has a 2-byte header length; fall back to 2.0 only when it overflows.
  int major = 1;
  size_t prefix = kMagicLen + 2 + 2;
  size_t total = (prefix + dict.size() + 1 + kAlign - 1) / kAlign * kAlign;
  if (total - prefix > 0xffff) {
    major = 2;
    prefix = kMagicLen + 2 + 4;
    total = (prefix + dict.size() + 1 + kAlign - 1) / kAlign * kAlign;
  }
  size_t header_len = total - prefix;
  dict.append(header_len - dict.size() - 1, ' ');
  dict += '\n';

  std::string out(kMagic, kMagicLen);
  out += static_cast<char>(major);
  out += '\0';
  for (size_t i = 0; i < (major == 1 ? 2u : 4u); ++i) {
    out += static_cast<char>((header_len >> (8 * i)) & 0xff);
  }
  out += dict;
  out.reserve(out.size() + array.data.size() * type_size(array.type));
  for (size_t i = 0; i < array.data.size(); ++i) {
    double v = array.data[i];
    switch (array.type) {
      case ElementType::F32: store_le(out, std::bit_cast<uint32_t>(static_cast<float>(v))); break;
      case ElementType::F64: store_le(out, std::bit_cast<uint64_t>(v)); break;
      case ElementType::I32:
        store_le(out, static_cast<uint32_t>(to_integer<int32_t>(v, i, "int32")));
        break;
      case ElementType::I64:
        store_le(out, static_cast<uint64_t>(to_integer<int64_t>(v, i, "int64")));
        break;
      case ElementType::Bool:
        // numpy's astype(bool): any nonzero value (NaN included) is True.
        out += static_cast<char>(v != 0.0 ? 1 : 0);
        break;
      case ElementType::F16: store_le(out, ollie_half::double_to_f16(v)); break;
      case ElementType::BF16: store_le(out, ollie_half::double_to_bf16(v)); break;
    }
  }
  return out;
}

Array read_npy(const std::string& path) { return parse_npy(read_file_bytes(path), path); }

void write_npy(const std::string& path, const Array& array) {
  std::string bytes;
  try {
    bytes = serialize_npy(array);
  } catch (const UserError& e) {
    throw UserError(path + ": " + e.what());
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw UserError("cannot write '" + path + "': " + std::strerror(errno));
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) throw UserError("cannot write '" + path + "': " + std::strerror(errno));
}

}  // namespace ollie::npy
