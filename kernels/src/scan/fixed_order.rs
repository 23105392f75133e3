//! Cross-tile prefixes in a fixed order, so that a scan's float results are the same bits on
//! every run, grid and GPU (and the simulator). The decoupled look-back combines a tile's
//! predecessors back to whichever inclusive prefix it meets first, so its association depends
//! on timing. Here the association is a function of the tile index alone, and a tile still
//! waits only on its near predecessors' aggregates, as in the look-back.
//!
//! Tiles form groups of 32. `G(g)` is the combination of group `g`'s 32 tile aggregates as a
//! balanced tree in tile order ([`warp_reduce_in_order`]); the *checkpoint* `C(g)` is
//! everything up to the end of group `g`: `C(0) = G(0)`, `C(g) = C(g - 1) ⊕ G(g)`. Tile `t =
//! 32h + i` has the exclusive prefix `C(h - 1) ⊕ F(h, i)`, where `F(h, i)` combines the
//! aggregates of tiles `32h .. t` the same way (the identity in the lanes from `i` on); the
//! last tile of a group also publishes `C(h)`. When `C(h - 1)` is not out yet (its tile, at
//! most 32 back, may still be waiting), the tile rebuilds it as `C(h - 2) ⊕ G(h - 1)` from the
//! previous group's aggregates: the same operations on the same values, so the same bits.
//!
//! A seed `s` is `C(-1)`, what comes before group 0: group 0's tiles then get `s ⊕ F(0, i)`
//! (tile 0: `s`) and `C(0) = s ⊕ G(0)`. So a launch over a stretch of a longer array that
//! starts at a group boundary, seeded with the checkpoint before it, repeats the longer scan's
//! operations exactly (the multi-GPU scan).
//!
//! Error: a float sum's prefix is a chain of group sums (each a balanced tree), so its error
//! grows with `tiles / 32 + log2(32)` roundings, against `tiles` for a chain of tile prefixes.
//!
//! Slots (in `aggregates`, [`fixed_order_bytes_per_tile`] bytes per tile): tile `t`'s
//! aggregate in slot `t`, checkpoint `C(g)` in slot `grid + g` (one tile per block: `grid` is
//! the number of tiles). A slot is one or two 16-byte halves of `status word << 32 | value
//! word` per 64-bit word, written whole by one 16-byte store each, and reads as published when
//! every word carries this launch's epoch (words of earlier launches never match). A
//! checkpoint may be written by several tiles, always with the same bits.

use super::lookback::TileStatus;
use super::policy::ACTIVE;
use crate::gpu::{self, FULL_MASK, ShflValue};
use crate::warp::warp_reduce_in_order;

use super::lookback::first_wait;

const POLL_DELAY: u32 = ACTIVE.poll_delay_ns;
/// Tiles per group (the multi-GPU scan cuts its launches at group boundaries).
pub const GROUP: u64 = 32;

/// Bytes per tile of the slots a fixed-order scan needs (its `aggregates` area), for
/// accumulators of `words` 32-bit words: room for a slot per tile and one per group.
pub const fn fixed_order_bytes_per_tile(words: usize) -> u64 {
    2 * 16 * words.div_ceil(2) as u64
}

impl<A: ShflValue> TileStatus<A> {
    /// 16-byte halves per slot.
    const PAIRS: usize = A::WORDS.div_ceil(2);

    #[inline(always)]
    fn fixed_slot(&self, i: u64) -> *mut u64 {
        unsafe { (self.aggregates as *mut u64).add(i as usize * 2 * Self::PAIRS) }
    }

    #[inline(always)]
    fn fixed_tag(&self) -> u32 {
        (self.epoch << 2) | 3
    }

    /// Publish `v` in slot `i` (one thread).
    #[inline(always)]
    pub(crate) unsafe fn publish_fixed(&self, i: u64, v: A) {
        let w = v.to_words();
        let t = (self.fixed_tag() as u64) << 32;
        let s = self.fixed_slot(i);
        unsafe {
            gpu::store_relaxed_v2_u64(s, [t | w[0] as u64, t | w[1] as u64]);
            if Self::PAIRS == 2 {
                gpu::store_relaxed_v2_u64(s.add(2), [t | w[2] as u64, t | w[3] as u64]);
            }
        }
    }

    /// Slot `i`'s value if published.
    #[inline(always)]
    pub(crate) unsafe fn read_fixed(&self, i: u64) -> Option<A> {
        let s = self.fixed_slot(i);
        let t = self.fixed_tag();
        let tag = |x: u64| (x >> 32) as u32 == t;
        let [a, b] = unsafe { gpu::load_relaxed_v2_u64(s) };
        let mut w = [a as u32, b as u32, 0, 0];
        let mut ok = tag(a) && (A::WORDS < 2 || tag(b));
        if Self::PAIRS == 2 {
            let [c, d] = unsafe { gpu::load_relaxed_v2_u64(s.add(2)) };
            w[2] = c as u32;
            w[3] = d as u32;
            ok &= tag(c) && (A::WORDS < 4 || tag(d));
        }
        ok.then(|| A::from_words(w))
    }

