//! Element types and reduction operators, shared by the kernels, the simulator and the host.
//!
//! An operator maps each element (and its index) to an accumulator (`lift`), and combines
//! accumulators (`combine`) with an identity. `combine` must be associative and commutative
//! (as CUB's DeviceReduce requires): the device-wide reduction spreads elements over threads
//! in a grid-stride pattern. Floating-point `combine`s are associative only up to rounding;
//! the fixed tiling and combining order make their results reproducible bit for bit.
//!
//! Semantics chosen (and tested):
//! - Integer sums and products wrap (two's complement), as `wrapping_add`/`wrapping_mul`.
//! - Float `Min`/`Max` propagate NaN: any NaN in the input gives NaN (IEEE 754-2019
//!   `minimum`/`maximum`); `-0.0` is less than `+0.0`. The empty input gives `+inf`/`-inf`
//!   (integers: `MAX`/`MIN`).
//! - `ArgMin`/`ArgMax` return the value and the index of its first occurrence; a NaN wins over
//!   every number (the first NaN's index is returned); the empty input gives index `u64::MAX`
//!   (the host turns it into `None`).

use crate::gpu::ShflValue;

/// A type the reductions load: 2-, 4- or 8-byte, loaded 16 bytes at a time where aligned.
pub trait Element: ShflValue + Copy + PartialEq + 'static {
    /// Elements in one 16-byte vector load: 8, 4 or 2.
    const PER_VEC: usize;
    /// Unpack one 16-byte load (`ld.global.nc.v4.b32`) into elements, in memory order (4- and
    /// 8-byte types; a 2-byte type gives its first four).
    fn unpack(w: [u32; 4]) -> [Self; 4];
    /// The 8 elements of one 16-byte load of a 2-byte type (`PER_VEC == 8`), in memory order.
    /// Only called where `PER_VEC == 8` (a compile-time branch, so the 4- and 8-byte paths are
    /// untouched); the default serves the other types and is never used.
    #[inline(always)]
    fn unpack8(w: [u32; 4]) -> [Self; 8] {
        let e = Self::unpack(w);
        [e[0], e[1], e[2], e[3], e[0], e[1], e[2], e[3]]
    }
    /// Pack the first `PER_VEC` elements into the words of one 16-byte store.
    fn pack(e: [Self; 4]) -> [u32; 4];
}

macro_rules! element32 {
    ($($t:ty),*) => {$(
        impl Element for $t {
            const PER_VEC: usize = 4;
            #[inline(always)]
            fn unpack(w: [u32; 4]) -> [Self; 4] {
                w.map(|x| <$t as ShflValue>::from_words([x, 0, 0, 0]))
            }
            #[inline(always)]
            fn pack(e: [Self; 4]) -> [u32; 4] {
                e.map(|x| x.to_words()[0])
            }
        }
    )*};
}
macro_rules! element64 {
    ($($t:ty),*) => {$(
        impl Element for $t {
            const PER_VEC: usize = 2;
            #[inline(always)]
            fn unpack(w: [u32; 4]) -> [Self; 4] {
                let a = <$t as ShflValue>::from_words([w[0], w[1], 0, 0]);
                let b = <$t as ShflValue>::from_words([w[2], w[3], 0, 0]);
                [a, b, a, b] // only the first PER_VEC are used
            }
            #[inline(always)]
            fn pack(e: [Self; 4]) -> [u32; 4] {
                let (a, b) = (e[0].to_words(), e[1].to_words());
                [a[0], a[1], b[0], b[1]]
            }
        }
    )*};
}
element32!(i32, u32, f32);
element64!(i64, u64, f64);

/// A reduction operator over elements of type `T`.
pub trait ReduceOp<T: Element>: Copy {
    /// What the reduction carries (the element itself for most operators).
    type Acc: ShflValue;
    fn identity() -> Self::Acc;
    /// The accumulator of one element at index `index`.
    fn lift(x: T, index: u64) -> Self::Acc;
    /// Associative and commutative.
    fn combine(a: Self::Acc, b: Self::Acc) -> Self::Acc;
}

