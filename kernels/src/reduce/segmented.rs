//! Segmented reduction in ONE launch: `out[s] = reduce(input[begin[s]..end[s]])` for every
//! segment `s`, with segments given by offsets (`begin`/`end`, CSR style) or by a fixed length
//! (the rows of a row-major matrix). Empty segments give the operator's identity; `lift` gets
//! the index *within* the segment (so argmin/argmax return positions inside their segment).
//!
//! Strategy per segment length `L` (CUB's `DeviceSegmentedReduce` and its small/medium/large
//! segment policies are the model; the thresholds are [`WARP_MAX`] and [`TILE`]):
//! - Blocks of [`BLOCK`] threads take groups of [`SEGMENTS_PER_BLOCK`] consecutive segments
//!   (grid-stride over the groups): warp `w` of the block owns segment `8g + w`.
//! - `L <= WARP_MAX` (short): the owning warp reduces it alone, lane-strided, and a shuffle
//!   butterfly combines the lanes; no barrier, no shared memory.
//! - `L > WARP_MAX` (medium and long): after the short ones, the whole block reduces each such
//!   segment of its group in turn, cut into tiles of [`TILE`] elements; each tile is reduced
//!   by the block, and the tile partials are combined in tile order.
//!
//! Deterministic: the combining order of a segment is a function of its length alone (the
//! regime, the lane/thread striding, the tile cut and the tile-order combine all depend on `L`
//! and the compile-time policy only), never on the grid, on which block or warp runs it, or on
//! timing. So the bits are the same for every grid, every GPU and the simulator (same code).
//!
//! Bad offsets never read out of bounds: a segment with `end < begin` or `end > n` is reduced
//! as empty (identity) and reported through `status` (see [`segmented_device`]), which the host
//! turns into an error.

use crate::block::block_reduce;
use crate::gpu::{self, ShflValue};
use crate::ops::{ArgAcc, Element, ReduceOp};
#[cfg(feature = "builtin")]
use crate::ops::{ArgMax, ArgMin, BitAnd, BitOr, BitXor, Max, Min, Product, Sum};
use crate::warp::warp_reduce;

/// Threads per block of the segmented reduction.
pub const BLOCK: u32 = 256;
/// Segments per group: one per warp of a block.
pub const SEGMENTS_PER_BLOCK: u32 = BLOCK / gpu::WARP_SIZE;
/// Longest segment reduced by one warp alone (32 lanes x up to 32 elements each); longer
/// segments are reduced by a whole block.
pub const WARP_MAX: u64 = 1024;
/// Elements per tile of a block-reduced segment: 16 per thread.
pub const TILE: u64 = 16 * BLOCK as u64;

/// `status` code of a segment whose end lies before its begin.
pub const BAD_DECREASING: u64 = 0;
/// `status` code of a segment whose end lies past the input.
pub const BAD_OUT_OF_RANGE: u64 = 1;

/// Fold `lift(x[start + i], i)` for `i = first, first + stride, ... < hi` (relative indices
/// from `lo`), alternating two accumulators (two loads in flight), combined at the end.
#[inline(always)]
unsafe fn strided_fold<T: Element, O: ReduceOp<T>>(
    x: *const T,
    lo: u64,
    hi: u64,
    first: u64,
    stride: u64,
) -> O::Acc {
    let (mut a0, mut a1) = (O::identity(), O::identity());
    let mut i = lo + first;
    let load = |i: u64| O::lift(unsafe { x.add(i as usize).read() }, i);
    while i + stride < hi {
        let (v0, v1) = (load(i), load(i + stride));
        a0 = O::combine(a0, v0);
        a1 = O::combine(a1, v1);
        i += 2 * stride;
    }
    if i < hi {
        a0 = O::combine(a0, load(i));
    }
    O::combine(a0, a1)
}

/// Where a segmented reduction writes segment `s`'s accumulator.
pub trait SegmentSink<T: Element, A: ShflValue> {
    /// The element type of the main output array.
    type Out: Copy;
    /// Store `acc` as segment `s`'s result (`index_out` is the second array, or null).
    ///
    /// # Safety
    /// `out` (and `index_out` where used) valid for `s + 1` elements.
    unsafe fn store(out: *mut Self::Out, index_out: *mut u64, s: u64, acc: A);
}

/// The accumulator itself goes to `out[s]` (every operator; `index_out` unused).
pub struct AccSink;
impl<T: Element, A: ShflValue> SegmentSink<T, A> for AccSink {
    type Out = A;
    #[inline(always)]
    unsafe fn store(out: *mut A, _: *mut u64, s: u64, acc: A) {
        unsafe { out.add(s as usize).write(acc) }
    }
}

