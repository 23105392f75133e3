//! Device-wide prefix scan in ONE pass over the data: the decoupled look-back scan
//! ([`lookback`]), one tile per block, tiles handed out by an atomic counter in the order blocks
//! start (so a tile only ever waits on tiles whose blocks are already running: no deadlock
//! whatever the scheduling order), every tile read once and written once.
//!
//! Also the scan by key: segments are runs of equal consecutive keys; the scan restarts at
//! every segment head. It is the same single-pass scan over (head flag, value) pairs with the
//! segmented operator `(f1, a) ⊕ (f2, b) = (f1 | f2, if f2 { b } else { a ⊕ b })`, which is
//! associative whenever ⊕ is.
//!
//! Float results are not bitwise deterministic across runs: where a tile's look-back stops
//! (at an aggregate or an inclusive prefix) depends on timing, and so does the association
//! order. Integer results are exact (sums wrap).

pub mod lookback;
pub mod tile;

use crate::gpu::{self, ShflValue};
use crate::ops::{Element, Max, Min, ReduceOp, Sum};
use lookback::TileStatus;
use tile::{Hooks, NO_HOOKS, TileIo, scan_tile};

/// The block's tile id from the launch's counter; the block that draws the last ticket puts the
/// counter back to 0 for the next launch (every other ticket is drawn by then).
#[inline(always)]
unsafe fn next_tile(counter: *mut u32) -> u64 {
    let slot = crate::static_shared!(SCAN_TILE_ID: [u32; 1]);
    if gpu::thread_idx_x() == 0 {
        let t = unsafe { gpu::atomic_add_u32(counter, 1) };
        if t == gpu::grid_dim_x() - 1 {
            unsafe { gpu::atomic_exch_u32(counter, 0) };
        }
        unsafe { slot.write(0, t) };
    }
    gpu::sync_threads();
    unsafe { slot.read(0) as u64 }
}

/// Most tiles a block keeps in flight ahead of the one it scans (see [`scan_device`]).
pub const MAX_STAGES: usize = 4;

