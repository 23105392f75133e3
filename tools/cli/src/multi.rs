//! `host reduce --gpus N` and `host scan --gpus N`: the sharded reduction (f32 sum) and scan
//! (i32 inclusive sum, in place and deferred) over N ranks against one rank holding the same
//! total, each checked, with per-GPU and total bandwidth.

use std::time::Instant;

use gpu_reduce::multi::MultiContext;
use gpu_reduce::{Context, Reduction, Result, ScanKind};
use rand::{Rng, SeedableRng, rngs::SmallRng};

/// The line under the header of a run on simulated devices.
pub const SIMULATED: &str = "SIMULATED on the CPU: times are the simulator's wall-clock ms, NOT GPU \
                             times; no bandwidth figures.";

/// What to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MultiOp {
    /// f32 sum (reads 4 bytes per element).
    Reduce,
    /// i32 inclusive sum in place (reads and writes 4 bytes per element), and on several ranks
    /// also deferred (`MultiContext::scan_deferred`: each shard's own scan and the offsets).
    Scan,
}

/// One row of the table.
#[derive(Debug)]
pub struct MultiRow {
    pub ranks: usize,
    pub median_ms: f64,
    pub total_gbs: f64,
    pub per_gpu_gbs: f64,
    pub checked: bool,
    pub note: String,
    /// Every timed run (ms).
    pub times: Vec<f64>,
}

/// Equal shards of `n` over `ranks` (the first ones one longer).
pub fn equal_shards(n: usize, ranks: usize) -> Vec<u64> {
    (0..ranks)
        .map(|r| (n / ranks + usize::from(r < n % ranks)) as u64)
        .collect()
}

/// Run `op` over `n` elements on one rank (`make(1)`) and on `ranks` ranks (`make(ranks)`),
/// `iters` timed runs after `warmup`: wall time of each blocking call (the exchange and the
/// host's combine included).
pub fn run(
    make: &dyn Fn(usize) -> Result<Vec<Context>>,
    op: MultiOp,
    n: usize,
    ranks: usize,
    iters: usize,
    warmup: usize,
    seed: u64,
) -> Result<Vec<MultiRow>> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut rows = Vec::new();
    let mut first_bits = None;
    let counts = if ranks == 1 { vec![1] } else { vec![1, ranks] };
    match op {
        MultiOp::Reduce => {
            let x: Vec<f32> = (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect();
            let exact: f64 = x.iter().map(|&v| v as f64).sum();
            let abs: f64 = x.iter().map(|&v| (v as f64).abs()).sum();
            for &r in &counts {
                let m = MultiContext::new(make(r)?)?;
                let b = m.htod(&x, &equal_shards(n, r))?;
                let got = m.reduce(&b, Reduction::Sum)?;
                let mut times = Vec::with_capacity(iters);
                for i in 0..warmup + iters {
                    let t = Instant::now();
                    let again = m.reduce(&b, Reduction::Sum)?;
                    let dt = t.elapsed().as_secs_f64() * 1e3;
                    if i >= warmup {
                        times.push(dt);
                    }
                    if again.to_bits() != got.to_bits() {
                        return Err(gpu_reduce::Error::external(format!(
                            "run {i} gave other bits: {again} vs {got}"
                        )));
                    }
                }
                let ok = ((got as f64) - exact).abs() <= 1e-5 * abs.max(1.0);
                let same = *first_bits.get_or_insert(got.to_bits()) == got.to_bits();
                rows.push(row(
                    r,
                    &times,
                    n,
                    4,
                    ok,
                    format!(
                        "sum {got:e}; {} bits as 1 rank",
                        if same { "the same" } else { "OTHER" }
                    ),
                ));
                if !same {
                    rows.last_mut().expect("just pushed").checked = false;
                }
            }
        }
        MultiOp::Scan => {
            let x: Vec<i32> = (0..n).map(|_| rng.random_range(-100..100)).collect();
            let want = crate::cpu::cpu_scan(&x, Reduction::Sum, ScanKind::Inclusive);
            // `warmup + iters` blocking calls of `f`, the last `iters` timed (ms).
            let timed = |f: &mut dyn FnMut() -> Result<()>| -> Result<Vec<f64>> {
                let mut times = Vec::with_capacity(iters);
                for i in 0..warmup + iters {
                    let t = Instant::now();
                    f()?;
                    if i >= warmup {
                        times.push(t.elapsed().as_secs_f64() * 1e3);
                    }
                }
                Ok(times)
            };
            for &r in &counts {
                let m = MultiContext::new(make(r)?)?;
                let mut b = m.htod(&x, &equal_shards(n, r))?;
                m.scan_in_place(&mut b, Reduction::Sum, ScanKind::Inclusive)?;
                let ok = m.dtoh(&b)? == want;
                let times =
                    timed(&mut || m.scan_in_place(&mut b, Reduction::Sum, ScanKind::Inclusive))?;
                rows.push(row(
                    r,
                    &times,
                    n,
                    8,
                    ok,
                    "inclusive i32 sum in place".into(),
                ));
                // The deferred form: each shard's own scan and the offsets, left unapplied (on
                // one rank, a plain scan plus the offsets' bookkeeping). Timed as the in-place
                // rows: the same shards scanned again (the values wrap).
                let mut b = m.htod(&x, &equal_shards(n, r))?;
                let ok = m
                    .scan_deferred(&mut b, Reduction::Sum, ScanKind::Inclusive)?
                    .dtoh()?
                    == want;
                let times = timed(&mut || {
                    m.scan_deferred(&mut b, Reduction::Sum, ScanKind::Inclusive)
                        .map(|_| ())
                })?;
                rows.push(row(
                    r,
                    &times,
                    n,
                    8,
                    ok,
                    "inclusive i32 sum, deferred (offsets returned, not applied)".into(),
                ));
            }
        }
    }
    Ok(rows)
}

