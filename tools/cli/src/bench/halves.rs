//! The sweep's f16 and bf16 rows (`--dtypes f16,bf16`): the sum and the inclusive sum scan, our
//! kernels against CUB, with the two memory limits. Random inputs in [-1, 1).
//!
//! - reduce: ours accumulates in f32 and leaves the f32 on the device
//!   (`reduce_custom_into::<T, SumF32>`, what `Context::sum` runs); the first CUB row is the
//!   like-for-like one, `DeviceReduce::Reduce` accumulating in f32 into an f32 (so "vs CUB" of
//!   ours compares with it); the second is `DeviceReduce::Sum`, which accumulates in the 16-bit
//!   type and writes one, for reference.
//! - scan: ours scans in f32 and rounds each output to the type; CUB's
//!   `DeviceScan::InclusiveSum` accumulates in the 16-bit type (its outputs drift from the
//!   exact prefix: its check is the 16-bit worst-case bound, ours the f32 one plus one rounding).

use half::{bf16, f16};
use rand::Rng;

use super::{Cubs, Dtype, Family, Measurement, Op, SweepConfig};
use super::{Rotation, Rows, memory_limits};
use crate::cub::{self, Cub, CubInclusiveSum, CubSum, CubSumToF32};
use gpu_reduce::{Context, DeviceBuffer, Result};
use gpu_reduce::{Reduction, ScanElement, ScanKind};

/// A 16-bit float of the sweep.
pub trait HalfSweep: ScanElement {
    const SWEEP_DTYPE: Dtype;
    /// The shim's marker type for it.
    type Cub: CubSum + CubSumToF32 + CubInclusiveSum;
    /// Unit roundoff: 2^-11 (f16), 2^-8 (bf16).
    const UNIT: f64;
    fn from_f32(x: f32) -> Self;
    fn to_f32(self) -> f32;
    /// Our sum (f32 accumulation) into `out[0]`, on the device.
    fn sum_into(
        ctx: &Context,
        input: &DeviceBuffer<Self>,
        out: &mut DeviceBuffer<f32>,
    ) -> Result<()>;
}

macro_rules! half_sweep {
    ($t:ty, $dt:expr, $cub:ty, $unit:expr) => {
        impl HalfSweep for $t {
            const SWEEP_DTYPE: Dtype = $dt;
            type Cub = $cub;
            const UNIT: f64 = $unit;
            fn from_f32(x: f32) -> Self {
                <$t>::from_f32(x)
            }
            fn to_f32(self) -> f32 {
                <$t>::to_f32(self)
            }
            fn sum_into(
                ctx: &Context,
                input: &DeviceBuffer<Self>,
                out: &mut DeviceBuffer<f32>,
            ) -> Result<()> {
                ctx.reduce_custom_into::<$t, kernels::half::SumF32>(
                    &gpu_reduce::BUILTIN,
                    input,
                    out,
                )
            }
        }
    };
}
half_sweep!(f16, Dtype::F16, cub::F16, 1.0 / 2048.0);
half_sweep!(bf16, Dtype::Bf16, cub::Bf16, 1.0 / 256.0);

/// `got` is within `depth * eps * sum|x|` of the exact sum (any summation order of that depth,
/// each addition rounding with relative error `eps`), plus one rounding of the result to a
/// type of unit roundoff `out_unit` (0 for an f32 result).
fn sum_ok(got: f64, exact: f64, abs: f64, depth: f64, eps: f64, out_unit: f64) -> bool {
    let e = depth * eps * abs;
    got.is_finite() && (got - exact).abs() <= out_unit * (exact.abs() + e) + e + 2f64.powi(-25)
}

/// Every output of an inclusive sum of `x` within [`sum_ok`] of its exact prefix, the depth of
/// a prefix being `64 + n / 1024` (tile trees, then the look-back's chain over tiles).
fn scan_ok<T: HalfSweep>(got: &[T], x: &[T], eps: f64, out_unit: f64) -> bool {
    let depth = 64.0 + x.len() as f64 / 1024.0;
    let (mut exact, mut abs) = (0.0f64, 0.0f64);
    got.len() == x.len()
        && got.iter().zip(x).all(|(&g, &v)| {
            exact += v.to_f32() as f64;
            abs += (v.to_f32() as f64).abs();
            sum_ok(g.to_f32() as f64, exact, abs, depth, eps, out_unit)
        })
}

