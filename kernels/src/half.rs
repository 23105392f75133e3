//! 16-bit floats: IEEE binary16 ([`F16`]) and bfloat16 ([`Bf16`]).
//!
//! On the host with the `half` feature (the library's `f16` feature turns it on) these are the
//! `half` crate's `f16` and `bf16`, so the simulator and the host API share one type; on the GPU,
//! and on the host without the feature, they are this module's own `#[repr(transparent)]`
//! `u16`s. Either way every operation here goes through the same integer conversions below, never through
//! `half`'s arithmetic or a hardware conversion, so the GPU and the simulator compute identical
//! bits. The conversions are exact where exactness is possible:
//! - to f32: exact for every value (subnormals normalised, ±inf kept, NaN payloads kept with
//!   the quiet bit set, as `half` and the hardware do); bf16 is a 16-bit shift;
//! - from f32: round to nearest, ties to even; overflow gives ±inf, tiny values round to
//!   (signed) zero or a subnormal; NaN stays NaN (quiet).
//!
//! They compile to a handful of integer instructions (`shl`, `and`, `clz`, `selp`): no
//! `cvt.f32.f16`, so no reliance on the PTX conversion's NaN canonicalisation. The exception
//! is [`HalfFloat::widen`]/[`HalfFloat::narrow`], which the scans and the f32-accumulated sum
//! use: one `cvt` each for f16 on the GPU (the same value for every number; NaN stays NaN,
//! payload not kept), because the integer f16 conversions made the scan's tile loops too
//! large to unroll and the sum ALU-bound.
//!
//! Reductions: min/max/argmin/argmax work in the element type with the library's rules (NaN
//! wins, `-0.0 < +0.0`); the sum accumulates in f32 ([`SumF32`]): each element converts
//! exactly to f32, every addition is an f32 addition, and the result is the f32 (a sum beyond
//! the 16-bit type's range, 65504 for f16, is the finite f32, not inf).

use crate::gpu::ShflValue;
use crate::ops::{Element, Num, ReduceOp};

#[cfg(all(feature = "half", not(target_arch = "nvptx64")))]
pub use ::half::{bf16 as Bf16, f16 as F16};

// The same condition negated, at each of its uses below: own types on the GPU, and on
// the host without the `half` feature.
#[cfg(not(all(feature = "half", not(target_arch = "nvptx64"))))]
mod device {
    /// IEEE 754 binary16 (the host's `half::f16`).
    #[derive(Clone, Copy, Debug)]
    #[repr(transparent)]
    pub struct F16(u16);
    /// bfloat16 (the host's `half::bf16`).
    #[derive(Clone, Copy, Debug)]
    #[repr(transparent)]
    pub struct Bf16(u16);
    impl F16 {
        #[inline(always)]
        pub const fn from_bits(b: u16) -> Self {
            Self(b)
        }
        #[inline(always)]
        pub const fn to_bits(self) -> u16 {
            self.0
        }
    }
    impl Bf16 {
        #[inline(always)]
        pub const fn from_bits(b: u16) -> Self {
            Self(b)
        }
        #[inline(always)]
        pub const fn to_bits(self) -> u16 {
            self.0
        }
    }
}
#[cfg(not(all(feature = "half", not(target_arch = "nvptx64"))))]
pub use device::{Bf16, F16};

// The exact integer conversions live with the hardware layer (the simulator's `cvt` is built
// on them); re-exported here, where the 16-bit types use them.
pub use crate::gpu::convert::{
    bf16_bits_to_f32, f16_bits_to_f32, f32_to_bf16_bits, f32_to_f16_bits,
};

/// A key whose unsigned order is the float order of the (non-NaN) bits, with `-0.0 < +0.0`.
#[inline(always)]
const fn order_key(b: u16) -> u16 {
    if b & 0x8000 != 0 { !b } else { b | 0x8000 }
}

/// A 16-bit float element: its bits and exact conversions.
pub trait HalfFloat: Num {
    /// The bits of +inf.
    const INF_BITS: u16;
    fn bits(self) -> u16;
    fn from_bits_(b: u16) -> Self;
    /// Exact.
    fn to_f32_(self) -> f32;
    /// Round to nearest even.
    fn from_f32_(x: f32) -> Self;
    /// [`HalfFloat::to_f32_`] by the cheapest route: f16 takes one `cvt.f32.f16` on the GPU
    /// (the integer conversion on the simulator), bf16 its shift. The same value for every
    /// number; a NaN stays NaN but may change payload on the GPU. For the scans, whose loops
    /// must stay small enough to unroll.
    fn widen(self) -> f32;
    /// [`HalfFloat::from_f32_`] by the cheapest route (f16: `cvt.rn.f16.f32` on the GPU), with
    /// the same caveat: the same bits for every number, NaN for NaN.
    fn narrow(x: f32) -> Self;
}

