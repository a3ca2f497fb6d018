// Tests for npy/: round trips, files written by real numpy (tests/npy/data, made by
// make_fixtures.py), byte-exact agreement with np.save, malformed input, and robustness.
#include "npy/npy.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>

#include "support/error.h"

namespace ollie::npy {
namespace {

namespace fs = std::filesystem;

const fs::path kData = fs::path(OLLIE_SOURCE_DIR) / "tests" / "npy" / "data";

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void spit(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A fresh directory per test, removed afterwards.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() /
            ("ollie_npy_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  fs::path path_;
};

Array make(ElementType type, std::vector<int64_t> shape, std::vector<double> data) {
  Array a;
  a.type = type;
  a.shape = std::move(shape);
  a.data = std::move(data);
  return a;
}

// Bitwise comparison so that NaN and -0.0 are checked too.
void expect_same(const Array& want, const Array& got) {
  EXPECT_EQ(want.type, got.type);
  EXPECT_EQ(want.shape, got.shape);
  ASSERT_EQ(want.data.size(), got.data.size());
  for (size_t i = 0; i < want.data.size(); ++i) {
    bool same = std::isnan(want.data[i])
                    ? std::isnan(got.data[i])
                    : std::bit_cast<uint64_t>(want.data[i]) == std::bit_cast<uint64_t>(got.data[i]);
    EXPECT_TRUE(same) << "element " << i << ": want " << want.data[i] << ", got " << got.data[i];
  }
}

// Expects `f` to throw a UserError whose message contains every one of `parts`.
template <typename F>
void expect_user_error(F&& f, std::initializer_list<std::string> parts) {
  try {
    f();
    ADD_FAILURE() << "expected a UserError containing '" << *parts.begin() << "'";
  } catch (const UserError& e) {
    std::string message = e.what();
    for (const auto& part : parts) {
      EXPECT_NE(message.find(part), std::string::npos)
          << "message '" << message << "' lacks '" << part << "'";
    }
  }
}

// A hand-made .npy: version 1.0 with the given header text and payload.
std::string raw_npy(const std::string& header, const std::string& payload, int major = 1) {
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  size_t n = header.size();
  out += static_cast<char>(n & 0xff);
  out += static_cast<char>((n >> 8) & 0xff);
  if (major != 1) {
    out += static_cast<char>((n >> 16) & 0xff);
    out += static_cast<char>((n >> 24) & 0xff);
  }
  return out + header + payload;
}

std::string f4_bytes(std::initializer_list<float> values) {
  std::string out;
  for (float v : values) out.append(reinterpret_cast<const char*>(&v), sizeof v);
  return out;
}

// ---------------------------------------------------------------------------
// Round trips

TEST(NpyRoundTrip, EveryTypeAndShape) {
  const std::vector<std::vector<int64_t>> shapes = {{}, {0}, {3}, {2, 3, 4}};
  const std::vector<ElementType> types = {ElementType::F32, ElementType::F64, ElementType::I32,
                                          ElementType::I64, ElementType::Bool};
  for (ElementType type : types) {
    for (const auto& shape : shapes) {
      int64_t n = 1;
      for (int64_t d : shape) n *= d;
      std::vector<double> data;
      for (int64_t i = 0; i < n; ++i) {
        double v = type == ElementType::Bool ? static_cast<double>(i % 2)
                   : type == ElementType::F32 || type == ElementType::F64 ? (i - 5) * 0.25
                                                                          : (i - 5) * 1000.0;
        data.push_back(v);
      }
      Array a = make(type, shape, data);
      SCOPED_TRACE(testing::Message()
                   << "type " << static_cast<int>(type) << " ndim " << shape.size());
      std::string bytes = serialize_npy(a);
      expect_same(a, parse_npy(bytes, "mem.npy"));
    }
  }
}

TEST(NpyRoundTrip, SpecialFloatValuesAreExact) {
  Array f64 = make(
      ElementType::F64, {6},
      {0.1, -0.0, std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN(),
       std::numeric_limits<double>::denorm_min(), 1e308});
  expect_same(f64, parse_npy(serialize_npy(f64), "x"));
  // f32 stores the float cast; values already in f32 come back unchanged.
  Array f32 =
      make(ElementType::F32, {3}, {static_cast<float>(0.1), -0.0, static_cast<float>(3.0e38)});
  expect_same(f32, parse_npy(serialize_npy(f32), "x"));
  Array rounded = make(ElementType::F32, {1}, {0.1});
  EXPECT_EQ(parse_npy(serialize_npy(rounded), "x").data[0], static_cast<double>(0.1f));
}

TEST(NpyRoundTrip, LayoutIsAlignedVersion1) {
  std::string bytes = serialize_npy(make(ElementType::F32, {2, 3}, std::vector<double>(6, 1.0)));
  ASSERT_GE(bytes.size(), 10u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  size_t header_len =
      static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
  EXPECT_EQ((10 + header_len) % 64, 0u);
  EXPECT_EQ(bytes[10 + header_len - 1], '\n');
  EXPECT_EQ(
      bytes.substr(10, 60).find("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"), 0u);
  EXPECT_EQ(bytes.size(), 10 + header_len + 24);
}

TEST(NpyRoundTrip, HugeHeaderSwitchesToVersion2) {
  // 22000 dims of size 1 make a header longer than 65535 bytes.
  Array a = make(ElementType::F64, std::vector<int64_t>(22000, 1), {42.0});
  std::string bytes = serialize_npy(a);
  EXPECT_EQ(bytes[6], '\x02');
  size_t header_len = 0;
  for (int i = 0; i < 4; ++i)
    header_len |= size_t{static_cast<unsigned char>(bytes[8 + i])} << (8 * i);
  EXPECT_GT(header_len, 65535u);
  EXPECT_EQ((12 + header_len) % 64, 0u);
  expect_same(a, parse_npy(bytes, "big.npy"));
}

TEST(NpyRoundTrip, WriteRejectsInconsistentOrUnrepresentableArrays) {
  expect_user_error(
      [] {
        serialize_npy(make(ElementType::F32, {2, 3}, {1, 2}));
      },
      {"(2, 3)", "needs 6 values but holds 2"});
  expect_user_error([] { serialize_npy(make(ElementType::I32, {1}, {0.5})); },
                    {"0.5", "int32", "not an integer"});
  expect_user_error([] { serialize_npy(make(ElementType::I32, {1}, {3e9})); }, {"int32"});
  expect_user_error([] { serialize_npy(make(ElementType::I64, {1}, {std::nan("")})); }, {"int64"});
  expect_user_error([] { serialize_npy(make(ElementType::F64, {-1}, {})); }, {"negative"});
}

TEST(NpyFiles, WriteAndReadBack) {
  TempDir dir;
  Array a = make(ElementType::I64, {2, 2}, {1, -2, 3, 1LL << 40});
  write_npy((dir / "a.npy").string(), a);
  expect_same(a, read_npy((dir / "a.npy").string()));
  EXPECT_EQ(slurp(dir / "a.npy"), serialize_npy(a));
  expect_user_error([&] { read_npy((dir / "missing.npy").string()); },
                    {"cannot open '", "missing.npy': No such file or directory"});
  expect_user_error([&] { write_npy((dir / "no" / "dir.npy").string(), a); },
                    {"cannot write '", "dir.npy'"});
}

// ---------------------------------------------------------------------------
// Files written by numpy

TEST(NumpyFixtures, ReadsEveryType) {
  expect_same(make(ElementType::F32, {2, 3}, {0.1f, -2.5, 3.0, 1e-7f, 65504.0, -0.0}),
              read_npy((kData / "f4.npy").string()));
  const double inf = std::numeric_limits<double>::infinity();
  expect_same(make(ElementType::F64, {6}, {0.1, -2.5, 1e300, inf, -inf, std::nan("")}),
              read_npy((kData / "f8.npy").string()));
  expect_same(make(ElementType::I32, {2, 2}, {1, -2, 2147483647, -2147483648.0}),
              read_npy((kData / "i4.npy").string()));
  expect_same(make(ElementType::I64, {4}, {0, -1, 1099511627776.0, -9007199254740992.0}),
              read_npy((kData / "i8.npy").string()));
  expect_same(make(ElementType::Bool, {4}, {1, 0, 1, 1}), read_npy((kData / "b1.npy").string()));
}

// float16 and bfloat16 (ml_dtypes' '<V2'): each 16-bit value exactly, specials included.
TEST(NumpyFixtures, ReadsFloat16AndBfloat16) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  expect_same(
      make(ElementType::F16, {2, 4},
           {1.0, -2.5, 65504.0, 0x1p-24, -0.0, inf, nan, 0x1.998p-4}),  // 0.1 rounded to float16
      read_npy((kData / "f2_values.npy").string()));
  expect_same(make(ElementType::BF16, {3, 3},
                   {1.0, -2.5, 65536.0,  // 65504 rounded to bfloat16
                    0x1p-133, 0x1.c4p127, -0.0, inf, nan, 0x1.9ap-4}),
              read_npy((kData / "bf16.npy").string()));
}

TEST(NumpyFixtures, ScalarEmptyAndZeroSizedShapes) {
  expect_same(make(ElementType::F64, {}, {3.5}), read_npy((kData / "scalar.npy").string()));
  expect_same(make(ElementType::F32, {0}, {}), read_npy((kData / "empty.npy").string()));
  expect_same(make(ElementType::I32, {2, 0, 3}, {}),
              read_npy((kData / "zeros_2x0x3.npy").string()));
}

TEST(NumpyFixtures, FortranOrderBecomesCOrder) {
  std::vector<double> want(24);
  for (int i = 0; i < 24; ++i) want[i] = i;  // np.arange(24).reshape(2, 3, 4), C order
  expect_same(make(ElementType::F64, {2, 3, 4}, want), read_npy((kData / "fortran.npy").string()));
}

TEST(NumpyFixtures, BigEndianIsByteSwapped) {
  expect_same(make(ElementType::F32, {3}, {1.5, -2.0, 0.1f}),
              read_npy((kData / "big_f4.npy").string()));
  expect_same(make(ElementType::I64, {2, 2}, {1, -2, 3, 1099511627776.0}),
              read_npy((kData / "big_i8.npy").string()));
  expect_same(make(ElementType::F16, {3}, {1.5, -2.0, 0x1.998p-4}),
              read_npy((kData / "big_f2.npy").string()));
  // ml_dtypes writes '>V2' with bytes in either order: refused rather than guessed.
  expect_user_error([] { read_npy((kData / "big_bf16.npy").string()); },
                    {"big_bf16.npy", "'>V2'", "ambiguous", "'<V2'"});
}

TEST(NumpyFixtures, FormatVersions2And3) {
  Array want = make(ElementType::F32, {3, 2}, {0, 1, 2, 3, 4, 5});
  std::string v2 = slurp(kData / "v2.npy");
  std::string v3 = slurp(kData / "v3.npy");
  ASSERT_EQ(v2[6], '\x02');
  ASSERT_EQ(v3[6], '\x03');
  expect_same(want, parse_npy(v2, "v2.npy"));
  expect_same(want, parse_npy(v3, "v3.npy"));
}

TEST(NumpyFixtures, SerializeMatchesNpSaveByteForByte) {
  for (const char* name : {"f4.npy", "f8.npy", "i4.npy", "i8.npy", "b1.npy", "scalar.npy",
                           "empty.npy", "zeros_2x0x3.npy", "f2_values.npy", "bf16.npy"}) {
    std::string bytes = slurp(kData / name);
    EXPECT_EQ(serialize_npy(parse_npy(bytes, name)), bytes) << name;
  }
}

TEST(NumpyFixtures, UnsupportedDtypesAreRejectedClearly) {
  expect_user_error([] { read_npy((kData / "void2.npy").string()); },
                    {"void2.npy", "'|V2'", "raw bytes", "ml_dtypes.bfloat16"});
  expect_user_error([] { read_npy((kData / "u1.npy").string()); },
                    {"u1.npy", "unsupported dtype '|u1'", "'<f4'", "astype"});
  expect_user_error([] { read_npy((kData / "object.npy").string()); },
                    {"object.npy", "'|O'", "object arrays are not supported"});
  expect_user_error([] { read_npy((kData / "i8_too_big.npy").string()); },
                    {"i8_too_big.npy", "9007199254740993", "2^53"});
}

TEST(NumpyFixtures, Savez) {
  ArrayList arrays = read_npz((kData / "savez.npz").string());
  ASSERT_EQ(arrays.size(), 3u);
  EXPECT_EQ(arrays[0].first, "zeta");  // file order, not sorted
  EXPECT_EQ(arrays[1].first, "alpha");
  EXPECT_EQ(arrays[2].first, "mid");
  expect_same(make(ElementType::F32, {2, 3}, {0, 1, 2, 3, 4, 5}), arrays[0].second);
  expect_same(make(ElementType::I64, {3}, {1, 2, 3}), arrays[1].second);
  expect_same(make(ElementType::Bool, {}, {1}), arrays[2].second);
}

TEST(NumpyFixtures, SavezCompressed) {
  ArrayList arrays = read_npz((kData / "savez_compressed.npz").string());
  ASSERT_EQ(arrays.size(), 3u);
  EXPECT_EQ(arrays[0].first, "x");
  EXPECT_EQ(arrays[1].first, "y");
  EXPECT_EQ(arrays[2].first, "z");
  expect_same(make(ElementType::F32, {2, 3}, {0, 1, 2, 3, 4, 5}), arrays[0].second);
  expect_same(make(ElementType::F64, {3}, {1, 2, 3}), arrays[1].second);
  expect_same(make(ElementType::Bool, {}, {1}), arrays[2].second);
  EXPECT_TRUE(read_npz((kData / "empty.npz").string()).empty());
}

// The files numpy must be able to read (checked by make_fixtures.py --check). They are
// rewritten when OLLIE_REGEN_FIXTURES is set; otherwise the .npy bytes must not change.
TEST(NumpyFixtures, GoldenFilesWrittenByOllie) {
  ArrayList arrays = {
      {"f4", make(ElementType::F32, {2, 3}, {0.5, -1.25, 3.0, 0.1f, 1e30f, -0.0})},
      {"f8", make(ElementType::F64, {3}, {0.1, -2.5, 1e300})},
      {"i4", make(ElementType::I32, {2, 1}, {7, -8})},
      {"i8", make(ElementType::I64, {2}, {1099511627776.0, -3})},
      {"b1", make(ElementType::Bool, {3}, {1, 0, 1})},
      {"scalar", make(ElementType::F64, {}, {2.25})},
      {"empty", make(ElementType::F32, {0}, {})},
      {"f2", make(ElementType::F16, {2, 2}, {0.5, -65504.0, 0x1p-24, INFINITY})},
      {"bf16", make(ElementType::BF16, {4}, {0.5, -0x1.c4p127, 0x1p-133, -INFINITY})},
      {"cube", make(ElementType::F32, {2, 3, 4}, {})},
  };
  for (int i = 0; i < 24; ++i) arrays.back().second.data.push_back(i);
  bool regen = std::getenv("OLLIE_REGEN_FIXTURES") != nullptr;
  if (regen) write_npz((kData / "ollie_written.npz").string(), arrays);
  for (const auto& [key, array] : arrays) {
    fs::path path = kData / ("ollie_written_" + key + ".npy");
    if (regen) write_npy(path.string(), array);
    EXPECT_EQ(slurp(path), serialize_npy(array)) << key;
  }
  ArrayList back = read_npz((kData / "ollie_written.npz").string());
  ASSERT_EQ(back.size(), arrays.size());
  for (size_t i = 0; i < arrays.size(); ++i) {
    EXPECT_EQ(back[i].first, arrays[i].first);
    expect_same(arrays[i].second, back[i].second);
  }
}

// ---------------------------------------------------------------------------
// npz written by ollie

TEST(Npz, RoundTripPreservesOrderAndStores) {
  TempDir dir;
  ArrayList arrays = {{"w", make(ElementType::F32, {64, 64}, std::vector<double>(4096, 1.0))},
                      {"b", make(ElementType::F64, {2}, {0.1, 0.2})},
                      {"a", make(ElementType::Bool, {}, {0})}};
  std::string path = (dir / "x.npz").string();
  write_npz(path, arrays);
  // Stored uncompressed, like numpy.savez (floats barely compress; deflate cost more
  // time than the whole reference evaluation): at least the 16 KiB of payload.
  EXPECT_GT(fs::file_size(path), 4096u * 4u);
  ArrayList back = read_npz(path);
  ASSERT_EQ(back.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(back[i].first, arrays[i].first);
    expect_same(arrays[i].second, back[i].second);
  }
  // Overwriting replaces the old archive rather than appending to it.
  write_npz(path, {arrays[1]});
  EXPECT_EQ(read_npz(path).size(), 1u);
  write_npz(path, {});
  EXPECT_TRUE(read_npz(path).empty());
}

TEST(Npz, WriteErrors) {
  TempDir dir;
  Array a = make(ElementType::F64, {1}, {1});
  expect_user_error(
      [&] {
        write_npz((dir / "d.npz").string(), {{"k", a}, {"k", a}});
      },
      {"d.npz", "'k' is used twice"});
  expect_user_error(
      [&] {
        write_npz((dir / "e.npz").string(), {{"k", make(ElementType::I32, {1}, {0.5})}});
      },
      {"e.npz:k.npy", "int32"});
  EXPECT_FALSE(fs::exists(dir / "e.npz"));
  expect_user_error(
      [&] {
        write_npz((dir / "no" / "f.npz").string(), {{"k", a}});
      },
      {"cannot", "f.npz'"});
}

TEST(Npz, ReadErrors) {
  TempDir dir;
  expect_user_error([] { read_npz("x.npz"); }, {"cannot open 'x.npz': No such file or directory"});
  spit(dir / "junk.npz", "this is not a zip archive at all, just some text");
  expect_user_error([&] { read_npz((dir / "junk.npz").string()); },
                    {"cannot open '", "junk.npz': Not a zip archive"});
  // A valid zip whose entry is not an .npy (written via the npz writer with a renamed key
  // is impossible, so build it from a real archive by patching the name bytes).
  std::string zip = slurp(kData / "savez.npz");
  for (size_t pos = 0; (pos = zip.find("mid.npy", pos)) != std::string::npos;) {
    zip.replace(pos, 7, "mid.txt");
  }
  spit(dir / "txt.npz", zip);
  expect_user_error([&] { read_npz((dir / "txt.npz").string()); },
                    {"txt.npz", "entry 'mid.txt' is not a .npy file"});
  // An entry whose .npy is broken is named as file.npz:entry.npy.
  zip = slurp(kData / "savez.npz");
  size_t magic = zip.find("\x93NUMPY", zip.find("alpha.npy"));
  ASSERT_NE(magic, std::string::npos);
  zip[magic + 6] = 7;  // version 7.0; the CRC no longer matches either
  spit(dir / "bad.npz", zip);
  expect_user_error([&] { read_npz((dir / "bad.npz").string()); }, {"bad.npz:alpha.npy"});
}

// ---------------------------------------------------------------------------
// Malformed .npy

TEST(NpyMalformed, BadMagicAndVersion) {
  expect_user_error([] { parse_npy("", "e.npy"); }, {"e.npy: not a .npy file", "magic"});
  expect_user_error([] { parse_npy("PK\x03\x04 zip data", "z.npy"); }, {"z.npy: not a .npy"});
  expect_user_error([] { parse_npy(std::string("\x93NUMPY", 6), "t.npy"); },
                    {"t.npy", "truncated"});
  expect_user_error([] { parse_npy(std::string("\x93NUMPY\x04\x00\x10\x00", 10), "v.npy"); },
                    {"v.npy", "version 4.0", "1.0, 2.0 and 3.0"});
  expect_user_error([] { parse_npy(std::string("\x93NUMPY\x01\x00\x10", 9), "l.npy"); },
                    {"l.npy", "truncated", "header length"});
  expect_user_error([] { parse_npy(std::string("\x93NUMPY\x01\x00\xff\x00{", 11), "h.npy"); },
                    {"h.npy", "truncated", "header claims 255 bytes but only 1"});
}

TEST(NpyMalformed, HeaderVariantsThatNumpyAccepts) {
  std::string data = f4_bytes({1, 2});
  Array want = make(ElementType::F32, {2}, {1, 2});
  // Key order, spacing, no trailing comma, double quotes, Python 2 long sizes.
  for (const char* header : {"{'shape': (2,), 'fortran_order': False, 'descr': '<f4'}\n",
                             "{ 'descr' : '<f4' ,'fortran_order':False,'shape':( 2 , ) , }   \n",
                             "{\"descr\": \"<f4\", \"fortran_order\": True, \"shape\": (2L,)}"}) {
    expect_same(want, parse_npy(raw_npy(header, data), "ok.npy"));
    expect_same(want, parse_npy(raw_npy(header, data, 2), "ok.npy"));
  }
  Array scalar = make(ElementType::F32, {}, {1});
  expect_same(scalar, parse_npy(raw_npy("{'descr': '<f4', 'fortran_order': False, 'shape': ()}",
                                        f4_bytes({1})),
                                "s.npy"));
}

TEST(NpyMalformed, HeadersThatDoNotParse) {
  std::string data = f4_bytes({1, 2});
  struct Case {
    const char* header;
    const char* expect;
  };
  for (const Case& c : std::initializer_list<Case>{
           {"", "must be a Python dict"},
           {"['descr']", "must be a Python dict"},
           {"{'descr': '<f4', 'fortran_order': False}", "missing key 'shape'"},
           {"{'fortran_order': False, 'shape': (2,)}", "missing key 'descr'"},
           {"{'descr': '<f4', 'shape': (2,)}", "missing key 'fortran_order'"},
           {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}",
            "unexpected key 'x'"},
           {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}",
            "'descr' appears twice"},
           {"{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}", "True or False"},
           {"{'descr': '<f4', 'fortran_order': False, 'shape': (2)}", "trailing comma"},
           {"{'descr': '<f4', 'fortran_order': False, 'shape': [2]}", "must be a tuple"},
           {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,) x}", "expected ',' or '}'"},
           {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} junk", "after the closing"},
           {"{'descr' '<f4', 'fortran_order': False, 'shape': (2,)}", "expected ':'"},
           {"{'descr': '<f4, 'fortran_order': False, 'shape': (2,)}", "expected ',' or '}'"},
           {"{'descr': '<f4", "unterminated string"},
           {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,)}",
            "structured dtypes"},
           {"{'descr': '<f4', 'fortran_order': False, 'shape': (a,)}", "non-negative integer"},
       }) {
    expect_user_error([&] { parse_npy(raw_npy(c.header, data), "bad.npy"); },
                      {"bad.npy: ", c.expect});
  }
}

