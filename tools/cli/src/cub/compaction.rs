//! The compactions of u32, f32 and u64 elements ([`CompactOp`], [`CubCompact`]): select by a
//! threshold or byte flags, two- and three-way partitions, unique, run-length encoding, the
//! non-trivial runs and unique by key. Every one is optional: a shim built before it lacks it
//! ([`Cub::has_compaction`]; calling it then fails with [`CubError::MissingSymbol`]).
//!
//! Counts, run lengths and offsets are u64 on the device (one `unsigned long long` each). The
//! safety contract of every call: `temp` holds at least `temp_bytes` >=
//! [`Cub::temp_bytes_compaction`] bytes, every pointer is a device allocation of the context
//! current on this thread holding what the call reads or room for what it may write (each
//! output `n` elements, the non-trivial runs' `n / 2`; counts as said), the outputs overlap
//! nothing, `stream` is a stream of that context (or null), and none of them is freed or
//! reused before the stream has finished the work.

use std::any::Any;
use std::ffi::c_void;

use super::loader::{CompactFns, mut_ptr, not_in_shim, ptr};
use super::symbols::{CompactOp, CubCompact};
use super::{Cub, CubError};

impl Cub {
    /// `T`'s compactions (the `OtherOps` field of its type).
    fn compaction<T: CubCompact>(&self) -> &CompactFns<T> {
        let o = &self.other;
        let all: [&dyn Any; 3] = [&o.compact_u32, &o.compact_f32, &o.compact_u64];
        all.into_iter()
            .find_map(|c| c.downcast_ref::<CompactFns<T>>())
            .expect("CubCompact is sealed: u32, f32 and u64 only")
    }

    /// Whether the shim has `op` for `T` elements (not in a shim built before it).
    pub fn has_compaction<T: CubCompact>(&self, op: CompactOp) -> bool {
        self.compaction::<T>().temp[op.index()].is_some()
    }

    /// Scratch bytes `op` on `n` elements of `T` needs (any thresholds, any data).
    pub fn temp_bytes_compaction<T: CubCompact>(
        &self,
        op: CompactOp,
        n: u64,
    ) -> Result<usize, CubError> {
        let (run, query) = T::SYMBOLS[op.index()];
        let temp = self.compaction::<T>().temp[op.index()].ok_or_else(|| not_in_shim(run))?;
        // SAFETY: the query only writes `bytes`; no device memory is touched.
        self.query(query, |bytes| unsafe { temp(n, bytes) })
    }

    /// `op`'s run function for `T`, or the error naming its symbol.
    fn compaction_fn<T: CubCompact, F: Copy>(
        &self,
        op: CompactOp,
        f: impl FnOnce(&CompactFns<T>) -> Option<F>,
    ) -> Result<(F, &'static [u8]), CubError> {
        let run = T::SYMBOLS[op.index()].0;
        f(self.compaction::<T>())
            .map(|f| (f, run))
            .ok_or_else(|| not_in_shim(run))
    }

    /// The elements of `input` below `threshold`, in order, to `out`, with
    /// `cub::DeviceSelect::If`, enqueued on `stream`; their number to `num_selected` (one u64).
    ///
    /// # Safety
    /// See the [module](self)'s contract: `input` `n` elements, `out` room for `n`.
    #[allow(clippy::too_many_arguments)] // the C function's arguments
    pub unsafe fn select_if_lt<T: CubCompact>(
        &self,
        temp: u64,
        temp_bytes: usize,
        input: u64,
        out: u64,
        num_selected: u64,
        n: u64,
        threshold: T,
        stream: *mut c_void,
    ) -> Result<(), CubError> {
        let (f, name) = self.compaction_fn::<T, _>(CompactOp::SelectIfLt, |c| c.select_if)?;
        // SAFETY: forwarded from the caller.
        let code = unsafe {
            f(
                mut_ptr(temp),
                temp_bytes,
                ptr(input),
                mut_ptr(out),
                mut_ptr(num_selected),
                n,
                threshold,
                stream,
            )
        };
        self.check(name, code)
    }