/// The f16 or bf16 rows at size `n`.
pub fn sweep_half<T: HalfSweep>(
    ctx: &Context,
    cubs: Cubs<'_>,
    cfg: &SweepConfig,
    n: u64,
    seed: u64,
    progress: &mut impl FnMut(&str),
) -> Result<Vec<Measurement>> {
    let dt = T::SWEEP_DTYPE.name();
    let rot = Rotation::random(ctx, n, seed, |rng| {
        T::from_f32(rng.random_range(-1.0f32..1.0))
    })?;
    let (inputs, hosts) = (&rot.inputs, &rot.hosts);
    let exact: Vec<(f64, f64)> = hosts
        .iter()
        .map(|h| {
            h.iter().fold((0.0, 0.0), |(s, a), &v| {
                (s + v.to_f32() as f64, a + (v.to_f32() as f64).abs())
            })
        })
        .collect();
    let mut out = ctx.alloc_zeros::<T>(rot.len)?;
    let mut rows = Rows::new(ctx, dt, n);
    let (it, wu) = (cfg.iters, cfg.warmup);
    let b = rot.bytes as u64;
    memory_limits(ctx, (dt, n), &rot, &mut out, cfg, &mut rows, progress)?;

    // The f32 bound of a reduction tree over 2-byte elements (what the f32 sums are held to).
    let depth = crate::cpu::reduce_depth(n, 2) as f64;
    let eps32 = f32::EPSILON as f64;
    if cfg.ops.contains(&Op::Reduce) {
        progress(&format!("{dt} n={n}: reduce"));
        let mut res = ctx.alloc_zeros::<f32>(1)?;
        T::sum_into(ctx, &inputs[0], &mut res)?;
        let (e, a) = exact[0];
        let ok = sum_ok(ctx.dtoh(&res)?[0] as f64, e, a, depth, eps32, 0.0);
        let t = ctx.time_ms(wu, it, || T::sum_into(ctx, &inputs[rot.next()], &mut res))?;
        let method = "ours: sum, f32 accumulation (one launch)";
        rows.record("reduce", method, Family::Ours, b, &t, ok);
        for (label, c) in cubs.iter() {
            let run = cub_runner(c, ctx, inputs, &res, CubKind::SumToF32)?;
            run(0)?;
            let ok = sum_ok(ctx.dtoh(&res)?[0] as f64, e, a, depth, eps32, 0.0);
            let t = ctx.time_ms(wu, it, || run(rot.next()))?;
            let method = format!("{label} DeviceReduce::Reduce, f32 accumulation");
            rows.record("reduce", &method, Family::Cub, b, &t, ok);
        }
        let res16 = ctx.alloc_zeros::<T>(1)?;
        for (label, c) in cubs.iter() {
            let run = cub_runner(c, ctx, inputs, &res16, CubKind::Sum)?;
            run(0)?;
            // Accumulated in the type: its worst-case bound (the check says it is a sum).
            let got = ctx.dtoh(&res16)?[0].to_f32() as f64;
            let ok = sum_ok(got, e, a, depth, 2.0 * T::UNIT, 0.0);
            let t = ctx.time_ms(wu, it, || run(rot.next()))?;
            let method = format!("{label} DeviceReduce::Sum, {dt} accumulation");
            rows.record("reduce", &method, Family::Cub, b, &t, ok);
        }
    }

    if cfg.ops.contains(&Op::Scan) {
        progress(&format!("{dt} n={n}: scan"));
        let (op, incl) = (Reduction::Sum, ScanKind::Inclusive);
        ctx.memset_zeros(&mut out)?;
        ctx.scan(&inputs[0], &mut out, op, incl)?;
        let ok = scan_ok(&ctx.dtoh(&out)?, &hosts[0], eps32, T::UNIT);
        let t = ctx.time_ms(wu, it, || ctx.scan(&inputs[rot.next()], &mut out, op, incl))?;
        let method = "ours: inclusive sum, f32 accumulation (one pass)";
        rows.record("scan", method, Family::Ours, 2 * b, &t, ok);
        for (label, c) in cubs.iter() {
            ctx.memset_zeros(&mut out)?;
            let run = cub_runner(c, ctx, inputs, &out, CubKind::InclusiveSum)?;
            run(0)?;
            let ok = scan_ok(&ctx.dtoh(&out)?, &hosts[0], 2.0 * T::UNIT, 0.0);
            let t = ctx.time_ms(wu, it, || run(rot.next()))?;
            let method = format!("{label} DeviceScan::InclusiveSum, {dt} accumulation");
            rows.record("scan", &method, Family::Cub, 2 * b, &t, ok);
        }
    }
    Ok(rows.rows)
}

/// Which of the shim's 16-bit ops.
#[derive(Clone, Copy)]
enum CubKind {
    /// `DeviceReduce::Reduce` in f32 into one f32.
    SumToF32,
    /// `DeviceReduce::Sum` in the type into one element.
    Sum,
    /// `DeviceScan::InclusiveSum` in the type.
    InclusiveSum,
}

/// CUB's `kind` over input `i` into `out` (its first element, or all of it for the scan),
/// scratch allocated once.
fn cub_runner<'a, T: HalfSweep, O>(
    cub: &'a Cub,
    ctx: &'a Context,
    inputs: &'a [DeviceBuffer<T>],
    out: &DeviceBuffer<O>,
    kind: CubKind,
) -> Result<impl Fn(usize) -> Result<()> + 'a> {
    let out = ctx.device_addr(out)?;
    let temp_bytes = move |n| match kind {
        CubKind::SumToF32 => cub.temp_bytes_sum_to_f32::<T::Cub>(n),
        CubKind::Sum => cub.temp_bytes_sum::<T::Cub>(n),
        CubKind::InclusiveSum => cub.temp_bytes_inclusive_sum::<T::Cub>(n),
    };
    super::cub_run::cub_runner(ctx, inputs, temp_bytes, move |t, tb, input, n, s| {
        // SAFETY: device buffers of this context, alive for the whole benchmark; the shim's
        // 16-bit functions take the elements' bits (`T` is 2 bytes, as `__half`).
        unsafe {
            match kind {
                CubKind::SumToF32 => cub.sum_to_f32::<T::Cub>(t, tb, input, out, n, s),
                CubKind::Sum => cub.sum::<T::Cub>(t, tb, input, out, n, s),
                CubKind::InclusiveSum => cub.inclusive_sum::<T::Cub>(t, tb, input, out, n, s),
            }
        }
    })
}