/// Argmin/argmax: the value goes to `out[s]`, the index within the segment to
/// `index_out[s]` (`u64::MAX` for an empty segment, whose value is the identity).
pub struct ArgSink;
impl<T: Element> SegmentSink<T, ArgAcc<T>> for ArgSink {
    type Out = T;
    #[inline(always)]
    unsafe fn store(out: *mut T, index_out: *mut u64, s: u64, acc: ArgAcc<T>) {
        unsafe {
            out.add(s as usize).write(acc.value);
            index_out.add(s as usize).write(acc.index);
        }
    }
}

/// Record bad segment `s` (`kind` is [`BAD_DECREASING`] or [`BAD_OUT_OF_RANGE`]) in `status`:
/// it keeps `!((s << 1) | kind)` of the lowest bad segment (0: none), so the host can name it.
#[inline(always)]
unsafe fn report_bad(status: *mut u64, s: u64, kind: u64) {
    let code = !((s << 1) | kind);
    let mut cur = unsafe { core::ptr::read_volatile(status) };
    while code > cur {
        let seen = unsafe { gpu::atomic_cas_u64(status, cur, code) };
        if seen == cur {
            break;
        }
        cur = seen;
    }
}

/// Segment `s`'s start and length: from `begin`/`end` (validated: a bad segment is reported
/// and treated as empty), or, when `begin` is null, `s * segment_len` and `segment_len`.
#[inline(always)]
unsafe fn segment_bounds(
    s: u64,
    n: u64,
    begin: *const u64,
    end: *const u64,
    segment_len: u64,
    status: *mut u64,
) -> (u64, u64) {
    if begin.is_null() {
        return (s * segment_len, segment_len);
    }
    let (b, e) = unsafe { (begin.add(s as usize).read(), end.add(s as usize).read()) };
    if e < b {
        unsafe { report_bad(status, s, BAD_DECREASING) };
        (0, 0)
    } else if e > n {
        unsafe { report_bad(status, s, BAD_OUT_OF_RANGE) };
        (0, 0)
    } else {
        (b, e - b)
    }
}

/// The one-launch segmented reduction of the `k` segments of the `n` elements at `input` with
/// operator `O`; segment `s` is `begin[s]..end[s]`, or, when `begin` is null,
/// `s * segment_len .. (s + 1) * segment_len` (the host then guarantees `k * segment_len <= n`).
/// Results go through the sink `S` to `out` (and `index_out`). Bad offsets (`end < begin`,
/// `end > n`) make the segment's result the identity and are recorded in `status` (a `u64`
/// that must be 0 at launch; it ends holding `!((s << 1) | kind)` of the lowest bad segment
/// `s`, or 0). Any grid of [`BLOCK`]-thread blocks gives the same bits.
///
/// # Safety
/// Pointers valid for the sizes above; `begin`/`end` (when not null) for `k` offsets each.
#[inline(always)]
#[allow(clippy::too_many_arguments)] // the kernel's launch parameters, passed straight through
pub unsafe fn segmented_device<T: Element, O: ReduceOp<T>, S: SegmentSink<T, O::Acc>>(
    input: *const T,
    n: u64,
    begin: *const u64,
    end: *const u64,
    segment_len: u64,
    k: u64,
    out: *mut S::Out,
    index_out: *mut u64,
    status: *mut u64,
) {
    // 32 slots of up to 16 bytes for the block reduction, one per warp.
    let scratch = crate::static_shared!(SEG_SCRATCH: [u128; 32]);
    let scratch = unsafe { scratch.cast::<O::Acc>() };
    // The tile partials of a block-reduced segment, BLOCK at a time.
    let slots = crate::static_shared!(SEG_TILE_SLOTS: [u128; BLOCK as usize]);
    let slots = unsafe { slots.cast::<O::Acc>() };
    // Start and length of each warp's segment when it is one for the block (0: none).
    let long_start = crate::static_shared!(SEG_LONG_START: [u64; SEGMENTS_PER_BLOCK as usize]);
    let long_len = crate::static_shared!(SEG_LONG_LEN: [u64; SEGMENTS_PER_BLOCK as usize]);

    let tid = gpu::thread_idx_x() as u64;
    let lane = gpu::lane_id() as u64;
    let warp = gpu::warp_id() as u64;
    let per = SEGMENTS_PER_BLOCK as u64;
    let groups = k.div_ceil(per);
    let mut g = gpu::block_idx_x() as u64;
    while g < groups {
        // Short segments: one warp each.
        let s = g * per + warp;
        let (start, len) = if s < k {
            unsafe { segment_bounds(s, n, begin, end, segment_len, status) }
        } else {
            (0, 0)
        };
        if s < k && len <= WARP_MAX {
            let x = unsafe { input.add(start as usize) };
            let acc = unsafe { strided_fold::<T, O>(x, 0, len, lane, gpu::WARP_SIZE as u64) };
            let total = warp_reduce(acc, O::combine);
            if lane == 0 {
                unsafe { S::store(out, index_out, s, total) };
            }
        }
        if lane == 0 {
            unsafe {
                long_start.write(warp as usize, start);
                long_len.write(warp as usize, if len > WARP_MAX { len } else { 0 });
            }
        }
        gpu::sync_threads();
        // Longer segments: the whole block, one after the other. (The bound is the block's
        // warp count read at run time, == `per`: a constant bound would let LLVM unroll the
        // loop and inline the block path eight times, tripling the PTX.)
        for w in 0..(gpu::block_dim_x() / gpu::WARP_SIZE) as u64 {
            let len = unsafe { long_len.read(w as usize) };
            if len == 0 {
                continue;
            }
            let x = unsafe { input.add(long_start.read(w as usize) as usize) };
            let total = unsafe { block_segment::<T, O>(x, len, scratch, slots) };
            if tid == 0 {
                unsafe { S::store(out, index_out, g * per + w, total) };
            }
        }
        // The next group rewrites the shared arrays.
        gpu::sync_threads();
        g += gpu::grid_dim_x() as u64;
    }
}

