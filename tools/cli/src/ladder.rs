//! The seeds' reduction ladder on either backend: every variant on the same input, timed and
//! checked, as one table.
//!
//! Each step ([`Ladder`], kernels in `tool_kernels::ladder`) runs as its source finishes it: the
//! partial-per-block kernels are launched again on their partials until one value is left
//! ([`schedule`]), the Kepler kernel once with one atomic add per block.
//!
//! **What is timed.** A row's time is the median over `iters` runs of the GPU time, between two
//! CUDA events, of the step's kernel launches only: every pass of the reduction, nothing else.
//! Not timed: the copy of the input that reduceGmem reduces in place (so the caller's input
//! survives), the zeroing of the Kepler kernel's accumulator, and reading the result back;
//! these run before each timed run (and are finished before its start event), or after it.
//! On the simulator the same region is timed with the wall clock; those are not GPU times.

use std::fmt::Debug;

use cudarc::driver::{DeviceRepr, PushKernelArg, ValidAsZeroBits};
use rand::{Rng, SeedableRng, rngs::SmallRng};
use tool_kernels::ladder::{Elem, Entry, KernelFn};

use crate::stats;
use gpu_reduce::{BackendKind, Context, DeviceBuffer, LaunchShape};
use gpu_reduce::{Error, Result};

pub use tool_kernels::ladder::Ladder;

/// Element types the ladder is instantiated for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LadderDtype {
    I32,
    F32,
    F64,
}

impl LadderDtype {
    pub const ALL: [LadderDtype; 3] = [LadderDtype::I32, LadderDtype::F32, LadderDtype::F64];

    pub fn name(self) -> &'static str {
        match self {
            LadderDtype::I32 => "i32",
            LadderDtype::F32 => "f32",
            LadderDtype::F64 => "f64",
        }
    }
}

/// One row of the ladder table.
#[derive(Debug, Clone)]
pub struct LadderRow {
    /// The step's name (`reduce6 (nIsPow2)` when reduce6 took its power-of-two path).
    pub kernel: String,
    /// The seed it comes from.
    pub seed: &'static str,
    /// Kernel launches in the timed region (passes over the partials included).
    pub launches: usize,
    /// Median time of the timed region (see the module doc), ms.
    pub median_ms: f64,
    /// Seed 004's effective bandwidth: (bytes read + bytes written) / time, in 10^9 B/s,
    /// counting each launch's input elements read and partials written. NaN on the simulator.
    pub gb_per_s: f64,
    pub speedup_vs_reduce0: f64,
    /// `gb_per_s` against the device-to-device copy's. NaN on the simulator.
    pub percent_of_copy: f64,
    /// The result of the last timed run matched the CPU reference.
    pub checked: bool,
    /// The result against the reference, for humans.
    pub detail: String,
    // The run the row belongs to, for the table's header.
    pub n: usize,
    pub dtype: LadderDtype,
    pub iters: usize,
    pub warmup: usize,
    pub backend: BackendKind,
    /// Bandwidth of a device-to-device copy of the same `n` elements (read + write), timed the
    /// same way. NaN on the simulator (and for `n = 0`).
    pub copy_gb_per_s: f64,
}

/// Largest `n` the ladder takes: its kernels index with `u32`, as the seeds do, and the
/// grid-stride loops must not overflow.
pub const MAX_N: usize = (1 << 31) - 1;

/// Seed of [`run_ladder`]'s input.
pub const DEFAULT_SEED: u64 = 0x1add;

/// One launch of a step: which kernel, over how many elements, with how many blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pass {
    pub kernel: Ladder,
    pub n: u32,
    pub grid: u32,
}

/// The launches that reduce `n` elements with `step`: the partial-per-block kernels run again
/// on their partials until a single block is left; the atomic kernel runs once.
pub fn schedule(step: Ladder, n: u32) -> Vec<Pass> {
    let mut passes = Vec::new();
    let mut n = n;
    loop {
        let kernel = step.for_n(n);
        let grid = kernel.grid(n);
        passes.push(Pass { kernel, n, grid });
        if kernel.atomic() || grid == 1 {
            return passes;
        }
        n = grid;
    }
}

