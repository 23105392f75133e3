//! `host bench`: the sweep against CUB and the memory limit, its reports, and the speed
//! guard (saving a baseline, comparing with one).

use std::process::ExitCode;

use gpu_reduce::{BackendKind, Context};

use super::find_cub::{find_cub, find_cub_cccl};
use super::{Given, backend_line, exit_code, open};
use crate::cli::BenchArgs;
use gpu_reduce_tools::plural;

pub fn bench_command(args: BenchArgs, given: &Given) -> Result<ExitCode, gpu_reduce::Error> {
    let BenchArgs {
        ops,
        dtypes,
        sizes,
        ladder,
        iters,
        warmup,
        cub_lib,
        cccl,
        device,
        backend,
        seed,
        out,
        quiet,
        reduce_grid_limit,
        repeat,
        save_baseline,
        compare,
        against,
        cells,
    } = args;
    use gpu_reduce_tools::bench::guard::{self, Baseline};
    // Read first: a bad file or pattern is an error before any device work.
    let baseline = compare
        .map(|p| {
            let b = Baseline::read(&p)?;
            let b = match &cells {
                Some(pattern) => b.select(pattern)?,
                None => b,
            };
            Ok::<_, gpu_reduce::Error>((p, b))
        })
        .transpose()?;
    if let (Some((p, b)), Some(a)) = (&baseline, against) {
        given.ignore(
            &[
                "device",
                "backend",
                "cub_lib",
                "cccl",
                "repeat",
                "save_baseline",
                "out",
                "quiet",
            ],
            "does not apply with --against (two saved baselines are compared, nothing runs)",
        );
        let now = Baseline::read(&a)?;
        let c = guard::compare(b, &now.machine, now.repeat, &now.cells);
        let against = a.display().to_string();
        print!(
            "{}",
            guard_report(p, b, &against, now.repeat, &now.machine, &c)
        );
        return Ok(if c.passed() {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        });
    }
    let ctx = open(backend, device)?;
    given.ignore_on_sim(&ctx, backend, &["device", "cub_lib", "cccl"]);
    ctx.set_reduce_grid_limit(reduce_grid_limit);
    let gpu = ctx.backend_kind() == BackendKind::Cuda;
    let config = gpu_reduce_tools::bench::SweepConfig {
        ops,
        dtypes,
        sizes: sizes.map_or_else(
            || {
                let top = if gpu { 28 } else { 12 };
                (10..=top).map(|k| 1u64 << k).collect()
            },
            |s| s.0,
        ),
        iters: iters.map_or(if gpu { 100 } else { 3 }, |i| i as usize),
        warmup: warmup.map_or(if gpu { 10 } else { 1 }, |w| w as usize),
        ladder,
        seed,
    };
    let config = baseline.as_ref().map_or(config, |(_, b)| b.config.clone());
    let repeat = repeat.map_or(baseline.as_ref().map_or(1, |(_, b)| b.repeat), |r| {
        r as usize
    });
    let guard = match (save_baseline, baseline) {
        (save, Some((p, b))) => Guard::Compare(p, Box::new(b), save),
        (Some(p), None) => Guard::Save(p),
        (None, None) => Guard::None,
    };
    // An empty GPU_REDUCE_CCCL means none.
    let cccl = cccl.filter(|d| !d.as_os_str().is_empty());
    bench(
        &ctx,
        BenchRun {
            config,
            cub_lib,
            cccl,
            out,
            quiet,
            repeat,
            guard,
        },
    )
}

/// What `host bench` was asked for.
struct BenchRun {
    config: gpu_reduce_tools::bench::SweepConfig,
    cub_lib: Option<std::path::PathBuf>,
    cccl: Option<std::path::PathBuf>,
    out: std::path::PathBuf,
    quiet: bool,
    repeat: usize,
    guard: Guard,
}

/// The speed guard's part in a `host bench`.
enum Guard {
    None,
    /// `--save-baseline FILE`.
    Save(std::path::PathBuf),
    /// `--compare FILE`, read, and where to save this run as a baseline too.
    Compare(
        std::path::PathBuf,
        Box<gpu_reduce_tools::bench::guard::Baseline>,
        Option<std::path::PathBuf>,
    ),
}

/// The guard's report: which baseline against which run, then the comparison's table.
fn guard_report(
    base_path: &std::path::Path,
    base: &gpu_reduce_tools::bench::guard::Baseline,
    now: &str,
    now_repeat: usize,
    now_machine: &gpu_reduce_tools::bench::Machine,
    c: &gpu_reduce_tools::bench::guard::Comparison,
) -> String {
    format!(
        "guard: baseline {} ({}, {}, {}) against {now} ({}, {}, {})\n{}",
        base_path.display(),
        plural(base.repeat as u64, "sweep"),
        base.machine.device,
        base.machine.date,
        plural(now_repeat as u64, "sweep"),
        now_machine.device,
        now_machine.date,
        c.markdown()
    )
}

