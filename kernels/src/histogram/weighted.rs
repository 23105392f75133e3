//! Weighted histograms (`bincount` with weights, `np.histogram(weights=)`): the sum of the f32
//! or f64 weights of each bin's samples, the same bits on every run, grid and GPU and on the
//! simulator, in three launches:
//!
//! 1. [`weighted_device`], pass 0: each bin's `E`, the largest exponent of its finite weights
//!    (atomic max: order-free), and its flags (a NaN, `+inf`, `-inf` weight).
//! 2. [`weighted_device`], pass 1: each finite weight cut, on its bin's grid, into three signed
//!    integer digits of at most 2^31 ([`digits`]: `w = (d0 + d1 2^-31 + d2 2^-62) 2^(E-30)`, the
//!    last digit rounded), each bin adding its digits as 64-bit integers: exact, so in any order.
//! 3. [`weight_finish_device`]: each bin's integer sum rounded once to the weight type
//!    ([`round_scaled`]); NaN where a NaN or both infinities fell, else the infinity.
//!
//! So a bin's sum is the correctly rounded sum of its weights, each first rounded to a multiple
//! of 2^-92 times its bin's largest power of two (exact for every weight within 2^69 of its
//! bin's largest in f32, 2^40 in f64): never worse than adding them in order, often far better
//! (no cancellation), and bins do not affect each other.

use super::bins::{NO_BIN, Sample, edge_bin};
use crate::gpu;
use crate::ops::Element;

/// Integer digits a weight is cut into (each at most 2^31 in magnitude).
pub const DIGITS: usize = 3;
/// Bits a digit holds below the one before it.
const DIGIT_BITS: i32 = 31;
/// Bins whose exponents and digit sums a block keeps in shared memory (28 bytes a bin, 28 KiB:
/// 8 blocks an SM); more go straight to the words in global memory with global atomics.
pub const WEIGHTED_SHARED_BINS: u32 = 1024;
/// Samples a thread loads at once.
const UNROLL: usize = 4;
/// 64-bit words of a weighted call's scratch per bin: `DIGITS` digit sums, then (all bins')
/// exponents and flags as `u32`s.
pub const WORDS_PER_BIN: usize = DIGITS + 1;
/// Flags of a bin (its `u32` word): a NaN weight, `+inf`, `-inf`.
pub const FLAG_NAN: u32 = 1;
pub const FLAG_POS_INF: u32 = 2;
pub const FLAG_NEG_INF: u32 = 4;

/// Dynamic shared memory of a weighted launch with `bins` bins (both passes): the digit sums
/// and the exponents.
pub const fn weighted_shared_bytes(bins: u32) -> u32 {
    if bins <= WEIGHTED_SHARED_BINS {
        (bins * (DIGITS as u32 * 8 + 4)).next_multiple_of(16)
    } else {
        0
    }
}

/// `2^k` for `-1022 <= k <= 1023`.
#[inline(always)]
fn pow2(k: i32) -> f64 {
    f64::from_bits(((k + 1023) as u64) << 52)
}

/// The biased f64 exponent of `|w|` as the grid sees it: 0 for NaN and the infinities (they
/// have no say), at least 1 (zero and subnormals sit on the smallest normal's grid).
#[inline(always)]
pub fn weight_exponent(w: f64) -> u32 {
    let e = ((w.to_bits() >> 52) & 0x7ff) as u32;
    if e == 0x7ff { 0 } else { e.max(1) }
}

/// The digits of finite `w` on the grid of biased exponent `e` (at least `w`'s):
/// `x = w 2^(30 - E)` (`E = e - 1023`, so `|x| < 2^31`), `d0 = trunc(x)`, `d1 = trunc((x - d0)
/// 2^31)`, `d2` the rest times 2^31 rounded to nearest, ties to even. Every step but the last is
/// exact in f64, so the digits depend on `w` and `e` alone.
#[inline(always)]
pub fn digits(w: f64, e: u32) -> [i64; DIGITS] {
    let s = 30 - (e as i32 - 1023);
    // 2^s in two steps: s runs from -993 to 1104, past one f64's exponents.
    let h = s / 2;
    let x = w * pow2(h) * pow2(s - h);
    let d0 = x as i64;
    let r = (x - d0 as f64) * pow2(DIGIT_BITS);
    let d1 = r as i64;
    // To nearest, ties to even (|y| < 2^31: 1.5 2^52 leaves no fraction bits).
    let y = (r - d1 as f64) * pow2(DIGIT_BITS);
    let magic = 1.5 * pow2(52);
    let d2 = ((y + magic) - magic) as i64;
    [d0, d1, d2]
}