/// Longest chain of additions any input element goes through in `passes`, for the float error
/// bound: per pass, the elements a thread accumulates in sequence, plus the block tree's
/// log2(block) levels, plus 2 for the two-level (warps, then warp 0) trees; then the atomic
/// adds of the block sums, one after the other.
pub fn error_depth(passes: &[Pass]) -> u64 {
    passes
        .iter()
        .map(|p| {
            let threads = p.grid as u64 * p.kernel.block() as u64;
            let per_thread = (p.n as u64).div_ceil(threads).max(1);
            let tree = p.kernel.block().ilog2() as u64 + 2;
            let atomics = if p.kernel.atomic() { p.grid as u64 } else { 0 };
            per_thread + tree + atomics
        })
        .sum()
}

/// Bytes `passes` must move (seed 004's numerator): each launch reads its `n` inputs and
/// writes its `grid` partials (the atomic kernel: one add per block). Traffic a kernel adds on
/// its own (reduceGmem's in-place tree) is not counted: that is what it wastes.
pub fn bytes_moved(passes: &[Pass], elem_bytes: usize) -> u64 {
    passes
        .iter()
        .map(|p| (p.n as u64 + p.grid as u64) * elem_bytes as u64)
        .sum()
}

/// A GPU result against the CPU reference.
#[derive(Debug, Clone)]
pub struct Check {
    pub ok: bool,
    pub detail: String,
}

/// An element type of the ladder on the host: test data and the CPU check.
pub trait LadderElem:
    Elem + DeviceRepr + ValidAsZeroBits + Copy + Debug + Send + Sync + 'static
{
    const DTYPE: LadderDtype;
    /// `n` random values from `seed`, never all zero: integers in ±1..=100 (so every sum is
    /// exact, modulo wrapping), floats uniform in [-1, 1).
    fn random(n: usize, seed: u64) -> Vec<Self>;
    /// Check `got`, a sum of `data` whose rounding went through at most `depth` additions.
    fn check(data: &[Self], got: Self, depth: u64) -> Check;
}

impl LadderElem for i32 {
    const DTYPE: LadderDtype = LadderDtype::I32;
    fn random(n: usize, seed: u64) -> Vec<Self> {
        let mut rng = SmallRng::seed_from_u64(seed);
        (0..n)
            .map(|_| {
                let v = rng.random_range(1..=100);
                if rng.random() { v } else { -v }
            })
            .collect()
    }
    fn check(data: &[Self], got: Self, _depth: u64) -> Check {
        // Two's complement wraps the same on the GPU and here, in any order.
        let want = data.iter().fold(0i32, |s, &x| s.wrapping_add(x));
        Check {
            ok: got == want,
            detail: format!("got {got}, want {want} (exact)"),
        }
    }
}

/// `n` uniform values in [-1, 1), not all zero.
fn random_unit(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut v: Vec<f64> = (0..n).map(|_| rng.random_range(-1.0..1.0)).collect();
    if !v.is_empty() && v.iter().all(|&x| x == 0.0) {
        v[0] = 0.5;
    }
    v
}

fn float_check(got: f64, want: f64, bound: f64) -> Check {
    let err = (got - want).abs();
    Check {
        ok: err <= bound,
        detail: format!("got {got:.9e}, want {want:.9e}, |error| {err:.2e} (bound {bound:.2e})"),
    }
}

impl LadderElem for f32 {
    const DTYPE: LadderDtype = LadderDtype::F32;
    fn random(n: usize, seed: u64) -> Vec<Self> {
        random_unit(n, seed).into_iter().map(|x| x as f32).collect()
    }
    /// Against the f64 sum: `depth * eps_f32 * sum|x|` (Higham's bound for a summation whose
    /// additions nest at most `depth` deep, as `cpu::f32_sum_bound`), plus the f64 sum's own
    /// error (`n * eps_f64 * sum|x|`).
    fn check(data: &[Self], got: Self, depth: u64) -> Check {
        let (want, sum_abs) = crate::cpu::sum_f64(data);
        let bound =
            (depth as f64 * f32::EPSILON as f64 + data.len() as f64 * f64::EPSILON) * sum_abs;
        float_check(got as f64, want, bound)
    }
}