/// Inclusive (`EXCLUSIVE = false`) or exclusive scan of `n` elements from `input` to `output`
/// (the same address for in place) with operator `O`, in one pass.
///
/// The grid is persistent: any number of blocks of `SCAN_BLOCK` threads (the host launches as
/// many as fit on the device at once, at most one per tile), each scanning tile after tile.
/// Tile ids come from `counter` in the order blocks ask for them, so a tile only ever waits on
/// tiles that running blocks hold and have already started: the smallest unfinished tile
/// never waits, whatever the scheduling, and there is no deadlock. A block keeps `stages` tile
/// ids ahead, where `stages` = dynamic shared memory / tile bytes (at most [`MAX_STAGES`]):
/// for each it has already issued `cp.async` copies of the tile into its own stage of shared
/// memory, so the memory system keeps working while the block scans, waits for its look-back
/// and stores. With no dynamic shared memory (`stages` = 0) it loads each tile when it gets to
/// it. Each thread copies and reads back only its own 16-byte slots, so the stages need no
/// barrier of their own; tiles that are partial or misaligned are loaded directly.
///
/// `counter` is 0 at launch and 0 again after (the block that draws the last of the
/// `tiles + grid * max(stages, 1)` tickets resets it); `flags`/`aggregates`/`prefixes` hold
/// one entry per tile; `epoch` is new for this launch.
///
/// # Safety
/// Pointers valid for the sizes above; `input` and `output` naturally aligned.
#[inline(always)]
#[allow(clippy::too_many_arguments)] // the kernel's launch parameters, passed straight through
pub unsafe fn scan_device<T: Element, O: ReduceOp<T, Acc = T>, const EXCLUSIVE: bool>(
    input: *const T,
    output: *mut T,
    n: u64,
    counter: *mut u32,
    flags: *mut u32,
    aggregates: *mut T,
    prefixes: *mut T,
    epoch: u32,
) {
    let warp_aggs = crate::static_shared!(SCAN_WARP_AGGS: [u128; 32]);
    // Slots 0..MAX_STAGES: the first tile ids; slot MAX_STAGES: the next id, each round.
    let ids_slot = crate::static_shared!(SCAN_TILE_IDS: [u32; MAX_STAGES + 1]);
    let smem = gpu::dynamic_shared::<[u32; 4]>();

    let tile_elems = crate::launch::scan_tile_elems(core::mem::size_of::<T>() as u64);
    let tile_vecs = (tile_elems / T::PER_VEC as u64) as usize;
    let tiles = crate::launch::scan_tiles(n, core::mem::size_of::<T>() as u64) as u32;
    let stages = (smem.len() / tile_vecs).min(MAX_STAGES);
    let ahead = stages.max(1);
    let lazy = stages == 0;
    let tickets = tiles + gpu::grid_dim_x() * ahead as u32;
    let tid = gpu::thread_idx_x();
    let aligned = (input as usize | output as usize) & 15 == 0;
    // The tile's 16-byte slot `k` of this thread, as in `scan_tile`'s layout.
    let rows = crate::launch::SCAN_ROWS as usize;
    let slot = |k: usize| (gpu::warp_id() as usize * rows + k) * 32 + gpu::lane_id() as usize;
    // Tiles that go through shared memory: whole, aligned, and there is a stage for them.
    let staged = |t: u32| stages > 0 && aligned && t < tiles && (t as u64 + 1) * tile_elems <= n;
    let draw = || {
        let t = unsafe { gpu::atomic_add_u32(counter, 1) };
        if t == tickets - 1 {
            unsafe { gpu::atomic_exch_u32(counter, 0) };
        }
        t
    };
    // Start the copies of tile `t` into stage `s`, as one commit group (empty when `t` is not
    // staged, so every thread commits exactly one group per tile id).
    let fetch = |t: u32, s: usize| {
        if staged(t) {
            for k in 0..rows {
                let first = t as u64 * tile_elems + (slot(k) * T::PER_VEC) as u64;
                unsafe {
                    gpu::cp_async_16(
                        smem,
                        s * tile_vecs + slot(k),
                        input.add(first as usize) as *const u32,
                    )
                };
            }
        }
        gpu::cp_async_commit();
    };

    // Prologue: `ahead` tile ids (independent atomics, in flight together), their copies.
    if tid == 0 {
        for s in 0..MAX_STAGES {
            if s < ahead {
                unsafe { ids_slot.write(s, draw()) };
            }
        }
    }
    gpu::sync_threads();
    // Tile ids ahead of this block, nearest first; constant indices keep them in registers.
    let mut ids = [u32::MAX; MAX_STAGES];
    for (s, id) in ids.iter_mut().enumerate() {
        if s < ahead {
            *id = unsafe { ids_slot.read(s) };
            fetch(*id, s);
        }
    }

    let per_vec = T::PER_VEC;
    let identity = O::identity();
    let status = TileStatus {
        flags,
        aggregates,
        prefixes,
        epoch,
    };
    let mut stage = 0usize;
    loop {
        let tile = ids[0];
        if tile >= tiles {
            break;
        }
        // With stages, ask for the next tile id now (its copies start at the first barrier).
        // Without, only once this tile's prefix is out (`after_lookback`): a tile id drawn
        // early sits unscanned behind the current tile while later tiles look back at it, a
        // convoy that cost 2-3x in throughput (H100, 2026-11-22).
        let ticket = if tid == 0 && !lazy { draw() } else { 0 };
        // This tile's group is the oldest of the `ahead` in flight.
        match ahead {
            1 => gpu::cp_async_wait_group::<0>(),
            2 => gpu::cp_async_wait_group::<1>(),
            3 => gpu::cp_async_wait_group::<2>(),
            _ => gpu::cp_async_wait_group::<3>(),
        }
        let from_smem = staged(tile);
        let tile_start = tile as u64 * tile_elems;
        let io = TileIo {
            per_vec,
            n,
            identity,
            load: |first: u64, fast: bool| -> [T; 4] {
                if fast && from_smem {
                    let i = stage * tile_vecs + ((first - tile_start) / per_vec as u64) as usize;
                    T::unpack(unsafe { gpu::load_shared_v4(smem, i) })
                } else if fast {
                    T::unpack(unsafe { gpu::load_v4_b32(input.add(first as usize) as *const u32) })
                } else {
                    // Constant indices only (an indexed local array would go to local memory).
                    let one = |j: usize| {
                        let i = first + j as u64;
                        if j < per_vec && i < n {
                            unsafe { input.add(i as usize).read() }
                        } else {
                            identity
                        }
                    };
                    [one(0), one(1), one(2), one(3)]
                }
            },
            store: |first: u64, fast: bool, excl: [T; 4], incl: [T; 4]| {
                let r = if EXCLUSIVE { excl } else { incl };
                if fast {
                    unsafe {
                        gpu::store_v4_b32(output.add(first as usize) as *mut u32, T::pack(r))
                    };
                } else {
                    for (j, &x) in r.iter().enumerate() {
                        let i = first + j as u64;
                        if j < per_vec && i < n {
                            unsafe { output.add(i as usize).write(x) };
                        }
                    }
                }
            },
        };
        let hooks = Hooks {
            after_lookback: || {
                if lazy && tid == 0 {
                    unsafe { ids_slot.write(MAX_STAGES, draw()) };
                }
            },
            before_barrier: || {
                if tid == 0 && !lazy {
                    unsafe { ids_slot.write(MAX_STAGES, ticket) };
                }
            },
            // Every thread has read its slots of this stage (the values fed the row scans), so
            // it may refill them with the next tile.
            after_barrier: || {
                if lazy {
                    return;
                }
                let next = unsafe { ids_slot.read(MAX_STAGES) };
                fetch(next, stage);
                for s in 0..MAX_STAGES - 1 {
                    if s + 1 < ahead {
                        ids[s] = ids[s + 1];
                    }
                }
                for (s, id) in ids.iter_mut().enumerate() {
                    if s == ahead - 1 {
                        *id = next;
                    }
                }
            },
        };
        unsafe {
            scan_tile(
                tile as u64,
                aligned,
                io,
                status,
                O::combine,
                warp_aggs.cast::<T>(),
                hooks,
            )
        };
        stage = if stage + 1 == ahead { 0 } else { stage + 1 };
        if lazy {
            // The id drawn after the look-back; the look-back's barriers keep this write of
            // the slot behind every thread's read of the previous id.
            gpu::sync_threads();
            ids[0] = unsafe { ids_slot.read(MAX_STAGES) };
        }
    }
}

