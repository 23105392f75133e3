// CUB baseline for gpu_reduce's benchmarks: a few cub::DeviceReduce / cub::DeviceScan calls
// behind a plain C ABI, loaded at run time by tools/cli/src/cub.rs (libloading).
//
// Built against the CUB of nvcc's CUDA toolkit, or against a CCCL checkout (its -I paths ahead
// of the toolkit's; see build.sh). cub_version() says which CUB it holds.
//
// Every op NAME exports two functions:
//   int cub_temp_bytes_NAME(unsigned long long n, size_t* bytes);
//   int cub_NAME(void* temp, size_t temp_bytes, const T* in, T* out,
//                unsigned long long n, void* stream);
// (`in` and `out` of different types for the sum_*_to_f32 ops: const __half* / const
// __nv_bfloat16* in, float* out.) The segmented sums, the reduce and scan by key and the
// compactions (select, partition, unique, run-length encoding, unique by key; of u32, f32 and
// u64), further down, take more arguments; each says its two signatures above it.
// All return the cudaError_t as int (0 = success). `stream` is a cudaStream_t; a driver-API
// CUstream is the same object. The call runs in the CUDA context current on the calling
// thread (the runtime API adopts a context made current through the driver API).
// `temp` must be at least the queried size; a null `temp` is rejected (CUB would otherwise
// treat the call as a size query and silently do nothing).
//
// Element counts: with CUB >= 2.7 (CUDA 12.8+, CUDA 13's CUB 3.x) num_items is a template
// parameter and CUB picks 32-bit offsets for 32-bit counts and 64-bit offsets for 64-bit ones.
// We pass `unsigned int` when n fits (CUB's fastest path, what a typical caller gets) and
// `unsigned long long` otherwise, so n > 2^32 works. The query and the run choose the same way.
// With an older CUB (int num_items in DeviceScan), n > INT_MAX returns cudaErrorInvalidValue.

// The half types first, so CUB sees them (CCCL's support for __half / __nv_bfloat16 keys on
// these headers).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cub/cub.cuh>
#include <cuda_runtime.h>

#include <climits>
#include <cstddef>
#include <cstdint>

// Built against a CCCL checkout, build.sh and `host bench --cccl` define this to the
// CUB_VERSION of the checkout's cub/version.cuh: any other value means the toolkit's own CUB
// was included instead (the checkout's -I paths must come first).
#if defined(CUB_SHIM_EXPECT_VERSION) && CUB_VERSION != CUB_SHIM_EXPECT_VERSION
#  error "CUB_VERSION is not the CCCL checkout's: its -I paths must come before the toolkit's include directories"
#endif

#if CUB_VERSION >= 200700
#  define CUB_SHIM_WIDE_NUM_ITEMS 1
#else
#  define CUB_SHIM_WIDE_NUM_ITEMS 0
#endif

// DeviceSegmentedReduce::Sum(temp, bytes, in, out, num_segments, int segment_size, stream), the
// fixed-segment-size overload, first appears in CCCL 3.1.0 (CUB_VERSION 300100; its docs say
// "versionadded 3.2.0", but the v3.1.0 tag has it). Older CUBs (CUDA 13.0's 3.0.x) get the rows'
// offsets from a counting iterator through a transform instead, never stored. Defining
// CUB_SHIM_FIXED_SEGMENTS_VIA_OFFSETS takes that path with any CUB (to compare the two).
#if CUB_VERSION >= 300100 && !defined(CUB_SHIM_FIXED_SEGMENTS_VIA_OFFSETS)
#  define CUB_SHIM_FIXED_SEGMENT_SIZE 1
#else
#  define CUB_SHIM_FIXED_SEGMENT_SIZE 0
#  include <thrust/iterator/counting_iterator.h>
#  include <thrust/iterator/transform_iterator.h>
#endif

namespace
{
// Calls f(num_items) with the narrowest num_items type that holds n.
template <class F>
int shim_dispatch(unsigned long long n, F&& f)
{
#if CUB_SHIM_WIDE_NUM_ITEMS
  if (n <= 0xFFFFFFFFull)
  {
    return static_cast<int>(f(static_cast<unsigned int>(n)));
  }
  return static_cast<int>(f(n));
#else
  if (n > static_cast<unsigned long long>(INT_MAX))
  {
    return static_cast<int>(cudaErrorInvalidValue);
  }
  return static_cast<int>(f(static_cast<int>(n)));
#endif
}

// The sum of the *_to_f32 reductions: f32 + f32, the half input converted first, so CUB's
// accumulator (the type of op(init, input): float with a float init) is f32. cuda::std::plus<>
// would not do: `float + __half` is ambiguous (the built-in + after __half's conversion to
// float, or __half's operator+ after float's conversion to __half).
struct shim_plus_f32
{
  __host__ __device__ float operator()(float a, float b) const
  {
    return a + b;
  }
  __host__ __device__ float operator()(float a, __half b) const
  {
    return a + __half2float(b);
  }
  __host__ __device__ float operator()(float a, __nv_bfloat16 b) const
  {
    return a + __bfloat162float(b);
  }
};

#if !CUB_SHIM_FIXED_SEGMENT_SIZE
// Row r's first element, r * row_len: a row's begin offset from a counting iterator.
struct shim_row_offset
{
  long long row_len;
  __host__ __device__ long long operator()(long long row) const
  {
    return row * row_len;
  }
};
#endif
} // namespace

// CALL may use: temp (void*), tb (size_t lvalue), in (const TIN*), out (TOUT*), nn (num_items),
// s (cudaStream_t).
#define CUB_SHIM_OP_IO(NAME, TIN, TOUT, CALL)                                                   \
  extern "C" int cub_temp_bytes_##NAME(unsigned long long n, size_t* bytes)                      \
  {                                                                                              \
    if (bytes == nullptr)                                                                        \
    {                                                                                            \
      return static_cast<int>(cudaErrorInvalidValue);                                            \
    }                                                                                            \
    void* temp     = nullptr;                                                                    \
    size_t tb      = 0;                                                                          \
    const TIN* in  = nullptr;                                                                    \
    TOUT* out      = nullptr;                                                                    \
    cudaStream_t s = nullptr;                                                                    \
    int rc         = shim_dispatch(n, [&](auto nn) { return CALL; });                            \
    if (rc == 0)                                                                                 \
    {                                                                                            \
      *bytes = tb;                                                                               \
    }                                                                                            \
    return rc;                                                                                   \
  }                                                                                              \
  extern "C" int cub_##NAME(                                                                     \
    void* temp, size_t temp_bytes, const TIN* in, TOUT* out, unsigned long long n, void* stream) \
  {                                                                                              \
    if (temp == nullptr)                                                                         \
    {                                                                                            \
      return static_cast<int>(cudaErrorInvalidValue);                                            \
    }                                                                                            \
    size_t tb      = temp_bytes;                                                                 \
    cudaStream_t s = static_cast<cudaStream_t>(stream);                                          \
    return shim_dispatch(n, [&](auto nn) { return CALL; });                                      \
  }

