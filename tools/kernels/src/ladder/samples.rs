//! Seed 000: the CUDA samples' `reduction` kernels, reduce0 to reduce6. Each writes its
//! block's sum to `out[blockIdx.x]`; the host runs the same kernel on the partials until one
//! value is left, as the sample does (`cpuFinalReduction = false`), ping-ponging between two
//! buffers where the sample reuses one (which races once a pass has several blocks).
//!
//! reduce0..reduce4 read `blockDim.x` (a power of two, at least 64) and need `blockDim.x`
//! elements of dynamic shared memory (the sample's `SharedMemory<T>()`); reduce5 and reduce6
//! take the block size as a const generic, as the sample's `template <blockSize>` does.

use super::{Elem, Smem, load, warp_sum_down};
use kernels::gpu;

/// Threads per block (the sample's default `maxThreads`).
pub const BLOCK: u32 = 256;
/// reduce6's grid. The sample takes it as `--maxblocks` (default 64, sized for the GPUs of
/// 2007): 64 blocks leave more than half of an H100/H200's 132 SMs idle, so here 1024 (about
/// eight 256-thread blocks per SM), which is what the sample's own advice (enough blocks to fill
/// the machine) gives on today's parts.
pub const REDUCE6_MAX_GRID: u32 = 1024;

/// reduce0, interleaved addressing: each thread loads one element into shared memory; at step
/// `s = 1, 2, 4, ...` the threads whose index is a multiple of `2s` add the element `s` to
/// their right. The active threads are spread over the warps, so warps diverge at every
/// step. (The sample warns that `tid % (2s)` is slow; LLVM proves `2s` a power of two
/// and emits a mask instead, as the PTX shows, so here the cost is the divergence.)
/// # Safety
/// `input` holds `n` elements, `out` one per block.
#[allow(clippy::manual_is_multiple_of)] // the seed's `%`, on purpose
#[inline(always)]
pub unsafe fn reduce0<T: Elem>(input: *const T, out: *mut T, n: u32) {
    let sdata = gpu::dynamic_shared::<T>();
    let tid = gpu::thread_idx_x();
    let i = gpu::block_idx_x() * gpu::block_dim_x() + tid;
    unsafe { sdata.set(tid, load(input, i, n)) };
    gpu::sync_threads();
    let mut s = 1;
    while s < gpu::block_dim_x() {
        if tid % (2 * s) == 0 {
            unsafe { sdata.set(tid, sdata.at(tid).add(sdata.at(tid + s))) };
        }
        gpu::sync_threads();
        s *= 2;
    }
    if tid == 0 {
        unsafe { out.add(gpu::block_idx_x() as usize).write(sdata.at(0)) };
    }
}

/// reduce1, strided index: changed from reduce0, thread `tid` works on element `2*s*tid`, so
/// the active threads are contiguous (whole warps idle, no divergence, no `%`). But a warp's
/// accesses now stride by `2s` elements: several lanes hit the same shared-memory bank.
/// # Safety
/// As [`reduce0`].
#[inline(always)]
pub unsafe fn reduce1<T: Elem>(input: *const T, out: *mut T, n: u32) {
    let sdata = gpu::dynamic_shared::<T>();
    let tid = gpu::thread_idx_x();
    let i = gpu::block_idx_x() * gpu::block_dim_x() + tid;
    unsafe { sdata.set(tid, load(input, i, n)) };
    gpu::sync_threads();
    let mut s = 1;
    while s < gpu::block_dim_x() {
        let index = 2 * s * tid;
        if index < gpu::block_dim_x() {
            unsafe { sdata.set(index, sdata.at(index).add(sdata.at(index + s))) };
        }
        gpu::sync_threads();
        s *= 2;
    }
    if tid == 0 {
        unsafe { out.add(gpu::block_idx_x() as usize).write(sdata.at(0)) };
    }
}

