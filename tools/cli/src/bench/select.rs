//! Compaction (issue 36): select-if keeping 1%, 50% and 99% (`x < t` over values uniform on the
//! type), select-flagged and a partition keeping 50%, a three-way partition (a third each), and
//! unique, run-length encode, non-trivial runs and unique by key (u32 values) of runs of equal
//! values; ours (the `_into` forms, the
//! count left on the device) against CUB's `DeviceSelect::If` / `Flagged` / `Unique` /
//! `UniqueByKey`, `DevicePartition::If` (two- and three-way) and `DeviceRunLengthEncode::Encode`
//! / `NonTrivialRuns`
//! (each loaded shim that has the call; an older one's rows are left out and the column says
//! "not available") and the device copy in the same run.
//!
//! By default (no u32 or u64 in `--dtypes`): u32 at one size, 2^28 elements (2^14 on the
//! simulator), runs of 8. When `--dtypes` names u32 or u64 (types only this op takes), the
//! matrix: every size of `--sizes` times every one of u32, f32 and u64 named, runs of 1, 8
//! and 1000. The inputs of one type and size are made once (hashed, so the same on every run)
//! and, where they are smaller than 4x the L2, copied so that the timed runs rotate over
//! copies that miss it; outputs are allocated once. Every row's result is checked against the
//! CPU before it is timed (and ours' count once more after), CUB's too.
//!
//! f32 values are multiples of 2^-24 in [0, 1) (no NaN, no -0.0); our unique by key takes u32
//! or u64 keys, so its f32 keys are compared as their bits (the same result for such values),
//! CUB's as floats.

use std::cell::Cell;
use std::fmt::Debug;

use cudarc::driver::{DeviceRepr, ValidAsZeroBits};
use gpu_reduce::{
    BackendKind, Context, DeviceBuffer, DeviceView, Error, Predicate, Result, SelectElement,
};

use super::{
    Cubs, Dtype, Family, Measurement, Setter, SweepConfig, case_measurement, tuning_sweeps,
};
use crate::cub::{CompactOp, Cub, CubCompact};

/// The rows' op (the sweep op's name, as the speed guard maps cells back to ops).
const OP: &str = "select";

/// The run length of the default cases.
const DEFAULT_RUN: usize = 8;

/// The run lengths of the matrix.
const RUNS: [usize; 3] = [1, 8, 1000];

/// What a case measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `x < threshold`, keeping about `percent` of the elements.
    SelectIf { percent: u32 },
    /// The elements whose byte flag is set (half of them).
    Flagged,
    /// The 50% partition (`x < ` the middle of the values).
    Partition,
    /// The three-way partition: `x <` the first third's end, then `x <` the second's, the rest.
    ThreeWay,
    /// The first of each run of equal consecutive elements.
    Unique { run: usize },
    /// Each run's first element and length.
    RunLengthEncode { run: usize },
    /// Each run of two or more: its offset and length.
    NonTrivialRuns { run: usize },
    /// Each run's key and first value (u32 values).
    UniqueByKey { run: usize },
}

impl Kind {
    /// The default cases: the five first ones (the speed guard's baseline has them), then one
    /// of each later op.
    fn default_cases() -> Vec<Kind> {
        let run = DEFAULT_RUN;
        vec![
            Kind::SelectIf { percent: 1 },
            Kind::SelectIf { percent: 50 },
            Kind::SelectIf { percent: 99 },
            Kind::Partition,
            Kind::Unique { run },
            Kind::Flagged,
            Kind::RunLengthEncode { run },
            Kind::NonTrivialRuns { run },
            Kind::UniqueByKey { run },
            Kind::ThreeWay,
        ]
    }

    /// The matrix's cases (at each size and type).
    fn matrix_cases() -> Vec<Kind> {
        let mut cases = vec![
            Kind::SelectIf { percent: 1 },
            Kind::SelectIf { percent: 50 },
            Kind::SelectIf { percent: 99 },
            Kind::Flagged,
            Kind::Partition,
            Kind::ThreeWay,
        ];
        for run in RUNS {
            cases.extend([
                Kind::Unique { run },
                Kind::RunLengthEncode { run },
                Kind::NonTrivialRuns { run },
                Kind::UniqueByKey { run },
            ]);
        }
        cases
    }

    /// The case's name (no `": "` in it: a CUB row is `{label} {call}: {name}`).
    fn name(self) -> String {
        match self {
            Kind::SelectIf { percent } => format!("select-if {percent}% kept"),
            Kind::Flagged => "select-flagged 50% kept".into(),
            Kind::Partition => "partition 50% kept (ours 2 outputs in order, CUB 1 with the \
                                rest reversed at its back; same bytes)"
                .into(),
            Kind::ThreeWay => "three-way partition 33% / 34% / 33% (each part in order)".into(),
            Kind::Unique { run } => format!("unique, runs of {run}"),
            Kind::RunLengthEncode { run } => format!("run-length encode, runs of {run}"),
            Kind::NonTrivialRuns { run } => format!("non-trivial runs, runs of {run}"),
            Kind::UniqueByKey { run } => format!("unique by key (u32 values), runs of {run}"),
        }
    }

