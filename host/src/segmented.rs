//! Segmented reductions, one launch each: `out[s] = reduce(input[segment s])` for every
//! segment `s`, with the segments described once by [`Segments`] (begin/end offsets, CSR
//! offsets, or a fixed length: the rows of a row-major matrix).
//!
//! | call | what |
//! | --- | --- |
//! | [`Context::segmented_reduce`]`(input, segments, out, op)` | a built-in [`Reduction`] per segment |
//! | [`Context::segmented_argmin`]`(input, segments, indices, values)` | smallest value and its index within the segment |
//! | [`Context::segmented_argmax`]`(input, segments, indices, values)` | largest value and its index within the segment |
//! | [`Context::segmented_reduce_custom`]`::<T, O>(lib, input, segments, out)` | a user operator's kernel |
//! | [`Context::segmented_arg_custom`]`::<T, O>(lib, input, segments, indices, values)` | a user operator that writes indices |
//! | [`Context::offset_check`], [`Context::take_offset_check`] | device offsets checked later ([`Segments::check_later`]) |
//!
//! Semantics are the full reduction's (see [`crate::reduce`]): integer sums and products wrap,
//! float min/max propagate NaN and order `-0.0 < +0.0`, argmin/argmax give the first
//! occurrence (a NaN wins). An empty segment gives the operator's identity; for argmin/argmax
//! the index `u64::MAX` (and the identity, `+inf`/`-inf` or `MAX`/`MIN`, as value). Indices
//! are positions *within* the segment.
//!
//! Deterministic: each segment's combining order depends on its length alone (the kernel's
//! docs, `kernels::reduce::segmented`, give the strategy), so the bits are the same for every
//! grid, GPU and the simulator.
//!
//! Validation: lengths are checked on the host. Offsets that live on the device are checked by
//! the kernel itself as it reads them (a segment with `end < begin` or `end > input.len()` is
//! never read; it is reported through a device flag): the offset forms therefore read that
//! flag back after the launch, so they block until the kernel has run and cannot be captured
//! into a CUDA graph. [`Segments::check_later`] sends that report to an [`OffsetCheck`] of the
//! caller's instead, read when the caller chooses ([`Context::take_offset_check`]): such a call
//! never blocks and can be captured, as the fixed-length forms, which are checked on the host
//! alone.

use kernels::Kernel;
use kernels::ops::{ArgMax, ArgMin};
use kernels::reduce::segmented::{
    BAD_DECREASING, BLOCK, CHUNK_VECS, CTL_WORDS, ENTRY_WORDS, LISTED_MAX, OWNER_WORDS,
    SEGMENTS_PER_BLOCK, SegmentedParams, SegmentedReduceInstance, SimSegmentedFn, WARP_MAX,
    listed_workspace_bytes, rows_chunks_per_row, rows_workspace_bytes,
};

use crate::error::{Error, Result, SegmentFault};
use crate::reduce::{DeviceElement, Reduction, reduction_arm};
use crate::runtime::LaunchShape;
use crate::runtime::{Backend, Context, DeviceBuffer, DeviceView, DeviceViewMut, KernelLibrary};

/// A segmented reduction's kernels as the host calls them (`Out` is what they write per
/// segment): the general one, and the one for fixed-size rows longer than
/// [`WARP_MAX`] (the same bits for those rows).
#[derive(Clone, Copy, Debug)]
pub struct SegmentedKernel<T, Out> {
    /// Offsets of any kind, and fixed-size rows up to `WARP_MAX` elements.
    pub general: Kernel<SimSegmentedFn<T, Out>>,
    /// Fixed-size rows longer than `WARP_MAX` elements.
    pub rows: Kernel<SimSegmentedFn<T, Out>>,
}

impl<T: kernels::ops::Element, Out> SegmentedKernel<T, Out> {
    /// The kernels `segmented_reduce_kernels!` exported for operator `O`.
    pub fn of<O: SegmentedReduceInstance<T, Out = Out>>() -> Self {
        Self {
            general: O::KERNEL,
            rows: O::ROWS_KERNEL,
        }
    }
}

/// Element types of the built-in segmented reductions (i32, u32, i64, u64, f32, f64): the
/// kernels come from the `kernels` crate's `segmented_reduce_kernels!` invocation.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no built-in segmented reduction",
    note = "the segmented reductions take i32, u32, i64, u64, f32 or f64"
)]
pub trait SegmentedElement: DeviceElement {
    /// The kernel of `op` for this type; `None` where the operator is not defined (bitwise
    /// operators on floats).
    fn segmented_kernel(op: Reduction) -> Option<SegmentedKernel<Self, Self>>;
    /// The per-segment argmin kernel (writes values and indices).
    fn segmented_argmin_kernel() -> SegmentedKernel<Self, Self>;
    /// The per-segment argmax kernel (writes values and indices).
    fn segmented_argmax_kernel() -> SegmentedKernel<Self, Self>;
}