/// Arithmetic the built-in operators need, per element type.
pub trait Num: Element {
    const ZERO: Self;
    const ONE: Self;
    /// Identity of `Min` (the largest value, `+inf` for floats).
    const MIN_ID: Self;
    /// Identity of `Max`.
    const MAX_ID: Self;
    fn add(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    /// NaN-propagating for floats.
    fn min2(self, o: Self) -> Self;
    fn max2(self, o: Self) -> Self;
    /// True for NaN (never for integers).
    fn is_nan_(self) -> bool;
    /// Strict "less than" with `-0.0 < +0.0`.
    fn lt(self, o: Self) -> bool;
    /// Whether `o` is above `self` in max's order: NaN above every number (and equal to every
    /// NaN), `-0.0` below `+0.0`. Min, max, argmin and argmax decide with these three
    /// predicates, each from compares of the two values (no branch: the folding loops'
    /// dependent chain is one compare and a select deep).
    fn above(self, o: Self) -> bool;
    /// Whether `o` is below `self` in min's order: NaN below every number, `-0.0` below `+0.0`.
    fn below(self, o: Self) -> bool;
    /// Whether `self` and `o` rank the same: the same bits, or both NaN.
    fn same_rank(self, o: Self) -> bool;
}

/// Bitwise operations, integers only.
pub trait Bits: Num {
    fn and(self, o: Self) -> Self;
    fn or(self, o: Self) -> Self;
    fn xor(self, o: Self) -> Self;
    const ALL_ONES: Self;
}

macro_rules! num_int {
    ($($t:ty),*) => {$(
        impl Num for $t {
            const ZERO: Self = 0;
            const ONE: Self = 1;
            const MIN_ID: Self = <$t>::MAX;
            const MAX_ID: Self = <$t>::MIN;
            #[inline(always)] fn add(self, o: Self) -> Self { self.wrapping_add(o) }
            #[inline(always)] fn mul(self, o: Self) -> Self { self.wrapping_mul(o) }
            #[inline(always)] fn min2(self, o: Self) -> Self { if o < self { o } else { self } }
            #[inline(always)] fn max2(self, o: Self) -> Self { if o > self { o } else { self } }
            #[inline(always)] fn is_nan_(self) -> bool { false }
            #[inline(always)] fn lt(self, o: Self) -> bool { self < o }
            #[inline(always)] fn above(self, o: Self) -> bool { o > self }
            #[inline(always)] fn below(self, o: Self) -> bool { o < self }
            #[inline(always)] fn same_rank(self, o: Self) -> bool { o == self }
        }
        impl Bits for $t {
            #[inline(always)] fn and(self, o: Self) -> Self { self & o }
            #[inline(always)] fn or(self, o: Self) -> Self { self | o }
            #[inline(always)] fn xor(self, o: Self) -> Self { self ^ o }
            const ALL_ONES: Self = !0;
        }
    )*};
}
macro_rules! num_float {
    ($($t:ty: $i:ty),*) => {$(
        impl Num for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const MIN_ID: Self = <$t>::INFINITY;
            const MAX_ID: Self = <$t>::NEG_INFINITY;
            #[inline(always)] fn add(self, o: Self) -> Self { self + o }
            #[inline(always)] fn mul(self, o: Self) -> Self { self * o }
            #[inline(always)]
            fn min2(self, o: Self) -> Self {
                if self.below(o) { o } else { self }
            }
            #[inline(always)]
            fn max2(self, o: Self) -> Self {
                // The earlier NaN stays (ranks of NaNs are equal): the first NaN's bits.
                if self.above(o) { o } else { self }
            }
            #[inline(always)] fn is_nan_(self) -> bool { self.is_nan() }
            #[inline(always)]
            fn lt(self, o: Self) -> bool {
                // -0.0 < +0.0, so the result does not depend on which zero came first.
                self < o || (self == o && self.is_sign_negative() && !o.is_sign_negative())
            }
            #[inline(always)]
            fn above(self, o: Self) -> bool {
                // Equal values differ in bits only as -0.0 and +0.0 (the sign: signed compare).
                let (sb, ob) = (self.to_bits() as $i, o.to_bits() as $i);
                // `|` and `&`, not `||` and `&&`: selects, not branches on the data (which
                // diverge across a warp's lanes).
                (o > self) | ((o == self) & (ob > sb)) | (o.is_nan() & !self.is_nan())
            }
            #[inline(always)]
            fn below(self, o: Self) -> bool {
                let (sb, ob) = (self.to_bits() as $i, o.to_bits() as $i);
                (o < self) | ((o == self) & (ob < sb)) | (o.is_nan() & !self.is_nan())
            }
            #[inline(always)]
            fn same_rank(self, o: Self) -> bool {
                (self.to_bits() == o.to_bits()) | (self.is_nan() & o.is_nan())
            }
        }
    )*};
}
num_int!(i32, u32, i64, u64);
num_float!(f32: i32, f64: i64);