// The same with one element type T for input and output.
#define CUB_SHIM_OP(NAME, T, CALL) CUB_SHIM_OP_IO(NAME, T, T, CALL)

CUB_SHIM_OP(sum_f32, float, cub::DeviceReduce::Sum(temp, tb, in, out, nn, s))
CUB_SHIM_OP(sum_f64, double, cub::DeviceReduce::Sum(temp, tb, in, out, nn, s))
CUB_SHIM_OP(sum_i32, int, cub::DeviceReduce::Sum(temp, tb, in, out, nn, s))
CUB_SHIM_OP(min_f32, float, cub::DeviceReduce::Min(temp, tb, in, out, nn, s))
CUB_SHIM_OP(max_f32, float, cub::DeviceReduce::Max(temp, tb, in, out, nn, s))
CUB_SHIM_OP(inclusive_sum_i32, int, cub::DeviceScan::InclusiveSum(temp, tb, in, out, nn, s))
CUB_SHIM_OP(inclusive_sum_f32, float, cub::DeviceScan::InclusiveSum(temp, tb, in, out, nn, s))
CUB_SHIM_OP(exclusive_sum_i32, int, cub::DeviceScan::ExclusiveSum(temp, tb, in, out, nn, s))
// Optional to the loader (OPTIONAL_OPS in tools/cli/src/cub.rs): a shim built before this op
// existed still loads, without CUB's f64 scan.
CUB_SHIM_OP(inclusive_sum_f64, double, cub::DeviceScan::InclusiveSum(temp, tb, in, out, nn, s))

// Half-precision sums, CUB's defaults: DeviceReduce::Sum accumulates in the element type
// (__half + __half -> __half) and writes one __half / __nv_bfloat16.
//   int cub_temp_bytes_sum_f16(unsigned long long n, size_t* bytes);
//   int cub_sum_f16(void* temp, size_t temp_bytes, const __half* in, __half* out,
//                   unsigned long long n, void* stream);
//   int cub_temp_bytes_sum_bf16(unsigned long long n, size_t* bytes);
//   int cub_sum_bf16(void* temp, size_t temp_bytes, const __nv_bfloat16* in,
//                    __nv_bfloat16* out, unsigned long long n, void* stream);
CUB_SHIM_OP(sum_f16, __half, cub::DeviceReduce::Sum(temp, tb, in, out, nn, s))
CUB_SHIM_OP(sum_bf16, __nv_bfloat16, cub::DeviceReduce::Sum(temp, tb, in, out, nn, s))

// Half-precision inputs summed in f32 into one float, as this library does: DeviceReduce::Reduce
// with init 0.0f and shim_plus_f32; CUB's accumulator type is that of op(init, input), float.
//   int cub_temp_bytes_sum_f16_to_f32(unsigned long long n, size_t* bytes);
//   int cub_sum_f16_to_f32(void* temp, size_t temp_bytes, const __half* in, float* out,
//                          unsigned long long n, void* stream);
//   int cub_temp_bytes_sum_bf16_to_f32(unsigned long long n, size_t* bytes);
//   int cub_sum_bf16_to_f32(void* temp, size_t temp_bytes, const __nv_bfloat16* in, float* out,
//                           unsigned long long n, void* stream);
CUB_SHIM_OP_IO(sum_f16_to_f32,
               __half,
               float,
               cub::DeviceReduce::Reduce(temp, tb, in, out, nn, shim_plus_f32{}, 0.0f, s))
CUB_SHIM_OP_IO(sum_bf16_to_f32,
               __nv_bfloat16,
               float,
               cub::DeviceReduce::Reduce(temp, tb, in, out, nn, shim_plus_f32{}, 0.0f, s))

// Half-precision inclusive sums (accumulating in the element type, CUB's default).
//   int cub_temp_bytes_inclusive_sum_f16(unsigned long long n, size_t* bytes);
//   int cub_inclusive_sum_f16(void* temp, size_t temp_bytes, const __half* in, __half* out,
//                             unsigned long long n, void* stream);
//   int cub_temp_bytes_inclusive_sum_bf16(unsigned long long n, size_t* bytes);
//   int cub_inclusive_sum_bf16(void* temp, size_t temp_bytes, const __nv_bfloat16* in,
//                              __nv_bfloat16* out, unsigned long long n, void* stream);
CUB_SHIM_OP(inclusive_sum_f16, __half, cub::DeviceScan::InclusiveSum(temp, tb, in, out, nn, s))
CUB_SHIM_OP(inclusive_sum_bf16, __nv_bfloat16, cub::DeviceScan::InclusiveSum(temp, tb, in, out, nn, s))

// Segmented f32 sums, DeviceSegmentedReduce::Sum (an empty segment sums to 0): segment i is
// in[begin_offsets[i] .. end_offsets[i]). CSR offsets (num_segments + 1 of them) serve as both:
// begin = offsets, end = offsets + 1. The query needs no offsets (CUB asks for none).
//   int cub_temp_bytes_segmented_sum_f32(int64_t num_segments, size_t* bytes);
//   int cub_segmented_sum_f32(void* temp, size_t temp_bytes, const float* in, float* out,
//                             int64_t num_segments, const unsigned long long* begin_offsets,
//                             const unsigned long long* end_offsets, void* stream);
// A negative num_segments, or a null `bytes` / `temp`, is cudaErrorInvalidValue.
extern "C" int cub_temp_bytes_segmented_sum_f32(int64_t num_segments, size_t* bytes)
{
  if (bytes == nullptr || num_segments < 0)
  {
    return static_cast<int>(cudaErrorInvalidValue);
  }
  void* temp                       = nullptr;
  size_t tb                        = 0;
  const float* in                  = nullptr;
  float* out                       = nullptr;
  const unsigned long long* offset = nullptr;
  const cudaError_t rc =
    cub::DeviceSegmentedReduce::Sum(temp, tb, in, out, num_segments, offset, offset, cudaStream_t{});
  if (rc == cudaSuccess)
  {
    // At least 1, as CUB's other queries: with no segments some CUBs leave it at 0.
    *bytes = tb > 0 ? tb : 1;
  }
  return static_cast<int>(rc);
}