/// [`SegmentedElement`] of one element type of the kernels' built-in table.
macro_rules! segmented_element {
    ($t:ident { $([$op:ident $Op:path])* }) => {
        impl SegmentedElement for $t {
            fn segmented_kernel(op: Reduction) -> Option<SegmentedKernel<Self, Self>> {
                $( reduction_arm!(op, $op, SegmentedKernel::of::<$Op>()); )*
                None
            }
            fn segmented_argmin_kernel() -> SegmentedKernel<Self, Self> {
                SegmentedKernel::of::<ArgMin>()
            }
            fn segmented_argmax_kernel() -> SegmentedKernel<Self, Self> {
                SegmentedKernel::of::<ArgMax>()
            }
        }
    };
}
kernels::builtin_table!(types segmented_element! {} int float);

/// The segments of a segmented reduction (one description for [`Context::segmented_reduce`],
/// the per-segment argmin/argmax and the custom-operator forms), made by one of:
///
/// - [`Segments::offsets`]`(begin, end)`: segment `s` is `begin[s]..end[s]` (device `u64`
///   element offsets, one per segment; segments may overlap, be empty and come in any order);
/// - [`Segments::csr`]`(offsets)`: CSR offsets, one more than there are segments, segment `s`
///   is `offsets[s]..offsets[s + 1]`;
/// - [`Segments::fixed`]`(len)`: segments of `len` elements each, back to back (the rows of a
///   row-major matrix): `out.len()` segments, and the input must hold exactly
///   `out.len() * len` elements.
///
/// Device offsets are checked by the kernel as it reads them (a bad segment is never read and
/// gives the identity); by default the call reads that check back and so blocks.
/// [`Segments::check_later`] sends it to an [`OffsetCheck`] instead: the call then never blocks
/// and can be captured into a CUDA graph. Fixed-length segments are checked on the host alone.
#[derive(Debug, Clone, Copy)]
pub struct Segments<'a> {
    kind: SegmentsKind<'a>,
    /// Where the kernel reports the first bad segment instead of the call reading it back.
    check: Option<&'a OffsetCheck>,
}

#[derive(Debug, Clone, Copy)]
enum SegmentsKind<'a> {
    Offsets {
        begin: DeviceView<'a, u64>,
        end: DeviceView<'a, u64>,
    },
    Csr(DeviceView<'a, u64>),
    Fixed(u64),
}

/// A device flag that segmented reductions over device offsets report bad offsets into when
/// called with [`Segments::check_later`], instead of reading their check back (which blocks).
/// It keeps the lowest bad segment of any launch since it was last taken;
/// [`Context::take_offset_check`] reads it (blocking), clears it and turns it into an error.
/// Made by [`Context::offset_check`]; usable by the context that made it.
#[derive(Debug)]
pub struct OffsetCheck {
    flag: DeviceBuffer<u64>,
}

impl<'a> Segments<'a> {
    /// Segment `s` is `begin[s]..end[s]`, from anything that views device `u64`s (buffers,
    /// cudarc memory): one offset per segment in each.
    ///
    /// ```
    /// # fn main() -> gpu_reduce::Result<()> {
    /// use gpu_reduce::{Context, Reduction, Segments};
    /// let ctx = Context::sim()?;
    /// let x = ctx.htod(&[1i32, 2, 3, 4, 5])?;
    /// let begin = ctx.htod(&[0u64, 2, 5])?;
    /// let end = ctx.htod(&[2u64, 5, 5])?;
    /// let mut out = ctx.alloc_zeros::<i32>(3)?;
    /// ctx.segmented_reduce(&x, Segments::offsets(&begin, &end), &mut out, Reduction::Sum)?;
    /// assert_eq!(ctx.dtoh(&out)?, [3, 12, 0]); // the empty segment gives the identity
    /// # Ok(()) }
    /// ```
    pub fn offsets(
        begin: impl Into<DeviceView<'a, u64>>,
        end: impl Into<DeviceView<'a, u64>>,
    ) -> Self {
        Segments {
            kind: SegmentsKind::Offsets {
                begin: begin.into(),
                end: end.into(),
            },
            check: None,
        }
    }

    /// CSR offsets: `offsets` holds one more entry than there are segments, and segment `s` is
    /// `offsets[s]..offsets[s + 1]`.
    ///
    /// ```
    /// # fn main() -> gpu_reduce::Result<()> {
    /// use gpu_reduce::{Context, Reduction, Segments};
    /// let ctx = Context::sim()?;
    /// let x = ctx.htod(&[4.0f32, -1.0, 7.0, 2.0])?;
    /// let offsets = ctx.htod(&[0u64, 1, 4])?;
    /// let mut out = ctx.alloc_zeros::<f32>(2)?;
    /// ctx.segmented_reduce(&x, Segments::csr(&offsets), &mut out, Reduction::Max)?;
    /// assert_eq!(ctx.dtoh(&out)?, [4.0, 7.0]);
    /// # Ok(()) }
    /// ```
    pub fn csr(offsets: impl Into<DeviceView<'a, u64>>) -> Self {
        Segments {
            kind: SegmentsKind::Csr(offsets.into()),
            check: None,
        }
    }