    /// The elements of `input` whose byte in `flags` is not 0, in order, to `out`, with
    /// `cub::DeviceSelect::Flagged`, enqueued on `stream`; their number to `num_selected`.
    ///
    /// # Safety
    /// See the [module](self)'s contract: `input` `n` elements, `flags` `n` bytes, `out` room
    /// for `n`.
    #[allow(clippy::too_many_arguments)] // the C function's arguments
    pub unsafe fn select_flagged<T: CubCompact>(
        &self,
        temp: u64,
        temp_bytes: usize,
        input: u64,
        flags: u64,
        out: u64,
        num_selected: u64,
        n: u64,
        stream: *mut c_void,
    ) -> Result<(), CubError> {
        let (f, name) =
            self.compaction_fn::<T, _>(CompactOp::SelectFlagged, |c| c.select_flagged)?;
        // SAFETY: forwarded from the caller.
        let code = unsafe {
            f(
                mut_ptr(temp),
                temp_bytes,
                ptr(input),
                ptr(flags),
                mut_ptr(out),
                mut_ptr(num_selected),
                n,
                stream,
            )
        };
        self.check(name, code)
    }

    /// A two-way partition of `input` with `cub::DevicePartition::If`, enqueued on `stream`:
    /// the elements below `threshold` in order at the front of `out`, the others after them in
    /// reverse order; the number below to `num_selected`.
    ///
    /// # Safety
    /// See the [module](self)'s contract: `input` `n` elements, `out` room for `n`.
    #[allow(clippy::too_many_arguments)] // the C function's arguments
    pub unsafe fn partition_if_lt<T: CubCompact>(
        &self,
        temp: u64,
        temp_bytes: usize,
        input: u64,
        out: u64,
        num_selected: u64,
        n: u64,
        threshold: T,
        stream: *mut c_void,
    ) -> Result<(), CubError> {
        let (f, name) = self.compaction_fn::<T, _>(CompactOp::PartitionIfLt, |c| c.partition_if)?;
        // SAFETY: forwarded from the caller.
        let code = unsafe {
            f(
                mut_ptr(temp),
                temp_bytes,
                ptr(input),
                mut_ptr(out),
                mut_ptr(num_selected),
                n,
                threshold,
                stream,
            )
        };
        self.check(name, code)
    }

    /// A three-way partition of `input` with `cub::DevicePartition::If` (two predicates),
    /// enqueued on `stream`: the elements below `t1` to `first_out`, of the others those below
    /// `t2` to `second_out`, the rest to `unselected_out`, each in input order; the sizes of the
    /// first two to `num_selected[0]` and `num_selected[1]` (two u64).
    ///
    /// # Safety
    /// See the [module](self)'s contract: `input` `n` elements, each output room for `n`,
    /// `num_selected` two u64.
    #[allow(clippy::too_many_arguments)] // the C function's arguments
    pub unsafe fn partition_three_way_lt<T: CubCompact>(
        &self,
        temp: u64,
        temp_bytes: usize,
        input: u64,
        first_out: u64,
        second_out: u64,
        unselected_out: u64,
        num_selected: u64,
        n: u64,
        t1: T,
        t2: T,
        stream: *mut c_void,
    ) -> Result<(), CubError> {
        let op = CompactOp::PartitionThreeWayLt;
        let (f, name) = self.compaction_fn::<T, _>(op, |c| c.partition_three_way)?;
        // SAFETY: forwarded from the caller.
        let code = unsafe {
            f(
                mut_ptr(temp),
                temp_bytes,
                ptr(input),
                mut_ptr(first_out),
                mut_ptr(second_out),
                mut_ptr(unselected_out),
                mut_ptr(num_selected),
                n,
                t1,
                t2,
                stream,
            )
        };
        self.check(name, code)
    }

    /// The first element of each run of equal consecutive elements of `input`, in order, to
    /// `out`, with `cub::DeviceSelect::Unique`, enqueued on `stream`; their number to
    /// `num_selected`.
    ///
    /// # Safety
    /// See the [module](self)'s contract: `input` `n` elements, `out` room for `n`.
    #[allow(clippy::too_many_arguments)] // the C function's arguments
    pub unsafe fn select_unique<T: CubCompact>(
        &self,
        temp: u64,
        temp_bytes: usize,
        input: u64,
        out: u64,
        num_selected: u64,
        n: u64,
        stream: *mut c_void,
    ) -> Result<(), CubError> {
        let (f, name) = self.compaction_fn::<T, _>(CompactOp::SelectUnique, |c| c.select_unique)?;
        // SAFETY: forwarded from the caller.
        let code = unsafe {
            f(
                mut_ptr(temp),
                temp_bytes,
                ptr(input),
                mut_ptr(out),
                mut_ptr(num_selected),
                n,
                stream,
            )
        };
        self.check(name, code)
    }

