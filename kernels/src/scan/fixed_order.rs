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
//! When neither `C(h - 1)` nor `C(h - 2)` is out but group `h - 1`'s aggregates are, the chain
//! lags behind the tiles (a small launch's tiles all start together, and the chain takes a
//! poll round a group), so the tile folds forward from the nearest checkpoint out, up to
//! 34 groups back or the seed, through each later group's 32 slots: the chain's operations
//! again, publishing the checkpoints it passes.
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
/// 16-byte cells of the stage a fold forward copies slots to (`fold_forward`): 4 KiB, eight
/// groups of one-pair slots (the shared memory of two blocks an SM stays under the next
/// carve-out step).
const FOLD_CELLS: usize = 256;

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
        let [a, b] = unsafe { gpu::load_relaxed_v2_u64(s) };
        let [c, d] = if Self::PAIRS == 2 {
            unsafe { gpu::load_relaxed_v2_u64(s.add(2)) }
        } else {
            [0, 0]
        };
        self.decode_fixed([a, b, c, d])
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
        // C(h - 1) folded forward from a farther checkpoint (`fold_forward`).
        let mut far = None;
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
            if own_done && (h == 0 || have_c1 || rebuilt || shortcut || far.is_some()) {
                break;
            }
            // Neither C(h - 1) nor C(h - 2) out, the previous group's aggregates all are: the
            // chain lags behind the tiles (all of a small launch's start together, and the
            // chain takes a hop a group), so fold forward from a farther checkpoint.
            if h >= 2
                && far.is_none()
                && !have_c1
                && !rebuilt
                && gpu::ballot_sync(FULL_MASK, prev.is_none()) == 0
            {
                far = unsafe {
                    self.fold_forward(
                        h,
                        prev.unwrap_or(identity),
                        seed,
                        identity,
                        op,
                        (may_absorb, absorbs),
                    )
                };
                if own_done && far.is_some() {
                    break;
                }
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
        } else if far.is_some() {
            far
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
    /// Slot `i`'s value if the words `w` (its 64-bit words as read) carry this launch's tag.
    #[inline(always)]
    fn decode_fixed(&self, w: [u64; 4]) -> Option<A> {
        let t = self.fixed_tag();
        let tag = |x: u64| (x >> 32) as u32 == t;
        let mut ok = tag(w[0]) && (A::WORDS < 2 || tag(w[1]));
        if Self::PAIRS == 2 {
            ok &= tag(w[2]) && (A::WORDS < 4 || tag(w[3]));
        }
        ok.then(|| A::from_words(w.map(|x| x as u32)))
    }

    /// `C(h - 1)` folded forward from the nearest checkpoint out among `C(h - 3)` ..
    /// `C(h - 2 - FOLD_GROUPS)` (or the seed, `C(-1)`), through the groups after it, `C(g) =
    /// C(g - 1) ⊕ G(g)` group by group: the chain's own operations on the same values, so the
    /// same bits. `prev` is this lane's aggregate of group `h - 1` (all published). Publishes
    /// each checkpoint it passes, for the tiles after. `None` (warp-uniform) when no checkpoint
    /// in reach is out or an aggregate between is not: poll again. The groups' slots come in
    /// one round of `cp.async` copies to a shared stage (each lane its own slots), so the fold
    /// waits one round trip whatever its length, with no register held per group (the tiles'
    /// values fill them while warp 0 looks for its prefix).
    ///
    /// # Safety
    /// As [`TileStatus::fixed_order_prefix`], for a tile of group `h >= 2`.
    // Out of line: the tile's values fill the registers while warp 0 looks for its prefix, and
    // inlined, this rare path made ptxas spill in every tile.
    #[inline(never)]
    unsafe fn fold_forward<F: Fn(A, A) -> A + Copy, Z: Fn(A) -> bool + Copy>(
        &self,
        h: u64,
        prev: A,
        seed: Option<A>,
        identity: A,
        op: F,
        (may_absorb, absorbs): (bool, Z),
    ) -> Option<A> {
        let stage = crate::static_shared!(FOLD_STAGE: [[u32; 4]; FOLD_CELLS]);
        let lane = gpu::lane_id() as u64;
        let grid = gpu::grid_dim_x() as u64;
        // Groups the stage holds.
        let reach = (FOLD_CELLS / (32 * Self::PAIRS)) as u64;
        // As the chain: `G(g)` alone when nothing precedes it or it absorbs what does.
        let step = |c: Option<A>, g: A| match c {
            Some(b) if !(may_absorb && absorbs(g)) => op(b, g),
            _ => g,
        };
        // Lane l reads C(h - 3 - l); the lane at C(-1) holds the seed, always there.
        let at = h as i64 - 3 - lane as i64;
        let cp = if at >= 0 && lane < reach {
            unsafe { self.read_fixed(grid + at as u64) }
        } else {
            None
        };
        let found = gpu::ballot_sync(FULL_MASK, lane < reach && (cp.is_some() || at == -1));
        if found == 0 {
            return None;
        }
        let l = found.trailing_zeros();
        let mut c = if h == l as u64 + 2 {
            seed
        } else {
            Some(gpu::shfl_sync(FULL_MASK, cp.unwrap_or(identity), l, 32))
        };
        // Groups h - 2 - l ..= h - 2 through the stage, then h - 1 from `prev`.
        let first = h - 2 - l as u64;
        let groups = l as usize + 1;
        for k in 0..groups {
            let src = self.fixed_slot(GROUP * (first + k as u64) + lane) as *const u32;
            for p in 0..Self::PAIRS {
                unsafe {
                    gpu::cp_async_16(
                        stage,
                        (k * 32 + lane as usize) * Self::PAIRS + p,
                        src.wrapping_add(4 * p),
                    )
                };
            }
        }
        gpu::cp_async_commit();
        gpu::cp_async_wait_group::<0>();
        let words = unsafe { stage.cast::<u64>() };
        for k in 0..groups {
            let at = 2 * (k * 32 + lane as usize) * Self::PAIRS;
            let mut w = [0u64; 4];
            for (i, x) in w.iter_mut().enumerate().take(2 * Self::PAIRS) {
                *x = unsafe { words.read(at + i) };
            }
            let v = self.decode_fixed(w);
            if gpu::ballot_sync(FULL_MASK, v.is_none()) != 0 {
                return None;
            }
            let next = step(c, warp_reduce_in_order(v.unwrap_or(identity), op));
            if lane == 0 {
                unsafe { self.publish_fixed(grid + first + k as u64, next) };
            }
            c = Some(next);
        }
        let c1 = step(c, warp_reduce_in_order(prev, op));
        if lane == 0 {
            unsafe { self.publish_fixed(grid + h - 1, c1) };
        }
        Some(c1)
    }
}