    /// Segments of `len` elements each, back to back: the rows of a row-major matrix with
    /// `len` columns. The input must hold exactly `out.len() * len` elements (a partial last
    /// row is an error, as is `len == 0` with a non-empty input; `len == 0` with an empty input
    /// gives `out.len()` identities). Checked on the host: the call never blocks and can be
    /// captured into a CUDA graph.
    ///
    /// ```
    /// # fn main() -> gpu_reduce::Result<()> {
    /// use gpu_reduce::{Context, Reduction, Segments};
    /// let ctx = Context::sim()?;
    /// let m = ctx.htod(&[1u32, 2, 3, 4, 5, 6])?; // 2 rows of 3
    /// let mut rows = ctx.alloc_zeros::<u32>(2)?;
    /// ctx.segmented_reduce(&m, Segments::fixed(3), &mut rows, Reduction::Product)?;
    /// assert_eq!(ctx.dtoh(&rows)?, [6, 120]);
    /// # Ok(()) }
    /// ```
    pub fn fixed(len: u64) -> Self {
        Segments {
            kind: SegmentsKind::Fixed(len),
            check: None,
        }
    }

    /// These segments with their device offsets checked into `check` rather than read back:
    /// the reduction never blocks and can be captured into a CUDA graph; the caller reads the
    /// check when it likes ([`Context::take_offset_check`]). A bad segment still gives the
    /// identity and is never read. Fixed-length segments need no device check and come back
    /// unchanged.
    ///
    /// ```
    /// # fn main() -> gpu_reduce::Result<()> {
    /// use gpu_reduce::{Context, Reduction, Segments};
    /// let ctx = Context::sim()?;
    /// let x = ctx.htod(&[1.0f32, 2.0, 3.0])?;
    /// let check = ctx.offset_check()?;
    /// let mut out = ctx.alloc_zeros::<f32>(2)?;
    /// let good = ctx.htod(&[0u64, 1, 3])?;
    /// ctx.segmented_reduce(&x, Segments::csr(&good).check_later(&check), &mut out, Reduction::Sum)?;
    /// ctx.take_offset_check(&check)?; // no bad segment
    /// assert_eq!(ctx.dtoh(&out)?, [1.0, 5.0]);
    /// let bad = ctx.htod(&[0u64, 2, 1])?; // segment 1 ends before it begins
    /// ctx.segmented_reduce(&x, Segments::csr(&bad).check_later(&check), &mut out, Reduction::Sum)?;
    /// assert!(ctx.take_offset_check(&check).is_err());
    /// assert_eq!(ctx.dtoh(&out)?, [3.0, 0.0]); // the bad segment gives the identity
    /// # Ok(()) }
    /// ```
    pub fn check_later(self, check: &'a OffsetCheck) -> Self {
        match self.kind {
            SegmentsKind::Fixed(_) => self,
            kind => Segments {
                kind,
                check: Some(check),
            },
        }
    }
}

/// Scratch of the segmented reductions: the device flag bad offsets are reported through.
#[derive(Default)]
struct SegmentedWorkspace {
    status: Option<DeviceBuffer<u64>>,
    /// The work list (control words, entries, owner records, chunk partials), laid out by
    /// (entry capacity, chunk-slot capacity).
    list: ClearedScratch<(u64, u64)>,
    /// The long-rows kernel's counters and chunk partials, laid out by the row count.
    rows: ClearedScratch<u64>,
    /// The listed form's control words, counters and partials, laid out by the segment count.
    listed: ClearedScratch<u64>,
    /// Test override of the physical grid (0: automatic).
    grid_override: u32,
}

/// A kernel's scratch whose leading words (counters, control words) are zero between launches:
/// the kernel clears what it used, a fresh buffer starts zeroed, and `layout` (the last
/// launch's) says where those words lay. Another layout can put them where partials were, so
/// it clears them first.
#[derive(Default)]
struct ClearedScratch<L> {
    buf: Option<DeviceBuffer<u64>>,
    layout: L,
}

/// Physical blocks on the simulator at most (any grid gives the same bits; more only costs
/// OS-thread switching).
const SIM_GRID: u32 = 64;

/// The fault of a bad segment from the kernel's (inverted) check code.
fn segment_fault(code: u64) -> SegmentFault {
    if code & 1 == BAD_DECREASING {
        SegmentFault::Decreasing
    } else {
        SegmentFault::PastEnd
    }
}

impl Context {
    /// Cap the physical grid of the segmented reductions (`None`: automatic). For tests that
    /// show the result does not depend on the grid.
    #[cfg(feature = "tuning")]
    pub fn set_segmented_grid_limit(&self, grid: Option<u32>) {
        let ws = self.workspace::<SegmentedWorkspace>();
        ws.lock().unwrap_or_else(|p| p.into_inner()).grid_override = grid.map_or(0, |g| g.max(1));
    }