/// A value with a segment-head flag: the accumulator of the scan by key.
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C)]
pub struct Headed<T> {
    /// 1 when a segment head lies in the combined range.
    pub head: u32,
    pub value: T,
}

impl<T: ShflValue> ShflValue for Headed<T> {
    const WORDS: usize = 1 + T::WORDS;
    #[inline(always)]
    fn to_words(self) -> [u32; 4] {
        let v = self.value.to_words();
        [self.head, v[0], v[1], v[2]]
    }
    #[inline(always)]
    fn from_words(w: [u32; 4]) -> Self {
        Headed {
            head: w[0],
            value: T::from_words([w[1], w[2], w[3], 0]),
        }
    }
}

/// The segmented operator over [`Headed`] values.
#[inline(always)]
pub fn segmented<T: Element, O: ReduceOp<T, Acc = T>>(a: Headed<T>, b: Headed<T>) -> Headed<T> {
    Headed {
        head: a.head | b.head,
        value: if b.head != 0 {
            b.value
        } else {
            O::combine(a.value, b.value)
        },
    }
}

/// Scan by key: `output[i]` is the scan of `values` restricted to the run of equal consecutive
/// `keys` that contains `i` (inclusive: up to and including `i`; exclusive: up to `i - 1`, the
/// identity at a run's first element). Launch as [`scan_device`], with tiles of `T`'s size.
///
/// # Safety
/// As [`scan_device`]; `keys` holds `n` elements.
#[inline(always)]
#[allow(clippy::too_many_arguments)] // the kernel's launch parameters, passed straight through
pub unsafe fn scan_by_key_device<
    K: Element,
    T: Element,
    O: ReduceOp<T, Acc = T>,
    const EXCLUSIVE: bool,
