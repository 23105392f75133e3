//! The ops of one shape (`in`, `out`, `n`): reductions and sum scans, generic over the
//! element types the shim has them for.

use std::ffi::c_void;

use super::symbols::*;
use super::{Cub, CubError};

/// For each op: `temp_bytes_NAME::<T>(n)` and the unsafe `NAME::<T>(temp, temp_bytes, input,
/// out, n, stream)` over the trait's run and query symbols.
macro_rules! generic_ops {
    ($($(#[$doc:meta])* $name:ident, $temp_fn:ident: $tr:ident($run:ident, $temp:ident);)*) => {
        impl Cub {$(
            #[doc = concat!("Scratch bytes [`Cub::", stringify!($name), "`] needs for `n` elements.")]
            pub fn $temp_fn<T: $tr>(&self, n: u64) -> Result<usize, CubError> {
                self.temp_bytes(T::$run, T::$temp, n)
            }

            $(#[$doc])*
            pub unsafe fn $name<T: $tr>(
                &self,
                temp: u64,
                temp_bytes: usize,
                input: u64,
                out: u64,
                n: u64,
                stream: *mut c_void,
            ) -> Result<(), CubError> {
                // SAFETY: forwarded from the caller.
                unsafe { self.run(T::$run, temp, temp_bytes, input, out, n, stream) }
            }
        )*}
    };
}

generic_ops! {
    /// `out[0] = in[0] + ... + in[n-1]` (0 for n = 0) with `cub::DeviceReduce::Sum`,
    /// enqueued on `stream`.
    ///
    /// # Safety
    /// `temp` (at least `temp_bytes` >= [`Cub::temp_bytes_sum`]`(n)` bytes), `input` (`n`
    /// elements of `T`) and `out` (one `T`) are device allocations of the context current on
    /// this thread, `stream` is a stream of that context (or null), and none of them is
    /// freed or reused before the stream has finished the work.
    sum, temp_bytes_sum: CubSum(SUM, SUM_TEMP);

    /// Minimum with `cub::DeviceReduce::Min` (`T::MAX` for n = 0, e.g. `f32::MAX`).
    ///
    /// # Safety
    /// As for [`Cub::sum`], with [`Cub::temp_bytes_min`].
    min, temp_bytes_min: CubMinMax(MIN, MIN_TEMP);

    /// Maximum with `cub::DeviceReduce::Max` (the type's lowest value for n = 0).
    ///
    /// # Safety
    /// As for [`Cub::sum`], with [`Cub::temp_bytes_max`].
    max, temp_bytes_max: CubMinMax(MAX, MAX_TEMP);

    /// `out[i] = in[0] + ... + in[i]` with `cub::DeviceScan::InclusiveSum`.
    ///
    /// # Safety
    /// As for [`Cub::sum`], with [`Cub::temp_bytes_inclusive_sum`], and `out` holding `n`
    /// elements; `out` may equal `input` (in place) but must not overlap it otherwise.
    inclusive_sum, temp_bytes_inclusive_sum: CubInclusiveSum(INCLUSIVE_SUM, INCLUSIVE_SUM_TEMP);

    /// `out[0] = 0`, `out[i] = in[0] + ... + in[i-1]` with `cub::DeviceScan::ExclusiveSum`.
    ///
    /// # Safety
    /// As for [`Cub::inclusive_sum`], with [`Cub::temp_bytes_exclusive_sum`].
    exclusive_sum, temp_bytes_exclusive_sum: CubExclusiveSum(EXCLUSIVE_SUM, EXCLUSIVE_SUM_TEMP);

    /// `out[0] = in[0] + ... + in[n-1]` (0 for n = 0) of half-precision inputs, accumulated in
    /// f32 into one f32, with `cub::DeviceReduce::Reduce` (init 0.0f).
    ///
    /// # Safety
    /// As for [`Cub::sum`], with [`Cub::temp_bytes_sum_to_f32`], `input` holding `n` 2-byte
    /// elements and `out` one f32.
    sum_to_f32, temp_bytes_sum_to_f32: CubSumToF32(SUM_TO_F32, SUM_TO_F32_TEMP);
}
