//! The pieces every form of the segmented reduction shares: a warp's or a block's segment,
//! a chunk's partial, the partials combined in order, bad offsets reported.

use super::*;

/// Record bad segment `s` (`kind` is [`BAD_DECREASING`] or [`BAD_OUT_OF_RANGE`]) in `status`:
/// it keeps `!((s << 1) | kind)` of the lowest bad segment (0: none), so the host can name it.
#[inline(always)]
pub(super) unsafe fn report_bad(status: *mut u64, s: u64, kind: u64) {
    let code = !((s << 1) | kind);
    let mut cur = unsafe { core::ptr::read_volatile(status) };
    while code > cur {
        let seen = unsafe { gpu::atomic_cas_u64(status, cur, code) };
        if seen == cur {
            break;
        }
        cur = seen;
    }
}

/// Segment `s`'s start and length: from `begin`/`end` (validated: a bad segment is reported
/// and treated as empty), or, when `begin` is null, `s * segment_len` and `segment_len`.
#[inline(always)]
pub(super) unsafe fn segment_bounds(
    s: u64,
    n: u64,
    begin: *const u64,
    end: *const u64,
    segment_len: u64,
    status: *mut u64,
) -> (u64, u64) {
    if begin.is_null() {
        return (s * segment_len, segment_len);
    }
    let (b, e) = unsafe { (begin.add(s as usize).read(), end.add(s as usize).read()) };
    if e < b {
        unsafe { report_bad(status, s, BAD_DECREASING) };
        (0, 0)
    } else if e > n {
        unsafe { report_bad(status, s, BAD_OUT_OF_RANGE) };
        (0, 0)
    } else {
        (b, e - b)
    }
}

/// A warp reduces the `len` (<= [`WARP_MAX`]) elements at `x`: lane `l` folds elements
/// `l, l + 32, ...` in order (`W` loads in flight; the bits do not depend on `W`), then the
/// butterfly. Valid in every lane.
#[inline(always)]
pub(super) unsafe fn warp_segment<T: Element, O: ReduceOp<T>, const W: usize>(
    x: *const T,
    len: u64,
) -> O::Acc {
    let lane = gpu::lane_id() as u64;
    let load = |i: u64| O::lift(unsafe { x.add(i as usize).read() }, i);
    let mut acc = O::identity();
    let mut i = lane;
    let step = gpu::WARP_SIZE as u64;
    // Rounds of W loads in flight together, folded in order: whole rounds first,
    // then one predicated round for the rest (a short segment's few elements per lane).
    while i + (W as u64 - 1) * step < len {
        let mut v = [O::identity(); W];
        for (u, slot) in v.iter_mut().enumerate() {
            *slot = load(i + u as u64 * step);
        }
        for a in v.iter() {
            acc = O::combine(acc, *a);
        }
        i += W as u64 * step;
    }
    if i < len {
        let mut v = [O::identity(); W];
        for (u, slot) in v.iter_mut().enumerate() {
            if i + u as u64 * step < len {
                *slot = load(i + u as u64 * step);
            }
        }
        // Index loops: an array's by-value iterator would live in local memory.
        for (u, a) in v.iter().enumerate() {
            if i + u as u64 * step < len {
                acc = O::combine(acc, *a);
            }
        }
    }
    warp_reduce(acc, O::combine)
}

