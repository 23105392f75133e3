//! The tiles form: CSR offsets of short segments read as contiguous tiles whatever the segment
//! boundaries, as the reduce by key ([`crate::reduce::by_key`]) reads its keys (issue 38). A
//! warp per segment spends its instructions on the segment, not its bytes: ~170 warp
//! instructions a segment of 1..200 left the short segments at a third of the read limit.
//!
//! A tile is `ACTIVE.block` threads × `ITEMS` consecutive elements (the reduce by key's tile for
//! u32 keys, so the same association). Each tile:
//! 1. copies its values to shared memory with coalesced 16-byte `cp.async` copies, while it
//!    finds the first offset at or past the tile's start and past its end (`lo`, `hi`): loaded
//!    from the bounds pass ([`tiles_bounds_device`], run first when there are more tiles than
//!    run at once), else found by warps 0 and 1 in a 32-way search over the offsets; and asks
//!    L2 for the values and offsets of a tile further on (`prefetch` tiles ahead);
//! 2. reads offsets `lo..hi`, a thread an offset: each marks a *head* at its element in a bit
//!    mask in shared memory (one bit an element);
//! 3. walks the values as the reduce by key walks its runs: one (head count, value after the
//!    last head) pair a thread, a block scan, the value carried into the tile in tile order
//!    (`carry_in`; warp 0 folds the warps' aggregates and leaves what runs into each warp in a
//!    slot of its own). Over its elements each thread leaves in the slot of every head the
//!    value before it (the first head's after the scan, with what runs into the thread);
//! 4. reads offsets `lo - 1..hi` again, a thread an offset: segment `s` ends at the head at
//!    `o[s + 1]`, and the tile that holds that element writes `out[s]` from its slot (a
//!    segment that ends at `n` from the last tile's own slot for it); the tile whose `lo..hi`
//!    holds `s` writes empty and bad segments (the identity) and reports the bad ones. The
//!    writes are coalesced and no thread branches per element. Until session 37 a u32 label
//!    an element named the segments, scanned with the pairs, and each thread wrote its
//!    segments as its walk met their ends: session 33's profile put that walk, the labels'
//!    scan and an offsets pass of two loads an offset at most of the tile's instructions.
//!
//! Determinism: a segment's combining order is a function of its start and end and of the
//! tile grid (a constant of the element type), never of the launch's grid or timing: the
//! reduce by key's association for a run over the same elements. The same bits on every run,
//! GPU and the simulator; not the work list's (there, the order depends on the length alone).
//!
//! Bad offsets: tiles' offset ranges `lo..hi` cover `0..=k` whatever the offsets hold (`lo` of
//! tile 0 is 0 and `hi` of the last is `k + 1`), so every segment is checked by some tile; a bad
//! one is reported and gets the identity. Nothing is read outside the
//! input; when the offsets are not sorted, other segments' results are unspecified (a good
//! segment may keep what `out` held, or get a partial sum or an unrelated value).
//!
//! A tile walks every offset that falls in it: the host sends no more segments than elements
//! here, but trailing empty segments (offsets equal to `n`) all fall in the last tile.

use super::*;
use crate::gpu::{FULL_MASK, SharedArray};
use crate::ops::Element;
use crate::reduce::by_key::{WARPS, carry_in, counted, elem_at, slot, stage, then};
use crate::scan::lookback::{POLL_DELAY, TileStatus};
use crate::scan::policy::ACTIVE;
use crate::scan::tile::prefetch_stretch;
use crate::scan::{Headed, next_tile};
use crate::warp::warp_inclusive_scan;

/// 16-byte chunks of shared memory a warp's values take (64 bytes a lane: 16 f32 or 8 f64).
const VALUE_CHUNKS: usize = 32 * (tiles_items(4) * 4) as usize / 16;
/// Words of the head mask: a bit an element of a tile of up to 32 elements a thread.
const MASK_WORDS: usize = WARPS * 32;

/// Elements per thread of the tiles form for `T` (the reduce by key's for u32 keys).
pub const fn tiles_items(elem_bytes: u64) -> u64 {
    ACTIVE.reduce_by_key_items(4, elem_bytes)
}

/// Elements per tile of the tiles form for `T`.
pub const fn tiles_tile_elems(elem_bytes: u64) -> u64 {
    ACTIVE.block as u64 * tiles_items(elem_bytes)
}

