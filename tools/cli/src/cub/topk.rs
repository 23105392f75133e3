//! Top-k (`cub::DeviceTopK::MaxPairs`, CCCL >= 3.2): the k largest f32 keys and their u32
//! indices, in no order and without determinism (the only form CUB offers). Only a shim built
//! against such a CCCL has it ([`Cub::topk`] is otherwise [`CubError::MissingSymbol`]). Symbols
//! resolved here, so the family adds no entry to the shim's central tables:
//!
//! - `int cub_temp_bytes_topk_max_f32(unsigned long long n, unsigned long long k, size_t* bytes)`
//! - `int cub_topk_max_f32(void* temp, size_t temp_bytes, const float* in, float* keys_out,
//!   unsigned int* idx_out, unsigned long long n, unsigned long long k, void* stream)`
//!
//! The safety contract of the call: `temp` holds at least the queried bytes, `in` `n` keys,
//! `keys_out` and `idx_out` room for `k` each, all device memory of the context current on this
//! thread, none freed before `stream` has finished.

use std::ffi::{c_int, c_void};

use super::loader::{mut_ptr, ptr};
use super::{Cub, CubError};

const RUN: &[u8] = b"cub_topk_max_f32\0";
const TEMP: &[u8] = b"cub_temp_bytes_topk_max_f32\0";

type QueryFn = unsafe extern "C" fn(u64, u64, *mut usize) -> c_int;
type RunFn = unsafe extern "C" fn(
    *mut c_void,
    usize,
    *const c_void,
    *mut c_void,
    *mut c_void,
    u64,
    u64,
    *mut c_void,
) -> c_int;

/// The top-k call of a loaded shim ([`Cub::topk`]).
pub struct CubTopkFns<'a> {
    cub: &'a Cub,
    run: RunFn,
    temp: QueryFn,
}

impl Cub {
    /// The f32 top-k call, or the error naming the symbol the shim lacks.
    pub fn topk(&self) -> Result<CubTopkFns<'_>, CubError> {
        // SAFETY: the types are those of the shim's exports (module docs); the pointers live in
        // the returned value, which borrows `self` (and so its library).
        unsafe {
            Ok(CubTopkFns {
                cub: self,
                run: self.symbol(RUN)?,
                temp: self.symbol(TEMP)?,
            })
        }
    }
}

impl CubTopkFns<'_> {
    /// Scratch bytes of `MaxPairs` of `k` of `n` keys.
    pub fn temp_bytes(&self, n: u64, k: u64) -> Result<usize, CubError> {
        // SAFETY: the query only writes `bytes`; no device memory is touched.
        self.cub
            .query(TEMP, |bytes| unsafe { (self.temp)(n, k, bytes) })
    }

    /// `cub::DeviceTopK::MaxPairs` of the `n` f32 keys at `input`: the `k` largest into
    /// `keys_out` and their indices (u32) into `idx_out`, in no order, enqueued on `stream`.
    ///
    /// # Safety
    /// The module's contract.
    pub unsafe fn max_pairs(
        &self,
        (temp, temp_bytes): (u64, usize),
        input: u64,
        (keys_out, idx_out): (u64, u64),
        (n, k): (u64, u64),
        stream: *mut c_void,
    ) -> Result<(), CubError> {
        // SAFETY: forwarded from the caller.
        let code = unsafe {
            (self.run)(
                mut_ptr(temp),
                temp_bytes,
                ptr(input),
                mut_ptr(keys_out),
                mut_ptr(idx_out),
                n,
                k,
                stream,
            )
        };
        self.cub.check(RUN, code)
    }
}

#[cfg(test)]
mod tests {
    use crate::cub::SHIM_SOURCE;

    /// The shim defines both symbols with the argument lists read above.
    #[test]
    fn the_shim_defines_the_topk_symbols() {
        for want in [
            "extern \"C\" int cub_temp_bytes_topk_max_f32(unsigned long long n, unsigned long long k, size_t* bytes)",
            "extern \"C\" int cub_topk_max_f32(",
            "void* temp, size_t temp_bytes, const float* in, float* keys_out, unsigned int* idx_out,",
            "unsigned long long n, unsigned long long k, void* stream)",
        ] {
            assert!(SHIM_SOURCE.contains(want), "{want}");
        }
    }
}