    /// Check the lengths, launch `k` of `lib` and, for device offsets, read back the kernel's
    /// report on them. `index_out` is the second output of kernels that write indices.
    #[allow(clippy::too_many_arguments)] // one private entry for every public form
    fn launch_segmented<T: DeviceElement, Out: Copy>(
        &self,
        lib: &'static KernelLibrary,
        k: &SegmentedKernel<T, Out>,
        writes_index: bool,
        input: DeviceView<'_, T>,
        segments: Segments<'_>,
        mut out: DeviceViewMut<'_, Out>,
        index_out: Option<DeviceViewMut<'_, u64>>,
    ) -> Result<()> {
        let count = out.len();
        let n = input.len();
        let check = segments.check;
        let (begin, end, segment_len) = match segments.kind {
            SegmentsKind::Offsets { begin, end } => {
                if begin.len() != end.len() {
                    return Err(Error::LengthMismatch {
                        what: "segmented reduction: the end offsets (one per begin offset)".into(),
                        expected: begin.len() as u64,
                        got: end.len() as u64,
                    });
                }
                if begin.len() != count {
                    return Err(Error::LengthMismatch {
                        what: "segmented reduction: the segments (offsets, one per output element)"
                            .into(),
                        expected: count as u64,
                        got: begin.len() as u64,
                    });
                }
                (Some(begin), Some(end), 0)
            }
            SegmentsKind::Csr(offsets) => {
                if offsets.len() != count + 1 && !(count == 0 && offsets.is_empty()) {
                    return Err(Error::LengthMismatch {
                        what: format!(
                            "segmented reduction: the CSR offsets (one more entry than the \
                             output's {count} segments)"
                        ),
                        expected: count as u64 + 1,
                        got: offsets.len() as u64,
                    });
                }
                if count == 0 {
                    (None, None, 0)
                } else {
                    (Some(offsets.slice(..count)?), Some(offsets.slice(1..)?), 0)
                }
            }
            SegmentsKind::Fixed(len) => {
                if (count as u64).checked_mul(len) != Some(n as u64) {
                    return Err(Error::LengthMismatch {
                        what: if len == 0 {
                            "segmented reduction: the input of segments of length 0 (must be \
                             empty)"
                                .into()
                        } else {
                            format!(
                                "segmented reduction: the input of {count} segments of {len} \
                                 elements (exactly out.len() x segment_len: no partial last row)"
                            )
                        },
                        expected: (count as u64).saturating_mul(len),
                        got: n as u64,
                    });
                }
                (None, None, len)
            }
        };
        if writes_index != index_out.is_some() {
            return Err(Error::Unsupported {
                op: format!(
                    "the segmented kernel `{}` {} an index output",
                    k.general.name,
                    if index_out.is_some() {
                        "with"
                    } else {
                        "without"
                    }
                ),
                dtype: T::DTYPE,
                reason: if writes_index {
                    "the kernel writes an index (call segmented_arg_custom)"
                } else {
                    "the kernel writes no index (call segmented_reduce_custom)"
                },
            });
        }
        let mut index_out = index_out;
        if let Some(ix) = &index_out
            && ix.len() != count
        {
            return Err(Error::LengthMismatch {
                what: "segmented argmin/argmax: the index output (one per value output)".into(),
                expected: count as u64,
                got: ix.len() as u64,
            });
        }
        if count == 0 {
            return Ok(());
        }
        if begin.is_none() && segment_len > WARP_MAX {
            return self.launch_rows(lib, &k.rows, input, segment_len, out, index_out);
        }
        let k = &k.general;
        let offsets = begin.is_some();
        if let Some(c) = check {
            self.check_owner(DeviceView::from(&c.flag).owner())?;
        }
        if offsets && check.is_none() && self.capturing()? {
            return Err(Error::NotCapturable {
                call: "a segmented reduction over device offsets",
                hint: "it reads the kernel's check of the offsets back (the fixed-length form \
                       can be captured, and so can offsets checked later: \
                       `Segments::check_later`)",
            });
        }

        let ws = self.workspace::<SegmentedWorkspace>();
        // Held through the launch and the read-back: one status flag per context.
        let mut ws = ws.lock().unwrap_or_else(|p| p.into_inner());
        let status = if let Some(c) = check {
            // The caller's flag: not cleared (it keeps the lowest bad segment until taken).
            self.scratch_addr(&c.flag)
        } else if offsets {
            if ws.status.is_none() {
                ws.status = Some(self.alloc_zeros::<u64>(1)?);
            }
            let Some(buf) = &ws.status else {
                unreachable!("allocated just above")
            };
            let addr = self.scratch_addr(buf);
            self.memset_raw(addr, 8)?;
            addr
        } else {
            0
        };

        let chunk = CHUNK_VECS * (16 / std::mem::size_of::<T>() as u64);
        // A few long segments: the kernel's listed form (the same bits) knows where every
        // chunk lies after one round of loads, where the work list takes several round trips.
        if offsets && count as u64 <= LISTED_MAX && n as u64 >= count as u64 * chunk {
            self.launch_listed(lib, k, &mut ws, input, (begin, end), out, index_out, status)?;
        } else {
            // The work list's room: multi-chunk segments of non-overlapping segments number at
            // most n / chunk and hold at most 2n / chunk chunks; when overlapping segments need
            // more, the kernel reduces the rest block by block (same bits, less parallel).
            let entry_cap = (count as u64).min(n as u64 / chunk + 1);
            // Even, so the partials after the owner words stay 16-byte aligned.
            let partial_cap = 2 * (n as u64 / chunk) + 2;
            // Cleared between launches: control words, entries and owner records.
            let cleared = CTL_WORDS + entry_cap * ENTRY_WORDS + OWNER_WORDS * partial_cap;
            let list_words = usize::try_from(cleared + 2 * partial_cap)
                .map_err(|_| Error::OutOfMemory { bytes: usize::MAX })?;
            // Control words, entries and owner records cleared.
            let list = self.cleared_scratch(
                &mut ws.list,
                (entry_cap, partial_cap),
                list_words * 8,
                8 * cleared as usize,
            )?;

            // Blocks: one per group, plus one per chunk a long segment could have, up to what the
            // device holds at once (more would only wait for the first ones to finish). Blocks
            // draw groups as they start and only ever wait for groups already drawn, so any grid
            // is deadlock-free.
            let groups = (count as u64).div_ceil(SEGMENTS_PER_BLOCK as u64);
            let limit = self.segmented_resident(lib, k.name, ws.grid_override)?;
            let grid = (groups + n as u64 / chunk).min(limit as u64) as u32;
            {
                // The ordering guards live until the kernel is queued.
                let (input_addr, _input_access) = self.read(&input)?;
                let begin_read = begin.as_ref().map(|b| self.read(b)).transpose()?;
                let end_read = end.as_ref().map(|e| self.read(e)).transpose()?;
                let (begin_addr, end_addr) = (
                    begin_read.as_ref().map_or(0, |r| r.0),
                    end_read.as_ref().map_or(0, |r| r.0),
                );
                let (out_addr, _out_access) = self.write(&mut out)?;
                let index_write = index_out.as_mut().map(|ix| self.write(ix)).transpose()?;
                let index_addr = index_write.as_ref().map_or(0, |r| r.0);
                let (n, count) = (n as u64, count as u64);
                // SAFETY: addresses of this context's memory. Offsets views hold
                // `count` entries each (checked above), the outputs `count` elements; fixed-length
                // segments cover exactly the input.
                unsafe {
                    self.launch_kernel(
                        lib,
                        k,
                        LaunchShape::linear(grid, BLOCK, 0),
                        SegmentedParams {
                            input: input_addr as *const T,
                            n,
                            begin: begin_addr as *const u64,
                            end: end_addr as *const u64,
                            segment_len,
                            k: count,
                            out: out_addr as *mut Out,
                            index_out: index_addr as *mut u64,
                            status: status as *mut u64,
                            ws: list as *mut u64,
                            entry_cap,
                            partial_cap,
                        },
                    )?;
                }
            }
        }
        if !offsets || check.is_some() {
            return Ok(());
        }
        let Some(buf) = &ws.status else {
            unreachable!("set for offsets above")
        };
        let code = self.dtoh(buf)?[0];
        drop(ws);
        if code == 0 {
            return Ok(());
        }
        let code = !code;
        let s = (code >> 1) as usize;
        let (b, e) = match (begin, end) {
            (Some(b), Some(e)) => (
                self.dtoh(b.slice(s..s + 1)?)?[0],
                self.dtoh(e.slice(s..s + 1)?)?[0],
            ),
            _ => unreachable!("offsets checked on the device only"),
        };
        Err(Error::BadSegment {
            segment: s as u64,
            fault: segment_fault(code),
            offsets: Some((b, e)),
            input_len: Some(n as u64),
        })
    }