>(
    keys: *const K,
    values: *const T,
    output: *mut T,
    n: u64,
    counter: *mut u32,
    flags: *mut u32,
    aggregates: *mut Headed<T>,
    prefixes: *mut Headed<T>,
    epoch: u32,
) {
    let warp_aggs = crate::static_shared!(SCAN_KEY_WARP_AGGS: [u128; 32]);
    let tile = unsafe { next_tile(counter) };
    let per_vec = T::PER_VEC;
    let identity = Headed {
        head: 0,
        value: O::identity(),
    };
    // Scalar loads: keys and values may differ in size and alignment; the per-thread run of
    // `per_vec` elements keeps the production scan's layout and its look-back.
    let head_at = |i: u64| -> u32 {
        (i == 0 || unsafe { keys.add(i as usize).read() != keys.add(i as usize - 1).read() }) as u32
    };
    let io = TileIo {
        per_vec,
        n,
        identity,
        load: |first: u64, _fast: bool| -> [Headed<T>; 4] {
            let one = |j: usize| {
                let i = first + j as u64;
                if j < per_vec && i < n {
                    Headed {
                        head: head_at(i),
                        value: unsafe { values.add(i as usize).read() },
                    }
                } else {
                    identity
                }
            };
            [one(0), one(1), one(2), one(3)]
        },
        store: |first: u64, _fast: bool, excl: [Headed<T>; 4], incl: [Headed<T>; 4]| {
            for j in 0..4 {
                let i = first + j as u64;
                if j < per_vec && i < n {
                    let r = if !EXCLUSIVE {
                        incl[j].value
                    } else if head_at(i) != 0 {
                        O::identity()
                    } else {
                        excl[j].value
                    };
                    unsafe { output.add(i as usize).write(r) };
                }
            }
        },
    };
    let status = TileStatus {
        flags,
        aggregates,
        prefixes,
        epoch,
    };
    unsafe {
        scan_tile(
            tile,
            false,
            io,
            status,
            segmented::<T, O>,
            warp_aggs.cast::<Headed<T>>(),
            NO_HOOKS,
        )
    };
}

/// Export `scan_device::<T, Op, false/true>` as an inclusive and an exclusive kernel. A user
/// operator (any `ReduceOp<T, Acc = T>`: associative, with identity) gets its kernels the same
/// way: `scan_kernels! { my_incl, my_excl: f32, MyOp; }`.
#[macro_export]
macro_rules! scan_kernels {
    ($($incl:ident, $excl:ident : $t:ty, $op:ty;)*) => {$(
        $crate::kernel! {
            /// Inclusive single-pass scan; see [`scan_device`]($crate::scan::scan_device).
            pub unsafe fn $incl(
                input: *const $t, output: *mut $t, n: u64, counter: *mut u32, flags: *mut u32,
                aggregates: *mut $t, prefixes: *mut $t, epoch: u32,
            ) {
                unsafe { $crate::scan::scan_device::<$t, $op, false>(input, output, n, counter, flags, aggregates, prefixes, epoch) }
            }
        }
        $crate::kernel! {
            /// Exclusive single-pass scan; see [`scan_device`]($crate::scan::scan_device).
            pub unsafe fn $excl(
                input: *const $t, output: *mut $t, n: u64, counter: *mut u32, flags: *mut u32,
                aggregates: *mut $t, prefixes: *mut $t, epoch: u32,
            ) {
                unsafe { $crate::scan::scan_device::<$t, $op, true>(input, output, n, counter, flags, aggregates, prefixes, epoch) }
            }
        }
    )*};
}

/// Export `scan_by_key_device::<K, T, Op, false/true>` as an inclusive and an exclusive kernel.
#[macro_export]
macro_rules! scan_by_key_kernels {
    ($($incl:ident, $excl:ident : $k:ty, $t:ty, $op:ty;)*) => {$(
        $crate::kernel! {
            /// Inclusive scan by key; see [`scan_by_key_device`]($crate::scan::scan_by_key_device).
            pub unsafe fn $incl(
                keys: *const $k, values: *const $t, output: *mut $t, n: u64, counter: *mut u32,
                flags: *mut u32, aggregates: *mut $crate::scan::Headed<$t>,
                prefixes: *mut $crate::scan::Headed<$t>, epoch: u32,
            ) {
                unsafe { $crate::scan::scan_by_key_device::<$k, $t, $op, false>(keys, values, output, n, counter, flags, aggregates, prefixes, epoch) }
            }
        }
        $crate::kernel! {
            /// Exclusive scan by key; see [`scan_by_key_device`]($crate::scan::scan_by_key_device).
            pub unsafe fn $excl(
                keys: *const $k, values: *const $t, output: *mut $t, n: u64, counter: *mut u32,
                flags: *mut u32, aggregates: *mut $crate::scan::Headed<$t>,
                prefixes: *mut $crate::scan::Headed<$t>, epoch: u32,
            ) {
                unsafe { $crate::scan::scan_by_key_device::<$k, $t, $op, true>(keys, values, output, n, counter, flags, aggregates, prefixes, epoch) }
            }
        }
    )*};
}