TEST(NpyMalformed, ShapeSizes) {
  expect_user_error(
      [] {
        parse_npy(raw_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}", ""),
                  "neg.npy");
      },
      {"neg.npy", "negative size"});
  expect_user_error(
      [] {
        parse_npy(raw_npy("{'descr': '<f4', 'fortran_order': False, "
                          "'shape': (99999999999999999999,)}",
                          ""),
                  "huge.npy");
      },
      {"huge.npy", "too large for a 64-bit integer"});
  expect_user_error(
      [] {
        parse_npy(raw_npy("{'descr': '<f8', 'fortran_order': False, "
                          "'shape': (4294967296, 4294967296)}",
                          ""),
                  "ovf.npy");
      },
      {"ovf.npy", "(4294967296, 4294967296) is too large"});
  expect_user_error(
      [] {
        parse_npy(raw_npy("{'descr': '<f8', 'fortran_order': False, "
                          "'shape': (2305843009213693952,)}",
                          ""),
                  "bytes.npy");
      },
      {"bytes.npy", "too large"});
  // A huge but representable shape with no data must fail on size, not try to allocate.
  expect_user_error(
      [] {
        parse_npy(raw_npy("{'descr': '<f8', 'fortran_order': False, "
                          "'shape': (100000000000,)}",
                          ""),
                  "big.npy");
      },
      {"big.npy", "truncated data", "800000000000 bytes but the file has 0"});
}

