//! Decoupled look-back (Merrill & Garland, "Single-pass Parallel Prefix Scan with Decoupled
//! Look-back", 2016): every tile publishes its aggregate as soon as it knows it, and its
//! inclusive prefix once it knows that; a tile finds its exclusive prefix by walking back over
//! its predecessors' published values until it meets an inclusive prefix.
//!
//! One status word per tile: `epoch << 2 | status`. The host gives every launch a new epoch,
//! so words left by earlier launches read as "not yet published" and the status array never
//! needs clearing between launches (the host clears it only when the 30-bit epoch wraps).
//! A 4-byte accumulator travels in the same 64-bit word as its status (value low, status
//! high): one load per predecessor, no ordering between two locations to get right. An
//! 8- or 16-byte accumulator may do the same in a 16- or 32-byte slot
//! ([`TileStatus::tagged_slots`]): each 64-bit quarter is `status word << 32 | one value
//! word`, written by one or two 16-byte stores and read by as many 16-byte loads; only each
//! quarter is read whole, so a slot counts as published only when all of them carry the same
//! current status word (a part-done overwrite of an aggregate by the prefix reads as "not yet"
//! and is polled again; each status is written once a launch, so equal tags are one write's).
//! Other accumulators live in
//! two arrays beside the status words; a value is written before its status word with release
//! semantics and read after the word with acquire semantics (two dependent loads per
//! look-back window instead of one).

use super::policy::ACTIVE;
use crate::gpu::{self, FULL_MASK, ShflValue};
use crate::warp::warp_reduce_rev;

/// Published: the tile's aggregate (the combination of its own elements).
pub const STATUS_AGGREGATE: u32 = 1;
/// Published: the tile's inclusive prefix (everything up to and including the tile).
pub const STATUS_PREFIX: u32 = 2;
// Look-back timing and width: `super::policy` says what each is and why.
const PER_LANE: usize = ACTIVE.lookback_per_lane as usize;
const FIRST_DELAY_FROM: u64 = ACTIVE.delay_from_tile;
const FIRST_DELAY_MIN_TILES: u32 = ACTIVE.delay_min_tiles;
pub(crate) const POLL_DELAY: u32 = ACTIVE.poll_delay_ns;

/// Tile `tile`'s first wait before it reads its predecessors' slots: `ns` (0: none), only for
/// tiles from [`ScanPolicy::delay_from_tile`](super::policy::ScanPolicy::delay_from_tile) on in
/// launches of [`ScanPolicy::delay_min_tiles`](super::policy::ScanPolicy::delay_min_tiles) or
/// more (`policy.rs` says why).
#[inline(always)]
pub(crate) fn first_wait(tile: u64, ns: u32) {
    if ns > 0 && tile >= FIRST_DELAY_FROM && gpu::grid_dim_x() >= FIRST_DELAY_MIN_TILES {
        gpu::nanosleep(ns);
    }
}
/// Predecessors a warp reads per look-back round.
pub const LOOKBACK_WINDOW: u64 = 32 * PER_LANE as u64;
/// Epochs are 30-bit: `epoch << 2` must fit a u32.
pub const EPOCH_MASK: u32 = (1 << 30) - 1;

/// Bytes of `flags` per tile: the 32-byte tagged slot of a 16-byte accumulator.
pub const STATUS_BYTES_PER_TILE: usize = 32;

/// The tile-status arrays of one launch. `flags` has room for [`STATUS_BYTES_PER_TILE`] bytes
/// per tile.
#[derive(Clone, Copy)]
pub struct TileStatus<A> {
    pub flags: *mut u32,
    pub aggregates: *mut A,
    pub prefixes: *mut A,
    /// This launch's epoch, 1..=EPOCH_MASK.
    pub epoch: u32,
    /// Nanoseconds warp 0 sleeps before its first look-back read (see
    /// [`ScanPolicy::first_delay_ns`](super::policy::ScanPolicy::first_delay_ns)); the kernel's
    /// choice, as the best wait depends on how long its tiles take.
    pub first_delay_ns: u32,
    /// Publish 2- and 4-word accumulators with their status in one 16- or 32-byte slot of
    /// `flags` per tile (see the module comment): no dependent load of the value after its
    /// status, no fence before a publish. The kernel's choice, so that the kernels measured
    /// with the two-array layout keep it.
    pub tagged_slots: bool,
    /// Combine the cross-tile prefix in a fixed order instead of looking back
    /// ([`fixed_order`](super::fixed_order)): the same bits on every run; `aggregates` then
    /// holds its slots
    /// ([`fixed_order_bytes_per_tile`](super::fixed_order::fixed_order_bytes_per_tile)).
    pub fixed_order: bool,
}

