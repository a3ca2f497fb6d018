// Reading and writing numpy .npy and .npz files (npz through libzip), the format of
// every tensor ollie exchanges with users and with Python. Owns nothing of the pipeline.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ollie::npy {

// F16: numpy float16 ('<f2'); BF16: ml_dtypes.bfloat16, which numpy saves as the 2-byte
// void '<V2' (np.load gives it back as '|V2': `.view(ml_dtypes.bfloat16)` restores it).
enum class ElementType { F32, F64, I32, I64, Bool, F16, BF16 };

// A dense C-order array as stored in a file; values widened to double.
struct Array {
  ElementType type = ElementType::F64;
  std::vector<int64_t> shape;
  std::vector<double> data;
};

// A named collection, in file order.
using ArrayList = std::vector<std::pair<std::string, Array>>;

// Parses / serializes one .npy (version 1.0-3.0; little- or big-endian f2, f4, f8, i4, i8,
// b1 and '<V2' (bfloat16; any other void type is refused);
// C or Fortran order on input, C order on output). Throws UserError naming `what`
// (the file or entry) on malformed data or an unsupported dtype.
Array parse_npy(const std::string& bytes, const std::string& what);
std::string serialize_npy(const Array& array);

Array read_npy(const std::string& path);
void write_npy(const std::string& path, const Array& array);
// .npz: a zip of "<name>.npy" entries. Reads stored or deflated entries (numpy.savez /
// savez_compressed); writes stored ones, like numpy.savez (floats barely compress).
ArrayList read_npz(const std::string& path);
void write_npz(const std::string& path, const ArrayList& arrays);

}  // namespace ollie::npy
