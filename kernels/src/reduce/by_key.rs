//! Reduce by key (CUB's `DeviceReduce::ReduceByKey`) in ONE pass: runs of equal consecutive
//! keys become one unique key and one aggregate each, plus the number of runs.
//!
//! A tile is `ACTIVE.block` threads × `ITEMS` consecutive elements each
//! ([`ScanPolicy::reduce_by_key_items`](crate::scan::policy::ScanPolicy::reduce_by_key_items)).
//! Each warp copies its stretch of keys and values into shared memory with coalesced 16-byte
//! `cp.async` copies (no registers hold data in flight), then each thread reads its own
//! consecutive elements from there, turns its keys into a bit mask of run heads and folds its
//! values into one (head count, value after the last head) pair. The pairs are scanned across
//! the block with the operator `(c1, a) ⊕ (c2, b) = (c1 + c2, if c2 > 0 { b } else { a ⊕ b })`
//! (associative whenever ⊕ is). Across tiles the two halves travel apart:
//!
//! - the **run count** before the tile (a u64: any length) comes from the scan's decoupled
//!   look-back ([`crate::scan::lookback`]); integer sums are exact in any association, so the
//!   timing-dependent point where the look-back stops changes nothing;
//! - the **value carried in** (the run that enters the tile from before) is combined in a fixed
//!   order (`carry_in`, by a second warp while the first looks back for the count): windows
//!   of 32 tile aggregates counted back from the tile, each reduced by the same warp tree,
//!   windows combined right to left, back to the nearest tile that holds a head. The
//!   association is a function of the tile index and the keys alone, so float aggregates are
//!   the same bits on every run, grid, GPU and the simulator.
//!
//! Only a tile that ends a run (holds a head, or the last element) needs the carry; the others
//! only publish. Then each thread walks its elements again (from shared memory) starting at its
//! exclusive pair: the count before an element is its run index, so a head writes its key to
//! `unique[run]` and the finished aggregate of the run before it to `aggregates[run - 1]`; the
//! last element writes the last aggregate and the run count. No compaction pass, no second
//! launch.
//!
//! Why this shape (the figures: CHANGELOG.md, issues 15 and 16): the scan by key's pair per
//! element in registers, and per-thread folds over registers loaded straight from global
//! memory, both ran well behind CUB: a thread's own 16-byte loads 128 bytes apart made twice
//! the L2 sectors (every sector fetched by two instructions) and the registers capped the
//! bytes in flight per SM. The scans' fixed-order checkpoints for the whole pair were slow
//! too: every tile needs the run count, so every tile waited on the checkpoint chain.

use crate::gpu::{self, FULL_MASK, SharedArray};
use crate::ops::{Element, ReduceOp};
use crate::scan::lookback::{POLL_DELAY, TileStatus, first_wait};
use crate::scan::policy::ACTIVE;
use crate::scan::tile::prefetch_stretch;
use crate::scan::{Headed, next_tile};
use crate::warp::{warp_inclusive_scan, warp_reduce_rev};

pub(crate) const WARPS: usize = ACTIVE.block as usize / 32;
// Warp 0 looks back for the run count, warp 1 combines the carried value.
const _: () = assert!(WARPS >= 2);
/// 16-byte chunks of shared memory per warp: its stretch of keys, then of values.
pub(crate) const WARP_CHUNKS: usize = 32 * ACTIVE.reduce_by_key_thread_bytes as usize / 16;

/// The run-counting segmented operator over [`Headed`] values.
#[inline(always)]
pub fn counted<T: Element, O: ReduceOp<T, Acc = T>>(a: Headed<T>, b: Headed<T>) -> Headed<T> {
    Headed {
        head: a.head.wrapping_add(b.head),
        value: if b.head != 0 {
            b.value
        } else {
            O::combine(a.value, b.value)
        },
    }
}

