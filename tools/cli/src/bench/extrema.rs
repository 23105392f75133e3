//! Min, max and their indices: the operators whose compares are ranks (`kernels::ops::Num`'s
//! `rank_lo` / `rank_hi`), one row per family that runs them, f32 uniform on [-1, 1) at each
//! size of `--sizes`: the max (against CUB's DeviceReduce::Max), the argmax, the inclusive max
//! scan and the argmax of rows of 1024. Every result checked against the CPU before it is timed;
//! the input rotates over buffers larger than the L2.

use gpu_reduce::{ArgValue, Context, Reduction, Result, ScanKind, Segments};
use rand::Rng;

use super::cub_run::cub_runner;
use super::limits::memory_limits;
use super::measure::{Rotation, Rows};
use super::{Cubs, Family, Measurement, SweepConfig};

/// The reductions' op (against the read-only stream).
pub const OP: &str = "extrema";
/// The scan's op (against the device copy).
pub const SCAN_OP: &str = "extrema scan";
/// The segmented case's row length.
const ROW: usize = 1024;

/// The CPU's argmax (first occurrence; no NaN in the input).
fn argmax(x: &[f32]) -> (u64, u32) {
    let mut best = 0;
    for (i, v) in x.iter().enumerate() {
        if v.total_cmp(&x[best]).is_gt() {
            best = i;
        }
    }
    (best as u64, x[best].to_bits())
}

/// Every size of `config`: ours and CUB's max, our argmax, max scan and rows' argmax, and the
/// memory limits (unless `earlier` has them).
pub fn extrema_cases(
    ctx: &Context,
    cubs: Cubs<'_>,
    config: &SweepConfig,
    earlier: &[Measurement],
    progress: &mut impl FnMut(&str),
) -> Result<Vec<Measurement>> {
    let mut out = Vec::new();
    let (it, wu) = (config.iters, config.warmup);
    for &n in &config.sizes {
        let nn = n as usize;
        let say = |what: &str| format!("extrema f32 n={n}: {what}");
        progress(&say("inputs"));
        let rot = Rotation::random(ctx, n, config.seed ^ 0xe7, |rng| {
            rng.random_range(-1.0f32..1.0)
        })?;
        let host = &rot.hosts[0];
        let b = rot.bytes as u64;
        let mut rows = Rows::new(ctx, "f32", n);
        let has_limits = earlier
            .iter()
            .any(|m| m.op == "memory" && m.dtype == "f32" && m.n == n);
        let mut copy = ctx.alloc_zeros::<f32>(nn)?;
        if !has_limits {
            let mut quiet = |_: &str| {};
            memory_limits(
                ctx,
                ("f32", n),
                &rot,
                &mut copy,
                config,
                &mut rows,
                &mut quiet,
            )?;
        }

        progress(&say("max"));
        let (want_ix, want_bits) = argmax(host);
        let mut one = ctx.alloc_zeros::<f32>(1)?;
        ctx.reduce_into(&rot.inputs[0], &mut one, Reduction::Max)?;
        let ok = ctx.dtoh(&one)?[0].to_bits() == want_bits;
        let t = ctx.time_ms(wu, it, || {
            ctx.reduce_into(&rot.inputs[rot.next()], &mut one, Reduction::Max)
        })?;
        rows.record(OP, "max", Family::Ours, b, &t, ok);
        for (label, cub) in cubs.iter() {
            let res = ctx.alloc_zeros::<f32>(1)?;
            let out_addr = ctx.device_addr(&res)?;
            let run = cub_runner(
                ctx,
                &rot.inputs,
                |n| cub.temp_bytes_max::<f32>(n),
                move |temp, temp_bytes, input, n, stream| {
                    // SAFETY: device buffers of this context, alive for the whole case.
                    unsafe { cub.max::<f32>(temp, temp_bytes, input, out_addr, n, stream) }
                },
            )?;
            run(0)?;
            let ok = ctx.dtoh(&res)?[0].to_bits() == want_bits;
            let t = ctx.time_ms(wu, it, || run(rot.next()))?;
            let method = format!("{label} DeviceReduce::Max: max");
            rows.record(OP, &method, Family::Cub, b, &t, ok);
        }

        progress(&say("argmax"));
        let mut arg = ctx.alloc_zeros::<ArgValue<f32>>(1)?;
        ctx.argmax_into(&rot.inputs[0], &mut arg)?;
        let got = ctx.dtoh(&arg)?[0];
        let ok = (got.index, got.value.to_bits()) == (want_ix, want_bits);
        let t = ctx.time_ms(wu, it, || {
            ctx.argmax_into(&rot.inputs[rot.next()], &mut arg)
        })?;
        rows.record(OP, "argmax", Family::Ours, b, &t, ok);

        progress(&say("inclusive max scan"));
        ctx.scan(
            &rot.inputs[0],
            &mut copy,
            Reduction::Max,
            ScanKind::Inclusive,
        )?;
        let got = ctx.dtoh(&copy)?;
        let mut run_max = f32::NEG_INFINITY;
        let ok = host.iter().zip(&got).all(|(x, g)| {
            run_max = run_max.max(*x);
            g.to_bits() == run_max.to_bits()
        });
        let t = ctx.time_ms(wu, it, || {
            let i = rot.next();
            ctx.scan(
                &rot.inputs[i],
                &mut copy,
                Reduction::Max,
                ScanKind::Inclusive,
            )
        })?;
        rows.record(SCAN_OP, "inclusive max", Family::Ours, 2 * b, &t, ok);

        if nn >= ROW && nn.is_multiple_of(ROW) {
            let name = format!("argmax of rows of {ROW}");
            progress(&say(&name));
            let k = nn / ROW;
            let (mut ix, mut v) = (ctx.alloc_zeros::<u64>(k)?, ctx.alloc_zeros::<f32>(k)?);
            let fixed = || Segments::fixed(ROW as u64);
            ctx.segmented_argmax(&rot.inputs[0], fixed(), &mut ix, &mut v)?;
            let (gi, gv) = (ctx.dtoh(&ix)?, ctx.dtoh(&v)?);
            let ok = host
                .chunks(ROW)
                .zip(gi.iter().zip(&gv))
                .all(|(r, (i, v))| argmax(r) == (*i, v.to_bits()));
            let t = ctx.time_ms(wu, it, || {
                ctx.segmented_argmax(&rot.inputs[rot.next()], fixed(), &mut ix, &mut v)
            })?;
            // Reads the input, writes a value and an index a row.
            rows.record(OP, &name, Family::Ours, b + 12 * k as u64, &t, ok);
        }
        out.extend(rows.rows);
    }
    Ok(out)
}
