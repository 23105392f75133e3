//! Histograms (issue 37): u32 samples uniform on the type into 16, 256 and 4096 even bins, into
//! 256 even bins with every sample in one bin, and into 256 bins between edges, and f32 samples
//! uniform on [0, 1) into 16, 256 and 4096 even bins and 256 between edges; ours (`histogram_even` / `histogram_edges`, u32
//! counts; and 256 bins' sums of f32 weights, `histogram_even_weighted`, which CUB lacks) against CUB's `DeviceHistogram::HistogramEven` / `HistogramRange` (each loaded shim
//! that has them) and the read-only stream, at every size of `--sizes`, in the same run.
//!
//! The inputs of one size are made once (hashed, so the same on every run) and copied so that
//! the timed runs rotate over copies that miss the L2. Every row's counts are checked against
//! the CPU before the row is timed, CUB's too. Bins are chosen so that both libraries' rules
//! give the same counts: integers exactly, f32 over [0, 1) in powers of two (exact products).

use std::cell::Cell;

use gpu_reduce::{BackendKind, Context, DeviceBuffer, Error, Result};

use super::limits::read_stream;
use super::select::{Input, copies, generate, hash};
use super::{Cubs, Family, Measurement, Setter, SweepConfig, case_measurement, tuning_sweeps};
use crate::cub::{Cub, CubHistogram};

/// The rows' op (the sweep op's name, as the speed guard maps cells back to ops).
const OP: &str = "histogram";

/// What a case counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Even bins over the samples' range, uniform samples.
    Even { bins: u32 },
    /// 256 even bins, every sample the same value.
    OneBin,
    /// 256 bins between 257 edges, uniform samples.
    Edges,
    /// 256 even bins, uniform samples, each with an f32 weight (the bins' weight sums).
    Weighted,
}

/// The u32 cases, then the f32 one.
const U32_CASES: [Kind; 6] = [
    Kind::Even { bins: 16 },
    Kind::Even { bins: 256 },
    Kind::Even { bins: 4096 },
    Kind::OneBin,
    Kind::Edges,
    Kind::Weighted,
];
const F32_CASES: [Kind; 4] = [
    Kind::Even { bins: 16 },
    Kind::Even { bins: 256 },
    Kind::Even { bins: 4096 },
    Kind::Edges,
];

impl Kind {
    fn bins(self) -> u32 {
        match self {
            Kind::Even { bins } => bins,
            Kind::OneBin | Kind::Edges | Kind::Weighted => 256,
        }
    }

    /// The case's name (no `": "` in it: a CUB row is `{label} {call}: {name}`).
    fn name(self) -> String {
        match self {
            Kind::Even { bins } => format!("even, {bins} bins, uniform samples"),
            Kind::OneBin => "even, 256 bins, every sample in one bin".into(),
            Kind::Edges => "256 bins between edges, uniform samples".into(),
            Kind::Weighted => "even, 256 bins, uniform samples, f32 weight sums".into(),
        }
    }

    fn cub_call(self) -> &'static str {
        match self {
            Kind::Edges => "DeviceHistogram::HistogramRange",
            _ => "DeviceHistogram::HistogramEven",
        }
    }
}

/// The sample types: their uniform values, range and edges.
trait Elem: CubHistogram + gpu_reduce::HistogramSample + PartialOrd + Default + Send + Sync {
    /// A value uniform on the samples' range, from a hash.
    fn uniform(h: u64) -> Self;
    /// The even bins' range `[lo, hi)`.
    fn range() -> (Self, Self);
    /// `bins + 1` ascending edges spread evenly over the range.
    fn edges(bins: u32) -> Vec<Self>;
    /// The bin of `x` among `bins` even bins over [`Elem::range`] (`None`: outside).
    fn cpu_bin(x: Self, bins: u32) -> Option<usize>;
}

impl Elem for u32 {
    fn uniform(h: u64) -> u32 {
        (h >> 32) as u32
    }
    fn range() -> (u32, u32) {
        (0, u32::MAX)
    }
    fn edges(bins: u32) -> Vec<u32> {
        (0..=bins as u64)
            .map(|i| (i * u32::MAX as u64 / bins as u64) as u32)
            .collect()
    }
    fn cpu_bin(x: u32, bins: u32) -> Option<usize> {
        (x < u32::MAX).then(|| (x as u64 * bins as u64 / u32::MAX as u64) as usize)
    }
}

