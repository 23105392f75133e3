//! Reduce-by-key cases of issue 15 (u32 keys, f32 values, sum): random run lengths 1..100 and
//! 1..1e4 over 2^27 elements, ours against CUB's `DeviceReduce::ReduceByKey` (each loaded
//! shim) and the read limit (the streaming kernel reading as many bytes as the keys and values)
//! in the same run. On the simulator the cases shrink to 2^14 elements (and there is no CUB).
//!
//! The scan by key (issue 16) runs the same cases: our inclusive sum by key against CUB's
//! `DeviceScan::InclusiveSumByKey` (each shim that has it) and the device copy moving as many
//! bytes.

use gpu_reduce::{BackendKind, Context, DeviceBuffer, Reduction, Result, ScanKind};
use rand::{Rng, SeedableRng, rngs::SmallRng};

use super::{Cubs, Family, Measurement, Setter, case_measurement, read_stream, tuning_sweeps};

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

/// The end of the run of equal keys that begins at `i`.
fn run_end(keys: &[u32], i: usize) -> usize {
    let mut j = i + 1;
    while j < keys.len() && keys[j] == keys[i] {
        j += 1;
    }
    j
}

/// Whether `(uk, agg)` (with `runs` runs) are the runs of `keys`/`vals`: keys exactly, sums
/// within the f32 bound of an f64 sum of each run.
fn check(keys: &[u32], vals: &[f32], runs: usize, uk: &[u32], agg: &[f32]) -> bool {
    let mut r = 0;
    let mut i = 0;
    while i < keys.len() {
        let j = run_end(keys, i);
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
        let runs = ctx.reduce_by_key(&dk, &dv, &mut uk, &mut agg, Reduction::Sum)?;
        let ok = check(
            &keys,
            &vals,
            runs as usize,
            &ctx.dtoh(&uk)?,
            &ctx.dtoh(&agg)?,
        );
        // Timed in stream order (the count stays on the device), as CUB is.
        let t = ctx.time_ms(warmup, iters, || {
            ctx.reduce_by_key_into(&dk, &dv, &mut uk, &mut agg, &mut count, Reduction::Sum)
        })?;
        // Bytes: keys and values read, one key and one aggregate written per run.
        let bytes = n as u64 * 8 + runs * 8;
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
        // Tuning sweeps, rows named with the setting: GPU_REDUCE_BY_KEY_DELAYS=0,500,... times
        // ours with other first look-back waits, GPU_REDUCE_BY_KEY_PREFETCH=0,256,... with
        // other L2 prefetch distances.
        let sweeps: [(&str, Setter, &str); 2] = [
            (
                "GPU_REDUCE_BY_KEY_DELAYS",
                Context::set_reduce_by_key_delay,
                "first wait {} ns",
            ),
            (
                "GPU_REDUCE_BY_KEY_PREFETCH",
                Context::set_reduce_by_key_prefetch,
                "prefetch {} tiles ahead",
            ),
        ];
        let work =
            || ctx.reduce_by_key_into(&dk, &dv, &mut uk, &mut agg, &mut count, Reduction::Sum);
        for (setting, t) in tuning_sweeps(ctx, &sweeps, warmup, iters, work)? {
            let method = format!("{name}, {setting}");
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
            let stream = crate::cub::stream_of(ctx)?;
            let temp_bytes = c.temp_bytes_reduce_by_key_sum_u32_f32(nn)?;
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
            let run = || -> Result<()> {
                // SAFETY: device buffers of this context, alive for the whole case, sized as
                // the call needs (n keys and values in, room for n runs out, one u64 count).
                Ok(unsafe {
                    c.reduce_by_key_sum_u32_f32(ta, temp_bytes, ka, ua, va, aa, ca, nn, stream)
                }?)
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
        let (ok, t) = read_stream(ctx, std::slice::from_ref(&x), &both, (warmup, iters), || 0)?;
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

/// Whether `got` is the inclusive sum by key of `keys`/`vals`: each run's part the inclusive
/// sum of the run's values, within the f32 scan's bound of an f64 scan (as the scan rows' check).
fn check_scan(keys: &[u32], vals: &[f32], got: &[f32]) -> bool {
    use crate::scan_table::TableElement;
    let mut i = 0;
    while i < keys.len() {
        let j = run_end(keys, i);
        if got.len() < j || !<f32 as TableElement>::check(&got[i..j], &vals[i..j]) {
            return false;
        }
        i = j;
    }
    got.len() == keys.len()
}

/// The scan-by-key cases (the reduce-by-key ones): ours checked against the CPU, then timed
/// (`warmup` + `iters` runs), with CUB (each shim that has the op; an older one's row is left
/// out) and the device copy beside it.
pub fn scan_by_key_cases(
    ctx: &Context,
    cubs: Cubs<'_>,
    iters: usize,
    warmup: usize,
    seed: u64,
    progress: &mut impl FnMut(&str),
) -> Result<Vec<Measurement>> {
    let sim = ctx.backend_kind() == BackendKind::Sim;
    let n = if sim { 1 << 14 } else { 1 << 27 };
    let nn = n as u64;
    // Bytes: keys and values read, one value written per element.
    let bytes = nn * 12;
    let (op, incl) = (Reduction::Sum, ScanKind::Inclusive);
    let mut rows = Vec::new();
    for max_run in [100usize, 10_000] {
        let name = format!("runs 1..{max_run}");
        progress(&format!("scan by key: {name}"));
        let (keys, vals) = case(n, max_run, seed ^ max_run as u64);
        let (dk, dv) = (ctx.htod(&keys)?, ctx.htod(&vals)?);
        let mut out = ctx.alloc_zeros::<f32>(n)?;
        ctx.scan_by_key(&dk, &dv, &mut out, op, incl)?;
        let ok = check_scan(&keys, &vals, &ctx.dtoh(&out)?);
        let t = ctx.time_ms(warmup, iters, || {
            ctx.scan_by_key(&dk, &dv, &mut out, op, incl)
        })?;
        rows.push(case_measurement(
            "scan_by_key",
            DTYPE,
            &name,
            Family::Ours,
            nn,
            bytes,
            &t,
            ok,
            sim,
        ));
        drop(out);
        // A shim built before the op has no row.
        for (label, c) in cubs.iter().filter(|(_, c)| c.has_scan_by_key_sum_u32_f32()) {
            progress(&format!("scan by key: {name}, {label}"));
            let stream = crate::cub::stream_of(ctx)?;
            let temp_bytes = c.temp_bytes_scan_by_key_sum_u32_f32(nn)?;
            let temp = ctx.alloc_zeros::<u8>(temp_bytes.max(1))?;
            let cout = ctx.alloc_zeros::<f32>(n)?;
            let (ta, ka) = (ctx.device_addr(&temp)?, ctx.device_addr(&dk)?);
            let (va, oa) = (ctx.device_addr(&dv)?, ctx.device_addr(&cout)?);
            let run = || -> Result<()> {
                // SAFETY: device buffers of this context, alive for the whole case, sized as
                // the call needs (n keys and values in, n values out).
                Ok(unsafe { c.scan_by_key_sum_u32_f32(ta, temp_bytes, ka, va, oa, nn, stream) }?)
            };
            run()?;
            let ok = check_scan(&keys, &vals, &ctx.dtoh(&cout)?);
            let t = ctx.time_ms(warmup, iters, run)?;
            rows.push(case_measurement(
                "scan_by_key",
                DTYPE,
                &format!("{label} DeviceScan::InclusiveSumByKey: {name}"),
                Family::Cub,
                nn,
                bytes,
                &t,
                ok,
                sim,
            ));
        }
        // The memory limit: a device copy moving as many bytes (6 per element read, 6 written).
        let src: Vec<f32> = vals.iter().chain(&vals[..n / 2]).copied().collect();
        let x = ctx.htod(&src)?;
        let mut y = ctx.alloc_zeros::<f32>(src.len())?;
        ctx.copy_into(&x, &mut y, 0)?;
        let ok = ctx.dtoh(&y)? == src;
        let t = ctx.time_ms(warmup, iters, || ctx.copy_into(&x, &mut y, 0))?;
        rows.push(case_measurement(
            "memory",
            DTYPE,
            "device copy (read + write)",
            Family::Limit,
            nn,
            bytes,
            &t,
            ok,
            sim,
        ));
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scan_check_takes_the_cpu_scan_and_rejects_a_missed_reset() {
        let (keys, vals) = case(5000, 100, 7);
        let (op, incl) = (Reduction::Sum, ScanKind::Inclusive);
        let good = crate::cpu::cpu_scan_by_key(&keys, &vals, op, incl);
        assert!(check_scan(&keys, &vals, &good));
        // The second run not restarted: its values carry the first run's sum.
        let mut bad = good.clone();
        let j = run_end(&keys, 0);
        bad[j] += good[j - 1] + 1.0;
        assert!(!check_scan(&keys, &vals, &bad));
        assert!(!check_scan(&keys, &vals, &good[..4999]));
    }
}