    /// The rows kernel over `out.len()` rows of `segment_len` (> `WARP_MAX`) elements; the
    /// lengths are checked by the caller. Never blocks (no read-back); capturable.
    fn launch_rows<T: DeviceElement, Out: Copy>(
        &self,
        lib: &'static KernelLibrary,
        k: &Kernel<SimSegmentedFn<T, Out>>,
        input: DeviceView<'_, T>,
        segment_len: u64,
        mut out: DeviceViewMut<'_, Out>,
        mut index_out: Option<DeviceViewMut<'_, u64>>,
    ) -> Result<()> {
        let rows = out.len() as u64;
        let elem = std::mem::size_of::<T>() as u64;
        // Accumulators are at most 16 bytes (what a shuffle moves).
        let bytes = usize::try_from(rows_workspace_bytes(rows, segment_len, elem, 16))
            .map_err(|_| Error::OutOfMemory { bytes: usize::MAX })?;
        let counter_bytes = (4 * rows as usize).div_ceil(16) * 16;
        let ws = self.workspace::<SegmentedWorkspace>();
        let mut ws = ws.lock().unwrap_or_else(|p| p.into_inner());
        // Each row's last block clears its counter.
        let scratch = if bytes == 0 {
            0
        } else {
            self.cleared_scratch(&mut ws.rows, rows, bytes, counter_bytes)?
        };
        let units = rows * rows_chunks_per_row(segment_len, elem);
        let cap = match (ws.grid_override, &self.backend) {
            (0, Backend::Cuda(_)) => 1 << 30,
            (0, Backend::Sim) => SIM_GRID,
            (g, _) => g,
        };
        let grid = units.min(cap as u64) as u32;
        let (input_addr, _input_access) = self.read(&input)?;
        let (out_addr, _out_access) = self.write(&mut out)?;
        let index_write = index_out.as_mut().map(|ix| self.write(ix)).transpose()?;
        let index_addr = index_write.as_ref().map_or(0, |r| r.0);
        let n = input.len() as u64;
        // SAFETY: `rows_device` reads input, segment_len, k, out, index_out and ws; the input holds exactly rows x segment_len
        // elements, the outputs `rows` each, the scratch `rows_workspace_bytes`.
        unsafe {
            self.launch_kernel(
                lib,
                k,
                LaunchShape::linear(grid, BLOCK, 0),
                SegmentedParams {
                    input: input_addr as *const T,
                    n,
                    begin: std::ptr::null(),
                    end: std::ptr::null(),
                    segment_len,
                    k: rows,
                    out: out_addr as *mut Out,
                    index_out: index_addr as *mut u64,
                    status: std::ptr::null_mut(),
                    ws: scratch as *mut u64,
                    entry_cap: 0,
                    partial_cap: 0,
                },
            )
        }
    }

