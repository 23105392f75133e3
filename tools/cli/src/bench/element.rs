//! The sweep's element types (f32, f64, i32): random data, the checks of their sums, dot
//! products and variances against the CPU.

use gpu_reduce::{Context, DeviceBuffer, Result};

use super::Dtype;
use crate::scan_table::TableElement;

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
