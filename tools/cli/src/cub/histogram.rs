//! The histograms (`cub::DeviceHistogram::HistogramEven` / `HistogramRange`, u32 counts) of
//! [`CubHistogram`] samples: u32 and f32. Optional: a shim built before them lacks them
//! ([`Cub::histogram`] is then [`CubError::MissingSymbol`]). Symbols resolved here, once a
//! [`Cub::histogram`] call, so the family adds no entry to the shim's central tables:
//!
//! - `int cub_temp_bytes_histogram_even_T(unsigned long long n, int bins, size_t* bytes)`
//! - `int cub_histogram_even_T(void* temp, size_t temp_bytes, const T* in, unsigned int*
//!   counts, int bins, T lower, T upper, unsigned long long n, void* stream)`
//! - `int cub_temp_bytes_histogram_range_T(unsigned long long n, int bins, size_t* bytes)`
//! - `int cub_histogram_range_T(void* temp, size_t temp_bytes, const T* in, unsigned int*
//!   counts, int bins, const T* edges, unsigned long long n, void* stream)`
//!
//! The safety contract of the calls: `temp` holds at least the queried bytes, `input` `n`
//! samples, `counts` room for `bins` u32 and `edges` `bins + 1` ascending samples, all device
//! memory of the context current on this thread, none freed before `stream` has finished.

use std::ffi::{c_int, c_void};

use super::loader::{mut_ptr, ptr};
use super::{Cub, CubError};

/// Sample types of the shim's histograms: u32 and f32 (`unsigned int`, `float`).
pub trait CubHistogram: Copy + 'static + private::Sealed {
    /// The symbols' suffix.
    const NAME: &'static str;
}
impl CubHistogram for u32 {
    const NAME: &'static str = "u32";
}
impl CubHistogram for f32 {
    const NAME: &'static str = "f32";
}
mod private {
    pub trait Sealed {}
    impl Sealed for u32 {}
    impl Sealed for f32 {}
}

/// The shim's histogram sample types, as [`CubHistogram::NAME`]s (its `CUB_SHIM_HISTOGRAM_OPS`).
pub const HISTOGRAM_TYPES: [&str; 2] = ["u32", "f32"];

type QueryFn = unsafe extern "C" fn(u64, c_int, *mut usize) -> c_int;
type EvenFn<T> = unsafe extern "C" fn(
    *mut c_void,
    usize,
    *const c_void,
    *mut c_void,
    c_int,
    T,
    T,
    u64,
    *mut c_void,
) -> c_int;
type RangeFn = unsafe extern "C" fn(
    *mut c_void,
    usize,
    *const c_void,
    *mut c_void,
    c_int,
    *const c_void,
    u64,
    *mut c_void,
) -> c_int;

/// The four symbols' names for `T` (NUL-terminated): even, its query, range, its query.
pub fn histogram_symbols<T: CubHistogram>() -> [String; 4] {
    let t = T::NAME;
    [
        format!("cub_histogram_even_{t}\0"),
        format!("cub_temp_bytes_histogram_even_{t}\0"),
        format!("cub_histogram_range_{t}\0"),
        format!("cub_temp_bytes_histogram_range_{t}\0"),
    ]
}

/// `T`'s histogram calls of a loaded shim ([`Cub::histogram`]).
pub struct CubHistogramFns<'a, T> {
    cub: &'a Cub,
    names: [String; 4],
    even: EvenFn<T>,
    even_temp: QueryFn,
    range: RangeFn,
    range_temp: QueryFn,
}

impl Cub {
    /// `T`'s histogram calls, or the error naming the first symbol the shim lacks.
    pub fn histogram<T: CubHistogram>(&self) -> Result<CubHistogramFns<'_, T>, CubError> {
        let names = histogram_symbols::<T>();
        // SAFETY: the types are those of the shim's exports (module docs); the pointers live
        // in the returned value, which borrows `self` (and so its library).
        unsafe {
            Ok(CubHistogramFns {
                cub: self,
                even: self.symbol(names[0].as_bytes())?,
                even_temp: self.symbol(names[1].as_bytes())?,
                range: self.symbol(names[2].as_bytes())?,
                range_temp: self.symbol(names[3].as_bytes())?,
                names,
            })
        }
    }
}