scan_kernels! {
    scan_inclusive_sum_i32, scan_exclusive_sum_i32: i32, Sum;
    scan_inclusive_sum_u32, scan_exclusive_sum_u32: u32, Sum;
    scan_inclusive_sum_i64, scan_exclusive_sum_i64: i64, Sum;
    scan_inclusive_sum_u64, scan_exclusive_sum_u64: u64, Sum;
    scan_inclusive_sum_f32, scan_exclusive_sum_f32: f32, Sum;
    scan_inclusive_sum_f64, scan_exclusive_sum_f64: f64, Sum;
    scan_inclusive_min_i32, scan_exclusive_min_i32: i32, Min;
    scan_inclusive_min_u32, scan_exclusive_min_u32: u32, Min;
    scan_inclusive_min_i64, scan_exclusive_min_i64: i64, Min;
    scan_inclusive_min_u64, scan_exclusive_min_u64: u64, Min;
    scan_inclusive_min_f32, scan_exclusive_min_f32: f32, Min;
    scan_inclusive_min_f64, scan_exclusive_min_f64: f64, Min;
    scan_inclusive_max_i32, scan_exclusive_max_i32: i32, Max;
    scan_inclusive_max_u32, scan_exclusive_max_u32: u32, Max;
    scan_inclusive_max_i64, scan_exclusive_max_i64: i64, Max;
    scan_inclusive_max_u64, scan_exclusive_max_u64: u64, Max;
    scan_inclusive_max_f32, scan_exclusive_max_f32: f32, Max;
    scan_inclusive_max_f64, scan_exclusive_max_f64: f64, Max;
}