    /// CUB's call.
    fn cub_call(self) -> &'static str {
        match self {
            Kind::SelectIf { .. } => "DeviceSelect::If",
            Kind::Flagged => "DeviceSelect::Flagged",
            Kind::Partition => "DevicePartition::If",
            Kind::ThreeWay => "DevicePartition::If (two predicates)",
            Kind::Unique { .. } => "DeviceSelect::Unique",
            Kind::RunLengthEncode { .. } => "DeviceRunLengthEncode::Encode",
            Kind::NonTrivialRuns { .. } => "DeviceRunLengthEncode::NonTrivialRuns",
            Kind::UniqueByKey { .. } => "DeviceSelect::UniqueByKey",
        }
    }

    /// The shim's op for the case.
    fn compact_op(self) -> CompactOp {
        match self {
            Kind::SelectIf { .. } => CompactOp::SelectIfLt,
            Kind::Flagged => CompactOp::SelectFlagged,
            Kind::Partition => CompactOp::PartitionIfLt,
            Kind::ThreeWay => CompactOp::PartitionThreeWayLt,
            Kind::Unique { .. } => CompactOp::SelectUnique,
            Kind::RunLengthEncode { .. } => CompactOp::RunLengthEncode,
            Kind::NonTrivialRuns { .. } => CompactOp::NonTrivialRuns,
            Kind::UniqueByKey { .. } => CompactOp::UniqueByKey,
        }
    }

    /// The run length of a case over runs (`None`: over the uniform values).
    fn run(self) -> Option<usize> {
        match self {
            Kind::Unique { run }
            | Kind::RunLengthEncode { run }
            | Kind::NonTrivialRuns { run }
            | Kind::UniqueByKey { run } => Some(run),
            _ => None,
        }
    }

    /// The threshold `t` of `x < t` (the middle of the values for the partition; unused by
    /// the others).
    fn threshold<T: Elem>(self) -> T {
        match self {
            Kind::SelectIf { percent } => T::threshold(percent),
            Kind::ThreeWay => T::threshold(33),
            _ => T::threshold(50),
        }
    }

    /// The three-way partition's second threshold.
    fn threshold2<T: Elem>(self) -> T {
        T::threshold(67)
    }

    /// Bytes the case moves: every element read once (and its flag, its value), each element
    /// kept or each run written once (partition: every element).
    fn bytes<T: Elem>(self, n: usize, k: usize) -> u64 {
        let (s, n, k) = (std::mem::size_of::<T>() as u64, n as u64, k as u64);
        match self {
            Kind::SelectIf { .. } | Kind::Unique { .. } => s * (n + k),
            Kind::Flagged => s * (n + k) + n,
            Kind::Partition | Kind::ThreeWay => 2 * s * n,
            Kind::RunLengthEncode { .. } => s * n + (s + 8) * k,
            Kind::NonTrivialRuns { .. } => s * n + 16 * k,
            Kind::UniqueByKey { .. } => (s + 4) * (n + k),
        }
    }

    /// Context settings the tuning sweeps of our row try, with their rows' suffixes:
    /// GPU_REDUCE_SELECT_DELAYS=0,500,... times ours with other first look-back waits,
    /// GPU_REDUCE_SELECT_PREFETCH=0,64,... with other L2 prefetch distances,
    /// GPU_REDUCE_SELECT_BLOCK=128,256 with other block sizes (every call, unique by key
    /// included: one kernel family).
    fn sweeps(self) -> [(&'static str, Setter, &'static str); 3] {
        [
            (
                "GPU_REDUCE_SELECT_DELAYS",
                Context::set_select_delay,
                "first wait {} ns",
            ),
            (
                "GPU_REDUCE_SELECT_PREFETCH",
                Context::set_select_prefetch,
                "prefetch {} tiles",
            ),
            (
                "GPU_REDUCE_SELECT_BLOCK",
                Context::set_select_block,
                "block {} threads",
            ),
        ]
    }
}

/// A hash of `i` and `seed` (splitmix64's finalizer), the source of the inputs' values.
pub(crate) fn hash(i: u64, seed: u64) -> u64 {
    let mut z = (i ^ seed).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The element types of the compaction's rows: u32, f32 and u64.
trait Elem:
    SelectElement
    + CubCompact
    + DeviceRepr
    + ValidAsZeroBits
    + PartialOrd
    + Debug
    + Default
    + Send
    + Sync
{
    const SWEEP_DTYPE: Dtype;
    /// The keys our unique by key takes for this type: the type itself, or for f32 its bits.
    type Key: DeviceRepr + ValidAsZeroBits + Copy + PartialEq + Debug + Default + Send + Sync;

    /// A value uniform on the type's range of values (f32: [0, 1)) from a hash.
    fn uniform(h: u64) -> Self;
    /// `t` such that `x < t` keeps `percent`% of [`Elem::uniform`]'s values.
    fn threshold(percent: u32) -> Self;
    /// The value of a run from a hash and the run's index: consecutive runs' values differ
    /// (in the lowest bit).
    fn run_value(h: u64, run: u64) -> Self;
    /// The element as our unique by key's key.
    fn key(self) -> Self::Key;
    /// `x` as our unique by key's keys (the same memory).
    fn keys<'a>(ctx: &Context, x: &'a DeviceBuffer<Self>) -> Result<DeviceView<'a, Self::Key>>;
    /// Our unique by key, in stream order.
    fn unique_by_key_into(
        ctx: &Context,
        keys: DeviceView<'_, Self::Key>,
        values: &DeviceBuffer<u32>,
        keys_out: &mut DeviceBuffer<Self::Key>,
        values_out: &mut DeviceBuffer<u32>,
        count: &mut DeviceBuffer<u64>,
    ) -> Result<()>;
}

/// [`Elem`] of an integer type, its own key.
macro_rules! int_elem {
    ($t:ty, $dtype:expr, $uniform:expr, $threshold:expr) => {
        impl Elem for $t {
            const SWEEP_DTYPE: Dtype = $dtype;
            type Key = $t;
            fn uniform(h: u64) -> $t {
                $uniform(h)
            }
            fn threshold(percent: u32) -> $t {
                $threshold(percent)
            }
            fn run_value(h: u64, run: u64) -> $t {
                (Self::uniform(h) & !1) | (run & 1) as $t
            }
            fn key(self) -> $t {
                self
            }
            fn keys<'a>(_: &Context, x: &'a DeviceBuffer<$t>) -> Result<DeviceView<'a, $t>> {
                Ok(x.into())
            }
            fn unique_by_key_into(
                ctx: &Context,
                keys: DeviceView<'_, $t>,
                values: &DeviceBuffer<u32>,
                keys_out: &mut DeviceBuffer<$t>,
                values_out: &mut DeviceBuffer<u32>,
                count: &mut DeviceBuffer<u64>,
            ) -> Result<()> {
                ctx.unique_by_key_into(keys, values, keys_out, values_out, count)
            }
        }
    };
}

int_elem!(
    u32,
    Dtype::U32,
    |h: u64| h as u32,
    |p: u32| ((1u64 << 32) * p as u64 / 100).min(u32::MAX as u64) as u32
);
int_elem!(
    u64,
    Dtype::U64,
    |h: u64| h,
    |p: u32| ((1u128 << 64) * p as u128 / 100).min(u64::MAX as u128) as u64
);