/// `m 2^exp2` (`neg`: negated) rounded once to the nearest float of `mant` significand bits
/// (24: f32, 53: f64), ties to even, with subnormals from `2^min_lsb` (-149, -1074) and
/// `max_biased` the largest normal's biased exponent (254, 2046); the float's bits.
#[inline(always)]
pub fn round_scaled(
    m: u128,
    neg: bool,
    exp2: i32,
    mant: u32,
    min_lsb: i32,
    max_biased: i32,
) -> u64 {
    let sign = (neg as u64) << (mant + if mant == 24 { 7 } else { 10 });
    if m == 0 {
        return 0;
    }
    let len = 128 - m.leading_zeros() as i32;
    // The exponent of the result's last bit (before rounding).
    let lsb = (len - 1 + exp2 - (mant as i32 - 1)).max(min_lsb);
    let shift = lsb - exp2;
    let mut q = if shift <= 0 {
        m << (-shift) as u32
    } else if shift > 128 {
        0
    } else {
        let (q, rem) = if shift == 128 {
            (0, m)
        } else {
            (m >> shift as u32, m & ((1u128 << shift as u32) - 1))
        };
        let half = 1u128 << (shift - 1) as u32;
        if rem > half || (rem == half && q & 1 == 1) {
            q + 1
        } else {
            q
        }
    };
    let mut lsb = lsb;
    if q >> mant != 0 {
        // Rounding carried into a new bit: q was 2^mant (even), halve it exactly.
        q >>= 1;
        lsb += 1;
    }
    let exp_shift = mant - 1;
    if q >> exp_shift == 0 {
        // Subnormal (or zero): lsb is min_lsb, the encoding is q itself.
        return sign | q as u64;
    }
    let biased = lsb + exp_shift as i32 + if mant == 24 { 127 } else { 1023 };
    if biased > max_biased {
        return sign | ((max_biased as u64 + 1) << exp_shift);
    }
    sign | (biased as u64) << exp_shift | (q as u64 & ((1u64 << exp_shift) - 1))
}

/// The parameters of [`weighted_device`], written once.
#[macro_export]
#[doc(hidden)]
macro_rules! histogram_weighted_params {
    ($($mode:tt)*) => {
        $crate::kernel_params! { $($mode)* WeightedParams<T> {
            /// The samples, `n` of them.
            input: *const T,
            /// The weights, `n` of them: f64 when `wide` is 1, else f32.
            weights: *const u32,
            wide: u32,
            /// [`WORDS_PER_BIN`] words a bin, zeroed before pass 0: `DIGITS` digit sums a bin
            /// (bin-major), then `bins` exponents and `bins` flags (`u32`) ([`bin_words`]).
            sums: *mut u64,
            /// 0: exponents and flags; 1: digit sums (after pass 0 on the same words).
            pass: u32,
            /// `bins + 1` ascending edges, or null for even bins over `[lo, hi)`.
            edges: *const T,
            n: u64,
            bins: u32,
            /// Even bins as [`HistogramParams`](super::HistogramParams) takes them.
            lo: u64,
            hi: u64,
            scale: f64,
            mul: u64,
        } }
    };
}

crate::histogram_weighted_params!(struct
    /// The launch parameters of [`weighted_device`].
);

/// The exponent and flag words of `bins` bins, after their digit words.
#[inline(always)]
pub fn bin_words(sums: *mut u64, bins: u32) -> (*mut u32, *mut u32) {
    let exps = sums.wrapping_add(bins as usize * DIGITS) as *mut u32;
    (exps, exps.wrapping_add(bins as usize))
}

