//! The benchmark sweep: our production reduce and scan (and, on request, the seeds' reduction
//! ladder) against CUB and the memory limit, over sizes and element types, in one process and
//! run. Measured the way METHOD.md asks: CUDA events (wall clock on the simulator, labelled
//! simulated), warm-up, median and spread of many runs, fresh random inputs rotated over
//! buffers several times the L2 size, and every method's result checked against a CPU
//! reference before its time is recorded. [`report`] writes JSON and Markdown, [`plot`] the
//! figures.

pub mod by_key;
pub mod guard;
pub mod halves;
pub mod plot;
pub mod report;
pub mod segmented;

use cudarc::driver::PushKernelArg;
use rand::{SeedableRng, rngs::SmallRng};
use serde::{Deserialize, Serialize};

use crate::cub::Cub;
use crate::scan_table::TableElement;
use gpu_reduce::Reduction;
use gpu_reduce::ScanKind;
use gpu_reduce::{BackendKind, Context, DeviceBuffer};
use gpu_reduce::{Error, Result};

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
    /// The sharded f32 sum over every GPU present (two simulated devices on the simulator)
    /// against one GPU holding the same total, at each of `--sizes` (`gpu_reduce::multi`).
    MultiReduce,
    /// The sharded i32 inclusive sum in place, as `multi-reduce`.
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
}

