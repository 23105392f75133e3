//! Segmented reduce cases of issue 15 (f32 sum): many short segments, few long ones,
//! power-law lengths, and the rows of row-major matrices, each against CUB's
//! `DeviceSegmentedReduce::Sum` over the same data (each loaded shim; the CSR cases through its
//! begin/end offsets, the rows through its fixed-segment-size overload where the CUB has one)
//! and the read limit (the read-only streaming kernel over the same values) in the same run. On
//! the simulator the cases shrink a thousandfold (and there is no CUB).

use gpu_reduce::{BackendKind, Context, DeviceBuffer, Reduction, Result, Segments};
use rand::{Rng, SeedableRng, rngs::SmallRng};

use super::{Cubs, Family, Measurement, case_measurement, read_stream};
use crate::cub::Cub;

/// A CUB row's method is `{label} {call}{CASE_SEP}{case}`; ours is the case alone.
const CASE_SEP: &str = ": ";

/// The case a segmented row measures (its method without the CUB call before it), so the
/// report compares each case with CUB's row of the same case (two cases can have the same n).
pub(crate) fn case_of(method: &str) -> &str {
    method
        .rsplit_once(CASE_SEP)
        .map_or(method, |(_, case)| case)
}

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
    // The same law over at least 2^26 elements (issue 38: the read limit whatever the lengths).
    let mut power_big = Vec::new();
    let mut total = 0;
    while total < (1u64 << 26) / scale as u64 {
        let u: f64 = rng.random_range(1e-12..1.0);
        let len = (u.powf(-1.0 / 1.2).floor() as u64).min(1_000_000 / scale as u64);
        total += len;
        power_big.push(len);
    }
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
            format!("{} segments, power-law lengths", power_big.len()),
            Shape::Csr(power_big),
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