/// Weight `i` as f64 (exact from f32).
#[inline(always)]
fn weight(weights: *const u32, wide: bool, i: u64) -> f64 {
    if wide {
        unsafe { (weights as *const f64).add(i as usize).read() }
    } else {
        f32::from_bits(unsafe { weights.add(i as usize).read() }) as f64
    }
}

/// Pass 0: each bin's largest [`weight_exponent`] and its flags; pass 1: the digits of each
/// sample's weight added to its bin (see the module). Launch `super::BLOCK` threads a block,
/// any grid, [`weighted_shared_bytes`] of dynamic shared memory, pass 0 then pass 1.
///
/// # Safety
/// Pointers valid for the sizes above; `lo < hi` (even bins) or ascending edges; `bins >= 1`;
/// `n < 2^32` (the digit sums stay below 2^63).
#[inline(always)]
pub unsafe fn weighted_device<T: Element + Sample>(p: WeightedParams<T>) {
    let WeightedParams {
        input,
        weights,
        wide,
        sums,
        pass,
        edges,
        n,
        bins,
        lo,
        hi,
        scale,
        mul,
    } = p;
    let bits = |w: u64| T::from_words([w as u32, (w >> 32) as u32, 0, 0]);
    let (lo, hi) = (bits(lo), bits(hi));
    let wide = wide != 0;
    let (exps, flags) = bin_words(sums, bins);
    let shared = bins <= WEIGHTED_SHARED_BINS;
    let tid = gpu::thread_idx_x();
    let block = gpu::block_dim_x();
    let smem = gpu::dynamic_shared::<u64>();
    let nb = if shared { bins as usize } else { 0 };
    // Pass 1's digit sums (none in pass 0), then the bins' exponents (pass 0: their maxima,
    // from 0; pass 1: pass 0's, read once from global).
    let sum_words = if pass == 0 { 0 } else { nb * DIGITS };
    let (acc, ex) = unsafe {
        (
            smem.part::<u64>(0, sum_words),
            smem.part::<u32>(sum_words * 8, nb),
        )
    };
    let mut j = tid as usize;
    while j < sum_words {
        unsafe { acc.write(j, 0) };
        j += block as usize;
    }
    let mut j = tid as usize;
    while j < nb {
        let e = if pass == 0 {
            0
        } else {
            unsafe { exps.add(j).read() }
        };
        unsafe { ex.write(j, e) };
        j += block as usize;
    }
    gpu::sync_threads();
    let by_edges = !edges.is_null();
    let bin = |x: T| {
        if by_edges {
            edge_bin(x, bins, |k| unsafe { edges.add(k as usize).read() })
        } else {
            T::even_bin(x, lo, hi, bins, scale, mul)
        }
    };
    let count = |b: u32, w: f64| {
        if b == NO_BIN {
            return;
        }
        let b = b as usize;
        if pass == 0 {
            if !w.is_finite() {
                let f = if w.is_nan() {
                    FLAG_NAN
                } else if w > 0.0 {
                    FLAG_POS_INF
                } else {
                    FLAG_NEG_INF
                };
                unsafe { gpu::atomic_or_u32(flags.add(b), f) };
            } else if shared {
                unsafe { ex.max(b, weight_exponent(w)) };
            } else {
                unsafe { gpu::atomic_max_u32(exps.add(b), weight_exponent(w)) };
            }
        } else if w.is_finite() && w != 0.0 {
            let e = unsafe {
                if shared {
                    ex.read(b)
                } else {
                    exps.add(b).read()
                }
            };
            let d = digits(w, e);
            // Each digit by name (a loop over the array put it in local memory).
            let add = |k: usize, dk: i64| {
                let at = b * DIGITS + k;
                if dk == 0 {
                } else if shared {
                    unsafe { acc.add(at, dk as u64) };
                } else {
                    unsafe { gpu::atomic_add_u64(sums.add(at), dk as u64) };
                }
            };
            add(0, d[0]);
            add(1, d[1]);
            add(2, d[2]);
        }
    };
    // UNROLL samples a step, all loaded before any is counted (the memory stays busy).
    let threads = block as u64 * gpu::grid_dim_x() as u64;
    let mut i = gpu::block_idx_x() as u64 * block as u64 + tid as u64;
    while i + (UNROLL as u64 - 1) * threads < n {
        let mut xs = [lo; UNROLL];
        let mut ws = [0.0f64; UNROLL];
        for k in 0..UNROLL {
            let at = i + k as u64 * threads;
            xs[k] = unsafe { input.add(at as usize).read() };
            ws[k] = weight(weights, wide, at);
        }
        for k in 0..UNROLL {
            count(bin(xs[k]), ws[k]);
        }
        i += UNROLL as u64 * threads;
    }
    while i < n {
        count(
            bin(unsafe { input.add(i as usize).read() }),
            weight(weights, wide, i),
        );
        i += threads;
    }
    gpu::sync_threads();
    let mut j = tid as usize;
    while j < sum_words {
        let v = unsafe { acc.read(j) };
        if v != 0 {
            unsafe { gpu::atomic_add_u64(sums.add(j), v) };
        }
        j += block as usize;
    }
    if pass == 0 {
        let mut j = tid as usize;
        while j < nb {
            let e = unsafe { ex.read(j) };
            if e > 0 {
                unsafe { gpu::atomic_max_u32(exps.add(j), e) };
            }
            j += block as usize;
        }
    }
}

