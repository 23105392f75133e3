// Issue 38 point 1, session 30 (BENCHMARKS.md, Scans, "What bounds the H200 scan"): nvcc -O3 -arch=sm_90 tile_copy.cu && ./a.out [groups]
// A kernel that only moves the scan's bytes: the scan's tile (256 threads x 16 x 16 B = 64 KiB),
// tiles taken in order from an atomic counter, held in registers, warp 0 waiting between the load
// and the store as the look-back does (a fixed sleep, or a serial chain on the predecessor's flag),
// the shared-memory carve-out set by a dynamic allocation (its registers keep two blocks an SM
// whatever the carve-out: the occupancy printed). Against the device copy: what the tile shape,
// the occupancy and the wait leave of the copy limit.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <string>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)
constexpr int T = 256, R = 16;
__global__ void __launch_bounds__(T) tile_copy(const uint4* __restrict__ in, uint4* __restrict__ out,
    long long nvec, unsigned* counter, volatile unsigned* flags, volatile unsigned* ck, int mode, unsigned wait_ns, unsigned epoch) {
  extern __shared__ char pad[];
  __shared__ unsigned tile_s;
  if (threadIdx.x == 0) tile_s = atomicAdd(counter, 1);
  __syncthreads();
  long long tile = tile_s;
  long long base = tile * T * R;
  uint4 v[R];
#pragma unroll
  for (int r = 0; r < R; ++r) { long long i = base + (long long)r * T + threadIdx.x; if (i < nvec) v[r] = __ldcs(in + i); }
  if (threadIdx.x < 32) {
    if (mode == 1 && tile >= 256) __nanosleep(wait_ns);
    if (mode == 2 && threadIdx.x == 0) {   // serial chain: wait for the predecessor's flag
      if (tile > 0) while (flags[tile - 1] != epoch) {}
      __threadfence(); flags[tile] = epoch;
    }
    if (mode == 3 && threadIdx.x == 0) {   // chain after a sleep (the look-back after its first wait)
      if (tile >= 256) __nanosleep(wait_ns);
      if (tile > 0) while (flags[tile - 1] != epoch) { __nanosleep(100); }
      __threadfence(); flags[tile] = epoch;
    }
  }
  // Modes 4 and 5 (session 36): the fixed order's waits without its arithmetic. The tile's
  // aggregate is published once all its loads are in (a block-wide OR of the values); tile
  // t = 32h + i then waits for the aggregates of tiles 32h .. t - 1 (F(h, i)) and, mode 4 only,
  // for the checkpoint C(h - 1) or the means to rebuild it (C(h - 2) and group h - 1's
  // aggregates); a group's last tile publishes C(h). Mode 4 minus mode 5 is the chain's cost.
  if (mode >= 4) {
    unsigned x = 0;
#pragma unroll
    for (int r = 0; r < R; ++r) x |= v[r].x | v[r].y | v[r].z | v[r].w;
    x = __syncthreads_or(x);
    if (threadIdx.x < 32) {
      unsigned lane = threadIdx.x;
      if (lane == 0) { __threadfence(); flags[tile] = epoch; }  // after the barrier that needed every load
      long long h = tile / 32; int i = (int)(tile % 32);
      while (!__all_sync(0xffffffffu, (int)lane >= i || flags[32 * h + lane] == epoch)) __nanosleep(100);
      if (mode == 4 && h > 0) {
        while (true) {
          unsigned c = __shfl_sync(0xffffffffu, lane == 0 ? ck[h - 1] : 0u, 0);
          if (c == epoch) break;
          bool ok = flags[32 * (h - 1) + lane] == epoch && (h < 2 || ck[h - 2] == epoch);
          if (__all_sync(0xffffffffu, ok)) break;
          __nanosleep(100);
        }
      }
      if (i == 31 && lane == 0) { __threadfence(); ck[h] = epoch; }
    }
  }
  __syncthreads();
  if (pad[0] == 123) v[0].x ^= 1;  // keeps the pad allocated
#pragma unroll
  for (int r = 0; r < R; ++r) { long long i = base + (long long)r * T + threadIdx.x; if (i < nvec) __stcs(out + i, v[r]); }
}
__global__ void vec_copy(const uint4* __restrict__ in, uint4* __restrict__ out, long long nvec) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < nvec; i += (long long)gridDim.x * blockDim.x) out[i] = __ldcs(in + i);
}
int main(int argc, char** argv) {
  int dev = 0; cudaDeviceProp p; CK(cudaGetDeviceProperties(&p, dev));
  long long L2 = p.l2CacheSize;
  std::vector<long long> sizes = {1LL << 22, 1LL << 23, 1LL << 24, 1LL << 26, 1LL << 28, 1000000000LL};
  printf("device %s, %d SMs, L2 %lld MiB, smem/SM %zu\n", p.name, p.multiProcessorCount, L2 >> 20, p.sharedMemPerMultiprocessor);
  long long maxn = 1000000000LL; long long bytes = maxn * 4;
  int nbuf = 2;  // 4 GB each way at 1e9; smaller sizes rotate over buffers > 4x L2
  uint4 *in, *out; CK(cudaMalloc(&in, bytes * nbuf)); CK(cudaMalloc(&out, bytes * nbuf));
  CK(cudaMemset(in, 1, bytes * nbuf));
  unsigned* counter; CK(cudaMalloc(&counter, 4 * 64));
  long long maxtiles = maxn * 4 / (T * R * 16) + 2; unsigned* flags; CK(cudaMalloc(&flags, maxtiles * 4)); CK(cudaMemset(flags, 0, maxtiles * 4));
  unsigned* ck; CK(cudaMalloc(&ck, maxtiles * 4)); CK(cudaMemset(ck, 0, maxtiles * 4));
  // `groups`: only the fixed order's model (modes 0, 4, 5 at two blocks an SM) at 2^22..2^26.
  bool groups = argc > 1 && std::string(argv[1]) == "groups";
  if (groups) sizes = {1LL << 22, 1LL << 23, 1LL << 24, 1LL << 26};
  CK(cudaFuncSetAttribute(tile_copy, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
  cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
  unsigned epoch = 1;
  struct Cfg { int mode; unsigned wait; int bps; };
  std::vector<Cfg> cfgs;
  if (groups) cfgs = {{0, 0, 2}, {4, 0, 2}, {5, 0, 2}};
  else for (int bps : {2, 3, 4}) for (int m = 0; m < 4; ++m) {
    if (m == 0) cfgs.push_back({0, 0, bps});
    if (m == 1) for (unsigned w : {1000u, 2000u, 3000u}) cfgs.push_back({1, w, bps});
    if (m == 2) cfgs.push_back({2, 0, bps});
    if (m == 3) for (unsigned w : {2000u, 3000u}) cfgs.push_back({3, w, bps});
  }
  const int iters = 15, warm = 3;
  for (long long n : sizes) {
    long long nvec = n * 4 / 16; long long nb = n * 4;
    int rot = (int)std::max(1LL, std::min((long long)nbuf * (bytes / nb), (4 * L2 + nb - 1) / nb + 1));
    auto timeit = [&](auto launch) {
      std::vector<float> ts;
      for (int it = 0; it < warm + iters; ++it) {
        long long off = (it % rot) * nvec;
        CK(cudaMemsetAsync(counter, 0, 4)); ++epoch;
        CK(cudaEventRecord(a)); launch(in + off, out + off); CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b));
        float ms; CK(cudaEventElapsedTime(&ms, a, b)); if (it >= warm) ts.push_back(ms);
      }
      CK(cudaGetLastError());
      std::sort(ts.begin(), ts.end()); return ts[ts.size() / 2];
    };
    float copy = timeit([&](const uint4* i, uint4* o) { vec_copy<<<p.multiProcessorCount * 8, 512>>>(i, o, nvec); });
    float memcpy_ms = timeit([&](const uint4* i, uint4* o) { CK(cudaMemcpyAsync(o, i, nb, cudaMemcpyDeviceToDevice)); });
    float lim = std::min(copy, memcpy_ms);
    printf("n %lld (f32): copy kernel %.4f ms, cudaMemcpy %.4f ms (%.0f GB/s)\n", n, copy, memcpy_ms, 2.0 * nb / lim / 1e6);
    long long tiles = (nvec + T * R - 1) / (T * R);
    for (auto c : cfgs) {
      size_t smem = (p.sharedMemPerMultiprocessor - 1024 * c.bps) / c.bps - 1024;  // caps blocks per SM at bps
      int occ; CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, tile_copy, T, smem));
      float ms = timeit([&](const uint4* i, uint4* o) { tile_copy<<<tiles, T, smem>>>(i, o, nvec, counter, flags, ck, c.mode, c.wait, epoch); });
      const char* mn[] = {"no wait", "sleep", "serial chain", "sleep + chain", "fixed order", "groups, no chain"};
      printf("  tile copy, carve-out for %d blocks (occupancy %d), %-13s %5u ns: %.4f ms, %.1f%% of the copy limit\n", c.bps, occ, mn[c.mode], c.wait, ms, 100.0 * lim / ms);
    }
  }
}