/// Neumaier's compensated f64 sum and the sum of magnitudes ([`crate::cpu::sum_compensated`]):
/// its error is far below any f64 kernel's.
pub fn sum_f64_compensated(data: &[f64]) -> (f64, f64) {
    crate::cpu::sum_compensated(data.iter().copied())
}

impl LadderElem for f64 {
    const DTYPE: LadderDtype = LadderDtype::F64;
    fn random(n: usize, seed: u64) -> Vec<Self> {
        random_unit(n, seed)
    }
    /// Against the compensated sum: `depth * eps_f64 * sum|x|` for the kernel (the f32 bound's
    /// argument with f64's epsilon), plus `(2 + n eps_f64) * eps_f64 * sum|x|` for the
    /// reference's own error.
    fn check(data: &[Self], got: Self, depth: u64) -> Check {
        let (want, sum_abs) = sum_f64_compensated(data);
        let eps = f64::EPSILON;
        let bound = (depth as f64 + 2.0 + data.len() as f64 * eps) * eps * sum_abs;
        float_check(got, want, bound)
    }
}

/// Buffers the ladder's steps share: two partial buffers to ping-pong between passes, the
/// one-element result, reduceGmem's working copy of the input, and a zero to reset the atomic
/// accumulator.
struct Workspace<T> {
    partials: [DeviceBuffer<T>; 2],
    result: DeviceBuffer<T>,
    copy: DeviceBuffer<T>,
    zero: DeviceBuffer<T>,
}

impl<T: LadderElem> Workspace<T> {
    /// Buffers for `n` elements; reduceGmem's copy only `with_copy`. Never a zero-length
    /// allocation (1 element at least).
    fn new(ctx: &Context, n: u32, with_copy: bool) -> Result<Self> {
        // reduce0's first pass has the most blocks of any step; later passes fewer.
        let most = Ladder::ROWS.iter().map(|s| s.grid(n)).max().unwrap_or(1) as usize;
        let copy = if with_copy { n.max(1) as usize } else { 1 };
        Ok(Self {
            partials: [ctx.alloc_zeros(most)?, ctx.alloc_zeros(most)?],
            result: ctx.alloc_zeros(1)?,
            copy: ctx.alloc_zeros(copy)?,
            zero: ctx.alloc_zeros(1)?,
        })
    }

    /// What `step` needs before each run, outside the timed region: reduceGmem a fresh copy
    /// of the input, the atomic kernel a zero accumulator.
    fn prepare(&mut self, ctx: &Context, step: Ladder, input: &DeviceBuffer<T>) -> Result<()> {
        if step.in_place() && !input.is_empty() {
            ctx.copy_into(input, &mut self.copy, 0)?;
        }
        if step.atomic() {
            ctx.copy_into(&self.zero, &mut self.result, 0)?;
        }
        Ok(())
    }

    /// The launches of `passes` (the timed region): pass `p` reads the previous pass's output
    /// (the first: the input, or reduceGmem's copy) and writes a partial buffer, the last pass
    /// the result.
    fn reduce(&self, ctx: &Context, passes: &[Pass], input: &DeviceBuffer<T>) -> Result<()> {
        let mut src = if passes[0].kernel.in_place() {
            &self.copy
        } else {
            input
        };
        for (p, pass) in passes.iter().enumerate() {
            let dst = if p + 1 == passes.len() {
                &self.result
            } else {
                &self.partials[p % 2]
            };
            launch(ctx, *pass, src, dst)?;
            src = dst;
        }
        Ok(())
    }
}

