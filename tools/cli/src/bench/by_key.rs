//! Reduce-by-key cases of issue 15 (u32 keys, f32 values, sum): random run lengths 1..100 and
//! 1..1e4 over 2^27 elements, ours against CUB's `DeviceReduce::ReduceByKey` (each loaded
//! shim) and the read limit (the streaming kernel reading as many bytes as the keys and values)
//! in the same run. On the simulator the cases shrink to 2^14 elements (and there is no CUB).

use gpu_reduce::{BackendKind, Context, DeviceBuffer, Error, Result, ScanOperator};
use rand::{Rng, SeedableRng, rngs::SmallRng};

use super::{Cubs, Family, Measurement, StreamExt, case_measurement, xor_words};

/// The rows' type: keys and values, never the same row as a plain f32 sweep's of the same n.
const DTYPE: &str = "u32+f32";

/// The keys (runs of random length `1..=max_run`, consecutive runs' keys differ) and values.
fn case(n: usize, max_run: usize, seed: u64) -> (Vec<u32>, Vec<f32>) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut keys = Vec::with_capacity(n);
    let mut k = 0u32;
    while keys.len() < n {
        let run = rng.random_range(1..=max_run).min(n - keys.len());
        k = k.wrapping_add(rng.random_range(1..1000));
        keys.extend(std::iter::repeat_n(k, run));
    }
    let vals = (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect();
    (keys, vals)
}

/// Whether `(uk, agg)` (with `runs` runs) are the runs of `keys`/`vals`: keys exactly, sums
/// within the f32 bound of an f64 sum of each run.
fn check(keys: &[u32], vals: &[f32], runs: usize, uk: &[u32], agg: &[f32]) -> bool {
    let mut r = 0;
    let mut i = 0;
    while i < keys.len() {
        let mut j = i + 1;
        while j < keys.len() && keys[j] == keys[i] {
            j += 1;
        }
        let (exact, abs) = crate::cpu::sum_f64(&vals[i..j]);
        if r >= runs
            || uk[r] != keys[i]
            || (agg[r] as f64 - exact).abs() > crate::cpu::f32_sum_bound((j - i) as u64, abs)
        {
            return false;
        }
        r += 1;
        i = j;
    }
    r == runs
}

