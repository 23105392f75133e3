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
// Both return the cudaError_t as int (0 = success). `stream` is a cudaStream_t; a driver-API
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

#include <cub/cub.cuh>
#include <cuda_runtime.h>

#include <climits>
#include <cstddef>

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
} // namespace

// CALL may use: temp (void*), tb (size_t lvalue), in (const T*), out (T*), nn (num_items), s.
#define CUB_SHIM_OP(NAME, T, CALL)                                                              \
  extern "C" int cub_temp_bytes_##NAME(unsigned long long n, size_t* bytes)                      \
  {                                                                                              \
    if (bytes == nullptr)                                                                        \
    {                                                                                            \
      return static_cast<int>(cudaErrorInvalidValue);                                            \
    }                                                                                            \
    void* temp     = nullptr;                                                                    \
    size_t tb      = 0;                                                                          \
    const T* in    = nullptr;                                                                    \
    T* out         = nullptr;                                                                    \
    cudaStream_t s = nullptr;                                                                    \
    int rc         = shim_dispatch(n, [&](auto nn) { return CALL; });                            \
    if (rc == 0)                                                                                 \
    {                                                                                            \
      *bytes = tb;                                                                               \
    }                                                                                            \
    return rc;                                                                                   \
  }                                                                                              \
  extern "C" int cub_##NAME(                                                                     \
    void* temp, size_t temp_bytes, const T* in, T* out, unsigned long long n, void* stream)     \
  {                                                                                              \
    if (temp == nullptr)                                                                         \
    {                                                                                            \
      return static_cast<int>(cudaErrorInvalidValue);                                            \
    }                                                                                            \
    size_t tb      = temp_bytes;                                                                 \
    cudaStream_t s = static_cast<cudaStream_t>(stream);                                          \
    return shim_dispatch(n, [&](auto nn) { return CALL; });                                      \
  }

CUB_SHIM_OP(sum_f32, float, cub::DeviceReduce::Sum(temp, tb, in, out, nn, s))
CUB_SHIM_OP(sum_f64, double, cub::DeviceReduce::Sum(temp, tb, in, out, nn, s))
CUB_SHIM_OP(sum_i32, int, cub::DeviceReduce::Sum(temp, tb, in, out, nn, s))
CUB_SHIM_OP(min_f32, float, cub::DeviceReduce::Min(temp, tb, in, out, nn, s))
CUB_SHIM_OP(max_f32, float, cub::DeviceReduce::Max(temp, tb, in, out, nn, s))
CUB_SHIM_OP(inclusive_sum_i32, int, cub::DeviceScan::InclusiveSum(temp, tb, in, out, nn, s))
CUB_SHIM_OP(inclusive_sum_f32, float, cub::DeviceScan::InclusiveSum(temp, tb, in, out, nn, s))
CUB_SHIM_OP(exclusive_sum_i32, int, cub::DeviceScan::ExclusiveSum(temp, tb, in, out, nn, s))

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