/// 2^-24: f32 values are multiples of it in [0, 1).
const F32_STEP: f32 = 1.0 / (1u32 << 24) as f32;

impl Elem for f32 {
    const SWEEP_DTYPE: Dtype = Dtype::F32;
    type Key = u32;
    fn uniform(h: u64) -> f32 {
        (h >> 40) as f32 * F32_STEP
    }
    fn threshold(percent: u32) -> f32 {
        percent as f32 / 100.0
    }
    fn run_value(h: u64, run: u64) -> f32 {
        (((h >> 40) as u32 & !1) | (run & 1) as u32) as f32 * F32_STEP
    }
    fn key(self) -> u32 {
        self.to_bits()
    }
    fn keys<'a>(ctx: &Context, x: &'a DeviceBuffer<f32>) -> Result<DeviceView<'a, u32>> {
        let addr = ctx.device_addr(x)?;
        // SAFETY: `x`'s memory, as long as `x` is borrowed: allocated, initialised (every bit
        // pattern is a u32), and only read through the view.
        unsafe { DeviceView::from_raw(ctx, addr, x.len()) }
    }
    fn unique_by_key_into(
        ctx: &Context,
        keys: DeviceView<'_, u32>,
        values: &DeviceBuffer<u32>,
        keys_out: &mut DeviceBuffer<u32>,
        values_out: &mut DeviceBuffer<u32>,
        count: &mut DeviceBuffer<u64>,
    ) -> Result<()> {
        ctx.unique_by_key_into(keys, values, keys_out, values_out, count)
    }
}

/// `n` values `f(i)`, made on every core.
pub(crate) fn generate<T: Copy + Default + Send>(
    n: usize,
    f: impl Fn(usize) -> T + Sync,
) -> Vec<T> {
    let mut v = vec![T::default(); n];
    let threads = std::thread::available_parallelism().map_or(1, |p| p.get());
    let chunk = n.div_ceil(threads).max(1 << 16);
    std::thread::scope(|s| {
        for (c, part) in v.chunks_mut(chunk).enumerate() {
            let f = &f;
            s.spawn(move || {
                for (j, x) in part.iter_mut().enumerate() {
                    *x = f(c * chunk + j);
                }
            });
        }
    });
    v
}

/// Values uniform on the type (select-if, flagged, partition).
fn uniform_input<T: Elem>(n: usize, seed: u64) -> Vec<T> {
    generate(n, |i| T::uniform(hash(i as u64, seed)))
}

/// Runs of `run` equal values (the last one shorter when `run` does not divide `n`), consecutive
/// runs' values different.
fn runs_input<T: Elem>(n: usize, run: usize, seed: u64) -> Vec<T> {
    generate(n, |i| {
        let r = (i / run) as u64;
        T::run_value(hash(r, seed), r)
    })
}

/// One flag byte an element, half of them set.
fn flags_input(n: usize, seed: u64) -> Vec<u8> {
    generate(n, |i| (hash(i as u64, seed) >> 63) as u8)
}

/// The runs of equal consecutive elements of `x` as (first index, length).
fn runs<T: PartialEq>(x: &[T]) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut i = 0;
    std::iter::from_fn(move || {
        if i >= x.len() {
            return None;
        }
        let start = i;
        i += 1;
        while i < x.len() && x[i] == x[start] {
            i += 1;
        }
        Some((start, i - start))
    })
}

/// A case's CPU result.
#[derive(Debug, PartialEq)]
enum Want<T: Elem> {
    /// The kept elements in order (select-if, flagged, unique).
    Values(Vec<T>),
    /// The kept and the others, each in order.
    Partition { kept: Vec<T>, rest: Vec<T> },
    /// The three parts, each in order.
    ThreeWay([Vec<T>; 3]),
    /// Each run's first element and length.
    Encoded { unique: Vec<T>, counts: Vec<u64> },
    /// Each run of two or more's offset and length.
    Runs {
        offsets: Vec<u64>,
        lengths: Vec<u64>,
    },
    /// Each run's key and first value.
    ByKey { keys: Vec<T::Key>, values: Vec<u32> },
}

impl<T: Elem> Want<T> {
    /// The count the method returns (the kept elements, the runs).
    fn count(&self) -> usize {
        match self {
            Want::Values(v) => v.len(),
            Want::Partition { kept, .. } => kept.len(),
            Want::ThreeWay(p) => p[0].len(),
            Want::Encoded { unique, .. } => unique.len(),
            Want::Runs { offsets, .. } => offsets.len(),
            Want::ByKey { keys, .. } => keys.len(),
        }
    }
}

/// The CPU reference of `kind` over its input `x` (the uniform values or the runs), with the
/// flags and the by-key values.
fn reference<T: Elem>(kind: Kind, x: &[T], flags: &[u8], values: &[u32]) -> Want<T> {
    let t = kind.threshold::<T>();
    match kind {
        Kind::SelectIf { .. } => Want::Values(x.iter().copied().filter(|&v| v < t).collect()),
        Kind::Flagged => Want::Values(
            x.iter()
                .zip(flags)
                .filter(|&(_, &f)| f != 0)
                .map(|(&v, _)| v)
                .collect(),
        ),
        Kind::Partition => {
            let (kept, rest) = x.iter().partition(|&&v| v < t);
            Want::Partition { kept, rest }
        }
        Kind::ThreeWay => {
            let t2 = kind.threshold2::<T>();
            let part = |v: T| {
                if v < t {
                    0
                } else if v < t2 {
                    1
                } else {
                    2
                }
            };
            Want::ThreeWay([0, 1, 2].map(|p| x.iter().copied().filter(|&v| part(v) == p).collect()))
        }
        Kind::Unique { .. } => Want::Values(runs(x).map(|(s, _)| x[s]).collect()),
        Kind::RunLengthEncode { .. } => Want::Encoded {
            unique: runs(x).map(|(s, _)| x[s]).collect(),
            counts: runs(x).map(|(_, l)| l as u64).collect(),
        },
        Kind::NonTrivialRuns { .. } => {
            let long = || runs(x).filter(|&(_, l)| l >= 2);
            Want::Runs {
                offsets: long().map(|(s, _)| s as u64).collect(),
                lengths: long().map(|(_, l)| l as u64).collect(),
            }
        }
        Kind::UniqueByKey { .. } => Want::ByKey {
            keys: runs(x).map(|(s, _)| x[s].key()).collect(),
            values: runs(x).map(|(s, _)| values[s]).collect(),
        },
    }
}