/// One launch of a ladder kernel on either backend.
fn launch<T: LadderElem>(
    ctx: &Context,
    pass: Pass,
    input: &DeviceBuffer<T>,
    out: &DeviceBuffer<T>,
) -> Result<()> {
    let Entry { name, kernel } = T::entry(pass.kernel);
    let smem = pass.kernel.dynamic_shared_elems() * std::mem::size_of::<T>() as u32;
    let shape = LaunchShape::linear(pass.grid, pass.kernel.block(), smem);
    let n = pass.n;
    let (pin, pout) = (ctx.device_addr(input)?, ctx.device_addr(out)?);
    // SAFETY: the kernel's arguments, as raw addresses of this context's buffers; `input`
    // holds `n` elements and `out` one per block.
    unsafe {
        ctx.launch(
            &crate::TOOL_KERNELS,
            name,
            shape,
            |b| {
                b.arg(&pin).arg(&pout).arg(&n);
            },
            move || match kernel {
                KernelFn::Read(f) => f(pin as *const T, pout as *mut T, n),
                KernelFn::InPlace(f) => f(pin as *mut T, pout as *mut T, n),
            },
        )
    }
}

fn check_n(n: usize) -> Result<u32> {
    if n > MAX_N {
        return Err(Error::TooLarge {
            what: "the elements of the ladder (its kernels index with u32)".into(),
            size: n as u64,
            limit: MAX_N as u64,
        });
    }
    Ok(n as u32)
}

/// Sum `input` with `step`, all passes, and read the result back.
pub fn ladder_sum<T: LadderElem>(
    ctx: &Context,
    step: Ladder,
    input: &DeviceBuffer<T>,
) -> Result<T> {
    ctx.device_addr(input)?;
    let n = check_n(input.len())?;
    let mut ws = Workspace::new(ctx, n, step.in_place())?;
    ws.prepare(ctx, step, input)?;
    ws.reduce(ctx, &schedule(step, n), input)?;
    Ok(ctx.dtoh(&ws.result)?[0])
}

/// Every row's step on `data` (one upload), each checked against the CPU reference.
pub fn check_all<T: LadderElem>(ctx: &Context, data: &[T]) -> Result<Vec<(Ladder, Check)>> {
    let n = check_n(data.len())?;
    let input = ctx.htod(data)?;
    let mut ws = Workspace::new(ctx, n, true)?;
    Ladder::ROWS
        .iter()
        .map(|&step| {
            let passes = schedule(step, n);
            ws.prepare(ctx, step, &input)?;
            ws.reduce(ctx, &passes, &input)?;
            let got = ctx.dtoh(&ws.result)?[0];
            Ok((step, T::check(data, got, error_depth(&passes))))
        })
        .collect()
}

/// Run every ladder kernel on the same random input of `n` elements.
pub fn run_ladder(
    ctx: &Context,
    n: usize,
    dtype: LadderDtype,
    iters: usize,
    warmup: usize,
) -> Result<Vec<LadderRow>> {
    run_ladder_seeded(ctx, n, dtype, iters, warmup, DEFAULT_SEED)
}

/// [`run_ladder`] with the input drawn from `seed`.
pub fn run_ladder_seeded(
    ctx: &Context,
    n: usize,
    dtype: LadderDtype,
    iters: usize,
    warmup: usize,
    seed: u64,
) -> Result<Vec<LadderRow>> {
    match dtype {
        LadderDtype::I32 => run_typed::<i32>(ctx, n, iters, warmup, seed),
        LadderDtype::F32 => run_typed::<f32>(ctx, n, iters, warmup, seed),
        LadderDtype::F64 => run_typed::<f64>(ctx, n, iters, warmup, seed),
    }
}

/// `warmup` untimed runs, then `iters` timed ones; before each, `prepare` (never timed). Each
/// timed run goes through `Context::time_ms`: CUDA events around the reduction's launches on
/// the GPU, the wall clock on the simulator.
fn time_runs(
    ctx: &Context,
    warmup: usize,
    iters: usize,
    mut prepare: impl FnMut() -> Result<()>,
    mut reduce: impl FnMut() -> Result<()>,
) -> Result<Vec<f64>> {
    for _ in 0..warmup {
        prepare()?;
        reduce()?;
    }
    let mut times = Vec::with_capacity(iters);
    for _ in 0..iters {
        prepare()?;
        // time_ms synchronises first, so the preparation is done before the start event.
        times.extend(ctx.time_ms(0, 1, &mut reduce)?);
    }
    Ok(times)
}