TEST(NpyMalformed, DataSizeMismatch) {
  const char* header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2)}";
  expect_user_error(
      [&] {
        parse_npy(raw_npy(header, f4_bytes({1, 2, 3})), "short.npy");
      },
      {"short.npy: truncated data", "4 f4 values of shape (2, 2)",
       "need 16 bytes but the file has 12"});
  expect_user_error(
      [&] {
        parse_npy(raw_npy(header, f4_bytes({1, 2, 3, 4, 5})), "long.npy");
      },
      {"long.npy: data size mismatch", "need 16 bytes but the file has 20"});
  // Truncating a real numpy file anywhere is an error, never a crash.
  std::string good = slurp(kData / "f8.npy");
  for (size_t n = 0; n < good.size(); ++n) {
    EXPECT_THROW(parse_npy(good.substr(0, n), "cut.npy"), UserError) << n;
  }
}

TEST(NpyMalformed, RejectedDtypesByDescr) {
  for (auto [descr, expect] : std::initializer_list<std::pair<const char*, const char*>>{
           {"|V2", "raw bytes (numpy void)"},
           {"<V4", "raw bytes (numpy void)"},
           {"|O", "object arrays are not supported"},
           {"<c8", "unsupported dtype '<c8'"},
           {"<U3", "unsupported dtype '<U3'"},
           {"", "unsupported dtype ''"},
       }) {
    std::string header =
        std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': ()}";
    expect_user_error([&] { parse_npy(raw_npy(header, "12345678"), "d.npy"); },
                      {"d.npy: ", expect});
  }
}

