//! Stream compaction (CUB's `DeviceSelect`, `DevicePartition`): keep the elements a predicate,
//! a byte mask or "first of its run" picks, in input order, in ONE pass over the data (the
//! counts through the scan's decoupled look-back: `kernels::select`). Results are the same on
//! every run by construction: the order is the input's, nothing is combined.
//!
//! | call | keeps | outputs |
//! | --- | --- | --- |
//! | [`Context::select`]`(x, out, pred)` | `pred(x[i])` | the values |
//! | [`Context::select_indices`]`(x, indices, pred)` | `pred(x[i])` | their indices (`u64`) |
//! | [`Context::select_with_indices`]`(x, out, indices, pred)` | `pred(x[i])` | the values and their indices |
//! | [`Context::nonzero`]`(x, indices)` | `x[i] != 0` (a NaN counts) | their indices |
//! | [`Context::select_flagged`]`(x, flags, out)` | `flags[i] != 0` (`masked_select`) | the values |
//! | [`Context::partition`]`(x, selected, rest, pred)` | `pred(x[i])` | the kept values, the others (both in order) |
//! | [`Context::partition_three_way`]`(x, first_out, second_out, rest, first, second)` | `first(x[i])`, else `second(x[i])` | the three parts, each in order |
//! | [`Context::unique`]`(x, out)` | the first of each run of equal elements | the values |
//! | [`Context::run_length_encode`]`(x, unique, counts)` | the same | the values and each run's length |
//! | [`Context::non_trivial_runs`]`(x, offsets, lengths)` | the runs of two or more | their first indices and lengths |
//! | [`Context::unique_by_key`]`(keys, values, unique_keys, first_values)` | the first of each run of equal keys | its key and value |
//! | [`Context::select_custom`]`::<T, P>(lib, x, out)` | a user predicate `P` | the values |
//!
//! Each returns the number kept (blocking; the three-way partition: the sizes of its first two
//! parts); its `_into` form leaves it in a device `u64` (the three-way partition: two) (never
//! blocks; capturable in a CUDA graph), its `_async` form returns a [`Pending`]. An output too
//! small is an
//! [`Error::OutputTooSmall`] naming how many were needed, after what fits was written; nothing
//! is written past an output's end. Element types: i32, u32, i64, u64, f32, f64 (and f16, bf16
//! with the `f16` feature); indices and counts are `u64`.

use kernels::Kernel;
use kernels::gpu::ShflValue;
use kernels::select::predicate::{NEGATE, Ordered};
use kernels::select::{
    Bounds, DELAY_NS, Flagged, MODE_IF, NonTrivialRuns, PREFETCH_BYTES, Runs, SMALL_BLOCK,
    SelectInstance, SelectParams, Short, SimSelectFn, ThreeWay, Unique, UniqueByKey, block_for,
    is_short, shared_bytes, sized_by_launch, tile_elems,
};

use crate::error::{Error, Result, plural};
use crate::reduce::{ACC_WORDS, DeviceElement, Pending};
use crate::runtime::{
    Backend, Context, DeviceBuffer, DeviceView, DeviceViewMut, KernelLibrary, LaunchShape,
};

use crate::scan::ScanWorkspace;

/// A select kernel as the host calls it, with its predicate's mode (`kernels::select::MODE_*`),
/// which picks the launch's block size (`kernels::select::block_for`).
#[derive(Clone, Copy)]
pub struct SelectKernel<T> {
    kernel: Kernel<SimSelectFn<T>>,
    mode: u32,
    /// Its threads per block where they are constant (`kernels::select::sized_by_launch`).
    block: u32,
    /// Its twin for short inputs (`kernels::select::Short`), if it has one.
    short: Option<Kernel<SimSelectFn<T>>>,
}

impl<T: DeviceElement> SelectKernel<T> {
    /// `P`'s kernel.
    fn of<P: SelectInstance<T>>() -> Self {
        SelectKernel {
            kernel: P::KERNEL,
            mode: P::MODE,
            block: P::BLOCK,
            short: None,
        }
    }

    /// `P`'s kernel, with `Short<P>`'s for short inputs.
    fn with_short<P: SelectInstance<T>>() -> Self
    where
        Short<P>: SelectInstance<T>,
    {
        SelectKernel {
            short: Some(<Short<P> as SelectInstance<T>>::KERNEL),
            ..Self::of::<P>()
        }
    }

    /// The kernel and threads per block of a launch over `n` elements (`block`: the tuning
    /// override, if any).
    fn launch(self, n: u64, block: Option<u32>) -> (Kernel<SimSelectFn<T>>, u32) {
        let bytes = size_of::<T>();
        if sized_by_launch(self.mode) {
            return (self.kernel, block.unwrap_or(block_for(n, bytes, self.mode)));
        }
        match (self.short, block) {
            (Some(s), Some(SMALL_BLOCK)) => (s, SMALL_BLOCK),
            (Some(s), None) if is_short(n, bytes) => (s, SMALL_BLOCK),
            _ => (self.kernel, self.block),
        }
    }

    /// Its kernels' names (the embedded-index test).
    #[cfg(test)]
    fn names(self) -> impl Iterator<Item = &'static str> {
        std::iter::once(self.kernel.name).chain(self.short.map(|k| k.name))
    }
}

/// Element types of the built-in compaction: every type of the kernels' built-in table.
#[diagnostic::on_unimplemented(
    message = "no built-in compaction of `{Self}`",
    note = "compaction takes i32, u32, i64, u64, f32, f64 (and half::f16, half::bf16 with the `f16` feature)"
)]
pub trait SelectElement: DeviceElement + ShflValue + Ordered {
    /// A float type (NaN and infinities exist).
    const FLOAT: bool;
    #[doc(hidden)]
    fn select_kernels() -> [SelectKernel<Self>; 7];
}

macro_rules! select_element {
    ($float:literal $t:ident $ops:tt) => {
        impl SelectElement for kernels::builtin_elem!($t) {
            const FLOAT: bool = $float;
            fn select_kernels() -> [SelectKernel<Self>; 7] {
                [
                    SelectKernel::of::<Bounds>(),
                    SelectKernel::of::<Flagged>(),
                    SelectKernel::of::<Unique>(),
                    SelectKernel::of::<Runs>(),
                    SelectKernel::of::<NonTrivialRuns>(),
                    SelectKernel::with_short::<ThreeWay<Bounds, Bounds>>(),
                    SelectKernel::of::<UniqueByKey>(),
                ]
            }
        }
    };
}
kernels::builtin_table!(types select_element! { false } int);
kernels::builtin_table!(types select_element! { true } float);
#[cfg(feature = "f16")]
kernels::builtin_table!(types select_element! { true } half);

/// What [`Context::select`] keeps: `x` compared with constants (IEEE: a NaN compares false,
/// so it is kept only by [`Predicate::Ne`] and [`Predicate::NonZero`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Predicate<T> {
    /// `x < c`
    Lt(T),
    /// `x <= c`
    Le(T),
    /// `x > c`
    Gt(T),
    /// `x >= c`
    Ge(T),
    /// `x == c` (IEEE: `-0.0 == 0.0`)
    Eq(T),
    /// `x != c`
    Ne(T),
    /// `lo <= x < hi`
    InRange(T, T),
    /// `x != 0` (PyTorch's `nonzero`: a NaN is nonzero, `-0.0` is not)
    NonZero,
    /// Not NaN and not infinite (every integer)
    Finite,
    /// Not NaN (every integer)
    NotNan,
}