/// What a method wrote, read back: its outputs' first `count` elements (CUB's partition: all
/// `n` of its one output).
#[derive(Debug)]
enum Got<T: Elem> {
    Values(Vec<T>),
    /// Ours: the kept and the others, each in order.
    Partition(Vec<T>, Vec<T>),
    /// CUB's: the kept at the front, the others reversed after them, and the count kept.
    CubPartition(Vec<T>, usize),
    ThreeWay([Vec<T>; 3]),
    Encoded(Vec<T>, Vec<u64>),
    Runs(Vec<u64>, Vec<u64>),
    ByKey(Vec<T::Key>, Vec<u32>),
}

/// Whether `got` is `want`.
fn agrees<T: Elem>(want: &Want<T>, got: &Got<T>) -> bool {
    match (want, got) {
        (Want::Values(w), Got::Values(g)) => w == g,
        (Want::Partition { kept, rest }, Got::Partition(a, b)) => kept == a && rest == b,
        (Want::Partition { kept, rest }, Got::CubPartition(out, k)) => {
            *k == kept.len()
                && out.len() >= k + rest.len()
                && out[..*k] == **kept
                && out[*k..k + rest.len()].iter().rev().eq(rest.iter())
        }
        (Want::ThreeWay(w), Got::ThreeWay(g)) => w == g,
        (Want::Encoded { unique, counts }, Got::Encoded(u, c)) => unique == u && counts == c,
        (Want::Runs { offsets, lengths }, Got::Runs(o, l)) => offsets == o && lengths == l,
        (Want::ByKey { keys, values }, Got::ByKey(k, v)) => keys == k && values == v,
        _ => false,
    }
}

/// One type and size's inputs, each uploaded once and copied so that the timed runs rotate
/// over `copies` of it (all the same values: one CPU reference serves every copy).
pub(crate) struct Input<T> {
    pub bufs: Vec<DeviceBuffer<T>>,
    /// Each copy's device address (for CUB).
    pub addrs: Vec<u64>,
    pub host: Vec<T>,
}

impl<T: DeviceRepr + ValidAsZeroBits + Copy> Input<T> {
    pub fn new(ctx: &Context, host: Vec<T>, copies: usize) -> Result<Input<T>> {
        let mut bufs = vec![ctx.htod(&host)?];
        for _ in 1..copies {
            let mut b = ctx.alloc_zeros::<T>(host.len())?;
            ctx.copy_into(&bufs[0], &mut b, 0)?;
            bufs.push(b);
        }
        let addrs = bufs
            .iter()
            .map(|b| ctx.device_addr(b))
            .collect::<Result<_>>()?;
        Ok(Input { bufs, addrs, host })
    }
}

/// How many copies of an input of `bytes` the timed runs rotate over: enough to overflow the L2
/// four times (at most 64; one on the simulator, which has no cache to defeat).
pub(crate) fn copies(ctx: &Context, bytes: usize) -> usize {
    if ctx.backend_kind() == BackendKind::Sim {
        return 1;
    }
    (4 * ctx.info().l2_bytes)
        .div_ceil(bytes.max(1))
        .clamp(1, 64)
}

/// Every input of one type and size.
struct Inputs<T: Elem> {
    n: usize,
    uniform: Input<T>,
    flags: Input<u8>,
    /// The by-key values.
    values: Input<u32>,
    /// The runs inputs, by run length.
    runs: Vec<(usize, Input<T>)>,
    copies: usize,
    k: Cell<usize>,
}

impl<T: Elem> Inputs<T> {
    /// The inputs `cases` read, `n` elements each, from `seed`.
    fn new(ctx: &Context, n: usize, cases: &[Kind], seed: u64) -> Result<Inputs<T>> {
        let c = copies(ctx, n * std::mem::size_of::<T>());
        let mut run_lengths: Vec<usize> = cases.iter().filter_map(|k| k.run()).collect();
        run_lengths.sort_unstable();
        run_lengths.dedup();
        let runs = run_lengths
            .into_iter()
            .map(|r| {
                let host = runs_input::<T>(n, r, hash(r as u64, seed ^ 0x7275_6e73));
                Ok((r, Input::new(ctx, host, c)?))
            })
            .collect::<Result<_>>()?;
        let values = generate(n, |i| hash(i as u64, hash(2, seed)) as u32);
        Ok(Inputs {
            n,
            uniform: Input::new(ctx, uniform_input(n, seed), c)?,
            flags: Input::new(ctx, flags_input(n, hash(1, seed)), c)?,
            values: Input::new(ctx, values, c)?,
            runs,
            copies: c,
            k: Cell::new(0),
        })
    }

    /// `kind`'s input (the uniform values or its runs).
    fn of(&self, kind: Kind) -> &Input<T> {
        match kind.run() {
            Some(r) => self
                .runs
                .iter()
                .find(|(l, _)| *l == r)
                .map(|(_, x)| x)
                .expect("made for every case"),
            None => &self.uniform,
        }
    }

    /// The copy the next run reads (1, 2, ..., 0, 1, ...).
    fn next(&self) -> usize {
        self.k.set((self.k.get() + 1) % self.copies);
        self.k.get()
    }
}

/// One type and size's outputs, allocated once, each with room for every case.
struct Outputs<T: Elem> {
    /// The kept elements, unique elements.
    out: DeviceBuffer<T>,
    /// The partition's others; the device copy's destination.
    other: DeviceBuffer<T>,
    /// The three-way partition's second part.
    second: DeviceBuffer<T>,
    /// The run lengths (run-length encode), the offsets (non-trivial runs).
    wide: DeviceBuffer<u64>,
    /// The non-trivial runs' lengths.
    wide2: DeviceBuffer<u64>,
    keys: DeviceBuffer<T::Key>,
    values: DeviceBuffer<u32>,
    count: DeviceBuffer<u64>,
}

