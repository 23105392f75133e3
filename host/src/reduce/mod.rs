//! Device-wide reductions, one launch each: sum, product, min, max, bitwise and/or/xor,
//! argmin/argmax, a compensated f32 sum, and user operators compiled into kernels.
//!
//! | call | returns |
//! | --- | --- |
//! | [`Context::reduce`]`(input, op)`, `_into(input, out, op)`, `_async(input, op)` | `T` ([`Reduction`]) |
//! | [`Context::sum`]`(input)`, `_into(input, out)`, `_async(input)` | `T::Sum` (f32 for f16/bf16) |
//! | [`Context::argmin`]`(input)`, [`Context::argmax`], `_into(input, out)`, `_async(input)` | `Option<(u64, T)>`; [`ArgValue`] on the device |
//! | [`Context::sum_compensated`]`(input)`, `_into(input, out)`, `_async(input)` | `f32` (f64 on the device) |
//! | [`Context::reduce_custom`]`::<T, O>(lib, input)`, `_into(lib, input, out)`, `_async(lib, input)` | `O::Acc` |
//!
//! Every value-returning call has the same three forms: blocking, `_into` (the result left in
//! `out[0]` on the device: never blocks, can be captured into a CUDA graph) and `_async` (a
//! [`Pending`] whose [`Pending::wait`] gives the value).
//!
//! Semantics (see `kernels::ops`): integer sums and products wrap; float min/max propagate NaN
//! and order `-0.0 < +0.0`; argmin/argmax give the first occurrence, NaN winning; the empty
//! input gives the operator's identity (`None` for argmin/argmax). Results are deterministic:
//! the same input gives the same bits on every run, GPU and the simulator.

use std::fmt::Debug;

use cudarc::driver::{DeviceRepr, ValidAsZeroBits};
use kernels::Kernel;
use kernels::ops::ArgAcc;
use kernels::reduce::{ReduceInstance, SimReduceFn};

// Named by the docs here; the calls themselves live in the submodules.
#[cfg(doc)]
use crate::{Context, Error};

mod calls;
mod launch;
mod pending;

use launch::Job;
pub use pending::Pending;

/// The built-in reductions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reduction {
    /// Sum (integers wrap).
    Sum,
    /// Product (integers wrap).
    Product,
    /// Minimum (floats: NaN wins, -0.0 < +0.0).
    Min,
    /// Maximum (floats: NaN wins, -0.0 < +0.0).
    Max,
    /// Bitwise and (integers).
    And,
    /// Bitwise or (integers).
    Or,
    /// Bitwise xor (integers).
    Xor,
}

impl Reduction {
    /// Every built-in reduction.
    pub const ALL: [Reduction; 7] = [
        Reduction::Sum,
        Reduction::Product,
        Reduction::Min,
        Reduction::Max,
        Reduction::And,
        Reduction::Or,
        Reduction::Xor,
    ];

    /// The operators of the scans and the by-key families (plain and by-key scans, reduce by
    /// key): sum, min and max. The others are [`Error::Unsupported`] there.
    pub const SCAN: [Reduction; 3] = [Reduction::Sum, Reduction::Min, Reduction::Max];

    /// The operator's identity for `T`, with the device kernels' semantics (`+inf` for min of
    /// floats, `T::MAX` for min of integers, all ones for `And`, ...); `None` where `T` has no
    /// such built-in operator (the bitwise operators on floats, the product of `f16`/`bf16`).
    /// For `f16`/`bf16` the sum's identity is the element type's zero (their sums accumulate
    /// in f32 from 0.0).
    ///
    /// ```
    /// use gpu_reduce::Reduction;
    /// assert_eq!(Reduction::Min.identity::<i32>(), Some(i32::MAX));
    /// assert_eq!(Reduction::Xor.identity::<f32>(), None);
    /// ```
    pub fn identity<T: DeviceElement>(self) -> Option<T> {
        T::op_identity(self)
    }

    /// `a ⊕ b` with the same semantics as the device kernels (integer sums and products wrap,
    /// float min/max propagate NaN and order `-0.0 < +0.0`); `None` where [`Reduction::identity`]
    /// is `None`. (For `f16`/`bf16` the sum here is one rounded 16-bit addition; the device
    /// sums and scans accumulate in f32, see [`Context::sum`] and [`Context::scan`].)
    ///
    /// ```
    /// use gpu_reduce::Reduction;
    /// assert_eq!(Reduction::Sum.combine(i32::MAX, 1), Some(i32::MIN)); // wraps
    /// assert_eq!(Reduction::Max.combine(1.0f32, f32::NAN).map(f32::is_nan), Some(true));
    /// ```
    pub fn combine<T: DeviceElement>(self, a: T, b: T) -> Option<T> {
        // A NaN as the kernels write it out (`ShflValue::canonical`): the same bits on any CPU.
        T::op_combine(self, a, b).map(kernels::gpu::ShflValue::canonical)
    }