#[cfg(all(test, not(target_arch = "nvptx64")))]
mod tests {
    use std::vec::Vec;

    use super::*;
    use crate::gpu::sim::{LaunchConfig, launch};

    /// The butterfly's balanced tree over 32 values, lower lanes on the left.
    fn tree(mut v: Vec<f32>) -> f32 {
        while v.len() > 1 {
            v = v.chunks(2).map(|p| p[0] + p[1]).collect();
        }
        v[0]
    }

    /// Raw addresses for the launch closure (the simulator's memory is the host's).
    #[derive(Clone, Copy)]
    struct Slots(usize);
    unsafe impl Sync for Slots {}

    /// A tile whose group's checkpoints are not out folds forward from the seed (or the
    /// nearest checkpoint out) through the groups after it, publishing the checkpoints it
    /// passes: the chain's bits.
    #[test]
    fn fold_forward_gives_the_chains_bits() {
        let (groups, epoch) = (12u64, 5u32);
        let grid = GROUP * groups;
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let agg: Vec<f32> = (0..grid)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 40) as f32 / (1u64 << 24) as f32 * 3.0 - 1.0
            })
            .collect();
        // The chain, on the CPU: C(g) = C(g - 1) + G(g), seed 0.25.
        let seed = 0.25f32;
        let mut c = Vec::new();
        for g in 0..groups as usize {
            let before = if g == 0 { seed } else { c[g - 1] };
            c.push(before + tree(agg[32 * g..32 * g + 32].to_vec()));
        }
        let cfg = LaunchConfig {
            grid: (grid as u32, 1, 1),
            block: (32, 1, 1),
            dynamic_shared_bytes: 0,
        };
        // (target tile, a checkpoint out beforehand, the checkpoints out after)
        let cases = [
            (GROUP * 9 + 7, None, 0..9u64),
            (GROUP * 11 + 7, Some(4u64), 4..11),
            (GROUP * 3 + 31, None, 0..4),
            (GROUP * 2, None, 0..2),
        ];
        for (target, preset, want_out) in cases {
            let mut slots = vec_zeroed(grid);
            let out = std::sync::Mutex::new(None);
            let st = Slots(slots.as_mut_ptr() as usize);
            let status = |s: Slots| {
                TileStatus::<f32>::fixed_order(
                    core::ptr::null_mut(),
                    s.0 as *mut f32,
                    core::ptr::null_mut(),
                    epoch,
                )
            };
            // Every tile's aggregate out, no checkpoint.
            launch("publish", &cfg, || {
                let t = gpu::block_idx_x() as u64;
                if gpu::lane_id() == 0 {
                    unsafe { status(st).publish_fixed(t, agg[t as usize]) };
                    if let Some(g) = preset.filter(|_| t == 0) {
                        unsafe { status(st).publish_fixed(grid + g, c[g as usize]) };
                    }
                }
            })
            .unwrap();
            // The target tile alone looks for its prefix.
            launch("prefix", &cfg, || {
                let t = gpu::block_idx_x() as u64;
                if t != target {
                    return;
                }
                let p = unsafe {
                    status(st).fixed_order_prefix(
                        t,
                        agg[t as usize],
                        Some(seed),
                        0.0,
                        |a, b| a + b,
                        (false, |_| false),
                    )
                };
                if gpu::lane_id() == 0 {
                    *out.lock().unwrap() = Some(p);
                }
            })
            .unwrap();
            let (h, i) = ((target / GROUP) as usize, (target % GROUP) as usize);
            let mut own: Vec<f32> = agg[32 * h..32 * h + 32].to_vec();
            own[i..].iter_mut().for_each(|v| *v = 0.0);
            let want = if i == 0 {
                c[h - 1]
            } else {
                c[h - 1] + tree(own)
            };
            let got = out.lock().unwrap().expect("the target ran");
            assert_eq!(got.to_bits(), want.to_bits(), "tile {target}");
            // The checkpoints it passed (and, a group's last tile, its own) are out, the chain's bits.
            let st = status(st);
            for g in 0..groups {
                let read = unsafe { st.read_fixed(grid + g) };
                if want_out.contains(&g) || preset == Some(g) {
                    assert_eq!(
                        read.map(f32::to_bits),
                        Some(c[g as usize].to_bits()),
                        "tile {target}: C({g})"
                    );
                } else {
                    assert!(read.is_none(), "tile {target}: C({g}) published");
                }
            }
        }
    }

    fn vec_zeroed(grid: u64) -> Vec<u64> {
        std::vec![0u64; (grid * fixed_order_bytes_per_tile(1) / 8) as usize]
    }
}