/// Sum (integers wrap).
#[derive(Clone, Copy, Debug, Default)]
pub struct Sum;
/// Product (integers wrap).
#[derive(Clone, Copy, Debug, Default)]
pub struct Product;
/// Minimum (NaN-propagating for floats).
#[derive(Clone, Copy, Debug, Default)]
pub struct Min;
/// Maximum (NaN-propagating for floats).
#[derive(Clone, Copy, Debug, Default)]
pub struct Max;
/// Bitwise and.
#[derive(Clone, Copy, Debug, Default)]
pub struct BitAnd;
/// Bitwise or.
#[derive(Clone, Copy, Debug, Default)]
pub struct BitOr;
/// Bitwise xor.
#[derive(Clone, Copy, Debug, Default)]
pub struct BitXor;

macro_rules! simple_op {
    ($op:ty, $bound:ident, $id:expr, $f:ident) => {
        impl<T: $bound> ReduceOp<T> for $op {
            type Acc = T;
            #[inline(always)]
            fn identity() -> T {
                $id
            }
            #[inline(always)]
            fn lift(x: T, _: u64) -> T {
                x
            }
            #[inline(always)]
            fn combine(a: T, b: T) -> T {
                a.$f(b)
            }
        }
    };
}
simple_op!(Sum, Num, T::ZERO, add);
simple_op!(Product, Num, T::ONE, mul);
simple_op!(Min, Num, T::MIN_ID, min2);
simple_op!(Max, Num, T::MAX_ID, max2);
simple_op!(BitAnd, Bits, T::ALL_ONES, and);
simple_op!(BitOr, Bits, T::ZERO, or);
simple_op!(BitXor, Bits, T::ZERO, xor);

/// A value and its index: the accumulator of [`ArgMin`] and [`ArgMax`]. `index == u64::MAX`
/// means "no element" (the identity).
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C)]
pub struct ArgAcc<T> {
    pub value: T,
    pub index: u64,
}

impl<T: ShflValue> ShflValue for ArgAcc<T> {
    const WORDS: usize = T::WORDS + 2;
    #[inline(always)]
    fn to_words(self) -> [u32; 4] {
        let v = self.value.to_words();
        let mut w = [v[0], v[1], 0, 0];
        w[T::WORDS] = self.index as u32;
        w[T::WORDS + 1] = (self.index >> 32) as u32;
        w
    }
    #[inline(always)]
    fn from_words(w: [u32; 4]) -> Self {
        Self {
            value: T::from_words([w[0], w[1], 0, 0]),
            index: w[T::WORDS] as u64 | ((w[T::WORDS + 1] as u64) << 32),
        }
    }
}

/// Smallest value and the index of its first occurrence (NaN wins).
#[derive(Clone, Copy, Debug, Default)]
pub struct ArgMin;
/// Largest value and the index of its first occurrence (NaN wins).
#[derive(Clone, Copy, Debug, Default)]
pub struct ArgMax;