fn row(
    ranks: usize,
    times: &[f64],
    n: usize,
    bytes: usize,
    checked: bool,
    note: String,
) -> MultiRow {
    let ms = crate::stats::summarize(times).map_or(f64::NAN, |s| s.median);
    let total = (n * bytes) as f64 / (ms * 1e-3) / 1e9;
    MultiRow {
        ranks,
        median_ms: ms,
        total_gbs: total,
        per_gpu_gbs: total / ranks as f64,
        checked,
        note,
        times: times.to_vec(),
    }
}

/// The rows as a markdown table, the speed-up over one rank last; `simulated` (times of the
/// CPU simulator): "-" for the bandwidths, which would mean nothing.
pub fn format_table(rows: &[MultiRow], simulated: bool) -> String {
    let base = rows.first().map(|r| r.median_ms).unwrap_or(f64::NAN);
    let mut s = String::from(
        "| ranks | median ms | total GB/s | per-GPU GB/s | x 1 rank | check | note |\n|---|---|---|---|---|---|---|\n",
    );
    let gbs = |g: f64| {
        if simulated {
            "-".to_string()
        } else {
            format!("{g:.0}")
        }
    };
    for r in rows {
        s += &format!(
            "| {} | {:.4} | {} | {} | {:.2}x | {} | {} |\n",
            r.ranks,
            r.median_ms,
            gbs(r.total_gbs),
            gbs(r.per_gpu_gbs),
            base / r.median_ms,
            if r.checked { "ok" } else { "WRONG" },
            r.note
        );
    }
    s
}

/// `--ones`: an array too large for the host (and, at 2 x 100 GiB, for one GPU) filled with
/// ones on the devices: the f32 sum checked against `n`, then the same length of i32 ones
/// scanned in place and checked at sampled elements against `i + 1` (wrapping). Prints what
/// ran and returns whether both checks held.
pub fn run_ones(ranks: Vec<Context>, n: usize) -> Result<bool> {
    let r = ranks.len();
    let sim = ranks
        .first()
        .is_some_and(|c| c.backend_kind() == gpu_reduce::BackendKind::Sim);
    // The time of one call and its bandwidth; on the simulator, labelled and no bandwidth.
    let speed = |bytes: usize, ms: f64| {
        if sim {
            format!("{ms:.3} ms (SIMULATED: CPU wall clock, no bandwidth)")
        } else {
            format!("{ms:.3} ms, {:.0} GB/s", bytes as f64 / (ms * 1e-3) / 1e9)
        }
    };
    let m = MultiContext::new(ranks)?;
    let lengths = equal_shards(n, r);
    let gib = |bytes: usize| bytes as f64 / (1u64 << 30) as f64;
    let mut ok = true;
    {
        let mut b = m.alloc_zeros::<f32>(&lengths)?;
        m.fill(&mut b, 1.0)?;
        m.reduce(&b, Reduction::Sum)?;
        let t = Instant::now();
        let s = m.reduce(&b, Reduction::Sum)?;
        let ms = t.elapsed().as_secs_f64() * 1e3;
        let good = ((s as f64) - n as f64).abs() <= 1e-6 * n as f64;
        ok &= good;
        println!(
            "f32 sum of {n} ones ({:.1} GiB over {}, {:.1} GiB each): {s:e} ({}), {}",
            gib(4 * n),
            crate::plural(r as u64, "rank"),
            gib(4 * n / r),
            if good { "ok" } else { "WRONG" },
            speed(4 * n, ms)
        );
    }
    let mut b = m.alloc_zeros::<i32>(&lengths)?;
    m.fill(&mut b, 1)?;
    // A first scan loads the kernel (its JIT took ~0.1 s: "0 GB/s" was printed) and is not
    // timed; then the ones again, the fill finished before the clock starts.
    m.scan_in_place(&mut b, Reduction::Sum, ScanKind::Inclusive)?;
    m.fill(&mut b, 1)?;
    for (_, ctx) in m.local() {
        ctx.synchronize()?;
    }
    let t = Instant::now();
    m.scan_in_place(&mut b, Reduction::Sum, ScanKind::Inclusive)?;
    let ms = t.elapsed().as_secs_f64() * 1e3;
    let mut samples = vec![0, n - 1];
    let mut at = 0usize;
    let lengths: Vec<usize> = lengths.iter().map(|&l| l as usize).collect();
    for l in &lengths {
        samples.extend(
            [at.saturating_sub(1), at, at + 1]
                .into_iter()
                .filter(|&i| i < n),
        );
        at += l;
    }
    samples.extend((1..16).map(|k| n / 16 * k));
    let mut bad = 0;
    for &i in &samples {
        if m.get(&b, i as u64)? != (i as u64 + 1) as u32 as i32 {
            bad += 1;
        }
    }
    ok &= bad == 0;
    println!(
        "i32 inclusive sum of {n} ones in place: {} of {} sampled elements right (i + 1, wrapping), {}",
        samples.len() - bad,
        samples.len(),
        speed(8 * n, ms)
    );
    Ok(ok)
}