impl<T: CubHistogram> CubHistogramFns<'_, T> {
    /// Scratch bytes of `HistogramEven` (`range: false`) or `HistogramRange` over `n` samples
    /// into `bins` bins.
    pub fn temp_bytes(&self, range: bool, n: u64, bins: i32) -> Result<usize, CubError> {
        let (q, name) = if range {
            (self.range_temp, &self.names[3])
        } else {
            (self.even_temp, &self.names[1])
        };
        // SAFETY: the query only writes `bytes`; no device memory is touched.
        self.cub
            .query(name.as_bytes(), |bytes| unsafe { q(n, bins, bytes) })
    }

    /// `cub::DeviceHistogram::HistogramEven` of `n` samples at `input` into `bins` u32 counts
    /// at `counts`, even over `[lo, hi)`, enqueued on `stream`.
    ///
    /// # Safety
    /// The module's contract.
    #[allow(clippy::too_many_arguments)] // the C function's arguments
    pub unsafe fn even(
        &self,
        (temp, temp_bytes): (u64, usize),
        input: u64,
        counts: u64,
        bins: i32,
        (lo, hi): (T, T),
        n: u64,
        stream: *mut c_void,
    ) -> Result<(), CubError> {
        // SAFETY: forwarded from the caller.
        let code = unsafe {
            (self.even)(
                mut_ptr(temp),
                temp_bytes,
                ptr(input),
                mut_ptr(counts),
                bins,
                lo,
                hi,
                n,
                stream,
            )
        };
        self.cub.check(self.names[0].as_bytes(), code)
    }

    /// `cub::DeviceHistogram::HistogramRange` of `n` samples at `input` into `bins` u32 counts
    /// at `counts`, between the `bins + 1` ascending `edges`, enqueued on `stream`.
    ///
    /// # Safety
    /// The module's contract.
    #[allow(clippy::too_many_arguments)] // the C function's arguments
    pub unsafe fn range(
        &self,
        (temp, temp_bytes): (u64, usize),
        input: u64,
        counts: u64,
        bins: i32,
        edges: u64,
        n: u64,
        stream: *mut c_void,
    ) -> Result<(), CubError> {
        // SAFETY: forwarded from the caller.
        let code = unsafe {
            (self.range)(
                mut_ptr(temp),
                temp_bytes,
                ptr(input),
                mut_ptr(counts),
                bins,
                ptr(edges),
                n,
                stream,
            )
        };
        self.cub.check(self.names[2].as_bytes(), code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cub::SHIM_SOURCE;

    /// The shim defines every symbol for every type: its macro makes `cub_histogram_even_##T`
    /// and the others from `CUB_SHIM_HISTOGRAM_OPS(T, ...)` lines.
    #[test]
    fn every_histogram_symbol_is_in_the_shim_source() {
        for t in HISTOGRAM_TYPES {
            assert!(
                SHIM_SOURCE.contains(&format!("CUB_SHIM_HISTOGRAM_OPS({t}, ")),
                "the shim has no histograms of {t}"
            );
        }
        for f in [
            "cub_histogram_even_##TNAME(",
            "cub_temp_bytes_histogram_even_##TNAME(",
            "cub_histogram_range_##TNAME(",
            "cub_temp_bytes_histogram_range_##TNAME(",
        ] {
            assert!(SHIM_SOURCE.contains(f), "{f}");
        }
        let names = histogram_symbols::<f32>();
        assert_eq!(names[0], "cub_histogram_even_f32\0");
        assert_eq!(names[3], "cub_temp_bytes_histogram_range_f32\0");
        assert_eq!(
            [u32::NAME, f32::NAME],
            HISTOGRAM_TYPES,
            "one NAME per shim type"
        );
    }
}
