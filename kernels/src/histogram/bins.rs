//! Which bin a sample falls in: even bins over `[lo, hi)` or bins between sorted edges. Every
//! rule is exact integer arithmetic or IEEE operations in a fixed order (no contraction), so a
//! sample's bin is the same on every GPU and the simulator.

use crate::half::{Bf16, F16, HalfFloat};
use crate::select::predicate::Ordered;

/// "No bin": the sample is outside the range, or a NaN.
pub const NO_BIN: u32 = u32::MAX;

/// A sample type of the histograms.
pub trait Sample: Ordered {
    /// The bin of `x` among `bins` even bins over `[lo, hi)` (`lo < hi`, `bins >= 1`), or
    /// [`NO_BIN`] outside it (NaN included). Integers: `(x - lo) * bins / (hi - lo)`, exact.
    /// Floats: `(x - lo) * scale` in f64 (`scale = bins / (hi - lo)` in f64, from the host),
    /// truncated, at most `bins - 1` (a sample just below `hi` may round up to `bins`).
    fn even_bin(x: Self, lo: Self, hi: Self, bins: u32, scale: f64) -> u32;
}

macro_rules! sample_int {
    ($($t:ty => $w:ty, $wide:ty;)*) => {$(
        impl Sample for $t {
            #[inline(always)]
            fn even_bin(x: Self, lo: Self, hi: Self, bins: u32, _: f64) -> u32 {
                if x < lo || x >= hi {
                    return NO_BIN;
                }
                // Differences as unsigned: exact for any lo < hi of the type.
                let d = (x as $w).wrapping_sub(lo as $w) as $wide;
                let range = (hi as $w).wrapping_sub(lo as $w) as $wide;
                (d * bins as $wide / range) as u32
            }
        }
    )*};
}
sample_int! {
    i32 => u32, u64;
    u32 => u32, u64;
    i64 => u64, u128;
    u64 => u64, u128;
}

macro_rules! sample_float {
    ($($t:ty => $wide:expr;)*) => {$(
        impl Sample for $t {
            #[inline(always)]
            fn even_bin(x: Self, lo: Self, hi: Self, bins: u32, scale: f64) -> u32 {
                if !(lo.le(x) && x.lt(hi)) {
                    return NO_BIN;
                }
                let b = (($wide(x) - $wide(lo)) * scale) as u32;
                if b < bins { b } else { bins - 1 }
            }
        }
    )*};
}
sample_float! {
    f32 => |v: f32| v as f64;
    f64 => |v: f64| v;
    F16 => |v: F16| v.widen() as f64;
    Bf16 => |v: Bf16| v.widen() as f64;
}

/// The bin of `x` between `edges` (`bins + 1` ascending values, read by `edge(i)`): the `b`
/// with `edges[b] <= x < edges[b + 1]`, or [`NO_BIN`] (below the first, at or above the last,
/// NaN). A binary search with IEEE `<`, `bins` at most 2^31.
#[inline(always)]
pub fn edge_bin<T: Ordered>(x: T, bins: u32, edge: impl Fn(u32) -> T) -> u32 {
    if !(edge(0).le(x) && x.lt(edge(bins))) {
        return NO_BIN;
    }
    // Invariant: edges[lo] <= x < edges[hi].
    let (mut lo, mut hi) = (0u32, bins);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if x.lt(edge(mid)) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn even_bins_of_integers_are_exact_at_the_ends() {
        assert_eq!(i32::even_bin(i32::MIN, i32::MIN, i32::MAX, 7, 0.0), 0);
        assert_eq!(i32::even_bin(i32::MAX - 1, i32::MIN, i32::MAX, 7, 0.0), 6);
        assert_eq!(i32::even_bin(i32::MAX, i32::MIN, i32::MAX, 7, 0.0), NO_BIN);
        assert_eq!(
            u64::even_bin(u64::MAX - 1, 0, u64::MAX, 1 << 20, 0.0),
            (1 << 20) - 1
        );
        assert_eq!(u32::even_bin(5, 0, 10, 10, 0.0), 5);
        assert_eq!(u32::even_bin(4, 5, 10, 10, 0.0), NO_BIN);
    }

    #[test]
    fn even_bins_of_floats_clamp_and_drop_nan() {
        let scale = 3.0 / (1.0f64 - 0.0);
        assert_eq!(f32::even_bin(f32::NAN, 0.0, 1.0, 3, scale), NO_BIN);
        assert_eq!(f32::even_bin(1.0, 0.0, 1.0, 3, scale), NO_BIN);
        assert_eq!(
            f32::even_bin(1.0 - f32::EPSILON / 2.0, 0.0, 1.0, 3, scale),
            2
        );
        assert_eq!(f32::even_bin(-0.0, 0.0, 1.0, 3, scale), 0);
    }

    #[test]
    fn edge_bins_search_and_drop() {
        let e = [0.0f32, 1.0, 2.0, 10.0];
        let bin = |x: f32| edge_bin(x, 3, |i| e[i as usize]);
        assert_eq!(bin(-1.0), NO_BIN);
        assert_eq!(bin(0.0), 0);
        assert_eq!(bin(1.0), 1);
        assert_eq!(bin(9.99), 2);
        assert_eq!(bin(10.0), NO_BIN);
        assert_eq!(bin(f32::NAN), NO_BIN);
    }
}
