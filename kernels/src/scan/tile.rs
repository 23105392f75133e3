//! One tile of the single-pass scan: load, scan within the block, look back, store.
//!
//! Layout: a tile is `block` threads × `ROWS` rows × one 16-byte vector per thread
//! (4 elements of 4 bytes, or 2 of 8; the 16-bit scans use 8-byte vectors of 4 elements). Each
//! warp owns a contiguous stretch of the tile; in row `k`, lane `l` holds the vector at
//! `(k * 32 + l)` of that stretch, so every load and store instruction of a warp touches 512
//! contiguous bytes (256 with 8-byte vectors; fully coalesced either way), and a
//! thread's elements within a row are contiguous, so a row is scanned with a thread-local scan
//! and one warp scan of the thread totals (five shuffles per 512 bytes of a warp).

use crate::gpu::{self, FULL_MASK, SharedArray, ShflValue};
use crate::scan::Headed;
use crate::scan::lookback::TileStatus;
use crate::scan::policy::ACTIVE;
use crate::warp::warp_inclusive_scan;

const WARPS: usize = ACTIVE.block as usize / 32;

/// What one tile scan needs from its caller.
pub struct TileIo<A, L, S, P> {
    /// Elements per thread per row (`16 / element size`; 4 for the 16-bit scans), at most 4.
    pub per_vec: usize,
    /// Total number of elements.
    pub n: u64,
    /// `load(first, fast)`: the accumulators of elements `first..first + per_vec`; `fast`
    /// when the whole tile is in range and aligned for the caller's vector loads; otherwise
    /// out-of-range elements must come back as the identity.
    pub load: L,
    /// `store(first, fast, exclusive, inclusive)`: the scan results of those elements.
    pub store: S,
    /// `prefetch(first, elems)`: ask L2 for the inputs of elements `first..first + elems` (a
    /// warp's stretch of a later tile; every lane calls it, [`prefetch_stretch`] splits it).
    pub prefetch: P,
    /// How many tiles ahead to prefetch
    /// ([`ScanPolicy::prefetch_tiles`](crate::scan::policy::ScanPolicy::prefetch_tiles)).
    pub prefetch_tiles: u64,
    pub identity: A,
}

/// How a tile's registers hold its values between the load and the store: each value split
/// into a stored part and one flag bit, the bits of a thread's values in one mask. A scan by
/// key's pair (head flag, value) then costs the value's registers and one bit, not a register
/// more per element; the other scans store the value whole (no bit: the mask folds away).
pub trait Pack<A> {
    type Stored: Copy;
    fn split(a: A) -> (Self::Stored, bool);
    fn join(s: Self::Stored, flag: bool) -> A;
}

/// The value itself.
pub struct Whole;

impl<A: Copy> Pack<A> for Whole {
    type Stored = A;
    #[inline(always)]
    fn split(a: A) -> (A, bool) {
        (a, false)
    }
    #[inline(always)]
    fn join(s: A, _: bool) -> A {
        s
    }
}

/// A scan by key's pair: the head flag (0 or 1, as [`segmented`](super::segmented) keeps it)
/// as the bit.
pub struct HeadBit;

impl<T: Copy> Pack<Headed<T>> for HeadBit {
    type Stored = T;
    #[inline(always)]
    fn split(a: Headed<T>) -> (T, bool) {
        (a.value, a.head != 0)
    }
    #[inline(always)]
    fn join(value: T, head: bool) -> Headed<T> {
        Headed {
            head: head as u32,
            value,
        }
    }
}

/// Ask L2 for `elems` elements of `base` from `first` on: one `prefetch.global.L2` per
/// 128-byte line, the warp's lanes taking every 32nd line. Called by all 32 lanes.
#[inline(always)]
pub fn prefetch_stretch<X>(base: *const X, first: u64, elems: u64) {
    let lines = elems as usize * size_of::<X>() / 128;
    let start = base.wrapping_add(first as usize) as *const u8;
    let mut l = gpu::lane_id() as usize;
    while l < lines {
        // SAFETY: a prefetch never faults; the caller keeps the range within the input.
        unsafe { gpu::prefetch_l2(start.wrapping_add(128 * l)) };
        l += 32;
    }
}