scan_by_key_kernels! {
    scan_by_key_inclusive_sum_u32_i32, scan_by_key_exclusive_sum_u32_i32: u32, i32, Sum;
    scan_by_key_inclusive_sum_u32_u32, scan_by_key_exclusive_sum_u32_u32: u32, u32, Sum;
    scan_by_key_inclusive_sum_u32_i64, scan_by_key_exclusive_sum_u32_i64: u32, i64, Sum;
    scan_by_key_inclusive_sum_u32_u64, scan_by_key_exclusive_sum_u32_u64: u32, u64, Sum;
    scan_by_key_inclusive_sum_u32_f32, scan_by_key_exclusive_sum_u32_f32: u32, f32, Sum;
    scan_by_key_inclusive_sum_u32_f64, scan_by_key_exclusive_sum_u32_f64: u32, f64, Sum;
    scan_by_key_inclusive_min_u32_i32, scan_by_key_exclusive_min_u32_i32: u32, i32, Min;
    scan_by_key_inclusive_min_u32_u32, scan_by_key_exclusive_min_u32_u32: u32, u32, Min;
    scan_by_key_inclusive_min_u32_i64, scan_by_key_exclusive_min_u32_i64: u32, i64, Min;
    scan_by_key_inclusive_min_u32_u64, scan_by_key_exclusive_min_u32_u64: u32, u64, Min;
    scan_by_key_inclusive_min_u32_f32, scan_by_key_exclusive_min_u32_f32: u32, f32, Min;
    scan_by_key_inclusive_min_u32_f64, scan_by_key_exclusive_min_u32_f64: u32, f64, Min;
    scan_by_key_inclusive_max_u32_i32, scan_by_key_exclusive_max_u32_i32: u32, i32, Max;
    scan_by_key_inclusive_max_u32_u32, scan_by_key_exclusive_max_u32_u32: u32, u32, Max;
    scan_by_key_inclusive_max_u32_i64, scan_by_key_exclusive_max_u32_i64: u32, i64, Max;
    scan_by_key_inclusive_max_u32_u64, scan_by_key_exclusive_max_u32_u64: u32, u64, Max;
    scan_by_key_inclusive_max_u32_f32, scan_by_key_exclusive_max_u32_f32: u32, f32, Max;
    scan_by_key_inclusive_max_u32_f64, scan_by_key_exclusive_max_u32_f64: u32, f64, Max;
    scan_by_key_inclusive_sum_u64_i32, scan_by_key_exclusive_sum_u64_i32: u64, i32, Sum;
    scan_by_key_inclusive_sum_u64_u32, scan_by_key_exclusive_sum_u64_u32: u64, u32, Sum;
    scan_by_key_inclusive_sum_u64_i64, scan_by_key_exclusive_sum_u64_i64: u64, i64, Sum;
    scan_by_key_inclusive_sum_u64_u64, scan_by_key_exclusive_sum_u64_u64: u64, u64, Sum;
    scan_by_key_inclusive_sum_u64_f32, scan_by_key_exclusive_sum_u64_f32: u64, f32, Sum;
    scan_by_key_inclusive_sum_u64_f64, scan_by_key_exclusive_sum_u64_f64: u64, f64, Sum;
    scan_by_key_inclusive_min_u64_i32, scan_by_key_exclusive_min_u64_i32: u64, i32, Min;
    scan_by_key_inclusive_min_u64_u32, scan_by_key_exclusive_min_u64_u32: u64, u32, Min;
    scan_by_key_inclusive_min_u64_i64, scan_by_key_exclusive_min_u64_i64: u64, i64, Min;
    scan_by_key_inclusive_min_u64_u64, scan_by_key_exclusive_min_u64_u64: u64, u64, Min;
    scan_by_key_inclusive_min_u64_f32, scan_by_key_exclusive_min_u64_f32: u64, f32, Min;
    scan_by_key_inclusive_min_u64_f64, scan_by_key_exclusive_min_u64_f64: u64, f64, Min;
    scan_by_key_inclusive_max_u64_i32, scan_by_key_exclusive_max_u64_i32: u64, i32, Max;
    scan_by_key_inclusive_max_u64_u32, scan_by_key_exclusive_max_u64_u32: u64, u32, Max;
    scan_by_key_inclusive_max_u64_i64, scan_by_key_exclusive_max_u64_i64: u64, i64, Max;
    scan_by_key_inclusive_max_u64_u64, scan_by_key_exclusive_max_u64_u64: u64, u64, Max;
    scan_by_key_inclusive_max_u64_f32, scan_by_key_exclusive_max_u64_f32: u64, f32, Max;
    scan_by_key_inclusive_max_u64_f64, scan_by_key_exclusive_max_u64_f64: u64, f64, Max;
}