/// reduce2, sequential addressing: changed from reduce1, the stride starts at half the block
/// and halves, and thread `tid < s` adds `s[tid + s]`: contiguous threads, contiguous
/// addresses, no bank conflicts. Half of the threads idle from the first step on.
/// # Safety
/// As [`reduce0`].
#[inline(always)]
pub unsafe fn reduce2<T: Elem>(input: *const T, out: *mut T, n: u32) {
    let sdata = gpu::dynamic_shared::<T>();
    let tid = gpu::thread_idx_x();
    let i = gpu::block_idx_x() * gpu::block_dim_x() + tid;
    unsafe { sdata.set(tid, load(input, i, n)) };
    gpu::sync_threads();
    let mut s = gpu::block_dim_x() / 2;
    while s > 0 {
        if tid < s {
            unsafe { sdata.set(tid, sdata.at(tid).add(sdata.at(tid + s))) };
        }
        gpu::sync_threads();
        s >>= 1;
    }
    if tid == 0 {
        unsafe { out.add(gpu::block_idx_x() as usize).write(sdata.at(0)) };
    }
}

/// reduce3, first add during the load: changed from reduce2, each block covers two tiles and
/// each thread adds its two elements while loading, so half the blocks do the same work and
/// no thread idles in the first step. The running sum stays in a register (`my_sum`).
/// # Safety
/// As [`reduce0`].
#[inline(always)]
pub unsafe fn reduce3<T: Elem>(input: *const T, out: *mut T, n: u32) {
    let sdata = gpu::dynamic_shared::<T>();
    let tid = gpu::thread_idx_x();
    let bd = gpu::block_dim_x();
    let i = gpu::block_idx_x() * (bd * 2) + tid;
    let mut my_sum = unsafe { load(input, i, n).add(load(input, i + bd, n)) };
    unsafe { sdata.set(tid, my_sum) };
    gpu::sync_threads();
    let mut s = bd / 2;
    while s > 0 {
        if tid < s {
            my_sum = my_sum.add(unsafe { sdata.at(tid + s) });
            unsafe { sdata.set(tid, my_sum) };
        }
        gpu::sync_threads();
        s >>= 1;
    }
    if tid == 0 {
        unsafe { out.add(gpu::block_idx_x() as usize).write(my_sum) };
    }
}

/// reduce4, the last warp by shuffles: changed from reduce3, the shared-memory loop stops at
/// 64 elements; warp 0 adds the second warp's 32 and finishes with `shfl.sync.down` in
/// registers: five steps with no barrier and no shared memory. (The sample's older
/// "warp-synchronous" version unrolled this in `volatile` shared memory without any sync, a
/// data race since Volta; shuffles are the safe form.)
/// # Safety
/// As [`reduce0`].
#[inline(always)]
pub unsafe fn reduce4<T: Elem>(input: *const T, out: *mut T, n: u32) {
    let sdata = gpu::dynamic_shared::<T>();
    let tid = gpu::thread_idx_x();
    let bd = gpu::block_dim_x();
    let i = gpu::block_idx_x() * (bd * 2) + tid;
    let mut my_sum = unsafe { load(input, i, n).add(load(input, i + bd, n)) };
    unsafe { sdata.set(tid, my_sum) };
    gpu::sync_threads();
    let mut s = bd / 2;
    while s > 32 {
        if tid < s {
            my_sum = my_sum.add(unsafe { sdata.at(tid + s) });
            unsafe { sdata.set(tid, my_sum) };
        }
        gpu::sync_threads();
        s >>= 1;
    }
    if tid < 32 {
        // Fetch the final intermediate sum from the second warp, then shuffle.
        if bd >= 64 {
            my_sum = my_sum.add(unsafe { sdata.at(tid + 32) });
        }
        my_sum = warp_sum_down(my_sum);
    }
    if tid == 0 {
        unsafe { out.add(gpu::block_idx_x() as usize).write(my_sum) };
    }
}