/// The first index `i < len` with `o[i] >= x` (`len` if none), found by the 32 lanes of a warp
/// from a `guess`; every lane returns it. The first round probes the guess and offsets 1, 2,
/// 4, ... 2^15 before it and up to 2^14 after it (a guess off by `d` entries leaves a stretch of about `d`);
/// each further round probes 32 evenly spaced offsets of the stretch and keeps the part
/// between the last probe below `x` (of the leading run of them) and the next. On offsets
/// that are not sorted it returns some index in `0..=len`.
///
/// # Safety
/// `o` valid for `len` entries.
#[inline(always)]
unsafe fn warp_lower_bound(o: *const u64, len: u64, x: u64, guess: u64) -> u64 {
    let lane = gpu::lane_id() as u64;
    if len == 0 {
        return 0;
    }
    let g = guess.min(len - 1);
    let probe = if lane < 16 {
        g.saturating_sub(1 << (15 - lane))
    } else if lane == 16 {
        g
    } else {
        (g + (1 << (lane - 17))).min(len - 1)
    };
    let below = unsafe { o.add(probe as usize).read() } < x;
    let k = (!gpu::ballot_sync(FULL_MASK, below)).trailing_zeros();
    let last_below = gpu::shfl_sync(FULL_MASK, probe, k.saturating_sub(1), 32);
    let first_not = gpu::shfl_sync(FULL_MASK, probe, k.min(31), 32);
    let mut lo = if k == 0 { 0 } else { last_below + 1 };
    let mut hi = if k == 32 { len } else { first_not };
    while hi > lo {
        let step = (hi - lo).div_ceil(32);
        let at = lo + step * (lane + 1) - 1;
        let below = at < hi && unsafe { o.add(at as usize).read() } < x;
        let k = (!gpu::ballot_sync(FULL_MASK, below)).trailing_zeros() as u64;
        let next_hi = lo + step * (k + 1) - 1;
        if k < 32 && next_hi < hi {
            hi = next_hi;
        }
        lo += step * k;
    }
    lo
}

/// The first of the `k + 1` offsets at or past tile `t`'s start (of tiles of `tile_elems`
/// elements over `n`): 0 for the first tile, `k + 1` for `t` at or past the last (tile `t`'s
/// offsets are `tile_bound(t)..tile_bound(t + 1)`, which cover `0..=k` whatever the offsets
/// hold). `WARP`: found by the calling warp's 32-way search, every lane returning it; else by
/// the calling thread alone ([`thread_lower_bound`]); the same value either way.
///
/// # Safety
/// `offsets` valid for `k + 1` entries.
#[inline(always)]
unsafe fn tile_bound<const WARP: bool>(
    offsets: *const u64,
    k: u64,
    n: u64,
    t: u64,
    tile_elems: u64,
) -> u64 {
    if t == 0 {
        0
    } else if t * tile_elems >= n {
        k + 1
    } else {
        let x = t * tile_elems;
        // Where the offsets would be if every segment had the mean length.
        let guess = (x as f64 * (k as f64 / n as f64)) as u64;
        if WARP {
            unsafe { warp_lower_bound(offsets, k + 1, x, guess) }
        } else {
            unsafe { thread_lower_bound(offsets, k + 1, x, guess) }
        }
    }
}

/// The first index `i < len` with `o[i] >= x` (`len` if none), found by one thread from a
/// `guess`: the guess and offsets `D` = 4096 before and after it in one round, then `16 D`,
/// `256 D`, ... further on the side the answer lies, then a binary search of the bracket. A
/// round reads a sector where the warp's 32-way search reads 32 (a bounds pass of every tile at
/// once is bound by those bytes); the bracket keeps a bad offset far from the guess from
/// moving the answer, as the warp's first round does. On offsets that are not sorted it
/// returns some index in `0..=len`.
///
/// # Safety
/// `o` valid for `len` entries.
#[inline(always)]
unsafe fn thread_lower_bound(o: *const u64, len: u64, x: u64, guess: u64) -> u64 {
    const D: u64 = 4096;
    if len == 0 {
        return 0;
    }
    let g = guess.min(len - 1);
    let below = |i: u64| unsafe { o.add(i as usize).read() } < x;
    let (at, before, after) = (
        below(g),
        g >= D && below(g - D),
        g + D < len && below(g + D),
    );
    // The answer lies in lo..=hi.
    let (mut lo, mut hi);
    if at {
        (lo, hi) = (g + 1, len);
        let mut d = D;
        let mut past = after;
        while g + d < len {
            if !past {
                hi = g + d;
                break;
            }
            lo = g + d + 1;
            d *= 16;
            past = g + d < len && below(g + d);
        }
    } else {
        (lo, hi) = (0, g);
        let mut d = D;
        let mut still = before;
        while g >= d {
            if still {
                lo = g - d + 1;
                break;
            }
            hi = g - d;
            d *= 16;
            still = g >= d && below(g - d);
        }
    }
    let mut rest = hi - lo;
    while rest > 0 {
        let half = rest / 2;
        if below(lo + half) {
            lo += half + 1;
            rest -= half + 1;
        } else {
            rest = half;
        }
    }
    lo
}