/// Where 16-byte chunk `c` of a warp's key or value stretch sits: XOR-swizzled within each
/// aligned group of 8 chunks (the 32 banks), so that both the coalesced copies (lane `l` ->
/// chunk `32r + l`) and each thread's reads of its own consecutive chunks (lane `l` -> chunk
/// `l * per_lane + v`) hit 8 different bank groups per quarter warp instead of one. The groups
/// are rows because the tile starts on one ([`gpu::shared_align`]).
#[inline(always)]
pub(crate) fn slot(c: usize) -> usize {
    c ^ ((c >> 3) & 7)
}

/// Element `e` of the stretch of `X` whose chunks start at chunk `base`, in units of `X`.
#[inline(always)]
pub(crate) fn elem_at<X: Element>(base: usize, e: usize) -> usize {
    (base + slot(e / X::PER_VEC)) * X::PER_VEC + e % X::PER_VEC
}

/// `a ⊕ b`, where `a` may be absent (nothing before `b`): never combines with the identity, so
/// a float run keeps its exact bits (`-0.0 + 0.0` would turn into `+0.0`).
#[inline(always)]
pub(crate) fn then<T: Element, O: ReduceOp<T, Acc = T>>(
    a: Option<Headed<T>>,
    b: Headed<T>,
) -> Headed<T> {
    match a {
        Some(a) => counted::<T, O>(a, b),
        None => b,
    }
}

/// The value carried into tile `tile` (>= 1): the combination, in tile order, of the tile
/// aggregates (`(heads, value after the last head)`, published in `values`' fixed slots) back
/// to and including the nearest tile with a head. Called by the 32 lanes of one warp; every
/// lane returns it. Fixed order: window `w` holds tiles `tile - 32w - 1 - l` (lane `l`), reduced
/// by [`warp_reduce_rev`] (lanes past the head tile give the identity, which the head tile's
/// value absorbs exactly); windows are combined right to left. So the bits depend on the tile
/// index and the keys only, never on timing. Waits only on the tiles it combines, which belong
/// to blocks already running (tile 0 always holds a head).
///
/// Polling is kept light, as the look-back's: after the first wait ([`first_wait`] of
/// `first_delay_ns`), only lane 0 reads (the
/// nearest tile, which holds a head whenever runs are shorter than a tile) until that tile is
/// out, then the whole window. (The first wait is faster; one reader instead of 32 is as
/// fast, and polls the L2 less: CHANGELOG.md, issue 32.)
///
/// # Safety
/// `values` spans the launch's tiles; each tile publishes its aggregate in its slot.
#[inline(always)]
pub(crate) unsafe fn carry_in<T: Element, O: ReduceOp<T, Acc = T>>(
    values: &TileStatus<Headed<T>>,
    tile: u64,
    first_delay_ns: u32,
    poll_ns: u32,
) -> T {
    let lane = gpu::lane_id() as u64;
    let identity = Headed {
        head: 0,
        value: O::identity(),
    };
    first_wait(tile, first_delay_ns);
    let mut carry: Option<Headed<T>> = None;
    let mut end = tile;
    // Lanes that read: lane 0 alone until the nearest tile shows no head.
    let mut reach = 1u32;
    loop {
        // Before tile 0 there is nothing; tile 0 holds a head, so such lanes lie past the stop.
        let valid = end > lane;
        let mut got = None;
        let (heads, stop) = loop {
            if valid && got.is_none() && (lane as u32) < reach {
                got = unsafe { values.read_fixed(end - 1 - lane) };
            }
            let head = !valid || got.is_some_and(|g: Headed<T>| g.head != 0);
            let heads = gpu::ballot_sync(FULL_MASK, head);
            let missing = gpu::ballot_sync(FULL_MASK, valid && got.is_none());
            let stop = if heads != 0 {
                heads.trailing_zeros()
            } else {
                31
            };
            // Lanes up to the nearest head must be in; farther ones are not combined.
            if missing & (u32::MAX >> (31 - stop)) == 0 {
                break (heads, stop);
            }
            if reach < 32 && missing & 1 == 0 {
                // The nearest tile is out and holds no head: read the whole window now.
                reach = 32;
                continue;
            }
            gpu::nanosleep(poll_ns);
        };
        let mine = if lane <= stop as u64 {
            got.unwrap_or(identity)
        } else {
            identity
        };
        let window = warp_reduce_rev(mine, counted::<T, O>);
        // Earlier tiles on the left.
        let c = match carry {
            Some(later) => counted::<T, O>(window, later),
            None => window,
        };
        if heads != 0 {
            return c.value;
        }
        carry = Some(c);
        end -= 32;
        reach = 32;
    }
}