/// The parameters of [`weight_finish_device`].
#[macro_export]
#[doc(hidden)]
macro_rules! histogram_finish_params {
    ($($mode:tt)*) => {
        $crate::kernel_params! { $($mode)* FinishParams<> {
            /// The words of [`WeightedParams::sums`] after pass 1.
            sums: *const u64,
            bins: u32,
            /// The sums, `bins` of them: f64 when `wide` is 1, else f32.
            out: *mut u32,
            wide: u32,
        } }
    };
}

crate::histogram_finish_params!(struct
    /// The launch parameters of [`weight_finish_device`].
);

/// Each bin's sum from its digit sums, exponent and flags, rounded once to f32 or f64
/// (`wide`); a NaN is the type's canonical one. One thread a bin, any grid covering `bins`.
///
/// # Safety
/// Pointers valid for the sizes above.
#[inline(always)]
pub unsafe fn weight_finish_device(p: FinishParams) {
    let b = gpu::block_idx_x() as u64 * gpu::block_dim_x() as u64 + gpu::thread_idx_x() as u64;
    if b >= p.bins as u64 {
        return;
    }
    let b = b as usize;
    let wide = p.wide != 0;
    let (exps, flags) = bin_words(p.sums as *mut u64, p.bins);
    let f = unsafe { flags.add(b).read() };
    let (inf, nan, neg_bit) = if wide {
        (
            0x7ff0_0000_0000_0000u64,
            0x7ff8_0000_0000_0000u64,
            1u64 << 63,
        )
    } else {
        (0x7f80_0000, 0x7fff_ffff, 1 << 31)
    };
    let both = FLAG_POS_INF | FLAG_NEG_INF;
    let bits = if f & FLAG_NAN != 0 || f & both == both {
        nan
    } else if f & FLAG_POS_INF != 0 {
        inf
    } else if f & FLAG_NEG_INF != 0 {
        inf | neg_bit
    } else {
        let d = |k: usize| unsafe { p.sums.add(b * DIGITS + k).read() } as i64 as i128;
        let v = (d(0) << (2 * DIGIT_BITS)) + (d(1) << DIGIT_BITS) + d(2);
        let e = unsafe { exps.add(b).read() }.max(1) as i32 - 1023;
        // v 2^-62 is the sum in units of 2^(E-30).
        let exp2 = e - 30 - 2 * DIGIT_BITS;
        if wide {
            round_scaled(v.unsigned_abs(), v < 0, exp2, 53, -1074, 2046)
        } else {
            round_scaled(v.unsigned_abs(), v < 0, exp2, 24, -149, 254)
        }
    };
    if wide {
        unsafe { (p.out as *mut u64).add(b).write(bits) };
    } else {
        unsafe { p.out.add(b).write(bits as u32) };
    }
}