extern "C" int cub_segmented_sum_f32(
  void* temp,
  size_t temp_bytes,
  const float* in,
  float* out,
  int64_t num_segments,
  const unsigned long long* begin_offsets,
  const unsigned long long* end_offsets,
  void* stream)
{
  if (temp == nullptr || num_segments < 0)
  {
    return static_cast<int>(cudaErrorInvalidValue);
  }
  size_t tb = temp_bytes;
  return static_cast<int>(cub::DeviceSegmentedReduce::Sum(
    temp, tb, in, out, num_segments, begin_offsets, end_offsets, static_cast<cudaStream_t>(stream)));
}

// The f32 sum of each row of a row-major num_rows x row_len matrix: out[r] = sum of
// in[r * row_len .. (r + 1) * row_len). With CUB >= 3.1 DeviceSegmentedReduce::Sum's
// fixed-segment-size overload (its segment size is an int: row_len > INT_MAX is
// cudaErrorInvalidValue); with an older CUB the offset overload, its offsets r * row_len from a
// counting iterator (cub_segmented_sum_fixed_native() says which). The temp size depends on
// both dimensions (CUB 3.6 reduces rows longer than a tile in two passes through it).
//   int cub_temp_bytes_segmented_sum_fixed_f32(int64_t num_rows, int64_t row_len, size_t* bytes);
//   int cub_segmented_sum_fixed_f32(void* temp, size_t temp_bytes, const float* in, float* out,
//                                   int64_t num_rows, int64_t row_len, void* stream);
// A negative num_rows or row_len, or a null `bytes` / `temp`, is cudaErrorInvalidValue.
namespace
{
cudaError_t shim_segmented_sum_fixed(
  void* temp, size_t& tb, const float* in, float* out, int64_t num_rows, int64_t row_len, cudaStream_t s)
{
  if (num_rows < 0 || row_len < 0)
  {
    return cudaErrorInvalidValue;
  }
#if CUB_SHIM_FIXED_SEGMENT_SIZE
  if (row_len > static_cast<int64_t>(INT_MAX))
  {
    return cudaErrorInvalidValue;
  }
  return cub::DeviceSegmentedReduce::Sum(temp, tb, in, out, num_rows, static_cast<int>(row_len), s);
#else
  const auto begin = thrust::make_transform_iterator(
    thrust::make_counting_iterator<long long>(0), shim_row_offset{static_cast<long long>(row_len)});
  return cub::DeviceSegmentedReduce::Sum(temp, tb, in, out, num_rows, begin, begin + 1, s);
#endif
}
} // namespace

extern "C" int cub_temp_bytes_segmented_sum_fixed_f32(int64_t num_rows, int64_t row_len, size_t* bytes)
{
  if (bytes == nullptr)
  {
    return static_cast<int>(cudaErrorInvalidValue);
  }
  size_t tb             = 0;
  const cudaError_t rc = shim_segmented_sum_fixed(nullptr, tb, nullptr, nullptr, num_rows, row_len, cudaStream_t{});
  if (rc == cudaSuccess)
  {
    *bytes = tb > 0 ? tb : 1; // as above
  }
  return static_cast<int>(rc);
}

extern "C" int cub_segmented_sum_fixed_f32(
  void* temp, size_t temp_bytes, const float* in, float* out, int64_t num_rows, int64_t row_len, void* stream)
{
  if (temp == nullptr)
  {
    return static_cast<int>(cudaErrorInvalidValue);
  }
  size_t tb = temp_bytes;
  return static_cast<int>(
    shim_segmented_sum_fixed(temp, tb, in, out, num_rows, row_len, static_cast<cudaStream_t>(stream)));
}

// 1 when cub_segmented_sum_fixed_f32 uses CUB's fixed-segment-size overload, 0 when it goes
// through offset iterators.
extern "C" int cub_segmented_sum_fixed_native(void)
{
  return CUB_SHIM_FIXED_SEGMENT_SIZE;
}

// Sum of each run of equal consecutive keys, DeviceReduce::ReduceByKey with cuda::std::plus<>:
// unique_out[j] is run j's key, aggregates_out[j] the f32 sum of its values, and
// *num_runs_out the number of runs. CUB writes the run count through NumRunsOutputIteratorT,
// deduced from the pointer passed: here unsigned long long* (CUB assigns its offset type to
// *num_runs_out: unsigned int when n fits in 32 bits, unsigned long long above). unique_out and
// aggregates_out need room for n elements (as many runs as there may be).
//   int cub_temp_bytes_reduce_by_key_sum_u32_f32(unsigned long long n, size_t* bytes);
//   int cub_reduce_by_key_sum_u32_f32(void* temp, size_t temp_bytes, const unsigned int* keys_in,
//                                     unsigned int* unique_out, const float* values_in,
//                                     float* aggregates_out, unsigned long long* num_runs_out,
//                                     unsigned long long n, void* stream);
extern "C" int cub_temp_bytes_reduce_by_key_sum_u32_f32(unsigned long long n, size_t* bytes)
{
  if (bytes == nullptr)
  {
    return static_cast<int>(cudaErrorInvalidValue);
  }
  void* temp                     = nullptr;
  size_t tb                      = 0;
  const unsigned int* keys_in    = nullptr;
  unsigned int* unique_out       = nullptr;
  const float* values_in         = nullptr;
  float* aggregates_out          = nullptr;
  unsigned long long* num_runs   = nullptr;
  int rc = shim_dispatch(n, [&](auto nn) {
    return cub::DeviceReduce::ReduceByKey(
      temp, tb, keys_in, unique_out, values_in, aggregates_out, num_runs, ::cuda::std::plus<>{}, nn, cudaStream_t{});
  });
  if (rc == 0)
  {
    *bytes = tb;
  }
  return rc;
}