impl<T: SelectElement> Predicate<T> {
    /// The kernel's constants: `lo`, `hi` (their bits) and the mode bits.
    fn bound(self) -> (u64, u64, u32) {
        let b = |x: T| {
            let w = x.to_words();
            w[0] as u64 | (w[1] as u64) << 32
        };
        let z = T::ZERO;
        // Num's identities: MAX_ID is the lowest value (-inf for floats), MIN_ID the highest:
        // a side with no bound (NaN fails the other side anyway).
        let (low, high) = (T::MAX_ID, T::MIN_ID);
        // `lo > hi`: nothing is kept (`x < c` with no value below `c`, or `c` a NaN).
        let none = (high, low, 0);
        let (lo, hi, mode) = match self {
            Self::Lt(c) => c.next_down().map_or(none, |c| (low, c, 0)),
            Self::Le(c) => (low, c, 0),
            Self::Gt(c) => c.next_up().map_or(none, |c| (c, high, 0)),
            Self::Ge(c) => (c, high, 0),
            Self::Eq(c) => (c, c, 0),
            Self::Ne(c) => (c, c, NEGATE),
            Self::InRange(lo, hi) => hi.next_down().map_or(none, |hi| (lo, hi, 0)),
            Self::NonZero => (z, z, NEGATE),
            // -MAX ..= MAX.
            Self::Finite if T::FLOAT => match (low.next_up(), high.next_down()) {
                (Some(lo), Some(hi)) => (lo, hi, 0),
                _ => none,
            },
            // Every value (an integer is finite and a number).
            Self::NotNan | Self::Finite => (low, high, 0),
        };
        (b(lo), b(hi), mode)
    }
}

/// Where the kept count goes: the context's word (read back), the caller's, or a scratch
/// word of a pending value.
enum Count<'c> {
    Host,
    Device(DeviceViewMut<'c, u64>),
    Scratch(u64),
}

/// `kept` (the kept, and a three-way partition's second part) if the outputs (`lens`: values,
/// indices, rest, run lengths, second part, unique by key's values; `None` when not asked
/// for) had room, else the error naming how many were needed.
fn check_counts(call: &str, n: u64, kept: [u64; 2], lens: [Option<u64>; 6]) -> Result<[u64; 2]> {
    let [kept, kept2] = kept;
    let check = |needed: u64, got: u64, what: &str| -> Result<()> {
        if needed > got {
            return Err(Error::OutputTooSmall {
                what: format!(
                    "{call}: {what} (what fits was written, the first {})",
                    plural(got, "element")
                ),
                needed,
                got,
            });
        }
        Ok(())
    };
    if let Some(len) = lens[0] {
        check(kept, len, "the output")?;
    }
    if let Some(len) = lens[1] {
        check(kept, len, "the indices")?;
    }
    if let Some(len) = lens[3] {
        check(kept, len, "the run lengths")?;
    }
    if let Some(len) = lens[5] {
        check(kept, len, "the first values")?;
    }
    if let Some(len) = lens[4] {
        check(kept2, len, "the second part")?;
    }
    if let Some(len) = lens[2] {
        check(
            n.saturating_sub(kept).saturating_sub(kept2),
            len,
            "the rest",
        )?;
    }
    Ok([kept, kept2])
}

/// The outputs of one launch.
struct Outputs<'v, 'i, 'r, 'l, T> {
    values: Option<DeviceViewMut<'v, T>>,
    /// The kept elements' indices (non-trivial runs: the runs' first indices).
    indices: Option<DeviceViewMut<'i, u64>>,
    rest: Option<DeviceViewMut<'r, T>>,
    /// The runs' lengths (run-length encoding, non-trivial runs).
    lengths: Option<DeviceViewMut<'l, u64>>,
    /// A three-way partition's second part.
    second: Option<DeviceViewMut<'r, T>>,
    /// Unique by key: the values beside the keys (`x`), and each run's first value.
    gather: Option<Gather>,
}

/// Unique by key's values: their device addresses (the caller holds their stream-order
/// guards through the launch), the output's length and a value's bytes.
#[derive(Clone, Copy)]
struct Gather {
    src: u64,
    dst: u64,
    len: u64,
    bytes: u32,
}

impl<'v, 'i, 'r, 'l, T> Outputs<'v, 'i, 'r, 'l, T> {
    fn values(values: DeviceViewMut<'v, T>) -> Self {
        Self {
            values: Some(values),
            indices: None,
            rest: None,
            lengths: None,
            second: None,
            gather: None,
        }
    }
    fn indices(indices: DeviceViewMut<'i, u64>) -> Self {
        Self {
            values: None,
            indices: Some(indices),
            rest: None,
            lengths: None,
            second: None,
            gather: None,
        }
    }
    fn values_and_indices(values: DeviceViewMut<'v, T>, indices: DeviceViewMut<'i, u64>) -> Self {
        Self {
            values: Some(values),
            indices: Some(indices),
            rest: None,
            lengths: None,
            second: None,
            gather: None,
        }
    }
    fn partition(selected: DeviceViewMut<'v, T>, rest: DeviceViewMut<'r, T>) -> Self {
        Self {
            values: Some(selected),
            indices: None,
            rest: Some(rest),
            lengths: None,
            second: None,
            gather: None,
        }
    }
    fn runs(unique: DeviceViewMut<'v, T>, lengths: DeviceViewMut<'l, u64>) -> Self {
        Self {
            values: Some(unique),
            indices: None,
            rest: None,
            lengths: Some(lengths),
            second: None,
            gather: None,
        }
    }
    fn three_way(
        first: DeviceViewMut<'v, T>,
        second: DeviceViewMut<'r, T>,
        rest: DeviceViewMut<'r, T>,
    ) -> Self {
        Self {
            values: Some(first),
            indices: None,
            rest: Some(rest),
            lengths: None,
            second: Some(second),
            gather: None,
        }
    }
    /// Each output's length (`None`: not asked for), as [`check_counts`] takes them.
    fn lens(&self) -> [Option<u64>; 6] {
        [
            self.values.as_ref().map(|v| v.len() as u64),
            self.indices.as_ref().map(|v| v.len() as u64),
            self.rest.as_ref().map(|v| v.len() as u64),
            self.lengths.as_ref().map(|v| v.len() as u64),
            self.second.as_ref().map(|v| v.len() as u64),
            self.gather.map(|g| g.len),
        ]
    }
    fn nontrivial_runs(offsets: DeviceViewMut<'i, u64>, lengths: DeviceViewMut<'l, u64>) -> Self {
        Self {
            values: None,
            indices: Some(offsets),
            rest: None,
            lengths: Some(lengths),
            second: None,
            gather: None,
        }
    }
}

/// The device word the blocking calls read the count from (one per context).
#[derive(Default)]
struct SelectWorkspace {
    count: Option<DeviceBuffer<u64>>,
    /// Tuning override of the look-back's first wait (None: the policy's).
    delay_ns: Option<u32>,
    /// Tuning override of the L2 prefetch distance in tiles (None: the default).
    prefetch: Option<u32>,
    /// Tuning override of the threads per block (None: `block_for`'s).
    block: Option<u32>,
}

impl Context {
    /// Override the compaction's first look-back wait in nanoseconds (`None`: the policy's
    /// `kernels::select::DELAY_NS`; a tile that moves many bytes waits twice it). For tuning
    /// runs; results do not depend on it.
    pub fn set_select_delay(&self, ns: Option<u32>) {
        let ws = self.workspace::<SelectWorkspace>();
        ws.lock().unwrap_or_else(|p| p.into_inner()).delay_ns = ns;
    }

