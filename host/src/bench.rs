//! Reduction benchmarks: our one-launch reduce (plain and compensated), CUB's
//! `DeviceReduce::Sum` and a device-to-device copy, in the same process and run, measured the
//! way METHOD.md asks: CUDA events, warm-up, medians of many runs, fresh random inputs rotated
//! over buffers several times the L2 size, every result checked before its time counts.

use std::time::Instant;

use cudarc::driver::DeviceRepr;
use rand::{Rng, SeedableRng, rngs::SmallRng};

use crate::context::{Backend, Context};
use crate::cub::{Cub, CubSum};
use crate::error::{Error, Result};
use crate::reduce::{DeviceElement, Reduction};
use crate::stats::{self, Summary};

/// One measured method at one size.
#[derive(Debug, Clone)]
pub struct BenchRow {
    pub dtype: &'static str,
    pub n: u64,
    pub method: String,
    /// Event-timed GPU time of one call.
    pub gpu: Summary,
    /// Wall time of one call including reading the result back to the host (whole-call
    /// latency), when measured.
    pub host_roundtrip_ms: Option<f64>,
    /// Bytes the method must move divided by the median time.
    pub gb_per_s: f64,
    pub checked: bool,
}

/// Element types benchmarked against CUB.
pub trait BenchElement: DeviceElement + CubSum + DeviceRepr {
    fn random(rng: &mut SmallRng) -> Self;
    /// Does `got` match the exact sum (f64) within the reduction's error bound?
    fn sum_ok(got: Self, data: &[Self]) -> bool;
}

impl BenchElement for f32 {
    fn random(rng: &mut SmallRng) -> Self {
        rng.random_range(-1.0..1.0)
    }
    fn sum_ok(got: Self, data: &[Self]) -> bool {
        let (exact, abs) = crate::cpu::sum_f64(data);
        (got as f64 - exact).abs() <= crate::cpu::f32_sum_bound(data.len() as u64, abs)
    }
}
impl BenchElement for f64 {
    fn random(rng: &mut SmallRng) -> Self {
        rng.random_range(-1.0..1.0)
    }
    fn sum_ok(got: Self, data: &[Self]) -> bool {
        let exact: f64 = data.iter().sum();
        let abs: f64 = data.iter().map(|x| x.abs()).sum();
        (got - exact).abs()
            <= crate::cpu::sum_bound(data.len() as u64, 8, f64::EPSILON, abs) + 1e-300
    }
}
impl BenchElement for i32 {
    fn random(rng: &mut SmallRng) -> Self {
        rng.random()
    }
    fn sum_ok(got: Self, data: &[Self]) -> bool {
        got == data.iter().fold(0i32, |a, &x| a.wrapping_add(x))
    }
}

/// Enough buffers of `bytes` that cycling through them overflows the L2 several times, within
/// a share of the free memory.
fn rotation(ctx: &Context, bytes: usize) -> Result<usize> {
    let l2 = ctx.info().l2_bytes.max(1);
    let free = ctx.free_memory()?;
    let want = (4 * l2).div_ceil(bytes.max(1)).clamp(2, 64);
    let fit = (free / 3) / bytes.max(1);
    if fit < 1 {
        return Err(Error::OutOfMemory { bytes });
    }
    Ok(want.min(fit).max(1))
}

/// Benchmark the sum of `n` elements of `T`.
pub fn bench_sum<T: BenchElement>(
    ctx: &Context,
    cub: Option<&Cub>,
    n: usize,
    iters: usize,
    warmup: usize,
    seed: u64,
) -> Result<Vec<BenchRow>> {
    let Backend::Cuda(cb) = &ctx.backend else {
        return Err(Error::InvalidArgument(
            "benchmarks need the CUDA backend".into(),
        ));
    };
    let bytes = n * std::mem::size_of::<T>();
    let r = rotation(ctx, bytes)?;
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut host0 = Vec::new();
    let mut inputs = Vec::with_capacity(r);
    for i in 0..r {
        let data: Vec<T> = (0..n).map(|_| T::random(&mut rng)).collect();
        inputs.push(ctx.htod(&data)?);
        if i == 0 {
            host0 = data;
        }
    }
    let mut out = ctx.alloc_zeros::<T>(2)?;
    let mut rows = Vec::new();
    let row =
        |method: &str, gpu: Summary, moved: usize, checked: bool, host: Option<f64>| BenchRow {
            dtype: T::DTYPE,
            n: n as u64,
            method: method.to_string(),
            gpu,
            host_roundtrip_ms: host,
            gb_per_s: stats::gb_per_s(moved as u64, gpu.median),
            checked,
        };
    let mut k = 0usize;
    let mut next = || {
        k += 1;
        k % r
    };

    // Ours: one launch, result left on the device.
    let ok = T::sum_ok(ctx.reduce(&inputs[0], Reduction::Sum)?, &host0);
    let t = ctx.time_ms(warmup, iters, || {
        ctx.reduce_into(&inputs[next()], Reduction::Sum, &mut out)
    })?;
    let host = host_roundtrip(ctx, warmup, iters, || {
        ctx.reduce(&inputs[next()], Reduction::Sum).map(|_| ())
    })?;
    rows.push(row(
        "ours (one launch, deterministic)",
        summary(&t),
        bytes,
        ok,
        Some(host),
    ));

    if let Some(cub) = cub {
        cb.ctx
            .bind_to_thread()
            .map_err(Error::driver("binding the context", 0))?;
        let temp_bytes = cub
            .temp_bytes_sum::<T>(n as u64)
            .map_err(|e| Error::InvalidArgument(e.to_string()))?;
        let temp = ctx.alloc_zeros::<u8>(temp_bytes)?;
        let temp_addr = ctx.addr(&temp);
        let out_addr = ctx.addr(&out);
        let stream = cb.stream.cu_stream() as *mut std::ffi::c_void;
        let run = |i: usize| -> Result<()> {
            // SAFETY: device buffers of this context, alive for the whole benchmark.
            unsafe {
                cub.sum::<T>(
                    temp_addr,
                    temp_bytes,
                    ctx.addr(&inputs[i]),
                    out_addr,
                    n as u64,
                    stream,
                )
            }
            .map_err(|e| Error::InvalidArgument(format!("CUB: {e}")))
        };
        run(0)?;
        let got = ctx.dtoh(&out)?[0];
        let ok = T::sum_ok(got, &host0);
        let t = ctx.time_ms(warmup, iters, || run(next()))?;
        let host = host_roundtrip(ctx, warmup, iters, || {
            run(next())?;
            ctx.dtoh(&out).map(|_| ())
        })?;
        rows.push(row(
            "CUB DeviceReduce::Sum (two launches)",
            summary(&t),
            bytes,
            ok,
            Some(host),
        ));
    }

    // The memory limit: a device-to-device copy of the same bytes (read + write counted).
    let mut dst = ctx.alloc_zeros::<T>(n)?;
    let t = ctx.time_ms(warmup, iters, || {
        let i = next();
        ctx.copy_into(&inputs[i], &mut dst, 0)
    })?;
    rows.push(row(
        "device copy (cuMemcpyDtoD, read+write)",
        summary(&t),
        2 * bytes,
        true,
        None,
    ));
    Ok(rows)
}