/// One unrolled step of reduce5/6: threads below `half` add `s[tid + half]`, when the block
/// has `2 * half` threads (a compile-time test), then the block barrier (always, as the sample).
#[inline(always)]
fn unrolled_step<T: Elem, const BS: u32>(
    sdata: gpu::SharedArray<T>,
    tid: u32,
    my_sum: &mut T,
    half: u32,
) {
    if BS >= 2 * half && tid < half {
        *my_sum = my_sum.add(unsafe { sdata.at(tid + half) });
        unsafe { sdata.set(tid, *my_sum) };
    }
    gpu::sync_threads();
}

/// reduce5/6's tree after the loads: `s[tid] = my_sum`, the unrolled steps for 512 down to 64
/// threads, then the last warp by shuffles. The sum is valid in thread 0.
#[inline(always)]
fn unrolled_block_sum<T: Elem, const BS: u32>(
    sdata: gpu::SharedArray<T>,
    tid: u32,
    mut my_sum: T,
) -> T {
    const { assert!(BS.is_power_of_two() && BS >= 32 && BS <= 512) };
    unsafe { sdata.set(tid, my_sum) };
    gpu::sync_threads();
    unrolled_step::<T, BS>(sdata, tid, &mut my_sum, 256);
    unrolled_step::<T, BS>(sdata, tid, &mut my_sum, 128);
    unrolled_step::<T, BS>(sdata, tid, &mut my_sum, 64);
    if tid < 32 {
        if BS >= 64 {
            my_sum = my_sum.add(unsafe { sdata.at(tid + 32) });
        }
        my_sum = warp_sum_down(my_sum);
    }
    my_sum
}

/// reduce5, completely unrolled: changed from reduce4, the block size is the const generic
/// `BS` (the sample's `template <unsigned int blockSize>`), so the shared-memory loop becomes
/// straight-line steps whose `BS >= ...` tests fold at compile time: no loop counter, no
/// branch on it. Launch with exactly `BS` threads.
/// # Safety
/// As [`reduce0`].
#[inline(always)]
pub unsafe fn reduce5<T: Elem, const BS: u32>(input: *const T, out: *mut T, n: u32) {
    let sdata = gpu::dynamic_shared::<T>();
    let tid = gpu::thread_idx_x();
    let i = gpu::block_idx_x() * (BS * 2) + tid;
    let my_sum = unsafe { load(input, i, n).add(load(input, i + BS, n)) };
    let sum = unrolled_block_sum::<T, BS>(sdata, tid, my_sum);
    if tid == 0 {
        unsafe { out.add(gpu::block_idx_x() as usize).write(sum) };
    }
}

/// reduce6, many elements per thread: changed from reduce5, a fixed grid (`REDUCE6_MAX_GRID` blocks) walks
/// the input in a grid-stride loop, each thread summing pairs `i`, `i + BS` in registers
/// before the block tree, so the per-block tree cost is paid once per block, not per tile.
/// `POW2` is the sample's `nIsPow2`: when `n` is a power of two (and at least `2 * BS`) every
/// `i + BS` is in range and its bounds check is compiled out.
/// # Safety
/// As [`reduce0`]; with `POW2`, `n` is a multiple of `2 * BS`.
#[inline(always)]
pub unsafe fn reduce6<T: Elem, const BS: u32, const POW2: bool>(
    input: *const T,
    out: *mut T,
    n: u32,
) {
    let sdata = gpu::dynamic_shared::<T>();
    let tid = gpu::thread_idx_x();
    let mut i = gpu::block_idx_x() * BS * 2 + tid;
    let grid_size = BS * 2 * gpu::grid_dim_x();
    let mut my_sum = T::ZERO;
    while i < n {
        my_sum = my_sum.add(unsafe { input.add(i as usize).read() });
        // Out-of-bounds guard; compiled out for power-of-two sizes.
        if POW2 || i + BS < n {
            my_sum = my_sum.add(unsafe { input.add((i + BS) as usize).read() });
        }
        i += grid_size;
    }
    let sum = unrolled_block_sum::<T, BS>(sdata, tid, my_sum);
    if tid == 0 {
        unsafe { out.add(gpu::block_idx_x() as usize).write(sum) };
    }
}
