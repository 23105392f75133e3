//! The general kernel: groups of short segments per block, long segments' chunks on a work
//! list that idle blocks draw from.

use super::*;

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
/// [`BLOCK`]-thread blocks gives the same bits. (A few long offsets segments take
/// [`listed_device`], a kernel of its own, instead.)
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
        ..
    } = p;
    // 32 slots of up to 16 bytes for the block reduction, one per warp.
    let scratch = crate::static_shared!(SEG_SCRATCH: [u128; 32]);
    let scratch = unsafe { scratch.cast::<O::Acc>() };
    let slot = crate::static_shared!(SEG_SLOT: [u128; 1]);
    let slot = unsafe { slot.cast::<O::Acc>() };
    // One array for the small shared words (one base address for LLVM to keep): start,
    // length and index of each warp's long segment when its group's block reduces it (length 0:
    // none), and block_min_max's slots for a window's start and end and the rounds.
    let words = crate::static_shared!(SEG_WORDS: [u64; 6 * 32]);
    let [
        long_start,
        long_len,
        long_seg,
        lo_slots,
        hi_slots,
        round_slots,
    ] = [0, 1, 2, 3, 4, 5].map(|i| unsafe { words.part::<u64>(i * 256, 32) });
    // The short segments' stage.
    let stage_buf = gpu::dynamic_shared::<[u32; 4]>();
    // Thread 0's decisions, broadcast.
    let bcast = crate::static_shared!(SEG_BCAST: [u64; 8]);

    let tid = gpu::thread_idx_x() as u64;
    let lane = gpu::lane_id() as u64;
    let warp = gpu::warp_id() as u64;
    let per = SEGMENTS_PER_BLOCK as u64;
    let warps = (gpu::block_dim_x() / gpu::WARP_SIZE) as u64;
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
        // A batch of groups: thread `t` of warp `w` holds segment `g * per + w + warps * t`
        // (a window's consecutive segments spread over every warp).
        let (a, b) = unsafe { (bcast.read(1), bcast.read(2)) };
        let mut g = a;
        while g < b {
            let seg = |w: u64, l: u64| g * per + w + warps * l;
            let s = seg(warp, lane);
            // (Each phase reads the bounds again, a cached load, rather than keep them in
            // registers through the other: the kernel is held to 80.)
            let bounds = |s: u64| {
                if s < k {
                    unsafe { segment_bounds(s, n, begin, end, segment_len, status) }
                } else {
                    (0, 0)
                }
            };
            // Longer segments first, a round each for every warp's next one: listed on the
            // work list (its chunks go to any block), or reduced here by the whole block.
            let mut longs = gpu::ballot_sync(gpu::FULL_MASK, bounds(s).1 > WARP_MAX);
            let rounds = block_min_max(longs.count_ones() as u64, true, round_slots);
            for _ in 0..rounds {
                let j = if longs != 0 {
                    longs.trailing_zeros()
                } else {
                    0
                };
                let s = seg(warp, j as u64);
                let (start, len) = if longs != 0 { bounds(s) } else { (0, 0) };
                let mut alone = 0;
                if longs != 0 {
                    // (Warp-uniform: one segment per warp.)
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
                                gpu::store_relaxed_v2_u64(
                                    owner(base + c, 0),
                                    [who | TAG, start | TAG],
                                );
                                gpu::store_relaxed_v2_u64(
                                    owner(base + c, 2),
                                    [len | TAG, base | TAG],
                                );
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
                        long_seg.write(warp as usize, s);
                    }
                }
                // Every warp's listing (fenced above) is done here.
                gpu::sync_threads();
                // The segments left here: the whole block, one after the other. (The bound
                // is read at run time: a constant bound would let LLVM unroll the loop and
                // inline the block path eight times.)
                for w in 0..warps {
                    let len = unsafe { long_len.read(w as usize) };
                    if len == 0 {
                        continue;
                    }
                    let x = unsafe { input.add(long_start.read(w as usize) as usize) };
                    let total =
                        unsafe { block_segment::<T, O, LISTED_LOADS>(x, len, scratch, slot) };
                    if tid == 0 {
                        unsafe { S::store(out, index_out, long_seg.read(w as usize), total) };
                    }
                }
                // The next round rewrites the shared arrays.
                gpu::sync_threads();
                longs &= longs.wrapping_sub(1);
            }
            if tid == 0 && g + 1 == b {
                gpu::fence_acq_rel_gpu();
                unsafe { gpu::atomic_add_u64(ctl.wrapping_add(CLASSIFIED), b - a) };
            }
            // The short segments (empty and bad ones too), window by window: the lowest start
            // left fixes the window, every segment left that lies inside is reduced from the
            // stage (the one at the lowest start always is, so each window makes progress).
            if begin.is_null() {
                // Rows of a matrix: the library's host sends them all to `rows_device` since
                // session 35; this path stays for a direct launch with a null `begin`, and
                // keeps the code the speed guard measured. A warp reads each of its rows from
                // global memory, WARP_LOADS loads in flight a lane, no window bookkeeping
                // (through the windows, rows of 1024 were 23% slower).
                let mut m = gpu::ballot_sync(gpu::FULL_MASK, s < k);
                while m != 0 {
                    let j = m.trailing_zeros();
                    let r = seg(warp, j as u64);
                    let total = unsafe {
                        warp_segment::<T, O, { WARP_LOADS as usize }>(
                            input.add((r * segment_len) as usize),
                            segment_len,
                        )
                    };
                    if lane == 0 {
                        unsafe { S::store(out, index_out, r, total) };
                    }
                    m &= m - 1;
                }
                g += 1;
                continue;
            }
            let (start, len) = bounds(s);
            let mut todo = s < k && len <= WARP_MAX;
            let mut first = true;
            loop {
                let lo = block_min_max(
                    if todo && len > 0 { start } else { u64::MAX },
                    false,
                    lo_slots,
                );
                // The window's room: the stage less the first element's misalignment.
                let pad = if lo == u64::MAX {
                    0
                } else {
                    (input.wrapping_add(lo as usize) as u64 & 15) / size_of::<T>() as u64
                };
                let room = STAGE_VECS * T::PER_VEC as u64 - pad;
                let inside = todo && (len == 0 || (lo != u64::MAX && start - lo + len <= room));
                if lo != u64::MAX {
                    let hi = block_min_max(
                        if inside && len > 0 { start + len } else { 0 },
                        true,
                        hi_slots,
                    );
                    unsafe { stage::<T>(input, lo, hi, pad, stage_buf) };
                }
                // (Empty segments are inside the first window only; when no element is left
                // to stage, they are all there is.)
                if first || lo != u64::MAX {
                    unsafe {
                        reduce_staged::<T, O, S>(
                            inside,
                            start.wrapping_sub(lo).wrapping_add(pad) as u32,
                            len as u32,
                            |l| seg(warp, l as u64),
                            gpu::shared_slots(stage_buf.cast::<T>(), 0),
                            out,
                            index_out,
                        )
                    };
                }
                todo &= !inside;
                if lo == u64::MAX {
                    break;
                }
                first = false;
            }
            // The next group's first barrier comes before the stage is rewritten.
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