/// The tiles form's bounds pass (for the tile of elements of `ELEM_BYTES`): `bounds[t]` = the
/// first of the `k + 1` offsets at or past tile `t`'s start ([`tile_bound`]'s value) for `t`
/// in `0..=tiles`, a thread each, so that a tile of [`tiles_device`] loads its offsets' range
/// instead of searching for it on its critical path (a search takes several dependent round
/// trips to memory). Launch `ACTIVE.block` threads a block, enough blocks for `tiles + 1`
/// threads, before the tiles form over the same `p`.
///
/// # Safety
/// `p.begin` valid for `p.k + 1` entries, `p.bounds` for `tiles + 1`.
#[inline(always)]
pub unsafe fn tiles_bounds_device<const ELEM_BYTES: u64>(p: SegmentedParams<u8, u8>) {
    let tile_elems = tiles_tile_elems(ELEM_BYTES);
    let tiles = p.n.div_ceil(tile_elems);
    let t = gpu::block_idx_x() as u64 * gpu::block_dim_x() as u64 + gpu::thread_idx_x() as u64;
    if t > tiles {
        return;
    }
    let i = unsafe { tile_bound::<false>(p.begin, p.k, p.n, t, tile_elems) };
    unsafe { p.bounds.add(t as usize).write(i) };
}