    /// The general kernel's listed form (`entry_cap` 0: `listed_device`) over `out.len()` (at
    /// most `LISTED_MAX`) offsets segments, reporting bad offsets to `status`. Never blocks.
    #[allow(clippy::too_many_arguments)] // the general path's state, passed on
    fn launch_listed<T: DeviceElement, Out: Copy>(
        &self,
        lib: &'static KernelLibrary,
        k: &Kernel<SimSegmentedFn<T, Out>>,
        ws: &mut SegmentedWorkspace,
        input: DeviceView<'_, T>,
        (begin, end): (Option<DeviceView<'_, u64>>, Option<DeviceView<'_, u64>>),
        mut out: DeviceViewMut<'_, Out>,
        mut index_out: Option<DeviceViewMut<'_, u64>>,
        status: u64,
    ) -> Result<()> {
        let (Some(begin), Some(end)) = (begin, end) else {
            unreachable!("the listed kernel takes offsets")
        };
        let count = out.len() as u64;
        let n = input.len() as u64;
        let elem = std::mem::size_of::<T>() as u64;
        let chunk = CHUNK_VECS * (16 / elem);
        // Non-overlapping segments have at most n / chunk + 1 chunks each beyond the first
        // (`chunks_of`); overlapping ones past that are reduced block by block (same bits).
        let cap = n / chunk + count + 1;
        // Accumulators are at most 16 bytes (what a shuffle moves).
        let bytes = usize::try_from(listed_workspace_bytes(count, cap, 16))
            .map_err(|_| Error::OutOfMemory { bytes: usize::MAX })?;
        let cleared = 16 + (4 * count as usize).div_ceil(16) * 16;
        // Control words and counters cleared (the last block out and each segment's last
        // chunk clear them).
        let scratch = self.cleared_scratch(&mut ws.listed, count, bytes, cleared)?;
        let limit = self.segmented_resident(lib, k.name, ws.grid_override)?;
        let grid = (n / chunk + count).min(limit as u64).max(1) as u32;
        let (input_addr, _input_access) = self.read(&input)?;
        let (begin_addr, _begin_access) = self.read(&begin)?;
        let (end_addr, _end_access) = self.read(&end)?;
        let (out_addr, _out_access) = self.write(&mut out)?;
        let index_write = index_out.as_mut().map(|ix| self.write(ix)).transpose()?;
        let index_addr = index_write.as_ref().map_or(0, |r| r.0);
        // SAFETY: entry_cap 0 selects `listed_device`, which reads all but segment_len; the offsets hold `count` entries
        // each (checked by the caller), the outputs `count` elements, the scratch
        // `listed_workspace_bytes`; the table takes 8 bytes per segment of dynamic shared
        // memory.
        unsafe {
            self.launch_kernel(
                lib,
                k,
                LaunchShape::linear(grid, BLOCK, 8 * count as u32),
                SegmentedParams {
                    input: input_addr as *const T,
                    n,
                    begin: begin_addr as *const u64,
                    end: end_addr as *const u64,
                    segment_len: 0,
                    k: count,
                    out: out_addr as *mut Out,
                    index_out: index_addr as *mut u64,
                    status: status as *mut u64,
                    ws: scratch as *mut u64,
                    entry_cap: 0,
                    partial_cap: cap,
                },
            )
        }
    }

