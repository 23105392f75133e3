//! The sweep's rows of one size and type for f32, f64 and i32: our reduce (one launch, back to
//! back, alternating with CUB, to the host, the ladder), scan, dot and variance, each beside
//! CUB's where it has one.

use gpu_reduce::{Context, DeviceBuffer, Error, Reduction, Result, ScanKind};

use super::cub_run::cub_sum_runner;
use super::limits::memory_limits;
use super::measure::{Rotation, Rows};
use super::{Cubs, Dtype, Family, Measurement, Op, ScanAccuracy, SweepConfig, SweepElement};

/// Inputs up to this size also get the back-to-back measurement.
const SMALL_N: u64 = 1 << 16;
/// Calls per timed batch of the back-to-back measurement.
const BACK_TO_BACK: usize = 64;

/// One size and type: what every row of it measures with.
struct Cell<'a, T> {
    ctx: &'a Context,
    cubs: Cubs<'a>,
    cfg: &'a SweepConfig,
    n: u64,
    rot: Rotation<T>,
    /// Bytes of one input.
    b: u64,
}

/// One size and type of the sweep: its rows, and for an f32 scan its [`ScanAccuracy`] pushed to
/// `accuracy`.
pub(crate) fn sweep_one<T: SweepElement>(
    ctx: &Context,
    cubs: Cubs<'_>,
    cfg: &SweepConfig,
    n: u64,
    seed: u64,
    progress: &mut impl FnMut(&str),
    accuracy: &mut Vec<ScanAccuracy>,
) -> Result<Vec<Measurement>> {
    let rot = Rotation::random(ctx, n, seed, |rng| T::random(rng))?;
    let mut out = ctx.alloc_zeros::<T>(rot.len)?;
    let dt = T::SWEEP_DTYPE.name();
    let mut rows = Rows::new(ctx, dt, n);
    let b = rot.bytes as u64;
    memory_limits(ctx, (dt, n), &rot, &mut out, cfg, &mut rows, progress)?;
    let cell = Cell {
        ctx,
        cubs,
        cfg,
        n,
        rot,
        b,
    };
    let mut ladder_rows = Vec::new();
    if cfg.ops.contains(&Op::Reduce) {
        cell.reduce(&mut rows, progress)?;
        if cfg.ladder && n <= u32::MAX as u64 {
            ladder_rows = cell.ladder(seed, progress)?;
        }
    }
    if cfg.ops.contains(&Op::Scan) {
        accuracy.extend(cell.scan(&mut rows, &mut out, progress)?);
    }
    if cfg.ops.contains(&Op::Dot) && cell.rot.count() >= 2 {
        cell.dot(&mut rows, progress)?;
    }
    if cfg.ops.contains(&Op::Variance) {
        cell.variance(&mut rows, progress)?;
    }
    rows.rows.extend(ladder_rows);
    Ok(rows.rows)
}