macro_rules! half_float {
    ($t:ty, $inf:expr, $to:ident, $from:ident, $widen:path, $narrow:path) => {
        impl HalfFloat for $t {
            const INF_BITS: u16 = $inf;
            #[inline(always)]
            fn bits(self) -> u16 {
                self.to_bits()
            }
            #[inline(always)]
            fn from_bits_(b: u16) -> Self {
                <$t>::from_bits(b)
            }
            #[inline(always)]
            fn to_f32_(self) -> f32 {
                $to(self.to_bits())
            }
            #[inline(always)]
            fn from_f32_(x: f32) -> Self {
                <$t>::from_bits($from(x))
            }
            #[inline(always)]
            fn widen(self) -> f32 {
                $widen(self.to_bits())
            }
            #[inline(always)]
            fn narrow(x: f32) -> Self {
                <$t>::from_bits($narrow(x))
            }
        }

        impl ShflValue for $t {
            const WORDS: usize = 1;
            #[inline(always)]
            fn to_words(self) -> [u32; 4] {
                [self.to_bits() as u32, 0, 0, 0]
            }
            #[inline(always)]
            fn from_words(w: [u32; 4]) -> Self {
                <$t>::from_bits(w[0] as u16)
            }
            /// A NaN becomes +inf's bits with the top mantissa bit: f16 `0x7e00`, bf16 `0x7fc0`.
            #[inline(always)]
            fn canonical(self) -> Self {
                const INF: u16 = $inf;
                if self.to_bits() & 0x7fff > INF {
                    <$t>::from_bits(INF | ((INF >> 1) & !INF))
                } else {
                    self
                }
            }
        }

        impl Element for $t {
            const PER_VEC: usize = 8;
            /// The first four elements of the load (the reductions use [`Element::unpack8`]).
            #[inline(always)]
            fn unpack(w: [u32; 4]) -> [Self; 4] {
                let e = Self::unpack8(w);
                [e[0], e[1], e[2], e[3]]
            }
            #[inline(always)]
            fn unpack8(w: [u32; 4]) -> [Self; 8] {
                let h = |x: u32| <$t>::from_bits(x as u16);
                [
                    h(w[0]),
                    h(w[0] >> 16),
                    h(w[1]),
                    h(w[1] >> 16),
                    h(w[2]),
                    h(w[2] >> 16),
                    h(w[3]),
                    h(w[3] >> 16),
                ]
            }
            /// Not used for 16-bit types (no scan writes them yet).
            #[inline(always)]
            fn pack(e: [Self; 4]) -> [u32; 4] {
                let b = e.map(|x| x.to_bits() as u32);
                [b[0] | (b[1] << 16), b[2] | (b[3] << 16), 0, 0]
            }
        }

        impl Num for $t {
            const ZERO: Self = <$t>::from_bits(0);
            const ONE: Self = <$t>::from_bits($from(1.0));
            const MIN_ID: Self = <$t>::from_bits($inf);
            const MAX_ID: Self = <$t>::from_bits($inf | 0x8000);
            /// Rounded once from the exact f32 sum (f32 has more than twice the bits).
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                Self::from_f32_(self.to_f32_() + o.to_f32_())
            }
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                Self::from_f32_(self.to_f32_() * o.to_f32_())
            }
            #[inline(always)]
            fn min2(self, o: Self) -> Self {
                if self.below(o) { o } else { self }
            }
            #[inline(always)]
            fn max2(self, o: Self) -> Self {
                if self.above(o) { o } else { self }
            }
            #[inline(always)]
            fn is_nan_(self) -> bool {
                self.to_bits() & 0x7fff > $inf
            }
            /// Integer compare of order-preserving keys (sign-magnitude to biased), no
            /// conversion; `-0.0 < +0.0`; NaN compares false.
            #[inline(always)]
            fn lt(self, o: Self) -> bool {
                !self.is_nan_()
                    && !o.is_nan_()
                    && order_key(self.to_bits()) < order_key(o.to_bits())
            }
            // Halves compare as integer keys: NaN the top (max) or bottom (min) key.
            #[inline(always)]
            fn above(self, o: Self) -> bool {
                let key = |x: Self| {
                    if x.is_nan_() {
                        u32::MAX
                    } else {
                        order_key(x.to_bits()) as u32
                    }
                };
                key(o) > key(self)
            }
            #[inline(always)]
            fn below(self, o: Self) -> bool {
                let key = |x: Self| {
                    if x.is_nan_() {
                        0
                    } else {
                        order_key(x.to_bits()) as u32
                    }
                };
                key(o) < key(self)
            }
            #[inline(always)]
            fn same_rank(self, o: Self) -> bool {
                (self.to_bits() == o.to_bits()) | (self.is_nan_() & o.is_nan_())
            }
        }
    };
}
half_float!(
    F16,
    0x7c00,
    f16_bits_to_f32,
    f32_to_f16_bits,
    crate::gpu::cvt_f32_f16,
    crate::gpu::cvt_rn_f16_f32
);
// bf16's integer conversions are already a shift and a rounding add.
half_float!(
    Bf16,
    0x7f80,
    bf16_bits_to_f32,
    f32_to_bf16_bits,
    bf16_bits_to_f32,
    f32_to_bf16_bits
);

