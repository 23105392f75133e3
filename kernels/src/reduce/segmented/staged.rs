//! Short segments read as windows: a group's segments of up to [`WARP_MAX`] elements are
//! reduced from shared memory, their elements copied in by the whole block as one span of
//! 16-byte `cp.async` copies (a warp reading its own short segment from global memory keeps a
//! few hundred bytes in flight; the span keeps the whole stage in flight). The reduction from
//! shared memory is [`warp_segment`]'s, operation for operation: the same bits.

use super::*;

/// 16-byte vectors of the stage, the work-list form's dynamic shared memory ([`SEGMENTED`]).
pub const STAGE_VECS: u64 = SEGMENTED.stage_vecs;
/// Bytes of dynamic shared memory the work-list form is launched with.
pub const STAGE_BYTES: u32 = 16 * STAGE_VECS as u32;

/// The block's minimum (`max` false) or maximum of one `u64` a thread, in every thread. One
/// barrier; `slots` (a value per warp) may be rewritten after the caller's next barrier. The
/// warp's part takes two `redux.sync` (high words, then the low words of the lanes holding
/// the extreme high word), the block's part [`BLOCK`]` / 32` shared loads (a loop over
/// `u64` shuffles and a run-time warp count had been a fifth of the short segments'
/// instructions).
#[inline(always)]
pub(super) fn block_min_max(v: u64, max: bool, slots: gpu::SharedArray<u64>) -> u64 {
    let full = gpu::FULL_MASK;
    let redux = |x: u32| {
        if max {
            gpu::redux_max_u32(full, x)
        } else {
            gpu::redux_min_u32(full, x)
        }
    };
    let hi = redux((v >> 32) as u32);
    let low = if (v >> 32) as u32 == hi {
        v as u32
    } else if max {
        0
    } else {
        u32::MAX
    };
    let w = (hi as u64) << 32 | redux(low) as u64;
    if gpu::lane_id() == 0 {
        unsafe { slots.write(gpu::warp_id() as usize, w) };
    }
    gpu::sync_threads();
    let at = unsafe { gpu::shared_slots(slots, 0) };
    let mut r = unsafe { gpu::load_slot(at, 0) };
    for i in 1..BLOCK / gpu::WARP_SIZE {
        let x: u64 = unsafe { gpu::load_slot(at, i) };
        r = if max { r.max(x) } else { r.min(x) };
    }
    r
}

/// Copy elements `lo..hi` of `input` to the stage: element `i` at `stage[i - lo + pad]`,
/// `pad` the window start's misalignment in elements (`(address & 15) / size`), so that the
/// 16-byte vectors land aligned. Ends with a barrier.
///
/// # Safety
/// `input` valid for `hi` elements; `stage` holds [`STAGE_VECS`] vectors, at least
/// `pad + hi - lo` elements.
#[inline(always)]
pub(super) unsafe fn stage<T: Element>(
    input: *const T,
    lo: u64,
    hi: u64,
    pad: u64,
    stage: gpu::SharedArray<[u32; 4]>,
) {
    let tid = gpu::thread_idx_x() as u64;
    let b = gpu::block_dim_x() as u64;
    let per_vec = T::PER_VEC as u64;
    let x = unsafe { input.add(lo as usize) };
    let cut = crate::load::Cut::new(x, hi - lo);
    let elems = unsafe { stage.cast::<T>() };
    let body = x.wrapping_add(cut.head as usize) as *const u32;
    // The first whole vector lands on a 16-byte boundary of the stage. (32-bit counters and
    // a moving pointer: the 64-bit index's arithmetic had been 20 instructions a copy.)
    let first_vec = ((pad + cut.head) / per_vec) as u32;
    let (vectors, step) = (cut.vectors as u32, b as u32);
    let mut v = tid as u32;
    let mut src = body.wrapping_add(4 * v as usize);
    while v < vectors {
        unsafe { gpu::cp_async_16(stage, (first_vec + v) as usize, src) };
        v += step;
        src = src.wrapping_add(4 * step as usize);
    }
    gpu::cp_async_commit();
    if tid < cut.head {
        unsafe { elems.write((pad + tid) as usize, x.add(tid as usize).read()) };
    }
    let tail = cut.tail_start();
    if tid < (hi - lo) - tail {
        let i = tail + tid;
        unsafe { elems.write((pad + i) as usize, x.add(i as usize).read()) };
    }
    gpu::cp_async_wait_group::<0>();
    gpu::sync_threads();
}

/// The position of the `n`-th (from 0) set bit of `mask` (`n < mask.count_ones()`).
#[inline(always)]
fn nth_set(mask: u32, n: u32) -> u32 {
    let (mut m, mut n, mut pos) = (mask, n, 0);
    let mut half = 16;
    while half > 0 {
        let c = (m & ((1u32 << half) - 1)).count_ones();
        if n >= c {
            n -= c;
            m >>= half;
            pos += half;
        }
        half >>= 1;
    }
    pos
}