    /// Its name in messages.
    pub fn name(self) -> &'static str {
        match self {
            Reduction::Sum => "sum",
            Reduction::Product => "product",
            Reduction::Min => "min",
            Reduction::Max => "max",
            Reduction::And => "and",
            Reduction::Or => "or",
            Reduction::Xor => "xor",
        }
    }
}

/// A reduction kernel as the host calls it.
pub type ReduceKernel<T, A> = Kernel<SimReduceFn<T, A>>;

/// `k` writing its accumulator as `B`, a `repr(C)` mirror of the kernel's `A` (the same fields
/// in the same order): for the host's result types of the `_into` forms.
pub(crate) fn mirrored<T, A, B>(k: ReduceKernel<T, A>) -> ReduceKernel<T, B> {
    const {
        assert!(std::mem::size_of::<A>() == std::mem::size_of::<B>());
        assert!(std::mem::align_of::<A>() == std::mem::align_of::<B>());
    }
    // SAFETY: the two function types differ only in the pointee types of raw pointers (the
    // same ABI), and `B` has `A`'s layout, so what the kernel writes as `A` is a valid `B`.
    let sim = unsafe { std::mem::transmute::<SimReduceFn<T, A>, SimReduceFn<T, B>>(k.sim) };
    Kernel { name: k.name, sim }
}

/// An argmin or argmax as [`Context::argmin_into`] and [`Context::argmax_into`] leave it on the
/// device: the kernels' accumulator (`kernels::ops::ArgAcc`), field for field.
/// `index == u64::MAX` means empty input (the value is then the operator's identity).
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C)]
pub struct ArgValue<T> {
    /// The smallest (largest) value.
    pub value: T,
    /// The index of its first occurrence; `u64::MAX` for empty input.
    pub index: u64,
}

// SAFETY: `repr(C)` plain data: a device element and a u64.
unsafe impl<T: DeviceRepr> DeviceRepr for ArgValue<T> {}
// SAFETY: as above; all-zero is value 0 at index 0.
unsafe impl<T: ValidAsZeroBits> ValidAsZeroBits for ArgValue<T> {}

impl<T> ArgValue<T> {
    /// `(index, value)` as [`Context::argmin`] returns it: `None` for empty input.
    pub fn get(self) -> Option<(u64, T)> {
        (self.index != u64::MAX).then_some((self.index, self.value))
    }
}

impl<T> From<ArgAcc<T>> for ArgValue<T> {
    fn from(a: ArgAcc<T>) -> Self {
        ArgValue {
            value: a.value,
            index: a.index,
        }
    }
}

/// A two-input reduction kernel (a map of pairs, e.g. the dot product) as the host calls it.
pub type Reduce2Kernel<T, A> = Kernel<kernels::reduce::dot::SimReduce2Fn<T, A>>;

/// Element types of the device reductions: i32, u32, i64, u64, f32, f64, and with the `f16`
/// feature the 16-bit floats `half::f16` and `half::bf16` (min, max, argmin, argmax in the type;
/// the sum accumulates in f32 and returns the f32). The kernels come from the `kernels` crate's macro invocations (its
/// `ReduceInstance` impls); nothing here names one.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an element type of the device reductions",
    note = "the reductions take i32, u32, i64, u64, f32, f64 (and half::f16, half::bf16 with the `f16` feature)"
)]
pub trait DeviceElement:
    kernels::ops::Num + DeviceRepr + ValidAsZeroBits + Copy + Send + Sync + Debug
{
    /// The type's name in messages (`"f32"`).
    const DTYPE: &'static str;
    /// What [`Context::sum`] returns: the type itself, `f32` for `f16` and `bf16`.
    type Sum: Copy + Send + Debug + 'static;
    /// The sum kernel.
    fn sum_kernel() -> ReduceKernel<Self, Self::Sum>;
    /// The kernel of `op` for this type; `None` where the operator is not defined (bitwise
    /// operators on floats).
    fn kernel(op: Reduction) -> Option<ReduceKernel<Self, Self>>;
    /// The argmin kernel.
    fn argmin_kernel() -> ReduceKernel<Self, ArgAcc<Self>>;
    /// The argmax kernel.
    fn argmax_kernel() -> ReduceKernel<Self, ArgAcc<Self>>;
    /// [`Reduction::identity`] (generated from the kernels' built-in table).
    #[doc(hidden)]
    fn op_identity(op: Reduction) -> Option<Self>;
    /// [`Reduction::combine`] (generated from the kernels' built-in table).
    #[doc(hidden)]
    fn op_combine(op: Reduction, a: Self, b: Self) -> Option<Self>;
}

