//! Reduce by key (CUB's `DeviceReduce::ReduceByKey`) in ONE pass: runs of equal consecutive
//! keys become one unique key and one aggregate each, plus the number of runs.
//!
//! It is the scan by key's single-pass decoupled look-back ([`crate::scan::tile`],
//! [`crate::scan::lookback`]) over (head count, value) pairs with the operator
//! `(c1, a) ⊕ (c2, b) = (c1 + c2, if c2 > 0 { b } else { a ⊕ b })` (associative whenever ⊕
//! is): at element `i` the inclusive count is `i`'s run index + 1, so every run head writes its
//! key to `unique[run]`, and the exclusive value at a head is the finished aggregate of the run
//! before it, which the head writes to `aggregates[run - 1]` (the last element writes the last
//! run's aggregate and the run count). No compaction pass, no second launch.
//!
//! Integer aggregates are exact (sums wrap). A float run that spans three or more tiles may
//! differ in the last bits from launch to launch: as in the scan, where a tile's look-back
//! stops depends on timing, and so does the association of the run's tile aggregates.

use crate::gpu::{self, FULL_MASK};
use crate::ops::{Element, ReduceOp};
#[cfg(feature = "builtin")]
use crate::ops::{Max, Min, Sum};
use crate::scan::lookback::TileStatus;
use crate::scan::policy::ACTIVE;
use crate::scan::tile::{TileIo, scan_tile};
use crate::scan::{Headed, next_tile};

/// Rows per thread of the reduce by key's tiles: the scan by key's shape
/// (`ACTIVE.reduce_by_key_tile_elems(size of T)` elements a tile).
const ROWS: usize = ACTIVE.reduce_by_key_rows as usize;

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

/// Reduce by key of the `n` (< 2^32) `keys`/`values`: run `r` (the `r`-th maximal run of equal
/// consecutive keys) gets `unique[r]` = its key and `aggregates[r]` = the reduction of its
/// values with `O`, for `r < capacity` (runs past it are counted, not written);
/// `num_runs[0]` = the number of runs (0 writes nothing when `n == 0`: the host does not
/// launch). `delay_ns`: the look-back's first wait
/// ([`ScanPolicy::reduce_by_key_delay_ns`](crate::scan::policy::ScanPolicy::reduce_by_key_delay_ns)).
/// Launch as [`crate::scan::scan_by_key_device`]: `ACTIVE.block` threads a block,
/// `ceil(n / ACTIVE.reduce_by_key_tile_elems(size of T))` blocks, counter 0 at launch, fresh epoch.
///
/// # Safety
/// Pointers valid for the sizes above.
#[inline(always)]
#[allow(clippy::too_many_arguments)] // the kernel's launch parameters, passed straight through
pub unsafe fn reduce_by_key_device<K: Element, T: Element, O: ReduceOp<T, Acc = T>>(
    keys: *const K,
    values: *const T,
    unique: *mut K,
    aggregates_out: *mut T,
    capacity: u64,
    num_runs: *mut u64,
    n: u64,
    counter: *mut u32,
    flags: *mut u32,
    aggregates: *mut Headed<T>,
    prefixes: *mut Headed<T>,
    epoch: u32,
    delay_ns: u32,
) {
    let warp_aggs = crate::static_shared!(RBK_WARP_AGGS: [u128; 32]);
    let tile_prefix = crate::static_shared!(RBK_TILE_PREFIX: [u128; 1]);
    let tile = unsafe { next_tile(counter) };
    let per_vec = T::PER_VEC;
    let lane = gpu::lane_id();
    // 16-byte loads of keys and values together need a key per value slot of the vector.
    let vector = core::mem::size_of::<K>() == core::mem::size_of::<T>()
        && (keys as usize | values as usize) & 15 == 0;
    let identity = Headed {
        head: 0,
        value: O::identity(),
    };
    let key = |i: u64| unsafe { keys.add(i as usize).read() };
    let io = TileIo {
        per_vec,
        n,
        identity,
        load: |first: u64, fast: bool| -> [Headed<T>; 4] {
            if fast {
                let k =
                    K::unpack(unsafe { gpu::load_v4_b32(keys.add(first as usize) as *const u32) });
                let v = T::unpack(unsafe {
                    gpu::load_v4_b32(values.add(first as usize) as *const u32)
                });
                // The key before this thread's first one is the previous lane's last (the
                // lanes of a row hold consecutive vectors); lane 0 reads it.
                let from_left = gpu::shfl_up_sync(FULL_MASK, k[per_vec - 1], 1, 32);
                let head0 = if first == 0 {
                    true
                } else if lane == 0 {
                    k[0] != key(first - 1)
                } else {
                    k[0] != from_left
                };
                let h = |j: usize| -> u32 {
                    (if j == 0 {
                        head0
                    } else {
                        j < per_vec && k[j] != k[j - 1]
                    }) as u32
                };
                let one = |j: usize| Headed {
                    head: h(j),
                    value: v[j],
                };
                [one(0), one(1), one(2), one(3)]
            } else {
                let one = |j: usize| {
                    let i = first + j as u64;
                    if j < per_vec && i < n {
                        Headed {
                            head: (i == 0 || key(i) != key(i - 1)) as u32,
                            value: unsafe { values.add(i as usize).read() },
                        }
                    } else {
                        identity
                    }
                };
                [one(0), one(1), one(2), one(3)]
            }
        },
        store: |first: u64, _fast: bool, excl: [Headed<T>; 4], incl: [Headed<T>; 4]| {
            for j in 0..4 {
                let i = first + j as u64;
                if j < per_vec && i < n {
                    let run = incl[j].head as u64; // this element's run index + 1
                    if incl[j].head != excl[j].head {
                        // A head: its run's key, and the finished aggregate of the run before.
                        if run <= capacity {
                            unsafe { unique.add(run as usize - 1).write(key(i)) };
                        }
                        if i > 0 && run - 1 <= capacity {
                            unsafe { aggregates_out.add(run as usize - 2).write(excl[j].value) };
                        }
                    }
                    if i == n - 1 {
                        if run <= capacity {
                            unsafe { aggregates_out.add(run as usize - 1).write(incl[j].value) };
                        }
                        unsafe { num_runs.write(run) };
                    }
                }
            }
        },
    };
    let status = TileStatus {
        flags,
        aggregates,
        prefixes,
        epoch,
        first_delay_ns: delay_ns,
    };
    unsafe {
        scan_tile::<ROWS, _, _, _, _>(
            tile,
            vector,
            io,
            status,
            counted::<T, O>,
            warp_aggs.cast::<Headed<T>>(),
            tile_prefix.cast::<Headed<T>>(),
        )
    };
}