extern "C" int cub_reduce_by_key_sum_u32_f32(
  void* temp,
  size_t temp_bytes,
  const unsigned int* keys_in,
  unsigned int* unique_out,
  const float* values_in,
  float* aggregates_out,
  unsigned long long* num_runs_out,
  unsigned long long n,
  void* stream)
{
  if (temp == nullptr)
  {
    return static_cast<int>(cudaErrorInvalidValue);
  }
  size_t tb      = temp_bytes;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  return shim_dispatch(n, [&](auto nn) {
    return cub::DeviceReduce::ReduceByKey(
      temp, tb, keys_in, unique_out, values_in, aggregates_out, num_runs_out, ::cuda::std::plus<>{}, nn, s);
  });
}

// Inclusive f32 sum of each run of equal consecutive keys, DeviceScan::InclusiveSumByKey with
// ::cuda::std::equal_to<> (CUB 2.x's default, and CUB 3.x's: cub::Equality is gone there):
// values_out[i] is the sum of values_in over i's run up to and including i. values_out needs
// room for n elements.
//   int cub_temp_bytes_scan_by_key_sum_u32_f32(unsigned long long n, size_t* bytes);
//   int cub_scan_by_key_sum_u32_f32(void* temp, size_t temp_bytes, const unsigned int* keys_in,
//                                   const float* values_in, float* values_out,
//                                   unsigned long long n, void* stream);
extern "C" int cub_temp_bytes_scan_by_key_sum_u32_f32(unsigned long long n, size_t* bytes)
{
  if (bytes == nullptr)
  {
    return static_cast<int>(cudaErrorInvalidValue);
  }
  void* temp                  = nullptr;
  size_t tb                   = 0;
  const unsigned int* keys_in = nullptr;
  const float* values_in      = nullptr;
  float* values_out           = nullptr;
  int rc = shim_dispatch(n, [&](auto nn) {
    return cub::DeviceScan::InclusiveSumByKey(
      temp, tb, keys_in, values_in, values_out, nn, ::cuda::std::equal_to<>{}, cudaStream_t{});
  });
  if (rc == 0)
  {
    *bytes = tb;
  }
  return rc;
}

extern "C" int cub_scan_by_key_sum_u32_f32(
  void* temp,
  size_t temp_bytes,
  const unsigned int* keys_in,
  const float* values_in,
  float* values_out,
  unsigned long long n,
  void* stream)
{
  if (temp == nullptr)
  {
    return static_cast<int>(cudaErrorInvalidValue);
  }
  size_t tb      = temp_bytes;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  return shim_dispatch(n, [&](auto nn) {
    return cub::DeviceScan::InclusiveSumByKey(
      temp, tb, keys_in, values_in, values_out, nn, ::cuda::std::equal_to<>{}, s);
  });
}

// Compactions (select, partition, unique, run-length encoding, unique by key) of u32, f32 and
// u64 elements (unsigned int, float, unsigned long long): each op NAME_T below is one template
// instantiated for the three types, exported as cub_NAME_T and queried by
// cub_temp_bytes_NAME_T(unsigned long long n, size_t* bytes) (the temp size depends on neither
// the thresholds nor the data). CUB writes every count through an unsigned long long*
// (NumSelectedIteratorT / NumRunsOutputIteratorT deduced from the pointer passed: CUB assigns
// its offset type to it); the run lengths and offsets of the run-length encodings are
// unsigned long long too (64-bit, as this library's). n is passed as shim_dispatch passes it,
// except for the run-length encodings with a CUB before 3.2 (their num_items is an int there):
// n > INT_MAX is cudaErrorInvalidValue with those. Every output needs room for n elements
// (non_trivial_runs: n / 2). T is unsigned int, float or unsigned long long and t the suffix
// u32, f32 or u64:
//
//   DeviceSelect::If, the elements x < threshold, in order:
//   int cub_select_if_lt_t(void* temp, size_t temp_bytes, const T* in, T* out,
//                          unsigned long long* num_selected, unsigned long long n, T threshold,
//                          void* stream);
//   DeviceSelect::Flagged, the elements whose byte flag is not 0, in order:
//   int cub_select_flagged_t(void* temp, size_t temp_bytes, const T* in,
//                            const unsigned char* flags, T* out,
//                            unsigned long long* num_selected, unsigned long long n,
//                            void* stream);
//   DevicePartition::If, two-way: those x < threshold in order at the front of `out`, the
//   others after them in reverse order (one output of n elements):
//   int cub_partition_if_lt_t(void* temp, size_t temp_bytes, const T* in, T* out,
//                             unsigned long long* num_selected, unsigned long long n,
//                             T threshold, void* stream);
//   DevicePartition::If, three-way: x < t1 to first_out, the rest with x < t2 to second_out,
//   all others to unselected_out, each in input order; num_selected[0] and num_selected[1]
//   (two unsigned long long) the sizes of the first two:
//   int cub_partition_three_way_lt_t(void* temp, size_t temp_bytes, const T* in, T* first_out,
//                                    T* second_out, T* unselected_out,
//                                    unsigned long long* num_selected, unsigned long long n,
//                                    T t1, T t2, void* stream);
//   DeviceSelect::Unique, the first element of each run of equal consecutive elements:
//   int cub_select_unique_t(void* temp, size_t temp_bytes, const T* in, T* out,
//                           unsigned long long* num_selected, unsigned long long n,
//                           void* stream);
//   DeviceRunLengthEncode::Encode, each run's first element and length, and the number of runs:
//   int cub_run_length_encode_t(void* temp, size_t temp_bytes, const T* in, T* unique_out,
//                               unsigned long long* counts_out,
//                               unsigned long long* num_runs_out, unsigned long long n,
//                               void* stream);
//   DeviceRunLengthEncode::NonTrivialRuns, each run of two or more: its offset and length, and
//   the number of such runs:
//   int cub_non_trivial_runs_t(void* temp, size_t temp_bytes, const T* in,
//                              unsigned long long* offsets_out,
//                              unsigned long long* lengths_out,
//                              unsigned long long* num_runs_out, unsigned long long n,
//                              void* stream);
//   DeviceSelect::UniqueByKey (T keys, u32 values), each run of equal consecutive keys' key and
//   first value:
//   int cub_select_unique_by_key_t_u32(void* temp, size_t temp_bytes, const T* keys_in,
//                                      const unsigned int* values_in, T* keys_out,
//                                      unsigned int* values_out,
//                                      unsigned long long* num_selected, unsigned long long n,
//                                      void* stream);
//
// The u32 select_if, partition_if and select_unique are the shim's first compactions (same
// names and arguments); a shim built before the others lacks them (the loader resolves every
// compaction as optional).