impl<T: Elem> Outputs<T> {
    fn new(ctx: &Context, n: usize) -> Result<Outputs<T>> {
        Ok(Outputs {
            out: ctx.alloc_zeros(n)?,
            other: ctx.alloc_zeros(n)?,
            second: ctx.alloc_zeros(n)?,
            wide: ctx.alloc_zeros(n)?,
            wide2: ctx.alloc_zeros((n / 2).max(1))?,
            keys: ctx.alloc_zeros(n)?,
            values: ctx.alloc_zeros(n)?,
            // Two: the three-way partition's two counts.
            count: ctx.alloc_zeros(2)?,
        })
    }

    /// Zero what `kind` writes (before CUB's checked run: ours wrote the same buffers).
    fn clear(&mut self, ctx: &Context, kind: Kind) -> Result<()> {
        ctx.memset_zeros(&mut self.count)?;
        match kind {
            Kind::SelectIf { .. } | Kind::Flagged | Kind::Unique { .. } => {
                ctx.memset_zeros(&mut self.out)
            }
            Kind::Partition => {
                ctx.memset_zeros(&mut self.out)?;
                ctx.memset_zeros(&mut self.other)
            }
            Kind::ThreeWay => {
                ctx.memset_zeros(&mut self.out)?;
                ctx.memset_zeros(&mut self.second)?;
                ctx.memset_zeros(&mut self.other)
            }
            Kind::RunLengthEncode { .. } => {
                ctx.memset_zeros(&mut self.out)?;
                ctx.memset_zeros(&mut self.wide)
            }
            Kind::NonTrivialRuns { .. } => {
                ctx.memset_zeros(&mut self.wide)?;
                ctx.memset_zeros(&mut self.wide2)
            }
            Kind::UniqueByKey { .. } => {
                ctx.memset_zeros(&mut self.keys)?;
                ctx.memset_zeros(&mut self.values)
            }
        }
    }

    /// The count the last run left on the device.
    fn count(&self, ctx: &Context) -> Result<u64> {
        Ok(ctx.dtoh(&self.count)?[0])
    }

    /// What `kind` wrote, `k` of it (`None` when `k` is more than the outputs hold); `cub`:
    /// CUB's partition, one output of `n`.
    fn read(
        &self,
        ctx: &Context,
        kind: Kind,
        k: u64,
        n: usize,
        cub: bool,
    ) -> Result<Option<Got<T>>> {
        fn first<X: DeviceRepr + Copy>(
            ctx: &Context,
            b: &DeviceBuffer<X>,
            k: usize,
        ) -> Result<Vec<X>> {
            ctx.dtoh(b.view(..k)?)
        }
        let room = match kind {
            Kind::NonTrivialRuns { .. } => self.wide2.len(),
            _ => n,
        };
        let Ok(k) = usize::try_from(k) else {
            return Ok(None);
        };
        if k > room {
            return Ok(None);
        }
        Ok(Some(match kind {
            Kind::SelectIf { .. } | Kind::Flagged | Kind::Unique { .. } => {
                Got::Values(first(ctx, &self.out, k)?)
            }
            Kind::Partition if cub => Got::CubPartition(first(ctx, &self.out, n)?, k),
            Kind::Partition => {
                Got::Partition(first(ctx, &self.out, k)?, first(ctx, &self.other, n - k)?)
            }
            Kind::ThreeWay => {
                // The second part's size: the count's second word.
                let k2 = ctx.dtoh(&self.count)?[1] as usize;
                if k + k2 > n {
                    return Ok(None);
                }
                Got::ThreeWay([
                    first(ctx, &self.out, k)?,
                    first(ctx, &self.second, k2)?,
                    first(ctx, &self.other, n - k - k2)?,
                ])
            }
            Kind::RunLengthEncode { .. } => {
                Got::Encoded(first(ctx, &self.out, k)?, first(ctx, &self.wide, k)?)
            }
            Kind::NonTrivialRuns { .. } => {
                Got::Runs(first(ctx, &self.wide, k)?, first(ctx, &self.wide2, k)?)
            }
            Kind::UniqueByKey { .. } => {
                Got::ByKey(first(ctx, &self.keys, k)?, first(ctx, &self.values, k)?)
            }
        }))
    }
}

/// Our call for `kind` on copy `i` of its input, in stream order (the count to `o.count`).
fn ours<T: Elem>(
    ctx: &Context,
    kind: Kind,
    ins: &Inputs<T>,
    i: usize,
    o: &mut Outputs<T>,
) -> Result<()> {
    let x = &ins.of(kind).bufs[i];
    let pred = Predicate::Lt(kind.threshold::<T>());
    match kind {
        Kind::SelectIf { .. } => ctx.select_into(x, &mut o.out, &mut o.count, pred),
        Kind::Flagged => ctx.select_flagged_into(x, &ins.flags.bufs[i], &mut o.out, &mut o.count),
        Kind::Partition => ctx.partition_into(x, &mut o.out, &mut o.other, &mut o.count, pred),
        Kind::ThreeWay => ctx.partition_three_way_into(
            x,
            &mut o.out,
            &mut o.second,
            &mut o.other,
            &mut o.count,
            pred,
            Predicate::Lt(kind.threshold2::<T>()),
        ),
        Kind::Unique { .. } => ctx.unique_into(x, &mut o.out, &mut o.count),
        Kind::RunLengthEncode { .. } => {
            ctx.run_length_encode_into(x, &mut o.out, &mut o.wide, &mut o.count)
        }
        Kind::NonTrivialRuns { .. } => {
            ctx.non_trivial_runs_into(x, &mut o.wide, &mut o.wide2, &mut o.count)
        }
        Kind::UniqueByKey { .. } => T::unique_by_key_into(
            ctx,
            T::keys(ctx, x)?,
            &ins.values.bufs[i],
            &mut o.keys,
            &mut o.values,
            &mut o.count,
        ),
    }
}

/// The outputs' device addresses, for CUB.
struct OutAddrs {
    out: u64,
    other: u64,
    second: u64,
    wide: u64,
    wide2: u64,
    keys: u64,
    values: u64,
    count: u64,
}