/// The simulator's entry point of a reduce-by-key kernel: keys, values, unique out, aggregates
/// out, capacity, run count out, n, counter, flags, aggregates, prefixes, epoch, first delay.
#[cfg(not(target_arch = "nvptx64"))]
pub type SimReduceByKeyFn<K, T> = unsafe fn(
    *const K,
    *const T,
    *mut K,
    *mut T,
    u64,
    *mut u64,
    u64,
    *mut u32,
    *mut u32,
    *mut Headed<T>,
    *mut Headed<T>,
    u32,
    u32,
);

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
        $crate::kernel! {
            /// Reduce by key; see
            /// [`reduce_by_key_device`]($crate::reduce::by_key::reduce_by_key_device).
            pub unsafe fn $name(
                keys: *const $k, values: *const $t, unique: *mut $k, aggregates_out: *mut $t,
                capacity: u64, num_runs: *mut u64, n: u64, counter: *mut u32, flags: *mut u32,
                aggregates: *mut $crate::scan::Headed<$t>,
                prefixes: *mut $crate::scan::Headed<$t>, epoch: u32, delay_ns: u32,
            ) {
                unsafe {
                    $crate::reduce::by_key::reduce_by_key_device::<$k, $t, $op>(
                        keys, values, unique, aggregates_out, capacity, num_runs, n, counter,
                        flags, aggregates, prefixes, epoch, delay_ns,
                    )
                }
            }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        impl $crate::reduce::by_key::ReduceByKeyInstance<$k, $t> for $op {
            const KERNEL: $crate::Kernel<$crate::reduce::by_key::SimReduceByKeyFn<$k, $t>> =
                $crate::Kernel { name: stringify!($name), sim: $name };
        }
    )*};
}

// The library's built-in reductions by key: u32 and u64 keys (compared bitwise), every value
// type, sum / min / max.
#[cfg(feature = "builtin")]
reduce_by_key_kernels! {
    reduce_by_key_sum_u32_i32: u32, i32, Sum; reduce_by_key_sum_u32_u32: u32, u32, Sum;
    reduce_by_key_sum_u32_i64: u32, i64, Sum; reduce_by_key_sum_u32_u64: u32, u64, Sum;
    reduce_by_key_sum_u32_f32: u32, f32, Sum; reduce_by_key_sum_u32_f64: u32, f64, Sum;
    reduce_by_key_min_u32_i32: u32, i32, Min; reduce_by_key_min_u32_u32: u32, u32, Min;
    reduce_by_key_min_u32_i64: u32, i64, Min; reduce_by_key_min_u32_u64: u32, u64, Min;
    reduce_by_key_min_u32_f32: u32, f32, Min; reduce_by_key_min_u32_f64: u32, f64, Min;
    reduce_by_key_max_u32_i32: u32, i32, Max; reduce_by_key_max_u32_u32: u32, u32, Max;
    reduce_by_key_max_u32_i64: u32, i64, Max; reduce_by_key_max_u32_u64: u32, u64, Max;
    reduce_by_key_max_u32_f32: u32, f32, Max; reduce_by_key_max_u32_f64: u32, f64, Max;
    reduce_by_key_sum_u64_i32: u64, i32, Sum; reduce_by_key_sum_u64_u32: u64, u32, Sum;
    reduce_by_key_sum_u64_i64: u64, i64, Sum; reduce_by_key_sum_u64_u64: u64, u64, Sum;
    reduce_by_key_sum_u64_f32: u64, f32, Sum; reduce_by_key_sum_u64_f64: u64, f64, Sum;
    reduce_by_key_min_u64_i32: u64, i32, Min; reduce_by_key_min_u64_u32: u64, u32, Min;
    reduce_by_key_min_u64_i64: u64, i64, Min; reduce_by_key_min_u64_u64: u64, u64, Min;
    reduce_by_key_min_u64_f32: u64, f32, Min; reduce_by_key_min_u64_f64: u64, f64, Min;
    reduce_by_key_max_u64_i32: u64, i32, Max; reduce_by_key_max_u64_u32: u64, u32, Max;
    reduce_by_key_max_u64_i64: u64, i64, Max; reduce_by_key_max_u64_u64: u64, u64, Max;
    reduce_by_key_max_u64_f32: u64, f32, Max; reduce_by_key_max_u64_f64: u64, f64, Max;
}