/// The finishing kernel, `histogram_weight_finish` (one for every sample type).
mod entries {
    use super::FinishParams;
    crate::histogram_finish_params!(entry #[export_name = "histogram_weight_finish"] finish =>
        (super::weight_finish_device));
}

/// The finishing kernel's simulator entry.
pub type SimFinishFn = unsafe fn(FinishParams);
/// A weighted histogram kernel's simulator entry.
pub type SimWeightedFn<T> = unsafe fn(WeightedParams<T>);

/// The finishing kernel.
#[cfg(not(target_arch = "nvptx64"))]
pub const FINISH_KERNEL: crate::Kernel<SimFinishFn> = crate::Kernel {
    name: "histogram_weight_finish",
    sim: entries::finish,
};

#[cfg(test)]
mod tests {
    use super::*;

    /// The digits rebuild the weight exactly where it lies within the grid, and the digit
    /// bound holds at both ends of the exponent range.
    #[test]
    fn digits_rebuild_the_weight() {
        for (w, top) in [
            (1.0f64, 1.0f64),
            (-3.75, 4.0),
            (1e-30, 1e30),
            (f64::MAX, f64::MAX),
            (-f64::MAX, f64::MAX),
            (5e-324, 5e-324),
            (1.5e-300, 2.0),
            (0.1f32 as f64, 7.0),
        ] {
            let e = weight_exponent(top);
            let d = digits(w, e);
            assert!(d.iter().all(|&x| x.unsigned_abs() <= 1 << 31), "{w}: {d:?}");
            // Exact rebuild: (d0 2^62 + d1 2^31 + d2) 2^(E - 92).
            let v = ((d[0] as i128) << 62) + ((d[1] as i128) << 31) + d[2] as i128;
            let got = f64::from_bits(round_scaled(
                v.unsigned_abs(),
                v < 0,
                e as i32 - 1023 - 92,
                53,
                -1074,
                2046,
            ));
            let exact_in_window = w == 0.0 || (top.abs() / w.abs()) < 2f64.powi(40);
            if exact_in_window {
                assert_eq!(got, w, "{w} on the grid of {top}: {d:?}");
            }
        }
    }

    /// `round_scaled` agrees with Rust's (correctly rounded) integer-to-float conversions.
    #[test]
    fn round_scaled_is_correctly_rounded() {
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        for _ in 0..20000 {
            let m = ((next() as u128) << 64 | next() as u128) >> (next() % 127);
            let v = m as i128;
            let (a, b) = (v.unsigned_abs(), v < 0);
            assert_eq!(
                f64::from_bits(round_scaled(a, b, 0, 53, -1074, 2046)),
                v as f64,
                "{v}"
            );
            assert_eq!(
                f32::from_bits(round_scaled(a, b, 0, 24, -149, 254) as u32),
                v as f32,
                "{v}"
            );
        }
        // Subnormals, overflow and the smallest values.
        assert_eq!(
            f64::from_bits(round_scaled(1, false, -1074, 53, -1074, 2046)),
            5e-324
        );
        assert_eq!(
            f64::from_bits(round_scaled(1, false, -1075, 53, -1074, 2046)),
            0.0
        );
        assert_eq!(
            f64::from_bits(round_scaled(3, false, -1076, 53, -1074, 2046)),
            5e-324
        );
        assert_eq!(
            f32::from_bits(round_scaled(3, true, -150, 24, -149, 254) as u32),
            -f32::from_bits(2)
        );
        assert_eq!(
            f32::from_bits(round_scaled(1, false, 128, 24, -149, 254) as u32),
            f32::INFINITY
        );
        assert_eq!(
            f32::from_bits(round_scaled(u128::MAX, false, 0, 24, -149, 254) as u32),
            u128::MAX as f32
        );
        assert_eq!(
            f64::from_bits(round_scaled(1, false, 1023, 53, -1074, 2046)),
            2f64.powi(1023)
        );
        assert_eq!(
            f64::from_bits(round_scaled(1, false, 1024, 53, -1074, 2046)),
            f64::INFINITY
        );
    }
}
