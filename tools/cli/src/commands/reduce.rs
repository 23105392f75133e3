//! `host reduce`: one checked, timed sum; or the seeds' ladder, or sharded over GPUs.

use std::process::ExitCode;

use gpu_reduce::{BackendKind, Context};
use gpu_reduce_tools::{cpu, stats};
use rand::{Rng, SeedableRng, rngs::SmallRng};

use super::{Given, backend_line, exit_code, length, open};
use crate::cli::ReduceArgs;

pub fn reduce_command(args: ReduceArgs, given: &Given) -> Result<ExitCode, gpu_reduce::Error> {
    let ReduceArgs {
        n,
        iters,
        warmup,
        device,
        backend,
        seed,
        ladder,
        dtype,
        gpus,
        ones,
    } = args;
    if let Some(g) = gpus {
        let g = g as usize;
        given.ignore(
            &["device"],
            "does not apply with --gpus (its ranks use devices 0 to N-1)",
        );
        given.ignore(&["ladder", "dtype"], "does not apply with --gpus");
        let cuda = super::multi::on_cuda(backend, g)?;
        let n = n.unwrap_or(if cuda { 1 << 28 } else { 1 << 20 });
        if ones {
            given.ignore(
                &["iters", "warmup", "seed"],
                "does not apply with --ones (one timed call of each, no random data)",
            );
            let n = length(n, "")?;
            let ok = gpu_reduce_tools::multi::run_ones(super::multi::ranks(cuda, g)?, n)?;
            return Ok(exit_code(ok));
        }
        let iters = iters.unwrap_or(if cuda { 20 } else { 3 }) as usize;
        let warmup = warmup.unwrap_or(if cuda { 2 } else { 1 }) as usize;
        let seed = seed.unwrap_or_else(rand::random);
        return super::multi::multi(
            cuda,
            g,
            gpu_reduce_tools::multi::MultiOp::Reduce,
            n,
            iters,
            warmup,
            seed,
        );
    }
    let ctx = open(backend, device)?;
    given.ignore_on_sim(&ctx, backend, &["device"]);
    let gpu = ctx.backend_kind() == BackendKind::Cuda;
    if ladder {
        // The ladder runs ~15 kernels; on the simulator keep it small.
        let n = n.unwrap_or(if gpu { 1 << 26 } else { 1 << 14 });
        let iters = iters.unwrap_or(if gpu { 100 } else { 1 }) as usize;
        let warmup = warmup.unwrap_or(if gpu { 10 } else { 0 }) as usize;
        let n = length(n, " in memory")?;
        let seed = seed.unwrap_or_else(rand::random);
        let rows =
            gpu_reduce_tools::ladder::run_ladder_seeded(&ctx, n, dtype, iters, warmup, seed)?;
        println!("{}", gpu_reduce_tools::ladder::format_table(&rows));
        return Ok(exit_code(rows.iter().all(|r| r.checked)));
    }
    given.ignore(&["dtype"], "applies only with --ladder (the sum is of f32)");
    let n = n.unwrap_or(if gpu { 1 << 26 } else { 1 << 20 });
    let iters = iters.unwrap_or(if gpu { 100 } else { 3 }) as usize;
    let warmup = warmup.unwrap_or(if gpu { 10 } else { 1 }) as usize;
    reduce(&ctx, n, iters, warmup, seed)
}

fn reduce(
    ctx: &Context,
    n: u64,
    iters: usize,
    warmup: usize,
    seed: Option<u64>,
) -> Result<ExitCode, gpu_reduce::Error> {
    let len = length(n, " in memory")?;
    println!("backend: {}", backend_line(ctx));

    let seed = seed.unwrap_or_else(rand::random);
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut data = Vec::new();
    data.try_reserve_exact(len).map_err(|_| {
        gpu_reduce::Error::external(format!("--n {n}: not enough host memory for the input"))
    })?;
    data.extend((0..len).map(|_| rng.random_range(-1.0f32..1.0)));
    let input = ctx.htod(&data)?;

    let got = ctx.sum(&input)? as f64;
    let (want, sum_abs) = cpu::sum_f64(&data);
    let bound = cpu::f32_sum_bound(n, sum_abs);
    let err = (got - want).abs();
    let ok = err <= bound;
    println!(
        "n = {n} f32 (seed {seed}): sum = {got:.6}, f64 CPU sum = {want:.6}, |error| = {err:.3e} (bound {bound:.3e}): {}",
        if ok { "correct" } else { "WRONG" }
    );

    let mut out = ctx.alloc_zeros::<f32>(1)?;
    let times = ctx.time_ms(warmup, iters, || {
        ctx.reduce_into(&input, &mut out, gpu_reduce::Reduction::Sum)
    })?;
    // The timed runs must still give the checked answer (same grid, same order, same bits).
    let again = ctx.dtoh(&out)?[0] as f64;
    let s = stats::summarize(&times).expect("iters >= 1");
    let bytes = n * 4;
    match ctx.backend_kind() {
        BackendKind::Cuda => println!(
            "time: median {:.4} ms over {} (min {:.4}, max {:.4}) after {} warm-up; effective bandwidth {:.1} GB/s",
            s.median,
            gpu_reduce_tools::plural(s.count as u64, "run"),
            s.min,
            s.max,
            warmup,
            stats::gb_per_s(bytes, s.median)
        ),
        BackendKind::Sim => println!(
            "time: SIMULATED on the CPU — median {:.1} ms wall clock over {} (not a GPU time; no bandwidth figure)",
            s.median,
            gpu_reduce_tools::plural(s.count as u64, "run")
        ),
    }
    if again.to_bits() != got.to_bits() {
        eprintln!("error: the timed runs returned {again}, the first run {got}: not deterministic");
        return Ok(ExitCode::FAILURE);
    }
    Ok(exit_code(ok))
}
