//! Fixed-length long rows: a block per chunk, no scheduler.

use super::*;

/// 16-byte loads a thread keeps in flight in [`rows_device`] ([`SEGMENTED`]).
pub const ROWS_LOADS: usize = SEGMENTED.rows_loads;
/// Loads in flight a lane on a short row (the bits do not depend on it): half the work list's
/// WARP_LOADS, whose unrolled rounds in every rows kernel had taken the embedded PTX over its
/// budget; the rows kernel's few registers keep more warps in flight instead.
const SHORT_ROW_LOADS: usize = 4;

/// Bytes of the rows kernel's workspace for `rows` rows of `cols` elements of `elem_bytes`
/// bytes with accumulators of `acc_bytes`: a `u32` counter per row (zero between launches),
/// then room for every chunk's partial. [`rows_device`] documents the layout.
pub const fn rows_workspace_bytes(rows: u64, cols: u64, elem_bytes: u64, acc_bytes: u64) -> u64 {
    let cpr = rows_chunks_per_row(cols, elem_bytes);
    if cpr == 1 {
        0
    } else {
        (4 * rows).div_ceil(16) * 16 + rows * cpr * acc_bytes
    }
}

/// Chunks per row (the most any row's start alignment gives): the rows kernel's units are
/// `rows x` this.
pub const fn rows_chunks_per_row(cols: u64, elem_bytes: u64) -> u64 {
    chunks_of(cols / (16 / elem_bytes))
}

/// The segmented reduction of `k` fixed-size rows of `segment_len` elements (short rows, up to
/// [`WARP_MAX`], a warp each; longer ones as below),
/// with the arguments of [`segmented_device`] (`begin`, `end`, `status`, `entry_cap` and
/// `partial_cap` unused): the same bits as `segmented_device` gives those rows (the same
/// [`chunk_partial`]s, combined in the same order), without its work list. The host knows
/// every row's length, so the work needs no classification: unit `u` is chunk `u % cpr` of
/// row `u / cpr` (`cpr` = [`rows_chunks_per_row`]), a block per unit (blocks stride over the
/// units). A one-chunk row's block stores the row's result; otherwise each chunk's partial
/// goes to the workspace and the block that counts a row's last chunk combines the row's
/// partials in order. Few registers (two loads in flight, no scheduler state): the general
/// kernel's 80 registers leave three blocks per SM and its chunk loop latency-bound on long
/// rows (CHANGELOG.md, issue 15).
///
/// `ws` (when a row has several chunks, [`rows_workspace_bytes`]): `k` `u32` counters, zero at
/// launch and again at the end, padded to 16 bytes, then `k · cpr` accumulators.
///
/// # Safety
/// As [`segmented_device`] with `begin` null and `k · segment_len <= n`.
#[inline(always)]
pub unsafe fn rows_device<T: Element, O: ReduceOp<T>, S: SegmentSink<T, O::Acc>>(
    p: SegmentedParams<T, S::Out>,
) {
    let SegmentedParams {
        input,
        segment_len,
        k,
        out,
        index_out,
        ws,
        ..
    } = p;
    if segment_len <= WARP_MAX {
        // Short rows: a warp a row (the warp order, `warp_segment`: the bits the work list
        // gives them), the grid's warps striding over the rows from global memory. (In the
        // work list's groups of 256, 16,384 rows of 1024 kept all but 64 blocks idle.)
        let warps = (gpu::block_dim_x() / gpu::WARP_SIZE) as u64;
        let mut r = gpu::block_idx_x() as u64 * warps + gpu::warp_id() as u64;
        while r < k {
            let total = unsafe {
                warp_segment::<T, O, { SHORT_ROW_LOADS }>(
                    input.add((r * segment_len) as usize),
                    segment_len,
                )
            };
            if gpu::lane_id() == 0 {
                unsafe { S::store(out, index_out, r, total) };
            }
            r += gpu::grid_dim_x() as u64 * warps;
        }
        return;
    }
    let scratch = crate::static_shared!(ROWS_SCRATCH: [u128; 32]);
    let scratch = unsafe { scratch.cast::<O::Acc>() };
    let last = crate::static_shared!(ROWS_LAST: [u32; 1]);
    let tid = gpu::thread_idx_x() as u64;
    let grid = gpu::grid_dim_x() as u64;
    let cols = segment_len;
    let cpr = rows_chunks_per_row(cols, core::mem::size_of::<T>() as u64);
    let units = k * cpr;
    let counters = ws as *mut u32;
    let partials =
        unsafe { (ws as *mut u8).add((4 * k).div_ceil(16) as usize * 16) } as *mut O::Acc;

    let mut u = gpu::block_idx_x() as u64;
    while u < units {
        let (r, c) = (u / cpr, u % cpr);
        let x = unsafe { input.add((r * cols) as usize) };
        let kc = cut(x, cols);
        // A row whose start alignment gives it one chunk fewer leaves its last unit empty.
        if c < kc.chunks {
            let p = unsafe { chunk_partial::<T, O, ROWS_LOADS>(x, cols, kc, c, scratch) };
            if kc.chunks == 1 {
                if tid == 0 {
                    unsafe { S::store(out, index_out, r, p) };
                }
            } else {
                let slot = unsafe { partials.add((r * cpr) as usize) };
                if tid == 0 {
                    unsafe {
                        core::ptr::write_volatile(slot.add(c as usize), p);
                        // Release the partial before counting the chunk (as the work list).
                        gpu::fence_acq_rel_gpu();
                        let d = gpu::atomic_add_u32(counters.add(r as usize), 1);
                        last.write(0, (d as u64 + 1 == kc.chunks) as u32);
                    }
                }
                gpu::sync_threads();
                if unsafe { last.read(0) } == 1 {
                    // The row's last chunk: every partial is visible (acquire); combine in
                    // order, as `block_segment` and the work list's finishing block do.
                    gpu::fence_acq_rel_gpu();
                    let total = unsafe { combine_partials::<T, O>(tid, slot, kc.chunks, scratch) };
                    if tid == 0 {
                        unsafe {
                            S::store(out, index_out, r, total);
                            // Every chunk of the row has counted: clear for the next launch.
                            core::ptr::write_volatile(counters.add(r as usize), 0);
                        }
                    }
                }
                // `last` is rewritten by the next unit.
                gpu::sync_threads();
            }
        }
        u += grid;
    }
}