    /// Override how many tiles ahead each compaction block asks L2 for (`None`: the default,
    /// `PREFETCH_BYTES` of the tiles' traffic ahead; 0: none). For tuning runs; results do not
    /// depend on it.
    pub fn set_select_prefetch(&self, tiles: Option<u32>) {
        let ws = self.workspace::<SelectWorkspace>();
        ws.lock().unwrap_or_else(|p| p.into_inner()).prefetch = tiles;
    }

    /// Override the threads per block of select-if, the partition and the flagged selection
    /// (`None`: `kernels::select::block_for`'s, by length; else 32 to 256, a multiple of 32),
    /// and pick the three-way partition's kernel (128: its short-input twin, else its own).
    /// The other calls' kernels have a fixed block. For tuning runs; results do not depend on
    /// it.
    pub fn set_select_block(&self, threads: Option<u32>) {
        let ws = self.workspace::<SelectWorkspace>();
        ws.lock().unwrap_or_else(|p| p.into_inner()).block =
            threads.map(|t| (t / 32).clamp(1, kernels::select::BLOCK / 32) * 32);
    }

    /// The elements of `x` that `pred` keeps, in order, to `out`; returns how many. `out` needs
    /// room for all of them (`x.len()` always suffices), else the call fails naming both
    /// numbers, after writing what fits. One pass over `x`; blocks until the count is known
    /// ([`Context::select_into`] leaves it on the device).
    ///
    /// ```
    /// # fn main() -> gpu_reduce::Result<()> {
    /// use gpu_reduce::{Context, Predicate};
    /// let ctx = Context::sim()?;
    /// let x = ctx.htod(&[3.0f32, -1.0, f32::NAN, 7.5, 0.0])?;
    /// let mut out = ctx.alloc_zeros::<f32>(5)?;
    /// let k = ctx.select(&x, &mut out, Predicate::Gt(0.0))?;
    /// assert_eq!(ctx.dtoh(&out)?[..k as usize], [3.0, 7.5]);
    /// # Ok(()) }
    /// ```
    pub fn select<'a, 'b, T: SelectElement>(
        &self,
        x: impl Into<DeviceView<'a, T>>,
        out: impl Into<DeviceViewMut<'b, T>>,
        pred: Predicate<T>,
    ) -> Result<u64> {
        let outs = Outputs::values(out.into());
        self.select_run(
            &crate::BUILTIN,
            T::select_kernels()[0],
            "select",
            x.into(),
            None,
            outs,
            pred.bound(),
            Count::Host,
        )
    }

