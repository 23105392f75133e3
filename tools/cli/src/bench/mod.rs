//! The benchmark sweep: our production reduce and scan (and, on request, the seeds' reduction
//! ladder) against CUB and the memory limit, over sizes and element types, in one process and
//! run. Measured the way METHOD.md asks: CUDA events (wall clock on the simulator, labelled
//! simulated), warm-up, median and spread of many runs, fresh random inputs rotated over
//! buffers several times the L2 size, and every method's result checked against a CPU
//! reference before its time is recorded. [`report`] writes JSON and Markdown, [`plot`] the
//! figures.

mod basic;
pub mod by_key;
mod cub_run;
mod element;
pub mod extrema;
pub mod guard;
pub mod halves;
pub mod histogram;
mod limits;
mod measure;
pub mod plot;
pub mod report;
pub mod segmented;
pub mod select;
mod sweep;
pub mod topk;

pub use cub_run::cub_works;
pub use element::SweepElement;
pub use limits::StreamExt;
pub(crate) use limits::{memory_limits, read_stream};
pub(crate) use measure::{Rotation, Rows, Setter, case_measurement, tuning_sweeps};
pub use sweep::{run_sweep, run_sweep_cubs};

use serde::{Deserialize, Serialize};

use crate::cub::Cub;

/// What a measurement belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    /// Sum of all elements.
    Reduce,
    /// Inclusive prefix sum.
    Scan,
    /// Dot product of two inputs (f32, f64), against the read limit.
    Dot,
    /// Mean and variance in one pass (f32), against the read limit.
    Variance,
    /// Segmented f32 sums (issue 15's cases, independent of `--sizes`), against CUB's
    /// DeviceSegmentedReduce::Sum and the read limit.
    Segmented,
    /// Reduce by key, u32 keys and f32 values summed (issue 15's run lengths, independent of
    /// `--sizes`), against CUB's DeviceReduce::ReduceByKey and the read limit.
    ReduceByKey,
    /// Inclusive sum scan by key, u32 keys and f32 values (issue 16's by-key ratio, independent
    /// of `--sizes`), against CUB's DeviceScan::InclusiveSumByKey and the memory limit.
    ScanByKey,
    /// Compaction (issue 36): select-if keeping 1%, 50% and 99%, select-flagged and a partition
    /// keeping 50%, and unique, run-length encode, non-trivial runs and unique by key of runs,
    /// against CUB's DeviceSelect::If / Flagged / Unique / UniqueByKey, DevicePartition::If and
    /// DeviceRunLengthEncode::Encode / NonTrivialRuns and the device copy. By default u32 at
    /// one size (2^28; 2^14 on the simulator), runs of 8; when `--dtypes` names u32 or u64 (its
    /// own types), the matrix: each of `--sizes`, each of u32, f32 and u64 named, runs of 1, 8
    /// and 1000.
    Select,
    /// Histograms (issue 37): u32 samples into 16, 256 and 4096 even bins, 256 with every
    /// sample in one bin and 256 between edges, and f32 into 16, 256 and 4096 even bins and 256 between edges, at each of
    /// `--sizes`, against CUB's DeviceHistogram::HistogramEven / HistogramRange and the
    /// read-only stream.
    Histogram,
    /// Top-k (issue 37): the 1000 largest of f32, in index order and sorted, at each of
    /// `--sizes`, and the read-only stream.
    Topk,
    /// Min, max and their indices (the rank compares): f32 max (against CUB's
    /// DeviceReduce::Max), argmax, inclusive max scan and argmax of rows of 1024, at each of
    /// `--sizes`, and the memory limits.
    Extrema,
    /// The sharded f32 sum over every GPU present (two simulated devices on the simulator)
    /// against one GPU holding the same total, at each of `--sizes` (`gpu_reduce::multi`).
    MultiReduce,
    /// The sharded i32 inclusive sum, in place and deferred (each shard's own scan and the
    /// offsets), as `multi-reduce`.
    MultiScan,
}

/// Element types of the sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Dtype {
    F32,
    F64,
    I32,
    /// IEEE binary16: the sum and the inclusive sum scan only ([`halves`]).
    F16,
    /// bfloat16: the sum and the inclusive sum scan only ([`halves`]).
    Bf16,
    /// Compaction (`select`) only: naming it runs select's matrix ([`select`]).
    U32,
    /// Compaction (`select`) only: naming it runs select's matrix ([`select`]).
    U64,
}