// The element types by one-word names, for the macros below (`unsigned int{}` would not parse).
using cub_shim_u32 = unsigned int;
using cub_shim_f32 = float;
using cub_shim_u64 = unsigned long long;

// DeviceRunLengthEncode's num_items is a template parameter from CUB 3.1 (Encode) and 3.2
// (NonTrivialRuns) on, an int before.
#if CUB_VERSION >= 300200
#  define CUB_SHIM_WIDE_RUNS 1
#else
#  define CUB_SHIM_WIDE_RUNS 0
#endif

namespace
{
// x < threshold, the predicate of the select_if, partition_if and partition_three_way ops.
template <class T>
struct shim_less_than
{
  T threshold;
  __host__ __device__ bool operator()(const T& x) const
  {
    return x < threshold;
  }
};

// shim_dispatch for the run-length encodings: an int num_items before CUB 3.2.
template <class F>
int shim_dispatch_runs(unsigned long long n, F&& f)
{
#if CUB_SHIM_WIDE_RUNS
  return shim_dispatch(n, f);
#else
  if (n > static_cast<unsigned long long>(INT_MAX))
  {
    return static_cast<int>(cudaErrorInvalidValue);
  }
  return static_cast<int>(f(static_cast<int>(n)));
#endif
}

// A query: `call(tb)` with a null temp (CUB then only sizes it); its size to *bytes.
template <class F>
int shim_query(size_t* bytes, F&& call)
{
  if (bytes == nullptr)
  {
    return static_cast<int>(cudaErrorInvalidValue);
  }
  size_t tb    = 0;
  const int rc = call(tb);
  if (rc == 0)
  {
    *bytes = tb;
  }
  return rc;
}

// A run: `call(tb)` with the caller's temp (a null one is rejected).
template <class F>
int shim_run(void* temp, size_t temp_bytes, F&& call)
{
  if (temp == nullptr)
  {
    return static_cast<int>(cudaErrorInvalidValue);
  }
  size_t tb = temp_bytes;
  return call(tb);
}

template <class T>
int shim_select_if_lt(
  void* temp, size_t& tb, const T* in, T* out, unsigned long long* num_selected, unsigned long long n, T threshold, cudaStream_t s)
{
  return shim_dispatch(n, [&](auto nn) {
    return cub::DeviceSelect::If(temp, tb, in, out, num_selected, nn, shim_less_than<T>{threshold}, s);
  });
}

template <class T>
int shim_select_flagged(
  void* temp,
  size_t& tb,
  const T* in,
  const unsigned char* flags,
  T* out,
  unsigned long long* num_selected,
  unsigned long long n,
  cudaStream_t s)
{
  return shim_dispatch(n, [&](auto nn) {
    return cub::DeviceSelect::Flagged(temp, tb, in, flags, out, num_selected, nn, s);
  });
}

template <class T>
int shim_partition_if_lt(
  void* temp, size_t& tb, const T* in, T* out, unsigned long long* num_selected, unsigned long long n, T threshold, cudaStream_t s)
{
  return shim_dispatch(n, [&](auto nn) {
    return cub::DevicePartition::If(temp, tb, in, out, num_selected, nn, shim_less_than<T>{threshold}, s);
  });
}

template <class T>
int shim_partition_three_way_lt(
  void* temp,
  size_t& tb,
  const T* in,
  T* first_out,
  T* second_out,
  T* unselected_out,
  unsigned long long* num_selected,
  unsigned long long n,
  T t1,
  T t2,
  cudaStream_t s)
{
  return shim_dispatch(n, [&](auto nn) {
    return cub::DevicePartition::If(
      temp,
      tb,
      in,
      first_out,
      second_out,
      unselected_out,
      num_selected,
      nn,
      shim_less_than<T>{t1},
      shim_less_than<T>{t2},
      s);
  });
}

template <class T>
int shim_select_unique(
  void* temp, size_t& tb, const T* in, T* out, unsigned long long* num_selected, unsigned long long n, cudaStream_t s)
{
  return shim_dispatch(n, [&](auto nn) {
    return cub::DeviceSelect::Unique(temp, tb, in, out, num_selected, nn, s);
  });
}

template <class T>
int shim_run_length_encode(
  void* temp,
  size_t& tb,
  const T* in,
  T* unique_out,
  unsigned long long* counts_out,
  unsigned long long* num_runs_out,
  unsigned long long n,
  cudaStream_t s)
{
  return shim_dispatch_runs(n, [&](auto nn) {
    return cub::DeviceRunLengthEncode::Encode(temp, tb, in, unique_out, counts_out, num_runs_out, nn, s);
  });
}

template <class T>
int shim_non_trivial_runs(
  void* temp,
  size_t& tb,
  const T* in,
  unsigned long long* offsets_out,
  unsigned long long* lengths_out,
  unsigned long long* num_runs_out,
  unsigned long long n,
  cudaStream_t s)
{
  return shim_dispatch_runs(n, [&](auto nn) {
    return cub::DeviceRunLengthEncode::NonTrivialRuns(temp, tb, in, offsets_out, lengths_out, num_runs_out, nn, s);
  });
}

template <class T>
int shim_unique_by_key(
  void* temp,
  size_t& tb,
  const T* keys_in,
  const unsigned int* values_in,
  T* keys_out,
  unsigned int* values_out,
  unsigned long long* num_selected,
  unsigned long long n,
  cudaStream_t s)
{
  return shim_dispatch(n, [&](auto nn) {
    return cub::DeviceSelect::UniqueByKey(temp, tb, keys_in, values_in, keys_out, values_out, num_selected, nn, s);
  });
}
} // namespace

// The two exports of each op for element type T (one of the cub_shim_* names): cub_NAME and
// cub_temp_bytes_NAME.
#define CUB_SHIM_SELECT_IF_LT_OP(NAME, T)                                                           \
  extern "C" int cub_temp_bytes_##NAME(unsigned long long n, size_t* bytes)                        \
  {                                                                                                \
    return shim_query(bytes, [&](size_t& tb) {                                                     \
      return shim_select_if_lt<T>(nullptr, tb, nullptr, nullptr, nullptr, n, T{}, cudaStream_t{}); \
    });                                                                                            \
  }                                                                                                \
  extern "C" int cub_##NAME(                                                                       \
    void* temp,                                                                                    \
    size_t temp_bytes,                                                                             \
    const T* in,                                                                                   \
    T* out,                                                                                        \
    unsigned long long* num_selected,                                                              \
    unsigned long long n,                                                                          \
    T threshold,                                                                                   \
    void* stream)                                                                                  \
  {                                                                                                \
    return shim_run(temp, temp_bytes, [&](size_t& tb) {                                            \
      return shim_select_if_lt<T>(                                                                 \
        temp, tb, in, out, num_selected, n, threshold, static_cast<cudaStream_t>(stream));         \
    });                                                                                            \
  }