/// One block reduces the `len` (> [`WARP_MAX`]) elements at `x`: tile `t` (elements
/// `t*TILE ..`) is reduced by the block (thread `j` folds elements `j, j + BLOCK, ...` of it),
/// giving `P_t`; thread `j` then folds `P_j, P_{j+BLOCK}, ...` in order and the block reduces
/// those. Valid in thread 0. The order is a function of `len` alone.
#[inline(always)]
unsafe fn block_segment<T: Element, O: ReduceOp<T>>(
    x: *const T,
    len: u64,
    scratch: gpu::SharedArray<O::Acc>,
    slots: gpu::SharedArray<O::Acc>,
) -> O::Acc {
    let tid = gpu::thread_idx_x() as u64;
    let tiles = len.div_ceil(TILE);
    let mut acc = O::identity();
    let mut t = 0;
    while t < tiles {
        let lo = t * TILE;
        let hi = (lo + TILE).min(len);
        let part = unsafe { strided_fold::<T, O>(x, lo, hi, tid, BLOCK as u64) };
        // Ends with a barrier: the previous batch's slot reads are done.
        let p = block_reduce(part, O::identity(), O::combine, scratch);
        let slot = t % BLOCK as u64;
        if tid == 0 {
            unsafe { slots.write(slot as usize, p) };
        }
        if slot == BLOCK as u64 - 1 || t == tiles - 1 {
            gpu::sync_threads();
            if tid <= slot {
                acc = O::combine(acc, unsafe { slots.read(tid as usize) });
            }
            gpu::sync_threads();
        }
        t += 1;
    }
    block_reduce(acc, O::identity(), O::combine, scratch)
}

/// The simulator's entry point of a segmented reduction kernel: input, n, begin (or null),
/// end, segment length, segment count, out, index out (or null), status.
#[cfg(not(target_arch = "nvptx64"))]
pub type SimSegmentedFn<T, Out> =
    unsafe fn(*const T, u64, *const u64, *const u64, u64, u64, *mut Out, *mut u64, *mut u64);

/// An operator whose segmented reduction kernel over `T` exists
/// ([`segmented_reduce_kernels!`](crate::segmented_reduce_kernels) implements it).
#[cfg(not(target_arch = "nvptx64"))]
pub trait SegmentedReduceInstance<T: Element>: ReduceOp<T> {
    /// What `out` holds per segment: the accumulator, or for argmin/argmax the value (the
    /// index going to the second output).
    type Out: Copy;
    /// Whether the kernel writes an index per segment to its second output (argmin/argmax).
    const WRITES_INDEX: bool;
    /// The kernel: `segmented_device::<T, Self, _>` under its exported name.
    const KERNEL: crate::Kernel<SimSegmentedFn<T, Self::Out>>;
}

