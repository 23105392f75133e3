//! The ops with arguments of their own: segmented sums (by offsets, fixed rows), the by-key
//! reduce and scan over u32 keys and f32 values, and the first u32 compactions (select,
//! partition, unique) under their own names (all compactions: `compaction.rs`).

use std::ffi::c_void;

use super::loader::{ScanByKeyFn, TempFn, mut_ptr, not_in_shim, ptr};
use super::symbols::*;
use super::{Cub, CubError};

impl Cub {
    /// Scratch bytes [`Cub::segmented_sum_f32`] needs for `num_segments` segments (CUB asks
    /// nothing of the offsets for it).
    pub fn temp_bytes_segmented_sum_f32(&self, num_segments: i64) -> Result<usize, CubError> {
        // SAFETY: the query only writes `bytes`; no device memory is touched.
        self.query(SEGMENTED_SUM_TEMP_SYMBOL, |bytes| unsafe {
            (self.other.segmented_temp)(num_segments, bytes)
        })
    }

    /// `out[i] = in[begin[i]] + ... + in[end[i] - 1]` (0 for an empty segment) for each of
    /// `num_segments` segments, with `cub::DeviceSegmentedReduce::Sum` (f32), enqueued on
    /// `stream`. CSR offsets (`num_segments + 1` of them, at `offsets`) are `begin = offsets`,
    /// `end = offsets + 8` (one u64 further).
    ///
    /// # Safety
    /// `temp` (at least `temp_bytes` >= [`Cub::temp_bytes_segmented_sum_f32`] bytes), `input`
    /// (f32, every element a segment names), `out` (`num_segments` f32), `begin` and `end`
    /// (`num_segments` u64 each) are device allocations of the context current on this thread,
    /// `stream` is a stream of that context (or null), and none of them is freed or reused
    /// before the stream has finished the work.
    #[allow(clippy::too_many_arguments)] // the C function's arguments
    pub unsafe fn segmented_sum_f32(
        &self,
        temp: u64,
        temp_bytes: usize,
        input: u64,
        out: u64,
        num_segments: i64,
        begin: u64,
        end: u64,
        stream: *mut c_void,
    ) -> Result<(), CubError> {
        // SAFETY: forwarded from the caller.
        let code = unsafe {
            (self.other.segmented)(
                mut_ptr(temp),
                temp_bytes,
                ptr(input),
                mut_ptr(out),
                num_segments,
                ptr(begin),
                ptr(end),
                stream,
            )
        };
        self.check(SEGMENTED_SUM_SYMBOL, code)
    }

    /// Scratch bytes [`Cub::segmented_sum_fixed_f32`] needs for a `rows` x `row_len` matrix.
    pub fn temp_bytes_segmented_sum_fixed_f32(
        &self,
        rows: i64,
        row_len: i64,
    ) -> Result<usize, CubError> {
        // SAFETY: the query only writes `bytes`; no device memory is touched.
        self.query(SEGMENTED_SUM_FIXED_TEMP_SYMBOL, |bytes| unsafe {
            (self.other.fixed_temp)(rows, row_len, bytes)
        })
    }

    /// The f32 sum of each row of the row-major `rows` x `row_len` matrix at `input` into
    /// `out[row]`, with `cub::DeviceSegmentedReduce::Sum` (see
    /// [`Cub::segmented_fixed_native`] for which overload), enqueued on `stream`. With CUB's
    /// fixed-size overload `row_len` must fit in an `int` (else CUDA error 1).
    ///
    /// # Safety
    /// As for [`Cub::segmented_sum_f32`], with [`Cub::temp_bytes_segmented_sum_fixed_f32`],
    /// `input` holding `rows * row_len` f32 and `out` `rows` f32.
    #[allow(clippy::too_many_arguments)] // the C function's arguments
    pub unsafe fn segmented_sum_fixed_f32(
        &self,
        temp: u64,
        temp_bytes: usize,
        input: u64,
        out: u64,
        rows: i64,
        row_len: i64,
        stream: *mut c_void,
    ) -> Result<(), CubError> {
        // SAFETY: forwarded from the caller.
        let code = unsafe {
            (self.other.fixed)(
                mut_ptr(temp),
                temp_bytes,
                ptr(input),
                mut_ptr(out),
                rows,
                row_len,
                stream,
            )
        };
        self.check(SEGMENTED_SUM_FIXED_SYMBOL, code)
    }

    /// Scratch bytes [`Cub::reduce_by_key_sum_u32_f32`] needs for `n` elements.
    pub fn temp_bytes_reduce_by_key_sum_u32_f32(&self, n: u64) -> Result<usize, CubError> {
        // SAFETY: the query only writes `bytes`; no device memory is touched.
        self.query(REDUCE_BY_KEY_TEMP_SYMBOL, |bytes| unsafe {
            (self.other.reduce_by_key_temp)(n, bytes)
        })
    }

