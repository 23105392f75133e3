//! What a selection keeps: a predicate over one element. The built-in one, [`Bounds`], compares
//! with constants the host passes at launch (`<`, `<=`, `>`, `>=`, `==`, `!=`, a range, nonzero,
//! finite, not NaN: one kernel per element type serves them all); a user's predicate is any
//! type implementing [`Predicate`], exported by [`select_kernels!`](crate::select_kernels).

use crate::half::{Bf16, F16, HalfFloat};
use crate::ops::Element;

/// The launch's constants for the built-in predicate: `x` is kept when `lo <= x && x <= hi`,
/// negated when `mode` has [`NEGATE`]. The host makes every predicate this one: a strict bound
/// becomes the next value (`x < c` is `x <= c - 1`, or the float below `c`), a missing one the
/// type's lowest or highest value (the infinities: NaN fails either way).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Bound<T> {
    pub lo: T,
    pub hi: T,
    /// Bit 0: [`NEGATE`].
    pub mode: u32,
}

/// The bounds' result negated.
pub const NEGATE: u32 = 1;

/// An element type with IEEE comparisons (a NaN compares false with everything).
pub trait Ordered: Element {
    fn le(self, o: Self) -> bool;
    fn lt(self, o: Self) -> bool;
    /// The least value above `self` (none above the largest, +inf, or a NaN).
    fn next_up(self) -> Option<Self>;
    /// The greatest value below `self` (none below the lowest, -inf, or a NaN).
    fn next_down(self) -> Option<Self>;
}

/// [`Ordered::next_up`] on the bits of an IEEE format (`sign` its sign bit, `inf` +inf's bits).
const fn ieee_next_up(bits: u64, sign: u64, inf: u64) -> Option<u64> {
    let abs = bits & !sign;
    if abs > inf || bits == inf {
        return None;
    }
    Some(if abs == 0 {
        1 // either zero: the least subnormal
    } else if bits & sign == 0 {
        bits + 1
    } else {
        bits - 1
    })
}

/// [`Ordered::next_down`]: the next value up of `-x`, negated.
const fn ieee_next_down(bits: u64, sign: u64, inf: u64) -> Option<u64> {
    match ieee_next_up(bits ^ sign, sign, inf) {
        Some(b) => Some(b ^ sign),
        None => None,
    }
}

macro_rules! ordered_int {
    ($($t:ty),*) => {$(
        impl Ordered for $t {
            #[inline(always)]
            fn le(self, o: Self) -> bool { self <= o }
            #[inline(always)]
            fn lt(self, o: Self) -> bool { self < o }
            fn next_up(self) -> Option<Self> { self.checked_add(1) }
            fn next_down(self) -> Option<Self> { self.checked_sub(1) }
        }
    )*};
}
ordered_int!(i32, u32, i64, u64);

/// IEEE types: `$t`, its bits' type, sign bit, +inf, bits of (`$to`) and from (`$from`) a value.
macro_rules! ordered_ieee {
    ($($t:ty, $b:ty, $sign:expr, $inf:expr, $to:expr, $from:expr, $le:expr, $lt:expr;)*) => {$(
        impl Ordered for $t {
            #[inline(always)]
            fn le(self, o: Self) -> bool { $le(self, o) }
            #[inline(always)]
            fn lt(self, o: Self) -> bool { $lt(self, o) }
            fn next_up(self) -> Option<Self> {
                ieee_next_up($to(self) as u64, $sign, $inf).map(|b| $from(b as $b))
            }
            fn next_down(self) -> Option<Self> {
                ieee_next_down($to(self) as u64, $sign, $inf).map(|b| $from(b as $b))
            }
        }
    )*};
}
ordered_ieee! {
    f32, u32, 1 << 31, 0x7f80_0000, f32::to_bits, f32::from_bits,
        |a: f32, b: f32| a <= b, |a: f32, b: f32| a < b;
    f64, u64, 1 << 63, 0x7ff0_0000_0000_0000, f64::to_bits, f64::from_bits,
        |a: f64, b: f64| a <= b, |a: f64, b: f64| a < b;
    F16, u16, 0x8000, 0x7c00, |x: F16| x.to_bits(), F16::from_bits_,
        |a: F16, b: F16| a.widen() <= b.widen(), |a: F16, b: F16| a.widen() < b.widen();
    Bf16, u16, 0x8000, 0x7f80, |x: Bf16| x.to_bits(), Bf16::from_bits_,
        |a: Bf16, b: Bf16| a.widen() <= b.widen(), |a: Bf16, b: Bf16| a.widen() < b.widen();
}