/// Copy the warp's stretch of `len` elements of `src` from element `start` into the chunks of
/// `tile` from `base`: `cp.async` when `fast` (all in range, 16-byte aligned), else one
/// element at a time (`fill` past `n`). Coalesced either way.
#[inline(always)]
#[allow(clippy::too_many_arguments)] // where from, where to, and the tile's bounds
pub(crate) unsafe fn stage<X: Element>(
    tile: SharedArray<[u32; 4]>,
    base: usize,
    src: *const X,
    start: u64,
    len: usize,
    n: u64,
    fast: bool,
    fill: X,
) {
    let lane = gpu::lane_id() as usize;
    if fast {
        let chunks = len / X::PER_VEC;
        for r in 0..chunks / 32 {
            let c = r * 32 + lane;
            unsafe {
                let from = src.add(start as usize + c * X::PER_VEC) as *const u32;
                gpu::cp_async_16(tile, base + slot(c), from);
            }
        }
    } else {
        let elems = unsafe { tile.cast::<X>() };
        for r in 0..len / 32 {
            let e = r * 32 + lane;
            let i = start + e as u64;
            let x = if i < n {
                unsafe { src.add(i as usize).read() }
            } else {
                fill
            };
            unsafe { elems.write(elem_at::<X>(base, e), x) };
        }
    }
}

/// The parameters of [`ReduceByKeyParams`]'s kernels, written once: the struct and every kernel entry's
/// parameter list ([`kernel_params!`](crate::kernel_params)).
#[macro_export]
#[doc(hidden)]
macro_rules! reduce_by_key_params {
    ($($mode:tt)*) => {
        $crate::kernel_params! { $($mode)* ReduceByKeyParams<K, T> {
            /// The keys, `n` elements.
            keys: *const K,
            /// The values, `n` elements.
            values: *const T,
            /// One key per run (the first `capacity` runs).
            unique: *mut K,
            /// One aggregate per run (the first `capacity` runs).
            aggregates_out: *mut T,
            /// Runs the outputs hold.
            capacity: u64,
            /// Where the number of runs goes.
            num_runs: *mut u64,
            /// Elements.
            n: u64,
            /// The tile counter: 0 at launch, 0 again after.
            counter: *mut u32,
            /// 16 bytes a tile: the run counts' look-back.
            flags: *mut u32,
            /// One fixed slot a tile: the values' fixed order.
            aggregates: *mut Headed<T>,
            /// New for every launch.
            epoch: u32,
            /// The look-back's first wait in nanoseconds.
            delay_ns: u32,
            /// Tiles ahead to prefetch into L2 (0: none).
            prefetch: u32,
        } }
    };
}

crate::reduce_by_key_params!(struct
    /// The launch parameters of [`reduce_by_key_device`] (the kernel's one parameter, by value).
);

/// Reduce by key of the `n` `keys`/`values` (any length): run `r` (the `r`-th maximal run of equal
/// consecutive keys) gets `unique[r]` = its key and `aggregates_out[r]` = the reduction of its
/// values with `O`, for `r < capacity` (runs past it are counted, not written);
/// `num_runs[0]` = the number of runs (0 writes nothing when `n == 0`: the host does not
/// launch). `delay_ns`: the look-back's first wait
/// ([`ScanPolicy::reduce_by_key_delay_ns`](crate::scan::policy::ScanPolicy::reduce_by_key_delay_ns)).
/// `prefetch`: how many tiles ahead each block asks L2 for a later block's data (0: none; the
/// host passes a quarter of the blocks the device holds at once). `ITEMS`: elements per
/// thread, `ACTIVE.reduce_by_key_items(size of K, size of T)` (the host cuts tiles by the
/// same). Launch with `ACTIVE.block` threads a block and
/// `ceil(n / ACTIVE.reduce_by_key_tile_elems(size of K, size of T))` blocks, counter 0 at
/// launch, a fresh epoch; `flags` holds 16 bytes a tile (the run counts' look-back), and
/// `aggregates` one fixed slot a tile (the values' fixed order: half of
/// [`fixed_order_bytes_per_tile`](crate::scan::fixed_order::fixed_order_bytes_per_tile) of
/// `Headed<T>`'s words).
///
/// # Safety
/// Pointers valid for the sizes above; the outputs do not overlap the inputs.
#[inline(always)]
// Index loops over the 4 lanes of a 16-byte chunk (fully unrolled: constant indices,
// registers).
#[allow(clippy::needless_range_loop)]
pub unsafe fn reduce_by_key_device<
    K: Element,
    T: Element,
    O: ReduceOp<T, Acc = T>,
    const ITEMS: usize,
