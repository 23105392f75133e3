//! What a selection keeps: a predicate over one element. The built-in one, [`Bounds`], compares
//! with constants the host passes at launch (`<`, `<=`, `>`, `>=`, `==`, `!=`, a range, nonzero,
//! finite, not NaN: one kernel per element type serves them all); a user's predicate is any
//! type implementing [`Predicate`], exported by [`select_kernels!`](crate::select_kernels).

use crate::half::{Bf16, F16, HalfFloat};
use crate::ops::Element;

/// The launch's constants for the built-in predicate: `lo`, `hi` and how they apply.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Bound<T> {
    pub lo: T,
    pub hi: T,
    /// Bits 0-1: the lower bound (0 none, 1 `lo <= x`, 2 `lo < x`); bits 2-3 the upper bound
    /// (0 none, 1 `x <= hi`, 2 `x < hi`); bit 4: negate the result.
    pub mode: u32,
}

/// Lower bound: none.
pub const LO_NONE: u32 = 0;
/// Lower bound: `lo <= x`.
pub const LO_INCL: u32 = 1;
/// Lower bound: `lo < x`.
pub const LO_EXCL: u32 = 2;
/// Upper bound: `x <= hi`.
pub const HI_INCL: u32 = 1 << 2;
/// Upper bound: `x < hi`.
pub const HI_EXCL: u32 = 2 << 2;
/// The bounds' result negated.
pub const NEGATE: u32 = 1 << 4;

/// An element type with IEEE comparisons (a NaN compares false with everything).
pub trait Ordered: Element {
    fn le(self, o: Self) -> bool;
    fn lt(self, o: Self) -> bool;
}

macro_rules! ordered_native {
    ($($t:ty),*) => {$(
        impl Ordered for $t {
            #[inline(always)]
            fn le(self, o: Self) -> bool { self <= o }
            #[inline(always)]
            fn lt(self, o: Self) -> bool { self < o }
        }
    )*};
}
ordered_native!(i32, u32, i64, u64, f32, f64);

macro_rules! ordered_half {
    ($($t:ty),*) => {$(
        impl Ordered for $t {
            #[inline(always)]
            fn le(self, o: Self) -> bool { self.widen() <= o.widen() }
            #[inline(always)]
            fn lt(self, o: Self) -> bool { self.widen() < o.widen() }
        }
    )*};
}
ordered_half!(F16, Bf16);

/// Mode: the flag is the predicate of the element.
pub const MODE_IF: u32 = 0;
/// Mode: the flag is the byte `flags[i] != 0`.
pub const MODE_FLAGGED: u32 = 1;
/// Mode: the flag is `i == 0 || x[i] != x[i - 1]` (unique consecutive).
pub const MODE_UNIQUE: u32 = 2;
/// Mode: as [`MODE_UNIQUE`], and each run's length to `counts` (run-length encoding).
pub const MODE_RUNS: u32 = 3;

/// A predicate over elements `T`: `select` keeps `x` when it returns true. `bound` is the
/// launch's [`Bound`] (the built-in predicate's constants; a user predicate may ignore it).
pub trait Predicate<T>: Copy + 'static {
    /// What the flag of an element is ([`MODE_IF`]: `select`; [`Flagged`], [`Unique`]).
    const MODE: u32 = MODE_IF;
    fn select(x: T, bound: &Bound<T>) -> bool;
}

/// Keep element `i` when the launch's byte `flags[i]` is not 0 (`masked_select`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Flagged;

/// Keep the first of every run of equal consecutive elements (IEEE `==`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Unique;

/// Run-length encoding: [`Unique`]'s heads, and each run's length.
#[derive(Clone, Copy, Debug, Default)]
pub struct Runs;

impl<T: Element> Predicate<T> for Runs {
    const MODE: u32 = MODE_RUNS;
    #[inline(always)]
    fn select(_: T, _: &Bound<T>) -> bool {
        false
    }
}

impl<T: Element> Predicate<T> for Flagged {
    const MODE: u32 = MODE_FLAGGED;
    #[inline(always)]
    fn select(_: T, _: &Bound<T>) -> bool {
        false
    }
}

impl<T: Element> Predicate<T> for Unique {
    const MODE: u32 = MODE_UNIQUE;
    #[inline(always)]
    fn select(_: T, _: &Bound<T>) -> bool {
        false
    }
}

/// The built-in predicate: `x` against the launch's [`Bound`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Bounds;

impl<T: Ordered> Predicate<T> for Bounds {
    #[inline(always)]
    fn select(x: T, b: &Bound<T>) -> bool {
        let lo = match b.mode & 3 {
            LO_INCL => b.lo.le(x),
            LO_EXCL => b.lo.lt(x),
            _ => true,
        };
        let hi = match b.mode & (3 << 2) {
            HI_INCL => x.le(b.hi),
            HI_EXCL => x.lt(b.hi),
            _ => true,
        };
        (lo && hi) != (b.mode & NEGATE != 0)
    }
}