#[cfg(not(all(feature = "half", not(target_arch = "nvptx64"))))]
impl PartialEq for F16 {
    /// IEEE equality, as `half::f16`'s.
    fn eq(&self, o: &Self) -> bool {
        self.to_f32_() == o.to_f32_()
    }
}
#[cfg(not(all(feature = "half", not(target_arch = "nvptx64"))))]
impl PartialEq for Bf16 {
    /// IEEE equality, as `half::bf16`'s.
    fn eq(&self, o: &Self) -> bool {
        self.to_f32_() == o.to_f32_()
    }
}

/// Sum of 16-bit floats accumulated in f32: every element converts exactly to f32, every
/// addition (in the threads and in the trees) is an f32 addition, and the result is that f32.
/// NaN propagates, `+inf + -inf` is NaN, and a sum past the 16-bit type's range (65504 for
/// f16) is the finite f32, not inf.
#[derive(Clone, Copy, Debug, Default)]
pub struct SumF32;

impl<T: HalfFloat> ReduceOp<T> for SumF32 {
    type Acc = f32;
    #[inline(always)]
    fn identity() -> f32 {
        0.0
    }
    /// The cheap route ([`HalfFloat::widen`]): the integer conversion made the f16 sum
    /// ALU-bound, behind CUB where bf16 with its shift was not (CHANGELOG.md, issue 15).
    /// Every number converts to the same f32 either way; only a NaN's payload may differ, and
    /// a NaN result is written as the canonical NaN (`ShflValue::canonical`).
    #[inline(always)]
    fn lift(x: T, _: u64) -> f32 {
        x.widen()
    }
    #[inline(always)]
    fn combine(a: f32, b: f32) -> f32 {
        a + b
    }
}

// The references are the `half` crate's conversions.
#[cfg(all(test, feature = "half"))]
mod tests {
    use super::*;

    #[test]
    fn f16_to_f32_is_exact_for_every_value() {
        for b in 0..=u16::MAX {
            let want = ::half::f16::from_bits(b).to_f32();
            let got = f16_bits_to_f32(b);
            assert_eq!(got.to_bits(), want.to_bits(), "{b:#06x}");
        }
    }

    #[test]
    fn bf16_to_f32_is_exact_for_every_value() {
        for b in 0..=u16::MAX {
            let want = ::half::bf16::from_bits(b).to_f32();
            if want.is_nan() {
                assert!(bf16_bits_to_f32(b).is_nan());
            } else {
                assert_eq!(bf16_bits_to_f32(b).to_bits(), want.to_bits(), "{b:#06x}");
            }
        }
    }

    #[test]
    fn f32_to_half_rounds_to_nearest_even() {
        // Every f32 whose upper bits sweep all exponents, with low bits that hit ties, just
        // below and just above them.
        let lows = [
            0u32, 1, 0xfff, 0x1000, 0x1001, 0x1fff, 0x7fff, 0x8000, 0x8001, 0xffff,
        ];
        for hi in 0..=u16::MAX as u32 {
            for &lo in &lows {
                let x = f32::from_bits((hi << 16) | lo);
                let (h, b) = (::half::f16::from_f32(x), ::half::bf16::from_f32(x));
                if x.is_nan() {
                    assert!(F16::from_bits(f32_to_f16_bits(x)).is_nan());
                    assert!(Bf16::from_bits(f32_to_bf16_bits(x)).is_nan());
                    continue;
                }
                assert_eq!(f32_to_f16_bits(x), h.to_bits(), "f16 of {x:e}");
                assert_eq!(f32_to_bf16_bits(x), b.to_bits(), "bf16 of {x:e}");
            }
        }
    }

    #[test]
    fn num_rules() {
        let h = |x: f32| F16::from_f32(x);
        assert!(h(-0.0).lt(h(0.0)) && !h(0.0).lt(h(-0.0)));
        assert!(F16::NAN.is_nan_() && !F16::INFINITY.is_nan_());
        assert_eq!(F16::MIN_ID, F16::INFINITY);
        assert_eq!(Bf16::MAX_ID, Bf16::NEG_INFINITY);
        assert!(h(1.0).min2(F16::NAN).is_nan_());
        assert_eq!(h(60000.0).add(h(60000.0)), F16::INFINITY);
        assert_eq!(
            <SumF32 as ReduceOp<F16>>::lift(h(60000.0), 0) * 2.0,
            120000.0
        );
        assert_eq!(ArgWords::round_trip(h(-2.5)), h(-2.5).to_bits());
    }

    struct ArgWords;
    impl ArgWords {
        fn round_trip(x: F16) -> u16 {
            let a = crate::ops::ArgAcc {
                value: x,
                index: 0x1_2345_6789,
            };
            let b = crate::ops::ArgAcc::<F16>::from_words(a.to_words());
            assert_eq!(b.index, a.index);
            b.value.to_bits()
        }
    }
}