    /// The f32 sum of each run of equal consecutive u32 keys, with
    /// `cub::DeviceReduce::ReduceByKey` (`cuda::std::plus<>`), enqueued on `stream`: run `j`'s
    /// key goes to `unique_out[j]`, its sum to `aggregates_out[j]`, and the number of runs to
    /// `num_runs_out` as one u64.
    ///
    /// # Safety
    /// `temp` (at least `temp_bytes` >= [`Cub::temp_bytes_reduce_by_key_sum_u32_f32`] bytes),
    /// `keys` (`n` u32), `values` (`n` f32), `unique_out` (room for `n` u32), `aggregates_out`
    /// (room for `n` f32) and `num_runs_out` (one u64) are device allocations of the context
    /// current on this thread, the outputs overlapping nothing, `stream` is a stream of that
    /// context (or null), and none of them is freed or reused before the stream has finished
    /// the work.
    #[allow(clippy::too_many_arguments)] // the C function's arguments
    pub unsafe fn reduce_by_key_sum_u32_f32(
        &self,
        temp: u64,
        temp_bytes: usize,
        keys: u64,
        unique_out: u64,
        values: u64,
        aggregates_out: u64,
        num_runs_out: u64,
        n: u64,
        stream: *mut c_void,
    ) -> Result<(), CubError> {
        // SAFETY: forwarded from the caller.
        let code = unsafe {
            (self.other.reduce_by_key)(
                mut_ptr(temp),
                temp_bytes,
                ptr(keys),
                mut_ptr(unique_out),
                ptr(values),
                mut_ptr(aggregates_out),
                mut_ptr(num_runs_out),
                n,
                stream,
            )
        };
        self.check(REDUCE_BY_KEY_SYMBOL, code)
    }

    /// Whether the shim has [`Cub::scan_by_key_sum_u32_f32`] (one of [`OPTIONAL_OTHER_OPS`]:
    /// not in a shim built before it).
    pub fn has_scan_by_key_sum_u32_f32(&self) -> bool {
        self.other.scan_by_key.is_some()
    }

    fn scan_by_key_fns(&self) -> Result<(ScanByKeyFn, TempFn), CubError> {
        self.other
            .scan_by_key
            .ok_or_else(|| not_in_shim(SCAN_BY_KEY_SYMBOL))
    }

    /// Scratch bytes [`Cub::scan_by_key_sum_u32_f32`] needs for `n` elements.
    pub fn temp_bytes_scan_by_key_sum_u32_f32(&self, n: u64) -> Result<usize, CubError> {
        let (_, temp) = self.scan_by_key_fns()?;
        // SAFETY: the query only writes `bytes`; no device memory is touched.
        self.query(SCAN_BY_KEY_TEMP_SYMBOL, |bytes| unsafe { temp(n, bytes) })
    }

    /// The inclusive f32 sum of each run of equal consecutive u32 keys, with
    /// `cub::DeviceScan::InclusiveSumByKey` (`cuda::std::equal_to<>`), enqueued on `stream`:
    /// `values_out[i]` is the sum of `values` over `i`'s run up to and including `i`.
    ///
    /// # Safety
    /// `temp` (at least `temp_bytes` >= [`Cub::temp_bytes_scan_by_key_sum_u32_f32`] bytes),
    /// `keys` (`n` u32), `values` (`n` f32) and `values_out` (room for `n` f32) are device
    /// allocations of the context current on this thread, the output overlapping neither input,
    /// `stream` is a stream of that context (or null), and none of them is freed or reused
    /// before the stream has finished the work.
    #[allow(clippy::too_many_arguments)] // the C function's arguments
    pub unsafe fn scan_by_key_sum_u32_f32(
        &self,
        temp: u64,
        temp_bytes: usize,
        keys: u64,
        values: u64,
        values_out: u64,
        n: u64,
        stream: *mut c_void,
    ) -> Result<(), CubError> {
        let (run, _) = self.scan_by_key_fns()?;
        // SAFETY: forwarded from the caller.
        let code = unsafe {
            run(
                mut_ptr(temp),
                temp_bytes,
                ptr(keys),
                ptr(values),
                mut_ptr(values_out),
                n,
                stream,
            )
        };
        self.check(SCAN_BY_KEY_SYMBOL, code)
    }

    /// Whether the shim has [`Cub::select_if_lt_u32`] (a compaction, [`COMPACTION_OPS`]: not in
    /// a shim built before it).
    pub fn has_select_if_lt_u32(&self) -> bool {
        self.has_compaction::<u32>(CompactOp::SelectIfLt)
    }

