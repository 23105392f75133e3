//! What every size and type measures with: random inputs rotated over buffers larger than the
//! L2, and its rows (each a spread of timings).

use std::cell::Cell;

use gpu_reduce::{BackendKind, Context, DeviceBuffer, Error, Result};
use rand::{SeedableRng, rngs::SmallRng};

use super::{Family, Measurement};

/// Enough buffers of `bytes` that cycling through them overflows the L2 several times, within
/// a share of the free memory (the simulator has no cache to defeat: two).
pub(crate) fn rotation(ctx: &Context, bytes: usize) -> Result<usize> {
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

/// One size's inputs: random buffers (and their host copies), cycled through by the timed runs
/// so that they miss the L2.
pub(crate) struct Rotation<T> {
    pub inputs: Vec<DeviceBuffer<T>>,
    pub hosts: Vec<Vec<T>>,
    /// Elements per buffer, and their bytes.
    pub len: usize,
    pub bytes: usize,
    k: Cell<usize>,
}

impl<T: cudarc::driver::DeviceRepr + Copy> Rotation<T> {
    /// [`rotation`]'s count of buffers of `n` elements, each drawn by `random` from `seed`.
    pub fn random(
        ctx: &Context,
        n: u64,
        seed: u64,
        mut random: impl FnMut(&mut SmallRng) -> T,
    ) -> Result<Rotation<T>> {
        let len = usize::try_from(n).map_err(|_| Error::OutOfMemory { bytes: usize::MAX })?;
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .ok_or(Error::OutOfMemory { bytes: usize::MAX })?;
        let r = rotation(ctx, bytes)?;
        let mut rng = SmallRng::seed_from_u64(seed);
        let (mut hosts, mut inputs) = (Vec::with_capacity(r), Vec::with_capacity(r));
        for _ in 0..r {
            let data: Vec<T> = (0..len).map(|_| random(&mut rng)).collect();
            inputs.push(ctx.htod(&data)?);
            hosts.push(data);
        }
        Ok(Rotation {
            inputs,
            hosts,
            len,
            bytes,
            k: Cell::new(0),
        })
    }

    /// How many buffers.
    pub fn count(&self) -> usize {
        self.inputs.len()
    }

    /// The index of the next buffer to time (1, 2, ..., 0, 1, ...).
    pub fn next(&self) -> usize {
        self.k.set(self.k.get() + 1);
        self.k.get() % self.count()
    }
}

/// The rows of one size and type.
pub(crate) struct Rows {
    dtype: &'static str,
    n: u64,
    sim: bool,
    pub rows: Vec<Measurement>,
}

impl Rows {
    pub fn new(ctx: &Context, dtype: &'static str, n: u64) -> Rows {
        let sim = ctx.backend_kind() == BackendKind::Sim;
        Rows {
            dtype,
            n,
            sim,
            rows: Vec::new(),
        }
    }

    /// A row of `method`'s `times`, moving `bytes` a run.
    pub fn record(
        &mut self,
        op: &str,
        method: &str,
        family: Family,
        bytes: u64,
        times: &[f64],
        checked: bool,
    ) {
        let (dt, n, sim) = (self.dtype, self.n, self.sim);
        let m = case_measurement(op, dt, method, family, n, bytes, times, checked, sim);
        self.rows.push(m);
    }
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

/// A tuning override of the context (`None` restores the default).
pub(crate) type Setter = fn(&Context, Option<u32>);

/// Tuning sweeps of a case: for each `(variable, setter, label)` and each value `d` of the
/// comma-separated environment variable, `work` timed again with the setter at `d` (the
/// default restored after); each row's suffix is `label` with `{}` replaced by `d`.
pub(crate) fn tuning_sweeps(
    ctx: &Context,
    sweeps: &[(&str, Setter, &str)],
    warmup: usize,
    iters: usize,
    mut work: impl FnMut() -> Result<()>,
) -> Result<Vec<(String, Vec<f64>)>> {
    let mut rows = Vec::new();
    for &(var, set, label) in sweeps {
        let values = std::env::var(var).unwrap_or_default();
        for d in values
            .split(',')
            .filter_map(|d| d.trim().parse::<u32>().ok())
        {
            set(ctx, Some(d));
            let t = ctx.time_ms(warmup, iters, &mut work);
            set(ctx, None);
            rows.push((label.replace("{}", &d.to_string()), t?));
        }
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_orders() {
        let (med, min, p10, p90, max) = spread(&[5.0, 1.0, 3.0, 2.0, 4.0]);
        assert_eq!((med, min, max), (3.0, 1.0, 5.0));
        assert!(p10 <= med && med <= p90);
    }
}