    /// The address of `s`'s buffer (at least `bytes`) with its first `cleared` bytes zero for
    /// a launch of `layout`; under graph capture, scratch of the graph's own, cleared inside the
    /// graph (a replay must not meet the last replay's words).
    fn cleared_scratch<L: PartialEq + Copy>(
        &self,
        s: &mut ClearedScratch<L>,
        layout: L,
        bytes: usize,
        cleared: usize,
    ) -> Result<u64> {
        if let Some(base) = self.graph_scratch(bytes)? {
            self.memset_raw(base, cleared)?;
            return Ok(base);
        }
        let words = bytes.div_ceil(8);
        if s.buf.as_ref().is_none_or(|b| b.len() < words) {
            s.buf = None; // free the old one first
            s.buf = Some(self.alloc_zeros::<u64>(words.max(1024))?);
            s.layout = layout;
        }
        let Some(b) = &s.buf else {
            unreachable!("allocated just above")
        };
        let addr = self.scratch_addr(b);
        if s.layout != layout {
            self.memset_raw(addr, cleared)?;
            s.layout = layout;
        }
        Ok(addr)
    }

    /// Blocks of the segmented kernel `name` the device holds at once (more would only wait
    /// for the first ones to finish), or the test override; at least 1.
    fn segmented_resident(
        &self,
        lib: &'static KernelLibrary,
        name: &'static str,
        grid_override: u32,
    ) -> Result<u32> {
        Ok(match (grid_override, &self.backend) {
            (0, Backend::Cuda(_)) => {
                let sms = self.info().multiprocessors.max(1);
                sms * self.kernel(lib, name)?.blocks_per_sm(BLOCK)?
            }
            (0, Backend::Sim) => SIM_GRID,
            (g, _) => g,
        }
        .max(1))
    }

    fn segmented_kernel_for<T: SegmentedElement>(op: Reduction) -> Result<SegmentedKernel<T, T>> {
        T::segmented_kernel(op).ok_or_else(|| Error::Unsupported {
            op: format!("the {} reduction", op.name()),
            dtype: T::DTYPE,
            reason: "the reduction is defined for integers",
        })
    }