/// The compensated f32 sum on the same kind of input, for its cost against the plain sum.
pub fn bench_sum_compensated(
    ctx: &Context,
    n: usize,
    iters: usize,
    warmup: usize,
    seed: u64,
) -> Result<BenchRow> {
    let bytes = n * 4;
    let r = rotation(ctx, bytes)?;
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut host0 = Vec::new();
    let mut inputs = Vec::with_capacity(r);
    for i in 0..r {
        let data: Vec<f32> = (0..n).map(|_| rng.random_range(-1.0..1.0)).collect();
        inputs.push(ctx.htod(&data)?);
        if i == 0 {
            host0 = data;
        }
    }
    let got = ctx.sum_compensated(&inputs[0])? as f64;
    let (exact, abs) = crate::cpu::sum_f64(&host0);
    let ok = (got - exact).abs() <= crate::cpu::compensated_f32_bound(n as u64, exact, abs);
    let mut out = ctx.alloc_zeros::<f64>(1)?;
    let mut k = 0;
    let t = ctx.time_ms(warmup, iters, || {
        k += 1;
        ctx.sum_compensated_into(&inputs[k % r], &mut out)
    })?;
    let gpu = summary(&t);
    Ok(BenchRow {
        dtype: "f32",
        n: n as u64,
        method: "ours, accurate f32 sum (f64 accumulation)".into(),
        gpu,
        host_roundtrip_ms: None,
        gb_per_s: stats::gb_per_s(bytes as u64, gpu.median),
        checked: ok,
    })
}

fn summary(t: &[f64]) -> Summary {
    stats::summarize(t).unwrap_or(Summary {
        median: f64::NAN,
        min: f64::NAN,
        max: f64::NAN,
        count: 0,
    })
}

/// Median wall time of `f` (which must end with the result on the host).
fn host_roundtrip(
    ctx: &Context,
    warmup: usize,
    iters: usize,
    mut f: impl FnMut() -> Result<()>,
) -> Result<f64> {
    for _ in 0..warmup {
        f()?;
    }
    ctx.synchronize()?;
    let mut v = Vec::with_capacity(iters);
    for _ in 0..iters {
        let t = Instant::now();
        f()?;
        v.push(t.elapsed().as_secs_f64() * 1e3);
    }
    Ok(summary(&v).median)
}

/// The rows as a Markdown table; ratios against CUB and the copy of the same size and type.
pub fn format_table(rows: &[BenchRow]) -> String {
    let mut s = String::from(
        "| dtype | n | method | median ms | min | max | GB/s | vs CUB (throughput) | % of copy GB/s | host round trip ms | check |\n|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        let same = |m: &str| {
            rows.iter()
                .find(|o| o.dtype == r.dtype && o.n == r.n && o.method.starts_with(m))
        };
        let cub = same("CUB").map(|c| c.gpu.median / r.gpu.median);
        let copy = same("device copy").map(|c| 100.0 * r.gb_per_s / c.gb_per_s);
        s.push_str(&format!(
            "| {} | {} | {} | {:.4} | {:.4} | {:.4} | {:.0} | {} | {} | {} | {} |\n",
            r.dtype,
            pow2(r.n),
            r.method,
            r.gpu.median,
            r.gpu.min,
            r.gpu.max,
            r.gb_per_s,
            cub.map_or("n/a".into(), |x| format!("{x:.3}x")),
            copy.map_or("n/a".into(), |x| format!("{x:.1}%")),
            r.host_roundtrip_ms.map_or("".into(), |x| format!("{x:.4}")),
            if r.checked { "ok" } else { "WRONG" }
        ));
    }
    s
}

fn pow2(n: u64) -> String {
    if n.is_power_of_two() {
        format!("2^{}", n.trailing_zeros())
    } else {
        n.to_string()
    }
}

impl Context {
    /// Free device memory in bytes (the simulator reports none).
    pub fn free_memory(&self) -> Result<usize> {
        match &self.backend {
            Backend::Cuda(c) => c
                .ctx
                .mem_get_info()
                .map(|(free, _)| free)
                .map_err(Error::driver("reading free memory", 0)),
            Backend::Sim => Ok(0),
        }
    }
}