    /// Run-length encoding with `cub::DeviceRunLengthEncode::Encode`, enqueued on `stream`:
    /// each run of equal consecutive elements' first element to `unique_out` and its length to
    /// `counts_out` (u64), in order; the number of runs to `num_runs` (one u64). With a CUB
    /// before 3.2, `n` above `i32::MAX` is CUDA error 1.
    ///
    /// # Safety
    /// See the [module](self)'s contract: `input` `n` elements, each output room for `n`.
    #[allow(clippy::too_many_arguments)] // the C function's arguments
    pub unsafe fn run_length_encode<T: CubCompact>(
        &self,
        temp: u64,
        temp_bytes: usize,
        input: u64,
        unique_out: u64,
        counts_out: u64,
        num_runs: u64,
        n: u64,
        stream: *mut c_void,
    ) -> Result<(), CubError> {
        let op = CompactOp::RunLengthEncode;
        let (f, name) = self.compaction_fn::<T, _>(op, |c| c.run_length_encode)?;
        // SAFETY: forwarded from the caller.
        let code = unsafe {
            f(
                mut_ptr(temp),
                temp_bytes,
                ptr(input),
                mut_ptr(unique_out),
                mut_ptr(counts_out),
                mut_ptr(num_runs),
                n,
                stream,
            )
        };
        self.check(name, code)
    }

    /// The runs of two or more equal consecutive elements, with
    /// `cub::DeviceRunLengthEncode::NonTrivialRuns`, enqueued on `stream`: each one's first
    /// index to `offsets_out` and its length to `lengths_out` (u64 each), in order; their
    /// number to `num_runs` (one u64). With a CUB before 3.2, `n` above `i32::MAX` is CUDA
    /// error 1.
    ///
    /// # Safety
    /// See the [module](self)'s contract: `input` `n` elements, each output room for `n / 2`.
    #[allow(clippy::too_many_arguments)] // the C function's arguments
    pub unsafe fn non_trivial_runs<T: CubCompact>(
        &self,
        temp: u64,
        temp_bytes: usize,
        input: u64,
        offsets_out: u64,
        lengths_out: u64,
        num_runs: u64,
        n: u64,
        stream: *mut c_void,
    ) -> Result<(), CubError> {
        let op = CompactOp::NonTrivialRuns;
        let (f, name) = self.compaction_fn::<T, _>(op, |c| c.non_trivial_runs)?;
        // SAFETY: forwarded from the caller.
        let code = unsafe {
            f(
                mut_ptr(temp),
                temp_bytes,
                ptr(input),
                mut_ptr(offsets_out),
                mut_ptr(lengths_out),
                mut_ptr(num_runs),
                n,
                stream,
            )
        };
        self.check(name, code)
    }

    /// Unique by key with `cub::DeviceSelect::UniqueByKey` (`T` keys, u32 values), enqueued on
    /// `stream`: each run of equal consecutive keys' key to `keys_out` and its first value to
    /// `values_out`, in order; the number of runs to `num_selected` (one u64).
    ///
    /// # Safety
    /// See the [module](self)'s contract: `keys` `n` elements, `values` `n` u32, each output
    /// room for `n`.
    #[allow(clippy::too_many_arguments)] // the C function's arguments
    pub unsafe fn unique_by_key<T: CubCompact>(
        &self,
        temp: u64,
        temp_bytes: usize,
        keys: u64,
        values: u64,
        keys_out: u64,
        values_out: u64,
        num_selected: u64,
        n: u64,
        stream: *mut c_void,
    ) -> Result<(), CubError> {
        let (f, name) = self.compaction_fn::<T, _>(CompactOp::UniqueByKey, |c| c.unique_by_key)?;
        // SAFETY: forwarded from the caller.
        let code = unsafe {
            f(
                mut_ptr(temp),
                temp_bytes,
                ptr(keys),
                ptr(values),
                mut_ptr(keys_out),
                mut_ptr(values_out),
                mut_ptr(num_selected),
                n,
                stream,
            )
        };
        self.check(name, code)
    }
}