impl Dtype {
    pub fn name(self) -> &'static str {
        match self {
            Dtype::F32 => "f32",
            Dtype::F64 => "f64",
            Dtype::I32 => "i32",
            Dtype::F16 => "f16",
            Dtype::Bf16 => "bf16",
            Dtype::U32 => "u32",
            Dtype::U64 => "u64",
        }
    }

    /// A type only the compaction (`select`) takes: u32, u64.
    pub fn select_only(self) -> bool {
        matches!(self, Dtype::U32 | Dtype::U64)
    }
}

/// Whose code a measured method is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    /// This library's production kernels.
    Ours,
    /// The seeds' teaching kernels.
    Ladder,
    /// CUB, through the shim.
    Cub,
    /// The memory limit: a device copy or the read-only streaming kernel.
    Limit,
}

/// One method at one size and type.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Measurement {
    /// "reduce", "scan", or "memory" for the limits.
    pub op: String,
    pub dtype: String,
    pub n: u64,
    pub method: String,
    pub family: Family,
    /// Bytes the method must move (read + written) once.
    pub bytes: u64,
    pub median_ms: f64,
    /// Spread: min, 10th and 90th percentile, max of the timed runs (`None` where only the
    /// median is known).
    pub min_ms: Option<f64>,
    pub p10_ms: Option<f64>,
    pub p90_ms: Option<f64>,
    pub max_ms: Option<f64>,
    pub runs: usize,
    /// `bytes / median`, 10^9 B/s; `None` on the simulator (its times say nothing of a GPU).
    pub gb_per_s: Option<f64>,
    /// The result matched the CPU reference.
    pub checked: bool,
}

/// What a sweep covers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepConfig {
    pub ops: Vec<Op>,
    pub dtypes: Vec<Dtype>,
    pub sizes: Vec<u64>,
    pub iters: usize,
    pub warmup: usize,
    pub ladder: bool,
    pub seed: u64,
}

/// The machine a sweep ran on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// "cuda" or "sim".
    pub backend: String,
    pub device: String,
    pub compute_capability: String,
    pub multiprocessors: u32,
    pub l2_bytes: usize,
    pub memory_bytes: usize,
    /// e.g. "13.0"; empty on the simulator.
    pub cuda_driver: String,
    pub ptx_arch: String,
    /// CUB_VERSION of the shim, when it was loaded.
    pub cub_version: Option<i32>,
    /// CUB_VERSION of the second shim, built against a CCCL checkout (`--cccl`), when one
    /// was loaded; its rows are named [`CUB_CCCL`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cub_cccl_version: Option<i32>,
    /// The CCCL checkout that second shim was built from (set by the caller).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cccl: Option<String>,
    /// UTC, RFC 3339.
    pub date: String,
    /// The command line that produced the sweep.
    pub command: String,
}

/// How the rows of the CUB of nvcc's toolkit begin (`CUB DeviceReduce::Sum`, ...).
pub const CUB: &str = "CUB";
/// How the rows of the CUB built against a CCCL checkout begin (`CUB(cccl) DeviceReduce::Sum`).
pub const CUB_CCCL: &str = "CUB(cccl)";

/// The CUB shims a sweep times: the one against the toolkit's CUB (rows named [`CUB`]) and the
/// one against a CCCL checkout (rows named [`CUB_CCCL`]), each if loaded.
#[derive(Debug, Clone, Copy, Default)]
pub struct Cubs<'a> {
    pub toolkit: Option<&'a Cub>,
    pub cccl: Option<&'a Cub>,
}

impl<'a> Cubs<'a> {
    /// (row prefix, shim) of each loaded shim, the toolkit's first.
    fn iter(&self) -> impl Iterator<Item = (&'static str, &'a Cub)> {
        [(CUB, self.toolkit), (CUB_CCCL, self.cccl)]
            .into_iter()
            .filter_map(|(label, c)| c.map(|c| (label, c)))
    }
}

/// A whole sweep: where, what, and every measurement.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Sweep {
    pub machine: Machine,
    pub config: SweepConfig,
    pub measurements: Vec<Measurement>,
    /// Sizes left out, and why (does not fit in device memory, ...).
    pub skipped: Vec<String>,
    /// The f32 scans' last elements against the exact sum, one per size.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scan_accuracy: Vec<ScanAccuracy>,
}

/// The last element of each method's f32 inclusive sum, the sum of all `n` inputs, against the
/// exact sum: the rounding error accumulated along a whole scan. Its `Display` is the line the
/// log and results.md show.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScanAccuracy {
    pub dtype: String,
    pub n: u64,
    /// The exact sum of the input ([`crate::cpu::sum_compensated`]).
    pub exact: f64,
    /// The sum of the inputs' magnitudes, the scale of the rounding bounds.
    pub sum_abs: f64,
    /// (method, its last element): "ours", then "CUB 3.0.1" and the like.
    pub last: Vec<(String, f64)>,
}