/// Every case: checked against the CPU, then timed (`warmup` + `iters` runs), with CUB and the
/// read limit beside it.
pub fn by_key_cases(
    ctx: &Context,
    cubs: Cubs<'_>,
    iters: usize,
    warmup: usize,
    seed: u64,
    progress: &mut impl FnMut(&str),
) -> Result<Vec<Measurement>> {
    let sim = ctx.backend_kind() == BackendKind::Sim;
    let n = if sim { 1 << 14 } else { 1 << 27 };
    let mut rows = Vec::new();
    for max_run in [100usize, 10_000] {
        let name = format!("runs 1..{max_run}");
        progress(&format!("reduce by key: {name}"));
        let (keys, vals) = case(n, max_run, seed ^ max_run as u64);
        let (dk, dv) = (ctx.htod(&keys)?, ctx.htod(&vals)?);
        let mut uk = ctx.alloc_zeros::<u32>(n)?;
        let mut agg = ctx.alloc_zeros::<f32>(n)?;
        let mut count = ctx.alloc_zeros::<u64>(1)?;
        let runs = ctx.reduce_by_key(&dk, &dv, &mut uk, &mut agg, ScanOperator::Sum)?;
        let ok = check(&keys, &vals, runs, &ctx.dtoh(&uk)?, &ctx.dtoh(&agg)?);
        // Timed in stream order (the count stays on the device), as CUB is.
        let t = ctx.time_ms(warmup, iters, || {
            ctx.reduce_by_key_into(&dk, &dv, &mut uk, &mut agg, &mut count, ScanOperator::Sum)
        })?;
        // Bytes: keys and values read, one key and one aggregate written per run.
        let bytes = n as u64 * 8 + runs as u64 * 8;
        let nn = n as u64;
        rows.push(case_measurement(
            "reduce_by_key",
            DTYPE,
            &name,
            Family::Ours,
            nn,
            bytes,
            &t,
            ok,
            sim,
        ));
        // Tuning: GPU_REDUCE_BY_KEY_DELAYS=0,500,... times ours again with other first
        // look-back waits (rows named with the wait).
        let delays = std::env::var("GPU_REDUCE_BY_KEY_DELAYS").unwrap_or_default();
        for d in delays
            .split(',')
            .filter_map(|d| d.trim().parse::<u32>().ok())
        {
            ctx.set_reduce_by_key_delay(Some(d));
            let t = ctx.time_ms(warmup, iters, || {
                ctx.reduce_by_key_into(&dk, &dv, &mut uk, &mut agg, &mut count, ScanOperator::Sum)
            })?;
            ctx.set_reduce_by_key_delay(None);
            let method = format!("{name}, first wait {d} ns");
            rows.push(case_measurement(
                "reduce_by_key",
                DTYPE,
                &method,
                Family::Ours,
                nn,
                bytes,
                &t,
                ok,
                sim,
            ));
        }
        for (label, c) in cubs.iter() {
            progress(&format!("reduce by key: {name}, {label}"));
            let Some((cuda_ctx, cuda_stream)) = ctx.cuda() else {
                return Err(Error::InvalidArgument("CUB needs the CUDA backend".into()));
            };
            cuda_ctx
                .bind_to_thread()
                .map_err(|e| Error::InvalidArgument(format!("binding the context: {e}")))?;
            let cub_err = |e: crate::cub::CubError| Error::InvalidArgument(format!("CUB: {e}"));
            let temp_bytes = c
                .temp_bytes_reduce_by_key_sum_u32_f32(nn)
                .map_err(cub_err)?;
            let temp = ctx.alloc_zeros::<u8>(temp_bytes.max(1))?;
            let cuk = ctx.alloc_zeros::<u32>(n)?;
            let cagg = ctx.alloc_zeros::<f32>(n)?;
            let ccount = ctx.alloc_zeros::<u64>(1)?;
            let addr = |b: &DeviceBuffer<u8>| ctx.device_addr(b);
            let (ta, ka, va) = (addr(&temp)?, ctx.device_addr(&dk)?, ctx.device_addr(&dv)?);
            let (ua, aa, ca) = (
                ctx.device_addr(&cuk)?,
                ctx.device_addr(&cagg)?,
                ctx.device_addr(&ccount)?,
            );
            let stream = cuda_stream.cu_stream() as *mut std::ffi::c_void;
            let run = || -> Result<()> {
                // SAFETY: device buffers of this context, alive for the whole case, sized as
                // the call needs (n keys and values in, room for n runs out, one u64 count).
                unsafe {
                    c.reduce_by_key_sum_u32_f32(ta, temp_bytes, ka, ua, va, aa, ca, nn, stream)
                }
                .map_err(cub_err)
            };
            run()?;
            let cruns = ctx.dtoh(&ccount)?[0] as usize;
            let ok = check(&keys, &vals, cruns, &ctx.dtoh(&cuk)?, &ctx.dtoh(&cagg)?);
            let t = ctx.time_ms(warmup, iters, run)?;
            rows.push(case_measurement(
                "reduce_by_key",
                DTYPE,
                &format!("{label} DeviceReduce::ReduceByKey: {name}"),
                Family::Cub,
                nn,
                bytes,
                &t,
                ok,
                sim,
            ));
        }
        // The read limit: the streaming kernel over as many bytes as keys and values.
        drop((uk, agg));
        let both: Vec<f32> = vals.iter().chain(vals.iter()).copied().collect();
        let x = ctx.htod(&both)?;
        let (g, bl) = ctx.stream_shape();
        let mut partials = ctx.alloc_zeros::<u32>((g * bl / 32) as usize)?;
        ctx.stream_read_xor(&x, &mut partials)?;
        let ok = ctx.dtoh(&partials)?.iter().fold(0u32, |a, &v| a ^ v) == xor_words(&both);
        let t = ctx.time_ms(warmup, iters, || ctx.stream_read_xor(&x, &mut partials))?;
        rows.push(case_measurement(
            "memory",
            DTYPE,
            "read-only stream",
            Family::Limit,
            nn,
            nn * 8,
            &t,
            ok,
            sim,
        ));
    }
    Ok(rows)
}