fn bench(ctx: &Context, args: BenchRun) -> Result<ExitCode, gpu_reduce::Error> {
    use gpu_reduce_tools::bench::{self, guard};
    use gpu_reduce_tools::cub::version_string;
    let BenchRun {
        config,
        cub_lib,
        cccl,
        out,
        quiet,
        repeat,
        guard: mode,
    } = args;
    let (config, out, cccl) = (&config, out.as_path(), cccl.as_deref());
    println!("backend: {}", backend_line(ctx));
    if let Guard::Compare(p, b, _) = &mode {
        println!(
            "guard: comparing with the baseline {} ({} on {}, {}): its ops, types, sizes, \
             iters, warm-up and seed; {} now",
            p.display(),
            plural(b.repeat as u64, "sweep"),
            b.machine.device,
            b.machine.date,
            plural(repeat as u64, "sweep")
        );
    }
    let cub = find_cub(ctx, cub_lib.as_deref(), out);
    let cub_cccl = cccl.and_then(|dir| find_cub_cccl(ctx, dir, out));
    for (label, c) in [(bench::CUB, &cub), (bench::CUB_CCCL, &cub_cccl)] {
        if let Some(c) = c {
            println!(
                "{label}: version {}, {}",
                version_string(c.version()),
                c.path().display()
            );
        }
    }
    std::fs::create_dir_all(out).map_err(|e| {
        gpu_reduce::Error::external(format!("cannot create {}: {e}", out.display()))
    })?;
    let steps = (config.sizes.len() * config.dtypes.len() * repeat) as u64;
    let bar = if quiet {
        indicatif::ProgressBar::hidden()
    } else {
        indicatif::ProgressBar::new(steps)
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{bar:30} {pos}/{len} sizes x types, {elapsed} {msg}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let cubs = bench::Cubs {
        toolkit: cub.as_ref(),
        cccl: cub_cccl.as_ref(),
    };
    let run = |config: &bench::SweepConfig| -> Result<Vec<bench::Sweep>, gpu_reduce::Error> {
        let mut sweeps = Vec::with_capacity(repeat);
        for i in 0..repeat {
            if repeat > 1 {
                bar.suspend(|| println!("sweep {} of {repeat}", i + 1));
            }
            let mut sweep = bench::run_sweep_cubs(
                ctx,
                cubs,
                config,
                &command,
                |m| bar.set_message(m.to_string()),
                || bar.inc(1),
                // Above the bar, and with --quiet (its hidden bar) too.
                |line| bar.suspend(|| println!("{line}")),
            )?;
            if cub_cccl.is_some() {
                sweep.machine.cccl = cccl.map(|d| d.display().to_string());
            }
            sweeps.push(sweep);
        }
        Ok(sweeps)
    };
    let sweeps = run(config)?;
    bar.finish_and_clear();
    let sweep = &sweeps[0];
    let md = bench::report::markdown(sweep);
    let (json_path, md_path) = (out.join("results.json"), out.join("results.md"));
    bench::report::write_json(sweep, &json_path)?;
    std::fs::write(&md_path, &md).map_err(|e| {
        gpu_reduce::Error::external(format!("cannot write {}: {e}", md_path.display()))
    })?;
    let plots = bench::plot::write_plots(sweep, out)?;
    println!("{md}");
    println!(
        "wrote {}, {} and {} plot files in {}{}",
        json_path.display(),
        md_path.display(),
        plots.len(),
        out.display(),
        if repeat > 1 {
            " (of the first sweep)"
        } else {
            ""
        }
    );
    let all_checked = sweeps.iter().all(|s| s.all_checked());
    if !all_checked {
        eprintln!("some results did not match the CPU reference (WRONG in the table)");
    }
    let guard_ok = match mode {
        Guard::None => true,
        // A baseline of wrong results would pass wrong results later.
        Guard::Save(_) if !all_checked => {
            eprintln!("guard: baseline not saved, a check failed");
            false
        }
        Guard::Save(p) => {
            let b = guard::Baseline::from_sweeps(&sweeps)?;
            b.write(&p)?;
            println!(
                "guard: saved the baseline {} ({} over {}{})",
                p.display(),
                plural(b.cells.len() as u64, "cell"),
                plural(repeat as u64, "sweep"),
                if repeat < 3 {
                    "; 3 or more sweeps give a truer spread"
                } else {
                    ""
                }
            );
            true
        }
        Guard::Compare(p, b, save) => {
            if let Some(sp) = save.filter(|_| all_checked) {
                let nb = guard::Baseline::from_sweeps(&sweeps)?;
                nb.write(&sp)?;
                println!("guard: saved this run as the baseline {}", sp.display());
            }
            let now = guard::cell_stats(&sweeps);
            let mut c = guard::compare(&b, &sweep.machine, repeat, &now);
            // Slower cells are measured again (their ops, types and sizes, as many sweeps):
            // a regression is slower both times, noise rarely.
            let slower = c.slower_cells();
            if !slower.is_empty() && all_checked {
                let again_config = guard::config_for(config, &slower);
                println!(
                    "guard: {} slower; measuring them again ({} of {:?} {:?} {:?}) to tell a \
                     regression from noise",
                    plural(slower.len() as u64, "cell"),
                    plural(repeat as u64, "sweep"),
                    again_config.ops,
                    again_config.dtypes,
                    again_config
                        .sizes
                        .iter()
                        .map(|&n| bench::report::size_label(n))
                        .collect::<Vec<_>>()
                );
                bar.reset();
                bar.set_length(
                    (again_config.sizes.len() * again_config.dtypes.len() * repeat) as u64,
                );
                let again = run(&again_config)?;
                bar.finish_and_clear();
                let again_now = guard::cell_stats(&again);
                let ca = guard::compare(&b.only(&slower), &again[0].machine, repeat, &again_now);
                // Its own summary line is not the guard's verdict.
                let table = ca.markdown().replace("guard: ", "measured again: ");
                print!("guard: the slower cells measured again:\n{table}");
                if again.iter().all(|s| s.all_checked()) {
                    c.confirm(&ca);
                } else {
                    eprintln!(
                        "guard: a check failed when measuring again; the first verdicts stand"
                    );
                }
            }
            let text = guard_report(&p, &b, "this run", repeat, &sweep.machine, &c);
            print!("{text}");
            let path = out.join("guard.md");
            std::fs::write(&path, &text).map_err(|e| {
                gpu_reduce::Error::external(format!("cannot write {}: {e}", path.display()))
            })?;
            c.passed()
        }
    };
    Ok(exit_code(all_checked && guard_ok))
}