/// Reduce the CSR segments `o[s]..o[s + 1]` (`o` = `begin`, `k + 1` offsets) of the `n`
/// elements of `input` into `out[s]`, tile by tile (the module's docs). Launch with
/// `ACTIVE.block` threads a block and one block per tile of [`tiles_tile_elems`] elements;
/// `counter` 0 at launch, a fresh `epoch`; `ws` holds one fixed slot a tile (half of
/// [`fixed_order_bytes_per_tile`](crate::scan::fixed_order::fixed_order_bytes_per_tile) of
/// `Headed<T>`'s words, 16-byte aligned); `prefetch`: tiles ahead whose values and offsets
/// each block asks L2 for (0: none); `bounds`: the bounds pass's output for this launch, or null
/// (each tile searches).
///
/// # Safety
/// Pointers valid for the sizes above; the outputs do not overlap the inputs.
#[inline(always)]
// Index loops over the 4 lanes of a 16-byte chunk (fully unrolled: constant indices,
// registers).
#[allow(clippy::needless_range_loop)]
pub unsafe fn tiles_device<T: Element, O: ReduceOp<T, Acc = T>, const ITEMS: usize>(
    p: SegmentedParams<T, T>,
) {
    let SegmentedParams {
        input,
        n,
        begin: offsets,
        k: segments,
        out,
        status,
        ws,
        counter,
        epoch,
        prefetch,
        bounds: tile_bounds,
        ..
    } = p;
    // A thread's heads lie in one u32 of the mask; a warp's values fit its chunks; a chunk holds
    // whole elements in the 4-lane loops below.
    const {
        assert!(
            WARPS * 32 == ACTIVE.block as usize
                && ITEMS.is_multiple_of(8)
                && ITEMS <= 32
                && 32usize.is_multiple_of(ITEMS)
                && T::PER_VEC <= 4
                && 32 * ITEMS * size_of::<T>() <= VALUE_CHUNKS * 16
        )
    };
    let smem = crate::static_shared!(SEG_TILE_VALUES: [[u32; 4]; WARPS * VALUE_CHUNKS]);
    let head_words = crate::static_shared!(SEG_TILE_HEADS: [u32; MASK_WORDS]);
    let warp_slots = crate::static_shared!(SEG_WARP_AGGS: [u128; 32]);
    let prefix_slot = crate::static_shared!(SEG_TILE_PREFIX: [u128; WARPS]);
    let bounds = crate::static_shared!(SEG_TILE_BOUNDS: [u64; 2]);
    let last_slot = crate::static_shared!(SEG_TILE_LAST: [u128; 1]);
    // SAFETY: a `Headed<T>` is at most 16 bytes and 16-byte aligned slots hold it.
    let warp_aggs: SharedArray<Headed<T>> = unsafe { warp_slots.cast::<Headed<T>>() };
    let tile_prefix: SharedArray<Headed<T>> = unsafe { prefix_slot.cast::<Headed<T>>() };
    let last_value: SharedArray<T> = unsafe { last_slot.cast::<T>() };
    let tile = unsafe { next_tile(counter) };
    // Loaded now, used after the values' copies are on their way.
    let passed = if tile_bounds.is_null() {
        None
    } else {
        Some(unsafe {
            (
                tile_bounds.add(tile as usize).read(),
                tile_bounds.add(tile as usize + 1).read(),
            )
        })
    };
    let lane = gpu::lane_id();
    let warp = gpu::warp_id() as usize;
    let tid = gpu::thread_idx_x() as usize;
    let block = gpu::block_dim_x() as u64;
    let tile_elems = (WARPS * 32 * ITEMS) as u64;
    // The offsets of the tile whose values are asked of L2 below, so that its offsets pass
    // finds them there, not in DRAM: their range now, asked after the barrier by the last two
    // warps, a thread a 128-byte line (1024 offsets: all a tile of mean length 4 or more holds).
    let ahead = tile + prefetch as u64;
    let asks = tid >= (WARPS - 2) * 32;
    let ahead_range =
        if asks && prefetch > 0 && !tile_bounds.is_null() && (ahead + 1) * tile_elems <= n {
            Some(unsafe {
                (
                    tile_bounds.add(ahead as usize).read(),
                    tile_bounds.add(ahead as usize + 1).read(),
                )
            })
        } else {
            None
        };
    let start = tile * tile_elems;
    let tile_end = start + tile_elems;
    let last_tile = tile_end >= n;
    let stretch = start + (warp * 32 * ITEMS) as u64;
    let first = stretch + lane as u64 * ITEMS as u64;
    let fast = input as usize & 15 == 0 && !last_tile;
    let vbase = warp * VALUE_CHUNKS;
    unsafe {
        stage(
            smem,
            vbase,
            input,
            stretch,
            32 * ITEMS,
            n,
            fast,
            O::identity(),
        )
    };
    gpu::cp_async_commit();
    if prefetch > 0 && (tile + prefetch as u64 + 1) * tile_elems <= n {
        prefetch_stretch(
            input,
            stretch + prefetch as u64 * tile_elems,
            32 * ITEMS as u64,
        );
    }
    if tid < WARPS * ITEMS {
        unsafe { head_words.write(tid, 0) };
    }
    // The tile's offsets: lo..hi (from the bounds pass, else searched by warps 0 and 1).
    if tile_bounds.is_null() && warp < 2 {
        let t = tile + warp as u64;
        let i = unsafe { tile_bound::<true>(offsets, segments, n, t, tile_elems) };
        if lane == 0 {
            unsafe { bounds.write(warp, i) };
        }
    }
    gpu::sync_threads();
    if let Some((a, b)) = ahead_range {
        // Lines of offsets a - 1..=b (what that tile's passes read).
        let first = (offsets as usize + 8 * a.saturating_sub(1) as usize) / 128;
        let last = (offsets as usize + 8 * b.min(segments) as usize) / 128;
        let l = first + tid - (WARPS - 2) * 32;
        if l <= last {
            unsafe { gpu::prefetch_l2((l * 128) as *const u8) };
        }
    }
    let (lo, hi) = match passed {
        Some(b) => b,
        None => unsafe { (bounds.read(0), bounds.read(1)) },
    };
    // The offsets pass: every offset in the tile marks a head (one bit an element). An empty
    // segment's start is the next offset's too, and a bad one's start ends the segment before
    // it, so no offset needs its neighbour here; offsets that are not sorted only set more bits.
    let mut i = lo + tid as u64;
    while i < hi {
        let at = unsafe { offsets.add(i as usize).read() };
        if at >= start && at < tile_end {
            let e = (at - start) as usize;
            unsafe { head_words.or(e / 32, 1 << (e % 32)) };
        }
        i += block;
    }
    gpu::cp_async_wait_group::<0>();
    gpu::sync_threads();

    let value_chunk = |v: usize| {
        T::unpack(unsafe {
            gpu::load_shared_v4(smem, vbase + slot(lane as usize * ITEMS / T::PER_VEC + v))
        })
    };
    // Elements of this thread in range (all of them in a full tile).
    let valid = n.saturating_sub(first).min(ITEMS as u64) as u32;
    // The head mask (bit j: element first + j is a head); past n nothing is one.
    let heads = {
        let word = unsafe { head_words.read(tid * ITEMS / 32) };
        let mine = if ITEMS == 32 {
            word
        } else {
            (word >> (tid * ITEMS % 32)) & ((1u32 << (ITEMS % 32)) - 1)
        };
        mine & if valid >= 32 {
            u32::MAX
        } else {
            (1u32 << valid) - 1
        }
    };

    // This thread's pair: the head count and the reduction after its last head (of all its
    // elements when it has none); elements past n are skipped, not combined. Each head but the
    // first gets the value before it in its slot (the segment that ends there, folded from the
    // head before); the first head's slot is finished after the scan. The values the walk
    // after the scan reads (those before the first head) stay.
    let holds_last = first + ITEMS as u64 >= n;
    // `full`: all ITEMS elements in range, as in every thread of a full tile; a constant in
    // each of the two calls, so that copy tests no element against `valid` (those tests were
    // half of the walk's instructions).
    let walk = |full: bool| {
        let mut acc = O::identity();
        for v in 0..ITEMS / T::PER_VEC {
            let x = value_chunk(v);
            let mut ex = x;
            for j in 0..4 {
                let e = v * T::PER_VEC + j;
                if j < T::PER_VEC && (full || (e as u32) < valid) {
                    let head = heads >> e & 1 != 0;
                    if head {
                        ex[j] = acc;
                    }
                    acc = if e == 0 || head {
                        x[j]
                    } else {
                        O::combine(acc, x[j])
                    };
                }
            }
            let chunk_heads = (heads >> (v * T::PER_VEC)) & ((1 << T::PER_VEC) - 1);
            if chunk_heads != 0 {
                unsafe {
                    gpu::store_shared_v4(
                        smem,
                        vbase + slot(lane as usize * ITEMS / T::PER_VEC + v),
                        T::pack(ex),
                    )
                };
            }
        }
        acc
    };
    let acc = if valid == ITEMS as u32 {
        walk(true)
    } else {
        walk(false)
    };
    if holds_last && valid > 0 && heads != 0 {
        // The segment that ends at n, folded from this thread's last head.
        unsafe { last_value.write(0, acc) };
    }
    let mine = if valid > 0 {
        Headed {
            head: heads.count_ones(),
            value: acc,
        }
    } else {
        Headed {
            head: 0,
            value: O::identity(),
        }
    };

    // Block scan of the pairs.
    let incl = warp_inclusive_scan(mine, counted::<T, O>);
    let left = gpu::shfl_up_sync(FULL_MASK, incl, 1, 32);
    if lane == 31 {
        unsafe { warp_aggs.write(warp, incl) };
    }
    gpu::sync_threads();

    // Warp 0: the tile's aggregate and the value carried into the tile, in tile order (the same
    // bits every run; only a tile where a segment ends, at a head or at n, needs it); then lane
    // `w` < WARPS leaves what runs into warp `w` (the carry, then warps 0..w folded in order) in
    // slot `w` of `tile_prefix`, `head` u32::MAX for nothing (tile 0's warp 0). One warp folds
    // the warps' aggregates, not every thread.
    if warp == 0 {
        let l = lane as usize;
        let mut before_warp: Option<Headed<T>> = None;
        let mut aggregate = unsafe { warp_aggs.read(0) };
        for w in 1..WARPS {
            let a = unsafe { warp_aggs.read(w) };
            if w == l {
                before_warp = Some(aggregate);
            }
            aggregate = counted::<T, O>(aggregate, a);
        }
        let ends_run = aggregate.head != 0 || last_tile;
        let values = TileStatus::<Headed<T>> {
            flags: core::ptr::null_mut(),
            aggregates: ws as *mut Headed<T>,
            prefixes: core::ptr::null_mut(),
            epoch,
            first_delay_ns: 0,
            tagged_slots: false,
            fixed_order: true,
        };
        if lane == 0 {
            unsafe { values.publish_fixed(tile, aggregate) };
        }
        let mut before = if tile > 0 {
            // No first wait: only the previous tile is needed, and it publishes as early in
            // its life as this one (the reduce by key waits for its run count's look-back).
            let carry = if ends_run {
                unsafe { carry_in::<T, O>(&values, tile, 0, POLL_DELAY) }
            } else {
                O::identity()
            };
            Some(Headed {
                head: 0,
                value: carry,
            })
        } else {
            None
        };
        if let Some(b) = before_warp {
            before = Some(then::<T, O>(before, b));
        }
        if l < WARPS {
            let none = Headed {
                head: u32::MAX,
                value: O::identity(),
            };
            unsafe { tile_prefix.write(l, before.unwrap_or(none)) };
        }
    }
    gpu::sync_threads();

    if valid > 0 && (heads != 0 || holds_last) {
        // Everything before this thread's first element, then its elements up to its first
        // head (or to n), one by one: the segment running into this thread.
        let p = unsafe { tile_prefix.read(warp) };
        let mut before = if p.head == u32::MAX { None } else { Some(p) };
        if lane > 0 {
            before = Some(then::<T, O>(before, left));
        }
        let ends = heads.trailing_zeros().min(valid);
        let mut acc = match before {
            Some(b) => b.value,
            None => O::identity(),
        };
        for v in 0..ITEMS / T::PER_VEC {
            let x = value_chunk(v);
            for j in 0..4 {
                let e = v * T::PER_VEC + j;
                if j < T::PER_VEC && (e as u32) < ends {
                    acc = O::combine(acc, x[j]);
                }
            }
        }
        let values = unsafe { smem.cast::<T>() };
        if heads != 0 {
            let e = lane as usize * ITEMS + ends as usize;
            unsafe { values.write(elem_at::<T>(vbase, e), acc) };
        } else {
            unsafe { last_value.write(0, acc) };
        }
    }
    gpu::sync_threads();

    // The writes, a thread an offset: segment i's value is the one before the head at its end
    // (or at n), written by the tile that holds that element; segment lo - 1 may end here.
    // Empty and bad segments are written (and bad ones reported) by the tile of their start.
    let values = unsafe { smem.cast::<T>() };
    let mut i = lo.saturating_sub(1) + tid as u64;
    let last = hi.min(segments);
    while i < last {
        let (at, end) = unsafe {
            (
                offsets.add(i as usize).read(),
                offsets.add(i as usize + 1).read(),
            )
        };
        let own = i >= lo;
        if end < at || end > n {
            if own {
                let kind = if end < at {
                    BAD_DECREASING
                } else {
                    BAD_OUT_OF_RANGE
                };
                unsafe {
                    report_bad(status, i, kind);
                    out.add(i as usize).write(O::identity().canonical());
                }
            }
        } else if end == at {
            if own {
                unsafe { out.add(i as usize).write(O::identity().canonical()) };
            }
        } else if end == n && last_tile {
            unsafe { out.add(i as usize).write(last_value.read(0).canonical()) };
        } else if end >= start && end < tile_end {
            let e = (end - start) as usize;
            let w = e / (32 * ITEMS);
            let x = unsafe { values.read(elem_at::<T>(w * VALUE_CHUNKS, e % (32 * ITEMS))) };
            unsafe { out.add(i as usize).write(x.canonical()) };
        }
        i += block;
    }
}