/// Every case: checked against the CPU, then timed (`warmup` + `iters` runs), with each of
/// `cubs`' segmented sums (none when no shim is loaded: the report then says CUB is not
/// available) and the read limit over the same values beside it.
pub fn segmented_cases(
    ctx: &Context,
    cubs: Cubs<'_>,
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
        // The CSR cases check their offsets on the device into `check`, read once after the
        // timed runs (as CUB, whose calls check nothing, no read-back is timed); a second row
        // times the form that reads its check back on every call.
        let check = ctx.offset_check()?;
        let run = |out: &mut DeviceBuffer<f32>| match &shape {
            Shape::Csr(_) => ctx.segmented_reduce(
                &x,
                Segments::csr(&offs).check_later(&check),
                out,
                Reduction::Sum,
            ),
            Shape::Rows(_, c) => {
                ctx.segmented_reduce(&x, Segments::fixed(*c as u64), out, Reduction::Sum)
            }
        };
        run(&mut out)?;
        let sums_ok = |got: &[f32]| {
            got.len() == lens.len()
                && got.iter().zip(offsets.windows(2)).all(|(&g, w)| {
                    let seg = &host[w[0] as usize..w[1] as usize];
                    let (exact, abs) = crate::cpu::sum_f64(seg);
                    (g as f64 - exact).abs() <= crate::cpu::f32_sum_bound(seg.len() as u64, abs)
                })
        };
        let ok = sums_ok(&ctx.dtoh(&out)?);
        let t = ctx.time_ms(warmup, iters, || run(&mut out))?;
        let ok = ok && ctx.take_offset_check(&check).is_ok();
        let bytes = n * 4
            + match shape {
                Shape::Csr(_) => offsets.len() as u64 * 8,
                Shape::Rows(..) => 0,
            }
            + lens.len() as u64 * 4;
        rows.push(case_measurement(
            "segmented",
            "f32",
            &name,
            Family::Ours,
            n,
            bytes,
            &t,
            ok,
            sim,
        ));
        if let Shape::Csr(_) = shape {
            let checked = |out: &mut DeviceBuffer<f32>| {
                ctx.segmented_reduce(&x, Segments::csr(&offs), out, Reduction::Sum)
            };
            checked(&mut out)?;
            let ok = sums_ok(&ctx.dtoh(&out)?);
            let t = ctx.time_ms(warmup, iters, || checked(&mut out))?;
            rows.push(case_measurement(
                "segmented",
                "f32",
                &format!("{name}, offsets checked on return"),
                Family::Ours,
                n,
                bytes,
                &t,
                ok,
                sim,
            ));
        }
        // CUB over the same values and offsets, into an output of its own (zeroed first, so
        // a call that wrote nothing cannot pass the check), moving the same bytes.
        for (label, c) in cubs.iter() {
            progress(&format!("segmented: {name}, {label}"));
            let call = cub_call(&shape, c);
            let cub_out = ctx.alloc_zeros::<f32>(lens.len())?;
            let run = cub_segmented_runner(c, ctx, &x, &offs, &shape, &cub_out)?;
            run()?;
            let ok = sums_ok(&ctx.dtoh(&cub_out)?);
            let t = ctx.time_ms(warmup, iters, &run)?;
            rows.push(case_measurement(
                "segmented",
                "f32",
                &format!("{label} {call}{CASE_SEP}{name}"),
                Family::Cub,
                n,
                bytes,
                &t,
                ok,
                sim,
            ));
        }
        // The read limit over the same values.
        let (ok, t) = read_stream(ctx, std::slice::from_ref(&x), &host, (warmup, iters), || 0)?;
        rows.push(case_measurement(
            "memory",
            "f32",
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

/// The CUB call a case's row names.
fn cub_call(shape: &Shape, cub: &Cub) -> &'static str {
    match shape {
        Shape::Csr(_) => "DeviceSegmentedReduce::Sum",
        Shape::Rows(..) if cub.segmented_fixed_native() => {
            "DeviceSegmentedReduce::Sum (fixed segment size)"
        }
        Shape::Rows(..) => "DeviceSegmentedReduce::Sum (row offsets from an iterator)",
    }
}

/// CUB's segmented sum of a case's values `x` into `out`, its scratch allocated once: the CSR
/// cases through `offsets` (begin = offsets, end = offsets + 1), the rows through
/// [`Cub::segmented_sum_fixed_f32`].
fn cub_segmented_runner<'a>(
    cub: &'a Cub,
    ctx: &'a Context,
    x: &DeviceBuffer<f32>,
    offsets: &DeviceBuffer<u64>,
    shape: &Shape,
    out: &DeviceBuffer<f32>,
) -> Result<impl Fn() -> Result<()> + 'a> {
    let stream = crate::cub::stream_of(ctx)? as usize;
    let (x_addr, out_addr) = (ctx.device_addr(x)?, ctx.device_addr(out)?);
    let num_segments = out.len() as i64;
    // (rows, row length), or None for the CSR offsets.
    let fixed = match shape {
        Shape::Csr(_) => None,
        Shape::Rows(r, c) => Some((*r as i64, *c as i64)),
    };
    let temp_bytes = match fixed {
        None => cub.temp_bytes_segmented_sum_f32(num_segments),
        Some((r, c)) => cub.temp_bytes_segmented_sum_fixed_f32(r, c),
    }?;
    let temp = ctx.alloc_zeros::<u8>(temp_bytes.max(1))?;
    let (temp_addr, begin) = (ctx.device_addr(&temp)?, ctx.device_addr(offsets)?);
    let end = begin + std::mem::size_of::<u64>() as u64;
    Ok(move || -> Result<()> {
        let _keep = &temp;
        let s = stream as *mut std::ffi::c_void;
        // SAFETY: device buffers of this context, alive for the whole case; `offsets` holds
        // num_segments + 1 u64, `x` every element they name (or rows * row length).
        Ok(unsafe {
            match fixed {
                None => cub.segmented_sum_f32(
                    temp_addr,
                    temp_bytes,
                    x_addr,
                    out_addr,
                    num_segments,
                    begin,
                    end,
                    s,
                ),
                Some((r, c)) => {
                    cub.segmented_sum_fixed_f32(temp_addr, temp_bytes, x_addr, out_addr, r, c, s)
                }
            }
        }?)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cub_rows_case_is_the_case_it_measures() {
        let case = "1000000 segments, lengths 1..200";
        assert_eq!(case_of(case), case);
        let cub = format!("CUB DeviceSegmentedReduce::Sum{CASE_SEP}{case}");
        assert_eq!(case_of(&cub), case);
        let rows = format!(
            "CUB(cccl) DeviceSegmentedReduce::Sum (fixed segment size){CASE_SEP}rows 1024 x 65536"
        );
        assert_eq!(case_of(&rows), "rows 1024 x 65536");
        // No case name holds the separator.
        for (name, _) in cases(true, 1) {
            assert!(!name.contains(CASE_SEP), "{name}");
        }
    }
}