>(
    p: ReduceByKeyParams<K, T>,
) {
    let ReduceByKeyParams {
        keys,
        values,
        unique,
        aggregates_out,
        capacity,
        num_runs,
        n,
        counter,
        flags,
        aggregates,
        epoch,
        delay_ns,
        prefetch,
    } = p;
    // The head mask is a u32; a warp's keys and values fit its chunks, in whole bank groups.
    const {
        assert!(
            ITEMS.is_multiple_of(8)
                && ITEMS <= 32
                && 32 * ITEMS * (size_of::<K>() + size_of::<T>()) <= WARP_CHUNKS * 16
        )
    };
    let smem = crate::static_shared!(RBK_TILE: [[u32; 4]; WARPS * WARP_CHUNKS]);
    let warp_slots = crate::static_shared!(RBK_WARP_AGGS: [u128; 32]);
    let prefix_slot = crate::static_shared!(RBK_TILE_PREFIX: [u128; 1]);
    let run_base = crate::static_shared!(RBK_RUN_BASE: [u64; 1]);
    // SAFETY: a `Headed<T>` is at most 16 bytes and 16-byte aligned slots hold it.
    let warp_aggs: SharedArray<Headed<T>> = unsafe { warp_slots.cast::<Headed<T>>() };
    let tile_prefix: SharedArray<Headed<T>> = unsafe { prefix_slot.cast::<Headed<T>>() };
    let tile = unsafe { next_tile(counter) };
    let lane = gpu::lane_id();
    let warp = gpu::warp_id() as usize;
    let tile_elems = (WARPS * 32 * ITEMS) as u64;
    let stretch = tile * tile_elems + (warp * 32 * ITEMS) as u64;
    let first = stretch + lane as u64 * ITEMS as u64;
    let fast = (keys as usize | values as usize) & 15 == 0 && (tile + 1) * tile_elems <= n;
    let identity = Headed {
        head: 0,
        value: O::identity(),
    };
    // This warp's chunks: keys, then values (both multiples of 8 chunks).
    let kbase = warp * WARP_CHUNKS;
    let vbase = kbase + 32 * ITEMS * size_of::<K>() / 16;
    let zero_key = K::unpack([0; 4])[0];
    unsafe {
        stage(smem, kbase, keys, stretch, 32 * ITEMS, n, fast, zero_key);
        stage(
            smem,
            vbase,
            values,
            stretch,
            32 * ITEMS,
            n,
            fast,
            O::identity(),
        );
    }
    gpu::cp_async_commit();
    // While this tile's copies are in flight, ask L2 for this warp's stretch of tile `tile +
    // prefetch`, which a block starting a fraction of a block lifetime from now will claim:
    // DRAM then stays busy through this block's look-back and walk, when it loads nothing.
    if prefetch > 0 && (tile + prefetch as u64 + 1) * tile_elems <= n {
        let pf = stretch + prefetch as u64 * tile_elems;
        prefetch_stretch(keys, pf, 32 * ITEMS as u64);
        prefetch_stretch(values, pf, 32 * ITEMS as u64);
    }
    // Lane 0's key before its first element (the previous warp's or tile's last), loaded
    // now so that its latency hides behind the copies (read after the wait, it stalled every
    // warp; CHANGELOG.md, issue 15).
    let key_before = if lane == 0 && first > 0 && first <= n {
        unsafe { keys.add(first as usize - 1).read() }
    } else {
        zero_key
    };
    gpu::cp_async_wait_group::<0>();
    gpu::sync_warp(FULL_MASK);
    let (pk, pv) = (K::PER_VEC, T::PER_VEC);
    let key_at = |j: usize| unsafe {
        smem.cast::<K>()
            .read(elem_at::<K>(kbase, lane as usize * ITEMS + j))
    };
    // This thread's chunk `v` of keys or values (its elements are consecutive).
    let key_chunk = |v: usize| {
        K::unpack(unsafe {
            gpu::load_shared_v4(smem, kbase + slot(lane as usize * ITEMS / pk + v))
        })
    };
    let value_chunk = |v: usize| {
        T::unpack(unsafe {
            gpu::load_shared_v4(smem, vbase + slot(lane as usize * ITEMS / pv + v))
        })
    };

    // Elements of this thread in range (all of them in a full tile).
    let valid = n.saturating_sub(first).min(ITEMS as u64) as u32;
    // The head mask (bit j: element first + j starts a run). The key before this thread's
    // first is the previous lane's last; lane 0 reads it from global memory (L2 by then).
    let heads = {
        let mut m = 0u32;
        let mut prev = zero_key;
        for v in 0..ITEMS / pk {
            let k = key_chunk(v);
            for j in 0..4 {
                if j < pk {
                    if v + j > 0 {
                        m |= ((k[j] != prev) as u32) << (v * pk + j);
                    }
                    prev = k[j];
                }
            }
        }
        let k0 = key_chunk(0)[0];
        let from_left = gpu::shfl_up_sync(FULL_MASK, prev, 1, 32);
        let before = if first == 0 || valid == 0 {
            k0
        } else if lane == 0 {
            key_before
        } else {
            from_left
        };
        m |= (first == 0 || k0 != before) as u32;
        // Past n nothing is a head.
        m & if valid >= 32 {
            u32::MAX
        } else {
            (1u32 << valid) - 1
        }
    };

    // This thread's pair: the head count and the reduction after its last head (of all its
    // elements when it has none). Elements past n are skipped, not combined with an identity.
    let mut acc = O::identity();
    for v in 0..ITEMS / pv {
        let x = value_chunk(v);
        for j in 0..4 {
            let e = v * pv + j;
            if j < pv && (e as u32) < valid {
                acc = if e == 0 || heads >> e & 1 != 0 {
                    x[j]
                } else {
                    O::combine(acc, x[j])
                };
            }
        }
    }
    let mine = if valid > 0 {
        Headed {
            head: heads.count_ones(),
            value: acc,
        }
    } else {
        identity
    };

    // Block scan of the pairs: a warp scan, then the warps' totals through shared memory.
    let incl = warp_inclusive_scan(mine, counted::<T, O>);
    let left = gpu::shfl_up_sync(FULL_MASK, incl, 1, 32);
    if lane == 31 {
        unsafe { warp_aggs.write(warp, incl) };
    }
    gpu::sync_threads();
    let mut before_warp: Option<Headed<T>> = None;
    let mut aggregate = unsafe { warp_aggs.read(0) };
    for w in 1..WARPS {
        let a = unsafe { warp_aggs.read(w) };
        if w == warp {
            before_warp = Some(aggregate);
        }
        aggregate = counted::<T, O>(aggregate, a);
    }

    // Warp 0: the run count before the tile (look-back: exact in any order). Warp 1, at the
    // same time: the value carried into it (fixed order: the same bits every run). Two warps,
    // so that neither waits for the other and neither holds the other's state (both in one
    // warp were slower: spilled registers and a second round trip; CHANGELOG.md, issue 32).
    // Only a tile that finishes a run writes an aggregate that needs what came before.
    let ends_run = aggregate.head != 0 || (tile + 1) * tile_elems >= n;
    if warp == 0 {
        let counts = TileStatus::<u64> {
            flags,
            aggregates: core::ptr::null_mut(),
            prefixes: core::ptr::null_mut(),
            epoch,
            first_delay_ns: delay_ns,
            tagged_slots: true,
            fixed_order: false,
        };
        let heads = aggregate.head as u64;
        let base = if tile > 0 {
            if lane == 0 {
                unsafe { counts.publish_aggregate(tile, heads) };
            }
            let p = unsafe { counts.exclusive_prefix(tile, 0, u64::wrapping_add) };
            if lane == 0 {
                unsafe { counts.publish_prefix(tile, p + heads) };
            }
            p
        } else {
            if lane == 0 {
                unsafe { counts.publish_prefix(0, heads) };
            }
            0
        };
        if lane == 0 {
            unsafe { run_base.write(0, base) };
        }
    } else if warp == 1 {
        let values = TileStatus::<Headed<T>> {
            flags: core::ptr::null_mut(),
            aggregates,
            prefixes: core::ptr::null_mut(),
            epoch,
            first_delay_ns: 0,
            tagged_slots: false,
            fixed_order: true,
        };
        if lane == 0 {
            unsafe { values.publish_fixed(tile, aggregate) };
        }
        let carry = if tile > 0 && ends_run {
            // The count look-back's first wait, in the same launches and tiles (CHANGELOG.md,
            // issue 32: faster than none or half of it).
            unsafe { carry_in::<T, O>(&values, tile, delay_ns, POLL_DELAY) }
        } else {
            O::identity()
        };
        if lane == 0 {
            unsafe {
                tile_prefix.write(
                    0,
                    Headed {
                        head: 0,
                        value: carry,
                    },
                )
            };
        }
    }
    gpu::sync_threads();
    if valid == 0 {
        return;
    }

    // Everything before this thread's first element, then the walk over its elements.
    let mut before = if tile > 0 {
        Some(unsafe { tile_prefix.read(0) })
    } else {
        None
    };
    if let Some(b) = before_warp {
        before = Some(then::<T, O>(before, b));
    }
    if lane > 0 {
        before = Some(then::<T, O>(before, left));
    }
    // `before` is None only for element 0, which is a head: `acc` is set before any use.
    let base = unsafe { run_base.read(0) };
    // The walk counts runs in 32 bits (a u64 count here spilled registers): `r` is the
    // element's run index minus `from`, where `from` = the runs before the tile, less one when
    // there are any (so `r >= 1` outside tile 0 and the closed run `r - 1` never wraps), and
    // `room` the runs from `from` on that fit the outputs.
    let adj = (base > 0) as u32;
    let from = base - adj as u64;
    let room = capacity.saturating_sub(from).min(u32::MAX as u64 - 1) as u32;
    let closed = aggregates_out.wrapping_add(from as usize).wrapping_sub(1);
    let opened = unique.wrapping_add(from as usize);
    let (mut r, mut acc) = match before {
        Some(b) => (b.head + adj, b.value),
        None => (adj, O::identity()),
    };
    // Whether element n - 1 is here (then it is the last of the `valid` ones).
    let holds_last = first + ITEMS as u64 >= n;
    // Straight-line code per element, the stores predicated (`heads` has no bit past
    // `valid`): a branch per element made the walk costly with short runs (CHANGELOG.md,
    // issue 15).
    for v in 0..ITEMS / pv {
        let x = value_chunk(v);
        for j in 0..4 {
            let e = v * pv + j;
            if j < pv {
                let head = heads >> e & 1 != 0;
                // A head: the run before it (if any, and if it fits) is finished.
                if head && r.wrapping_sub(1) < room {
                    unsafe { closed.wrapping_add(r as usize).write(acc.canonical()) };
                }
                if head && r < room {
                    unsafe { opened.wrapping_add(r as usize).write(key_at(e)) };
                }
                r += head as u32;
                acc = if head {
                    x[j]
                } else if (e as u32) < valid {
                    O::combine(acc, x[j])
                } else {
                    acc
                };
            }
        }
    }
    // Element n - 1 is this thread's last valid one: its run ends there.
    if holds_last {
        if r.wrapping_sub(1) < room {
            unsafe { closed.wrapping_add(r as usize).write(acc.canonical()) };
        }
        unsafe { num_runs.write(from + r as u64) };
    }
}