/// A warp reduces its lanes' segments flagged `mine` from the stage: lane `l`'s segment starts
/// at stage element `rel` and has `len` (<= [`WARP_MAX`]) elements; `seg(l)` is its index.
/// Every result is [`warp_segment`]'s bits: segments of at most `q` (1, 2, ..., 32) elements
/// go `32 / q` at a time, `q` lanes each, which reproduce the warp's butterfly exactly (the
/// steps whose partner lanes hold no element combine with the value such lanes hold there,
/// the identity combined with itself, so they need no shuffle); longer ones take the warp
/// one at a time, lane-strided.
///
/// # Safety
/// The stage holds the flagged segments' elements (written before a barrier).
#[inline(always)]
pub(super) unsafe fn reduce_staged<T: Element, O: ReduceOp<T>, S: SegmentSink<T, O::Acc>>(
    mine: bool,
    rel: u32,
    len: u32,
    seg: impl Fn(u32) -> u64,
    elems: gpu::SharedSlots<T>,
    out: *mut S::Out,
    index_out: *mut u64,
) {
    let lane = gpu::lane_id();
    let full = gpu::FULL_MASK;
    let load = |i: u32, at: u32| O::lift(unsafe { gpu::load_slot(elems, at + i) }, i as u64);
    let mut m = gpu::ballot_sync(full, mine);
    // (The bound is read at run time: a constant one would let LLVM unroll the six sizes.)
    let top = gpu::WARP_SIZE.min(gpu::block_dim_x());
    let mut q = 1u32;
    while q <= top && m != 0 {
        let mut fits = m & gpu::ballot_sync(full, len <= q);
        let per = gpu::WARP_SIZE / q;
        while fits != 0 {
            // The first `per` of them.
            let pack = if fits.count_ones() > per {
                fits & ((1u32 << nth_set(fits, per)) - 1)
            } else {
                fits
            };
            let (slot, r) = (lane / q, lane % q);
            let used = slot < pack.count_ones();
            let src = nth_set(pack, if used { slot } else { 0 });
            let at = gpu::shfl_sync(full, rel, src, 32);
            let n = gpu::shfl_sync(full, len, src, 32);
            let mut v = O::identity();
            if used && r < n {
                v = O::combine(v, load(r, at));
            }
            // Butterfly steps 16 .. q: the partner lane holds no element, only the identity
            // combined with itself once per step before.
            let mut none = O::identity();
            let mut o = 16;
            while o >= q {
                v = O::combine(v, none);
                none = O::combine(none, none);
                o >>= 1;
            }
            // Steps q / 2 .. 1 stay inside the q lanes: warp_reduce's, lower lane on the left.
            while o > 0 {
                let other = gpu::shfl_xor_sync(full, v, o, 32);
                let (l, r) = if lane & o == 0 {
                    (v, other)
                } else {
                    (other, v)
                };
                v = O::combine(l, r);
                o >>= 1;
            }
            if used && r == 0 {
                unsafe { S::store(out, index_out, seg(src), v) };
            }
            m &= !pack;
            fits &= !pack;
        }
        q <<= 1;
    }
    // Longer ones: the warp, lane `l` folding elements l, l + 32, ... in order.
    while m != 0 {
        let j = m.trailing_zeros();
        let at = gpu::shfl_sync(full, rel, j, 32);
        let n = gpu::shfl_sync(full, len, j, 32);
        let mut acc = O::identity();
        let mut i = lane;
        // Four loads in flight, folded in order (a row of 1024: 32 a lane).
        while i + 3 * gpu::WARP_SIZE < n {
            let v = [0, 1, 2, 3].map(|u| load(i + u * gpu::WARP_SIZE, at));
            // (By reference: an array's by-value iterator would live in local memory.)
            for x in v.iter() {
                acc = O::combine(acc, *x);
            }
            i += 4 * gpu::WARP_SIZE;
        }
        while i < n {
            acc = O::combine(acc, load(i, at));
            i += gpu::WARP_SIZE;
        }
        let total = warp_reduce(acc, O::combine);
        if lane == 0 {
            unsafe { S::store(out, index_out, seg(j), total) };
        }
        m &= m - 1;
    }
}

#[cfg(test)]
mod tests {
    use super::nth_set;
    use std::vec::Vec;

    #[test]
    fn nth_set_finds_each_set_bit() {
        for mask in [
            1u32,
            0b1010,
            0xffff_ffff,
            0x8000_0001,
            0x1234_5678,
            0xf0f0_0f0f,
        ] {
            let bits: Vec<u32> = (0..32).filter(|b| mask >> b & 1 == 1).collect();
            for (n, &b) in bits.iter().enumerate() {
                assert_eq!(nth_set(mask, n as u32), b, "mask {mask:#x} n {n}");
            }
        }
    }
}