    /// Publish `tile`'s aggregate (and, for a group's last tile, its checkpoint) and return
    /// the tile's exclusive prefix (for tile 0 the seed, or the identity without one: `seed` is
    /// `C(-1)`, see the module docs; warp-uniform). Called by all 32 lanes of one
    /// warp with the tile's `aggregate`; every lane returns the prefix. One tile per block
    /// (the grid is the number of tiles); `aggregates` holds [`fixed_order_bytes_per_tile`]
    /// bytes per tile, 16-byte aligned; `epoch` is new for the launch.
    ///
    /// Never deadlocks when tiles are handed out in launch order: every slot waited on
    /// belongs to an earlier tile, whose block is running.
    ///
    /// # Safety
    /// `tile` < the grid size < 2^32; the slots are within `aggregates`.
    #[inline(always)]
    pub unsafe fn fixed_order_prefix<F: Fn(A, A) -> A + Copy, Z: Fn(A) -> bool + Copy>(
        &self,
        tile: u64,
        aggregate: A,
        seed: Option<A>,
        identity: A,
        op: F,
        (may_absorb, absorbs): (bool, Z),
    ) -> A {
        let lane = gpu::lane_id() as u64;
        let grid = gpu::grid_dim_x() as u64;
        let (h, i) = (tile / GROUP, tile % GROUP);
        if lane == 0 {
            unsafe { self.publish_fixed(tile, aggregate) };
        }
        let checkpoint = |g: u64| grid + g;
        // As the look-back's first wait (policy.rs): with many tiles, reading at once mostly
        // finds nothing yet and polls (slower without the wait: CHANGELOG.md, issue 16).
        first_wait(tile, self.first_delay_ns);
        // Lane l: the aggregates of tiles 32h + l (l < i) and 32(h - 1) + l; lane 0 reads
        // C(h - 1), lane 1 C(h - 2). All in one round: C(h - 1) is written by a tile at most
        // 32 back, which is often still waiting, so the first reads also bring what rebuilding
        // it takes.
        let need_own = lane < i;
        let mut own = None;
        let mut prev = None;
        let mut c1 = None;
        let mut c2 = None;
        loop {
            if need_own && own.is_none() {
                own = unsafe { self.read_fixed(GROUP * h + lane) };
            }
            if h >= 1 && lane == 0 && c1.is_none() {
                c1 = unsafe { self.read_fixed(checkpoint(h - 1)) };
            }
            if h >= 1 {
                if prev.is_none() {
                    prev = unsafe { self.read_fixed(GROUP * (h - 1) + lane) };
                }
                if h >= 2 && lane == 1 && c2.is_none() {
                    c2 = unsafe { self.read_fixed(checkpoint(h - 2)) };
                }
            }
            let have_c1 = gpu::shfl_sync(FULL_MASK, c1.is_some() as u32, 0, 32) != 0;
            let own_done = gpu::ballot_sync(FULL_MASK, need_own && own.is_none()) == 0;
            let missing = prev.is_none() || (lane == 1 && h >= 2 && c2.is_none());
            let rebuilt = h >= 1 && gpu::ballot_sync(FULL_MASK, missing) == 0;
            // Absorbing values (compiled away when `may_absorb` is false): F(h, i) (and, for a
            // group's last tile, G(h)) absorbing needs no C(h - 1); G(h - 1) absorbing is
            // C(h - 1) without C(h - 2).
            let shortcut = may_absorb
                && h >= 1
                && ((own_done
                    && i > 0
                    && absorbs(warp_reduce_in_order(own.unwrap_or(identity), op))
                    && (i < GROUP - 1
                        || absorbs(warp_reduce_in_order(
                            if lane == i {
                                aggregate
                            } else {
                                own.unwrap_or(identity)
                            },
                            op,
                        ))))
                    || (gpu::ballot_sync(FULL_MASK, prev.is_none()) == 0
                        && absorbs(warp_reduce_in_order(prev.unwrap_or(identity), op))));
            if own_done && (h == 0 || have_c1 || rebuilt || shortcut) {
                break;
            }
            gpu::nanosleep(POLL_DELAY);
        }

        let own = own.unwrap_or(identity);
        // `absorbs(x)`: `y ⊕ x == x` bit for bit for every `y`, so the result is the same
        // whether or not C(h - 1) is combined in front.
        let own_tree = (may_absorb && i > 0).then(|| warp_reduce_in_order(own, op));
        let last_tree = (may_absorb && i == GROUP - 1)
            .then(|| warp_reduce_in_order(if lane == i { aggregate } else { own }, op));
        let skip_base = own_tree.is_some_and(absorbs) && last_tree.is_none_or(absorbs);
        // C(h - 1), read or rebuilt (group 0: the seed, C(-1)); `None`: nothing to combine.
        let base = if h == 0 {
            seed
        } else if skip_base {
            None
        } else if gpu::shfl_sync(FULL_MASK, c1.is_some() as u32, 0, 32) != 0 {
            Some(gpu::shfl_sync(FULL_MASK, c1.unwrap_or(identity), 0, 32))
        } else {
            let g = warp_reduce_in_order(prev.unwrap_or(identity), op);
            let before = if h >= 2 {
                Some(gpu::shfl_sync(FULL_MASK, c2.unwrap_or(identity), 1, 32))
            } else {
                seed
            };
            let c = match before {
                Some(b) if !(may_absorb && absorbs(g)) => op(b, g),
                _ => g,
            };
            if lane == 0 {
                // Same bits as its own tile's: publishing early helps the tiles after.
                unsafe { self.publish_fixed(checkpoint(h - 1), c) };
            }
            Some(c)
        };
        // `x` after C(h - 1), unless `x` absorbs it (the same bits either way).
        let after_base = |x: A| match base {
            Some(b) if !(may_absorb && absorbs(x)) => op(b, x),
            _ => x,
        };
        if i == GROUP - 1 {
            // The group's last tile: C(h) = C(h - 1) ⊕ G(h), its own aggregate in lane 31.
            let g = last_tree.unwrap_or_else(|| {
                warp_reduce_in_order(if lane == i { aggregate } else { own }, op)
            });
            if lane == 0 {
                unsafe { self.publish_fixed(checkpoint(h), after_base(g)) };
            }
        }
        if i == 0 {
            return base.unwrap_or(identity);
        }
        after_base(own_tree.unwrap_or_else(|| warp_reduce_in_order(own, op)))
    }
}