/// Export `segmented_device::<T, Op, _>` as named kernels (PTX entries / simulator functions)
/// and register each with [`SegmentedReduceInstance`]. `name: T, Op;` writes the accumulator
/// per segment; `name: T, Op, arg;` (for [`ArgAcc`] accumulators) writes the value and the
/// index within the segment to two arrays. A user operator:
/// `segmented_reduce_kernels! { my_segmented: f32, MyOp; }`.
#[macro_export]
macro_rules! segmented_reduce_kernels {
    ($($name:ident : $t:ty, $op:ty $(, $arg:ident)?;)*) => {$(
        $crate::segmented_reduce_kernels!(@one $name, $t, $op $(, $arg)?);
    )*};
    (@one $name:ident, $t:ty, $op:ty) => {
        $crate::segmented_reduce_kernels!(
            @emit $name, $t, $op, $crate::reduce::segmented::AccSink,
            <$op as $crate::ops::ReduceOp<$t>>::Acc, false
        );
    };
    (@one $name:ident, $t:ty, $op:ty, arg) => {
        $crate::segmented_reduce_kernels!(
            @emit $name, $t, $op, $crate::reduce::segmented::ArgSink, $t, true
        );
    };
    (@emit $name:ident, $t:ty, $op:ty, $sink:ty, $out:ty, $writes_index:expr) => {
        $crate::kernel! {
            /// One-launch segmented reduction; see
            /// [`segmented_device`]($crate::reduce::segmented::segmented_device).
            pub unsafe fn $name(
                input: *const $t,
                n: u64,
                begin: *const u64,
                end: *const u64,
                segment_len: u64,
                k: u64,
                out: *mut $out,
                index_out: *mut u64,
                status: *mut u64,
            ) {
                unsafe {
                    $crate::reduce::segmented::segmented_device::<$t, $op, $sink>(
                        input, n, begin, end, segment_len, k, out, index_out, status,
                    )
                }
            }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        impl $crate::reduce::segmented::SegmentedReduceInstance<$t> for $op {
            type Out = $out;
            const WRITES_INDEX: bool = $writes_index;
            const KERNEL: $crate::Kernel<$crate::reduce::segmented::SimSegmentedFn<$t, $out>> =
                $crate::Kernel { name: stringify!($name), sim: $name };
        }
    };
}

// The library's built-in segmented reductions: one kernel per (operator, type) serves both
// offsets and fixed-length segments.
#[cfg(feature = "builtin")]
segmented_reduce_kernels! {
    reduce_segmented_sum_i32: i32, Sum; reduce_segmented_sum_u32: u32, Sum;
    reduce_segmented_sum_i64: i64, Sum; reduce_segmented_sum_u64: u64, Sum;
    reduce_segmented_sum_f32: f32, Sum; reduce_segmented_sum_f64: f64, Sum;
    reduce_segmented_product_i32: i32, Product; reduce_segmented_product_u32: u32, Product;
    reduce_segmented_product_i64: i64, Product; reduce_segmented_product_u64: u64, Product;
    reduce_segmented_product_f32: f32, Product; reduce_segmented_product_f64: f64, Product;
    reduce_segmented_min_i32: i32, Min; reduce_segmented_min_u32: u32, Min;
    reduce_segmented_min_i64: i64, Min; reduce_segmented_min_u64: u64, Min;
    reduce_segmented_min_f32: f32, Min; reduce_segmented_min_f64: f64, Min;
    reduce_segmented_max_i32: i32, Max; reduce_segmented_max_u32: u32, Max;
    reduce_segmented_max_i64: i64, Max; reduce_segmented_max_u64: u64, Max;
    reduce_segmented_max_f32: f32, Max; reduce_segmented_max_f64: f64, Max;
    reduce_segmented_and_i32: i32, BitAnd; reduce_segmented_and_u32: u32, BitAnd;
    reduce_segmented_and_i64: i64, BitAnd; reduce_segmented_and_u64: u64, BitAnd;
    reduce_segmented_or_i32: i32, BitOr; reduce_segmented_or_u32: u32, BitOr;
    reduce_segmented_or_i64: i64, BitOr; reduce_segmented_or_u64: u64, BitOr;
    reduce_segmented_xor_i32: i32, BitXor; reduce_segmented_xor_u32: u32, BitXor;
    reduce_segmented_xor_i64: i64, BitXor; reduce_segmented_xor_u64: u64, BitXor;
    reduce_segmented_argmin_i32: i32, ArgMin, arg; reduce_segmented_argmin_u32: u32, ArgMin, arg;
    reduce_segmented_argmin_i64: i64, ArgMin, arg; reduce_segmented_argmin_u64: u64, ArgMin, arg;
    reduce_segmented_argmin_f32: f32, ArgMin, arg; reduce_segmented_argmin_f64: f64, ArgMin, arg;
    reduce_segmented_argmax_i32: i32, ArgMax, arg; reduce_segmented_argmax_u32: u32, ArgMax, arg;
    reduce_segmented_argmax_i64: i64, ArgMax, arg; reduce_segmented_argmax_u64: u64, ArgMax, arg;
    reduce_segmented_argmax_f32: f32, ArgMax, arg; reduce_segmented_argmax_f64: f64, ArgMax, arg;
}