impl ScanAccuracy {
    /// The reference for `input`, no method's result yet.
    fn new<T: SweepElement>(input: &[T]) -> ScanAccuracy {
        let (exact, sum_abs) = crate::cpu::sum_compensated(input.iter().map(|&x| x.as_f64()));
        ScanAccuracy {
            dtype: T::SWEEP_DTYPE.name().into(),
            n: input.len() as u64,
            exact,
            sum_abs,
            last: Vec::new(),
        }
    }

    /// `method`'s inclusive sum of the input is `out`: record its last element.
    fn record<T: SweepElement>(&mut self, method: &str, out: &[T]) {
        let last = out.last().map_or(f64::NAN, |&x| x.as_f64());
        self.last.push((method.into(), last));
    }
}

impl std::fmt::Display for ScanAccuracy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "accuracy {} n={}: last element of the inclusive sum: exact {}",
            self.dtype, self.n, self.exact
        )?;
        for (method, got) in &self.last {
            let err = (got - self.exact).abs();
            let rel = err / self.sum_abs.max(f64::MIN_POSITIVE);
            write!(f, ", {method} {got} (error {err:.3e}, {rel:.2e} of sum|x|)")?;
        }
        Ok(())
    }
}

impl Sweep {
    /// Every measured result matched its CPU reference.
    pub fn all_checked(&self) -> bool {
        self.measurements.iter().all(|m| m.checked)
    }
}

/// Parse a size list: comma-separated items, each a number (`1000`, `1e6`, `2^20`) or a range
/// of powers of two `2^A..2^B` (every power from A to B).
/// A count as every option of the CLI takes it: `1000000`, `1_000_000`, `1e6` or `2^20`.
pub fn parse_count(t: &str) -> std::result::Result<u64, String> {
    let t = t.trim();
    let digits = t.replace('_', "");
    let bad = || format!("{t:?} is not a count (e.g. 1000000, 1_000_000, 1e6 or 2^20)");
    if let Some(e) = digits.strip_prefix("2^") {
        let e: u32 = e.parse().map_err(|_| bad())?;
        return 1u64
            .checked_shl(e)
            .filter(|_| e < 63)
            .ok_or_else(|| format!("{t} is too large"));
    }
    if let Some((m, e)) = digits.split_once(['e', 'E']) {
        let (m, e): (u64, u32) = (m.parse().map_err(|_| bad())?, e.parse().map_err(|_| bad())?);
        return 10u64
            .checked_pow(e)
            .and_then(|p| p.checked_mul(m))
            .ok_or_else(|| format!("{t} is too large"));
    }
    digits.parse().map_err(|_| bad())
}

pub fn parse_sizes(s: &str) -> std::result::Result<Vec<u64>, String> {
    let one = parse_count;
    let mut out = Vec::new();
    for item in s.split(',').filter(|t| !t.trim().is_empty()) {
        if let Some((a, b)) = item.split_once("..") {
            let (a, b) = (one(a)?, one(b)?);
            if !a.is_power_of_two() || !b.is_power_of_two() || a > b {
                return Err(format!(
                    "range {item:?}: both ends powers of two, the first not above the second"
                ));
            }
            let mut x = a;
            while x <= b {
                out.push(x);
                x *= 2;
            }
        } else {
            out.push(one(item)?);
        }
    }
    if out.is_empty() || out.contains(&0) {
        return Err(format!("{s:?}: give at least one size, none of them 0"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_sizes("2^10..2^12").unwrap(), vec![1024, 2048, 4096]);
        assert_eq!(parse_sizes("100,1e3,2^4").unwrap(), vec![100, 1000, 16]);
        assert!(parse_sizes("2^12..2^10").unwrap_err().contains("range"));
        assert!(parse_sizes("0").is_err());
        assert!(parse_sizes("abc").unwrap_err().contains("not a count"));
        assert_eq!(parse_sizes("1_000,4_0e2").unwrap(), vec![1000, 4000]);
        assert_eq!(parse_count(" 2^20 "), Ok(1 << 20));
        assert!(parse_count("2^x").unwrap_err().contains("not a count"));
        assert!(parse_count("1e30").unwrap_err().contains("too large"));
        assert!(parse_sizes("2^70").is_err());
        assert!(parse_sizes("3..8").is_err());
    }
}
