//! Which bin a sample falls in: even bins over `[lo, hi)` or bins between sorted edges. Every
//! rule is exact integer arithmetic or IEEE operations in a fixed order (no contraction), so a
//! sample's bin is the same on every GPU and the simulator.

use crate::half::{Bf16, F16, HalfFloat};
use crate::select::predicate::Ordered;

/// "No bin": the sample is outside the range, or a NaN.
pub const NO_BIN: u32 = u32::MAX;

/// A sample type of the histograms.
pub trait Sample: Ordered {
    /// What [`Sample::even_bin`] takes besides the sample, computed once a call by the host:
    /// `scale = bins / (hi - lo)` in f64 (the range exact for integers, `hi - lo` in f64 for
    /// floats; not finite or 0 when the range is wider than f64's largest, which the host
    /// refuses), and for 32-bit integers with fewer bins than values `mul = ceil(2^64 * bins
    /// / (hi - lo))` (else 0).
    fn even_rule(lo: Self, hi: Self, bins: u32) -> (f64, u64);

    /// The bin of `x` among `bins` even bins over `[lo, hi)` (`lo < hi`, `bins >= 1`), or
    /// [`NO_BIN`] outside it (NaN included). Integers: `(x - lo) * bins / (hi - lo)`, exact.
    /// Floats: `(x - lo) * scale` in f64, truncated, at most `bins - 1` (a sample just below
    /// `hi` may round up to `bins`). `(scale, mul)` from [`Sample::even_rule`].
    fn even_bin(x: Self, lo: Self, hi: Self, bins: u32, scale: f64, mul: u64) -> u32;

    /// Whether [`Sample::even_bins4`] is its own (f32): the others count a sample at a time
    /// (their four bins at once measured slower, u32).
    const BINS4: bool = false;

    /// [`Sample::even_bin`] of four samples (a 16-byte vector of 4-byte samples): f32 takes
    /// the rare exact step once for the four, not a branch a sample.
    #[inline(always)]
    fn even_bins4(x: [Self; 4], lo: Self, hi: Self, bins: u32, scale: f64, mul: u64) -> [u32; 4] {
        x.map(|v| Self::even_bin(v, lo, hi, bins, scale, mul))
    }

    /// The rule of [`Sample::cell`] over `[lo, hi]` in `cells` cells (a power of two, at least
    /// 2), computed once a block.
    fn cell_rule(lo: Self, hi: Self, cells: u32) -> u64;

    /// A cell of `x` (below `cells`), nondecreasing in `x`: the edges' table
    /// ([`edge_range`]) needs only that order, so any such map gives the exact bins; an even
    /// one keeps each cell's edges few.
    fn cell(x: Self, lo: Self, rule: u64, cells: u32) -> u32;
}