/// `host rank`: this process is rank `rank` of `world`, one process per GPU over NCCL. The
/// logical array (`n` f32 and `n` i32, each element a hash of its global index and `seed`, so
/// the ranks agree on it without sending it) is cut in equal shards; this rank fills its own,
/// joins the communicator (the id from `GPU_REDUCE_NCCL_ID`, or from `id_file`: rank 0 writes
/// it, the others wait for it), and prints the sum's bits, the argmax, and its scanned shard's
/// checksum. Any number of ranks, one rank included, prints the same sum bits.
pub fn run_rank(
    ctx: Context,
    rank: usize,
    world: usize,
    n: usize,
    seed: u64,
    id_file: Option<&std::path::Path>,
) -> Result<String> {
    use gpu_reduce::Error;
    use gpu_reduce::multi::nccl::{ID_ENV, NcclExchange, NcclId};
    let id = if std::env::var(ID_ENV).is_ok() {
        NcclId::from_env()?
    } else if let Some(path) = id_file {
        if rank == 0 {
            let id = NcclId::new()?;
            let tmp = path.with_extension("tmp");
            std::fs::write(&tmp, id.to_hex())
                .and_then(|_| std::fs::rename(&tmp, path))
                .map_err(|e| Error::external(format!("writing {}: {e}", path.display())))?;
            id
        } else {
            let t = Instant::now();
            loop {
                if let Ok(s) = std::fs::read_to_string(path) {
                    break NcclId::from_hex(&s)?;
                }
                if t.elapsed().as_secs() > 120 {
                    return Err(Error::Collective(format!(
                        "no NCCL id in {} after 120 s (is rank 0 running?)",
                        path.display()
                    )));
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        }
    } else {
        return Err(Error::external(format!(
            "give the ranks an NCCL id: --id-file PATH or {ID_ENV}"
        )));
    };
    let lengths = equal_shards(n, world);
    let start = lengths[..rank].iter().sum::<u64>() as usize;
    let len = lengths[rank] as usize;
    let hash = |i: u64| {
        let mut z = (i ^ seed).wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let f: Vec<f32> = (start..start + len)
        .map(|i| (hash(i as u64) >> 40) as f32 / (1u64 << 23) as f32 - 1.0)
        .collect();
    let x: Vec<i32> = (start..start + len)
        .map(|i| (hash(i as u64) % 201) as i32 - 100)
        .collect();
    let ex = NcclExchange::new(&ctx, rank, world, id)?;
    let m = MultiContext::rank(ctx, rank, Box::new(ex))?;
    let mut b = m.alloc_zeros::<f32>(&lengths)?;
    m.htod_local(&[&f], &mut b)?;
    let sum = m.reduce(&b, Reduction::Sum)?;
    let t = Instant::now();
    let sum2 = m.reduce(&b, Reduction::Sum)?;
    let ms = t.elapsed().as_secs_f64() * 1e3;
    let max = m.argmax(&b)?;
    let mut s = m.alloc_zeros::<i32>(&lengths)?;
    m.htod_local(&[&x], &mut s)?;
    m.scan_in_place(&mut s, Reduction::Sum, ScanKind::Inclusive)?;
    let scanned = m.dtoh_local(&s)?.remove(0);
    let check = scanned.iter().fold(0u64, |h, &v| {
        (h ^ v as u32 as u64).wrapping_mul(0x100_0000_01b3)
    });
    let last = scanned.last().copied();
    Ok(format!(
        "rank {rank}/{world}: f32 sum {sum:e} bits {:#010x} (again: {}), {ms:.3} ms; argmax {max:?}; \
         i32 scan of elements {start}..{}: last {last:?}, FNV {check:#018x}",
        sum.to_bits(),
        if sum2.to_bits() == sum.to_bits() {
            "same"
        } else {
            "OTHER"
        },
        start + len
    ))
}