/// Mode: the flag is the predicate of the element.
pub const MODE_IF: u32 = 0;
/// Mode: the flag is the byte `flags[i] != 0`.
pub const MODE_FLAGGED: u32 = 1;
/// Mode: the flag is `i == 0 || x[i] != x[i - 1]` (unique consecutive).
pub const MODE_UNIQUE: u32 = 2;
/// Mode: as [`MODE_UNIQUE`], and each run's length to `counts` (run-length encoding).
pub const MODE_RUNS: u32 = 3;
/// Mode: the runs of two or more equal consecutive elements, their first indices to `indices`
/// and their lengths to `counts` (CUB's `DeviceRunLengthEncode::NonTrivialRuns`).
pub const MODE_NONTRIVIAL: u32 = 4;
/// Mode: a three-way partition ([`ThreeWay`]): the elements `select` keeps, then of the others
/// those [`Predicate::second`] keeps, then the rest, each in input order.
pub const MODE_THREE_WAY: u32 = 5;
/// Mode: as [`MODE_UNIQUE`] over keys, and each kept key's value (the launch's `values`) to
/// `values_out` (unique by key; its own kernels, so that `unique` carries none of it).
pub const MODE_UNIQUE_BY_KEY: u32 = 6;

/// A predicate over elements `T`: `select` keeps `x` when it returns true. `bound` is the
/// launch's [`Bound`] (the built-in predicate's constants; a user predicate may ignore it).
pub trait Predicate<T>: Copy + 'static {
    /// What the flag of an element is ([`MODE_IF`]: `select`; [`Flagged`], [`Unique`]).
    const MODE: u32 = MODE_IF;
    /// The kernel's threads per block where its mode's block is constant (not
    /// [`sized_by_launch`](super::sized_by_launch)): [`BLOCK`](super::BLOCK), or
    /// [`SMALL_BLOCK`](super::SMALL_BLOCK) for a [`Short`] kernel.
    const BLOCK: u32 = super::BLOCK;
    fn select(x: T, bound: &Bound<T>) -> bool;
    /// A three-way partition's second part ([`MODE_THREE_WAY`]): whether an element `select`
    /// rejects goes there (`bound`: the launch's second bounds).
    #[inline(always)]
    fn second(x: T, bound: &Bound<T>) -> bool {
        let _ = (x, bound);
        false
    }
}

/// A three-way partition by two predicates: `A`'s elements first, then `B`'s among the others,
/// then the rest (CUB's three-way `DevicePartition::If`). `A` sees the launch's first bounds,
/// `B` the second; both are [`MODE_IF`] predicates. The built-in kernels use two [`Bounds`];
/// the host has no call for a user's pair yet.
#[derive(Clone, Copy, Debug, Default)]
pub struct ThreeWay<A, B>(pub A, pub B);

impl<T, A: Predicate<T>, B: Predicate<T>> Predicate<T> for ThreeWay<A, B> {
    const MODE: u32 = MODE_THREE_WAY;
    #[inline(always)]
    fn select(x: T, bound: &Bound<T>) -> bool {
        A::select(x, bound)
    }
    #[inline(always)]
    fn second(x: T, bound: &Bound<T>) -> bool {
        B::select(x, bound)
    }
}

/// `P`'s kernel in blocks of [`SMALL_BLOCK`](super::SMALL_BLOCK) threads, a constant: the
/// three-way partition of short inputs ([`is_short`](super::is_short)) gains from half tiles
/// as select-if does, but a block read from the launch costs its 4-byte kernels spills.
#[derive(Clone, Copy, Debug, Default)]
pub struct Short<P>(pub P);

impl<T, P: Predicate<T>> Predicate<T> for Short<P> {
    const MODE: u32 = P::MODE;
    const BLOCK: u32 = super::SMALL_BLOCK;
    #[inline(always)]
    fn select(x: T, bound: &Bound<T>) -> bool {
        P::select(x, bound)
    }
    #[inline(always)]
    fn second(x: T, bound: &Bound<T>) -> bool {
        P::second(x, bound)
    }
}

/// Calls whose flags the kernel finds by its mode, not by a predicate (`select` is never
/// called): each a unit type whose [`Predicate::MODE`] names it.
macro_rules! mode_only {
    ($($(#[$doc:meta])* $name:ident => $mode:ident;)*) => {$(
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default)]
        pub struct $name;

        impl<T: Element> Predicate<T> for $name {
            const MODE: u32 = $mode;
            #[inline(always)]
            fn select(_: T, _: &Bound<T>) -> bool {
                false
            }
        }
    )*};
}
mode_only! {
    /// Keep element `i` when the launch's byte `flags[i]` is not 0 (`masked_select`).
    Flagged => MODE_FLAGGED;
    /// Keep the first of every run of equal consecutive elements (IEEE `==`).
    Unique => MODE_UNIQUE;
    /// Unique by key: [`Unique`]'s heads of the keys, and each one's value.
    UniqueByKey => MODE_UNIQUE_BY_KEY;
    /// Run-length encoding: [`Unique`]'s heads, and each run's length.
    Runs => MODE_RUNS;
    /// The runs of two or more: [`Runs`] without the runs of one.
    NonTrivialRuns => MODE_NONTRIVIAL;
}

/// The built-in predicate: `x` against the launch's [`Bound`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Bounds;

impl<T: Ordered> Predicate<T> for Bounds {
    #[inline(always)]
    fn select(x: T, b: &Bound<T>) -> bool {
        (b.lo.le(x) & x.le(b.hi)) ^ (b.mode & NEGATE != 0)
    }
}
