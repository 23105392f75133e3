//! Segmented reduction in ONE launch: `out[s] = reduce(input[begin[s]..end[s]])` for every
//! segment `s`, with segments given by offsets (`begin`/`end`, CSR style) or by a fixed length
//! (the rows of a row-major matrix). Empty segments give the operator's identity; `lift` gets
//! the index *within* the segment (so argmin/argmax return positions inside their segment).
//!
//! Strategy per segment length `L` (CUB's small/medium/large segment policies are the model):
//! - Blocks of [`BLOCK`] threads take groups of [`SEGMENTS_PER_BLOCK`] consecutive segments
//!   (drawn in batches from a global counter): warp `w` of the block owns segment `8g + w`.
//! - `L <= WARP_MAX` (short): the owning warp reduces it alone, lane-strided with
//!   [`WARP_LOADS`] loads in flight per lane, and a shuffle butterfly combines the lanes.
//! - Longer segments are cut into *chunks* of [`CHUNK_VECS`] 16-byte vectors, the last one up
//!   to 1.5 times that ([`chunks_of`]; after a scalar head up to the first 16-byte boundary; a
//!   scalar tail after the last whole vector).
//!   A chunk is reduced by a whole block ([`VEC_LOADS`] vector loads in flight per thread,
//!   then a block reduction). A one-chunk segment is reduced by its group's block. A segment
//!   of several chunks is published on a work list: every block with nothing else to do draws
//!   its chunks one at a time (a per-segment counter), writes the chunk's partial, and the
//!   block that finishes the last chunk combines the partials. So one huge segment is read by
//!   the whole GPU, and skewed lengths balance.
//! - A few long offsets segments (the host's choice: at most [`LISTED_MAX`], at least a chunk
//!   of input per segment) skip the groups and the work list: [`listed_device`], the same
//!   kernel's other form, lists every chunk in shared memory from the offsets before any load.
//! - Fixed-size rows longer than [`WARP_MAX`] need no classification: [`rows_device`], a
//!   kernel of its own (few registers, a block per chunk), gives them the same bits.
//!
//! Deterministic: a segment's combining order is a function of its length and of its start's
//! address modulo 16 bytes (which fixes the head/vector/tail cut), never of the grid, of which
//! block or warp runs a chunk, or of timing: chunk `c`'s partial is always the same block
//! reduction, and the partials are always combined as "thread `j` folds partials
//! `j, j + BLOCK, ...` in order, then a block reduction", whether one block did every chunk (the
//! fall-back when the work list is full) or many did. So the bits are the same for every grid,
//! every GPU and the simulator (same code).
//!
//! Bad offsets never read out of bounds: a segment with `end < begin` or `end > n` is reduced
//! as empty (identity) and reported through `status` (see [`segmented_device`]), which the host
//! turns into an error.

use crate::block::block_reduce;
use crate::gpu::{self, ShflValue};
use crate::ops::{ArgAcc, Element, ReduceOp};
use crate::reduce::fold_vec;
use crate::warp::warp_reduce;

use super::policy::SEGMENTED;

/// Threads per block of the segmented reduction ([`SEGMENTED`]).
pub const BLOCK: u32 = SEGMENTED.block;
/// Segments per group: one per warp of a block.
pub const SEGMENTS_PER_BLOCK: u32 = BLOCK / gpu::WARP_SIZE;
/// Longest segment reduced by one warp alone ([`SEGMENTED`]).
pub const WARP_MAX: u64 = SEGMENTED.warp_max;
/// Scalar loads a lane of a warp-reduced segment keeps in flight ([`SEGMENTED`]).
pub const WARP_LOADS: u64 = SEGMENTED.warp_loads;
/// 16-byte loads a thread keeps in flight while reducing a chunk ([`SEGMENTED`]).
pub const VEC_LOADS: u64 = SEGMENTED.vec_loads;
/// 16-byte vectors per chunk ([`SegmentedPolicy::chunk_vecs`](super::policy::SegmentedPolicy::chunk_vecs)).
pub const CHUNK_VECS: u64 = SEGMENTED.chunk_vecs();

/// `status` code of a segment whose end lies before its begin.
pub const BAD_DECREASING: u64 = 0;
/// `status` code of a segment whose end lies past the input.
pub const BAD_OUT_OF_RANGE: u64 = 1;

/// u64 words of the workspace's control block: chunks allocated (entry count << 40 | chunk
/// count, one atomic so that entries' first chunks grow with their index), chunks claimed,
/// blocks exited, groups drawn, groups classified.
pub const CTL_WORDS: u64 = 8;
/// u64 words per work-list entry: segment, chunks done (the chunk slots carry the rest).
pub const ENTRY_WORDS: u64 = 2;
const ALLOC: usize = 0;
const CLAIMED: usize = 1;
const EXITED: usize = 2;
const GROUPS_DRAWN: usize = 3;
const CLASSIFIED: usize = 4;
const CHUNK_BITS: u64 = 40;
const CHUNK_MASK: u64 = (1 << CHUNK_BITS) - 1;
const E_SEG: usize = 0;
const E_DONE: usize = 1;
/// An owner word of a chunk slot whose segment is reduced by its own block (no room listed).
const SKIP: u64 = TAG - 1;
/// u64 words per chunk slot's owner record: entry + 1 (or [`SKIP`]), the segment's start,
/// length and first chunk slot, each word tagged with [`TAG`] (0 while unwritten).
pub const OWNER_WORDS: u64 = 4;
/// The bit every written owner-record word carries. Each word says on its own that it is
/// current (values are below 2^63: element counts and slot indices), so a claimer reads the
/// whole record in one round trip (two 16-byte relaxed loads) with no acquire order between
/// its words; the last block out clears every word for the next launch.
const TAG: u64 = 1 << 63;

