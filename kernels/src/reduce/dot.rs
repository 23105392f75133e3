//! Reductions of a map of two arrays, in one launch and one read of each: the dot product
//! (`sum x[i]·y[i]`), and any user map of pairs ([`MapOp2`]). The same tiles, partials and
//! last-block combine as the one-input reduction ([`reduce_device`](super::reduce_device)),
//! so the result is deterministic and the same on every GPU and the simulator.

use super::policy::BLOCK as REDUCE_BLOCK;
use super::{ReduceParams, reduce_tiles};
use crate::gpu::{self, ShflValue};
use crate::load::Cut;
use crate::ops::Element;

/// A reduction of pairs: `lift2` maps `(x[i], y[i])` to an accumulator, `combine` as in
/// [`ReduceOp`](crate::ops::ReduceOp) (associative and commutative, with an identity).
pub trait MapOp2<T: Element>: Copy {
    /// What the reduction carries (at most 16 bytes).
    type Acc: ShflValue;
    /// The accumulator of nothing.
    fn identity() -> Self::Acc;
    /// The accumulator of the pair at index `index`.
    fn lift2(x: T, y: T, index: u64) -> Self::Acc;
    /// Associative and commutative.
    fn combine(a: Self::Acc, b: Self::Acc) -> Self::Acc;
}

/// The dot product. f32 pairs are multiplied and summed in f64 (each product exact, one
/// rounding at the end on the host, like [`SumCompensated`](crate::ops::SumCompensated)); f64
/// in f64.
#[derive(Clone, Copy, Debug, Default)]
pub struct Dot;

impl MapOp2<f32> for Dot {
    type Acc = f64;
    #[inline(always)]
    fn identity() -> f64 {
        0.0
    }
    #[inline(always)]
    fn lift2(x: f32, y: f32, _: u64) -> f64 {
        x as f64 * y as f64
    }
    #[inline(always)]
    fn combine(a: f64, b: f64) -> f64 {
        a + b
    }
}

impl MapOp2<f64> for Dot {
    type Acc = f64;
    #[inline(always)]
    fn identity() -> f64 {
        0.0
    }
    #[inline(always)]
    fn lift2(x: f64, y: f64, _: u64) -> f64 {
        x * y
    }
    #[inline(always)]
    fn combine(a: f64, b: f64) -> f64 {
        a + b
    }
}

/// Combine the pairs of one 16-byte vector of each input, first index `base`.
#[inline(always)]
fn fold_pair<T: Element, O: MapOp2<T>>(a: [u32; 4], b: [u32; 4], base: u64) -> O::Acc {
    const { assert!(T::PER_VEC <= 4, "no 2-byte dot products yet") };
    let (x, y) = (T::unpack(a), T::unpack(b));
    if T::PER_VEC == 4 {
        O::combine(
            O::combine(O::lift2(x[0], y[0], base), O::lift2(x[1], y[1], base + 1)),
            O::combine(
                O::lift2(x[2], y[2], base + 2),
                O::lift2(x[3], y[3], base + 3),
            ),
        )
    } else {
        O::combine(O::lift2(x[0], y[0], base), O::lift2(x[1], y[1], base + 1))
    }
}

/// The one-launch reduction of `O::lift2(x[i], y[i], i)` over `n` pairs, in `tiles` tiles (any
/// physical grid <= `tiles` gives the same bits). When `x` and `y` sit at the same offset
/// from a 16-byte boundary the body is read with 128-bit loads of each; otherwise every pair
/// goes through scalar loads (correct, slower; the choice depends on the addresses mod 16, as
/// the one-input reduction's head does). Workspace and outputs as
/// [`reduce_device`](super::reduce_device).
///
/// # Safety
/// `x` and `y` valid for `n` elements; the rest as `reduce_device`.
#[inline(always)]
pub unsafe fn reduce2_device<T: Element, O: MapOp2<T>>(p: ReduceParams<T, O::Acc>) {
    let ReduceParams {
        input: x,
        input2: y,
        n,
        tiles,
        partials,
        retire_count,
        out,
        done,
        seq,
    } = p;
    let scratch = crate::static_shared!(REDUCE2_SCRATCH: [u128; 32]);
    let scratch = unsafe { scratch.cast::<O::Acc>() };
    let tid = gpu::thread_idx_x() as u64;
    let tiles = tiles as u64;
    let threads = tiles * REDUCE_BLOCK as u64;
    let (cx, cy) = Cut::pair(x, y, n);
    let (head, vectors, tail_start) = (cx.head, cx.vectors, cx.tail_start());
    let pair = |i: u64| unsafe { O::lift2(cx.get(i), cy.get(i), i) };

    let thread_acc = |tile: u64| {
        let gtid = tile * REDUCE_BLOCK as u64 + tid;
        let (mut acc0, mut acc1) = (O::identity(), O::identity());
        let mut v = gtid;
        while v < vectors {
            let (a, b) = unsafe { (cx.vector(v), cy.vector(v)) };
            acc0 = O::combine(acc0, fold_pair::<T, O>(a, b, cx.first(v)));
            v += threads;
        }
        // Scalar head and tail (a loop: the head is every pair when the inputs' offsets
        // differ).
        let mut i = gtid;
        while i < head {
            acc1 = O::combine(acc1, pair(i));
            i += threads;
        }
        let mut i = tail_start + gtid;
        while i < n {
            acc1 = O::combine(acc1, pair(i));
            i += threads;
        }
        O::combine(acc0, acc1)
    };
    unsafe {
        reduce_tiles::<1, _, _, _, _, _>(
            tiles,
            partials,
            retire_count,
            out,
            done,
            seq,
            O::identity(),
            O::combine,
            scratch,
            |a| a,
            thread_acc,
        )
    };
}

/// The simulator's entry point of a two-input reduction kernel (the one-input one's).
#[cfg(not(target_arch = "nvptx64"))]
pub type SimReduce2Fn<T, A> = super::SimReduceFn<T, A>;

/// A pair map whose kernel over `T` exists ([`reduce2_kernels!`](crate::reduce2_kernels)).
#[cfg(not(target_arch = "nvptx64"))]
pub trait Reduce2Instance<T: Element>: MapOp2<T> {
    /// The kernel: `reduce2_device::<T, Self>` under its exported name.
    const KERNEL: crate::Kernel<SimReduce2Fn<T, Self::Acc>>;
}

/// Export `reduce2_device::<T, Op>` as named kernels and register each with
/// [`Reduce2Instance`]: `reduce2_kernels! { my_kernel: f32, MyPairOp; }`.
#[macro_export]
macro_rules! reduce2_kernels {
    ($($name:ident : $t:ty, $op:ty;)*) => {$(
        const _: () = {
            use $crate::reduce::ReduceParams;
            type T = $t;
            type A = <$op as $crate::reduce::dot::MapOp2<$t>>::Acc;
            // One-launch reduction of pairs; see `reduce2_device`.
            $crate::reduce_params!(entry #[export_name = stringify!($name)] kernel =>
                ($crate::reduce::dot::reduce2_device::<$t, $op>));
            #[cfg(not(target_arch = "nvptx64"))]
            impl $crate::reduce::dot::Reduce2Instance<$t> for $op {
                const KERNEL: $crate::Kernel<
                    $crate::reduce::dot::SimReduce2Fn<$t, <$op as $crate::reduce::dot::MapOp2<$t>>::Acc>,
                > = $crate::Kernel { name: stringify!($name), sim: kernel };
            }
        };
    )*};
}

#[cfg(feature = "builtin")]
reduce2_kernels! {
    reduce_dot_f32: f32, Dot;
    reduce_dot_f64: f64, Dot;
}
