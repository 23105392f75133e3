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
//! grid, GPU and the simulator. CSR offsets of short segments (a mean length of at most
//! `SEGMENTED.tiles_max_average`) are read as tiles instead (sum, min and max: the tiles form,
//! `kernels::reduce::segmented::tiles_device`): a float sum's order there follows the
//! segment's start and end in the fixed tile grid, again the same bits on every run, grid, GPU
//! and the simulator. Which form runs depends on the counts alone.
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
use kernels::reduce::segmented::{SegmentedReduceInstance, SimSegmentedFn};

use crate::error::{Error, Result};
use crate::reduce::{DeviceElement, Reduction, reduction_arm};
use crate::runtime::{Context, DeviceView, DeviceViewMut, KernelLibrary};
// Named by the docs here.
#[cfg(doc)]
use kernels::reduce::segmented::WARP_MAX;

mod check;
mod launch;

pub use check::OffsetCheck;

/// A segmented reduction's kernels as the host calls them (`Out` is what they write per
/// segment): the general one, the one for fixed-size rows longer than [`WARP_MAX`] (the same
/// bits for those rows), the listed form for a few long segments, and where the operator has
/// one the tiles form for CSR offsets of short segments.
#[derive(Clone, Copy, Debug)]
pub struct SegmentedKernel<T, Out> {
    /// Offsets of any kind, and fixed-size rows up to `WARP_MAX` elements.
    pub general: Kernel<SimSegmentedFn<T, Out>>,
    /// Fixed-size rows longer than `WARP_MAX` elements.
    pub rows: Kernel<SimSegmentedFn<T, Out>>,
    /// A few long offsets segments, every chunk listed up front.
    pub listed: Kernel<SimSegmentedFn<T, Out>>,
    /// CSR offsets of short segments read as tiles (built-in sums, minima and maxima only).
    pub tiles: Option<Kernel<SimSegmentedFn<T, Out>>>,
}

impl<T: kernels::ops::Element, Out> SegmentedKernel<T, Out> {
    /// The kernels `segmented_reduce_kernels!` exported for operator `O`.
    pub fn of<O: SegmentedReduceInstance<T, Out = Out>>() -> Self {
        Self {
            general: O::KERNEL,
            rows: O::ROWS_KERNEL,
            listed: O::LISTED_KERNEL,
            tiles: O::TILES_KERNEL,
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
    /// identity and is never read (when CSR offsets decrease, the other segments' results are
    /// unspecified, possibly what `out` held: short segments are read as tiles, which take the
    /// offsets as sorted).
    /// Fixed-length segments need no device check and come back unchanged.
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
    /// // The bad segment gives the identity (decreasing offsets leave the others unspecified).
    /// assert_eq!(ctx.dtoh(&out)?[1], 0.0);
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

impl Context {
    /// The built-in segmented kernel of `op` for `T`, or why the library has none.
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

/// Every built-in segmented kernel's name (general, long rows and listed, per pair of the built-in
/// table), for the library's kernel-index test.
#[cfg(test)]
pub(crate) fn kernel_names() -> Vec<&'static str> {
    fn of<T: SegmentedElement>(names: &mut Vec<&'static str>) {
        names.extend(
            Reduction::ALL
                .iter()
                .filter_map(|&op| T::segmented_kernel(op))
                .flat_map(|k| {
                    [k.general.name, k.rows.name, k.listed.name]
                        .into_iter()
                        .chain(k.tiles.map(|t| t.name))
                }),
        );
        for k in [T::segmented_argmin_kernel(), T::segmented_argmax_kernel()] {
            names.extend([k.general.name, k.rows.name, k.listed.name]);
        }
    }
    let mut names: Vec<_> = [4, 8]
        .into_iter()
        .filter_map(|b| kernels::reduce::segmented::tiles_bounds_kernel(b).map(|k| k.name))
        .collect();
    macro_rules! each {
        ($t:ident $ops:tt) => {
            of::<$t>(&mut names)
        };
    }
    kernels::builtin_table!(types each! {} int float);
    names
}