/// How a block-reduced segment at `x` of `len` elements is cut: [`crate::load::Cut`]'s scalar
/// head, whole vectors and scalar tail, and the vectors' chunks.
#[derive(Clone, Copy)]
struct Cut {
    head: u64,
    vectors: u64,
    chunks: u64,
}

#[inline(always)]
fn cut<T: Element>(x: *const T, len: u64) -> Cut {
    let crate::load::Cut { head, vectors, .. } = crate::load::Cut::new(x, len);
    // (Chunks of equal sizes, the nearest whole number of them, were tried: the run-time
    // chunk size took the kernel from 80 to 93 registers, two blocks per SM instead of three,
    // and every case slower on an H100: 1e6 short segments 1.57x -> 1.09x CUB.)
    Cut {
        head,
        vectors,
        chunks: chunks_of(vectors),
    }
}

/// Chunks of a segment of `vectors` whole vectors: [`CHUNK_VECS`] each, the last one taking
/// the remainder when it is at most half a chunk (so up to 1.5 chunks): a tail chunk of a few
/// vectors would cost a whole chunk's claim, partial and barriers (1000 segments of 90,000 to
/// 110,000 f32: 3.6 chunks each on average with whole chunks, 3 with this rounding).
#[inline(always)]
pub const fn chunks_of(vectors: u64) -> u64 {
    let c = vectors.saturating_sub(CHUNK_VECS / 2).div_ceil(CHUNK_VECS);
    if c == 0 { 1 } else { c }
}

/// Where a segmented reduction writes segment `s`'s accumulator.
pub trait SegmentSink<T: Element, A: ShflValue> {
    /// The element type of the main output array.
    type Out: Copy;
    /// Store `acc` as segment `s`'s result (`index_out` is the second array, or null).
    ///
    /// # Safety
    /// `out` (and `index_out` where used) valid for `s + 1` elements.
    unsafe fn store(out: *mut Self::Out, index_out: *mut u64, s: u64, acc: A);
}

/// The accumulator itself goes to `out[s]` (every operator; `index_out` unused).
pub struct AccSink;
impl<T: Element, A: ShflValue> SegmentSink<T, A> for AccSink {
    type Out = A;
    #[inline(always)]
    unsafe fn store(out: *mut A, _: *mut u64, s: u64, acc: A) {
        unsafe { out.add(s as usize).write(acc) }
    }
}

/// Argmin/argmax: the value goes to `out[s]`, the index within the segment to
/// `index_out[s]` (`u64::MAX` for an empty segment, whose value is the identity).
pub struct ArgSink;
impl<T: Element> SegmentSink<T, ArgAcc<T>> for ArgSink {
    type Out = T;
    #[inline(always)]
    unsafe fn store(out: *mut T, index_out: *mut u64, s: u64, acc: ArgAcc<T>) {
        unsafe {
            out.add(s as usize).write(acc.value);
            index_out.add(s as usize).write(acc.index);
        }
    }
}