// ---------------------------------------------------------------------------
// Robustness: random mutations of valid files either parse or throw UserError.

TEST(NpyRobustness, RandomMutationsNeverCrash) {
  std::mt19937 rng(12345);
  std::vector<std::string> seeds = {slurp(kData / "fortran.npy"), slurp(kData / "big_i8.npy"),
                                    slurp(kData / "v3.npy"), slurp(kData / "scalar.npy")};
  int parsed = 0, rejected = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    std::string bytes = seeds[iter % seeds.size()];
    int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !bytes.empty(); ++e) {
      size_t pos = rng() % bytes.size();
      switch (rng() % 4) {
        case 0: bytes[pos] = static_cast<char>(rng()); break;
        case 1: bytes[pos] = "0123456789(),:' -{}LTF"[rng() % 22]; break;
        case 2: bytes.erase(pos, 1 + rng() % 3); break;
        default: bytes.insert(pos, 1, static_cast<char>(rng())); break;
      }
    }
    try {
      Array a = parse_npy(bytes, "fuzz.npy");
      int64_t n = 1;
      for (int64_t d : a.shape) n *= d;
      ASSERT_EQ(static_cast<size_t>(n), a.data.size());
      ++parsed;
    } catch (const UserError&) {
      ++rejected;
    }
  }
  // Both outcomes must occur, or the mutations are not exercising the parser.
  EXPECT_GT(parsed, 100);
  EXPECT_GT(rejected, 100);
}

TEST(NpzRobustness, RandomMutationsNeverCrash) {
  TempDir dir;
  std::mt19937 rng(777);
  std::vector<std::string> seeds = {slurp(kData / "savez.npz"),
                                    slurp(kData / "savez_compressed.npz")};
  std::string path = (dir / "m.npz").string();
  for (int iter = 0; iter < 1500; ++iter) {
    std::string bytes = seeds[iter % seeds.size()];
    for (int e = 0; e < 1 + static_cast<int>(rng() % 3); ++e) {
      bytes[rng() % bytes.size()] = static_cast<char>(rng());
    }
    spit(path, bytes);
    try {
      read_npz(path);
    } catch (const UserError&) {
    }
  }
}

}  // namespace
}  // namespace ollie::npy