fn run_typed<T: LadderElem>(
    ctx: &Context,
    n: usize,
    iters: usize,
    warmup: usize,
    seed: u64,
) -> Result<Vec<LadderRow>> {
    let n32 = check_n(n)?;
    if iters == 0 {
        return Err(Error::external("the ladder needs at least one timed run"));
    }
    let gpu = ctx.backend_kind() == BackendKind::Cuda;
    let data = T::random(n, seed);
    let input = ctx.htod(&data)?;
    let ws = std::cell::RefCell::new(Workspace::<T>::new(ctx, n32, true)?);
    let elem = std::mem::size_of::<T>();

    // The copy baseline: device to device, read + write, timed as the kernels are.
    let copy_gb_per_s = if gpu && n > 0 {
        let times = ctx.time_ms(warmup, iters, || {
            ctx.copy_into(&input, &mut ws.borrow_mut().copy, 0)
        })?;
        let ms = stats::summarize(&times).map_or(f64::NAN, |s| s.median);
        stats::gb_per_s(2 * (n * elem) as u64, ms)
    } else {
        f64::NAN
    };

    let mut rows: Vec<LadderRow> = Vec::with_capacity(Ladder::ROWS.len());
    for step in Ladder::ROWS {
        let passes = schedule(step, n32);
        let times = time_runs(
            ctx,
            warmup,
            iters,
            || ws.borrow_mut().prepare(ctx, step, &input),
            || ws.borrow().reduce(ctx, &passes, &input),
        )?;
        let got = ctx.dtoh(&ws.borrow().result)?[0];
        let check = T::check(&data, got, error_depth(&passes));
        let median_ms = stats::summarize(&times).map_or(f64::NAN, |s| s.median);
        let gb_per_s = if gpu {
            stats::gb_per_s(bytes_moved(&passes, elem), median_ms)
        } else {
            f64::NAN
        };
        rows.push(LadderRow {
            kernel: passes[0].kernel.label().to_string(),
            seed: step.seed(),
            launches: passes.len(),
            median_ms,
            gb_per_s,
            speedup_vs_reduce0: rows.first().map_or(1.0, |r0| r0.median_ms / median_ms),
            percent_of_copy: 100.0 * gb_per_s / copy_gb_per_s,
            checked: check.ok,
            detail: check.detail,
            n,
            dtype: T::DTYPE,
            iters,
            warmup,
            backend: ctx.backend_kind(),
            copy_gb_per_s,
        });
    }
    Ok(rows)
}

/// `v` with `digits` decimals, or `n/a` when it is not a number.
fn num(v: f64, digits: usize, suffix: &str) -> String {
    if v.is_finite() {
        format!("{v:.digits$}{suffix}")
    } else {
        "n/a".into()
    }
}