    /// Reduce each segment of `input` with `op` into `out[s]`, in one launch: one output
    /// element per segment, segments as [`Segments`] gives them (begin/end offsets, CSR
    /// offsets, fixed-length rows). Empty segments give the operator's identity; offset
    /// segments may overlap and come in any order. Device offsets with `end < begin` or past
    /// the input are an [`Error::BadSegment`] naming the first such segment (checked by the
    /// kernel, which never reads them; `out` is then unspecified): the call reads that check
    /// back, so it blocks until the kernel has run, unless the segments were made with
    /// [`Segments::check_later`]. Fixed-length segments are checked on the host: never
    /// blocks, can be captured into a CUDA graph.
    ///
    /// ```
    /// # fn main() -> gpu_reduce::Result<()> {
    /// use gpu_reduce::{Context, Reduction, Segments};
    /// let ctx = Context::sim()?;
    /// let x = ctx.htod(&[1i32, 2, 3, 4, 5, 6])?;
    /// let offsets = ctx.htod(&[0u64, 2, 6])?;
    /// let mut out = ctx.alloc_zeros::<i32>(2)?;
    /// ctx.segmented_reduce(&x, Segments::csr(&offsets), &mut out, Reduction::Sum)?;
    /// assert_eq!(ctx.dtoh(&out)?, [3, 18]);
    /// let mut rows = ctx.alloc_zeros::<i32>(3)?;
    /// ctx.segmented_reduce(&x, Segments::fixed(2), &mut rows, Reduction::Max)?;
    /// assert_eq!(ctx.dtoh(&rows)?, [2, 4, 6]);
    /// # Ok(()) }
    /// ```
    pub fn segmented_reduce<'a, T: SegmentedElement>(
        &self,
        input: impl Into<DeviceView<'a, T>>,
        segments: Segments<'_>,
        out: impl Into<DeviceViewMut<'a, T>>,
        op: Reduction,
    ) -> Result<()> {
        let k = Self::segmented_kernel_for::<T>(op)?;
        self.launch_segmented(
            &crate::BUILTIN,
            &k,
            false,
            input.into(),
            segments,
            out.into(),
            None,
        )
    }

    /// A cleared [`OffsetCheck`] for segmented reductions on this context that should not
    /// block on their offsets' check ([`Segments::check_later`]).
    pub fn offset_check(&self) -> Result<OffsetCheck> {
        Ok(OffsetCheck {
            flag: self.alloc_zeros::<u64>(1)?,
        })
    }

    /// Read `check` (this waits for the work queued before it), clear it, and return the
    /// lowest bad segment any launch reported into it since it was last taken, as
    /// [`Error::BadSegment`] naming the segment and what is wrong; `Ok` when there was
    /// none. The offsets themselves are not read again (they may have changed since).
    pub fn take_offset_check(&self, check: &OffsetCheck) -> Result<()> {
        self.check_owner(DeviceView::from(&check.flag).owner())?;
        let code = self.dtoh(&check.flag)?[0];
        if code == 0 {
            return Ok(());
        }
        self.memset_raw(self.scratch_addr(&check.flag), 8)?;
        let code = !code;
        let s = code >> 1;
        Err(Error::BadSegment {
            segment: s,
            fault: segment_fault(code),
            offsets: None,
            input_len: None,
        })
    }

    /// Per segment, the smallest value and the index *within the segment* of its first
    /// occurrence (a NaN wins): `values[s]` and `indices[s]`. An empty segment gives index
    /// `u64::MAX` and value the identity of min (`+inf`, or the type's `MAX`). Segments as in
    /// [`Segments`]; bad device offsets as in [`Context::segmented_reduce`].
    ///
    /// ```
    /// # fn main() -> gpu_reduce::Result<()> {
    /// use gpu_reduce::{Context, Segments};
    /// let ctx = Context::sim()?;
    /// let x = ctx.htod(&[5i64, 1, 1, 9, 0, 3])?;
    /// let (mut ix, mut v) = (ctx.alloc_zeros::<u64>(2)?, ctx.alloc_zeros::<i64>(2)?);
    /// ctx.segmented_argmin(&x, Segments::fixed(3), &mut ix, &mut v)?;
    /// assert_eq!(ctx.dtoh(&ix)?, [1, 1]); // first occurrence, index within the row
    /// assert_eq!(ctx.dtoh(&v)?, [1, 0]);
    /// # Ok(()) }
    /// ```
    pub fn segmented_argmin<'a, T: SegmentedElement>(
        &self,
        input: impl Into<DeviceView<'a, T>>,
        segments: Segments<'_>,
        indices: impl Into<DeviceViewMut<'a, u64>>,
        values: impl Into<DeviceViewMut<'a, T>>,
    ) -> Result<()> {
        let k = T::segmented_argmin_kernel();
        self.launch_segmented(
            &crate::BUILTIN,
            &k,
            true,
            input.into(),
            segments,
            values.into(),
            Some(indices.into()),
        )
    }

    /// Per segment, the largest value and the index within the segment of its first
    /// occurrence (a NaN wins); an empty segment gives index `u64::MAX` and value the identity
    /// of max (`-inf`, or the type's `MIN`). As [`Context::segmented_argmin`] otherwise.
    pub fn segmented_argmax<'a, T: SegmentedElement>(
        &self,
        input: impl Into<DeviceView<'a, T>>,
        segments: Segments<'_>,
        indices: impl Into<DeviceViewMut<'a, u64>>,
        values: impl Into<DeviceViewMut<'a, T>>,
    ) -> Result<()> {
        let k = T::segmented_argmax_kernel();
        self.launch_segmented(
            &crate::BUILTIN,
            &k,
            true,
            input.into(),
            segments,
            values.into(),
            Some(indices.into()),
        )
    }

    /// A user operator's segmented reduction: `O`'s kernel over `T`, exported by
    /// `kernels::segmented_reduce_kernels! { name, rows_name: T, O; }` in a kernel crate whose PTX `lib`
    /// embeds; `out[s]` gets segment `s`'s accumulator. (Instances exported with the `arg`
    /// form write values and indices: call those through [`Context::segmented_arg_custom`].)
    pub fn segmented_reduce_custom<'a, T: DeviceElement, O: SegmentedReduceInstance<T>>(
        &self,
        lib: &'static KernelLibrary,
        input: impl Into<DeviceView<'a, T>>,
        segments: Segments<'_>,
        out: impl Into<DeviceViewMut<'a, O::Out>>,
    ) -> Result<()>
    where
        O::Out: 'a,
    {
        self.launch_segmented(
            lib,
            &SegmentedKernel::of::<O>(),
            O::WRITES_INDEX,
            input.into(),
            segments,
            out.into(),
            None,
        )
    }

    /// A user operator's segmented reduction exported with the `arg` form of
    /// `kernels::segmented_reduce_kernels!` (`name, rows_name: T, O, arg;`): values to `values[s]`, indices
    /// within the segment to `indices[s]`.
    pub fn segmented_arg_custom<'a, T: DeviceElement, O: SegmentedReduceInstance<T>>(
        &self,
        lib: &'static KernelLibrary,
        input: impl Into<DeviceView<'a, T>>,
        segments: Segments<'_>,
        indices: impl Into<DeviceViewMut<'a, u64>>,
        values: impl Into<DeviceViewMut<'a, O::Out>>,
    ) -> Result<()>
    where
        O::Out: 'a,
    {
        self.launch_segmented(
            lib,
            &SegmentedKernel::of::<O>(),
            O::WRITES_INDEX,
            input.into(),
            segments,
            values.into(),
            Some(indices.into()),
        )
    }
}

/// Every built-in segmented kernel's name (general and long rows, per pair of the built-in
/// table), for the library's kernel-index test.
#[cfg(test)]
pub(crate) fn kernel_names() -> Vec<&'static str> {
    fn of<T: SegmentedElement>(names: &mut Vec<&'static str>) {
        names.extend(
            Reduction::ALL
                .iter()
                .filter_map(|&op| T::segmented_kernel(op))
                .flat_map(|k| [k.general.name, k.rows.name]),
        );
        for k in [T::segmented_argmin_kernel(), T::segmented_argmax_kernel()] {
            names.extend([k.general.name, k.rows.name]);
        }
    }
    let mut names = vec![];
    macro_rules! each {
        ($t:ident $ops:tt) => {
            of::<$t>(&mut names)
        };
    }
    kernels::builtin_table!(types each! {} int float);
    names
}