#define CUB_SHIM_SELECT_FLAGGED_OP(NAME, T)                                                           \
  extern "C" int cub_temp_bytes_##NAME(unsigned long long n, size_t* bytes)                          \
  {                                                                                                  \
    return shim_query(bytes, [&](size_t& tb) {                                                       \
      return shim_select_flagged<T>(nullptr, tb, nullptr, nullptr, nullptr, nullptr, n, cudaStream_t{}); \
    });                                                                                              \
  }                                                                                                  \
  extern "C" int cub_##NAME(                                                                         \
    void* temp,                                                                                      \
    size_t temp_bytes,                                                                               \
    const T* in,                                                                                     \
    const unsigned char* flags,                                                                      \
    T* out,                                                                                          \
    unsigned long long* num_selected,                                                                \
    unsigned long long n,                                                                            \
    void* stream)                                                                                    \
  {                                                                                                  \
    return shim_run(temp, temp_bytes, [&](size_t& tb) {                                              \
      return shim_select_flagged<T>(                                                                 \
        temp, tb, in, flags, out, num_selected, n, static_cast<cudaStream_t>(stream));               \
    });                                                                                              \
  }

#define CUB_SHIM_PARTITION_IF_LT_OP(NAME, T)                                                           \
  extern "C" int cub_temp_bytes_##NAME(unsigned long long n, size_t* bytes)                           \
  {                                                                                                   \
    return shim_query(bytes, [&](size_t& tb) {                                                        \
      return shim_partition_if_lt<T>(nullptr, tb, nullptr, nullptr, nullptr, n, T{}, cudaStream_t{}); \
    });                                                                                               \
  }                                                                                                   \
  extern "C" int cub_##NAME(                                                                          \
    void* temp,                                                                                       \
    size_t temp_bytes,                                                                                \
    const T* in,                                                                                      \
    T* out,                                                                                           \
    unsigned long long* num_selected,                                                                 \
    unsigned long long n,                                                                             \
    T threshold,                                                                                      \
    void* stream)                                                                                     \
  {                                                                                                   \
    return shim_run(temp, temp_bytes, [&](size_t& tb) {                                               \
      return shim_partition_if_lt<T>(                                                                 \
        temp, tb, in, out, num_selected, n, threshold, static_cast<cudaStream_t>(stream));            \
    });                                                                                               \
  }

#define CUB_SHIM_PARTITION_THREE_WAY_LT_OP(NAME, T)                                      \
  extern "C" int cub_temp_bytes_##NAME(unsigned long long n, size_t* bytes)             \
  {                                                                                     \
    return shim_query(bytes, [&](size_t& tb) {                                          \
      return shim_partition_three_way_lt<T>(                                            \
        nullptr, tb, nullptr, nullptr, nullptr, nullptr, nullptr, n, T{}, T{}, cudaStream_t{}); \
    });                                                                                 \
  }                                                                                     \
  extern "C" int cub_##NAME(                                                            \
    void* temp,                                                                         \
    size_t temp_bytes,                                                                  \
    const T* in,                                                                        \
    T* first_out,                                                                       \
    T* second_out,                                                                      \
    T* unselected_out,                                                                  \
    unsigned long long* num_selected,                                                   \
    unsigned long long n,                                                               \
    T t1,                                                                               \
    T t2,                                                                               \
    void* stream)                                                                       \
  {                                                                                     \
    return shim_run(temp, temp_bytes, [&](size_t& tb) {                                 \
      return shim_partition_three_way_lt<T>(                                            \
        temp,                                                                           \
        tb,                                                                             \
        in,                                                                             \
        first_out,                                                                      \
        second_out,                                                                     \
        unselected_out,                                                                 \
        num_selected,                                                                   \
        n,                                                                              \
        t1,                                                                             \
        t2,                                                                             \
        static_cast<cudaStream_t>(stream));                                             \
    });                                                                                 \
  }

#define CUB_SHIM_SELECT_UNIQUE_OP(NAME, T)                                                       \
  extern "C" int cub_temp_bytes_##NAME(unsigned long long n, size_t* bytes)                     \
  {                                                                                             \
    return shim_query(bytes, [&](size_t& tb) {                                                  \
      return shim_select_unique<T>(nullptr, tb, nullptr, nullptr, nullptr, n, cudaStream_t{}); \
    });                                                                                         \
  }                                                                                             \
  extern "C" int cub_##NAME(                                                                    \
    void* temp,                                                                                 \
    size_t temp_bytes,                                                                          \
    const T* in,                                                                                \
    T* out,                                                                                     \
    unsigned long long* num_selected,                                                           \
    unsigned long long n,                                                                       \
    void* stream)                                                                               \
  {                                                                                             \
    return shim_run(temp, temp_bytes, [&](size_t& tb) {                                         \
      return shim_select_unique<T>(temp, tb, in, out, num_selected, n, static_cast<cudaStream_t>(stream)); \
    });                                                                                         \
  }

#define CUB_SHIM_RUN_LENGTH_ENCODE_OP(NAME, T)                                                              \
  extern "C" int cub_temp_bytes_##NAME(unsigned long long n, size_t* bytes)                                \
  {                                                                                                        \
    return shim_query(bytes, [&](size_t& tb) {                                                             \
      return shim_run_length_encode<T>(nullptr, tb, nullptr, nullptr, nullptr, nullptr, n, cudaStream_t{}); \
    });                                                                                                    \
  }                                                                                                        \
  extern "C" int cub_##NAME(                                                                               \
    void* temp,                                                                                            \
    size_t temp_bytes,                                                                                     \
    const T* in,                                                                                           \
    T* unique_out,                                                                                         \
    unsigned long long* counts_out,                                                                        \
    unsigned long long* num_runs_out,                                                                      \
    unsigned long long n,                                                                                  \
    void* stream)                                                                                          \
  {                                                                                                        \
    return shim_run(temp, temp_bytes, [&](size_t& tb) {                                                    \
      return shim_run_length_encode<T>(                                                                    \
        temp, tb, in, unique_out, counts_out, num_runs_out, n, static_cast<cudaStream_t>(stream));         \
    });                                                                                                    \
  }