impl OutAddrs {
    fn of<T: Elem>(ctx: &Context, o: &Outputs<T>) -> Result<OutAddrs> {
        Ok(OutAddrs {
            out: ctx.device_addr(&o.out)?,
            other: ctx.device_addr(&o.other)?,
            second: ctx.device_addr(&o.second)?,
            wide: ctx.device_addr(&o.wide)?,
            wide2: ctx.device_addr(&o.wide2)?,
            keys: ctx.device_addr(&o.keys)?,
            values: ctx.device_addr(&o.values)?,
            count: ctx.device_addr(&o.count)?,
        })
    }
}

/// CUB's call for `kind` on copy `i` of its input, enqueued on `stream`.
///
/// # Safety
/// `temp` holds `temp_bytes` >= the shim's query for `kind`, and every buffer behind `ins` and
/// `o` stays alive until the stream has run the call.
#[allow(clippy::too_many_arguments)] // one CUB call's context
unsafe fn cub_call<T: Elem>(
    cub: &Cub,
    kind: Kind,
    ins: &Inputs<T>,
    i: usize,
    o: &OutAddrs,
    (temp, temp_bytes): (u64, usize),
    stream: *mut std::ffi::c_void,
) -> Result<()> {
    let x = ins.of(kind).addrs[i];
    let (n, t) = (ins.n as u64, kind.threshold::<T>());
    // SAFETY: the caller's; the inputs hold `n` elements (flags, values: `n` each), the outputs
    // room for `n` (the non-trivial runs' `n / 2`), the count one u64.
    unsafe {
        match kind {
            Kind::SelectIf { .. } => {
                cub.select_if_lt::<T>(temp, temp_bytes, x, o.out, o.count, n, t, stream)
            }
            Kind::Flagged => {
                let f = ins.flags.addrs[i];
                cub.select_flagged::<T>(temp, temp_bytes, x, f, o.out, o.count, n, stream)
            }
            Kind::Partition => {
                cub.partition_if_lt::<T>(temp, temp_bytes, x, o.out, o.count, n, t, stream)
            }
            Kind::ThreeWay => {
                let (a, b, c) = (o.out, o.second, o.other);
                let t2 = kind.threshold2::<T>();
                cub.partition_three_way_lt::<T>(
                    temp, temp_bytes, x, a, b, c, o.count, n, t, t2, stream,
                )
            }
            Kind::Unique { .. } => {
                cub.select_unique::<T>(temp, temp_bytes, x, o.out, o.count, n, stream)
            }
            Kind::RunLengthEncode { .. } => {
                cub.run_length_encode::<T>(temp, temp_bytes, x, o.out, o.wide, o.count, n, stream)
            }
            Kind::NonTrivialRuns { .. } => {
                cub.non_trivial_runs::<T>(temp, temp_bytes, x, o.wide, o.wide2, o.count, n, stream)
            }
            Kind::UniqueByKey { .. } => {
                let v = ins.values.addrs[i];
                cub.unique_by_key::<T>(temp, temp_bytes, x, v, o.keys, o.values, o.count, n, stream)
            }
        }
    }?;
    Ok(())
}

/// Whether `cub` can run `op` on `n` elements of `T`: the shim has the call, and takes that many
/// (a CUB before 2.7 no more than 2^31 - 1 elements, the run-length encodings of a CUB before
/// 3.2 neither).
fn cub_takes<T: Elem>(cub: &Cub, op: CompactOp, n: usize) -> bool {
    let runs = matches!(op, CompactOp::RunLengthEncode | CompactOp::NonTrivialRuns);
    let wide = cub.wide_num_items() && (!runs || cub.version() >= 300200);
    cub.has_compaction::<T>(op) && (n <= i32::MAX as usize || wide)
}

/// The compaction's rows: the default cases, or with a u32 or u64 in `config.dtypes` the matrix
/// (see the module's doc); `earlier` are the sweep's rows so far (a device copy row already
/// there for a type and size is not measured again). Also returns the types and sizes left out
/// (do not fit in device memory), as the sweep's `skipped` says them.
pub fn select_cases(
    ctx: &Context,
    cubs: Cubs<'_>,
    config: &SweepConfig,
    earlier: &[Measurement],
    progress: &mut impl FnMut(&str),
) -> Result<(Vec<Measurement>, Vec<String>)> {
    let sim = ctx.backend_kind() == BackendKind::Sim;
    let matrix = config.dtypes.iter().any(|d| d.select_only());
    let (plan, cases): (Vec<(Dtype, u64)>, _) = if matrix {
        let types: Vec<Dtype> = config
            .dtypes
            .iter()
            .copied()
            .filter(|d| matches!(d, Dtype::U32 | Dtype::F32 | Dtype::U64))
            .collect();
        let plan = config
            .sizes
            .iter()
            .flat_map(|&n| types.iter().map(move |&t| (t, n)))
            .collect();
        (plan, Kind::matrix_cases())
    } else {
        let n = if sim { 1 << 14 } else { 1 << 28 };
        (vec![(Dtype::U32, n)], Kind::default_cases())
    };
    let (mut rows, mut skipped) = (Vec::new(), Vec::new());
    for (dt, n) in plan {
        let seed = if matrix {
            config.seed ^ (n << 8) ^ dt as u64
        } else {
            config.seed
        };
        let has_copy = earlier.iter().chain(&rows).any(|m: &Measurement| {
            m.op == "memory"
                && m.dtype == dt.name()
                && m.n == n
                && m.method.starts_with("device copy")
        });
        let run = Run {
            ctx,
            cubs,
            iters: config.iters,
            warmup: config.warmup,
            cases: &cases,
            copy: !has_copy,
        };
        let r = match usize::try_from(n) {
            Err(_) => Err(Error::OutOfMemory { bytes: usize::MAX }),
            Ok(n) => match dt {
                Dtype::U32 => run.of::<u32>(n, seed, progress),
                Dtype::F32 => run.of::<f32>(n, seed, progress),
                Dtype::U64 => run.of::<u64>(n, seed, progress),
                _ => unreachable!("select's types only"),
            },
        };
        match r {
            Ok(r) => rows.extend(r),
            Err(Error::OutOfMemory { bytes }) => skipped.push(format!(
                "select {} n = {n}: does not fit in device memory ({bytes} bytes asked)",
                dt.name()
            )),
            Err(e) => return Err(e),
        }
    }
    Ok((rows, skipped))
}