impl<T: SweepElement> Cell<'_, T> {
    fn progress(&self, progress: &mut impl FnMut(&str), what: &str) {
        progress(&format!("{} n={}: {what}", T::SWEEP_DTYPE.name(), self.n));
    }

    /// The sum: one launch, back to back (small inputs), to the host; ours and CUB's.
    fn reduce(&self, rows: &mut Rows, progress: &mut impl FnMut(&str)) -> Result<()> {
        let (ctx, rot, b) = (self.ctx, &self.rot, self.b);
        let (inputs, hosts) = (&rot.inputs, &rot.hosts);
        let (it, wu) = (self.cfg.iters, self.cfg.warmup);
        self.progress(progress, "reduce");
        let mut res = ctx.alloc_zeros::<T>(1)?;
        let ok = T::sum_ok(ctx.reduce(&inputs[0], Reduction::Sum)?, &hosts[0]);
        let t = ctx.time_ms(wu, it, || {
            ctx.reduce_into(&inputs[rot.next()], &mut res, Reduction::Sum)
        })?;
        rows.record("reduce", "ours: sum (one launch)", Family::Ours, b, &t, ok);
        for (label, c) in self.cubs.iter() {
            let run = cub_sum_runner::<T>(c, ctx, inputs, &res)?;
            run(0)?;
            let ok = T::sum_ok(ctx.dtoh(&res)?[0], &hosts[0]);
            let t = ctx.time_ms(wu, it, || run(rot.next()))?;
            let method = format!("{label} DeviceReduce::Sum");
            rows.record("reduce", &method, Family::Cub, b, &t, ok);
        }
        if self.n <= SMALL_N {
            self.back_to_back(rows, &mut res, progress)?;
        }
        // The value on the host: what a program that needs the number waits for (ours: one
        // launch writing into mapped memory; CUB: its launches, then a copy to the host).
        self.progress(progress, "sum to host");
        let t = ctx.time_ms(wu, it, || ctx.sum(&inputs[rot.next()]).map(|_| ()))?;
        let method = "ours: sum returned to the host";
        rows.record("reduce to host", method, Family::Ours, b, &t, ok);
        for (label, c) in self.cubs.iter() {
            let run = cub_sum_runner::<T>(c, ctx, inputs, &res)?;
            run(0)?;
            let ok = T::sum_ok(ctx.dtoh(&res)?[0], &hosts[0]);
            let t = ctx.time_ms(wu, it, || {
                run(rot.next())?;
                ctx.dtoh(&res).map(|_| ())
            })?;
            let method = format!("{label} DeviceReduce::Sum + copy to host");
            rows.record("reduce to host", &method, Family::Cub, b, &t, ok);
        }
        Ok(())
    }

    /// Small inputs: many calls queued back to back, per call. Where the GPU finishes a call
    /// faster than the host can queue the next, this is the host's cost per call (the event
    /// pair around one call also counts the host's time before its launch).
    fn back_to_back(
        &self,
        rows: &mut Rows,
        res: &mut DeviceBuffer<T>,
        progress: &mut impl FnMut(&str),
    ) -> Result<()> {
        let (ctx, rot, b) = (self.ctx, &self.rot, self.b);
        let (it, wu) = (self.cfg.iters, self.cfg.warmup);
        self.progress(progress, "back to back");
        let per_call = |t: Vec<f64>| t.iter().map(|x| x / BACK_TO_BACK as f64).collect();
        let t: Vec<f64> = per_call(ctx.time_ms(wu, it, || {
            (0..BACK_TO_BACK).try_for_each(|_| {
                ctx.reduce_into(&rot.inputs[rot.next()], &mut *res, Reduction::Sum)
            })
        })?);
        // The last call's input is one of the rotation's: its sum must be one of theirs.
        let last_ok = |v: T| rot.hosts.iter().any(|h| T::sum_ok(v, h));
        let ok = last_ok(ctx.dtoh(&*res)?[0]);
        self.alternating(rows, res)?;
        let op = "reduce, back to back";
        let method = "ours: sum (one launch), per call";
        rows.record(op, method, Family::Ours, b, &t, ok);
        for (label, c) in self.cubs.iter() {
            let run = cub_sum_runner::<T>(c, ctx, &rot.inputs, &*res)?;
            let t: Vec<f64> = per_call(ctx.time_ms(wu, it, || {
                (0..BACK_TO_BACK).try_for_each(|_| run(rot.next()))
            })?);
            let ok = last_ok(ctx.dtoh(&*res)?[0]);
            let method = format!("{label} DeviceReduce::Sum, per call");
            rows.record(op, &method, Family::Cub, b, &t, ok);
        }
        Ok(())
    }

    /// One call each, ours and the first CUB's alternating, every pair timed back to back: a
    /// slow phase of the machine (which can take a whole block of runs, see BENCHMARKS.md)
    /// then hits both sides alike.
    fn alternating(&self, rows: &mut Rows, res: &mut DeviceBuffer<T>) -> Result<()> {
        let Some((label, c)) = self.cubs.iter().next() else {
            return Ok(());
        };
        let (ctx, rot, b) = (self.ctx, &self.rot, self.b);
        let (it, wu) = (self.cfg.iters, self.cfg.warmup);
        let run = cub_sum_runner::<T>(c, ctx, &rot.inputs, &*res)?;
        let (mut a, mut bt) = (Vec::with_capacity(it), Vec::with_capacity(it));
        for i in 0..wu + it {
            let i_ours = rot.next();
            let ta = ctx.time_ms(0, 1, || {
                ctx.reduce_into(&rot.inputs[i_ours], &mut *res, Reduction::Sum)
            })?;
            let ok_ours = T::sum_ok(ctx.dtoh(&*res)?[0], &rot.hosts[i_ours]);
            let i_cub = rot.next();
            let tb = ctx.time_ms(0, 1, || run(i_cub))?;
            let ok_cub = T::sum_ok(ctx.dtoh(&*res)?[0], &rot.hosts[i_cub]);
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
        rows.record(op, "ours: sum (one launch)", Family::Ours, b, &a, true);
        let method = format!("{label} DeviceReduce::Sum");
        rows.record(op, &method, Family::Cub, b, &bt, true);
        Ok(())
    }

    /// The seeds' reduction ladder's rows (appended after all others).
    fn ladder(&self, seed: u64, progress: &mut impl FnMut(&str)) -> Result<Vec<Measurement>> {
        let (it, wu) = (self.cfg.iters, self.cfg.warmup);
        self.progress(progress, "reduction ladder");
        let dt = match T::SWEEP_DTYPE {
            Dtype::F32 => crate::ladder::LadderDtype::F32,
            Dtype::F64 => crate::ladder::LadderDtype::F64,
            Dtype::I32 => crate::ladder::LadderDtype::I32,
            // 16-bit types are swept by `halves`, the compaction's by `select`, never here.
            Dtype::F16 | Dtype::Bf16 | Dtype::U32 | Dtype::U64 => {
                return Err(Error::external("the reduction ladder has no 16-bit types"));
            }
        };
        let rows = crate::ladder::run_ladder_seeded(self.ctx, self.rot.len, dt, it, wu, seed)?;
        Ok(rows
            .into_iter()
            .map(|row| Measurement {
                op: "reduce".into(),
                dtype: T::SWEEP_DTYPE.name().into(),
                n: self.n,
                method: format!("ladder: {} (seed {})", row.kernel, row.seed),
                family: Family::Ladder,
                bytes: self.b,
                median_ms: row.median_ms,
                min_ms: None,
                p10_ms: None,
                p90_ms: None,
                max_ms: None,
                runs: it,
                gb_per_s: row.gb_per_s.is_finite().then_some(row.gb_per_s),
                checked: row.checked,
            })
            .collect())
    }

    /// The inclusive sum scan, ours and CUB's; for f32 the [`ScanAccuracy`] of their outputs.
    fn scan(
        &self,
        rows: &mut Rows,
        out: &mut DeviceBuffer<T>,
        progress: &mut impl FnMut(&str),
    ) -> Result<Option<ScanAccuracy>> {
        let (ctx, rot, b) = (self.ctx, &self.rot, self.b);
        let (inputs, hosts) = (&rot.inputs, &rot.hosts);
        let (it, wu) = (self.cfg.iters, self.cfg.warmup);
        self.progress(progress, "scan");
        let (op, incl) = (Reduction::Sum, ScanKind::Inclusive);
        // f32: each method's last element against the exact sum, from the checked output.
        let mut acc = (T::SWEEP_DTYPE == Dtype::F32).then(|| ScanAccuracy::new(&hosts[0]));
        ctx.memset_zeros(&mut *out)?;
        ctx.scan(&inputs[0], &mut *out, op, incl)?;
        let ok = check_scan(ctx, &*out, &hosts[0], &mut acc, "ours")?;
        let t = ctx.time_ms(wu, it, || {
            ctx.scan(&inputs[rot.next()], &mut *out, op, incl)
        })?;
        let method = "ours: inclusive sum (one pass)";
        rows.record("scan", method, Family::Ours, 2 * b, &t, ok);
        for (label, c) in self.cubs.iter() {
            // One prepared call per input buffer (each owns its scratch).
            let mut runners = Vec::with_capacity(rot.count());
            for input in inputs {
                match T::cub_inclusive_sum(c, ctx, input, &mut *out) {
                    Some(x) => runners.push(x?),
                    None => break,
                }
            }
            if runners.len() == rot.count() {
                ctx.memset_zeros(&mut *out)?;
                runners[0].run()?;
                let version = crate::cub::version_string(c.version());
                let method = format!("{label} {version}");
                let ok = check_scan(ctx, &*out, &hosts[0], &mut acc, &method)?;
                let t = ctx.time_ms(wu, it, || runners[rot.next()].run())?;
                let method = format!("{label} DeviceScan::InclusiveSum");
                rows.record("scan", &method, Family::Cub, 2 * b, &t, ok);
            }
        }
        Ok(acc)
    }

    /// The dot product of inputs i and i+1 of the rotation: two arrays, each read once.
    fn dot(&self, rows: &mut Rows, progress: &mut impl FnMut(&str)) -> Result<()> {
        let (ctx, rot) = (self.ctx, &self.rot);
        let (inputs, hosts) = (&rot.inputs, &rot.hosts);
        let Some(ok) = T::dot_checked(ctx, &inputs[0], &inputs[1], &hosts[0], &hosts[1]) else {
            return Ok(());
        };
        self.progress(progress, "dot");
        let ok = ok?;
        let t = ctx.time_ms(self.cfg.warmup, self.cfg.iters, || {
            let i = rot.next();
            T::dot_run(ctx, &inputs[i], &inputs[(i + 1) % rot.count()]).unwrap_or(Ok(()))
        })?;
        let method = "ours: dot product (one launch)";
        rows.record("dot", method, Family::Ours, 2 * self.b, &t, ok);
        Ok(())
    }

    /// Mean and variance in one pass, left on the device and returned to the host.
    fn variance(&self, rows: &mut Rows, progress: &mut impl FnMut(&str)) -> Result<()> {
        let (ctx, rot, b) = (self.ctx, &self.rot, self.b);
        let (it, wu) = (self.cfg.iters, self.cfg.warmup);
        let Some(ok) = T::variance_checked(ctx, &rot.inputs[0], &rot.hosts[0]) else {
            return Ok(());
        };
        self.progress(progress, "variance");
        let ok = ok?;
        // Left on the device, like the sum's "one launch" row: the kernel's own rate, which
        // the goal compares with the read limit; then returned to the host (the call's
        // round trip included, like "reduce to host").
        let mut acc = ctx.alloc_zeros::<gpu_reduce::MomentsAcc>(1)?;
        let t = ctx.time_ms(wu, it, || {
            T::variance_into_run(ctx, &rot.inputs[rot.next()], &mut acc).unwrap_or(Ok(()))
        })?;
        let method = "ours: mean and variance (one pass)";
        rows.record("variance", method, Family::Ours, b, &t, ok);
        let t = ctx.time_ms(wu, it, || {
            T::variance_run(ctx, &rot.inputs[rot.next()]).unwrap_or(Ok(()))
        })?;
        let method = "ours: mean and variance returned to the host";
        rows.record("variance to host", method, Family::Ours, b, &t, ok);
        Ok(())
    }
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
