//! Device-wide prefix scan in ONE pass over the data: one tile per block, tiles handed out by an
//! atomic counter in the order blocks start (so a tile only ever waits on tiles whose blocks are
//! already running: no deadlock whatever the scheduling order), every tile read once and written
//! once; the cross-tile prefixes are combined in a fixed order ([`fixed_order`]), so float
//! results are the same bits on every run, grid and GPU, and on the simulator.
//!
//! Also the scan by key: segments are runs of equal consecutive keys; the scan restarts at
//! every segment head. It is the same single-pass scan over (head flag, value) pairs with the
//! segmented operator `(f1, a) ⊕ (f2, b) = (f1 | f2, if f2 { b } else { a ⊕ b })`, which is
//! associative whenever ⊕ is.
//!
//! The decoupled look-back ([`lookback`]) serves the reduce by key's run counts (integers, exact
//! in any order; its short tiles outrun the fixed order's checkpoints); its float values go in a
//! fixed order of their own ([`crate::reduce::by_key`]).

pub mod fixed_order;
pub mod half;
pub mod lookback;
pub mod policy;
pub mod tile;

use crate::gpu::{self, ShflValue};
use crate::ops::{Element, ReduceOp};
use lookback::TileStatus;
use policy::ACTIVE;
use tile::{HeadBit, TileIo, Whole, prefetch_stretch, scan_tile};

/// Rows per thread of the scan's tiles ([`policy`]).
const ROWS: usize = ACTIVE.rows as usize;
/// Rows per thread of the scan by key's tiles, 8-byte values and narrower ([`policy`]).
const BY_KEY_ROWS: usize = ACTIVE.by_key_rows_for(8) as usize;
const BY_KEY_ROWS_NARROW: usize = ACTIVE.by_key_rows_for(4) as usize;

