//! The classic reduce-then-scan that seed 003 compares against ("BCAO"): GPU Gems 3, ch. 39
//! (Harris, Sengupta, Owens), the work-efficient Blelloch scan with bank-conflict avoidance.
//!
//! - [`block_scan`]: each block of [`BLOCK`] threads scans a tile of [`TILE`] `= 2 * BLOCK`
//!   elements in shared memory: an up-sweep (a reduction tree, `TILE - 1` combines) then a
//!   down-sweep (`TILE - 1` more), so `O(n)` work in all. It writes the tile's scan and the
//!   tile's total to `block_sums[blockIdx.x]`.
//! - The host scans the tile totals (exclusively) with the same kernel, recursively, until one
//!   tile holds them all, then [`add`] combines each tile's offset into its elements, from the
//!   top level down.
//!
//! Shared memory is indexed through [`conflict_free`]: one padding slot every 32 elements, so
//! the tree's strided accesses (`offset * (2t + 1) - 1`, multiples of large powers of two) fall
//! in different banks instead of all in one. The padding is sized for 4-byte words (32 banks of
//! 4 bytes); 8-byte elements still see two-way conflicts, as in the book.

use kernels::gpu::{self, SharedArray};
use kernels::ops::{Element, ReduceOp};

/// Threads per block.
pub const BLOCK: u32 = 512;
/// Elements per block: two per thread.
pub const TILE: u32 = 2 * BLOCK;
/// `log2` of the number of shared-memory banks.
const LOG_NUM_BANKS: u32 = 5;
/// Shared-memory slots of a tile: the elements and their padding (up to the last element's).
const SHARED_LEN: usize = conflict_free(TILE - 1) as usize + 1;

/// GPU Gems 3's `CONFLICT_FREE_OFFSET(n)`: the slot of element `i` is `i + (i >> 5)`. (The
/// book's printed macro, `n >> NUM_BANKS + n >> (2 * LOG_NUM_BANKS)`, parses as a single
/// shift by a large amount in C; the errata's `n >> LOG_NUM_BANKS` is used here.)
#[inline(always)]
pub const fn conflict_free(i: u32) -> u32 {
    i + (i >> LOG_NUM_BANKS)
}

/// The tile's shared array, declared as `u64`s (a static shared array needs a concrete type)
/// and viewed as `T`.
#[inline(always)]
fn tile_shared<T: Copy>() -> SharedArray<T> {
    let s = kernels::static_shared!(SCAN_BCAO_TILE: [u64; SHARED_LEN]);
    // SAFETY: static arrays are 16-byte aligned; T is 4 or 8 bytes.
    unsafe { s.cast::<T>() }
}