/// Hold `a` as value `j` of row `k`: its stored part in `vals`, its flag in bit `4k + j`.
#[inline(always)]
fn put<K: Pack<A>, A, const ROWS: usize>(
    vals: &mut [[K::Stored; 4]; ROWS],
    flags: &mut u64,
    k: usize,
    j: usize,
    a: A,
) {
    let (v, f) = K::split(a);
    vals[k][j] = v;
    let b = bit(k, j);
    *flags = if f { *flags | b } else { *flags & !b };
}

/// The flag bit of value `j` of row `k`.
#[inline(always)]
fn bit(k: usize, j: usize) -> u64 {
    1u64 << (4 * k + j)
}

/// Scan tile `tile` (the block's dynamic tile id) with `op`, fetching and publishing through
/// `status`, `ROWS` rows per thread. `seed()`, when `Some`, is what comes before tile 0: the
/// fixed order's `C(-1)` ([`fixed_order`](super::fixed_order)), the look-back's prefix of tile
/// 0. `totals`, when not null, gets the tile's aggregate at index `tile` instead of any output
/// (no prefix, no store). Called by every thread of an `ACTIVE.block`-thread block.
///
/// # Safety
/// The loads and stores are valid for the tile's in-range elements; `status` spans the launch.
#[inline(always)]
#[allow(clippy::too_many_arguments)] // the tile's inputs, each used once
pub unsafe fn scan_tile<const ROWS: usize, K, A, F, Z, L, S, P, D>(
    tile: u64,
    aligned: bool,
    io: TileIo<A, L, S, P>,
    status: TileStatus<A>,
    seed: D,
    totals: *mut A,
    (op, may_absorb, absorbs): (F, bool, Z),
    warp_aggregates: SharedArray<A>,
    tile_prefix: SharedArray<A>,
    shared_rows: bool,
) where
    A: ShflValue,
    K: Pack<A>,
    F: Fn(A, A) -> A + Copy,
    Z: Fn(A) -> bool + Copy,
    L: Fn(u64, bool) -> [A; 4],
    S: Fn(u64, bool, [A; 4], [A; 4]),
    P: Fn(u64, u64),
    D: Fn() -> Option<A>,
{
    let per_vec = io.per_vec as u64;
    let lane = gpu::lane_id() as u64;
    let warp = gpu::warp_id() as usize;
    let warp_elems = ROWS as u64 * 32 * per_vec;
    let tile_elems = WARPS as u64 * warp_elems;
    let tile_start = tile * tile_elems;
    let fast = aligned && tile_start + tile_elems <= io.n;
    let warp_start = tile_start + warp as u64 * warp_elems;
    let first = |k: usize| warp_start + (k as u64 * 32 + lane) * per_vec;

    // Loads first (all rows in flight at once), then the per-row scans.
    // The `fast` test sits outside the loops so that each loop body stays small enough for LLVM
    // to unroll fully: `vals` must live in registers, never in local memory.
    // Value `j` of row `k`: its stored part in `vals`, its flag in bit `4k + j` of `flags`.
    const { assert!(ROWS * 4 <= 64) };
    let mut vals = [[K::split(io.identity).0; 4]; ROWS];
    let mut flags = 0u64;
    if fast {
        for k in 0..ROWS {
            let a = (io.load)(first(k), true);
            for (j, &x) in a.iter().enumerate() {
                put::<K, A, ROWS>(&mut vals, &mut flags, k, j, x);
            }
        }
        // While these loads are in flight, ask L2 for this warp's stretch of a tile that a
        // block starting a little later will claim: DRAM then stays busy while this block
        // waits for its prefix and stores, when it loads nothing.
        let ahead = io.prefetch_tiles;
        if ahead > 0 && tile_start + (ahead + 1) * tile_elems <= io.n {
            (io.prefetch)(warp_start + ahead * tile_elems, warp_elems);
        }
    } else {
        for k in 0..ROWS {
            let a = (io.load)(first(k), false);
            for (j, &x) in a.iter().enumerate() {
                put::<K, A, ROWS>(&mut vals, &mut flags, k, j, x);
            }
        }
    }
    // Row k: thread-local inclusive scan, then a warp scan of the thread totals; `row_prefix[k]`
    // is what comes before this thread's first element of the row, within the warp's stretch.
    let mut carry = io.identity;
    let mut row_prefix = [io.identity; ROWS];
    // `shared_rows`: the row prefixes wait in shared memory instead of registers (8-byte
    // elements: one block per SM with them in registers, two without; CHANGELOG.md, issue 32).
    // A constant of the caller's: inlined, the other branch is compiled away. Only where they
    // fit the array (every scan at the sm_90 shape; a larger shape falls back to registers).
    let fits = ROWS * ACTIVE.block as usize * size_of::<A>() <= 32768;
    let shared_rows = (shared_rows && fits)
        .then(|| unsafe { crate::static_shared!(SCAN_ROW_PREFIX: [u128; 2048]).cast::<A>() });
    let row_at = |k: usize| k * ACTIVE.block as usize + gpu::thread_idx_x() as usize;
    for k in 0..ROWS {
        for j in 1..4 {
            if j < io.per_vec {
                let get = |j: usize| K::join(vals[k][j], flags & bit(k, j) != 0);
                let c = op(get(j - 1), get(j));
                put::<K, A, ROWS>(&mut vals, &mut flags, k, j, c);
            }
        }
        let last = io.per_vec - 1;
        let incl = warp_inclusive_scan(K::join(vals[k][last], flags & bit(k, last) != 0), op);
        let excl = gpu::shfl_up_sync(FULL_MASK, incl, 1, 32);
        let excl = if lane == 0 { io.identity } else { excl };
        match shared_rows {
            Some(r) => unsafe { r.write(row_at(k), op(carry, excl)) },
            None => row_prefix[k] = op(carry, excl),
        }
        carry = op(carry, gpu::shfl_sync(FULL_MASK, incl, 31, 32));
    }
    if lane == 0 {
        unsafe { warp_aggregates.write(warp, carry) };
    }
    gpu::sync_threads();
    let mut warp_exclusive = io.identity;
    let mut aggregate = io.identity;
    for w in 0..WARPS {
        let a = unsafe { warp_aggregates.read(w) };
        if w < warp {
            warp_exclusive = op(warp_exclusive, a);
        }
        aggregate = op(aggregate, a);
    }
    // The aggregates alone (the multi-GPU scan's first pass): once per tile, out of the loops.
    if !totals.is_null() {
        if gpu::thread_idx_x() == 0 {
            unsafe { totals.add(tile as usize).write(aggregate) };
        }
        return;
    }

    // Warp 0 finds the tile's exclusive prefix: in a fixed order (the scans), or by the
    // decoupled look-back (publishing the aggregate, then the inclusive prefix).
    if warp == 0 {
        // Read here, not at the start: no register held through the tile's loops.
        let seed = seed();
        let prefix = if status.fixed_order {
            unsafe {
                status.fixed_order_prefix(
                    tile,
                    aggregate,
                    seed,
                    io.identity,
                    op,
                    (may_absorb, absorbs),
                )
            }
        } else if tile == 0 {
            let p = seed.unwrap_or(io.identity);
            if lane == 0 {
                let incl = match seed {
                    Some(s) => op(s, aggregate),
                    None => aggregate,
                };
                unsafe { status.publish_prefix(0, incl) };
            }
            p
        } else {
            if lane == 0 {
                unsafe { status.publish_aggregate(tile, aggregate) };
            }
            let p = unsafe { status.exclusive_prefix(tile, io.identity, op) };
            if lane == 0 {
                unsafe { status.publish_prefix(tile, op(p, aggregate)) };
            }
            p
        };
        if lane == 0 {
            unsafe { tile_prefix.write(0, prefix) };
        }
    }
    gpu::sync_threads();
    let before_warp = op(unsafe { tile_prefix.read(0) }, warp_exclusive);

    let results = |k: usize| {
        let row = match shared_rows {
            Some(r) => unsafe { r.read(row_at(k)) },
            None => row_prefix[k],
        };
        let pre = op(before_warp, row);
        let mut incl = [io.identity; 4];
        let mut excl = [io.identity; 4];
        for j in 0..4 {
            if j < io.per_vec {
                excl[j] = if j == 0 { pre } else { incl[j - 1] };
                incl[j] = op(pre, K::join(vals[k][j], flags & bit(k, j) != 0));
            }
        }
        (excl, incl)
    };
    if fast {
        for k in 0..ROWS {
            let (excl, incl) = results(k);
            (io.store)(first(k), true, excl, incl);
        }
    } else {
        for k in 0..ROWS {
            let (excl, incl) = results(k);
            (io.store)(first(k), false, excl, incl);
        }
    }
}
