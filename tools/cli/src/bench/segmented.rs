//! Segmented reduce cases of issue 15 (f32 sum): many short segments, few long ones,
//! power-law lengths, and the rows of row-major matrices, each against the read limit (the
//! read-only streaming kernel over the same values) in the same run. On the simulator the
//! cases shrink a thousandfold.

use gpu_reduce::{BackendKind, Context, DeviceBuffer, Reduction, Result};
use rand::{Rng, SeedableRng, rngs::SmallRng};

use super::{Family, Measurement, StreamExt, spread, xor_words};

/// One case: its name and either the segment lengths (CSR) or (rows, row length).
enum Shape {
    Csr(Vec<u64>),
    Rows(usize, usize),
}

fn cases(sim: bool, seed: u64) -> Vec<(String, Shape)> {
    let scale = if sim { 1000 } else { 1 };
    let mut rng = SmallRng::seed_from_u64(seed);
    let short: Vec<u64> = (0..1_000_000 / scale)
        .map(|_| rng.random_range(1..=200))
        .collect();
    let long: Vec<u64> = (0..1000 / scale.min(100))
        .map(|_| rng.random_range(90_000..=110_000) / (scale as u64).min(100))
        .collect();
    // Pareto (alpha 1.2) lengths from 1, capped at 10^6: most tiny, a few huge.
    let power: Vec<u64> = (0..300_000 / scale)
        .map(|_| {
            let u: f64 = rng.random_range(1e-12..1.0);
            (u.powf(-1.0 / 1.2).floor() as u64).min(1_000_000 / scale as u64)
        })
        .collect();
    vec![
        (
            format!("{} segments, lengths 1..200", short.len()),
            Shape::Csr(short),
        ),
        (format!("{} segments of ~1e5", long.len()), Shape::Csr(long)),
        (
            format!("{} segments, power-law lengths", power.len()),
            Shape::Csr(power),
        ),
        (
            format!("rows {} x {}", (1 << 16) / scale, 1 << 10),
            Shape::Rows((1 << 16) / scale, 1 << 10),
        ),
        (
            format!("rows {} x {}", 1 << 10, (1 << 16) / scale),
            Shape::Rows(1 << 10, (1 << 16) / scale),
        ),
    ]
}

/// Every case: checked against the CPU, then timed (`warmup` + `iters` runs), with the read
/// limit over the same values beside it.
pub fn segmented_cases(
    ctx: &Context,
    iters: usize,
    warmup: usize,
    seed: u64,
    progress: &mut impl FnMut(&str),
) -> Result<Vec<Measurement>> {
    let sim = ctx.backend_kind() == BackendKind::Sim;
    let mut rows = Vec::new();
    for (name, shape) in cases(sim, seed) {
        progress(&format!("segmented: {name}"));
        let lens: Vec<u64> = match &shape {
            Shape::Csr(l) => l.clone(),
            Shape::Rows(r, c) => vec![*c as u64; *r],
        };
        let n: u64 = lens.iter().sum();
        let mut rng = SmallRng::seed_from_u64(seed ^ n);
        let host: Vec<f32> = (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect();
        let x = ctx.htod(&host)?;
        let mut out = ctx.alloc_zeros::<f32>(lens.len())?;
        let mut offsets = vec![0u64];
        for l in &lens {
            offsets.push(offsets.last().copied().unwrap_or(0) + l);
        }
        let offs: DeviceBuffer<u64> = ctx.htod(&offsets)?;
        let run = |out: &mut DeviceBuffer<f32>| match &shape {
            Shape::Csr(_) => ctx.segmented_reduce_csr(&x, &offs, Reduction::Sum, out),
            Shape::Rows(_, c) => ctx.segmented_reduce_fixed(&x, *c, Reduction::Sum, out),
        };
        run(&mut out)?;
        let got = ctx.dtoh(&out)?;
        let ok = got.iter().zip(offsets.windows(2)).all(|(&g, w)| {
            let seg = &host[w[0] as usize..w[1] as usize];
            let (exact, abs) = crate::cpu::sum_f64(seg);
            (g as f64 - exact).abs() <= crate::cpu::f32_sum_bound(seg.len() as u64, abs)
        });
        let t = ctx.time_ms(warmup, iters, || run(&mut out))?;
        let bytes = n * 4
            + match shape {
                Shape::Csr(_) => offsets.len() as u64 * 8,
                Shape::Rows(..) => 0,
            }
            + lens.len() as u64 * 4;
        rows.push(measurement(
            "segmented",
            &name,
            Family::Ours,
            n,
            bytes,
            &t,
            ok,
            sim,
        ));
        // The read limit over the same values.
        let (g, bl) = ctx.stream_shape();
        let mut partials = ctx.alloc_zeros::<u32>((g * bl / 32) as usize)?;
        ctx.stream_read_xor(&x, &mut partials)?;
        let ok = ctx.dtoh(&partials)?.iter().fold(0u32, |a, &v| a ^ v) == xor_words(&host);
        let t = ctx.time_ms(warmup, iters, || ctx.stream_read_xor(&x, &mut partials))?;
        rows.push(measurement(
            "memory",
            "read-only stream",
            Family::Limit,
            n,
            n * 4,
            &t,
            ok,
            sim,
        ));
    }
    Ok(rows)
}

#[allow(clippy::too_many_arguments)] // one measurement's fields
fn measurement(
    op: &str,
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
        dtype: "f32".into(),
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