    /// Scratch bytes [`Cub::select_if_lt_u32`] needs for `n` elements (any threshold).
    pub fn temp_bytes_select_if_lt_u32(&self, n: u64) -> Result<usize, CubError> {
        self.temp_bytes_compaction::<u32>(CompactOp::SelectIfLt, n)
    }

    /// The u32 elements of `input` below `threshold`, in order, to `out`, with
    /// `cub::DeviceSelect::If`, enqueued on `stream`; their number goes to `num_selected` as
    /// one u64 ([`Cub::select_if_lt`] of u32).
    ///
    /// # Safety
    /// `temp` (at least `temp_bytes` >= [`Cub::temp_bytes_select_if_lt_u32`] bytes), `input`
    /// (`n` u32), `out` (room for `n` u32) and `num_selected` (one u64) are device allocations
    /// of the context current on this thread, the outputs overlapping nothing, `stream` is a
    /// stream of that context (or null), and none of them is freed or reused before the stream
    /// has finished the work.
    #[allow(clippy::too_many_arguments)] // the C function's arguments
    pub unsafe fn select_if_lt_u32(
        &self,
        temp: u64,
        temp_bytes: usize,
        input: u64,
        out: u64,
        num_selected: u64,
        n: u64,
        threshold: u32,
        stream: *mut c_void,
    ) -> Result<(), CubError> {
        // SAFETY: forwarded from the caller.
        unsafe {
            self.select_if_lt::<u32>(
                temp,
                temp_bytes,
                input,
                out,
                num_selected,
                n,
                threshold,
                stream,
            )
        }
    }

    /// Whether the shim has [`Cub::partition_if_lt_u32`] (a compaction, [`COMPACTION_OPS`]).
    pub fn has_partition_if_lt_u32(&self) -> bool {
        self.has_compaction::<u32>(CompactOp::PartitionIfLt)
    }

    /// Scratch bytes [`Cub::partition_if_lt_u32`] needs for `n` elements (any threshold).
    pub fn temp_bytes_partition_if_lt_u32(&self, n: u64) -> Result<usize, CubError> {
        self.temp_bytes_compaction::<u32>(CompactOp::PartitionIfLt, n)
    }

    /// A partition of the u32 elements of `input` with `cub::DevicePartition::If`, enqueued on
    /// `stream`: those below `threshold` in order at the front of `out`, the others after them
    /// in reverse order; the number below goes to `num_selected` as one u64
    /// ([`Cub::partition_if_lt`] of u32).
    ///
    /// # Safety
    /// As for [`Cub::select_if_lt_u32`], with [`Cub::temp_bytes_partition_if_lt_u32`] and
    /// `out` holding `n` u32.
    #[allow(clippy::too_many_arguments)] // the C function's arguments
    pub unsafe fn partition_if_lt_u32(
        &self,
        temp: u64,
        temp_bytes: usize,
        input: u64,
        out: u64,
        num_selected: u64,
        n: u64,
        threshold: u32,
        stream: *mut c_void,
    ) -> Result<(), CubError> {
        // SAFETY: forwarded from the caller.
        unsafe {
            self.partition_if_lt::<u32>(
                temp,
                temp_bytes,
                input,
                out,
                num_selected,
                n,
                threshold,
                stream,
            )
        }
    }

    /// Whether the shim has [`Cub::select_unique_u32`] (a compaction, [`COMPACTION_OPS`]).
    pub fn has_select_unique_u32(&self) -> bool {
        self.has_compaction::<u32>(CompactOp::SelectUnique)
    }

    /// Scratch bytes [`Cub::select_unique_u32`] needs for `n` elements.
    pub fn temp_bytes_select_unique_u32(&self, n: u64) -> Result<usize, CubError> {
        self.temp_bytes_compaction::<u32>(CompactOp::SelectUnique, n)
    }

    /// The first u32 of each run of equal consecutive elements of `input`, in order, to `out`,
    /// with `cub::DeviceSelect::Unique`, enqueued on `stream`; their number goes to
    /// `num_selected` as one u64 ([`Cub::select_unique`] of u32).
    ///
    /// # Safety
    /// As for [`Cub::select_if_lt_u32`], with [`Cub::temp_bytes_select_unique_u32`].
    #[allow(clippy::too_many_arguments)] // the C function's arguments
    pub unsafe fn select_unique_u32(
        &self,
        temp: u64,
        temp_bytes: usize,
        input: u64,
        out: u64,
        num_selected: u64,
        n: u64,
        stream: *mut c_void,
    ) -> Result<(), CubError> {
        // SAFETY: forwarded from the caller.
        unsafe { self.select_unique::<u32>(temp, temp_bytes, input, out, num_selected, n, stream) }
    }
}