/// The block's tile id from the launch's counter; the block that draws the last ticket puts the
/// counter back to 0 for the next launch (every other ticket is drawn by then).
#[inline(always)]
pub(crate) unsafe fn next_tile(counter: *mut u32) -> u64 {
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

/// The parameters of [`ScanParams`]'s kernels, written once: the struct and every kernel entry's
/// parameter list ([`kernel_params!`](crate::kernel_params)).
#[macro_export]
#[doc(hidden)]
macro_rules! scan_params {
    ($($mode:tt)*) => {
        $crate::kernel_params! { $($mode)* ScanParams<T> {
            /// The input, `n` elements.
            input: *const T,
            /// The output (may be `input`: in place).
            output: *mut T,
            /// Elements.
            n: u64,
            /// The tile counter: 0 at launch, 0 again after.
            counter: *mut u32,
            /// One status entry per tile.
            flags: *mut u32,
            /// One aggregate per tile.
            aggregates: *mut T,
            /// One inclusive prefix per tile.
            prefixes: *mut T,
            /// Null, or what comes before the first element, as the fixed order's checkpoint
            /// `C(-1)` ([`fixed_order`]): a stretch of a longer array that starts at a group
            /// of 32 tiles, seeded with the longer scan's checkpoint before it, gets that
            /// scan's bits (the multi-GPU scan).
            seed: *const T,
            /// Null, or one slot per tile: each tile's aggregate, and no output written (the
            /// multi-GPU scan's first pass: the same bits as the scan's own aggregates).
            totals: *mut T,
            /// New for every launch (the tile statuses' epoch).
            epoch: u32,
        } }
    };
}

crate::scan_params!(struct
    /// The launch parameters of the scans ([`scan_device`], [`half::scan_half_device`]): the
    /// kernels' one parameter, by value.
);

/// The parameters of [`ScanByKeyParams`]'s kernels, written once: the struct and every kernel entry's
/// parameter list ([`kernel_params!`](crate::kernel_params)).
#[macro_export]
#[doc(hidden)]
macro_rules! scan_by_key_params {
    ($($mode:tt)*) => {
        $crate::kernel_params! { $($mode)* ScanByKeyParams<K, T> {
            /// The keys, `n` elements.
            keys: *const K,
            /// The values, `n` elements.
            values: *const T,
            /// The output.
            output: *mut T,
            /// Elements.
            n: u64,
            /// The tile counter: 0 at launch, 0 again after.
            counter: *mut u32,
            /// One status entry per tile.
            flags: *mut u32,
            /// One aggregate per tile.
            aggregates: *mut Headed<T>,
            /// One inclusive prefix per tile.
            prefixes: *mut Headed<T>,
            /// 0: inclusive, 1: exclusive.
            exclusive: u32,
            /// New for every launch.
            epoch: u32,
        } }
    };
}

crate::scan_by_key_params!(struct
    /// The launch parameters of [`scan_by_key_device`] (the kernel's one parameter, by value).
);

/// Inclusive (`EXCLUSIVE = false`) or exclusive scan of `n` elements from `input` to `output`
/// (the same address for in place) with operator `O`. One block of `ACTIVE.block` threads per
/// tile, `grid = ceil(n / ACTIVE.tile_elems(size of T))`. `counter` is 0 at launch and 0 again after;
/// `flags`/`aggregates`/`prefixes` hold one entry per tile, `epoch` is new for this launch.
/// `seed` is null, or points at the checkpoint before the first element (`C(-1)` of
/// [`fixed_order`]); `totals` is null, or room for one aggregate per tile, written instead of
/// the output (see [`ScanParams`]).
///
/// # Safety
/// Pointers valid for the sizes above; `input` and `output` naturally aligned.
#[inline(always)]
pub unsafe fn scan_device<T: Element, O: ReduceOp<T, Acc = T>, const EXCLUSIVE: bool>(
    p: ScanParams<T>,
) {
    let ScanParams {
        input,
        output,
        n,
        counter,
        flags,
        aggregates,
        prefixes,
        seed,
        totals,
        epoch,
    } = p;
    let warp_aggs = crate::static_shared!(SCAN_WARP_AGGS: [u128; 32]);
    // SAFETY: a seed pointer, when not null, is valid (the caller's contract).
    let seed = || (!seed.is_null()).then(|| unsafe { seed.read() });
    let tile_prefix = crate::static_shared!(SCAN_TILE_PREFIX: [u128; 1]);
    let tile = unsafe { next_tile(counter) };
    let aligned = (input as usize | output as usize) & 15 == 0;
    const { assert!(T::PER_VEC <= 4, "2-byte types scan through scan::half") };
    let per_vec = T::PER_VEC;
    let identity = O::identity();
    let io = TileIo {
        per_vec,
        n,
        identity,
        load: |first: u64, fast: bool| -> [T; 4] {
            if fast {
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
            let r = if fast {
                T::canonical4(r)
            } else {
                r.map(T::canonical)
            };
            if fast {
                unsafe { gpu::store_v4_b32(output.add(first as usize) as *mut u32, T::pack(r)) };
            } else {
                for (j, &x) in r.iter().enumerate() {
                    let i = first + j as u64;
                    if j < per_vec && i < n {
                        unsafe { output.add(i as usize).write(x) };
                    }
                }
            }
        },
        prefetch: |first: u64, elems: u64| prefetch_stretch(input, first, elems),
        prefetch_tiles: ACTIVE
            .prefetch_tiles(ACTIVE.tile_elems(size_of::<T>() as u64) * size_of::<T>() as u64),
    };
    let status = TileStatus::fixed_order(flags, aggregates, prefixes, epoch);
    // No value absorbs what comes before it under a plain operator.
    let ops = (O::combine, false, |_| false);
    let (warp_aggs, tile_prefix) = unsafe { (warp_aggs.cast::<T>(), tile_prefix.cast::<T>()) };
    unsafe {
        // 8-byte elements keep their row prefixes in shared memory (`scan_tile`'s `shared_rows`).
        scan_tile::<ROWS, Whole, _, _, _, _, _, _, _>(
            tile,
            aligned,
            io,
            status,
            seed,
            totals,
            ops,
            warp_aggs,
            tile_prefix,
            size_of::<T>() == 8,
        )
    };
}

/// A value with a segment-head flag or count: the accumulator of the scan by key and of the
/// reduce by key.
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C)]
pub struct Headed<T> {
    /// Scan by key: non-zero when a segment head lies in the combined range. Reduce by key:
    /// how many heads lie in it (the run index, counted on the fly).
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
/// identity at a run's first element; `exclusive` is 0 or 1: a run-time flag rather than two
/// instances, which halves this family's PTX). Launch as [`scan_device`], with tiles of
/// `ACTIVE.by_key_tile_elems(size of T)` elements.
///
/// # Safety
/// As [`scan_device`]; `keys` holds `n` elements.
#[inline(always)]
pub unsafe fn scan_by_key_device<K: Element, T: Element, O: ReduceOp<T, Acc = T>>(
    p: ScanByKeyParams<K, T>,
) {
    let ScanByKeyParams {
        keys,
        values,
        output,
        n,
        counter,
        flags,
        aggregates,
        prefixes,
        exclusive,
        epoch,
    } = p;
    let warp_aggs = crate::static_shared!(SCAN_KEY_WARP_AGGS: [u128; 32]);
    let tile_prefix = crate::static_shared!(SCAN_KEY_TILE_PREFIX: [u128; 1]);
    let tile = unsafe { next_tile(counter) };
    let per_vec = T::PER_VEC;
    let identity = Headed {
        head: 0,
        value: O::identity(),
    };
    // A thread's run of `per_vec` elements keeps the production scan's layout and its
    // look-back. Whole aligned tiles (`fast`) load the values with one 16-byte load, the keys
    // with one too when `per_vec` keys fill 16 bytes (u32 keys with 4-byte values, u64 with
    // 8-byte ones; other pairs read keys one by one), plus the key before the run (the
    // neighbour lane's, an L1 hit), and store with one 16-byte store. Element-wise reads of
    // everything (the first version: three scalar loads per element) ran at half CUB's speed
    // (CHANGELOG.md, issue 16).
    let aligned = (keys as usize | values as usize | output as usize) & 15 == 0;
    let key_vec = core::mem::size_of::<K>() * per_vec == 16;
    let head_at = |i: u64| -> u32 {
        (i == 0 || unsafe { keys.add(i as usize).read() != keys.add(i as usize - 1).read() }) as u32
    };
    // Head flags of elements first..first + per_vec of a whole tile.
    let heads_fast = |first: u64| -> [u32; 4] {
        let k: [K; 4] = if key_vec {
            K::unpack(unsafe { gpu::load_v4_b32(keys.add(first as usize) as *const u32) })
        } else {
            // Constant indices only (an indexed local array would go to local memory).
            let one = |j: usize| unsafe {
                keys.add((first + j.min(per_vec - 1) as u64) as usize)
                    .read()
            };
            [one(0), one(1), one(2), one(3)]
        };
        let prev = if first == 0 {
            k[0]
        } else {
            unsafe { keys.add(first as usize - 1).read() }
        };
        [
            (first == 0 || k[0] != prev) as u32,
            (k[1] != k[0]) as u32,
            (k[2] != k[1]) as u32,
            (k[3] != k[2]) as u32,
        ]
    };
    let io = TileIo {
        per_vec,
        n,
        identity,
        load: |first: u64, fast: bool| -> [Headed<T>; 4] {
            if fast {
                let v = T::unpack(unsafe {
                    gpu::load_v4_b32(values.add(first as usize) as *const u32)
                });
                let h = heads_fast(first);
                let one = |j: usize| {
                    if j < per_vec {
                        Headed {
                            head: h[j],
                            value: v[j],
                        }
                    } else {
                        identity
                    }
                };
                return [one(0), one(1), one(2), one(3)];
            }
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
        store: |first: u64, fast: bool, excl: [Headed<T>; 4], incl: [Headed<T>; 4]| {
            if fast {
                let r = if exclusive == 0 {
                    incl.map(|h| h.value)
                } else {
                    let h = heads_fast(first);
                    [0, 1, 2, 3].map(|j| {
                        if h[j] != 0 {
                            O::identity()
                        } else {
                            excl[j].value
                        }
                    })
                };
                let r = T::canonical4(r);
                unsafe { gpu::store_v4_b32(output.add(first as usize) as *mut u32, T::pack(r)) };
                return;
            }
            for j in 0..4 {
                let i = first + j as u64;
                if j < per_vec && i < n {
                    let r = if exclusive == 0 {
                        incl[j].value
                    } else if head_at(i) != 0 {
                        O::identity()
                    } else {
                        excl[j].value
                    };
                    unsafe { output.add(i as usize).write(r.canonical()) };
                }
            }
        },
        prefetch: |first: u64, elems: u64| {
            prefetch_stretch(keys, first, elems);
            prefetch_stretch(values, first, elems);
        },
        prefetch_tiles: ACTIVE.prefetch_tiles(
            ACTIVE.by_key_tile_elems(size_of::<T>() as u64) * size_of::<T>() as u64,
        ),
    };
    let status = TileStatus::fixed_order(flags, aggregates, prefixes, epoch);
    // The tile's rows by the value's width (policy `by_key_rows_for`); the other branch is
    // compiled away.
    macro_rules! tile {
        ($rows:expr) => {
            unsafe {
                scan_tile::<{ $rows }, HeadBit, _, _, _, _, _, _, _>(
                    tile,
                    aligned,
                    io,
                    status,
                    || None,
                    core::ptr::null_mut(),
                    // A range holding a segment head: the segmented operator returns it
                    // unchanged, whatever came before (so the fixed order need not wait for it).
                    (segmented::<T, O>, true, |h: Headed<T>| h.head != 0),
                    warp_aggs.cast::<Headed<T>>(),
                    tile_prefix.cast::<Headed<T>>(),
                    // Row prefixes in shared memory: no spill, and faster (CHANGELOG.md, issue 32).
                    true,
                )
            }
        };
    }
    if size_of::<T>() >= 8 {
        tile!(BY_KEY_ROWS)
    } else {
        tile!(BY_KEY_ROWS_NARROW)
    }
}

/// The simulator's entry point of a scan kernel.
#[cfg(not(target_arch = "nvptx64"))]
pub type SimScanFn<T> = unsafe fn(ScanParams<T>);

/// The simulator's entry point of a scan-by-key kernel.
#[cfg(not(target_arch = "nvptx64"))]
pub type SimScanByKeyFn<K, T> = unsafe fn(ScanByKeyParams<K, T>);

/// An operator whose scan kernels over `T` exist ([`scan_kernels!`](crate::scan_kernels)
/// implements it, and [`half`]'s for the 16-bit floats, whose sum scans in f32): the host
/// finds the kernels through it, by type, with no name lists.
#[cfg(not(target_arch = "nvptx64"))]
pub trait ScanInstance<T: Element>: ReduceOp<T> {
    /// The inclusive scan.
    const INCLUSIVE: crate::Kernel<SimScanFn<T>>;
    /// The exclusive scan.
    const EXCLUSIVE: crate::Kernel<SimScanFn<T>>;
}

/// An operator whose scan-by-key kernel over keys `K` and values `T` exists
/// ([`scan_by_key_kernels!`](crate::scan_by_key_kernels) implements it).
#[cfg(not(target_arch = "nvptx64"))]
pub trait ScanByKeyInstance<K: Element, T: Element>: ReduceOp<T, Acc = T> {
    /// The scan by key (inclusive or exclusive by its `exclusive` argument).
    const KERNEL: crate::Kernel<SimScanByKeyFn<K, T>>;
}

/// Export `scan_device::<T, Op, false/true>` as an inclusive and an exclusive kernel and
/// register them with [`ScanInstance`]. A user operator (any `ReduceOp<T, Acc = T>`:
/// associative, with identity) gets its kernels the same way:
/// `scan_kernels! { my_incl, my_excl: f32, MyOp; }`.
#[macro_export]
macro_rules! scan_kernels {
    ($($incl:ident, $excl:ident : $t:ty, $op:ty;)*) => {$(
        $crate::scan_kernels!(@emit stringify!($incl), stringify!($excl), $t, $op,
            $crate::scan::scan_device);
    )*};
    // `$device`: the scan's device function (the 16-bit floats' scans in f32 have their own).
    (@emit $incl:expr, $excl:expr, $t:ty, $op:ty, $($device:tt)*) => {
        const _: () = {
            use $crate::scan::ScanParams;
            type T = $t;
            // Inclusive and exclusive single-pass scans; see `scan_device`.
            $crate::scan_params!(entry #[export_name = $incl] inclusive =>
                ($($device)*::<$t, $op, false>));
            $crate::scan_params!(entry #[export_name = $excl] exclusive =>
                ($($device)*::<$t, $op, true>));
            #[cfg(not(target_arch = "nvptx64"))]
            impl $crate::scan::ScanInstance<$t> for $op {
                const INCLUSIVE: $crate::Kernel<$crate::scan::SimScanFn<$t>> =
                    $crate::Kernel { name: $incl, sim: inclusive };
                const EXCLUSIVE: $crate::Kernel<$crate::scan::SimScanFn<$t>> =
                    $crate::Kernel { name: $excl, sim: exclusive };
            }
        };
        $crate::launch_bounds!(@named $incl, $crate::scan::policy::ACTIVE.block,
            $crate::scan::scan_min_blocks(::core::mem::size_of::<$t>()));
        $crate::launch_bounds!(@named $excl, $crate::scan::policy::ACTIVE.block,
            $crate::scan::scan_min_blocks(::core::mem::size_of::<$t>()));
    };
}

/// Blocks per SM a scan kernel over `elem_bytes`-byte elements asks ptxas to fit
/// (`.minnctapersm`): two, whose tiles need ~128 registers a thread; left alone, ptxas gave the
/// fixed-order f32 inclusive sum one register too many, one block fit per SM and the scan lost
/// a fifth of its speed (CHANGELOG.md, issue 16). 8-byte elements fit with their row prefixes
/// in shared memory ([`tile::scan_tile`]'s `shared_rows`; one block per SM without).
pub const fn scan_min_blocks(_elem_bytes: usize) -> u32 {
    2
}

/// Export `scan_by_key_device::<K, T, Op>` as a kernel and register it with
/// [`ScanByKeyInstance`]: `scan_by_key_kernels! { my_kernel: u32, f32, MyOp; }`.
#[macro_export]
macro_rules! scan_by_key_kernels {
    ($($name:ident : $k:ty, $t:ty, $op:ty;)*) => {$(
        $crate::scan_by_key_kernels!(@emit stringify!($name), $k, $t, $op);
    )*};
    (@emit $name:expr, $k:ty, $t:ty, $op:ty) => {
        const _: () = {
            use $crate::scan::ScanByKeyParams;
            type K = $k;
            type T = $t;
            // Scan by key; see `scan_by_key_device`.
            $crate::scan_by_key_params!(entry #[export_name = $name] kernel =>
                ($crate::scan::scan_by_key_device::<$k, $t, $op>));
            #[cfg(not(target_arch = "nvptx64"))]
            impl $crate::scan::ScanByKeyInstance<$k, $t> for $op {
                const KERNEL: $crate::Kernel<$crate::scan::SimScanByKeyFn<$k, $t>> =
                    $crate::Kernel { name: $name, sim: kernel };
            }
        };
        // As the scans: left alone, ptxas fit one block per SM of the u32 + f32 sum, far slower
        // (CHANGELOG.md, issue 32).
        $crate::launch_bounds!(@named $name, $crate::scan::policy::ACTIVE.block,
            $crate::scan::scan_min_blocks(::core::mem::size_of::<$t>()));
    };
}

/// A built-in pair's scans, `scan_{inclusive,exclusive}_{op}_{type}`: sum, min and max (the
/// 16-bit floats' sum in f32, through their own device function).
macro_rules! builtin_scan {
    (f16 $op:ident $Op:path) => { builtin_scan!(@half f16 $op $Op); };
    (bf16 $op:ident $Op:path) => { builtin_scan!(@half bf16 $op $Op); };
    (@half $t:ident $op:ident $Op:path) => {
        builtin_scan!(@keep $t $op $Op, $crate::scan::half::scan_half_device);
    };
    ($t:ident $op:ident $Op:path) => { builtin_scan!(@keep $t $op $Op, $crate::scan::scan_device); };
    (@keep $t:ident sum $($rest:tt)*) => { builtin_scan!(@emit $t sum $($rest)*); };
    (@keep $t:ident sum_f32 $($rest:tt)*) => { builtin_scan!(@emit $t sum_f32 $($rest)*); };
    (@keep $t:ident min $($rest:tt)*) => { builtin_scan!(@emit $t min $($rest)*); };
    (@keep $t:ident max $($rest:tt)*) => { builtin_scan!(@emit $t max $($rest)*); };
    (@keep $($rest:tt)*) => {};
    (@emit $t:ident $op:ident $Op:path, $($device:tt)*) => {
        $crate::scan_kernels!(@emit
            concat!("scan_inclusive_", stringify!($op), "_", stringify!($t)),
            concat!("scan_exclusive_", stringify!($op), "_", stringify!($t)),
            $crate::builtin_elem!($t), $Op, $($device)*);
    };
}

/// The by-key scans of the built-in pairs, per key type of the table:
/// `scan_by_key_{op}_{key}_{type}`, sum, min and max.
macro_rules! builtin_scan_by_key {
    ([$($k:ident)*]) => {
        $( crate::builtin_table!(pairs builtin_scan_by_key! { @pair $k } int float); )*
    };
    (@pair $k:ident $t:ident sum $Op:path) => { builtin_scan_by_key!(@emit $k $t sum $Op); };
    (@pair $k:ident $t:ident min $Op:path) => { builtin_scan_by_key!(@emit $k $t min $Op); };
    (@pair $k:ident $t:ident max $Op:path) => { builtin_scan_by_key!(@emit $k $t max $Op); };
    (@pair $k:ident $t:ident $op:ident $Op:path) => {};
    (@emit $k:ident $t:ident $op:ident $Op:path) => {
        $crate::scan_by_key_kernels!(@emit
            concat!("scan_by_key_", stringify!($op), "_", stringify!($k), "_", stringify!($t)),
            $k, $crate::builtin_elem!($t), $Op);
    };
}

// The library's built-in scans (the `builtin` feature; a user's kernel crate turns it off so
// its PTX holds its own kernels only).
#[cfg(feature = "builtin")]
crate::builtin_table!(pairs builtin_scan! {} int float half);

#[cfg(feature = "builtin")]
crate::builtin_table!(keys builtin_scan_by_key! {});