/// Names of the scan kernels, for the host's kernel registry.
pub const KERNEL_NAMES: &[&str] = &[
    "scan_inclusive_sum_i32",
    "scan_exclusive_sum_i32",
    "scan_inclusive_sum_u32",
    "scan_exclusive_sum_u32",
    "scan_inclusive_sum_i64",
    "scan_exclusive_sum_i64",
    "scan_inclusive_sum_u64",
    "scan_exclusive_sum_u64",
    "scan_inclusive_sum_f32",
    "scan_exclusive_sum_f32",
    "scan_inclusive_sum_f64",
    "scan_exclusive_sum_f64",
    "scan_inclusive_min_i32",
    "scan_exclusive_min_i32",
    "scan_inclusive_min_u32",
    "scan_exclusive_min_u32",
    "scan_inclusive_min_i64",
    "scan_exclusive_min_i64",
    "scan_inclusive_min_u64",
    "scan_exclusive_min_u64",
    "scan_inclusive_min_f32",
    "scan_exclusive_min_f32",
    "scan_inclusive_min_f64",
    "scan_exclusive_min_f64",
    "scan_inclusive_max_i32",
    "scan_exclusive_max_i32",
    "scan_inclusive_max_u32",
    "scan_exclusive_max_u32",
    "scan_inclusive_max_i64",
    "scan_exclusive_max_i64",
    "scan_inclusive_max_u64",
    "scan_exclusive_max_u64",
    "scan_inclusive_max_f32",
    "scan_exclusive_max_f32",
    "scan_inclusive_max_f64",
    "scan_exclusive_max_f64",
    "scan_by_key_inclusive_sum_u32_i32",
    "scan_by_key_exclusive_sum_u32_i32",
    "scan_by_key_inclusive_sum_u32_u32",
    "scan_by_key_exclusive_sum_u32_u32",
    "scan_by_key_inclusive_sum_u32_i64",
    "scan_by_key_exclusive_sum_u32_i64",
    "scan_by_key_inclusive_sum_u32_u64",
    "scan_by_key_exclusive_sum_u32_u64",
    "scan_by_key_inclusive_sum_u32_f32",
    "scan_by_key_exclusive_sum_u32_f32",
    "scan_by_key_inclusive_sum_u32_f64",
    "scan_by_key_exclusive_sum_u32_f64",
    "scan_by_key_inclusive_min_u32_i32",
    "scan_by_key_exclusive_min_u32_i32",
    "scan_by_key_inclusive_min_u32_u32",
    "scan_by_key_exclusive_min_u32_u32",
    "scan_by_key_inclusive_min_u32_i64",
    "scan_by_key_exclusive_min_u32_i64",
    "scan_by_key_inclusive_min_u32_u64",
    "scan_by_key_exclusive_min_u32_u64",
    "scan_by_key_inclusive_min_u32_f32",
    "scan_by_key_exclusive_min_u32_f32",
    "scan_by_key_inclusive_min_u32_f64",
    "scan_by_key_exclusive_min_u32_f64",
    "scan_by_key_inclusive_max_u32_i32",
    "scan_by_key_exclusive_max_u32_i32",
    "scan_by_key_inclusive_max_u32_u32",
    "scan_by_key_exclusive_max_u32_u32",
    "scan_by_key_inclusive_max_u32_i64",
    "scan_by_key_exclusive_max_u32_i64",
    "scan_by_key_inclusive_max_u32_u64",
    "scan_by_key_exclusive_max_u32_u64",
    "scan_by_key_inclusive_max_u32_f32",
    "scan_by_key_exclusive_max_u32_f32",
    "scan_by_key_inclusive_max_u32_f64",
    "scan_by_key_exclusive_max_u32_f64",
    "scan_by_key_inclusive_sum_u64_i32",
    "scan_by_key_exclusive_sum_u64_i32",
    "scan_by_key_inclusive_sum_u64_u32",
    "scan_by_key_exclusive_sum_u64_u32",
    "scan_by_key_inclusive_sum_u64_i64",
    "scan_by_key_exclusive_sum_u64_i64",
    "scan_by_key_inclusive_sum_u64_u64",
    "scan_by_key_exclusive_sum_u64_u64",
    "scan_by_key_inclusive_sum_u64_f32",
    "scan_by_key_exclusive_sum_u64_f32",
    "scan_by_key_inclusive_sum_u64_f64",
    "scan_by_key_exclusive_sum_u64_f64",
    "scan_by_key_inclusive_min_u64_i32",
    "scan_by_key_exclusive_min_u64_i32",
    "scan_by_key_inclusive_min_u64_u32",
    "scan_by_key_exclusive_min_u64_u32",
    "scan_by_key_inclusive_min_u64_i64",
    "scan_by_key_exclusive_min_u64_i64",
    "scan_by_key_inclusive_min_u64_u64",
    "scan_by_key_exclusive_min_u64_u64",
    "scan_by_key_inclusive_min_u64_f32",
    "scan_by_key_exclusive_min_u64_f32",
    "scan_by_key_inclusive_min_u64_f64",
    "scan_by_key_exclusive_min_u64_f64",
    "scan_by_key_inclusive_max_u64_i32",
    "scan_by_key_exclusive_max_u64_i32",
    "scan_by_key_inclusive_max_u64_u32",
    "scan_by_key_exclusive_max_u64_u32",
    "scan_by_key_inclusive_max_u64_i64",
    "scan_by_key_exclusive_max_u64_i64",
    "scan_by_key_inclusive_max_u64_u64",
    "scan_by_key_exclusive_max_u64_u64",
    "scan_by_key_inclusive_max_u64_f32",
    "scan_by_key_exclusive_max_u64_f32",
    "scan_by_key_inclusive_max_u64_f64",
    "scan_by_key_exclusive_max_u64_f64",
];