impl Elem for f32 {
    fn uniform(h: u64) -> f32 {
        (h >> 40) as f32 / (1u32 << 24) as f32
    }
    fn range() -> (f32, f32) {
        (0.0, 1.0)
    }
    fn edges(bins: u32) -> Vec<f32> {
        (0..=bins).map(|i| i as f32 / bins as f32).collect()
    }
    fn cpu_bin(x: f32, bins: u32) -> Option<usize> {
        // Bins are powers of two: x * bins is exact.
        (0.0..1.0)
            .contains(&x)
            .then_some((x * bins as f32) as usize)
    }
}

/// The CPU's counts of `x` into `kind`'s bins, on every core.
fn reference<T: Elem>(kind: Kind, x: &[T], edges: &[T]) -> Vec<u32> {
    let bins = kind.bins();
    let bin = |v: T| -> Option<usize> {
        match kind {
            Kind::Edges => {
                let (first, last) = (edges[0], edges[bins as usize]);
                if !(first <= v && v < last) {
                    return None;
                }
                Some(edges.partition_point(|&e| e <= v) - 1)
            }
            _ => T::cpu_bin(v, bins),
        }
    };
    let threads = std::thread::available_parallelism().map_or(1, |p| p.get());
    let chunk = x.len().div_ceil(threads).max(1 << 16);
    let parts: Vec<Vec<u32>> = std::thread::scope(|s| {
        let hs: Vec<_> = x
            .chunks(chunk)
            .map(|part| {
                s.spawn(move || {
                    let mut c = vec![0u32; bins as usize];
                    for &v in part {
                        if let Some(b) = bin(v) {
                            c[b] += 1;
                        }
                    }
                    c
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut c = vec![0u32; bins as usize];
    for p in parts {
        for (a, b) in c.iter_mut().zip(p) {
            *a += b;
        }
    }
    c
}

/// Every size of `config`: the u32 cases and the f32 one, each against CUB and the read-only
/// stream (unless `earlier` has that stream's row); sizes that do not fit are skipped, said so.
pub fn histogram_cases(
    ctx: &Context,
    cubs: Cubs<'_>,
    config: &SweepConfig,
    earlier: &[Measurement],
    progress: &mut impl FnMut(&str),
) -> Result<(Vec<Measurement>, Vec<String>)> {
    let (mut rows, mut skipped) = (Vec::new(), Vec::new());
    for &n in &config.sizes {
        let seed = config.seed ^ (n << 8) ^ 0x4157;
        let runs = [
            (<u32 as CubHistogram>::NAME, &U32_CASES[..]),
            (<f32 as CubHistogram>::NAME, &F32_CASES[..]),
        ];
        for (dt, cases) in runs {
            let has_read = earlier.iter().chain(&rows).any(|m: &Measurement| {
                m.op == "memory" && m.dtype == dt && m.n == n && m.method.starts_with("read-only")
            });
            let r = match usize::try_from(n) {
                Err(_) => Err(Error::OutOfMemory { bytes: usize::MAX }),
                Ok(n) if dt == "u32" => {
                    size_cases::<u32>(ctx, cubs, config, n, seed, cases, !has_read, progress)
                }
                Ok(n) => size_cases::<f32>(ctx, cubs, config, n, seed, cases, !has_read, progress),
            };
            match r {
                Ok(r) => rows.extend(r),
                Err(Error::OutOfMemory { bytes }) => skipped.push(format!(
                    "histogram {dt} n = {n}: does not fit in device memory ({bytes} bytes asked)"
                )),
                Err(e) => return Err(e),
            }
        }
    }
    Ok((rows, skipped))
}

/// `cases` over `n` samples of `T`: ours checked then timed, each shim's CUB likewise, then
/// the read-only stream (`read`).
#[allow(clippy::too_many_arguments)] // one size's settings
fn size_cases<T: Elem>(
    ctx: &Context,
    cubs: Cubs<'_>,
    config: &SweepConfig,
    n: usize,
    seed: u64,
    cases: &[Kind],
    read: bool,
    progress: &mut impl FnMut(&str),
) -> Result<Vec<Measurement>> {
    let (it, wu) = (config.iters, config.warmup);
    let sim = ctx.backend_kind() == BackendKind::Sim;
    let (dt, nn) = (<T as CubHistogram>::NAME, n as u64);
    let say = |what: &str| format!("histogram {dt} n={n}: {what}");
    progress(&say("inputs"));
    let bytes = nn * size_of::<T>() as u64;
    let k = copies(ctx, bytes as usize);
    let uniform = Input::new(ctx, generate(n, |i| T::uniform(hash(i as u64, seed))), k)?;
    let mut one: Option<Input<T>> = None;
    let turn = Cell::new(0usize);
    let next = || {
        turn.set((turn.get() + 1) % k);
        turn.get()
    };
    let (lo, hi) = T::range();
    let mut rows = Vec::new();
    let row = |method: &str, family, t: &[f64], ok| {
        case_measurement(OP, dt, method, family, nn, bytes, t, ok, sim)
    };
    for &kind in cases {
        let name = kind.name();
        progress(&say(&name));
        if kind == Kind::OneBin && one.is_none() {
            let v = T::uniform(hash(7, seed));
            one = Some(Input::new(ctx, vec![v; n], k)?);
        }
        let input = if kind == Kind::OneBin {
            one.as_ref().expect("made above")
        } else {
            &uniform
        };
        if kind == Kind::Weighted {
            rows.push(weighted_case(ctx, config, input, seed, &next, sim)?);
            continue;
        }
        let bins = kind.bins();
        let host_edges = T::edges(bins);
        let edges = ctx.htod(&host_edges)?;
        let want = reference(kind, &input.host, &host_edges);
        let mut counts = ctx.alloc_zeros::<u32>(bins as usize)?;
        let ours = |i: usize, counts: &mut DeviceBuffer<u32>| match kind {
            Kind::Edges => ctx.histogram_edges(&input.bufs[i], &edges, counts),
            _ => ctx.histogram_even(&input.bufs[i], counts, lo, hi),
        };
        ours(0, &mut counts)?;
        let ok = ctx.dtoh(&counts)? == want;
        let t = ctx.time_ms(wu, it, || ours(next(), &mut counts))?;
        rows.push(row(&name, Family::Ours, &t, ok));
        // GPU_REDUCE_HISTOGRAM_BLOCKS=1,2,8: ours again with other blocks per SM.
        let sweeps: [(&str, Setter, &str); 1] = [(
            "GPU_REDUCE_HISTOGRAM_BLOCKS",
            Context::set_histogram_blocks,
            "{} blocks per SM",
        )];
        for (setting, t) in tuning_sweeps(ctx, &sweeps, wu, it, || ours(next(), &mut counts))? {
            rows.push(row(&format!("{name}, {setting}"), Family::Ours, &t, ok));
        }
        for (label, cub) in cubs.iter() {
            let Some(t) = cub_case::<T>(ctx, cub, kind, input, &edges, &want, (wu, it), &next)?
            else {
                continue;
            };
            let (ok, t) = t;
            let method = format!("{label} {}: {name}", kind.cub_call());
            rows.push(row(&method, Family::Cub, &t, ok));
        }
    }
    if read {
        progress(&say("read-only stream"));
        let (ok, t) = read_stream(ctx, &uniform.bufs, &uniform.host, (wu, it), &next)?;
        rows.push(case_measurement(
            "memory",
            dt,
            "read-only stream",
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

/// Weight `i` of a weighted case: uniform on [0, 1) in multiples of 2^-24.
fn weight_of(i: usize, seed: u64) -> f32 {
    (hash(i as u64, seed ^ 0x77) >> 40) as f32 / (1u32 << 24) as f32
}

/// Ours, 256 even bins' sums of f32 weights over `input` (checked against the exact sums,
/// rounded once), its bytes the samples and the weights.
fn weighted_case<T: Elem>(
    ctx: &Context,
    config: &SweepConfig,
    input: &Input<T>,
    seed: u64,
    next: &dyn Fn() -> usize,
    sim: bool,
) -> Result<Measurement> {
    let (n, k) = (input.host.len(), input.bufs.len());
    let w = Input::new(ctx, generate(n, |i| weight_of(i, seed)), k)?;
    let bins = 256u32;
    // Exact sums in units of 2^-24, rounded once (u64 to f32 rounds to nearest).
    let mut units = vec![0u64; bins as usize];
    for (x, wt) in input.host.iter().zip(&w.host) {
        if let Some(b) = T::cpu_bin(*x, bins) {
            units[b] += (*wt * (1u32 << 24) as f32) as u64;
        }
    }
    let want: Vec<f32> = units
        .iter()
        .map(|&u| u as f32 / (1u32 << 24) as f32)
        .collect();
    let (lo, hi) = T::range();
    let mut sums = ctx.alloc_zeros::<f32>(bins as usize)?;
    let ours = |i: usize, sums: &mut DeviceBuffer<f32>| {
        ctx.histogram_even_weighted(&input.bufs[i], &w.bufs[i], sums, lo, hi)
    };
    ours(0, &mut sums)?;
    let ok = ctx.dtoh(&sums)? == want;
    let t = ctx.time_ms(config.warmup, config.iters, || ours(next(), &mut sums))?;
    let (dt, bytes) = (<T as CubHistogram>::NAME, (n * (size_of::<T>() + 4)) as u64);
    Ok(case_measurement(
        OP,
        dt,
        &Kind::Weighted.name(),
        Family::Ours,
        n as u64,
        bytes,
        &t,
        ok,
        sim,
    ))
}

/// CUB's `kind` over `input`: (checked, times), or `None` when the shim lacks the histograms
/// (built before them) or takes no such `n`.
#[allow(clippy::too_many_arguments)] // one case's settings
fn cub_case<T: Elem>(
    ctx: &Context,
    cub: &Cub,
    kind: Kind,
    input: &Input<T>,
    edges: &DeviceBuffer<T>,
    want: &[u32],
    (wu, it): (usize, usize),
    next: &dyn Fn() -> usize,
) -> Result<Option<(bool, Vec<f64>)>> {
    let Ok(h) = cub.histogram::<T>() else {
        return Ok(None);
    };
    let n = input.host.len() as u64;
    if n > i32::MAX as u64 && !cub.wide_num_items() {
        return Ok(None);
    }
    let stream = crate::cub::stream_of(ctx)?;
    let (bins, range) = (kind.bins() as i32, kind == Kind::Edges);
    let temp_bytes = h.temp_bytes(range, n, bins)?;
    let temp = ctx.alloc_zeros::<u8>(temp_bytes.max(1))?;
    let scratch = (ctx.device_addr(&temp)?, temp_bytes);
    let counts = ctx.alloc_zeros::<u32>(bins as usize)?;
    let (c, e) = (ctx.device_addr(&counts)?, ctx.device_addr(edges)?);
    let (lo, hi) = T::range();
    let run = |i: usize| -> Result<()> {
        let x = input.addrs[i];
        // SAFETY: `temp`, `counts`, `edges` and every input live to the end of the case, and
        // every read of them (the check) waits for the stream.
        unsafe {
            if range {
                h.range(scratch, x, c, bins, e, n, stream)?;
            } else {
                h.even(scratch, x, c, bins, (lo, hi), n, stream)?;
            }
        }
        Ok(())
    };
    run(0)?;
    let ok = ctx.dtoh(&counts)? == want;
    let t = ctx.time_ms(wu, it, || run(next()))?;
    Ok(Some((ok, t)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_agree_with_the_library_rules() {
        // u32: the even rule against the edges spread the same way (exact integers both).
        let x: Vec<u32> = (0..100_000u64).map(|i| u32::uniform(hash(i, 3))).collect();
        let even = reference(Kind::Even { bins: 256 }, &x, &[]);
        assert_eq!(even.iter().sum::<u32>(), 100_000);
        let lo_edges = u32::edges(256);
        let by_edges = reference(Kind::Edges, &x, &lo_edges);
        assert_eq!(by_edges.iter().sum::<u32>(), 100_000);
        // Every bin of 2^32 / 256 values holds about 1/256 of uniform samples.
        assert!(even.iter().all(|&c| (250..=540).contains(&c)), "{even:?}");
        let f: Vec<f32> = (0..100_000u64).map(|i| f32::uniform(hash(i, 5))).collect();
        let fe = reference(Kind::Even { bins: 256 }, &f, &[]);
        let fr = reference(Kind::Edges, &f, &f32::edges(256));
        assert_eq!(fe, fr, "power-of-two bins of [0, 1): the same both ways");
        let one = reference(Kind::OneBin, &vec![7u32 << 24; 1000], &[]);
        assert_eq!(one[7], 1000);
    }
}