impl<A> TileStatus<A> {
    /// The scans' status: cross-tile prefixes in a fixed order (the same bits on every run,
    /// [`fixed_order`](super::fixed_order)), the policy's first wait.
    #[inline(always)]
    pub fn fixed_order(flags: *mut u32, aggregates: *mut A, prefixes: *mut A, epoch: u32) -> Self {
        Self {
            flags,
            aggregates,
            prefixes,
            epoch,
            first_delay_ns: super::policy::ACTIVE.first_delay_ns,
            tagged_slots: false,
            fixed_order: true,
        }
    }
}

impl<A: ShflValue> TileStatus<A> {
    /// Value and status share one 64-bit word.
    const PACKED: bool = A::WORDS == 1;

    /// Value and status share one 16- or 32-byte slot, the status in each 64-bit quarter.
    #[inline(always)]
    fn slots(&self) -> bool {
        (A::WORDS == 2 || A::WORDS == 4) && self.tagged_slots
    }

    /// The slot of `tile` (tagged slots): `A::WORDS` 64-bit words.
    #[inline(always)]
    fn slot(&self, tile: usize) -> *mut u64 {
        unsafe { (self.flags as *mut u64).add(A::WORDS * tile) }
    }

    #[inline(always)]
    fn word(&self, status: u32) -> u32 {
        (self.epoch << 2) | status
    }

    #[inline(always)]
    fn publish(&self, tile: u64, value: A, status: u32, values: *mut A) {
        unsafe {
            if self.slots() {
                let tag = (self.word(status) as u64) << 32;
                let v = value.to_words();
                let at = self.slot(tile as usize);
                gpu::store_relaxed_v2_u64(at, [tag | v[0] as u64, tag | v[1] as u64]);
                if A::WORDS == 4 {
                    gpu::store_relaxed_v2_u64(at.add(2), [tag | v[2] as u64, tag | v[3] as u64]);
                }
            } else if Self::PACKED {
                let w = ((self.word(status) as u64) << 32) | value.to_words()[0] as u64;
                gpu::store_release_u64((self.flags as *mut u64).add(tile as usize), w);
            } else {
                core::ptr::write_volatile(values.add(tile as usize), value);
                gpu::store_release_u32(self.flags.add(tile as usize), self.word(status));
            }
        }
    }

    /// The status (0 while not published) and value words of `tile`'s tagged slot: published
    /// once every quarter carries this launch's same status word.
    /// # Safety
    /// `tile` is within `flags`; tagged slots.
    #[inline(always)]
    unsafe fn read_slot(&self, tile: usize) -> (u32, [u32; 4]) {
        let at = self.slot(tile);
        let [q0, q1] = unsafe { gpu::load_relaxed_v2_u64(at) };
        let [q2, q3] = if A::WORDS == 4 {
            unsafe { gpu::load_relaxed_v2_u64(at.add(2)) }
        } else {
            [q0, q1]
        };
        let tag = (q0 >> 32) as u32;
        let same = tag == (q1 >> 32) as u32 && tag == (q2 >> 32) as u32 && tag == (q3 >> 32) as u32;
        let status = if same && tag >> 2 == self.epoch {
            tag & 3
        } else {
            0
        };
        (status, [q0 as u32, q1 as u32, q2 as u32, q3 as u32])
    }

    /// Publish `tile`'s aggregate (one thread).
    /// # Safety
    /// `tile` is within the arrays.
    #[inline(always)]
    pub unsafe fn publish_aggregate(&self, tile: u64, aggregate: A) {
        self.publish(tile, aggregate, STATUS_AGGREGATE, self.aggregates)
    }

    /// Publish `tile`'s inclusive prefix (one thread).
    /// # Safety
    /// `tile` is within the arrays.
    #[inline(always)]
    pub unsafe fn publish_prefix(&self, tile: u64, prefix: A) {
        self.publish(tile, prefix, STATUS_PREFIX, self.prefixes)
    }