impl Dtype {
    pub fn name(self) -> &'static str {
        match self {
            Dtype::F32 => "f32",
            Dtype::F64 => "f64",
            Dtype::I32 => "i32",
            Dtype::F16 => "f16",
            Dtype::Bf16 => "bf16",
        }
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
pub fn parse_sizes(s: &str) -> std::result::Result<Vec<u64>, String> {
    let one = |t: &str| -> std::result::Result<u64, String> {
        let t = t.trim();
        if let Some(e) = t.strip_prefix("2^") {
            let e: u32 = e.parse().map_err(|_| format!("bad exponent in {t:?}"))?;
            return 1u64
                .checked_shl(e)
                .filter(|_| e < 63)
                .ok_or_else(|| format!("{t} is too large"));
        }
        if let Some((m, e)) = t.split_once(['e', 'E']) {
            let m: u64 = m.parse().map_err(|_| format!("bad size {t:?}"))?;
            let e: u32 = e.parse().map_err(|_| format!("bad size {t:?}"))?;
            return 10u64
                .checked_pow(e)
                .and_then(|p| p.checked_mul(m))
                .ok_or_else(|| format!("{t} is too large"));
        }
        t.parse().map_err(|_| format!("bad size {t:?}"))
    };
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

/// Element types of the sweep: random data, a checked sum, a checked scan, CUB.
pub trait SweepElement: TableElement + crate::cub::CubSum {
    const SWEEP_DTYPE: Dtype;
    /// The value as an f64 (exact for f32, f64 and i32).
    fn as_f64(self) -> f64;
    /// Does `got` match the sum of `data` (exact for integers, within the reduction's error
    /// bound for floats)?
    fn sum_ok(got: Self, data: &[Self]) -> bool;
    /// The dot product of `x` and `y` and whether it matches the host's f64 one (`None`: no
    /// dot product for this type).
    fn dot_checked(
        _ctx: &Context,
        _x: &DeviceBuffer<Self>,
        _y: &DeviceBuffer<Self>,
        _hx: &[Self],
        _hy: &[Self],
    ) -> Option<Result<bool>> {
        None
    }
    /// One dot product (`None`: none for this type).
    fn dot_run(
        _ctx: &Context,
        _x: &DeviceBuffer<Self>,
        _y: &DeviceBuffer<Self>,
    ) -> Option<Result<()>> {
        None
    }
    /// Mean and variance in one pass, checked against a two-pass f64 reference (`None`: not
    /// for this type).
    fn variance_checked(
        _ctx: &Context,
        _x: &DeviceBuffer<Self>,
        _h: &[Self],
    ) -> Option<Result<bool>> {
        None
    }
    /// One mean-and-variance pass returned to the host (`None`: not for this type).
    fn variance_run(_ctx: &Context, _x: &DeviceBuffer<Self>) -> Option<Result<()>> {
        None
    }
    /// One mean-and-variance pass left on the device (`None`: not for this type).
    fn variance_into_run(
        _ctx: &Context,
        _x: &DeviceBuffer<Self>,
        _out: &mut DeviceBuffer<gpu_reduce::MomentsAcc>,
    ) -> Option<Result<()>> {
        None
    }
}

/// The dot product of f32/f64 data within the f64-accumulation bound.
fn dot_ok(got: f64, hx: &[f64], hy: &[f64], unit: f64) -> bool {
    let exact: f64 = hx.iter().zip(hy).map(|(a, b)| a * b).sum();
    let abs: f64 = hx.iter().zip(hy).map(|(a, b)| (a * b).abs()).sum();
    (got - exact).abs() <= exact.abs() * unit + 2.0 * hx.len() as f64 * f64::EPSILON * abs
}

impl SweepElement for f32 {
    const SWEEP_DTYPE: Dtype = Dtype::F32;
    fn as_f64(self) -> f64 {
        self as f64
    }
    fn sum_ok(got: Self, data: &[Self]) -> bool {
        let (exact, abs) = crate::cpu::sum_f64(data);
        (got as f64 - exact).abs() <= crate::cpu::f32_sum_bound(data.len() as u64, abs)
    }
    fn dot_checked(
        ctx: &Context,
        x: &DeviceBuffer<f32>,
        y: &DeviceBuffer<f32>,
        hx: &[f32],
        hy: &[f32],
    ) -> Option<Result<bool>> {
        let wide = |h: &[f32]| h.iter().map(|&v| v as f64).collect::<Vec<f64>>();
        Some(
            ctx.dot(x, y)
                .map(|g| dot_ok(g as f64, &wide(hx), &wide(hy), f32::EPSILON as f64)),
        )
    }
    fn dot_run(ctx: &Context, x: &DeviceBuffer<f32>, y: &DeviceBuffer<f32>) -> Option<Result<()>> {
        Some(ctx.dot(x, y).map(|_| ()))
    }
    fn variance_checked(ctx: &Context, x: &DeviceBuffer<f32>, h: &[f32]) -> Option<Result<bool>> {
        Some(ctx.mean_var(x).map(|m| {
            let n = h.len() as f64;
            let mean = h.iter().map(|&v| v as f64).sum::<f64>() / n;
            let var = h.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / n;
            // The documented bound that tests/src/transform.rs checks (the f32 tree's term and
            // the term of the kernel's shift, the first element).
            let shift = h.first().map_or(0.0, |&x0| (x0 as f64 - mean).powi(2));
            let bound = 4.0 * n.log2() * 2f64.powi(-24) * (1.0 + mean * mean / var) * var
                + 2f64.powi(-46) * (var + shift);
            m.is_some_and(|m| (m.variance as f64 - var).abs() <= bound)
        }))
    }
    fn variance_run(ctx: &Context, x: &DeviceBuffer<f32>) -> Option<Result<()>> {
        Some(ctx.mean_var(x).map(|_| ()))
    }
    fn variance_into_run(
        ctx: &Context,
        x: &DeviceBuffer<f32>,
        out: &mut DeviceBuffer<gpu_reduce::MomentsAcc>,
    ) -> Option<Result<()>> {
        Some(ctx.mean_var_into(x, out))
    }
}
impl SweepElement for f64 {
    const SWEEP_DTYPE: Dtype = Dtype::F64;
    fn as_f64(self) -> f64 {
        self
    }
    fn sum_ok(got: Self, data: &[Self]) -> bool {
        let exact: f64 = data.iter().sum();
        let abs: f64 = data.iter().map(|x| x.abs()).sum();
        (got - exact).abs()
            <= crate::cpu::sum_bound(data.len() as u64, 8, f64::EPSILON, abs) + 1e-300
    }
    fn dot_checked(
        ctx: &Context,
        x: &DeviceBuffer<f64>,
        y: &DeviceBuffer<f64>,
        hx: &[f64],
        hy: &[f64],
    ) -> Option<Result<bool>> {
        Some(ctx.dot(x, y).map(|g| dot_ok(g, hx, hy, 0.0)))
    }
    fn dot_run(ctx: &Context, x: &DeviceBuffer<f64>, y: &DeviceBuffer<f64>) -> Option<Result<()>> {
        Some(ctx.dot(x, y).map(|_| ()))
    }
}
impl SweepElement for i32 {
    const SWEEP_DTYPE: Dtype = Dtype::I32;
    fn as_f64(self) -> f64 {
        self as f64
    }
    fn sum_ok(got: Self, data: &[Self]) -> bool {
        got == data.iter().fold(0i32, |a, &x| a.wrapping_add(x))
    }
}

/// The read-only streaming kernel that measures the memory limit.
pub trait StreamExt {
    /// XOR of the 32-bit words of `input` (its byte length a multiple of 4), through the
    /// read-only streaming kernel; `partials` is the per-warp scratch ([`StreamExt::stream_shape`]
    /// gives how many). Exists to measure the read bandwidth limit.
    fn stream_read_xor<T: cudarc::driver::DeviceRepr>(
        &self,
        input: &DeviceBuffer<T>,
        partials: &mut DeviceBuffer<u32>,
    ) -> Result<()>;

    /// Grid and block of the streaming kernel: enough warps to keep the memory busy.
    fn stream_shape(&self) -> (u32, u32);
}

impl StreamExt for Context {
    fn stream_read_xor<T: cudarc::driver::DeviceRepr>(
        &self,
        input: &DeviceBuffer<T>,
        partials: &mut DeviceBuffer<u32>,
    ) -> Result<()> {
        let bytes = input.len() * std::mem::size_of::<T>();
        if !bytes.is_multiple_of(4) {
            return Err(Error::external(format!(
                "stream_read_xor: {bytes} bytes is not a whole number of 32-bit words"
            )));
        }
        let (grid, block) = self.stream_shape();
        if partials.len() < (grid * block / 32) as usize {
            return Err(Error::OutputTooSmall {
                what: "stream_read_xor: the partials (one per warp)".into(),
                needed: (grid * block / 32) as u64,
                got: partials.len() as u64,
            });
        }
        let words = (bytes / 4) as u64;
        let (i, p) = (self.device_addr(input)?, self.device_addr(&*partials)?);
        // SAFETY: stream_read_u32's arguments; `partials` holds one word per warp.
        unsafe {
            self.launch(
                &crate::TOOL_KERNELS,
                "stream_read_u32",
                gpu_reduce::LaunchShape::linear(grid, block, 0),
                |b| {
                    b.arg(&i).arg(&words).arg(&p);
                },
                || tool_kernels::stream::stream_read_u32(i as *const u32, words, p as *mut u32),
            )
        }
    }

    fn stream_shape(&self) -> (u32, u32) {
        match self.backend_kind() {
            BackendKind::Cuda => (self.info().multiprocessors.max(1) * 8, 256),
            BackendKind::Sim => (2, 64),
        }
    }
}

/// Enough buffers of `bytes` that cycling through them overflows the L2 several times, within
/// a share of the free memory (the simulator has no cache to defeat: two).
fn rotation(ctx: &Context, bytes: usize) -> Result<usize> {
    if ctx.backend_kind() == BackendKind::Sim {
        return Ok(2);
    }
    let l2 = ctx.info().l2_bytes.max(1);
    let free = ctx.free_memory()?;
    let want = (4 * l2).div_ceil(bytes.max(1)).clamp(2, 64);
    // Inputs, plus an output and scratch of about the same size.
    let fit = (free.saturating_sub(256 << 20) / 3) / bytes.max(1);
    if fit < 1 {
        return Err(Error::OutOfMemory { bytes });
    }
    Ok(want.min(fit))
}

/// Run the sweep; `progress` is told what is being measured (one call per measurement).
pub fn run_sweep(
    ctx: &Context,
    cub: Option<&Cub>,
    config: &SweepConfig,
    command: &str,
    progress: impl FnMut(&str),
    step_done: impl FnMut(),
) -> Result<Sweep> {
    let cubs = Cubs {
        toolkit: cub,
        cccl: None,
    };
    run_sweep_cubs(ctx, cubs, config, command, progress, step_done, |_| {})
}

/// [`run_sweep`] timing each of `cubs`' shims (their rows named [`CUB`] and [`CUB_CCCL`]);
/// `note` gets the lines for the log (the f32 scans' [`ScanAccuracy`], which the sweep keeps
/// too) at the end of each size and type.
pub fn run_sweep_cubs(
    ctx: &Context,
    cubs: Cubs<'_>,
    config: &SweepConfig,
    command: &str,
    mut progress: impl FnMut(&str),
    mut step_done: impl FnMut(),
    mut note: impl FnMut(&str),
) -> Result<Sweep> {
    let d = ctx.info();
    let machine = Machine {
        backend: match d.backend {
            BackendKind::Cuda => "cuda".into(),
            BackendKind::Sim => "sim".into(),
        },
        device: d.name.clone(),
        compute_capability: format!("{}.{}", d.compute_capability.0, d.compute_capability.1),
        multiprocessors: d.multiprocessors,
        l2_bytes: d.l2_bytes,
        memory_bytes: d.total_memory,
        cuda_driver: if d.driver_version > 0 {
            format!(
                "{}.{}",
                d.driver_version / 1000,
                d.driver_version % 1000 / 10
            )
        } else {
            String::new()
        },
        ptx_arch: gpu_reduce::PTX_ARCH.to_string(),
        cub_version: cubs.toolkit.map(|c| c.version()),
        cub_cccl_version: cubs.cccl.map(|c| c.version()),
        cccl: None,
        date: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        command: command.to_string(),
    };
    let mut sweep = Sweep {
        machine,
        config: config.clone(),
        measurements: Vec::new(),
        skipped: Vec::new(),
        scan_accuracy: Vec::new(),
    };
    for &n in &config.sizes {
        for (i, &dt) in config.dtypes.iter().enumerate() {
            let seed = config.seed ^ (n << 8) ^ i as u64;
            let acc = &mut sweep.scan_accuracy;
            let noted = acc.len();
            let r = match dt {
                Dtype::F32 => sweep_one::<f32>(ctx, cubs, config, n, seed, &mut progress, acc),
                Dtype::F64 => sweep_one::<f64>(ctx, cubs, config, n, seed, &mut progress, acc),
                Dtype::I32 => sweep_one::<i32>(ctx, cubs, config, n, seed, &mut progress, acc),
                Dtype::F16 => {
                    halves::sweep_half::<half::f16>(ctx, cubs, config, n, seed, &mut progress)
                }
                Dtype::Bf16 => {
                    halves::sweep_half::<half::bf16>(ctx, cubs, config, n, seed, &mut progress)
                }
            };
            for a in &sweep.scan_accuracy[noted..] {
                note(&a.to_string());
            }
            match r {
                Ok(m) => sweep.measurements.extend(m),
                Err(Error::OutOfMemory { bytes }) => sweep.skipped.push(format!(
                    "{} n = {n}: does not fit in device memory ({bytes} bytes asked)",
                    dt.name()
                )),
                Err(e) => return Err(e),
            }
            step_done();
        }
    }
    if config.ops.contains(&Op::Segmented) {
        let rows = segmented::segmented_cases(
            ctx,
            cubs,
            config.iters,
            config.warmup,
            config.seed,
            &mut progress,
        )?;
        sweep.measurements.extend(rows);
    }
    if config.ops.contains(&Op::ReduceByKey) {
        let rows = by_key::by_key_cases(
            ctx,
            cubs,
            config.iters,
            config.warmup,
            config.seed,
            &mut progress,
        )?;
        sweep.measurements.extend(rows);
    }
    for (op, mop) in [
        (Op::MultiReduce, crate::multi::MultiOp::Reduce),
        (Op::MultiScan, crate::multi::MultiOp::Scan),
    ] {
        if !config.ops.contains(&op) {
            continue;
        }
        let sim = ctx.backend_kind() == BackendKind::Sim;
        let gpus = if sim { 2 } else { gpu_reduce::device_count()? };
        let make = |r: usize| -> Result<Vec<Context>> {
            (0..r)
                .map(|o| if sim { Context::sim() } else { Context::new(o) })
                .collect()
        };
        for &n in &config.sizes {
            let rows = crate::multi::run(
                &make,
                mop,
                n as usize,
                gpus,
                config.iters,
                config.warmup,
                config.seed,
            )?;
            let (name, dtype, bytes) = match mop {
                crate::multi::MultiOp::Reduce => ("multi-GPU sum", "f32", 4 * n),
                crate::multi::MultiOp::Scan => ("multi-GPU scan", "i32", 8 * n),
            };
            for r in rows {
                sweep.measurements.push(case_measurement(
                    name,
                    dtype,
                    &format!("sharded over {} GPU(s): {}", r.ranks, r.note),
                    Family::Ours,
                    n,
                    bytes,
                    &r.times,
                    r.checked,
                    sim,
                ));
            }
        }
    }
    if config.ops.contains(&Op::ScanByKey) {
        let rows = by_key::scan_by_key_cases(
            ctx,
            cubs,
            config.iters,
            config.warmup,
            config.seed,
            &mut progress,
        )?;
        sweep.measurements.extend(rows);
    }
    Ok(sweep)
}

/// One timed case of the fixed-case ops (segmented, reduce and scan by key): the spread of `times`,
/// and GB/s of `bytes` except on the simulator.
#[allow(clippy::too_many_arguments)] // one measurement's fields
pub(crate) fn case_measurement(
    op: &str,
    dtype: &str,
    method: &str,
    family: Family,
    n: u64,
    bytes: u64,
    times: &[f64],
    checked: bool,
    sim: bool,
) -> Measurement {
    let (median, min, p10, p90, max) = spread(times);
    Measurement {
        op: op.into(),
        dtype: dtype.into(),
        n,
        method: method.into(),
        family,
        bytes,
        median_ms: median,
        min_ms: Some(min),
        p10_ms: Some(p10),
        p90_ms: Some(p90),
        max_ms: Some(max),
        runs: times.len(),
        gb_per_s: (!sim).then(|| crate::stats::gb_per_s(bytes, median)),
        checked,
    }
}

/// Spread of a set of timings.
fn spread(times: &[f64]) -> (f64, f64, f64, f64, f64) {
    let mut v = times.to_vec();
    v.sort_by(f64::total_cmp);
    let q = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
    let median = crate::stats::summarize(&v).map_or(f64::NAN, |s| s.median);
    (median, v[0], q(0.1), q(0.9), v[v.len() - 1])
}

/// The memory limits at one size and type, each checked, then timed over the rotation of
/// `inputs` (`hosts` their host copies): a device copy (read + write) and, where the input is
/// whole 4-byte words, the read-only stream.
#[allow(clippy::too_many_arguments)] // the sweep's state, passed through
pub(crate) fn memory_limits<T: cudarc::driver::DeviceRepr + Copy + PartialEq>(
    ctx: &Context,
    (dt, n): (&str, u64),
    (inputs, hosts): (&[DeviceBuffer<T>], &[Vec<T>]),
    out: &mut DeviceBuffer<T>,
    cfg: &SweepConfig,
    next: &mut impl FnMut() -> usize,
    record: &mut impl FnMut(&str, &str, Family, u64, &[f64], bool),
    progress: &mut impl FnMut(&str),
) -> Result<()> {
    let (it, wu) = (cfg.iters, cfg.warmup);
    let b = std::mem::size_of_val(hosts[0].as_slice()) as u64;
    progress(&format!("{dt} n={n}: device copy"));
    ctx.copy_into(&inputs[0], &mut *out, 0)?;
    let ok = ctx.dtoh(&*out)? == hosts[0];
    let t = ctx.time_ms(wu, it, || ctx.copy_into(&inputs[next()], &mut *out, 0))?;
    record(
        "memory",
        "device copy (read + write)",
        Family::Limit,
        2 * b,
        &t,
        ok,
    );
    if b.is_multiple_of(4) {
        progress(&format!("{dt} n={n}: read-only stream"));
        let (g, bl) = ctx.stream_shape();
        let mut partials = ctx.alloc_zeros::<u32>((g * bl / 32) as usize)?;
        ctx.stream_read_xor(&inputs[0], &mut partials)?;
        let got = ctx.dtoh(&partials)?.iter().fold(0u32, |a, &x| a ^ x);
        let ok = got == xor_words(&hosts[0]);
        let t = ctx.time_ms(wu, it, || {
            ctx.stream_read_xor(&inputs[next()], &mut partials)
        })?;
        record("memory", "read-only stream", Family::Limit, b, &t, ok);
    }
    Ok(())
}

/// One size and type of the sweep: its rows, and for an f32 scan its [`ScanAccuracy`] pushed to
/// `accuracy`.
fn sweep_one<T: SweepElement>(
    ctx: &Context,
    cubs: Cubs<'_>,
    cfg: &SweepConfig,
    n: u64,
    seed: u64,
    progress: &mut impl FnMut(&str),
    accuracy: &mut Vec<ScanAccuracy>,
) -> Result<Vec<Measurement>> {
    let size = std::mem::size_of::<T>();
    let nu = usize::try_from(n).map_err(|_| Error::OutOfMemory { bytes: usize::MAX })?;
    let bytes = nu
        .checked_mul(size)
        .ok_or(Error::OutOfMemory { bytes: usize::MAX })?;
    let r = rotation(ctx, bytes)?;
    let sim = ctx.backend_kind() == BackendKind::Sim;
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut hosts: Vec<Vec<T>> = Vec::with_capacity(r);
    let mut inputs = Vec::with_capacity(r);
    for _ in 0..r {
        let data: Vec<T> = (0..nu).map(|_| T::random(&mut rng)).collect();
        inputs.push(ctx.htod(&data)?);
        hosts.push(data);
    }
    let mut out = ctx.alloc_zeros::<T>(nu)?;
    let mut k = 0usize;
    let mut next = move || {
        k += 1;
        k % r
    };
    let mut rows = Vec::new();
    let mut ladder_rows = Vec::new();
    let dt = T::SWEEP_DTYPE.name();
    let mut record = |op: &str, method: &str, family: Family, moved: u64, t: &[f64], ok: bool| {
        rows.push(case_measurement(
            op, dt, method, family, n, moved, t, ok, sim,
        ));
    };
    let (it, wu) = (cfg.iters, cfg.warmup);
    let b = bytes as u64;

    memory_limits(
        ctx,
        (dt, n),
        (&inputs, &hosts),
        &mut out,
        cfg,
        &mut next,
        &mut record,
        progress,
    )?;

    if cfg.ops.contains(&Op::Reduce) {
        progress(&format!("{} n={n}: reduce", T::SWEEP_DTYPE.name()));
        let mut res = ctx.alloc_zeros::<T>(1)?;
        let ok = T::sum_ok(ctx.reduce(&inputs[0], Reduction::Sum)?, &hosts[0]);
        let t = ctx.time_ms(wu, it, || {
            ctx.reduce_into(&inputs[next()], &mut res, Reduction::Sum)
        })?;
        record("reduce", "ours: sum (one launch)", Family::Ours, b, &t, ok);
        for (label, c) in cubs.iter() {
            let run = cub_sum_runner::<T>(c, ctx, &inputs, &res)?;
            run(0)?;
            let ok = T::sum_ok(ctx.dtoh(&res)?[0], &hosts[0]);
            let t = ctx.time_ms(wu, it, || run(next()))?;
            let method = format!("{label} DeviceReduce::Sum");
            record("reduce", &method, Family::Cub, b, &t, ok);
        }
        // Small inputs: many calls queued back to back, per call. Where the GPU finishes a
        // call faster than the host can queue the next, this is the host's cost per call
        // (the event pair around one call also counts the host's time before its launch).
        if n <= SMALL_N {
            progress(&format!("{} n={n}: back to back", T::SWEEP_DTYPE.name()));
            let per_call = |t: Vec<f64>| t.iter().map(|x| x / BACK_TO_BACK as f64).collect();
            let t: Vec<f64> = per_call(ctx.time_ms(wu, it, || {
                (0..BACK_TO_BACK)
                    .try_for_each(|_| ctx.reduce_into(&inputs[next()], &mut res, Reduction::Sum))
            })?);
            // The last call's input is one of the rotation's: its sum must be one of theirs.
            let last_ok = |v: T| hosts.iter().any(|h| T::sum_ok(v, h));
            let ok = last_ok(ctx.dtoh(&res)?[0]);
            // One call each, ours and CUB's alternating, every pair timed back to back: a slow
            // phase of the machine (which can take a whole block of runs, see BENCHMARKS.md)
            // then hits both sides alike.
            if let Some((label, c)) = cubs.iter().next() {
                let run = cub_sum_runner::<T>(c, ctx, &inputs, &res)?;
                let (mut a, mut bt) = (Vec::with_capacity(it), Vec::with_capacity(it));
                for i in 0..wu + it {
                    let i_ours = next();
                    let ta = ctx.time_ms(0, 1, || {
                        ctx.reduce_into(&inputs[i_ours], &mut res, Reduction::Sum)
                    })?;
                    let ok_ours = T::sum_ok(ctx.dtoh(&res)?[0], &hosts[i_ours]);
                    let i_cub = next();
                    let tb = ctx.time_ms(0, 1, || run(i_cub))?;
                    let ok_cub = T::sum_ok(ctx.dtoh(&res)?[0], &hosts[i_cub]);
                    if !(ok_ours && ok_cub) {
                        return Err(Error::external(format!(
                            "alternating run {i}: a wrong sum (ours ok: {ok_ours}, CUB ok: {ok_cub})"
                        )));
                    }
                    if i >= wu {
                        a.extend(ta);
                        bt.extend(tb);
                    }
                }
                let op = "reduce, alternating";
                record(op, "ours: sum (one launch)", Family::Ours, b, &a, true);
                let method = format!("{label} DeviceReduce::Sum");
                record(op, &method, Family::Cub, b, &bt, true);
            }
            let op = "reduce, back to back";
            record(
                op,
                "ours: sum (one launch), per call",
                Family::Ours,
                b,
                &t,
                ok,
            );
            for (label, c) in cubs.iter() {
                let run = cub_sum_runner::<T>(c, ctx, &inputs, &res)?;
                let t: Vec<f64> = per_call(
                    ctx.time_ms(wu, it, || (0..BACK_TO_BACK).try_for_each(|_| run(next())))?,
                );
                let ok = last_ok(ctx.dtoh(&res)?[0]);
                let method = format!("{label} DeviceReduce::Sum, per call");
                record(op, &method, Family::Cub, b, &t, ok);
            }
        }
        // The value on the host: what a program that needs the number waits for (ours: one
        // launch writing into mapped memory; CUB: its launches, then a copy to the host).
        progress(&format!("{} n={n}: sum to host", T::SWEEP_DTYPE.name()));
        let t = ctx.time_ms(wu, it, || ctx.sum(&inputs[next()]).map(|_| ()))?;
        record(
            "reduce to host",
            "ours: sum returned to the host",
            Family::Ours,
            b,
            &t,
            ok,
        );
        for (label, c) in cubs.iter() {
            let run = cub_sum_runner::<T>(c, ctx, &inputs, &res)?;
            run(0)?;
            let ok = T::sum_ok(ctx.dtoh(&res)?[0], &hosts[0]);
            let t = ctx.time_ms(wu, it, || {
                run(next())?;
                ctx.dtoh(&res).map(|_| ())
            })?;
            record(
                "reduce to host",
                &format!("{label} DeviceReduce::Sum + copy to host"),
                Family::Cub,
                b,
                &t,
                ok,
            );
        }
        if cfg.ladder && n <= u32::MAX as u64 {
            progress(&format!(
                "{} n={n}: reduction ladder",
                T::SWEEP_DTYPE.name()
            ));
            let dt = match T::SWEEP_DTYPE {
                Dtype::F32 => crate::ladder::LadderDtype::F32,
                Dtype::F64 => crate::ladder::LadderDtype::F64,
                Dtype::I32 => crate::ladder::LadderDtype::I32,
                // 16-bit types are swept by `halves`, never here.
                Dtype::F16 | Dtype::Bf16 => {
                    return Err(Error::external("the reduction ladder has no 16-bit types"));
                }
            };
            for row in crate::ladder::run_ladder_seeded(ctx, nu, dt, it, wu, seed)? {
                ladder_rows.push(Measurement {
                    op: "reduce".into(),
                    dtype: T::SWEEP_DTYPE.name().into(),
                    n,
                    method: format!("ladder: {} (seed {})", row.kernel, row.seed),
                    family: Family::Ladder,
                    bytes: b,
                    median_ms: row.median_ms,
                    min_ms: None,
                    p10_ms: None,
                    p90_ms: None,
                    max_ms: None,
                    runs: it,
                    gb_per_s: row.gb_per_s.is_finite().then_some(row.gb_per_s),
                    checked: row.checked,
                });
            }
        }
    }

    if cfg.ops.contains(&Op::Scan) {
        progress(&format!("{} n={n}: scan", T::SWEEP_DTYPE.name()));
        let (op, incl) = (Reduction::Sum, ScanKind::Inclusive);
        // f32: each method's last element against the exact sum, from the checked output.
        let mut acc = (T::SWEEP_DTYPE == Dtype::F32).then(|| ScanAccuracy::new(&hosts[0]));
        ctx.memset_zeros(&mut out)?;
        ctx.scan(&inputs[0], &mut out, op, incl)?;
        let ok = check_scan(ctx, &out, &hosts[0], &mut acc, "ours")?;
        let t = ctx.time_ms(wu, it, || ctx.scan(&inputs[next()], &mut out, op, incl))?;
        record(
            "scan",
            "ours: inclusive sum (one pass)",
            Family::Ours,
            2 * b,
            &t,
            ok,
        );
        for (label, c) in cubs.iter() {
            // One prepared call per input buffer (each owns its scratch).
            let mut runners = Vec::with_capacity(r);
            for input in &inputs {
                match T::cub_inclusive_sum(c, ctx, input, &mut out) {
                    Some(x) => runners.push(x?),
                    None => break,
                }
            }
            if runners.len() == r {
                ctx.memset_zeros(&mut out)?;
                runners[0].run()?;
                let version = crate::cub::version_string(c.version());
                let method = format!("{label} {version}");
                let ok = check_scan(ctx, &out, &hosts[0], &mut acc, &method)?;
                let t = ctx.time_ms(wu, it, || runners[next()].run())?;
                record(
                    "scan",
                    &format!("{label} DeviceScan::InclusiveSum"),
                    Family::Cub,
                    2 * b,
                    &t,
                    ok,
                );
            }
        }
        accuracy.extend(acc);
    }
    if cfg.ops.contains(&Op::Dot) && r >= 2 {
        // Inputs i and i+1 of the rotation: two arrays, each read once.
        if let Some(ok) = T::dot_checked(ctx, &inputs[0], &inputs[1], &hosts[0], &hosts[1]) {
            progress(&format!("{} n={n}: dot", T::SWEEP_DTYPE.name()));
            let ok = ok?;
            let t = ctx.time_ms(wu, it, || {
                let i = next();
                T::dot_run(ctx, &inputs[i], &inputs[(i + 1) % r]).unwrap_or(Ok(()))
            })?;
            record(
                "dot",
                "ours: dot product (one launch)",
                Family::Ours,
                2 * b,
                &t,
                ok,
            );
        }
    }
    if cfg.ops.contains(&Op::Variance)
        && let Some(ok) = T::variance_checked(ctx, &inputs[0], &hosts[0])
    {
        progress(&format!("{} n={n}: variance", T::SWEEP_DTYPE.name()));
        let ok = ok?;
        // Left on the device, like the sum's "one launch" row: the kernel's own rate, which
        // the goal compares with the read limit; then returned to the host (the call's
        // round trip included, like "reduce to host").
        let mut acc = ctx.alloc_zeros::<gpu_reduce::MomentsAcc>(1)?;
        let t = ctx.time_ms(wu, it, || {
            T::variance_into_run(ctx, &inputs[next()], &mut acc).unwrap_or(Ok(()))
        })?;
        record(
            "variance",
            "ours: mean and variance (one pass)",
            Family::Ours,
            b,
            &t,
            ok,
        );
        let t = ctx.time_ms(wu, it, || {
            T::variance_run(ctx, &inputs[next()]).unwrap_or(Ok(()))
        })?;
        record(
            "variance to host",
            "ours: mean and variance returned to the host",
            Family::Ours,
            b,
            &t,
            ok,
        );
    }
    rows.extend(ladder_rows);
    Ok(rows)
}

/// Whether `out` holds the inclusive sum of `input`; with `acc` (f32), its last element is
/// recorded there as `method`'s. One copy of `out` to the host, dropped on return.
fn check_scan<T: SweepElement>(
    ctx: &Context,
    out: &DeviceBuffer<T>,
    input: &[T],
    acc: &mut Option<ScanAccuracy>,
    method: &str,
) -> Result<bool> {
    let got = ctx.dtoh(out)?;
    if let Some(a) = acc {
        a.record(method, &got);
    }
    Ok(T::check(&got, input))
}

/// XOR of the 32-bit words of `data` (as the streaming kernel folds them).
fn xor_words<T: Copy>(data: &[T]) -> u32 {
    let bytes = std::mem::size_of_val(data);
    // SAFETY: plain numeric elements; every byte is initialised.
    let raw = unsafe { std::slice::from_raw_parts(data.as_ptr() as *const u8, bytes) };
    raw.as_chunks::<4>()
        .0
        .iter()
        .fold(0u32, |a, w| a ^ u32::from_ne_bytes(*w))
}

/// Does `cub` work on `ctx`: an i32 sum and an i32 inclusive scan of a few thousand elements,
/// checked? (A shim that builds but fails at run time is left out before the sweep, rather
/// than failing it midway.)
pub fn cub_works(ctx: &Context, cub: &Cub) -> Result<()> {
    let data: Vec<i32> = (0..5000).map(|i| i % 7 - 3).collect();
    let inputs = [ctx.htod(&data)?];
    let res = ctx.alloc_zeros::<i32>(1)?;
    cub_sum_runner::<i32>(cub, ctx, &inputs, &res)?(0)?;
    let got = ctx.dtoh(&res)?[0];
    if !i32::sum_ok(got, &data) {
        return Err(Error::external(format!(
            "CUB's sum of the probe is {got}, not {}",
            data.iter().sum::<i32>()
        )));
    }
    let mut out = ctx.alloc_zeros::<i32>(data.len())?;
    if let Some(runner) = i32::cub_inclusive_sum(cub, ctx, &inputs[0], &mut out) {
        runner?.run()?;
        if !i32::check(&ctx.dtoh(&out)?, &data) {
            return Err(Error::external("CUB's inclusive sum of the probe is wrong"));
        }
    }
    Ok(())
}

/// Inputs up to this size also get the back-to-back measurement.
const SMALL_N: u64 = 1 << 16;
/// Calls per timed batch of the back-to-back measurement.
const BACK_TO_BACK: usize = 64;

/// CUB's sum over input `i` into `res[0]`, scratch allocated once.
fn cub_sum_runner<'a, T: SweepElement>(
    cub: &'a Cub,
    ctx: &'a Context,
    inputs: &'a [DeviceBuffer<T>],
    res: &DeviceBuffer<T>,
) -> Result<impl Fn(usize) -> Result<()> + 'a> {
    let stream = crate::cub::stream_of(ctx)? as usize;
    let n = inputs[0].len() as u64;
    let temp_bytes = cub.temp_bytes_sum::<T>(n)?;
    let temp = ctx.alloc_zeros::<u8>(temp_bytes.max(1))?;
    let (temp_addr, out_addr) = (ctx.device_addr(&temp)?, ctx.device_addr(res)?);
    Ok(move |i: usize| -> Result<()> {
        let _keep = &temp;
        // SAFETY: device buffers of this context, alive for the whole benchmark.
        Ok(unsafe {
            cub.sum::<T>(
                temp_addr,
                temp_bytes,
                ctx.device_addr(&inputs[i])?,
                out_addr,
                n,
                stream as *mut std::ffi::c_void,
            )
        }?)
    })
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
        assert!(parse_sizes("abc").unwrap_err().contains("bad size"));
        assert!(parse_sizes("2^70").is_err());
        assert!(parse_sizes("3..8").is_err());
    }

    #[test]
    fn spread_orders() {
        let (med, min, p10, p90, max) = spread(&[5.0, 1.0, 3.0, 2.0, 4.0]);
        assert_eq!((med, min, max), (3.0, 1.0, 5.0));
        assert!(p10 <= med && med <= p90);
    }

    #[test]
    fn xor_of_words() {
        assert_eq!(xor_words(&[1u32, 2, 4]), 7);
        assert_eq!(xor_words(&[1.0f64]), 0x3ff0_0000);
    }
}