#[inline(always)]
fn arg_pick<T: Num>(a: ArgAcc<T>, b: ArgAcc<T>, b_better: bool, a_better: bool) -> ArgAcc<T> {
    // Empty sides lose; NaN beats numbers; then the better value; ties go to the lower index.
    if a.index == u64::MAX {
        return b;
    }
    if b.index == u64::MAX {
        return a;
    }
    let (an, bn) = (a.value.is_nan_(), b.value.is_nan_());
    let take_b = if an || bn {
        bn && (!an || b.index < a.index)
    } else if b_better {
        true
    } else if a_better {
        false
    } else {
        b.index < a.index
    };
    if take_b { b } else { a }
}

impl<T: Num> ReduceOp<T> for ArgMin {
    type Acc = ArgAcc<T>;
    #[inline(always)]
    fn identity() -> ArgAcc<T> {
        ArgAcc {
            value: T::MIN_ID,
            index: u64::MAX,
        }
    }
    #[inline(always)]
    fn lift(x: T, index: u64) -> ArgAcc<T> {
        ArgAcc { value: x, index }
    }
    #[inline(always)]
    fn combine(a: ArgAcc<T>, b: ArgAcc<T>) -> ArgAcc<T> {
        arg_pick(a, b, b.value.lt(a.value), a.value.lt(b.value))
    }
}

impl<T: Num> ReduceOp<T> for ArgMax {
    type Acc = ArgAcc<T>;
    #[inline(always)]
    fn identity() -> ArgAcc<T> {
        ArgAcc {
            value: T::MAX_ID,
            index: u64::MAX,
        }
    }
    #[inline(always)]
    fn lift(x: T, index: u64) -> ArgAcc<T> {
        ArgAcc { value: x, index }
    }
    #[inline(always)]
    fn combine(a: ArgAcc<T>, b: ArgAcc<T>) -> ArgAcc<T> {
        arg_pick(a, b, a.value.lt(b.value), b.value.lt(a.value))
    }
}

/// Accurate f32 sum: every f32 is converted exactly to f64 and all additions (in the threads
/// and in the trees) are done in f64; the host rounds the f64 result to f32 once. "Kahan or
/// better": with `u32 = 2^-24`, `u64 = 2^-53` and the tree height `depth`,
/// `|result - exact| <= u32*|exact| + depth*u64*sum|x|` (Higham, ch. 4), i.e. correctly rounded
/// unless the data cancels by more than ~2^29/depth, where Kahan's own bound
/// `2*u32*|exact| + O(n*u32^2)*sum|x|` is far weaker. It costs no bandwidth: one f64 add per
/// element is far below the FP64 rate.
#[derive(Clone, Copy, Debug, Default)]
pub struct SumCompensated;