/// Scan tile `blockIdx.x` of `input` (`n` elements in all) into `out`: the exclusive scan, or
/// the inclusive one when `inclusive != 0`; the tile's total goes to `block_sums[blockIdx.x]`
/// unless `block_sums` is null. Elements past `n` count as the identity and are not written.
///
/// `out` may be `input` (the host scans the tile totals in place): a block reads its tile
/// before its first barrier and writes it after its last one, and no block touches another's
/// tile.
///
/// Combine order: the up-sweep stores `left ⊕ right` in the right node; the down-sweep gives
/// the left child the prefix that came down (`P`) and the right child `P ⊕ left`, so every
/// prefix is combined left to right and any associative operator works.
///
/// # Safety
/// `input` and `out` hold `n` elements, `block_sums` (unless null) one per block; launched
/// with [`BLOCK`] threads per block and `ceil(n / TILE)` blocks.
#[inline(always)]
pub unsafe fn block_scan<T: Element, O: ReduceOp<T, Acc = T>>(
    input: *const T,
    out: *mut T,
    block_sums: *mut T,
    n: u64,
    inclusive: u32,
) {
    let s = tile_shared::<T>();
    let at = |i: u32| conflict_free(i) as usize;
    let tid = gpu::thread_idx_x();
    let base = gpu::block_idx_x() as u64 * TILE as u64;
    // Thread t loads elements t and t + BLOCK: consecutive threads, consecutive addresses.
    let (ai, bi) = (tid, tid + BLOCK);
    let load = |i: u32| {
        let g = base + i as u64;
        if g < n {
            unsafe { input.add(g as usize).read() }
        } else {
            O::identity()
        }
    };
    let (xa, xb) = (load(ai), load(bi));
    unsafe {
        s.write(at(ai), xa);
        s.write(at(bi), xb);
    }

    // Up-sweep: after the level with stride `offset`, node `offset * (2k + 2) - 1` holds the
    // combination of the `2 * offset` elements ending there.
    let mut offset = 1;
    let mut d = TILE / 2;
    while d > 0 {
        gpu::sync_threads();
        if tid < d {
            let a = at(offset * (2 * tid + 1) - 1);
            let b = at(offset * (2 * tid + 2) - 1);
            unsafe { s.write(b, O::combine(s.read(a), s.read(b))) };
        }
        offset *= 2;
        d /= 2;
    }

    // The root holds the tile's total; replacing it by the identity starts the down-sweep.
    if tid == 0 {
        let root = at(TILE - 1);
        if !block_sums.is_null() {
            unsafe {
                block_sums
                    .add(gpu::block_idx_x() as usize)
                    .write(s.read(root))
            };
        }
        unsafe { s.write(root, O::identity()) };
    }

    // Down-sweep: each node passes its prefix to its left child and `prefix ⊕ left` to its
    // right child.
    let mut d = 1;
    while d < TILE {
        offset /= 2;
        gpu::sync_threads();
        if tid < d {
            let a = at(offset * (2 * tid + 1) - 1);
            let b = at(offset * (2 * tid + 2) - 1);
            let left = unsafe { s.read(a) };
            let prefix = unsafe { s.read(b) };
            unsafe {
                s.write(a, prefix);
                s.write(b, O::combine(prefix, left));
            }
        }
        d *= 2;
    }
    gpu::sync_threads();

    // Exclusive prefixes now; an inclusive scan appends the element itself.
    let (mut ea, mut eb) = unsafe { (s.read(at(ai)), s.read(at(bi))) };
    if inclusive != 0 {
        ea = O::combine(ea, xa);
        eb = O::combine(eb, xb);
    }
    let store = |i: u32, v: T| {
        let g = base + i as u64;
        if g < n {
            unsafe { out.add(g as usize).write(v) };
        }
    };
    store(ai, ea);
    store(bi, eb);
}

/// `data[i] = offsets[tile(i)] ⊕ data[i]` for every element of tile `blockIdx.x`: the scanned
/// tile totals (exclusive: the combination of every earlier tile) go in front of the tile's own
/// prefixes. Tile 0's offset is the identity, so block 0 has nothing to do.
///
/// # Safety
/// `data` holds `n` elements and `offsets` one per tile; launched with [`BLOCK`] threads per
/// block and `ceil(n / TILE)` blocks.
#[inline(always)]
pub unsafe fn add<T: Element, O: ReduceOp<T, Acc = T>>(data: *mut T, offsets: *const T, n: u64) {
    let b = gpu::block_idx_x();
    if b == 0 {
        return;
    }
    let prefix = unsafe { offsets.add(b as usize).read() };
    let base = b as u64 * TILE as u64;
    let tid = gpu::thread_idx_x();
    let add_to = |i: u32| {
        let g = base + i as u64;
        if g < n {
            let p = unsafe { data.add(g as usize) };
            unsafe { p.write(O::combine(prefix, p.read())) };
        }
    };
    add_to(tid);
    add_to(tid + BLOCK);
}

/// Elements at each level of the recursion for `n` elements: `n`, then one tile total per tile,
/// and so on until one tile holds a level (that level is the last). Empty for `n = 0`.
pub fn levels(n: u64) -> impl Iterator<Item = u64> {
    let first = (n > 0).then_some(n);
    core::iter::successors(first, |&m| {
        (m > TILE as u64).then(|| m.div_ceil(TILE as u64))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    #[test]
    fn padding_and_levels() {
        assert_eq!(conflict_free(31), 31);
        assert_eq!(conflict_free(32), 33);
        assert_eq!(conflict_free(TILE - 1) as usize, SHARED_LEN - 1);
        let l = |n| levels(n).collect::<Vec<_>>();
        assert!(l(0).is_empty());
        assert_eq!(l(1), [1]);
        assert_eq!(l(1024), [1024]);
        assert_eq!(l(1025), [1025, 2]);
        assert_eq!(l(1 << 20), [1 << 20, 1024]);
        assert_eq!(l((1 << 20) + 1), [(1 << 20) + 1, 1025, 2]);
        assert_eq!(l(1_000_000_000), [1_000_000_000, 976_563, 954]);
    }
}