/// What every type and size runs with.
struct Run<'a> {
    ctx: &'a Context,
    cubs: Cubs<'a>,
    iters: usize,
    warmup: usize,
    cases: &'a [Kind],
    /// Measure the device copy too.
    copy: bool,
}

impl Run<'_> {
    /// Every case at `n` elements of `T`: ours checked against the CPU, timed (`warmup` +
    /// `iters` runs) and its count checked again, then CUB's (each shim that has the call)
    /// checked and timed, then the device copy.
    fn of<T: Elem>(
        &self,
        n: usize,
        seed: u64,
        progress: &mut impl FnMut(&str),
    ) -> Result<Vec<Measurement>> {
        let (ctx, it, wu) = (self.ctx, self.iters, self.warmup);
        let sim = ctx.backend_kind() == BackendKind::Sim;
        let (dt, nn) = (T::SWEEP_DTYPE.name(), n as u64);
        let say = |what: &str| format!("select {dt} n={n}: {what}");
        progress(&say("inputs"));
        let ins = Inputs::<T>::new(ctx, n, self.cases, seed)?;
        let mut o = Outputs::<T>::new(ctx, n)?;
        let mut rows = Vec::new();
        let row = |method: &str, family, bytes, t: &[f64], ok| {
            case_measurement(OP, dt, method, family, nn, bytes, t, ok, sim)
        };
        for &kind in self.cases {
            let name = kind.name();
            progress(&say(&name));
            let want = {
                let x = &ins.of(kind).host;
                reference(kind, x, &ins.flags.host, &ins.values.host)
            };
            let k = want.count();
            let bytes = kind.bytes::<T>(n, k);
            // Ours: checked, timed in stream order (the count stays on the device, as CUB's),
            // and the last timed run's count checked too.
            ours(ctx, kind, &ins, 0, &mut o)?;
            let got = o.read(ctx, kind, o.count(ctx)?, n, false)?;
            let mut ok = got.is_some_and(|g| agrees(&want, &g));
            let t = ctx.time_ms(wu, it, || ours(ctx, kind, &ins, ins.next(), &mut o))?;
            ok &= o.count(ctx)? == k as u64;
            rows.push(row(&name, Family::Ours, bytes, &t, ok));
            let sweeps = kind.sweeps();
            for (setting, t) in tuning_sweeps(ctx, &sweeps, wu, it, || {
                ours(ctx, kind, &ins, ins.next(), &mut o)
            })? {
                rows.push(row(
                    &format!("{name}, {setting}"),
                    Family::Ours,
                    bytes,
                    &t,
                    ok,
                ));
            }
            // CUB, each shim that has the call (an older one has no row: "not available").
            let op = kind.compact_op();
            for (label, cub) in self.cubs.iter() {
                if !cub_takes::<T>(cub, op, n) {
                    continue;
                }
                progress(&say(&format!("{name}, {label}")));
                let stream = crate::cub::stream_of(ctx)?;
                let temp_bytes = cub.temp_bytes_compaction::<T>(op, nn)?;
                let temp = ctx.alloc_zeros::<u8>(temp_bytes.max(1))?;
                let scratch = (ctx.device_addr(&temp)?, temp_bytes);
                o.clear(ctx, kind)?;
                let addrs = OutAddrs::of(ctx, &o)?;
                // SAFETY: `temp` and every input and output live to the end of the case, and
                // every read of them (the checks) waits for the stream.
                let run = |i| unsafe { cub_call(cub, kind, &ins, i, &addrs, scratch, stream) };
                run(0)?;
                let got = o.read(ctx, kind, o.count(ctx)?, n, true)?;
                let ok = got.is_some_and(|g| agrees(&want, &g));
                let t = ctx.time_ms(wu, it, || run(ins.next()))?;
                let method = format!("{label} {}: {name}", kind.cub_call());
                rows.push(row(&method, Family::Cub, bytes, &t, ok));
            }
        }
        // The copy limit: a device copy of the n elements (each read and written once).
        if self.copy {
            progress(&say("device copy"));
            let x = &ins.uniform;
            ctx.copy_into(&x.bufs[0], &mut o.other, 0)?;
            let ok = ctx.dtoh(&o.other)? == x.host;
            let t = ctx.time_ms(wu, it, || {
                ctx.copy_into(&x.bufs[ins.next()], &mut o.other, 0)
            })?;
            let (m, bytes) = (
                "device copy (read + write)",
                2 * nn * std::mem::size_of::<T>() as u64,
            );
            rows.push(case_measurement(
                "memory",
                dt,
                m,
                Family::Limit,
                nn,
                bytes,
                &t,
                ok,
                sim,
            ));
        }
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The share of `x < threshold(p)` over uniform values is p% for every type.
    fn shares<T: Elem>() {
        let x = uniform_input::<T>(1 << 16, 3);
        for percent in [1, 50, 99] {
            let kind = Kind::SelectIf { percent };
            let Want::Values(kept) = reference(kind, &x, &[], &[]) else {
                panic!("select-if keeps values");
            };
            let share = 100.0 * kept.len() as f64 / x.len() as f64;
            let dt = T::SWEEP_DTYPE.name();
            assert!(
                (share - percent as f64).abs() < 1.0,
                "{dt} {percent}%: {share}"
            );
        }
        let Want::Partition { kept, rest } = reference(Kind::Partition, &x, &[], &[]) else {
            panic!("a partition");
        };
        assert_eq!(kept.len() + rest.len(), x.len());
        assert!((kept.len() as f64 / x.len() as f64 - 0.5).abs() < 0.01);
    }

    #[test]
    fn the_thresholds_keep_their_share() {
        shares::<u32>();
        shares::<f32>();
        shares::<u64>();
        assert_eq!(Kind::Partition.threshold::<u32>(), 1 << 31);
        assert_eq!(Kind::Partition.threshold::<u64>(), 1 << 63);
        assert_eq!(Kind::Partition.threshold::<f32>(), 0.5);
        assert_eq!(<u32 as Elem>::threshold(100), u32::MAX);
        assert_eq!(<u64 as Elem>::threshold(100), u64::MAX);
        // f32: multiples of 2^-24 in [0, 1), no -0.0 (its bits are our by-key keys).
        for h in [0, u64::MAX, 1 << 40, 0x1234_5678_9abc_def0] {
            let v = <f32 as Elem>::uniform(h);
            assert!((0.0..1.0).contains(&v) && v.to_bits() >> 31 == 0, "{v}");
            assert_eq!((v / F32_STEP).fract(), 0.0);
        }
    }

    /// Every run of a runs input is `run` long (the last one the rest), consecutive runs
    /// different.
    fn run_lengths<T: Elem>() {
        let n = 5003;
        for run in RUNS {
            let x = runs_input::<T>(n, run, 11);
            let r: Vec<(usize, usize)> = runs(&x).collect();
            assert_eq!(
                r.len(),
                n.div_ceil(run),
                "{} runs of {run}",
                T::SWEEP_DTYPE.name()
            );
            for (j, &(s, l)) in r.iter().enumerate() {
                assert_eq!(s, j * run);
                assert_eq!(l, run.min(n - s));
            }
            // The key of a run is the same as its value's equality.
            for w in x.windows(2) {
                assert_eq!(w[0] == w[1], w[0].key() == w[1].key());
            }
        }
    }

    #[test]
    fn run_inputs_have_the_runs_they_say() {
        run_lengths::<u32>();
        run_lengths::<f32>();
        run_lengths::<u64>();
        let flags = flags_input(1 << 16, 5);
        let set = flags.iter().filter(|&&f| f != 0).count() as f64 / flags.len() as f64;
        assert!((set - 0.5).abs() < 0.01, "{set}");
        assert!(flags.iter().all(|&f| f <= 1));
    }

    #[test]
    fn the_references_of_the_run_cases() {
        let x = [4u32, 4, 4, 9, 5, 5, 7];
        let (flags, values) = ([1u8, 0, 0, 1, 0, 1, 1], [10u32, 11, 12, 13, 14, 15, 16]);
        let run = 8;
        let r = |kind| reference::<u32>(kind, &x, &flags, &values);
        assert_eq!(r(Kind::Unique { run }), Want::Values(vec![4, 9, 5, 7]));
        assert_eq!(r(Kind::Flagged), Want::Values(vec![4, 9, 5, 7]));
        assert_eq!(
            r(Kind::RunLengthEncode { run }),
            Want::Encoded {
                unique: vec![4, 9, 5, 7],
                counts: vec![3, 1, 2, 1]
            }
        );
        assert_eq!(
            r(Kind::NonTrivialRuns { run }),
            Want::Runs {
                offsets: vec![0, 4],
                lengths: vec![3, 2]
            }
        );
        assert_eq!(
            r(Kind::UniqueByKey { run }),
            Want::ByKey {
                keys: vec![4, 9, 5, 7],
                values: vec![10, 13, 14, 16]
            }
        );
        assert_eq!(r(Kind::NonTrivialRuns { run }).count(), 2);
        // f32 keys are their bits.
        let xf = [0.5f32, 0.5, 0.25];
        let Want::ByKey { keys, .. } =
            reference::<f32>(Kind::UniqueByKey { run }, &xf, &[], &values)
        else {
            panic!("by key");
        };
        assert_eq!(keys, [0.5f32.to_bits(), 0.25f32.to_bits()]);
        // Runs of 1: no non-trivial run.
        let ones = runs_input::<u64>(100, 1, 3);
        assert_eq!(
            reference(Kind::NonTrivialRuns { run: 1 }, &ones, &[], &[]).count(),
            0
        );
    }

    #[test]
    fn the_checks_take_the_right_outputs_and_cubs_reversed_rest() {
        let want = Want::Partition {
            kept: vec![1u32, 2],
            rest: vec![7, 8, 9],
        };
        assert!(agrees(&want, &Got::CubPartition(vec![1, 2, 9, 8, 7], 2)));
        assert!(!agrees(&want, &Got::CubPartition(vec![1, 2, 7, 8, 9], 2)));
        assert!(!agrees(&want, &Got::CubPartition(vec![1, 2, 9, 8, 7], 3)));
        assert!(agrees(&want, &Got::Partition(vec![1, 2], vec![7, 8, 9])));
        assert!(!agrees(&want, &Got::Partition(vec![1, 2], vec![9, 8, 7])));
        let want = Want::Encoded {
            unique: vec![4u32, 9],
            counts: vec![3, 1],
        };
        assert!(agrees(&want, &Got::Encoded(vec![4, 9], vec![3, 1])));
        assert!(!agrees(&want, &Got::Encoded(vec![4, 9], vec![3, 2])));
        assert!(!agrees(&want, &Got::Values(vec![4, 9])));
    }

    #[test]
    fn the_first_rows_keep_their_names_and_every_name_is_distinct() {
        let first: Vec<String> = Kind::default_cases()[..5]
            .iter()
            .map(|k| k.name())
            .collect();
        assert_eq!(
            first,
            [
                "select-if 1% kept",
                "select-if 50% kept",
                "select-if 99% kept",
                "partition 50% kept (ours 2 outputs in order, CUB 1 with the rest reversed at \
                 its back; same bytes)",
                "unique, runs of 8",
            ]
        );
        let matrix = Kind::matrix_cases();
        assert_eq!(matrix.len(), 18);
        let mut names: Vec<String> = matrix.iter().map(|k| k.name()).collect();
        for k in Kind::default_cases() {
            assert!(matrix.contains(&k), "{k:?}");
        }
        for n in &names {
            assert!(!n.contains(": "), "{n}");
        }
        names.sort();
        names.dedup();
        assert_eq!(names.len(), matrix.len());
        // The bytes of the first rows, as before: u32 read, each kept written (partition: all).
        let n = 1 << 20;
        assert_eq!(
            Kind::SelectIf { percent: 1 }.bytes::<u32>(n, 10),
            4 * (n as u64 + 10)
        );
        assert_eq!(Kind::Partition.bytes::<u32>(n, 10), 8 * n as u64);
        assert_eq!(
            Kind::RunLengthEncode { run: 8 }.bytes::<u64>(n, 10),
            8 * n as u64 + 160
        );
    }
}