impl ReduceOp<f32> for SumCompensated {
    type Acc = f64;
    #[inline(always)]
    fn identity() -> f64 {
        0.0
    }
    #[inline(always)]
    fn lift(x: f32, _: u64) -> f64 {
        x as f64
    }
    #[inline(always)]
    fn combine(a: f64, b: f64) -> f64 {
        a + b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fold<T: Element, O: ReduceOp<T>>(xs: &[T]) -> O::Acc {
        xs.iter().enumerate().fold(O::identity(), |a, (i, &x)| {
            O::combine(a, O::lift(x, i as u64))
        })
    }

    #[test]
    fn nan_and_zero_semantics() {
        assert!(fold::<f32, Min>(&[1.0, f32::NAN, -3.0]).is_nan());
        assert!(fold::<f64, Max>(&[f64::NAN, 1.0]).is_nan());
        assert_eq!(
            fold::<f32, Min>(&[0.0, -0.0]).to_bits(),
            (-0.0f32).to_bits()
        );
        assert_eq!(fold::<f32, Max>(&[-0.0, 0.0]).to_bits(), 0.0f32.to_bits());
        assert_eq!(fold::<f32, Min>(&[]), f32::INFINITY);
        let a = fold::<f32, ArgMin>(&[3.0, 1.0, 2.0, 1.0]);
        assert_eq!((a.value, a.index), (1.0, 1));
        let a = fold::<f32, ArgMax>(&[3.0, f32::NAN, 9.0, f32::NAN]);
        assert!(a.value.is_nan() && a.index == 1);
        assert_eq!(fold::<i32, ArgMax>(&[]).index, u64::MAX);
    }

    /// `above`, `below` and `same_rank` agree with ranks from a total order: floats' bits made
    /// order-preserving, every NaN the top (max's order) or the bottom (min's).
    #[test]
    fn compares_match_ranks() {
        let xs = [
            f32::NEG_INFINITY,
            -3.5,
            -f32::MIN_POSITIVE,
            -0.0,
            0.0,
            1e-45,
            2.0,
            f32::MAX,
            f32::INFINITY,
            f32::NAN,
            -f32::NAN,
            f32::from_bits(0x7f80_0001),
        ];
        let key = |x: f32| {
            let b = x.to_bits();
            if b >> 31 == 1 {
                !b as u64
            } else {
                (b | 1 << 31) as u64
            }
        };
        let hi = |x: f32| if x.is_nan() { u64::MAX } else { key(x) };
        let lo = |x: f32| if x.is_nan() { 0 } else { key(x) + 1 };
        for &a in &xs {
            for &b in &xs {
                assert_eq!(a.above(b), hi(b) > hi(a), "{a} above {b}");
                assert_eq!(a.below(b), lo(b) < lo(a), "{a} below {b}");
                assert_eq!(a.same_rank(b), hi(a) == hi(b), "{a} same {b}");
                let (x, y) = (a as f64, b as f64);
                assert_eq!(x.above(y), a.above(b), "f64 {a} above {b}");
                assert_eq!(x.below(y), a.below(b), "f64 {a} below {b}");
            }
        }
    }

    #[test]
    fn combine_is_commutative_for_arg_ops() {
        let xs = [
            ArgAcc {
                value: 2.0f32,
                index: 5,
            },
            ArgAcc {
                value: 2.0,
                index: 3,
            },
            ArgAcc {
                value: f32::NAN,
                index: 9,
            },
            ArgAcc {
                value: f32::NAN,
                index: 4,
            },
        ];
        for &a in &xs {
            for &b in &xs {
                let (x, y) = (ArgMin::combine(a, b), ArgMin::combine(b, a));
                assert_eq!((x.index, x.value.to_bits()), (y.index, y.value.to_bits()));
            }
        }
    }

    #[test]
    fn integers_wrap_and_bits() {
        assert_eq!(fold::<i32, Sum>(&[i32::MAX, 1]), i32::MIN);
        assert_eq!(fold::<u64, Product>(&[u64::MAX, 2]), u64::MAX - 1);
        assert_eq!(fold::<u32, BitAnd>(&[0b1100, 0b1010]), 0b1000);
        assert_eq!(fold::<u32, BitAnd>(&[]), u32::MAX);
        assert_eq!(fold::<i64, BitXor>(&[5, 3]), 6);
    }

    #[test]
    fn compensated_sum_recovers_lost_bits() {
        // 1 + 1e-8 * 10^4: a plain f32 sum loses every small term.
        let mut xs = std::vec![1.0f32];
        xs.extend(std::iter::repeat_n(1e-8f32, 10_000));
        let c = fold::<f32, SumCompensated>(&xs);
        let exact: f64 = xs.iter().map(|&x| x as f64).sum();
        assert!((c - exact).abs() < 1e-12, "{c:?} vs {exact}");
        assert_eq!(fold::<f32, Sum>(&xs), 1.0);
    }

    #[test]
    fn arg_acc_words_round_trip() {
        let a = ArgAcc {
            value: -1.5f64,
            index: 0x1234_5678_9abc,
        };
        assert_eq!(ArgAcc::<f64>::from_words(a.to_words()), a);
        let b = ArgAcc {
            value: 7u32,
            index: 3,
        };
        assert_eq!(<ArgAcc<u32> as ShflValue>::WORDS, 3);
        assert_eq!(ArgAcc::<u32>::from_words(b.to_words()), b);
    }
}
