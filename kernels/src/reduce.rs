//! Device-wide reduction in ONE launch: every block reduces a grid-stride share of the input,
//! writes its partial, and the last block to finish (found with an atomic ticket) reduces the
//! partials in block order and writes the result. No second launch, no host round trip.
//!
//! The grid depends on `n` alone (`launch::reduce_grid`), each thread visits a fixed set of
//! elements in a fixed order and the partials are combined in block order, so a float result's
//! bits depend only on the input.

use crate::block::block_reduce;
use crate::gpu;
use crate::launch::REDUCE_BLOCK;

/// Shared word telling the block whether it retired last.
const SCRATCH_WORDS: usize = 32;

crate::kernel! {
/// Sum of `n` f32 values at `input` (4-byte aligned; any 16-byte misalignment is handled by a
/// scalar head). `partials` holds `gridDim.x` floats of workspace; `retire_count` is a `u32`
/// that must be 0 at launch and is 0 again when the kernel ends. The sum lands in `out[0]`.
/// Block size `REDUCE_BLOCK`.
pub unsafe fn reduce_sum_f32(
    input: *const f32,
    n: u64,
    partials: *mut f32,
    retire_count: *mut u32,
    out: *mut f32,
) {
    let scratch = crate::static_shared!(REDUCE_SCRATCH: [f32; SCRATCH_WORDS]);
    let is_last = crate::static_shared!(REDUCE_IS_LAST: [u32; 1]);

    let tid = gpu::thread_idx_x() as u64;
    let block = gpu::block_idx_x() as u64;
    let grid = gpu::grid_dim_x() as u64;
    let threads = grid * REDUCE_BLOCK as u64;
    let gtid = block * REDUCE_BLOCK as u64 + tid;

    // Elements before the first 16-byte boundary go through scalar loads, the aligned body
    // through 128-bit loads, the remainder (< 4 elements) through scalar loads again.
    let misalign = (input as u64 & 15) / 4;
    let head = if misalign == 0 {
        0
    } else {
        (4 - misalign).min(n)
    };
    let vectors = (n - head) / 4;
    let body = unsafe { input.add(head as usize) };
    let tail_start = head + vectors * 4;

    let mut acc0 = 0.0f32;
    let mut acc1 = 0.0f32;
    // Two independent 16-byte loads per step keep more bytes in flight per thread.
    let mut v = gtid;
    while v + threads < vectors {
        let a = unsafe { gpu::load_nc_v4_f32(body.add(4 * v as usize)) };
        let b = unsafe { gpu::load_nc_v4_f32(body.add(4 * (v + threads) as usize)) };
        acc0 += (a[0] + a[1]) + (a[2] + a[3]);
        acc1 += (b[0] + b[1]) + (b[2] + b[3]);
        v += 2 * threads;
    }
    if v < vectors {
        let a = unsafe { gpu::load_nc_v4_f32(body.add(4 * v as usize)) };
        acc0 += (a[0] + a[1]) + (a[2] + a[3]);
    }
    if gtid < head {
        acc1 += unsafe { gpu::load_nc_f32(input.add(gtid as usize)) };
    }
    if gtid < n - tail_start {
        acc1 += unsafe { gpu::load_nc_f32(input.add((tail_start + gtid) as usize)) };
    }

    let add = |x: f32, y: f32| x + y;
    let block_sum = block_reduce(acc0 + acc1, 0.0, add, scratch);

    if tid == 0 {
        unsafe { partials.add(block as usize).write(block_sum) };
        // Make the partial visible GPU-wide before taking a ticket (the threadFenceReduction
        // pattern of the CUDA samples).
        gpu::thread_fence();
        let ticket = unsafe { gpu::atomic_add_u32(retire_count, 1) };
        unsafe { is_last.write(0, (ticket as u64 == grid - 1) as u32) };
    }
    gpu::sync_threads();
    if unsafe { is_last.read(0) } == 0 {
        return;
    }

    // Last block: every other block's partial is visible (their fence came before their ticket).
    gpu::thread_fence();
    let mut acc = 0.0f32;
    let mut i = tid;
    while i < grid {
        acc += unsafe { core::ptr::read_volatile(partials.add(i as usize)) };
        i += REDUCE_BLOCK as u64;
    }
    let total = block_reduce(acc, 0.0, add, scratch);
    if tid == 0 {
        unsafe {
            out.write(total);
            // Ready for the next launch without a memset.
            retire_count.write(0);
        }
    }
}
}