/// The bounds pass's kernels, one per element size (the tile depends on nothing else).
macro_rules! tiles_bounds_kernel {
    ($m:ident, $bytes:expr, $name:expr) => {
        #[cfg(feature = "builtin")]
        crate::launch_bounds!(@named $name, ACTIVE.block, 1);
        #[cfg(feature = "builtin")]
        mod $m {
            use super::*;
            type T = u8;
            type Out = u8;
            crate::segmented_params!(entry #[export_name = $name] kernel =>
                (tiles_bounds_device::<$bytes>));
        }
    };
}
tiles_bounds_kernel!(bounds_4, 4, "reduce_segmented_tiles_bounds_4");
tiles_bounds_kernel!(bounds_8, 8, "reduce_segmented_tiles_bounds_8");

/// The tiles form's bounds pass ([`tiles_bounds_device`]) for elements of `elem_bytes`, if
/// the library has it (4- and 8-byte elements).
#[cfg(all(feature = "builtin", not(target_arch = "nvptx64")))]
pub const fn tiles_bounds_kernel(
    elem_bytes: usize,
) -> Option<crate::Kernel<SimSegmentedFn<u8, u8>>> {
    match elem_bytes {
        4 => Some(crate::Kernel {
            name: "reduce_segmented_tiles_bounds_4",
            sim: bounds_4::kernel,
        }),
        8 => Some(crate::Kernel {
            name: "reduce_segmented_tiles_bounds_8",
            sim: bounds_8::kernel,
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::sim::{LaunchConfig, launch};
    use std::vec;

    /// The parameters shared by the simulated threads (their pointers are the test's vectors).
    struct Shared(SegmentedParams<u8, u8>);
    // SAFETY: the threads read `begin` and write disjoint words of `bounds`.
    unsafe impl Sync for Shared {}

    /// One thread's search finds the lower bound from any guess: near it, a bracket or two
    /// away, at either end and past it; over runs of equal offsets and past the last.
    #[test]
    fn thread_search_from_any_guess() {
        let mut x = 777u64;
        let mut next = move || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            x >> 33
        };
        let mut o = vec![0u64];
        for _ in 0..300_000 {
            let r = next();
            let gap = match r % 50 {
                0 => r % 3_000_000,
                1..=9 => 0,
                _ => r % 9,
            };
            o.push(o.last().unwrap() + gap);
        }
        let len = o.len() as u64;
        let top = *o.last().unwrap();
        for q in 0..20_000u64 {
            let v = match q % 4 {
                0 => o[(next() % len) as usize],
                1 => top + 1 + next() % 3,
                _ => next() % (top + 2),
            };
            let want = o.partition_point(|&e| e < v) as u64;
            let guess = match q % 5 {
                0 => 0,
                1 => len + 5,
                2 => want.saturating_sub(next() % 70_000),
                3 => want + next() % 70_000,
                _ => next() % len,
            };
            let got = unsafe { thread_lower_bound(o.as_ptr(), len, v, guess) };
            assert_eq!(got, want, "value {v}, guess {guess}");
        }
        assert_eq!(unsafe { thread_lower_bound(o.as_ptr(), 0, 5, 3) }, 0);
    }

    /// The bounds pass finds, for every tile, the first offset at or past its start (0 for the
    /// first tile, `k + 1` past the last) over sorted offsets of short, long and empty segments,
    /// with elements before the first offset and past the last: the guess off by up to
    /// thousands of entries either way, so every round of the warp's search is taken.
    #[test]
    fn bounds_pass_finds_every_tile_start() {
        let mut offsets = vec![3u64];
        let mut x = 12345u64;
        for _ in 0..60_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let r = x >> 33;
            let l = match r % 100 {
                0 => r % 100_000,
                1..=10 => r % 5_000,
                _ => r % 12,
            };
            offsets.push(offsets.last().unwrap() + l);
        }
        let k = offsets.len() as u64 - 1;
        let n = offsets[k as usize] + 777;
        let te = tiles_tile_elems(4);
        let tiles = n.div_ceil(te);
        let mut bounds = vec![u64::MAX; tiles as usize + 1];
        let p = Shared(SegmentedParams::<u8, u8> {
            begin: offsets.as_ptr(),
            bounds: bounds.as_mut_ptr(),
            ..SegmentedParams::new(core::ptr::null(), n, k, core::ptr::null_mut())
        });
        let cfg = LaunchConfig {
            // A thread a tile boundary, as the host launches it.
            grid: ((tiles + 1).div_ceil(ACTIVE.block as u64) as u32, 1, 1),
            block: (ACTIVE.block, 1, 1),
            dynamic_shared_bytes: 0,
        };
        let q = &p;
        launch("bounds", &cfg, move || unsafe {
            tiles_bounds_device::<4>(q.0)
        })
        .unwrap();
        for (t, &b) in bounds.iter().enumerate() {
            let x = t as u64 * te;
            let want = if t == 0 {
                0
            } else if x >= n {
                k + 1
            } else {
                offsets.partition_point(|&o| o < x) as u64
            };
            assert_eq!(b, want, "tile {t} of {tiles}");
        }
    }
}