#define CUB_SHIM_NON_TRIVIAL_RUNS_OP(NAME, T)                                                              \
  extern "C" int cub_temp_bytes_##NAME(unsigned long long n, size_t* bytes)                               \
  {                                                                                                       \
    return shim_query(bytes, [&](size_t& tb) {                                                            \
      return shim_non_trivial_runs<T>(nullptr, tb, nullptr, nullptr, nullptr, nullptr, n, cudaStream_t{}); \
    });                                                                                                   \
  }                                                                                                       \
  extern "C" int cub_##NAME(                                                                              \
    void* temp,                                                                                           \
    size_t temp_bytes,                                                                                    \
    const T* in,                                                                                          \
    unsigned long long* offsets_out,                                                                      \
    unsigned long long* lengths_out,                                                                      \
    unsigned long long* num_runs_out,                                                                     \
    unsigned long long n,                                                                                 \
    void* stream)                                                                                         \
  {                                                                                                       \
    return shim_run(temp, temp_bytes, [&](size_t& tb) {                                                   \
      return shim_non_trivial_runs<T>(                                                                    \
        temp, tb, in, offsets_out, lengths_out, num_runs_out, n, static_cast<cudaStream_t>(stream));      \
    });                                                                                                   \
  }

#define CUB_SHIM_UNIQUE_BY_KEY_OP(NAME, T)                                                   \
  extern "C" int cub_temp_bytes_##NAME(unsigned long long n, size_t* bytes)                 \
  {                                                                                         \
    return shim_query(bytes, [&](size_t& tb) {                                              \
      return shim_unique_by_key<T>(                                                         \
        nullptr, tb, nullptr, nullptr, nullptr, nullptr, nullptr, n, cudaStream_t{});       \
    });                                                                                     \
  }                                                                                         \
  extern "C" int cub_##NAME(                                                                \
    void* temp,                                                                             \
    size_t temp_bytes,                                                                      \
    const T* keys_in,                                                                       \
    const unsigned int* values_in,                                                          \
    T* keys_out,                                                                            \
    unsigned int* values_out,                                                               \
    unsigned long long* num_selected,                                                       \
    unsigned long long n,                                                                   \
    void* stream)                                                                           \
  {                                                                                         \
    return shim_run(temp, temp_bytes, [&](size_t& tb) {                                     \
      return shim_unique_by_key<T>(                                                         \
        temp,                                                                               \
        tb,                                                                                 \
        keys_in,                                                                            \
        values_in,                                                                          \
        keys_out,                                                                           \
        values_out,                                                                         \
        num_selected,                                                                       \
        n,                                                                                  \
        static_cast<cudaStream_t>(stream));                                                 \
    });                                                                                     \
  }

// Every compaction of every type: COMPACTION_OPS in tools/cli/src/cub/symbols.rs, in its order.
CUB_SHIM_SELECT_IF_LT_OP(select_if_lt_u32, cub_shim_u32)
CUB_SHIM_SELECT_FLAGGED_OP(select_flagged_u32, cub_shim_u32)
CUB_SHIM_PARTITION_IF_LT_OP(partition_if_lt_u32, cub_shim_u32)
CUB_SHIM_PARTITION_THREE_WAY_LT_OP(partition_three_way_lt_u32, cub_shim_u32)
CUB_SHIM_SELECT_UNIQUE_OP(select_unique_u32, cub_shim_u32)
CUB_SHIM_RUN_LENGTH_ENCODE_OP(run_length_encode_u32, cub_shim_u32)
CUB_SHIM_NON_TRIVIAL_RUNS_OP(non_trivial_runs_u32, cub_shim_u32)
CUB_SHIM_UNIQUE_BY_KEY_OP(select_unique_by_key_u32_u32, cub_shim_u32)
CUB_SHIM_SELECT_IF_LT_OP(select_if_lt_f32, cub_shim_f32)
CUB_SHIM_SELECT_FLAGGED_OP(select_flagged_f32, cub_shim_f32)
CUB_SHIM_PARTITION_IF_LT_OP(partition_if_lt_f32, cub_shim_f32)
CUB_SHIM_PARTITION_THREE_WAY_LT_OP(partition_three_way_lt_f32, cub_shim_f32)
CUB_SHIM_SELECT_UNIQUE_OP(select_unique_f32, cub_shim_f32)
CUB_SHIM_RUN_LENGTH_ENCODE_OP(run_length_encode_f32, cub_shim_f32)
CUB_SHIM_NON_TRIVIAL_RUNS_OP(non_trivial_runs_f32, cub_shim_f32)
CUB_SHIM_UNIQUE_BY_KEY_OP(select_unique_by_key_f32_u32, cub_shim_f32)
CUB_SHIM_SELECT_IF_LT_OP(select_if_lt_u64, cub_shim_u64)
CUB_SHIM_SELECT_FLAGGED_OP(select_flagged_u64, cub_shim_u64)
CUB_SHIM_PARTITION_IF_LT_OP(partition_if_lt_u64, cub_shim_u64)
CUB_SHIM_PARTITION_THREE_WAY_LT_OP(partition_three_way_lt_u64, cub_shim_u64)
CUB_SHIM_SELECT_UNIQUE_OP(select_unique_u64, cub_shim_u64)
CUB_SHIM_RUN_LENGTH_ENCODE_OP(run_length_encode_u64, cub_shim_u64)
CUB_SHIM_NON_TRIVIAL_RUNS_OP(non_trivial_runs_u64, cub_shim_u64)
CUB_SHIM_UNIQUE_BY_KEY_OP(select_unique_by_key_u64_u32, cub_shim_u64)