/// The rows as a Markdown table, after header lines that say what was measured.
pub fn format_table(rows: &[LadderRow]) -> String {
    let mut s = String::new();
    if let Some(r) = rows.first() {
        s.push_str(&format!(
            "reduction ladder: n = {} {}, median of {} after {} warm-up\n",
            r.n,
            r.dtype.name(),
            crate::plural(r.iters as u64, "run"),
            r.warmup
        ));
        match r.backend {
            BackendKind::Cuda => s.push_str(&format!(
                "GPU times (CUDA events) of each step's kernel launches only, every pass included; \
                 not the input copy (reduceGmem), the accumulator reset (shfl + atomic) or the read-back.\n\
                 GB/s = (bytes read + bytes written) / time (seed 004); % of copy: against a \
                 device-to-device copy of the same data, {} GB/s (read + write).\n\n",
                num(r.copy_gb_per_s, 1, "")
            )),
            BackendKind::Sim => s.push_str(
                "SIMULATED on the CPU: times are the simulator's wall-clock ms, NOT GPU times; \
                 no bandwidth figures.\n\n",
            ),
        }
    }
    s.push_str(
        "| kernel | seed | launches | time (ms) | GB/s | speedup vs reduce0 | % of copy | check |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        s.push_str(&format!(
            "| {} | {} | {} | {:.4} | {} | {} | {} | {} |\n",
            r.kernel,
            r.seed,
            r.launches,
            r.median_ms,
            num(r.gb_per_s, 1, ""),
            num(r.speedup_vs_reduce0, 2, "x"),
            num(r.percent_of_copy, 1, "%"),
            if r.checked { "ok" } else { "WRONG" }
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_ptx_has_every_ladder_kernel() {
        for name in tool_kernels::ladder::KERNEL_NAMES {
            assert!(
                crate::TOOL_KERNELS.contains(name),
                "PTX lacks .entry {name}"
            );
        }
    }

    #[test]
    fn schedules_end_in_one_block() {
        for step in Ladder::ROWS {
            for n in [0u32, 1, 1000, 1 << 20, MAX_N as u32] {
                let passes = schedule(step, n);
                let last = passes.last().unwrap();
                assert!(last.grid == 1 || step.atomic(), "{step:?} n = {n}");
                assert_eq!(passes[0].n, n);
                for w in passes.windows(2) {
                    assert_eq!(w[1].n, w[0].grid);
                }
            }
        }
        // reduce0 over 2^26: 262144 blocks, then 1024, 4, 1.
        let grids: Vec<u32> = schedule(Ladder::Reduce0, 1 << 26)
            .iter()
            .map(|p| p.grid)
            .collect();
        assert_eq!(grids, [1 << 18, 1 << 10, 4, 1]);
        assert_eq!(
            schedule(Ladder::Reduce6, 1 << 20)[0].kernel,
            Ladder::Reduce6Pow2
        );
        // 2^20 leaves 1024 partials (a power of two again); 300000 leaves 586.
        assert_eq!(
            schedule(Ladder::Reduce6, 1 << 20)[1].kernel,
            Ladder::Reduce6Pow2
        );
        let odd: Vec<Ladder> = schedule(Ladder::Reduce6, 300_000)
            .iter()
            .map(|p| p.kernel)
            .collect();
        assert_eq!(odd[..2], [Ladder::Reduce6, Ladder::Reduce6]);
    }

    #[test]
    fn checks_catch_wrong_sums() {
        let d = f32::random(10_000, 1);
        let depth = error_depth(&schedule(Ladder::Reduce0, 10_000));
        let exact: f64 = d.iter().map(|&x| x as f64).sum();
        assert!(f32::check(&d, exact as f32, depth).ok);
        assert!(!f32::check(&d, exact as f32 + 0.1, depth).ok);
        let d = f64::random(10_000, 2);
        let (s, _) = sum_f64_compensated(&d);
        assert!(f64::check(&d, s, depth).ok);
        assert!(!f64::check(&d, s + 1e-9, depth).ok);
        let d = i32::random(1000, 3);
        assert!(d.iter().all(|&x| x != 0 && x.abs() <= 100));
        let s = d.iter().sum::<i32>();
        assert!(i32::check(&d, s, 0).ok && !i32::check(&d, s + 1, 0).ok);
        assert!(i32::check(&[i32::MAX, 1], i32::MIN, 0).ok);
    }

    #[test]
    fn compensated_sum_is_exact_where_naive_is_not() {
        let d = [1e16, 1.0, -1e16, 1.0];
        assert_eq!(sum_f64_compensated(&d).0, 2.0);
    }

    #[test]
    fn table_says_simulated_and_na() {
        let row = LadderRow {
            kernel: "reduce0".into(),
            seed: "000",
            launches: 2,
            median_ms: 1.5,
            gb_per_s: f64::NAN,
            speedup_vs_reduce0: 1.0,
            percent_of_copy: f64::NAN,
            checked: true,
            detail: String::new(),
            n: 1000,
            dtype: LadderDtype::F32,
            iters: 3,
            warmup: 1,
            backend: BackendKind::Sim,
            copy_gb_per_s: f64::NAN,
        };
        let t = format_table(&[row]);
        assert!(t.contains("SIMULATED"), "{t}");
        assert!(
            t.contains("| reduce0 | 000 | 2 | 1.5000 | n/a | 1.00x | n/a | ok |"),
            "{t}"
        );
    }
}