macro_rules! sample_int {
    ($($t:ty => $w:ty, $wide:ty;)*) => {$(
        impl Sample for $t {
            #[inline(always)]
            fn even_rule(lo: Self, hi: Self, bins: u32) -> (f64, u64) {
                let range = (hi as $w).wrapping_sub(lo as $w);
                let mul = if size_of::<$t>() == 4 && (bins as $w) < range {
                    // Below 2^64: bins < range.
                    ((bins as u128) << 64).div_ceil(range as u128) as u64
                } else {
                    0
                };
                (bins as f64 / range as f64, mul)
            }

            #[inline(always)]
            fn even_bin(x: Self, lo: Self, hi: Self, bins: u32, scale: f64, mul: u64) -> u32 {
                if x < lo || x >= hi {
                    return NO_BIN;
                }
                // Differences as unsigned: exact for any lo < hi of the type.
                let d = (x as $w).wrapping_sub(lo as $w);
                if size_of::<$t>() == 4 && mul != 0 {
                    // floor(d * mul / 2^64) is floor(d * bins / range) exactly: the error of
                    // mul, below d / 2^64 < 1 / range, never reaches the next integer. Two
                    // 32x32-bit products.
                    let d = d as u64;
                    let hi = d * (mul >> 32) + ((d * (mul & 0xffff_ffff)) >> 32);
                    return (hi >> 32) as u32;
                }
                let range = (hi as $w).wrapping_sub(lo as $w) as $wide;
                // floor(d * bins / range) without a (slow, emulated) wide division: the f64
                // estimate is within one of it (relative error ~2^-51 of a value below 2^31),
                // and one exact integer step corrects it.
                let q = ((d as f64 * scale) as u32).min(bins - 1);
                let p = d as $wide * bins as $wide;
                if (q as $wide + 1) * range <= p {
                    q + 1
                } else if q as $wide * range > p {
                    q - 1
                } else {
                    q
                }
            }

            #[inline(always)]
            fn cell_rule(lo: Self, hi: Self, cells: u32) -> u64 {
                // The least shift that maps the range below `cells`: cells of a power of two
                // of values (at least half of them used).
                let range = (hi as $w).wrapping_sub(lo as $w);
                (<$w>::BITS - range.leading_zeros()).saturating_sub(cells.trailing_zeros()) as u64
            }

            #[inline(always)]
            fn cell(x: Self, lo: Self, rule: u64, cells: u32) -> u32 {
                // (rule < BITS: cells >= 2.) Clamped: an edge out of order may lie past `hi`.
                ((x as $w).wrapping_sub(lo as $w) >> rule as u32).min(cells as $w - 1) as u32
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

/// Bins up to which even bins of f32 samples are first tried in f32.
pub const F32_BINS: u32 = 1 << 16;

macro_rules! sample_float {
    ($($t:ty => $wide:expr, $f32:expr, $narrow:expr;)*) => {$(
        impl Sample for $t {
            #[inline(always)]
            fn even_rule(lo: Self, hi: Self, bins: u32) -> (f64, u64) {
                (bins as f64 / ($wide(hi) - $wide(lo)), 0)
            }

            #[inline(always)]
            fn even_bin(x: Self, lo: Self, hi: Self, bins: u32, scale: f64, _: u64) -> u32 {
                if !(lo.le(x) && x.lt(hi)) {
                    return NO_BIN;
                }
                if let Some(f) = $f32 {
                    if bins <= F32_BINS {
                        // The same bin in f32 arithmetic, unless the value lands within `d`
                        // of an integer: its error (three roundings, under 3.01 * 2^-24 of a
                        // value below bins) is under d = bins * 2^-21, so away from the
                        // integers both truncate alike. Near them, f64 decides. The nearest
                        // integer by adding 2^23 (no conversion instruction: they run at a
                        // quarter of the rate of adds).
                        const MAGIC: f32 = (1u32 << 23) as f32;
                        let v = (f(x) - f(lo)) * scale as f32;
                        let w = v + MAGIC;
                        let diff = v - (w - MAGIC);
                        let d = bins as f32 * (1.0 / (1u32 << 21) as f32);
                        if diff.abs() >= d {
                            // floor(v): the nearest integer, less one when v is below it.
                            let q = (w.to_bits().wrapping_sub(MAGIC.to_bits()) as i32
                                + ((diff.to_bits() as i32) >> 31)) as u32;
                            return if q < bins { q } else { bins - 1 };
                        }
                    }
                }
                let b = (($wide(x) - $wide(lo)) * scale) as u32;
                if b < bins { b } else { bins - 1 }
            }

            const BINS4: bool = $f32.is_some();

            #[inline(always)]
            fn even_bins4(x: [Self; 4], lo: Self, hi: Self, bins: u32, scale: f64, mul: u64) -> [u32; 4] {
                let exact = |v: Self| Self::even_bin(v, lo, hi, bins, scale, mul);
                let Some(f) = $f32 else { return x.map(exact) };
                if bins > F32_BINS {
                    return x.map(exact);
                }
                // even_bin's f32 step without its branches (selects), and one branch for the
                // four when a sample in range lands near an integer: even_bin decides them.
                const MAGIC: f32 = (1u32 << 23) as f32;
                let d = bins as f32 * (1.0 / (1u32 << 21) as f32);
                let (mut out, mut near) = ([NO_BIN; 4], false);
                for j in 0..4 {
                    let inside = lo.le(x[j]) & x[j].lt(hi);
                    let v = (f(x[j]) - f(lo)) * scale as f32;
                    let w = v + MAGIC;
                    let diff = v - (w - MAGIC);
                    let q = (w.to_bits().wrapping_sub(MAGIC.to_bits()) as i32
                        + ((diff.to_bits() as i32) >> 31)) as u32;
                    // (Not `<`: an overflow in f32 leaves diff NaN, and f64 decides.)
                    let far = diff.abs() >= d;
                    near |= inside & !far;
                    out[j] = if !inside {
                        NO_BIN
                    } else if q < bins {
                        q
                    } else {
                        bins - 1
                    };
                }
                if near { x.map(exact) } else { out }
            }

            #[inline(always)]
            fn cell_rule(lo: Self, hi: Self, cells: u32) -> u64 {
                match $narrow {
                    Some(f) => (cells as f32 / (f(hi) - f(lo))).to_bits() as u64,
                    None => (cells as f64 / ($wide(hi) - $wide(lo))).to_bits(),
                }
            }

            #[inline(always)]
            fn cell(x: Self, lo: Self, rule: u64, cells: u32) -> u32 {
                // IEEE subtraction, product and truncation are each nondecreasing in `x`
                // (a range too wide for the type scales by 0: one cell, a full search).
                let c = match $narrow {
                    Some(f) => ((f(x) - f(lo)) * f32::from_bits(rule as u32)) as u32,
                    None => (($wide(x) - $wide(lo)) * f64::from_bits(rule)) as u32,
                };
                c.min(cells - 1)
            }
        }
    )*};
}
// (sample, its value in f64, its even bins' f32 step, its cells' f32 value)
sample_float! {
    f32 => |v: f32| v as f64, Some(|v: f32| v), Some(|v: f32| v);
    f64 => |v: f64| v, None::<fn(f64) -> f32>, None::<fn(f64) -> f32>;
    // The 16-bit types: the f64 rule alone (eight samples a vector make the kernel large; the
    // f32 path's copy would double it, past the embedded PTX's budget).
    F16 => |v: F16| v.widen() as f64, None::<fn(F16) -> f32>, Some(|v: F16| v.widen());
    Bf16 => |v: Bf16| v.widen() as f64, None::<fn(Bf16) -> f32>, Some(|v: Bf16| v.widen());
}

/// The bin of `x` between `edges` (`bins + 1` ascending values, read by `edge(i)`): the `b`
/// with `edges[b] <= x < edges[b + 1]`, or [`NO_BIN`] (below the first, at or above the last,
/// NaN). A binary search with IEEE `<`, `bins` at most 2^31.
#[inline(always)]
pub fn edge_bin<T: Ordered>(x: T, bins: u32, edge: impl Fn(u32) -> T) -> u32 {
    if !(edge(0).le(x) && x.lt(edge(bins))) {
        return NO_BIN;
    }
    edge_search(x, 0, bins, edge)
}

/// The `b` in `lo..hi` with `edges[b] <= x < edges[b + 1]`, given `edges[lo] <= x <
/// edges[hi]` (`lo < hi`): a binary search.
#[inline(always)]
pub fn edge_search<T: Ordered>(x: T, mut lo: u32, mut hi: u32, edge: impl Fn(u32) -> T) -> u32 {
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

/// The first and last bin (`lo..=hi`) a sample of cell `c` may fall in, from the edges' table
/// entry `tab[c]` (`L(c) | L(c + 1) << 16`, `L(c)` the edges `1..bins` whose cell is below `c`):
/// an edge of a lower cell lies below the sample and one of a higher cell above it, as the
/// cells are in the samples' order, so its bin is `L(c)` plus the edges of its own cell at or
/// below it. (Out of order edges give some range inside `0..bins`.)
#[inline(always)]
pub fn edge_range(entry: u32) -> (u32, u32) {
    let lo = entry & 0xffff;
    (lo, (entry >> 16).max(lo))
}

/// `L(c)` of [`edge_range`]: how many of the edges `1..bins` (`edge(b)`) have a cell below `c`
/// (`cell(x)`: [`Sample::cell`]), by a binary search (ascending edges: ascending cells).
#[inline(always)]
pub fn edges_below<T: Ordered>(
    c: u32,
    bins: u32,
    edge: impl Fn(u32) -> T,
    cell: impl Fn(T) -> u32,
) -> u32 {
    let (mut a, mut b) = (1u32, bins);
    while a < b {
        let m = a + (b - a) / 2;
        if cell(edge(m)) < c {
            a = m + 1;
        } else {
            b = m;
        }
    }
    a - 1
}

#[cfg(test)]
mod tests {
    use super::*;
    extern crate std;
    use std::vec::Vec;

    /// A xorshift64 stream from `seed` (the tests' random inputs, the same on every run).
    fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
        move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        }
    }

    #[test]
    fn even_bins_of_integers_are_exact_at_the_ends() {
        fn bin<T: Sample + Copy>(x: T, lo: T, hi: T, bins: u32) -> u32 {
            let (scale, mul) = T::even_rule(lo, hi, bins);
            T::even_bin(x, lo, hi, bins, scale, mul)
        }
        assert_eq!(bin(i32::MIN, i32::MIN, i32::MAX, 7), 0);
        assert_eq!(bin(i32::MAX - 1, i32::MIN, i32::MAX, 7), 6);
        assert_eq!(bin(i32::MAX, i32::MIN, i32::MAX, 7), NO_BIN);
        assert_eq!(bin(u64::MAX - 1, 0, u64::MAX, 1 << 20), (1 << 20) - 1);
        assert_eq!(bin(u32::MAX - 1, 0, u32::MAX, 1 << 30), (1 << 30) - 1);
        assert_eq!(bin(5u32, 0, 10, 10), 5);
        assert_eq!(bin(4u32, 5, 10, 10), NO_BIN);
    }

    /// The f64 estimate and its one-step correction give the exact `floor(d * bins / range)`
    /// at and around every bin edge, for ranges and bin counts where the estimate is off by one.
    #[test]
    fn even_bins_of_integers_match_exact_division() {
        fn exact(d: u128, bins: u32, range: u128) -> u32 {
            (d * bins as u128 / range) as u32
        }
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15u64);
        for _ in 0..2000 {
            let lo = next() as u32 >> (next() % 32);
            let hi = lo
                .saturating_add(1 + (next() as u32 >> (next() % 32)))
                .max(lo + 1);
            let range = (hi - lo) as u128;
            let bins = 1 + (next() as u32 >> (1 + next() % 31));
            let (s, m) = u32::even_rule(lo, hi, bins);
            // Every edge's first sample, and the one before it.
            for b in [0u32, 1, bins / 3, bins / 2, bins - 1].map(|b| b.min(bins - 1)) {
                let first = (b as u128 * range).div_ceil(bins as u128);
                for d in [first.saturating_sub(1), first, first + 1] {
                    if d < range {
                        let x = lo + d as u32;
                        assert_eq!(
                            u32::even_bin(x, lo, hi, bins, s, m),
                            exact(d, bins, range),
                            "x {x} lo {lo} hi {hi} bins {bins}"
                        );
                    }
                }
            }
            let lo = next();
            let hi = lo.saturating_add(1 + (next() >> (next() % 64))).max(lo + 1);
            let range = (hi - lo) as u128;
            let (s, m) = u64::even_rule(lo, hi, bins);
            for b in [0u32, 1, bins / 2, bins - 1] {
                let first = (b as u128 * range).div_ceil(bins as u128);
                for d in [first.saturating_sub(1), first, first + 1] {
                    if d < range {
                        let x = lo + d as u64;
                        assert_eq!(
                            u64::even_bin(x, lo, hi, bins, s, m),
                            exact(d, bins, range),
                            "x {x} lo {lo} hi {hi} bins {bins}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn even_bins_of_floats_clamp_and_drop_nan() {
        let (scale, _) = f32::even_rule(0.0, 1.0, 3);
        assert_eq!(f32::even_bin(f32::NAN, 0.0, 1.0, 3, scale, 0), NO_BIN);
        assert_eq!(f32::even_bin(1.0, 0.0, 1.0, 3, scale, 0), NO_BIN);
        assert_eq!(
            f32::even_bin(1.0 - f32::EPSILON / 2.0, 0.0, 1.0, 3, scale, 0),
            2
        );
        assert_eq!(f32::even_bin(-0.0, 0.0, 1.0, 3, scale, 0), 0);
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

    /// The edges' table (`edges_below`, `edge_range`, `edge_search`) finds the searched bin of
    /// every sample, for even, clustered, repeated and extreme edges and every cell count.
    #[test]
    fn edge_table_bins_are_the_searched_ones() {
        fn check<T: Sample + core::fmt::Debug>(edges: &[T], samples: &[T]) {
            let bins = edges.len() as u32 - 1;
            let e = |i: u32| edges[i as usize];
            for cells in [2u32, 4, 64, 4096] {
                let rule = T::cell_rule(edges[0], edges[bins as usize], cells);
                let cell = |x| T::cell(x, edges[0], rule, cells);
                let below = |c| edges_below(c, bins, e, cell);
                for &x in samples {
                    let want = edge_bin(x, bins, e);
                    if want == NO_BIN {
                        continue;
                    }
                    let c = cell(x);
                    assert!(c < cells);
                    let (lo, hi) = edge_range(below(c) | below(c + 1) << 16);
                    assert!(lo <= want && want <= hi, "{x:?} in {edges:?} / {cells}");
                    assert_eq!(edge_search(x, lo, hi + 1, e), want, "{x:?} / {cells}");
                }
            }
        }
        let mut next = xorshift(0x2545_f491_4f6c_dd1du64);
        for round in 0..200 {
            let bins = 1 + (next() % 300) as usize;
            // Even, clustered at the low end, or with repeats.
            let mut u: Vec<u32> = (0..=bins)
                .map(|i| match round % 3 {
                    0 => (i as u64 * (u32::MAX as u64) / bins as u64) as u32,
                    1 => (next() as u32) >> (next() % 32),
                    _ => (next() % 8) as u32 * 1000,
                })
                .collect();
            u.sort();
            let mut xs: Vec<u32> = (0..500).map(|_| next() as u32 >> (next() % 32)).collect();
            xs.extend(
                u.iter()
                    .flat_map(|&v| [v.wrapping_sub(1), v, v.wrapping_add(1)]),
            );
            check(&u, &xs);
            let i: Vec<i32> = u.iter().map(|&v| (v ^ 0x8000_0000) as i32).collect();
            let xi: Vec<i32> = xs.iter().map(|&v| (v ^ 0x8000_0000) as i32).collect();
            check(&i, &xi);
            let w: Vec<u64> = u.iter().map(|&v| (v as u64) << 31).collect();
            let xw: Vec<u64> = xs.iter().map(|&v| (v as u64) << 31).collect();
            check(&w, &xw);
            let f = |v: u32| (v as f32 / u32::MAX as f32 - 0.5) * 3e38;
            let mut fe: Vec<f32> = u.iter().map(|&v| f(v)).collect();
            fe[0] = if round % 5 == 0 { f32::MIN } else { fe[0] };
            fe.sort_by(|a, b| a.partial_cmp(b).unwrap());
            let mut fx: Vec<f32> = xs.iter().map(|&v| f(v)).collect();
            fx.extend(fe.iter().flat_map(|&v| [v.next_down(), v, v.next_up()]));
            fx.extend([0.0, -0.0, f32::NAN, f32::INFINITY, f32::MAX]);
            check(&fe, &fx);
            let de: Vec<f64> = fe.iter().map(|&v| v as f64 * 1e-300).collect();
            let dx: Vec<f64> = fx.iter().map(|&v| v as f64 * 1e-300).collect();
            check(&de, &dx);
        }
    }

    /// Even bins of f32 found in f32 (away from the integers) are the f64 rule's, on and
    /// beside every bin edge of ranges across zero, tiny, huge and uneven.
    #[test]
    fn f32_bins_are_the_f64_rule() {
        for (lo, hi, bins) in [
            (-1.0f32, 1.0, 4096u32),
            (0.1, 0.7, 1000),
            (-3.0e38, 3.0e38, 256),
            (1.0, 1.000_001, 33),
            (-1e-40, 1e-40, 7),
            (0.0, 10.0, 10),
            (-7.5, 1e-3, F32_BINS),
        ] {
            let (scale, _) = f32::even_rule(lo, hi, bins);
            let rule = |x: f32| {
                if !(lo <= x && x < hi) {
                    return NO_BIN;
                }
                (((x as f64 - lo as f64) * scale) as u32).min(bins - 1)
            };
            let w = (hi as f64 - lo as f64) / bins as f64;
            for b in 0..=bins {
                let mut x = (lo as f64 + b as f64 * w) as f32;
                for _ in 0..4 {
                    x = x.next_down();
                }
                for _ in 0..9 {
                    assert_eq!(
                        f32::even_bin(x, lo, hi, bins, scale, 0),
                        rule(x),
                        "{x} in [{lo}, {hi}) / {bins}"
                    );
                    // Four at once, beside samples far from any edge, NaN and out of range.
                    let mid = (lo as f64 + (b as f64 + 0.5).min(bins as f64 - 0.5) * w) as f32;
                    for four in [[x, mid, f32::NAN, hi], [mid, mid, mid, x], [lo, x, -x, mid]] {
                        assert_eq!(
                            f32::even_bins4(four, lo, hi, bins, scale, 0),
                            four.map(rule),
                            "{four:?} in [{lo}, {hi}) / {bins}"
                        );
                    }
                    x = x.next_up();
                }
            }
        }
    }
}