/// The simulator's entry point of a reduce-by-key kernel.
#[cfg(not(target_arch = "nvptx64"))]
pub type SimReduceByKeyFn<K, T> = unsafe fn(ReduceByKeyParams<K, T>);

/// An operator whose reduce-by-key kernel over keys `K` and values `T` exists
/// ([`reduce_by_key_kernels!`](crate::reduce_by_key_kernels) implements it).
#[cfg(not(target_arch = "nvptx64"))]
pub trait ReduceByKeyInstance<K: Element, T: Element>: ReduceOp<T, Acc = T> {
    /// The kernel: `reduce_by_key_device::<K, T, Self>` under its exported name.
    const KERNEL: crate::Kernel<SimReduceByKeyFn<K, T>>;
}

/// Export `reduce_by_key_device::<K, T, Op>` as a kernel and register it with
/// [`ReduceByKeyInstance`]; a user operator (any `ReduceOp<T, Acc = T>`) the same way:
/// `reduce_by_key_kernels! { my_kernel: u32, f32, MyOp; }`.
#[macro_export]
macro_rules! reduce_by_key_kernels {
    ($($name:ident : $k:ty, $t:ty, $op:ty;)*) => {$(
        $crate::reduce_by_key_kernels!(@emit stringify!($name), $k, $t, $op);
    )*};
    (@emit $name:expr, $k:ty, $t:ty, $op:ty) => {
        const _: () = {
            use $crate::reduce::by_key::ReduceByKeyParams;
            type K = $k;
            type T = $t;
            // Reduce by key; see `reduce_by_key_device`.
            $crate::reduce_by_key_params!(entry #[export_name = $name] kernel =>
                ($crate::reduce::by_key::reduce_by_key_device::<
                    $k,
                    $t,
                    $op,
                    {
                        $crate::scan::policy::ACTIVE.reduce_by_key_items(
                            ::core::mem::size_of::<$k>() as u64,
                            ::core::mem::size_of::<$t>() as u64,
                        ) as usize
                    },
                >));
            #[cfg(not(target_arch = "nvptx64"))]
            impl $crate::reduce::by_key::ReduceByKeyInstance<$k, $t> for $op {
                const KERNEL: $crate::Kernel<$crate::reduce::by_key::SimReduceByKeyFn<$k, $t>> =
                    $crate::Kernel { name: $name, sim: kernel };
            }
        };
        // Registers for `reduce_by_key_min_blocks` blocks per SM (the scan policy says why).
        $crate::launch_bounds!(
            @named $name,
            $crate::scan::policy::ACTIVE.block,
            $crate::scan::policy::ACTIVE.reduce_by_key_min_blocks
        );
    };
}

/// The reductions by key of the built-in pairs, per key type of the table (compared bitwise):
/// `reduce_by_key_{op}_{key}_{type}`, sum, min and max.
macro_rules! builtin_reduce_by_key {
    ([$($k:ident)*]) => {
        $( crate::builtin_table!(pairs builtin_reduce_by_key! { @pair $k } int float); )*
    };
    (@pair $k:ident $t:ident sum $Op:path) => { builtin_reduce_by_key!(@emit $k $t sum $Op); };
    (@pair $k:ident $t:ident min $Op:path) => { builtin_reduce_by_key!(@emit $k $t min $Op); };
    (@pair $k:ident $t:ident max $Op:path) => { builtin_reduce_by_key!(@emit $k $t max $Op); };
    (@pair $k:ident $t:ident $op:ident $Op:path) => {};
    (@emit $k:ident $t:ident $op:ident $Op:path) => {
        $crate::reduce_by_key_kernels!(@emit
            concat!("reduce_by_key_", stringify!($op), "_", stringify!($k), "_", stringify!($t)),
            $k, $crate::builtin_elem!($t), $Op);
    };
}

#[cfg(feature = "builtin")]
crate::builtin_table!(keys builtin_reduce_by_key! {});
