// The plain loops' 16-bit loads and stores converted in blocks (emit/half_blocks.h): the
// emitted kernels take the vector conversions (F16C / AVX512_BF16 where this machine has
// them) and give, bit for bit, what the scalar conversions give (which test_half.py checks
// against numpy and ml_dtypes): all 2^16 float16 patterns widened, and a sweep of float32
// values (ties, overflow past 65504, subnormals, NaN payloads) rounded to float16 and
// bfloat16, through the kernels called in-process on the raw 16-bit buffers.
#include <dlfcn.h>

#include <bit>
#include <cstring>

#include "emit/emit.h"
#include "emit/half_blocks.h"
#include "kernel_check.h"
#include "spec/spec.h"

namespace {

using namespace ollie_test;

ollie::ir::Graph spec(const std::string& body, const std::string& dims) {
  return ollie::spec::compile_spec(
      "t.py", "import numpy as np\nimport ml_dtypes\nDIMS = dict(" + dims + ")\n" + body, {});
}

std::string emitted(const ollie::ir::Graph& g) {
  return ollie::emit::emit_kernel(ollie::loops::lower(g, ollie::loops::default_schedule(g)), g);
}

// The kernel of `g` (default schedule) built and loaded; its entry point.
template <class Fn>
Fn* load_kernel(const ollie::ir::Graph& g) {
  const std::string so = build_kernel(g, ollie::loops::default_schedule(g));
  if (so.empty()) return nullptr;
  // RTLD_NODELETE: libgomp's idle threads must not see it unmapped.
  void* handle = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  EXPECT_NE(handle, nullptr) << dlerror();
  return handle ? reinterpret_cast<Fn*>(dlsym(handle, "ollie_kernel")) : nullptr;
}

// float32 patterns where a rounding to float16 or bfloat16 can go wrong: around every
// float16 rounding boundary (ties, their neighbours) from below the smallest subnormal to
// past 65520, every bfloat16 tie, float32 subnormals, infinities and NaNs of every
// payload width (signalling ones included), both signs; 7 more than whole blocks.
std::vector<uint32_t> float32_sweep() {
  std::vector<uint32_t> bits;
  for (uint32_t a = 0x33000000u - (1u << 16); a < 0x47800000u + (1u << 16); a += 1u << 13)
    for (uint32_t d : {0u, 0xfffu, 0x1000u, 0x1001u}) bits.push_back(a + d);
  for (uint64_t a = 0; a < (uint64_t{1} << 31); a += 1u << 16)
    for (uint32_t d : {0x7fffu, 0x8000u, 0x8001u, 0x18000u}) bits.push_back(uint32_t(a) + d);
  for (uint32_t m = 1; m < (1u << 23); m = m * 3 + 1) bits.push_back(m);  // subnormals
  for (int k = 0; k < 23; ++k) bits.push_back(0x7f800000u | (1u << k));   // NaNs
  bits.push_back(0x7f800000u);
  const size_t n = bits.size();
  for (size_t i = 0; i < n; ++i) bits.push_back(bits[i] | 0x80000000u);
  while (bits.size() % ollie::emit::kHalfBlockLanes != 7) bits.push_back(0x3f800000u);
  return bits;
}

TEST(HalfBlocks, PlainLoopsConvertTheirSixteenBitElementsInBlocks) {
  const std::string widen = emitted(
      spec("def f(x: \"f16[N]\") -> \"f32[N]\":\n    return x.astype(np.float32)\n", "N=100"));
  EXPECT_NE(widen.find("ollie_half::ollie_vload<ollie_half::f32x16>(&x["), std::string::npos)
      << widen;
  const std::string narrow = emitted(
      spec("def f(x: \"f32[N]\") -> \"f16[N]\":\n    return x.astype(np.float16)\n", "N=100"));
  EXPECT_NE(narrow.find("ollie_half::ollie_vstore(&out0["), std::string::npos) << narrow;
  // A vectorized sum's chunks too.
  const std::string sum = emitted(
      spec("def f(x: \"f16[M, N]\") -> \"f32[M]\":\n    return x.astype(np.float32).sum(axis=-1)\n",
           "M=3, N=100"));
  EXPECT_NE(sum.find("ollie_half::ollie_vload<ollie_half::f32x16>(&x["), std::string::npos) << sum;
}

TEST(HalfBlocks, EveryFloat16PatternWidensExactly) {
  const int64_t n = (1 << 16) + 7;
  const auto g = spec("def f(x: \"f16[N]\") -> \"f32[N]\":\n    return x.astype(np.float32)\n",
                      "N=" + std::to_string(n));
  using Fn = void(const uint16_t*, float*, const int64_t*);
  Fn* kernel = load_kernel<Fn>(g);
  ASSERT_NE(kernel, nullptr);
  std::vector<uint16_t> x(n);
  for (int64_t i = 0; i < n; ++i) x[i] = static_cast<uint16_t>(i);
  std::vector<float> out(n);
  kernel(x.data(), out.data(), &n);
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(std::bit_cast<uint32_t>(out[i]),
              std::bit_cast<uint32_t>(ollie_half::f16_to_float(x[i])))
        << "float16 " << std::hex << x[i];
}

TEST(HalfBlocks, Float32RoundsToFloat16AndBfloat16AsTheScalarConversions) {
  const std::vector<uint32_t> bits = float32_sweep();
  const int64_t n = static_cast<int64_t>(bits.size());
  std::vector<float> x(n);
  std::memcpy(x.data(), bits.data(), bits.size() * sizeof(uint32_t));
  using Fn = void(const float*, uint16_t*, const int64_t*);
  const std::string dims = "N=" + std::to_string(n);
  for (const bool f16 : {true, false}) {
    const auto g = spec(std::string("def f(x: \"f32[N]\") -> \"") + (f16 ? "f16" : "bf16") +
                            "[N]\":\n    return x.astype(" +
                            (f16 ? "np.float16" : "ml_dtypes.bfloat16") + ")\n",
                        dims);
    Fn* kernel = load_kernel<Fn>(g);
    ASSERT_NE(kernel, nullptr);
    std::vector<uint16_t> out(n);
    kernel(x.data(), out.data(), &n);
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(out[i], f16 ? ollie_half::float_to_f16(x[i]) : ollie_half::float_to_bf16(x[i]))
          << (f16 ? "float16" : "bfloat16") << " of float32 " << std::hex << bits[i];
  }
}

}  // namespace