/// Chunk `c` of the block-reduced segment at `x` (`len` elements, cut `k`), reduced by the
/// block: thread `j` folds the head element `j` (chunk 0), its vectors `j, j + BLOCK, ...` of
/// the chunk in order (`L` loads in flight; the bits do not depend on `L`), and the tail element `j` (last chunk); then
/// the block reduction. Valid in thread 0; ends with a barrier.
#[inline(always)]
pub(super) unsafe fn chunk_partial<T: Element, O: ReduceOp<T>, const L: usize>(
    x: *const T,
    len: u64,
    k: Cut,
    c: u64,
    scratch: gpu::SharedArray<O::Acc>,
) -> O::Acc {
    let tid = gpu::thread_idx_x() as u64;
    let per_vec = T::PER_VEC as u64;
    let b = BLOCK as u64;
    let mut acc = O::identity();
    if c == 0 && tid < k.head {
        acc = O::combine(acc, O::lift(unsafe { x.add(tid as usize).read() }, tid));
    }
    let body = unsafe { x.add(k.head as usize) } as *const u32;
    let load = |v: u64| unsafe { gpu::load_nc_v4_b32(body.add(4 * v as usize)) };
    // The last chunk takes the remainder (at most half a chunk, see `chunks_of`).
    let last = (c + 1 == k.chunks) as u64;
    let hi = ((c + 1 + last) * CHUNK_VECS).min(k.vectors);
    let mut v = c * CHUNK_VECS + tid;
    // L loads in flight, folded in order: the bits do not depend on L.
    while v + (L as u64 - 1) * b < hi {
        let mut w = [[0u32; 4]; L];
        for (u, slot) in w.iter_mut().enumerate() {
            *slot = load(v + u as u64 * b);
        }
        for (u, words) in w.iter().enumerate() {
            let first = k.head + (v + u as u64 * b) * per_vec;
            acc = O::combine(acc, fold_vec::<T, O>(*words, first));
        }
        v += L as u64 * b;
    }
    while v < hi {
        acc = O::combine(acc, fold_vec::<T, O>(load(v), k.head + v * per_vec));
        v += b;
    }
    let tail_start = k.head + k.vectors * per_vec;
    if c == k.chunks - 1 && tid < len - tail_start {
        let i = tail_start + tid;
        acc = O::combine(acc, O::lift(unsafe { x.add(i as usize).read() }, i));
    }
    block_reduce(acc, O::identity(), O::combine, scratch)
}

/// A several-chunk segment's result from its `chunks` partials at `partials`: thread `j` (`tid`) folds
/// partials `j, j + BLOCK, ...` in order, then the block reduction (the order that fixes the
/// bits; `block_segment` folds its partials the same way). Valid in thread 0; ends with a
/// barrier.
///
/// # Safety
/// `partials` valid for `chunks` accumulators, written (and made visible) before the call.
#[inline(always)]
pub(super) unsafe fn combine_partials<T: Element, O: ReduceOp<T>>(
    tid: u64,
    partials: *const O::Acc,
    chunks: u64,
    scratch: gpu::SharedArray<O::Acc>,
) -> O::Acc {
    let mut acc = O::identity();
    let mut j = tid;
    while j < chunks {
        acc = O::combine(acc, unsafe {
            core::ptr::read_volatile(partials.add(j as usize))
        });
        j += BLOCK as u64;
    }
    block_reduce(acc, O::identity(), O::combine, scratch)
}

/// One block reduces a whole block-path segment: every chunk in order, thread `c % BLOCK`
/// folding chunk `c`'s partial, then the block reduction (one chunk: its partial as is).
/// The same order as the work list's finishing block. Valid in thread 0.
#[inline(always)]
pub(super) unsafe fn block_segment<T: Element, O: ReduceOp<T>, const L: usize>(
    x: *const T,
    len: u64,
    scratch: gpu::SharedArray<O::Acc>,
    slot: gpu::SharedArray<O::Acc>,
) -> O::Acc {
    let tid = gpu::thread_idx_x() as u64;
    let k = cut(x, len);
    if k.chunks == 1 {
        return unsafe { chunk_partial::<T, O, L>(x, len, k, 0, scratch) };
    }
    let mut acc = O::identity();
    for c in 0..k.chunks {
        let p = unsafe { chunk_partial::<T, O, L>(x, len, k, c, scratch) };
        if tid == 0 {
            unsafe { slot.write(0, p) };
        }
        gpu::sync_threads();
        if tid == c % BLOCK as u64 {
            acc = O::combine(acc, unsafe { slot.read(0) });
        }
        // The slot is rewritten only after the next chunk's barriers.
    }
    block_reduce(acc, O::identity(), O::combine, scratch)
}