/// Record bad segment `s` (`kind` is [`BAD_DECREASING`] or [`BAD_OUT_OF_RANGE`]) in `status`:
/// it keeps `!((s << 1) | kind)` of the lowest bad segment (0: none), so the host can name it.
#[inline(always)]
unsafe fn report_bad(status: *mut u64, s: u64, kind: u64) {
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
unsafe fn segment_bounds(
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
unsafe fn warp_segment<T: Element, O: ReduceOp<T>, const W: usize>(
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
unsafe fn chunk_partial<T: Element, O: ReduceOp<T>, const L: usize>(
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
unsafe fn combine_partials<T: Element, O: ReduceOp<T>>(
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
unsafe fn block_segment<T: Element, O: ReduceOp<T>, const L: usize>(
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

/// The launch parameters of the segmented reductions ([`segmented_device`], [`rows_device`]):
/// the kernels' one parameter, by value.
#[repr(C)]
pub struct SegmentedParams<T, Out> {
    /// The input.
    pub input: *const T,
    /// Elements at `input`.
    pub n: u64,
    /// Segment `s` starts at `begin[s]`; null for fixed-length rows.
    pub begin: *const u64,
    /// Segment `s` ends at `end[s]` (unused for rows).
    pub end: *const u64,
    /// The rows' length (when `begin` is null).
    pub segment_len: u64,
    /// Segments.
    pub k: u64,
    /// One result per segment.
    pub out: *mut Out,
    /// One index per segment (argmin/argmax), or null.
    pub index_out: *mut u64,
    /// The offsets check's status word.
    pub status: *mut u64,
    /// The workspace.
    pub ws: *mut u64,
    /// Work-list entries the workspace holds; 0 selects the listed form.
    pub entry_cap: u64,
    /// Partials the workspace holds.
    pub partial_cap: u64,
}
crate::params_copy!(SegmentedParams<T, Out>);

/// The one-launch segmented reduction of the `k` segments of the `n` elements at `input` with
/// operator `O`; segment `s` is `begin[s]..end[s]`, or, when `begin` is null,
/// `s * segment_len .. (s + 1) * segment_len` (the host then guarantees `k * segment_len <= n`).
/// Results go through the sink `S` to `out` (and `index_out`). Bad offsets (`end < begin`,
/// `end > n`) make the segment's result the identity and are recorded in `status` (a `u64`
/// that must be 0 at launch; it ends holding `!((s << 1) | kind)` of the lowest bad segment
/// `s`, or 0). `ws` is the work list: [`CTL_WORDS`] control words, `entry_cap` entries of
/// [`ENTRY_WORDS`], `partial_cap` owner records of [`OWNER_WORDS`] (all zero at launch; zero
/// again at the end), then
/// room for `partial_cap` accumulators (16-byte aligned; `partial_cap` even). Any grid of
/// [`BLOCK`]-thread blocks gives the same bits. `entry_cap` 0 (with offsets) selects the
/// listed form instead: [`listed_device`] with `partial_cap` as its `cap` and `ws` laid out
/// as it says.
///
/// The work list: a group's block lists each of its several-chunk segments (one atomic gives
/// the entry and its chunk slots `base..base + chunks`; the warp marks each slot's owner word
/// with the entry). Blocks with no group left claim chunk slots one at a time from one global
/// counter (O(1) per chunk, whatever the number of entries), the next claim in flight while a
/// chunk is read; a slot's owner word says which entry and chunk it is.
///
/// # Safety
/// Pointers valid for the sizes above; `begin`/`end` (when not null) for `k` offsets each.
#[inline(always)]
pub unsafe fn segmented_device<T: Element, O: ReduceOp<T>, S: SegmentSink<T, O::Acc>>(
    p: SegmentedParams<T, S::Out>,
) {
    let SegmentedParams {
        input,
        n,
        begin,
        end,
        segment_len,
        k,
        out,
        index_out,
        status,
        ws,
        entry_cap,
        partial_cap,
    } = p;
    if entry_cap == 0 {
        // A few long offsets segments (the host's choice): chunks listed up front, no work
        // list. The same bits.
        unsafe { listed_device::<T, O, S>(p) };
        return;
    }
    // 32 slots of up to 16 bytes for the block reduction, one per warp.
    let scratch = crate::static_shared!(SEG_SCRATCH: [u128; 32]);
    let scratch = unsafe { scratch.cast::<O::Acc>() };
    let slot = crate::static_shared!(SEG_SLOT: [u128; 1]);
    let slot = unsafe { slot.cast::<O::Acc>() };
    // Start and length of each warp's segment when its group's block reduces it (0: none).
    let long_start = crate::static_shared!(SEG_LONG_START: [u64; SEGMENTS_PER_BLOCK as usize]);
    let long_len = crate::static_shared!(SEG_LONG_LEN: [u64; SEGMENTS_PER_BLOCK as usize]);
    // Thread 0's decisions, broadcast.
    let bcast = crate::static_shared!(SEG_BCAST: [u64; 8]);

    let tid = gpu::thread_idx_x() as u64;
    let lane = gpu::lane_id() as u64;
    let warp = gpu::warp_id() as u64;
    let per = SEGMENTS_PER_BLOCK as u64;
    let groups = k.div_ceil(per);
    let grid = gpu::grid_dim_x() as u64;
    // Groups per draw: a few draws per block, so the counter is not a hot spot.
    let batch = (groups / (4 * grid)).max(1);
    let ctl = ws;
    let entries = unsafe { ws.add(CTL_WORDS as usize) };
    let owners = unsafe { entries.add((entry_cap * ENTRY_WORDS) as usize) };
    let partials = unsafe { owners.add((partial_cap * OWNER_WORDS) as usize) } as *mut O::Acc;
    let owner = |c: u64, f: u64| unsafe { owners.add((c * OWNER_WORDS + f) as usize) };
    let entry = |i: u64, f: usize| unsafe { entries.add((i * ENTRY_WORDS) as usize + f) };
    let vol = |p: *mut u64| unsafe { core::ptr::read_volatile(p) };
    let chunks_allocated = || vol(ctl.wrapping_add(ALLOC)) & CHUNK_MASK;
    let claim = || unsafe { gpu::atomic_add_u64(ctl.wrapping_add(CLAIMED), 1) };

    const WORK: u64 = 1;
    const GROUPS: u64 = 2;
    const EXIT: u64 = 3;
    // Thread 0's claimed chunk slot not yet worked on (u64::MAX: none).
    let mut claimed = u64::MAX;
    loop {
        // Thread 0 decides: a batch of groups while any is left, then claimed chunks, then the
        // end.
        if tid == 0 {
            let decision = loop {
                if claimed == u64::MAX && vol(ctl.wrapping_add(GROUPS_DRAWN)) < groups {
                    let g = unsafe { gpu::atomic_add_u64(ctl.wrapping_add(GROUPS_DRAWN), batch) };
                    if g < groups {
                        unsafe {
                            bcast.write(1, g);
                            bcast.write(2, (g + batch).min(groups));
                        }
                        break GROUPS;
                    }
                }
                if claimed == u64::MAX {
                    claimed = claim();
                }
                if claimed < partial_cap {
                    // Usually written long ago: one round trip. (The fence before the chunk's
                    // partial orders the entry's words, written before this record, before
                    // this block's use of them.)
                    let [o, start] = unsafe { gpu::load_relaxed_v2_u64(owner(claimed, 0)) };
                    let [len, base] = unsafe { gpu::load_relaxed_v2_u64(owner(claimed, 2)) };
                    if o & start & len & base & TAG != 0 {
                        let o = o & !TAG;
                        if o == SKIP {
                            claimed = u64::MAX; // its segment's own block reduces it
                            continue;
                        }
                        let base = base & !TAG;
                        unsafe {
                            bcast.write(1, o - 1);
                            bcast.write(2, claimed - base);
                            bcast.write(4, start & !TAG);
                            bcast.write(5, len & !TAG);
                            bcast.write(6, base);
                        }
                        // The next claim goes out now; its answer is awaited after this chunk.
                        claimed = claim();
                        break WORK;
                    }
                }
                if claimed < chunks_allocated() {
                    if claimed >= partial_cap {
                        claimed = u64::MAX; // no room: its segment's own block reduces it
                        continue;
                    }
                    // Allocated, its record not yet (wholly) visible: a running warp writes it.
                    gpu::nanosleep(32);
                    continue;
                }
                // Beyond every chunk allocated so far: done once every group is classified
                // (no more will be), else wait for the groups being classified.
                if unsafe { gpu::load_acquire_u64(ctl.wrapping_add(CLASSIFIED)) } == groups
                    && claimed >= chunks_allocated()
                {
                    break EXIT;
                }
                gpu::nanosleep(200);
            };
            unsafe { bcast.write(0, decision) };
        }
        gpu::sync_threads();
        let what = unsafe { bcast.read(0) };
        if what == EXIT {
            break;
        }
        if what == WORK {
            // Chunk `c` of list entry `i`.
            let (i, c) = unsafe { (bcast.read(1), bcast.read(2)) };
            let (start, len, base) = unsafe { (bcast.read(4), bcast.read(5), bcast.read(6)) };
            let x = unsafe { input.add(start as usize) };
            let kc = cut(x, len);
            let p = unsafe { chunk_partial::<T, O, LISTED_LOADS>(x, len, kc, c, scratch) };
            if tid == 0 {
                unsafe {
                    core::ptr::write_volatile(partials.add((base + c) as usize), p);
                    // Release the partial before counting the chunk done (as the one-launch
                    // reduce's ticket).
                    gpu::fence_acq_rel_gpu();
                    let d = gpu::atomic_add_u64(entry(i, E_DONE), 1);
                    bcast.write(7, (d + 1 == kc.chunks) as u64);
                }
            }
            gpu::sync_threads();
            if unsafe { bcast.read(7) } == 1 {
                // The last chunk: every partial is visible (acquire), combine in order.
                gpu::fence_acq_rel_gpu();
                let total = unsafe {
                    combine_partials::<T, O>(tid, partials.add(base as usize), kc.chunks, scratch)
                };
                if tid == 0 {
                    unsafe { S::store(out, index_out, vol(entry(i, E_SEG)), total) };
                }
            }
            gpu::sync_threads();
            continue;
        }
        // A batch of groups.
        let (a, b) = unsafe { (bcast.read(1), bcast.read(2)) };
        let mut g = a;
        while g < b {
            let s = g * per + warp;
            let (start, len) = if s < k {
                unsafe { segment_bounds(s, n, begin, end, segment_len, status) }
            } else {
                (0, 0)
            };
            let mut alone = 0;
            if s < k && len <= WARP_MAX {
                let total = unsafe {
                    warp_segment::<T, O, { WARP_LOADS as usize }>(input.add(start as usize), len)
                };
                if lane == 0 {
                    unsafe { S::store(out, index_out, s, total) };
                }
            } else if s < k {
                // (Warp-uniform from here: one segment per warp.)
                let kc = cut(unsafe { input.add(start as usize) }, len);
                alone = len;
                if kc.chunks > 1 {
                    // List it: an entry and chunk slots; when the list or the slots are full,
                    // the slots are marked SKIP and the segment is reduced here.
                    let mut word = [0u64; 2];
                    if lane == 0 {
                        let packed = unsafe {
                            gpu::atomic_add_u64(
                                ctl.wrapping_add(ALLOC),
                                (1 << CHUNK_BITS) + kc.chunks,
                            )
                        };
                        let (i, base) = (packed >> CHUNK_BITS, packed & CHUNK_MASK);
                        let listed = i < entry_cap && base + kc.chunks <= partial_cap;
                        if listed {
                            unsafe {
                                entry(i, E_SEG).write(s);
                                entry(i, E_DONE).write(0);
                            }
                        }
                        word = [if listed { i + 1 } else { SKIP }, base];
                    }
                    let who = gpu::shfl_sync(gpu::FULL_MASK, word[0], 0, 32);
                    let base = gpu::shfl_sync(gpu::FULL_MASK, word[1], 0, 32);
                    // Lane 0's entry writes, then (a fence in every lane that writes one)
                    // the owner records, each word tagged.
                    gpu::sync_warp(gpu::FULL_MASK);
                    if lane < kc.chunks {
                        gpu::fence_acq_rel_gpu();
                    }
                    let mut c = lane;
                    while c < kc.chunks && base + c < partial_cap {
                        unsafe {
                            gpu::store_relaxed_v2_u64(owner(base + c, 0), [who | TAG, start | TAG]);
                            gpu::store_relaxed_v2_u64(owner(base + c, 2), [len | TAG, base | TAG]);
                        }
                        c += gpu::WARP_SIZE as u64;
                    }
                    if who != SKIP {
                        alone = 0;
                    }
                }
            }
            if lane == 0 {
                unsafe {
                    long_start.write(warp as usize, start);
                    long_len.write(warp as usize, alone);
                }
            }
            // Every warp's listing (fenced above) is done here.
            gpu::sync_threads();
            if tid == 0 && g + 1 == b {
                gpu::fence_acq_rel_gpu();
                unsafe { gpu::atomic_add_u64(ctl.wrapping_add(CLASSIFIED), b - a) };
            }
            // Longer segments of the group: the whole block, one after the other. (The bound
            // is read at run time: a constant bound would let LLVM unroll the loop and inline
            // the block path eight times.)
            for w in 0..(gpu::block_dim_x() / gpu::WARP_SIZE) as u64 {
                let len = unsafe { long_len.read(w as usize) };
                if len == 0 {
                    continue;
                }
                let x = unsafe { input.add(long_start.read(w as usize) as usize) };
                let total =
                    unsafe { block_segment::<T, O, { VEC_LOADS as usize }>(x, len, scratch, slot) };
                if tid == 0 {
                    unsafe { S::store(out, index_out, g * per + w, total) };
                }
            }
            // The next group rewrites the shared arrays.
            gpu::sync_threads();
            g += 1;
        }
    }
    // The last block out clears the work list for the next launch (every other block is done
    // with it).
    if tid == 0 {
        gpu::fence_acq_rel_gpu();
        let e = unsafe { gpu::atomic_add_u64(ctl.wrapping_add(EXITED), 1) };
        unsafe { bcast.write(7, (e + 1 == grid) as u64) };
    }
    gpu::sync_threads();
    if unsafe { bcast.read(7) } == 1 {
        gpu::fence_acq_rel_gpu();
        let used = chunks_allocated().min(partial_cap);
        let mut c = tid;
        while c < used {
            unsafe {
                gpu::store_relaxed_v2_u64(owner(c, 0), [0, 0]);
                gpu::store_relaxed_v2_u64(owner(c, 2), [0, 0]);
            }
            c += BLOCK as u64;
        }
        gpu::sync_threads();
        if tid == 0 {
            for w in 0..CTL_WORDS as usize {
                unsafe { core::ptr::write_volatile(ctl.add(w), 0) };
            }
        }
    }
}

/// 16-byte loads a thread keeps in flight in [`rows_device`] ([`SEGMENTED`]).
pub const ROWS_LOADS: usize = SEGMENTED.rows_loads;

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

/// The segmented reduction of `k` fixed-size rows of `segment_len` (> [`WARP_MAX`]) elements,
/// with the arguments of [`segmented_device`] (`begin`, `end`, `status`, `entry_cap` and
/// `partial_cap` unused): the same bits as `segmented_device` gives those rows (the same
/// [`chunk_partial`]s, combined in the same order), without its work list. The host knows
/// every row's length, so the work needs no classification: unit `u` is chunk `u % cpr` of
/// row `u / cpr` (`cpr` = [`rows_chunks_per_row`]), a block per unit (blocks stride over the
/// units). A one-chunk row's block stores the row's result; otherwise each chunk's partial
/// goes to the workspace and the block that counts a row's last chunk combines the row's
/// partials in order. Few registers (two loads in flight, no scheduler state): on an H100
/// the general kernel's 80 registers left three blocks per SM and the chunk loop
/// latency-bound (0.91x CUB on 1024 rows of 65536 f32).
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

/// 16-byte loads a thread keeps in flight in [`listed_device`]'s chunks ([`SEGMENTED`]; the
/// bits do not depend on it).
pub const LISTED_LOADS: usize = SEGMENTED.listed_loads;

/// Most segments [`listed_device`] takes ([`SEGMENTED`]): its table holds a `u64` per segment
/// in dynamic shared memory.
pub const LISTED_MAX: u64 = SEGMENTED.listed_max;

// [`listed_device`]'s shared words: the unit being read (segment, its first unit, the chunk,
// start and length), whether its block counted the segment's last chunk, the scan's warp totals.
const U_SEG: usize = 2;
const U_FIRST: usize = 3;
const U_CHUNK: usize = 4;
const U_BEGIN: usize = 5;
const U_LEN: usize = 6;
const U_LAST: usize = 7;
const U_TOTALS: usize = 8;

/// Bytes of [`listed_device`]'s workspace for `k` segments and room for `cap` partials of
/// `acc_bytes` each: two control words, a `u32` counter per segment (padded to 16 bytes), then
/// the partials.
pub const fn listed_workspace_bytes(k: u64, cap: u64, acc_bytes: u64) -> u64 {
    16 + (4 * k).div_ceil(16) * 16 + cap * acc_bytes
}

/// The segmented reduction of a few (at most [`LISTED_MAX`]) offsets segments by chunks listed
/// up front: the same bits as [`segmented_device`] (the same [`warp_segment`]s and
/// [`chunk_partial`]s, combined in the same order), without its work list. Each block first
/// reads all `k` offsets and writes every segment's unit count (1 for a segment of at most
/// [`WARP_MAX`] elements, else its chunks) to a table in dynamic shared memory, then scans it:
/// unit `u` is then chunk `u - table[s - 1]` of the segment `s` whose range holds `u`, found by
/// a binary search, so a block knows where its first chunk lies after one round of loads (the
/// work list's classification, allocation and owner records take several). A block's first
/// unit is its index; thread 0 claims the next one from a counter as each unit starts, so the
/// claim's round trip passes while the other warps load; a segment's partials go to
/// the workspace at its table position, and the block that counts the segment's last chunk
/// combines them in order. Bad offsets give the identity and are reported by block 0.
///
/// `ws` ([`listed_workspace_bytes`]): two `u64` control words (units claimed past the grid,
/// blocks exited), `k` `u32` counters, all zero at launch and again at the end, then room for
/// `cap` partials; a segment whose partials would reach past `cap` (only overlapping segments
/// can) is reduced by the block that draws its first chunk alone ([`block_segment`]'s order:
/// the same bits). Launch with `8 * k` bytes of dynamic shared memory.
///
/// # Safety
/// As [`segmented_device`] with `begin`/`end` valid for `k <= LISTED_MAX` offsets each.
#[inline(always)]
pub unsafe fn listed_device<T: Element, O: ReduceOp<T>, S: SegmentSink<T, O::Acc>>(
    p: SegmentedParams<T, S::Out>,
) {
    let SegmentedParams {
        input,
        n,
        begin,
        end,
        k,
        out,
        index_out,
        status,
        ws,
        ..
    } = p;
    let cap = p.partial_cap;
    let scratch = crate::static_shared!(LISTED_SCRATCH: [u128; 32]);
    let scratch = unsafe { scratch.cast::<O::Acc>() };
    let slot = crate::static_shared!(LISTED_SLOT: [u128; 1]);
    let slot = unsafe { slot.cast::<O::Acc>() };
    // [0..2]: the next unit (two, alternating, so a write never meets a late read); then the
    // unit's state; then the scan's warp totals.
    let sh = crate::static_shared!(LISTED_WORDS: [u64; 16]);
    let table = gpu::dynamic_shared::<u64>();
    let tid = gpu::thread_idx_x() as u64;
    let grid = gpu::grid_dim_x() as u64;
    let b = BLOCK as u64;
    let counters = unsafe { ws.add(2) } as *mut u32;
    let partials =
        unsafe { (ws as *mut u8).add(16 + (4 * k).div_ceil(16) as usize * 16) } as *mut O::Acc;
    let report = if gpu::block_idx_x() == 0 {
        status
    } else {
        core::ptr::null_mut()
    };
    let bounds = |s: u64, report: *mut u64| -> (u64, u64) {
        let (bg, e) = unsafe { (begin.add(s as usize).read(), end.add(s as usize).read()) };
        if e < bg || e > n {
            if !report.is_null() {
                let kind = if e < bg {
                    BAD_DECREASING
                } else {
                    BAD_OUT_OF_RANGE
                };
                unsafe { report_bad(report, s, kind) };
            }
            (0, 0)
        } else {
            (bg, e - bg)
        }
    };
    let units_of = |bg: u64, len: u64| -> u64 {
        if len <= WARP_MAX {
            1
        } else {
            cut(unsafe { input.add(bg as usize) }, len).chunks
        }
    };

    // Every segment's units, then an inclusive scan in place: thread j owns the `m`
    // consecutive entries from `j * m`.
    let mut s = tid;
    while s < k {
        let (bg, len) = bounds(s, report);
        unsafe { table.write(s as usize, units_of(bg, len)) };
        s += b;
    }
    gpu::sync_threads();
    let m = k.div_ceil(b);
    let lo = (tid * m).min(k);
    let hi = (lo + m).min(k);
    let mut own = 0u64;
    for i in lo..hi {
        own += unsafe { table.read(i as usize) };
    }
    let incl = crate::warp::warp_inclusive_scan(own, |x, y| x + y);
    let warp = tid / gpu::WARP_SIZE as u64;
    if gpu::lane_id() == gpu::WARP_SIZE - 1 {
        unsafe { sh.write(U_TOTALS + warp as usize, incl) };
    }
    gpu::sync_threads();
    let mut run = incl - own;
    for w in 0..warp {
        run += unsafe { sh.read(U_TOTALS + w as usize) };
    }
    for i in lo..hi {
        run += unsafe { table.read(i as usize) };
        unsafe { table.write(i as usize, run) };
    }
    gpu::sync_threads();

    // The unit's state lives in shared memory (thread 0 decides, every thread reads it back
    // after the chunk), not in registers through the chunk loop: this path shares the general
    // kernel's register budget (80 for three blocks per SM).
    let mut u = gpu::block_idx_x() as u64;
    let mut parity = 0usize;
    while u < unsafe { table.read(k as usize - 1) } {
        if tid == 0 {
            // The next claim (read after this unit's last barrier; the slot read two units
            // ago was read before this unit's first barrier).
            unsafe { sh.write(parity, grid + gpu::atomic_add_u64(ws, 1)) };
            // The segment whose units hold u: the first table entry above u.
            let (mut a, mut z) = (0u64, k);
            while a < z {
                let mid = (a + z) / 2;
                if unsafe { table.read(mid as usize) } > u {
                    z = mid;
                } else {
                    a = mid + 1;
                }
            }
            let first = if a == 0 {
                0
            } else {
                unsafe { table.read(a as usize - 1) }
            };
            let (bg, len) = bounds(a, core::ptr::null_mut());
            unsafe {
                sh.write(U_SEG, a);
                sh.write(U_FIRST, first);
                sh.write(U_CHUNK, u - first);
                sh.write(U_BEGIN, bg);
                sh.write(U_LEN, len);
            }
        }
        gpu::sync_threads();
        let len = unsafe { sh.read(U_LEN) };
        let x = unsafe { input.add(sh.read(U_BEGIN) as usize) };
        if len <= WARP_MAX {
            if warp == 0 {
                let acc = unsafe { warp_segment::<T, O, { WARP_LOADS as usize }>(x, len) };
                if tid == 0 {
                    unsafe { S::store(out, index_out, sh.read(U_SEG), acc) };
                }
            }
        } else {
            let kc = cut(x, len);
            let c = unsafe { sh.read(U_CHUNK) };
            if unsafe { sh.read(U_FIRST) } + kc.chunks > cap {
                // No room for its partials: the block drawing chunk 0 reduces it alone.
                if c == 0 {
                    let total = unsafe {
                        block_segment::<T, O, { VEC_LOADS as usize }>(x, len, scratch, slot)
                    };
                    if tid == 0 {
                        unsafe { S::store(out, index_out, sh.read(U_SEG), total) };
                    }
                }
            } else {
                let p = unsafe { chunk_partial::<T, O, LISTED_LOADS>(x, len, kc, c, scratch) };
                // Read back after the chunk's barriers (not kept in registers through it).
                let (s, len) = unsafe { (sh.read(U_SEG), sh.read(U_LEN)) };
                let kc = cut(unsafe { input.add(sh.read(U_BEGIN) as usize) }, len);
                if kc.chunks == 1 {
                    if tid == 0 {
                        unsafe { S::store(out, index_out, s, p) };
                    }
                } else {
                    let mine = unsafe { partials.add(sh.read(U_FIRST) as usize) };
                    if tid == 0 {
                        unsafe {
                            let c = sh.read(U_CHUNK);
                            core::ptr::write_volatile(mine.add(c as usize), p);
                            // Release the partial before counting the chunk.
                            gpu::fence_acq_rel_gpu();
                            let d = gpu::atomic_add_u32(counters.add(s as usize), 1);
                            sh.write(U_LAST, (d as u64 + 1 == kc.chunks) as u64);
                        }
                    }
                    gpu::sync_threads();
                    if unsafe { sh.read(U_LAST) } == 1 {
                        // The segment's last chunk: every partial is visible (acquire).
                        gpu::fence_acq_rel_gpu();
                        let total =
                            unsafe { combine_partials::<T, O>(tid, mine, kc.chunks, scratch) };
                        if tid == 0 {
                            unsafe {
                                S::store(out, index_out, s, total);
                                // Every chunk has counted: clear for the next launch.
                                core::ptr::write_volatile(counters.add(s as usize), 0);
                            }
                        }
                    }
                }
            }
        }
        gpu::sync_threads();
        u = unsafe { sh.read(parity) };
        parity ^= 1;
    }
    if tid == 0 {
        // The last block out clears the control words for the next launch (every claim made).
        let e = unsafe { gpu::atomic_add_u64(ws.add(1), 1) };
        if e + 1 == grid {
            unsafe {
                core::ptr::write_volatile(ws, 0);
                core::ptr::write_volatile(ws.add(1), 0);
            }
        }
    }
}

/// The simulator's entry point of a segmented reduction kernel.
#[cfg(not(target_arch = "nvptx64"))]
pub type SimSegmentedFn<T, Out> = unsafe fn(SegmentedParams<T, Out>);

/// An operator whose segmented reduction kernel over `T` exists
/// ([`segmented_reduce_kernels!`](crate::segmented_reduce_kernels) implements it).
#[cfg(not(target_arch = "nvptx64"))]
pub trait SegmentedReduceInstance<T: Element>: ReduceOp<T> {
    /// What `out` holds per segment: the accumulator, or for argmin/argmax the value (the
    /// index going to the second output).
    type Out: Copy;
    /// Whether the kernel writes an index per segment to its second output (argmin/argmax).
    const WRITES_INDEX: bool;
    /// The kernel: `segmented_device::<T, Self, _>` under its exported name.
    const KERNEL: crate::Kernel<SimSegmentedFn<T, Self::Out>>;
    /// The fixed-size rows kernel for rows longer than [`WARP_MAX`]: `rows_device::<T, Self,
    /// _>` (the same arguments and the same bits as [`Self::KERNEL`] for those rows).
    const ROWS_KERNEL: crate::Kernel<SimSegmentedFn<T, Self::Out>>;
}

/// Export `segmented_device::<T, Op, _>` and `rows_device::<T, Op, _>` as named kernels (PTX
/// entries / simulator functions) and register them with [`SegmentedReduceInstance`].
/// `name, rows_name: T, Op;` writes the accumulator per segment; `name, rows_name: T, Op, arg;`
/// (for [`ArgAcc`] accumulators) writes the value and the index within the segment to two
/// arrays. A user operator: `segmented_reduce_kernels! { my_seg, my_seg_rows: f32, MyOp; }`.
#[macro_export]
macro_rules! segmented_reduce_kernels {
    ($($name:ident, $rows:ident : $t:ty, $op:ty $(, $arg:ident)?;)*) => {$(
        $crate::segmented_reduce_kernels!(@one stringify!($name), stringify!($rows), $t, $op $(, $arg)?);
    )*};
    (@one $name:expr, $rows:expr, $t:ty, $op:ty) => {
        $crate::segmented_reduce_kernels!(
            @emit $name, $rows, $t, $op, $crate::reduce::segmented::AccSink,
            <$op as $crate::ops::ReduceOp<$t>>::Acc, false
        );
    };
    (@one $name:expr, $rows:expr, $t:ty, $op:ty, arg) => {
        $crate::segmented_reduce_kernels!(
            @emit $name, $rows, $t, $op, $crate::reduce::segmented::ArgSink, $t, true
        );
    };
    (@emit $name:expr, $rows:expr, $t:ty, $op:ty, $sink:ty, $out:ty, $writes_index:expr) => {
        const _: () = {
            $crate::kernel! {
                #[export_name = $name]
                /// One-launch segmented reduction; see
                /// [`segmented_device`]($crate::reduce::segmented::segmented_device).
                pub unsafe fn kernel(p: $crate::reduce::segmented::SegmentedParams<$t, $out>) {
                    unsafe { $crate::reduce::segmented::segmented_device::<$t, $op, $sink>(p) }
                }
            }
            $crate::kernel! {
                #[export_name = $rows]
                /// Segmented reduction of fixed-size long rows; see
                /// [`rows_device`]($crate::reduce::segmented::rows_device).
                pub unsafe fn rows(p: $crate::reduce::segmented::SegmentedParams<$t, $out>) {
                    unsafe { $crate::reduce::segmented::rows_device::<$t, $op, $sink>(p) }
                }
            }
            #[cfg(not(target_arch = "nvptx64"))]
            impl $crate::reduce::segmented::SegmentedReduceInstance<$t> for $op {
                type Out = $out;
                const WRITES_INDEX: bool = $writes_index;
                const KERNEL: $crate::Kernel<$crate::reduce::segmented::SimSegmentedFn<$t, $out>> =
                    $crate::Kernel { name: $name, sim: kernel };
                const ROWS_KERNEL: $crate::Kernel<$crate::reduce::segmented::SimSegmentedFn<$t, $out>> =
                    $crate::Kernel { name: $rows, sim: rows };
            }
        };
    };
}

/// A built-in pair's segmented reductions, `reduce_segmented_{op}_{type}` and
/// `reduce_segmented_rows_{op}_{type}`; argmin and argmax write the index too.
macro_rules! builtin_segmented {
    ($t:ident argmin $Op:path) => { builtin_segmented!(@emit $t argmin $Op, arg); };
    ($t:ident argmax $Op:path) => { builtin_segmented!(@emit $t argmax $Op, arg); };
    ($t:ident $op:ident $Op:path) => { builtin_segmented!(@emit $t $op $Op,); };
    (@emit $t:ident $op:ident $Op:path, $($arg:ident)?) => {
        $crate::segmented_reduce_kernels!(@one
            concat!("reduce_segmented_", stringify!($op), "_", stringify!($t)),
            concat!("reduce_segmented_rows_", stringify!($op), "_", stringify!($t)),
            $crate::builtin_elem!($t), $Op $(, $arg)?);
    };
}

// The library's built-in segmented reductions: per (operator, type), one kernel for offsets and
// for fixed-length rows up to WARP_MAX, and one for longer fixed-length rows.
#[cfg(feature = "builtin")]
crate::builtin_table!(pairs builtin_segmented! {} int float);

// The listed form took these two from 80 to 82 registers on sm_90 (two blocks per SM instead of
// three); held at 80 (three blocks of BLOCK threads per SM) they spill nothing there. (sm_80's
// code spills 4 bytes at 80; not measured on an A100.)
#[cfg(feature = "builtin")]
crate::launch_bounds!(reduce_segmented_sum_f32, BLOCK, 3);
#[cfg(feature = "builtin")]
crate::launch_bounds!(reduce_segmented_product_f32, BLOCK, 3);