// Histograms (DeviceHistogram::HistogramEven / HistogramRange), u32 counts, of u32 and f32
// samples (the bins' levels of the sample type; num_levels = bins + 1):
//   int cub_temp_bytes_histogram_even_T(unsigned long long n, int bins, size_t* bytes);
//   int cub_histogram_even_T(void* temp, size_t temp_bytes, const T* in, unsigned int* counts,
//                            int bins, T lower, T upper, unsigned long long n, void* stream);
//   int cub_temp_bytes_histogram_range_T(unsigned long long n, int bins, size_t* bytes);
//   int cub_histogram_range_T(void* temp, size_t temp_bytes, const T* in, unsigned int* counts,
//                             int bins, const T* edges, unsigned long long n, void* stream);
#define CUB_SHIM_HISTOGRAM_OPS(TNAME, T)                                                          \
  extern "C" int cub_temp_bytes_histogram_even_##TNAME(unsigned long long n, int bins, size_t* bytes) \
  {                                                                                              \
    return shim_query(bytes, [&](size_t& tb) {                                                   \
      return shim_dispatch(n, [&](auto nn) {                                                     \
        return cub::DeviceHistogram::HistogramEven(                                              \
          nullptr, tb, static_cast<const T*>(nullptr), static_cast<unsigned int*>(nullptr),      \
          bins + 1, static_cast<T>(0), static_cast<T>(1), nn, cudaStream_t{});                                           \
      });                                                                                        \
    });                                                                                          \
  }                                                                                              \
  extern "C" int cub_histogram_even_##TNAME(                                                     \
    void* temp, size_t temp_bytes, const T* in, unsigned int* counts, int bins, T lower, T upper, \
    unsigned long long n, void* stream)                                                          \
  {                                                                                              \
    return shim_run(temp, temp_bytes, [&](size_t& tb) {                                         \
      return shim_dispatch(n, [&](auto nn) {                                                     \
        return cub::DeviceHistogram::HistogramEven(                                              \
          temp, tb, in, counts, bins + 1, lower, upper, nn, static_cast<cudaStream_t>(stream));  \
      });                                                                                        \
    });                                                                                          \
  }                                                                                              \
  extern "C" int cub_temp_bytes_histogram_range_##TNAME(unsigned long long n, int bins, size_t* bytes) \
  {                                                                                              \
    return shim_query(bytes, [&](size_t& tb) {                                                   \
      return shim_dispatch(n, [&](auto nn) {                                                     \
        return cub::DeviceHistogram::HistogramRange(                                             \
          nullptr, tb, static_cast<const T*>(nullptr), static_cast<unsigned int*>(nullptr),      \
          bins + 1, static_cast<const T*>(nullptr), nn, cudaStream_t{});                         \
      });                                                                                        \
    });                                                                                          \
  }                                                                                              \
  extern "C" int cub_histogram_range_##TNAME(                                                    \
    void* temp, size_t temp_bytes, const T* in, unsigned int* counts, int bins, const T* edges,  \
    unsigned long long n, void* stream)                                                          \
  {                                                                                              \
    return shim_run(temp, temp_bytes, [&](size_t& tb) {                                         \
      return shim_dispatch(n, [&](auto nn) {                                                     \
        return cub::DeviceHistogram::HistogramRange(                                             \
          temp, tb, in, counts, bins + 1, edges, nn, static_cast<cudaStream_t>(stream));         \
      });                                                                                        \
    });                                                                                          \
  }

// HISTOGRAM_TYPES in tools/cli/src/cub/histogram.rs.
CUB_SHIM_HISTOGRAM_OPS(u32, cub_shim_u32)
CUB_SHIM_HISTOGRAM_OPS(f32, cub_shim_f32)

// Top-k (DeviceTopK::MaxPairs, CCCL >= 3.2: only where its header exists): the k largest f32
// keys and their indices (a counting iterator's u32 values), in no order and with no
// determinism asked (the one form CUB offers):
//   int cub_temp_bytes_topk_max_f32(unsigned long long n, unsigned long long k, size_t* bytes);
//   int cub_topk_max_f32(void* temp, size_t temp_bytes, const float* in, float* keys_out,
//                        unsigned int* idx_out, unsigned long long n, unsigned long long k,
//                        void* stream);
#if __has_include(<cub/device/device_topk.cuh>)
#  include <cub/device/device_topk.cuh>

#  include <cuda/__execution/determinism.h>
#  include <cuda/__execution/output_ordering.h>
#  include <cuda/__execution/require.h>
#  include <cuda/iterator>
#  include <cuda/stream>

template <class F>
int shim_topk(cudaStream_t s, F&& call)
{
  auto requirements =
    cuda::execution::require(cuda::execution::determinism::not_guaranteed, cuda::execution::output_ordering::unsorted);
  return static_cast<int>(call(cuda::std::execution::env{cuda::stream_ref{s}, requirements}));
}

extern "C" int cub_temp_bytes_topk_max_f32(unsigned long long n, unsigned long long k, size_t* bytes)
{
  return shim_query(bytes, [&](size_t& tb) {
    return shim_topk(cudaStream_t{}, [&](auto env) {
      return cub::DeviceTopK::MaxPairs(
        nullptr, tb, static_cast<const float*>(nullptr), static_cast<float*>(nullptr),
        cuda::make_counting_iterator<unsigned int>(0), static_cast<unsigned int*>(nullptr),
        static_cast<uint32_t>(n), static_cast<uint32_t>(k), env);
    });
  });
}

extern "C" int cub_topk_max_f32(
  void* temp, size_t temp_bytes, const float* in, float* keys_out, unsigned int* idx_out,
  unsigned long long n, unsigned long long k, void* stream)
{
  if (n > UINT_MAX)
  {
    return static_cast<int>(cudaErrorInvalidValue);
  }
  return shim_run(temp, temp_bytes, [&](size_t& tb) {
    return shim_topk(static_cast<cudaStream_t>(stream), [&](auto env) {
      return cub::DeviceTopK::MaxPairs(
        temp, tb, in, keys_out, cuda::make_counting_iterator<unsigned int>(0), idx_out,
        static_cast<uint32_t>(n), static_cast<uint32_t>(k), env);
    });
  });
}
#endif

// CUB_VERSION: major * 100000 + minor * 100 + patch (e.g. 300000 for CUB 3.0.0).
extern "C" int cub_version(void)
{
  return CUB_VERSION;
}

// 1 when counts above 2^31 are supported (see above), else 0.
extern "C" int cub_wide_num_items(void)
{
  return CUB_SHIM_WIDE_NUM_ITEMS;
}

// The CUDA runtime's text for an error code this library returned (never null).
extern "C" const char* cub_error_string(int code)
{
  return cudaGetErrorString(static_cast<cudaError_t>(code));
}