    /// The exclusive prefix of `tile` (>= 1): called by all 32 lanes of one warp. Each round
    /// reads the next [`LOOKBACK_WINDOW`] predecessors (lane `l` the `PER_LANE` at distances
    /// `l*PER_LANE+1 ..`, independent loads in flight together), waits until every one nearer
    /// than the nearest inclusive prefix has published (all of them when the window holds no
    /// prefix), and combines back to that prefix. Every lane returns the prefix.
    ///
    /// Never deadlocks when tiles are handed out in launch order by an atomic counter: every
    /// predecessor belongs to a block that is already running.
    /// # Safety
    /// `tile` and its predecessors are within the arrays; tile 0 publishes its prefix.
    #[inline(always)]
    pub unsafe fn exclusive_prefix<F: Fn(A, A) -> A + Copy>(
        &self,
        tile: u64,
        identity: A,
        op: F,
    ) -> A {
        let lane = gpu::lane_id() as u64;
        first_wait(tile, self.first_delay_ns);
        let mut exclusive = identity;
        let mut end = tile;
        loop {
            let dist = |j: usize| lane * PER_LANE as u64 + j as u64;
            let valid = |j: usize| end > dist(j);
            let pred = |j: usize| end.wrapping_sub(1 + dist(j)) as usize;
            let mut status = [0u32; PER_LANE];
            // The value words read with the status (packed or tagged slots).
            let mut packed = [[0u32; 4]; PER_LANE];
            // Ready once every predecessor nearer than the nearest inclusive prefix has
            // published (farther ones do not matter); with no prefix in the window, once all
            // have. CUB waits for the whole window; a late block far behind the prefix front
            // then holds up tiles that do not need it.
            let (prefixes, acc) = loop {
                for j in 0..PER_LANE {
                    // Tiles before tile 0 count as "prefix" so they never hold the window up;
                    // they lie beyond tile 0, which is a prefix, so they are never combined.
                    status[j] = if !valid(j) {
                        STATUS_PREFIX
                    } else if self.slots() {
                        let (st, w) = unsafe { self.read_slot(pred(j)) };
                        packed[j] = w;
                        st
                    } else if Self::PACKED {
                        // Relaxed is enough: the value travels in the word it is read with.
                        let w = unsafe {
                            gpu::load_relaxed_u64((self.flags as *const u64).add(pred(j)))
                        };
                        packed[j][0] = w as u32;
                        let hi = (w >> 32) as u32;
                        if hi >> 2 == self.epoch { hi & 3 } else { 0 }
                    } else {
                        let w = unsafe { gpu::load_acquire_u32(self.flags.add(pred(j))) };
                        if w >> 2 == self.epoch { w & 3 } else { 0 }
                    };
                }
                // This lane's tiles, nearest first, up to (and including) its nearest prefix.
                let mut has_prefix = false;
                let mut blocked = false;
                for &st in status.iter() {
                    if !has_prefix {
                        blocked |= st == 0;
                        has_prefix = st == STATUS_PREFIX;
                    }
                }
                let prefixes = gpu::ballot_sync(FULL_MASK, has_prefix);
                let stalls = gpu::ballot_sync(FULL_MASK, blocked);
                // Lanes up to the first with a prefix must not be blocked.
                let needed = if prefixes != 0 {
                    u32::MAX >> (31 - prefixes.trailing_zeros())
                } else {
                    u32::MAX
                };
                if stalls & needed == 0 {
                    let mut acc = identity;
                    let mut seen_prefix = false;
                    for j in 0..PER_LANE {
                        if !seen_prefix && status[j] != 0 {
                            let v = if !valid(j) {
                                identity
                            } else if self.slots() || Self::PACKED {
                                A::from_words(packed[j])
                            } else if status[j] == STATUS_PREFIX {
                                unsafe { core::ptr::read_volatile(self.prefixes.add(pred(j))) }
                            } else {
                                unsafe { core::ptr::read_volatile(self.aggregates.add(pred(j))) }
                            };
                            // Earlier tiles go on the left.
                            acc = op(v, acc);
                            seen_prefix = status[j] == STATUS_PREFIX;
                        }
                    }
                    break (prefixes, acc);
                }
                gpu::nanosleep(POLL_DELAY);
            };
            let stop = if prefixes != 0 {
                prefixes.trailing_zeros() as u64
            } else {
                31
            };
            let contribution = if lane <= stop { acc } else { identity };
            let window = warp_reduce_rev(contribution, op);
            exclusive = op(window, exclusive);
            if prefixes != 0 {
                return exclusive;
            }
            end -= LOOKBACK_WINDOW;
        }
    }
}
