//! Seed 003: a prefix scan on a Fenwick tree (binary indexed tree, BIT), in two kernels.
//!
//! In a 1-based Fenwick tree, node `i` holds `x[i - lowbit(i) + 1 ..= i]` (`lowbit(i) = i & -i`);
//! here 0-based, so position `p` holds the range ending at `p` of length `lowbit(p + 1)`.
//!
//! - [`build`] turns `data` into that tree in place. One launch builds, inside each block of
//!   [`BLOCK`] threads, the tree over the positions `(g + 1) * offset - 1` (`g` the global thread
//!   index): with `offset = 1` every element, then, launched again with `offset = 512`, the
//!   block totals of the first launch, and so on (`offset *= 512`) until one block spans
//!   everything. The same kernel serves every level: only the stride changes (the seed's idea,
//!   which lets every level use many blocks instead of one).
//! - [`query`] gives each element its prefix by walking `j -= lowbit(j)` over at most
//!   `log2(n)` disjoint ranges. Every thread walks on its own: `O(n log n)` work in all, not
//!   work-efficient (the seed's own remark), but short and simple.

use kernels::gpu::{self, SharedArray};
use kernels::ops::{Element, ReduceOp};

/// Threads per block, and the tree's fan-in per level (the seed's 512).
pub const BLOCK: u32 = 512;

/// The block's shared array: [`BLOCK`] elements of up to 8 bytes. A static shared array needs a
/// concrete type, so it is declared as `u64`s and viewed as `T`.
#[inline(always)]
fn tree_shared<T: Copy>() -> SharedArray<T> {
    let s = kernels::static_shared!(SCAN_BIT_TREE: [u64; BLOCK as usize]);
    // SAFETY: static arrays are 16-byte aligned; T is 4 or 8 bytes.
    unsafe { s.cast::<T>() }
}

/// One level of the tree build: the positions `(g + 1) * offset - 1` below `n`, [`BLOCK`] per
/// block, become the Fenwick tree of the block's positions (each is already the tree node of
/// its own `offset` elements, from the level below). Positions at or past `n` hold nothing and
/// are never read by a position below `n` (a node only combines ranges to its left).
///
/// Each step `s = 2, 4, ..., BLOCK` combines, for every position whose rank `t + 1` is a
/// multiple of `s`, the node `s / 2` ranks to its left: `left ⊕ own`, left first, so any
/// associative operator works. The nodes read at a step are never written at that step
/// (their rank is an odd multiple of `s / 2`).
///
/// # Safety
/// `data` holds `n` elements; launched with [`BLOCK`] threads per block and
/// `ceil(floor(n / offset) / BLOCK)` blocks (more blocks only idle).
#[inline(always)]
pub unsafe fn build<T: Element, O: ReduceOp<T, Acc = T>>(data: *mut T, n: u64, offset: u64) {
    let s = tree_shared::<T>();
    let tid = gpu::thread_idx_x();
    let g = gpu::block_idx_x() as u64 * BLOCK as u64 + tid as u64;
    // u64: (g + 1) * offset reaches n, beyond u32 for large inputs. `g + 1 <= n / offset` keeps
    // the product from overflowing even for a huge grid.
    let live = g < n / offset;
    let pos = if live { (g + 1) * offset - 1 } else { 0 };
    let v = if live {
        unsafe { data.add(pos as usize).read() }
    } else {
        O::identity()
    };
    unsafe { s.write(tid as usize, v) };
    gpu::sync_threads();
    let mut step = 2;
    while step <= BLOCK {
        // The block starts at a multiple of BLOCK, so the block rank `tid` decides.
        if (tid + 1) & (step - 1) == 0 {
            let left = unsafe { s.read((tid - step / 2) as usize) };
            let own = unsafe { s.read(tid as usize) };
            unsafe { s.write(tid as usize, O::combine(left, own)) };
        }
        gpu::sync_threads();
        step *= 2;
    }
    if live {
        unsafe { data.add(pos as usize).write(s.read(tid as usize)) };
    }
}

/// `out[g]` = the prefix of element `g` read off the finished tree: the inclusive prefix of
/// `g + 1` elements, or (`inclusive == 0`) the exclusive one of `g` elements (the identity for
/// `g = 0`). The walk `j -= lowbit(j)` meets the ranges right to left, so each is combined in
/// front of what was gathered (`range ⊕ acc`): the result is `x[0] ⊕ x[1] ⊕ ...` in order.
///
/// # Safety
/// `tree` and `out` hold `n` elements; launched with [`BLOCK`] threads per block and
/// `ceil(n / BLOCK)` blocks.
#[inline(always)]
pub unsafe fn query<T: Element, O: ReduceOp<T, Acc = T>>(
    tree: *const T,
    out: *mut T,
    n: u64,
    inclusive: u32,
) {
    let g = gpu::block_idx_x() as u64 * BLOCK as u64 + gpu::thread_idx_x() as u64;
    if g >= n {
        return;
    }
    // `j` counts the elements still to gather: the prefix x[0..j].
    let mut j = if inclusive != 0 { g + 1 } else { g };
    let mut acc = O::identity();
    if j > 0 {
        // The first (rightmost) range starts the accumulator, so no `x ⊕ identity` is done
        // (which would turn a float -0.0 into +0.0).
        acc = unsafe { tree.add(j as usize - 1).read() };
        j &= j - 1;
    }
    while j > 0 {
        acc = O::combine(unsafe { tree.add(j as usize - 1).read() }, acc);
        j &= j - 1; // j -= lowbit(j)
    }
    unsafe { out.add(g as usize).write(acc) };
}

/// Launches of [`build`] for `n` elements, with their `offset`s: one per level while a level
/// has at least two positions to combine (`offset <= n / 2`).
pub fn build_offsets(n: u64) -> impl Iterator<Item = u64> {
    core::iter::successors(Some(1u64), |&o| o.checked_mul(BLOCK as u64))
        .take_while(move |&o| o <= n / 2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    #[test]
    fn levels_of_the_build() {
        let levels = |n| build_offsets(n).collect::<Vec<_>>();
        assert!(levels(0).is_empty() && levels(1).is_empty());
        assert_eq!(levels(2), [1]);
        assert_eq!(levels(1023), [1]);
        assert_eq!(levels(1024), [1, 512]);
        assert_eq!(levels(2 * 512 * 512), [1, 512, 512 * 512]);
        assert_eq!(levels(1_000_000_000).len(), 4);
        assert_eq!(levels(u64::MAX).len(), 7);
    }
}
