//! Seed 004 (*Professional CUDA C Programming*, ch. 5): shared memory as a managed cache.
//! Blocks of `DIM =` [`DIM`] threads; each writes its block's sum to `out[blockIdx.x]` and the
//! host runs the kernel again on the partials (the book sums them on the CPU).
//!
//! Fixed from the seed's listings, which assume `n` a multiple of the tile and contain typos:
//! - `if (idx >= n) return;` before `__syncthreads()` leaves the block's other threads at a
//!   barrier a thread never reaches (undefined; the simulator reports it): here every thread
//!   stays, and indices past `n` count as zero.
//! - reduceSmem/Unroll add `idata[tid + 512]` (global) and write `idata[0]`: the book's code
//!   uses `smem` for both.
//! - reduceSmemUnroll's `if (idx + 3 * blockDim.x <= n)` drops a whole partial group (and
//!   should be `<`): here each of the four loads is checked on its own.
//! - The `volatile` warp-synchronous last warp is a race on Volta+: `__syncwarp` between the
//!   reads and the writes (see [`warp_tail_shared`](super::warp_tail_shared)).

use super::{Elem, Smem, load, warp_tail_shared};
use kernels::gpu::{self, FULL_MASK, SharedArray};

/// Threads per block (the book's `#define DIM 128`).
pub const DIM: u32 = 128;

/// The steps of the book's unrolled tree above the last warp: `if (blockDim >= 2h && tid < h)`
/// for h = 512, 256, 128, 64.
const HALVES: [u32; 4] = [512, 256, 128, 64];

/// reduceGmem, the baseline: the block's tile is reduced in place in global memory, with the
/// same unrolled tree as the shared-memory kernels, so every step reads and writes DRAM/L2.
/// It destroys `data`: the host hands it a copy of the input, made outside the timed region.
/// # Safety
/// `data` holds `n` elements the kernel may overwrite, `out` one per block.
#[inline(always)]
pub unsafe fn reduce_gmem<T: Elem>(data: *mut T, out: *mut T, n: u32) {
    let tid = gpu::thread_idx_x();
    let bd = gpu::block_dim_x();
    let base = gpu::block_idx_x() * bd;
    let idata = unsafe { data.add(base as usize) };
    let idx = base + tid;
    // `idata[k]` exists when base + k < n; the rest of the tile counts as zero.
    let get = |k: u32| unsafe { load(idata, k, n - base) };
    for h in HALVES {
        if bd >= 2 * h && tid < h && idx + h < n {
            unsafe { idata.add(tid as usize).write(get(tid).add(get(tid + h))) };
        }
        gpu::sync_threads();
    }
    let mut sum = T::ZERO;
    if tid < 32 {
        // The book's volatile, unsynchronised last warp, made race-free: read, __syncwarp,
        // write, __syncwarp (global memory is ordered by bar.warp.sync as shared memory is).
        sum = get(tid);
        let mut offset = 32;
        while offset > 0 {
            sum = sum.add(get(tid + offset));
            gpu::sync_warp(FULL_MASK);
            if idx < n {
                unsafe { idata.add(tid as usize).write(sum) };
            }
            gpu::sync_warp(FULL_MASK);
            offset /= 2;
        }
    }
    if tid == 0 {
        unsafe { out.add(gpu::block_idx_x() as usize).write(sum) };
    }
}

/// The shared-memory tree of reduceSmem/Unroll after `smem[tid]` is loaded and a barrier:
/// the unrolled steps down to 64 elements, then the last warp. The sum is valid in thread 0.
#[inline(always)]
fn smem_block_sum<T: Elem>(smem: SharedArray<T>, tid: u32) -> T {
    for h in HALVES {
        if DIM >= 2 * h && tid < h {
            unsafe { smem.set(tid, smem.at(tid).add(smem.at(tid + h))) };
        }
        gpu::sync_threads();
    }
    if tid < 32 {
        // SAFETY: smem[0..DIM] was written before the last barrier.
        unsafe { warp_tail_shared(smem, tid) }
    } else {
        T::ZERO
    }
}

/// reduceSmem: changed from [`reduce_gmem`], the tile is loaded once into the static shared
/// array `smem[DIM]` and the tree runs there: one global read per element, no global writes
/// but the block's sum. The input is left untouched.
/// # Safety
/// `input` holds `n` elements, `out` one per block; `blockDim.x == DIM`.
#[inline(always)]
pub unsafe fn reduce_smem<T: Elem>(input: *const T, out: *mut T, n: u32) {
    let smem = T::dim_shared();
    let tid = gpu::thread_idx_x();
    let idx = gpu::block_idx_x() * DIM + tid;
    unsafe { smem.set(tid, load(input, idx, n)) };
    gpu::sync_threads();
    let sum = smem_block_sum(smem, tid);
    if tid == 0 {
        unsafe { out.add(gpu::block_idx_x() as usize).write(sum) };
    }
}

/// reduceSmemUnroll's body, over any shared array of `DIM` elements (static or dynamic).
#[inline(always)]
unsafe fn smem_unroll<T: Elem>(smem: SharedArray<T>, input: *const T, out: *mut T, n: u32) {
    let tid = gpu::thread_idx_x();
    let idx = gpu::block_idx_x() * DIM * 4 + tid;
    let tmp_sum = unsafe {
        let a1 = load(input, idx, n);
        let a2 = load(input, idx + DIM, n);
        let a3 = load(input, idx + 2 * DIM, n);
        let a4 = load(input, idx + 3 * DIM, n);
        a1.add(a2).add(a3).add(a4)
    };
    unsafe { smem.set(tid, tmp_sum) };
    gpu::sync_threads();
    let sum = smem_block_sum(smem, tid);
    if tid == 0 {
        unsafe { out.add(gpu::block_idx_x() as usize).write(sum) };
    }
}

/// reduceSmemUnroll: changed from [`reduce_smem`], each block covers four tiles and each
/// thread sums its four elements (four independent loads in flight) before the tree: a
/// quarter of the blocks, four times the bytes in flight per thread.
/// # Safety
/// As [`reduce_smem`].
#[inline(always)]
pub unsafe fn reduce_smem_unroll<T: Elem>(input: *const T, out: *mut T, n: u32) {
    unsafe { smem_unroll(T::dim_shared(), input, out, n) }
}

/// reduceSmemUnrollDyn: [`reduce_smem_unroll`] with `extern __shared__ T smem[]`, the
/// launch's dynamic shared memory (`DIM` elements), instead of a static array.
/// # Safety
/// As [`reduce_smem`], launched with `DIM * size_of::<T>()` bytes of dynamic shared memory.
#[inline(always)]
pub unsafe fn reduce_smem_unroll_dyn<T: Elem>(input: *const T, out: *mut T, n: u32) {
    unsafe { smem_unroll(gpu::dynamic_shared::<T>(), input, out, n) }
}