/// `if $op is the `Reduction` of the table's operator token { return Some($e) }`: what a
/// family's per-type dispatch writes once per operator of the kernels' built-in table
/// (`kernels::builtin_table!`). Tokens that are no `Reduction` (argmin, argmax, the 16-bit
/// floats' f32 sum) expand to nothing.
macro_rules! reduction_arm {
    ($v:ident, sum, $e:expr) => { $crate::reduce::reduction_arm!(@if $v Sum $e) };
    ($v:ident, product, $e:expr) => { $crate::reduce::reduction_arm!(@if $v Product $e) };
    ($v:ident, min, $e:expr) => { $crate::reduce::reduction_arm!(@if $v Min $e) };
    ($v:ident, max, $e:expr) => { $crate::reduce::reduction_arm!(@if $v Max $e) };
    ($v:ident, and, $e:expr) => { $crate::reduce::reduction_arm!(@if $v And $e) };
    ($v:ident, or, $e:expr) => { $crate::reduce::reduction_arm!(@if $v Or $e) };
    ($v:ident, xor, $e:expr) => { $crate::reduce::reduction_arm!(@if $v Xor $e) };
    ($v:ident, $other:ident, $e:expr) => {};
    (@if $v:ident $variant:ident $e:expr) => {
        if $v == $crate::reduce::Reduction::$variant {
            return Some($e);
        }
    };
}
pub(crate) use reduction_arm;

/// [`DeviceElement`] of one element type of the kernels' built-in table, from its operators.
macro_rules! device_element {
    ($t:ident { $([$op:ident $Op:path])* }) => {
        impl DeviceElement for kernels::builtin_elem!($t) {
            const DTYPE: &'static str = stringify!($t);
            $( device_element!(@item $op $Op); )*
            fn kernel(op: Reduction) -> Option<ReduceKernel<Self, Self>> {
                $( reduction_arm!(op, $op, <$Op as ReduceInstance<Self>>::KERNEL); )*
                None
            }
            fn op_identity(op: Reduction) -> Option<Self> {
                $( device_element!(@semantics op $op $Op, identity()); )*
                None
            }
            fn op_combine(op: Reduction, a: Self, b: Self) -> Option<Self> {
                $( device_element!(@semantics op $op $Op, combine(a, b)); )*
                None
            }
        }
    };
    // The 16-bit floats' `sum_f32` (an f32 accumulator): the element type's own sum.
    (@semantics $v:ident sum_f32 $Op:path, $f:ident $args:tt) => {
        device_element!(@semantics $v sum kernels::ops::Sum, $f $args);
    };
    (@semantics $v:ident $op:ident $Op:path, $f:ident ($($a:expr),*)) => {
        reduction_arm!($v, $op, <$Op as kernels::ops::ReduceOp<Self>>::$f($($a),*));
    };
    (@item sum $Op:path) => {
        type Sum = Self;
        fn sum_kernel() -> ReduceKernel<Self, Self> {
            <$Op as ReduceInstance<Self>>::KERNEL
        }
    };
    (@item sum_f32 $Op:path) => {
        type Sum = f32;
        fn sum_kernel() -> ReduceKernel<Self, f32> {
            <$Op as ReduceInstance<Self>>::KERNEL
        }
    };
    (@item argmin $Op:path) => {
        fn argmin_kernel() -> ReduceKernel<Self, ArgAcc<Self>> {
            <$Op as ReduceInstance<Self>>::KERNEL
        }
    };
    (@item argmax $Op:path) => {
        fn argmax_kernel() -> ReduceKernel<Self, ArgAcc<Self>> {
            <$Op as ReduceInstance<Self>>::KERNEL
        }
    };
    (@item $op:ident $Op:path) => {};
}
kernels::builtin_table!(types device_element! {} int float);
#[cfg(feature = "f16")]
kernels::builtin_table!(types device_element! {} half);

/// Accumulators are at most 16 bytes: they come back through a 2-word buffer.
pub(crate) const ACC_WORDS: usize = 2;

/// The one-launch reductions the host can ask for, per type of the kernels' built-in table
/// (for the library's index test; with the `f16` feature the 16-bit floats' too).
#[cfg(test)]
pub(crate) fn kernel_names() -> Vec<&'static str> {
    fn of<T: DeviceElement>(names: &mut Vec<&'static str>) {
        names.extend([
            T::sum_kernel().name,
            T::argmin_kernel().name,
            T::argmax_kernel().name,
        ]);
        // The sum is `sum_kernel` (also `kernel(Sum)` where the sum is in the type).
        let ops = Reduction::ALL.iter().filter(|&&op| op != Reduction::Sum);
        names.extend(ops.filter_map(|&op| T::kernel(op)).map(|k| k.name));
    }
    use kernels::ops::SumCompensated;
    let mut names = vec![<SumCompensated as ReduceInstance<f32>>::KERNEL.name];
    macro_rules! each {
        ($t:ident $ops:tt) => {
            of::<kernels::builtin_elem!($t)>(&mut names)
        };
    }
    kernels::builtin_table!(types each! {} int float);
    #[cfg(feature = "f16")]
    kernels::builtin_table!(types each! {} half);
    names
}