    /// [`Context::select`] in stream order: the count goes to `num_selected[0]` on the device.
    /// Elements past `out`'s room are counted, not written.
    pub fn select_into<'a, 'b, 'c, T: SelectElement>(
        &self,
        x: impl Into<DeviceView<'a, T>>,
        out: impl Into<DeviceViewMut<'b, T>>,
        num_selected: impl Into<DeviceViewMut<'c, u64>>,
        pred: Predicate<T>,
    ) -> Result<()> {
        let outs = Outputs::values(out.into());
        self.select_run(
            &crate::BUILTIN,
            T::select_kernels()[0],
            "select_into",
            x.into(),
            None,
            outs,
            pred.bound(),
            Count::Device(num_selected.into()),
        )
        .map(drop)
    }

    /// The indices of the elements of `x` that `pred` keeps, in order; returns how many.
    /// As [`Context::select`] otherwise.
    pub fn select_indices<'a, 'b, T: SelectElement>(
        &self,
        x: impl Into<DeviceView<'a, T>>,
        indices: impl Into<DeviceViewMut<'b, u64>>,
        pred: Predicate<T>,
    ) -> Result<u64> {
        let outs = Outputs::indices(indices.into());
        self.select_run(
            &crate::BUILTIN,
            T::select_kernels()[0],
            "select_indices",
            x.into(),
            None,
            outs,
            pred.bound(),
            Count::Host,
        )
    }

    /// [`Context::select_indices`] in stream order (the count to `num_selected[0]`).
    pub fn select_indices_into<'a, 'b, 'c, T: SelectElement>(
        &self,
        x: impl Into<DeviceView<'a, T>>,
        indices: impl Into<DeviceViewMut<'b, u64>>,
        num_selected: impl Into<DeviceViewMut<'c, u64>>,
        pred: Predicate<T>,
    ) -> Result<()> {
        let outs = Outputs::indices(indices.into());
        self.select_run(
            &crate::BUILTIN,
            T::select_kernels()[0],
            "select_indices_into",
            x.into(),
            None,
            outs,
            pred.bound(),
            Count::Device(num_selected.into()),
        )
        .map(drop)
    }

    /// The elements of `x` that `pred` keeps and their indices, in order, in one pass
    /// (`out[k]` is `x[indices[k]]`); returns how many. Both outputs need room for every kept
    /// element, else the call fails naming how many were needed, after writing what fits.
    ///
    /// ```
    /// # fn main() -> gpu_reduce::Result<()> {
    /// use gpu_reduce::{Context, Predicate};
    /// let ctx = Context::sim()?;
    /// let x = ctx.htod(&[4u32, 9, 1, 12])?;
    /// let (mut out, mut ix) = (ctx.alloc_zeros::<u32>(4)?, ctx.alloc_zeros::<u64>(4)?);
    /// let k = ctx.select_with_indices(&x, &mut out, &mut ix, Predicate::Gt(5))? as usize;
    /// assert_eq!((&ctx.dtoh(&out)?[..k], &ctx.dtoh(&ix)?[..k]), (&[9, 12][..], &[1, 3][..]));
    /// # Ok(()) }
    /// ```
    pub fn select_with_indices<'a, 'b, 'c, T: SelectElement>(
        &self,
        x: impl Into<DeviceView<'a, T>>,
        out: impl Into<DeviceViewMut<'b, T>>,
        indices: impl Into<DeviceViewMut<'c, u64>>,
        pred: Predicate<T>,
    ) -> Result<u64> {
        let outs = Outputs::values_and_indices(out.into(), indices.into());
        self.select_run(
            &crate::BUILTIN,
            T::select_kernels()[0],
            "select_with_indices",
            x.into(),
            None,
            outs,
            pred.bound(),
            Count::Host,
        )
    }

    /// [`Context::select_with_indices`] in stream order (the count to `num_selected[0]`).
    pub fn select_with_indices_into<'a, 'b, 'c, 'd, T: SelectElement>(
        &self,
        x: impl Into<DeviceView<'a, T>>,
        out: impl Into<DeviceViewMut<'b, T>>,
        indices: impl Into<DeviceViewMut<'c, u64>>,
        num_selected: impl Into<DeviceViewMut<'d, u64>>,
        pred: Predicate<T>,
    ) -> Result<()> {
        let outs = Outputs::values_and_indices(out.into(), indices.into());
        self.select_run(
            &crate::BUILTIN,
            T::select_kernels()[0],
            "select_with_indices_into",
            x.into(),
            None,
            outs,
            pred.bound(),
            Count::Device(num_selected.into()),
        )
        .map(drop)
    }

    /// [`Context::select_with_indices`] without blocking (see [`Context::select_async`]).
    pub fn select_with_indices_async<'a, 'b, 'c, T: SelectElement>(
        &self,
        x: impl Into<DeviceView<'a, T>>,
        out: impl Into<DeviceViewMut<'b, T>>,
        indices: impl Into<DeviceViewMut<'c, u64>>,
        pred: Predicate<T>,
    ) -> Result<Pending<'_, u64>> {
        let outs = Outputs::values_and_indices(out.into(), indices.into());
        let k = T::select_kernels()[0];
        self.select_pending(
            k,
            "select_with_indices_async",
            x.into(),
            None,
            outs,
            pred.bound(),
        )
    }

    /// The indices of the nonzero elements of `x` (PyTorch's `nonzero` of a 1-D tensor: a NaN
    /// is nonzero, `-0.0` is not), in order; returns how many.
    ///
    /// ```
    /// # fn main() -> gpu_reduce::Result<()> {
    /// let ctx = gpu_reduce::Context::sim()?;
    /// let x = ctx.htod(&[0i32, 5, 0, -2])?;
    /// let mut ix = ctx.alloc_zeros::<u64>(4)?;
    /// let k = ctx.nonzero(&x, &mut ix)?;
    /// assert_eq!(ctx.dtoh(&ix)?[..k as usize], [1, 3]);
    /// # Ok(()) }
    /// ```
    pub fn nonzero<'a, 'b, T: SelectElement>(
        &self,
        x: impl Into<DeviceView<'a, T>>,
        indices: impl Into<DeviceViewMut<'b, u64>>,
    ) -> Result<u64> {
        self.select_indices(x, indices, Predicate::NonZero)
    }

    /// The elements of `x` whose byte in `flags` is not 0 (PyTorch's `masked_select` with a
    /// `bool` mask), in order; returns how many. `flags` has one byte per element.
    pub fn select_flagged<'a, 'f, 'b, T: SelectElement>(
        &self,
        x: impl Into<DeviceView<'a, T>>,
        flags: impl Into<DeviceView<'f, u8>>,
        out: impl Into<DeviceViewMut<'b, T>>,
    ) -> Result<u64> {
        let outs = Outputs::values(out.into());
        self.select_run(
            &crate::BUILTIN,
            T::select_kernels()[1],
            "select_flagged",
            x.into(),
            Some(flags.into()),
            outs,
            (0, 0, 0),
            Count::Host,
        )
    }

    /// [`Context::select_flagged`] in stream order (the count to `num_selected[0]`).
    pub fn select_flagged_into<'a, 'f, 'b, 'c, T: SelectElement>(
        &self,
        x: impl Into<DeviceView<'a, T>>,
        flags: impl Into<DeviceView<'f, u8>>,
        out: impl Into<DeviceViewMut<'b, T>>,
        num_selected: impl Into<DeviceViewMut<'c, u64>>,
    ) -> Result<()> {
        let outs = Outputs::values(out.into());
        self.select_run(
            &crate::BUILTIN,
            T::select_kernels()[1],
            "select_flagged_into",
            x.into(),
            Some(flags.into()),
            outs,
            (0, 0, 0),
            Count::Device(num_selected.into()),
        )
        .map(drop)
    }

    /// A stable partition: the elements `pred` keeps to `selected` and the others to `rest`,
    /// each in input order; returns how many were kept. Each output needs room for its part
    /// (`x.len()` always suffices). One pass over `x`.
    ///
    /// ```
    /// # fn main() -> gpu_reduce::Result<()> {
    /// use gpu_reduce::{Context, Predicate};
    /// let ctx = Context::sim()?;
    /// let x = ctx.htod(&[5u32, 1, 8, 2, 9])?;
    /// let (mut yes, mut no) = (ctx.alloc_zeros::<u32>(5)?, ctx.alloc_zeros::<u32>(5)?);
    /// let k = ctx.partition(&x, &mut yes, &mut no, Predicate::Ge(5))? as usize;
    /// assert_eq!((&ctx.dtoh(&yes)?[..k], &ctx.dtoh(&no)?[..5 - k]), (&[5, 8, 9][..], &[1, 2][..]));
    /// # Ok(()) }
    /// ```
    pub fn partition<'a, 'b, 'r, T: SelectElement>(
        &self,
        x: impl Into<DeviceView<'a, T>>,
        selected: impl Into<DeviceViewMut<'b, T>>,
        rest: impl Into<DeviceViewMut<'r, T>>,
        pred: Predicate<T>,
    ) -> Result<u64> {
        let outs = Outputs::partition(selected.into(), rest.into());
        self.select_run(
            &crate::BUILTIN,
            T::select_kernels()[0],
            "partition",
            x.into(),
            None,
            outs,
            pred.bound(),
            Count::Host,
        )
    }

    /// [`Context::partition`] in stream order (the count kept to `num_selected[0]`).
    pub fn partition_into<'a, 'b, 'r, 'c, T: SelectElement>(
        &self,
        x: impl Into<DeviceView<'a, T>>,
        selected: impl Into<DeviceViewMut<'b, T>>,
        rest: impl Into<DeviceViewMut<'r, T>>,
        num_selected: impl Into<DeviceViewMut<'c, u64>>,
        pred: Predicate<T>,
    ) -> Result<()> {
        let outs = Outputs::partition(selected.into(), rest.into());
        self.select_run(
            &crate::BUILTIN,
            T::select_kernels()[0],
            "partition_into",
            x.into(),
            None,
            outs,
            pred.bound(),
            Count::Device(num_selected.into()),
        )
        .map(drop)
    }

    /// A stable three-way partition (CUB's three-way `DevicePartition::If`): the elements
    /// `first` keeps to `first_out`, of the others those `second` keeps to `second_out`, the
    /// rest to `rest`, each in input order; returns the sizes of the first two parts (the
    /// rest holds the others). Each output needs room for its part (`x.len()` always
    /// suffices). One pass over `x`.
    ///
    /// ```
    /// # fn main() -> gpu_reduce::Result<()> {
    /// use gpu_reduce::{Context, Predicate};
    /// let ctx = Context::sim()?;
    /// let x = ctx.htod(&[5i32, -1, 8, 0, -7, 2])?;
    /// let mut o = [(); 3].map(|_| ctx.alloc_zeros::<i32>(6).unwrap());
    /// let [neg, small, big] = &mut o;
    /// let (a, b) = ctx.partition_three_way(&x, neg, small, big, Predicate::Lt(0), Predicate::Le(2))?;
    /// assert_eq!((a, b), (2, 2));
    /// assert_eq!(ctx.dtoh(&o[0])?[..2], [-1, -7]);
    /// assert_eq!(ctx.dtoh(&o[1])?[..2], [0, 2]);
    /// assert_eq!(ctx.dtoh(&o[2])?[..2], [5, 8]);
    /// # Ok(()) }
    /// ```
    #[allow(clippy::too_many_arguments)] // the input, three outputs, two predicates
    pub fn partition_three_way<'a, 'b, 'r, T: SelectElement>(
        &self,
        x: impl Into<DeviceView<'a, T>>,
        first_out: impl Into<DeviceViewMut<'b, T>>,
        second_out: impl Into<DeviceViewMut<'r, T>>,
        rest: impl Into<DeviceViewMut<'r, T>>,
        first: Predicate<T>,
        second: Predicate<T>,
    ) -> Result<(u64, u64)> {
        let outs = Outputs::three_way(first_out.into(), second_out.into(), rest.into());
        let c = self.select_counts(
            &crate::BUILTIN,
            T::select_kernels()[5],
            "partition_three_way",
            x.into(),
            None,
            outs,
            [first.bound(), second.bound()],
            Count::Host,
        )?;
        Ok((c[0], c[1]))
    }

    /// [`Context::partition_three_way`] in stream order (the first two parts' sizes to
    /// `num_selected[0]` and `num_selected[1]`).
    #[allow(clippy::too_many_arguments)] // the input, three outputs, the counts, two predicates
    pub fn partition_three_way_into<'a, 'b, 'r, 'n, T: SelectElement>(
        &self,
        x: impl Into<DeviceView<'a, T>>,
        first_out: impl Into<DeviceViewMut<'b, T>>,
        second_out: impl Into<DeviceViewMut<'r, T>>,
        rest: impl Into<DeviceViewMut<'r, T>>,
        num_selected: impl Into<DeviceViewMut<'n, u64>>,
        first: Predicate<T>,
        second: Predicate<T>,
    ) -> Result<()> {
        let outs = Outputs::three_way(first_out.into(), second_out.into(), rest.into());
        self.select_counts(
            &crate::BUILTIN,
            T::select_kernels()[5],
            "partition_three_way_into",
            x.into(),
            None,
            outs,
            [first.bound(), second.bound()],
            Count::Device(num_selected.into()),
        )
        .map(drop)
    }

    /// [`Context::partition_three_way`] without blocking (see [`Context::select_async`]).
    #[allow(clippy::too_many_arguments)] // the input, three outputs, two predicates
    pub fn partition_three_way_async<'a, 'b, 'r, T: SelectElement>(
        &self,
        x: impl Into<DeviceView<'a, T>>,
        first_out: impl Into<DeviceViewMut<'b, T>>,
        second_out: impl Into<DeviceViewMut<'r, T>>,
        rest: impl Into<DeviceViewMut<'r, T>>,
        first: Predicate<T>,
        second: Predicate<T>,
    ) -> Result<Pending<'_, (u64, u64)>> {
        let outs = Outputs::three_way(first_out.into(), second_out.into(), rest.into());
        self.select_pending_with(
            T::select_kernels()[5],
            "partition_three_way_async",
            x.into(),
            None,
            outs,
            [first.bound(), second.bound()],
            |c| (c[0], c[1]),
        )
    }

    /// The first element of every run of equal consecutive elements of `x` (PyTorch's
    /// `unique_consecutive`; IEEE `==`, so each NaN is its own run), in order; returns how
    /// many.
    ///
    /// ```
    /// # fn main() -> gpu_reduce::Result<()> {
    /// let ctx = gpu_reduce::Context::sim()?;
    /// let x = ctx.htod(&[1i64, 1, 2, 2, 2, 1])?;
    /// let mut out = ctx.alloc_zeros::<i64>(6)?;
    /// let k = ctx.unique(&x, &mut out)?;
    /// assert_eq!(ctx.dtoh(&out)?[..k as usize], [1, 2, 1]);
    /// # Ok(()) }
    /// ```
    pub fn unique<'a, 'b, T: SelectElement>(
        &self,
        x: impl Into<DeviceView<'a, T>>,
        out: impl Into<DeviceViewMut<'b, T>>,
    ) -> Result<u64> {
        let outs = Outputs::values(out.into());
        self.select_run(
            &crate::BUILTIN,
            T::select_kernels()[2],
            "unique",
            x.into(),
            None,
            outs,
            (0, 0, 0),
            Count::Host,
        )
    }

    /// [`Context::unique`] in stream order (the count to `num_selected[0]`).
    pub fn unique_into<'a, 'b, 'c, T: SelectElement>(
        &self,
        x: impl Into<DeviceView<'a, T>>,
        out: impl Into<DeviceViewMut<'b, T>>,
        num_selected: impl Into<DeviceViewMut<'c, u64>>,
    ) -> Result<()> {
        let outs = Outputs::values(out.into());
        self.select_run(
            &crate::BUILTIN,
            T::select_kernels()[2],
            "unique_into",
            x.into(),
            None,
            outs,
            (0, 0, 0),
            Count::Device(num_selected.into()),
        )
        .map(drop)
    }

    /// Run-length encoding (CUB's `DeviceRunLengthEncode::Encode`, PyTorch's
    /// `unique_consecutive(..., return_counts=True)`): the first element of every run of equal
    /// consecutive elements to `unique` and the run's length to `counts`, in order; returns the
    /// number of runs. Each output needs room for every run (`x.len()` always suffices). One
    /// pass over `x` (the lengths from each run's first index, through the look-back).
    ///
    /// ```
    /// # fn main() -> gpu_reduce::Result<()> {
    /// let ctx = gpu_reduce::Context::sim()?;
    /// let x = ctx.htod(&[4u32, 4, 4, 9, 4, 4])?;
    /// let (mut u, mut c) = (ctx.alloc_zeros::<u32>(6)?, ctx.alloc_zeros::<u64>(6)?);
    /// let runs = ctx.run_length_encode(&x, &mut u, &mut c)? as usize;
    /// assert_eq!((&ctx.dtoh(&u)?[..runs], &ctx.dtoh(&c)?[..runs]), (&[4, 9, 4][..], &[3, 1, 2][..]));
    /// # Ok(()) }
    /// ```
    pub fn run_length_encode<'a, 'b, 'c, T: SelectElement>(
        &self,
        x: impl Into<DeviceView<'a, T>>,
        unique: impl Into<DeviceViewMut<'b, T>>,
        counts: impl Into<DeviceViewMut<'c, u64>>,
    ) -> Result<u64> {
        let outs = Outputs::runs(unique.into(), counts.into());
        self.select_run(
            &crate::BUILTIN,
            T::select_kernels()[3],
            "run_length_encode",
            x.into(),
            None,
            outs,
            (0, 0, 0),
            Count::Host,
        )
    }

    /// [`Context::run_length_encode`] in stream order (the number of runs to `num_runs[0]`).
    pub fn run_length_encode_into<'a, 'b, 'c, 'd, T: SelectElement>(
        &self,
        x: impl Into<DeviceView<'a, T>>,
        unique: impl Into<DeviceViewMut<'b, T>>,
        counts: impl Into<DeviceViewMut<'c, u64>>,
        num_runs: impl Into<DeviceViewMut<'d, u64>>,
    ) -> Result<()> {
        let outs = Outputs::runs(unique.into(), counts.into());
        self.select_run(
            &crate::BUILTIN,
            T::select_kernels()[3],
            "run_length_encode_into",
            x.into(),
            None,
            outs,
            (0, 0, 0),
            Count::Device(num_runs.into()),
        )
        .map(drop)
    }

    /// [`Context::run_length_encode`] without blocking (see [`Context::select_async`]).
    pub fn run_length_encode_async<'a, 'b, 'c, T: SelectElement>(
        &self,
        x: impl Into<DeviceView<'a, T>>,
        unique: impl Into<DeviceViewMut<'b, T>>,
        counts: impl Into<DeviceViewMut<'c, u64>>,
    ) -> Result<Pending<'_, u64>> {
        let outs = Outputs::runs(unique.into(), counts.into());
        let k = T::select_kernels()[3];
        self.select_pending(
            k,
            "run_length_encode_async",
            x.into(),
            None,
            outs,
            (0, 0, 0),
        )
    }

    /// The runs of two or more equal consecutive elements (CUB's
    /// `DeviceRunLengthEncode::NonTrivialRuns`): each run's first index to `offsets` and its
    /// length to `lengths`, in order; returns the number of such runs. Each output needs room
    /// for every one (`x.len() / 2` always suffices). One pass over `x`.
    ///
    /// ```
    /// # fn main() -> gpu_reduce::Result<()> {
    /// let ctx = gpu_reduce::Context::sim()?;
    /// let x = ctx.htod(&[4u32, 4, 4, 9, 5, 5, 7])?;
    /// let (mut o, mut l) = (ctx.alloc_zeros::<u64>(3)?, ctx.alloc_zeros::<u64>(3)?);
    /// let runs = ctx.non_trivial_runs(&x, &mut o, &mut l)? as usize;
    /// assert_eq!((&ctx.dtoh(&o)?[..runs], &ctx.dtoh(&l)?[..runs]), (&[0, 4][..], &[3, 2][..]));
    /// # Ok(()) }
    /// ```
    pub fn non_trivial_runs<'a, 'b, 'c, T: SelectElement>(
        &self,
        x: impl Into<DeviceView<'a, T>>,
        offsets: impl Into<DeviceViewMut<'b, u64>>,
        lengths: impl Into<DeviceViewMut<'c, u64>>,
    ) -> Result<u64> {
        let outs = Outputs::nontrivial_runs(offsets.into(), lengths.into());
        self.select_run(
            &crate::BUILTIN,
            T::select_kernels()[4],
            "non_trivial_runs",
            x.into(),
            None,
            outs,
            (0, 0, 0),
            Count::Host,
        )
    }

    /// [`Context::non_trivial_runs`] in stream order (the number of runs to `num_runs[0]`).
    pub fn non_trivial_runs_into<'a, 'b, 'c, 'd, T: SelectElement>(
        &self,
        x: impl Into<DeviceView<'a, T>>,
        offsets: impl Into<DeviceViewMut<'b, u64>>,
        lengths: impl Into<DeviceViewMut<'c, u64>>,
        num_runs: impl Into<DeviceViewMut<'d, u64>>,
    ) -> Result<()> {
        let outs = Outputs::nontrivial_runs(offsets.into(), lengths.into());
        self.select_run(
            &crate::BUILTIN,
            T::select_kernels()[4],
            "non_trivial_runs_into",
            x.into(),
            None,
            outs,
            (0, 0, 0),
            Count::Device(num_runs.into()),
        )
        .map(drop)
    }

    /// [`Context::non_trivial_runs`] without blocking (see [`Context::select_async`]).
    pub fn non_trivial_runs_async<'a, 'b, 'c, T: SelectElement>(
        &self,
        x: impl Into<DeviceView<'a, T>>,
        offsets: impl Into<DeviceViewMut<'b, u64>>,
        lengths: impl Into<DeviceViewMut<'c, u64>>,
    ) -> Result<Pending<'_, u64>> {
        let outs = Outputs::nontrivial_runs(offsets.into(), lengths.into());
        let k = T::select_kernels()[4];
        self.select_pending(k, "non_trivial_runs_async", x.into(), None, outs, (0, 0, 0))
    }

    /// A user predicate's selection: `P`'s kernel over `T`, exported by
    /// `kernels::select_kernels!` in a kernel crate whose PTX `lib` embeds. As
    /// [`Context::select`] otherwise. `P` selects by its `select` (`MODE_IF`, the trait's
    /// default); another mode (a mask, runs, a three-way pair) is an [`Error::Unsupported`].
    pub fn select_custom<'a, 'b, T, P>(
        &self,
        lib: &'static KernelLibrary,
        x: impl Into<DeviceView<'a, T>>,
        out: impl Into<DeviceViewMut<'b, T>>,
    ) -> Result<u64>
    where
        T: DeviceElement,
        P: SelectInstance<T>,
    {
        if P::MODE != MODE_IF {
            return Err(Error::Unsupported {
                op: "select_custom".into(),
                dtype: T::DTYPE,
                reason: "the predicate's kernel is not a selection by predicate (its MODE is \
                         not MODE_IF: a mask, runs or a three-way pair need their own outputs)",
            });
        }
        let outs = Outputs::values(out.into());
        self.select_run(
            lib,
            SelectKernel::of::<P>(),
            "select_custom",
            x.into(),
            None,
            outs,
            (0, 0, 0),
            Count::Host,
        )
    }

    /// [`Context::select`] without blocking: the kernel is queued and the handle's
    /// [`Pending::wait`] returns the count (or the error of an output too small, after what
    /// fits was written). The output must not be read before the wait.
    pub fn select_async<'a, 'b, T: SelectElement>(
        &self,
        x: impl Into<DeviceView<'a, T>>,
        out: impl Into<DeviceViewMut<'b, T>>,
        pred: Predicate<T>,
    ) -> Result<Pending<'_, u64>> {
        let outs = Outputs::values(out.into());
        let k = T::select_kernels()[0];
        self.select_pending(k, "select_async", x.into(), None, outs, pred.bound())
    }

    /// [`Context::select_indices`] without blocking (see [`Context::select_async`]).
    pub fn select_indices_async<'a, 'b, T: SelectElement>(
        &self,
        x: impl Into<DeviceView<'a, T>>,
        indices: impl Into<DeviceViewMut<'b, u64>>,
        pred: Predicate<T>,
    ) -> Result<Pending<'_, u64>> {
        let outs = Outputs::indices(indices.into());
        let k = T::select_kernels()[0];
        self.select_pending(
            k,
            "select_indices_async",
            x.into(),
            None,
            outs,
            pred.bound(),
        )
    }

    /// [`Context::select_flagged`] without blocking (see [`Context::select_async`]).
    pub fn select_flagged_async<'a, 'f, 'b, T: SelectElement>(
        &self,
        x: impl Into<DeviceView<'a, T>>,
        flags: impl Into<DeviceView<'f, u8>>,
        out: impl Into<DeviceViewMut<'b, T>>,
    ) -> Result<Pending<'_, u64>> {
        let outs = Outputs::values(out.into());
        let k = T::select_kernels()[1];
        self.select_pending(
            k,
            "select_flagged_async",
            x.into(),
            Some(flags.into()),
            outs,
            (0, 0, 0),
        )
    }

    /// [`Context::partition`] without blocking (see [`Context::select_async`]).
    pub fn partition_async<'a, 'b, 'r, T: SelectElement>(
        &self,
        x: impl Into<DeviceView<'a, T>>,
        selected: impl Into<DeviceViewMut<'b, T>>,
        rest: impl Into<DeviceViewMut<'r, T>>,
        pred: Predicate<T>,
    ) -> Result<Pending<'_, u64>> {
        let outs = Outputs::partition(selected.into(), rest.into());
        let k = T::select_kernels()[0];
        self.select_pending(k, "partition_async", x.into(), None, outs, pred.bound())
    }

    /// [`Context::unique`] without blocking (see [`Context::select_async`]).
    pub fn unique_async<'a, 'b, T: SelectElement>(
        &self,
        x: impl Into<DeviceView<'a, T>>,
        out: impl Into<DeviceViewMut<'b, T>>,
    ) -> Result<Pending<'_, u64>> {
        let outs = Outputs::values(out.into());
        let k = T::select_kernels()[2];
        self.select_pending(k, "unique_async", x.into(), None, outs, (0, 0, 0))
    }

    /// Unique by key (CUB's `DeviceSelect::UniqueByKey`): every maximal run of equal
    /// consecutive `keys` gives its key to `unique_keys[r]` and its first value to
    /// `first_values[r]` (the value's bits, copied), in order; returns the number of runs.
    /// One pass: [`Context::unique`] over the keys (any compaction type, compared as there:
    /// IEEE `==`, so each NaN key is a run of its own), each run's value read at its first
    /// element; values of any element type. `keys` and `values` of one length; each output
    /// needs room for every run (the input length always suffices), else
    /// [`Error::OutputTooSmall`] naming how many were needed, after what fits was written.
    ///
    /// ```
    /// # fn main() -> gpu_reduce::Result<()> {
    /// let ctx = gpu_reduce::Context::sim()?;
    /// let keys = ctx.htod(&[7u32, 7, 2, 2, 2, 7])?;
    /// let x = ctx.htod(&[1i64, 2, 3, 4, 5, 6])?;
    /// let (mut uk, mut first) = (ctx.alloc_zeros::<u32>(6)?, ctx.alloc_zeros::<i64>(6)?);
    /// let runs = ctx.unique_by_key(&keys, &x, &mut uk, &mut first)? as usize;
    /// assert_eq!((&ctx.dtoh(&uk)?[..runs], &ctx.dtoh(&first)?[..runs]), (&[7, 2, 7][..], &[1, 3, 6][..]));
    /// # Ok(()) }
    /// ```
    pub fn unique_by_key<'a, 'b, 'c, 'd, K: SelectElement, T: DeviceElement>(
        &self,
        keys: impl Into<DeviceView<'a, K>>,
        values: impl Into<DeviceView<'b, T>>,
        unique_keys: impl Into<DeviceViewMut<'c, K>>,
        first_values: impl Into<DeviceViewMut<'d, T>>,
    ) -> Result<u64> {
        let call = "unique_by_key";
        let (values, first) = (values.into(), first_values.into());
        self.with_gather(
            call,
            keys.into(),
            values,
            unique_keys.into(),
            first,
            |keys, outs| {
                let k = K::select_kernels()[6];
                self.select_run(
                    &crate::BUILTIN,
                    k,
                    call,
                    keys,
                    None,
                    outs,
                    (0, 0, 0),
                    Count::Host,
                )
            },
        )
    }

    /// [`Context::unique_by_key`] in stream order (the number of runs to `num_runs[0]`).
    pub fn unique_by_key_into<'a, 'b, 'c, 'd, 'e, K: SelectElement, T: DeviceElement>(
        &self,
        keys: impl Into<DeviceView<'a, K>>,
        values: impl Into<DeviceView<'b, T>>,
        unique_keys: impl Into<DeviceViewMut<'c, K>>,
        first_values: impl Into<DeviceViewMut<'d, T>>,
        num_runs: impl Into<DeviceViewMut<'e, u64>>,
    ) -> Result<()> {
        let call = "unique_by_key_into";
        let (values, first, count) = (values.into(), first_values.into(), num_runs.into());
        self.with_gather(
            call,
            keys.into(),
            values,
            unique_keys.into(),
            first,
            |keys, outs| {
                let k = K::select_kernels()[6];
                let count = Count::Device(count);
                self.select_run(&crate::BUILTIN, k, call, keys, None, outs, (0, 0, 0), count)
                    .map(drop)
            },
        )
    }

    /// [`Context::unique_by_key`] without blocking (see [`Context::select_async`]).
    pub fn unique_by_key_async<'a, 'b, 'c, 'd, K: SelectElement, T: DeviceElement>(
        &self,
        keys: impl Into<DeviceView<'a, K>>,
        values: impl Into<DeviceView<'b, T>>,
        unique_keys: impl Into<DeviceViewMut<'c, K>>,
        first_values: impl Into<DeviceViewMut<'d, T>>,
    ) -> Result<Pending<'_, u64>> {
        let call = "unique_by_key_async";
        let (values, first) = (values.into(), first_values.into());
        self.with_gather(
            call,
            keys.into(),
            values,
            unique_keys.into(),
            first,
            |keys, outs| {
                let k = K::select_kernels()[6];
                self.select_pending(k, call, keys, None, outs, (0, 0, 0))
            },
        )
    }

    /// Unique by key's outputs: the keys' and, read at each kept key's position, the values'
    /// (their stream-order guards held through `run`, the launch).
    fn with_gather<'k, 'u, K: DeviceElement, T: DeviceElement, R>(
        &self,
        call: &'static str,
        keys: DeviceView<'k, K>,
        values: DeviceView<'_, T>,
        unique_keys: DeviceViewMut<'u, K>,
        mut first: DeviceViewMut<'_, T>,
        run: impl FnOnce(DeviceView<'k, K>, Outputs<'u, 'u, 'u, 'u, K>) -> Result<R>,
    ) -> Result<R> {
        if keys.len() != values.len() {
            return Err(Error::LengthMismatch {
                what: format!("{call}: the keys (one per value)"),
                expected: values.len() as u64,
                got: keys.len() as u64,
            });
        }
        let mut outs = Outputs::values(unique_keys);
        let len = first.len() as u64;
        if values.is_empty() {
            return run(keys, outs);
        }
        let (src, _read) = self.read(&values)?;
        let (dst, _write) = self.write(&mut first)?;
        outs.gather = Some(Gather {
            src,
            dst,
            len,
            bytes: size_of::<T>() as u32,
        });
        run(keys, outs)
    }

    /// One launch whose count comes back through a [`Pending`].
    fn select_pending<T: DeviceElement>(
        &self,
        k: SelectKernel<T>,
        call: &'static str,
        x: DeviceView<'_, T>,
        flags: Option<DeviceView<'_, u8>>,
        outs: Outputs<'_, '_, '_, '_, T>,
        bound: (u64, u64, u32),
    ) -> Result<Pending<'_, u64>> {
        let bounds = [bound, (0, 0, 0)];
        self.select_pending_with(k, call, x, flags, outs, bounds, |c| c[0])
    }

    /// One launch whose counts come back through a [`Pending`] of `pick(counts)`.
    #[allow(clippy::too_many_arguments)] // select_pending's, and what the pending value is
    fn select_pending_with<T: DeviceElement, R: Send + 'static>(
        &self,
        k: SelectKernel<T>,
        call: &'static str,
        x: DeviceView<'_, T>,
        flags: Option<DeviceView<'_, u8>>,
        outs: Outputs<'_, '_, '_, '_, T>,
        bounds: [(u64, u64, u32); 2],
        pick: fn([u64; 2]) -> R,
    ) -> Result<Pending<'_, R>> {
        let n = x.len() as u64;
        let lens = outs.lens();
        if n == 0 {
            return Ok(self.pending_ready(k.kernel.name, Ok(pick([0, 0]))));
        }
        if self.capturing()? {
            return Err(Error::NotCapturable {
                call,
                hint: "it returns the count to the host; use its _into form",
            });
        }
        // Both counts fit the pending value's words.
        const _: () = assert!(ACC_WORDS >= 2);
        let count = self.alloc_zeros::<u64>(ACC_WORDS)?;
        let addr = self.scratch_addr(&count);
        self.select_counts(
            &crate::BUILTIN,
            k,
            call,
            x,
            flags,
            outs,
            bounds,
            Count::Scratch(addr),
        )?;
        self.pending_on_device(count, k.kernel.name, move |w: [u64; ACC_WORDS]| {
            // The second word is a three-way partition's only (a second output).
            let second = if lens[4].is_some() { w[1] } else { 0 };
            check_counts(call, n, [w[0], second], lens).map(pick)
        })
    }

    /// [`Context::select_counts`] of one predicate's bounds: the count kept.
    #[allow(clippy::too_many_arguments)] // the kernel, the input, its mask, the outputs, the count
    fn select_run<T: DeviceElement>(
        &self,
        lib: &'static KernelLibrary,
        k: SelectKernel<T>,
        call: &'static str,
        x: DeviceView<'_, T>,
        flags: Option<DeviceView<'_, u8>>,
        outs: Outputs<'_, '_, '_, '_, T>,
        bound: (u64, u64, u32),
        count: Count<'_>,
    ) -> Result<u64> {
        let bounds = [bound, (0, 0, 0)];
        self.select_counts(lib, k, call, x, flags, outs, bounds, count)
            .map(|c| c[0])
    }

    /// One compaction launch after the checks; the counts (the kept, a three-way partition's
    /// second part) back to the host (checked against the outputs' room) or left where `count`
    /// says (then zeros are returned).
    #[allow(clippy::too_many_arguments)] // the kernel, the input, its mask, the outputs, the count
    fn select_counts<T: DeviceElement>(
        &self,
        lib: &'static KernelLibrary,
        k: SelectKernel<T>,
        call: &'static str,
        x: DeviceView<'_, T>,
        flags: Option<DeviceView<'_, u8>>,
        mut outs: Outputs<'_, '_, '_, '_, T>,
        bounds: [(u64, u64, u32); 2],
        count: Count<'_>,
    ) -> Result<[u64; 2]> {
        let bound = bounds[0];
        // A three-way partition leaves two counts.
        let words = if outs.second.is_some() { 2 } else { 1 };
        let n = x.len() as u64;
        if let Some(f) = &flags
            && f.len() != x.len()
        {
            return Err(Error::LengthMismatch {
                what: format!("{call}: the flags (one byte per element)"),
                expected: n,
                got: f.len() as u64,
            });
        }
        let lens = outs.lens();
        // Room in every output of the kept (values, indices, lengths).
        let capacity = [lens[0], lens[1], lens[3], lens[5]]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(0);
        let rest_capacity = outs.rest.as_ref().map_or(0, |v| v.len() as u64);
        let second_capacity = outs.second.as_ref().map_or(0, |v| v.len() as u64);
        let scratch = match count {
            Count::Scratch(a) => Some(a),
            _ => None,
        };
        let mut device_count = match count {
            Count::Device(v) => {
                if v.len() < words {
                    return Err(Error::OutputTooSmall {
                        what: format!("{call}: the count output ({})", plural(words as u64, "u64")),
                        needed: words as u64,
                        got: v.len() as u64,
                    });
                }
                Some(v)
            }
            Count::Host | Count::Scratch(_) => None,
        };

        if n == 0 {
            return match device_count {
                Some(c) => self.memset_zeros(c.slice(0..words)?).map(|_| [0, 0]),
                None => Ok([0, 0]),
            };
        }
        let on_device = device_count.is_some() || scratch.is_some();
        if device_count.is_none() && scratch.is_none() && self.capturing()? {
            return Err(Error::NotCapturable {
                call,
                hint: "it returns the count to the host; use its _into form",
            });
        }
        let ws = self.workspace::<SelectWorkspace>();
        // Held through the launch and the read-back: one count word per context.
        let mut ws = ws.lock().unwrap_or_else(|p| p.into_inner());
        {
            let (count_addr, _count_write) = match &mut device_count {
                Some(c) => {
                    let (a, w) = self.write(c)?;
                    (a, Some(w))
                }
                None if scratch.is_some() => (scratch.unwrap_or(0), None),
                None => {
                    if ws.count.is_none() {
                        ws.count = Some(self.alloc_zeros::<u64>(2)?);
                    }
                    let Some(buf) = &ws.count else {
                        unreachable!("allocated just above")
                    };
                    (self.scratch_addr(buf), None)
                }
            };
            // L2 is asked for a later tile `PREFETCH_BYTES` of element traffic ahead: an
            // element's bytes read (with its flag, its value) and written were it kept or
            // not (its copy, its value; the 8-byte indices and run lengths not counted:
            // counting them made the run-length encoding slower on an H100).
            let traffic = {
                let s = size_of::<T>() as u64;
                let value = outs.gather.map_or(0, |g| g.bytes as u64);
                let kept = outs.values.is_some() as u64 * s + value;
                let other = (outs.rest.is_some() || outs.second.is_some()) as u64 * s;
                s + flags.is_some() as u64 + value + kept.max(other)
            };
            let (xp, _x_read) = self.read(&x)?;
            let (fp, _f_read) = match &flags {
                Some(f) => {
                    let (a, r) = self.read(f)?;
                    (a, Some(r))
                }
                None => (0, None),
            };
            let (vp, _v_write) = match &mut outs.values {
                Some(v) => {
                    let (a, w) = self.write(v)?;
                    (a, Some(w))
                }
                None => (0, None),
            };
            let (ip, _i_write) = match &mut outs.indices {
                Some(v) => {
                    let (a, w) = self.write(v)?;
                    (a, Some(w))
                }
                None => (0, None),
            };
            let (rp, _r_write) = match &mut outs.rest {
                Some(v) => {
                    let (a, w) = self.write(v)?;
                    (a, Some(w))
                }
                None => (0, None),
            };
            let (lp, _l_write) = match &mut outs.lengths {
                Some(v) => {
                    let (a, w) = self.write(v)?;
                    (a, Some(w))
                }
                None => (0, None),
            };
            let (sp, _s_write) = match &mut outs.second {
                Some(v) => {
                    let (a, w) = self.write(v)?;
                    (a, Some(w))
                }
                None => (0, None),
            };
            let (kernel, block) = k.launch(n, ws.block);
            let tile = tile_elems(size_of::<T>(), block);
            let grid = Self::scan_grid(n, tile)?;
            let prefetch = match (ws.prefetch, &self.backend) {
                (Some(p), _) => p,
                (None, Backend::Cuda(_)) if !is_short(n, size_of::<T>()) => {
                    (PREFETCH_BYTES / (tile * traffic)).max(1) as u32
                }
                (None, _) => 0,
            };
            {
                let sws = self.workspace::<ScanWorkspace>();
                let mut sws = sws.lock().unwrap_or_else(|p| p.into_inner());
                let a = self.scan_workspace(&mut sws, grid as u64)?;
                let params = SelectParams {
                    input: xp as *const T,
                    flags: fp as *const u8,
                    out: vp as *mut T,
                    indices: ip as *mut u64,
                    rest: rp as *mut T,
                    second: sp as *mut T,
                    counts: lp as *mut u64,
                    values: outs.gather.map_or(0, |g| g.src) as *const u8,
                    values_out: outs.gather.map_or(0, |g| g.dst) as *mut u8,
                    value_bytes: outs.gather.map_or(0, |g| g.bytes),
                    capacity,
                    rest_capacity,
                    second_capacity,
                    num_selected: count_addr as *mut u64,
                    n,
                    lo: bound.0,
                    hi: bound.1,
                    mode: bound.2,
                    lo2: bounds[1].0,
                    hi2: bounds[1].1,
                    mode2: bounds[1].2,
                    counter: a.counter as *mut u32,
                    status: a.flags as *mut u32,
                    epoch: a.epoch,
                    // At most 1 ms (`nanosleep`'s own bound), so the kernel may double it.
                    delay_ns: ws.delay_ns.unwrap_or(DELAY_NS).min(1_000_000),
                    prefetch,
                };
                // SAFETY: addresses of this context's memory: the input (and mask) hold `n`
                // elements, the outputs `capacity` and `rest_capacity`.
                unsafe {
                    self.launch_kernel(
                        lib,
                        &kernel,
                        LaunchShape::linear(grid, block, shared_bytes(block)),
                        params,
                    )?
                };
            }
        }
        if on_device {
            return Ok([0, 0]);
        }
        let Some(buf) = &ws.count else {
            unreachable!("set above")
        };
        let c = self.dtoh(buf)?;
        check_counts(call, n, [c[0], if words > 1 { c[1] } else { 0 }], lens)
    }
}

/// Every built-in select kernel's name (the embedded-index test).
#[cfg(test)]
pub(crate) fn kernel_names() -> Vec<&'static str> {
    fn of<T: SelectElement>(names: &mut Vec<&'static str>) {
        names.extend(T::select_kernels().into_iter().flat_map(|k| k.names()));
    }
    let mut names = Vec::new();
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
