//! `host`: the command-line face of the library. A thin layer: parse, call, print.

use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use gpu_reduce::{BackendKind, Context};
use gpu_reduce_tools::{cpu, stats};
use rand::{Rng, SeedableRng, rngs::SmallRng};

#[derive(Parser)]
#[command(
    name = "host",
    version,
    about = "GPU reductions and scans, kernels written in Rust"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Where kernels run.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum BackendArg {
    /// A CUDA GPU (error when there is none).
    Cuda,
    /// The CPU SIMT simulator.
    Sim,
    /// The GPU when a driver and a device are present, the simulator otherwise.
    Auto,
}

#[derive(Subcommand)]
enum Command {
    /// Sum random f32 data on the GPU in one launch, check it against an f64 CPU sum, time it.
    Reduce {
        /// Number of elements [default: 2^26 on a GPU, 2^20 on the simulator].
        #[arg(long)]
        n: Option<u64>,
        /// Timed runs, the median is reported [default: 100 on a GPU, 3 on the simulator].
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
        iters: Option<u32>,
        /// Untimed warm-up runs [default: 10 on a GPU, 1 on the simulator].
        #[arg(long)]
        warmup: Option<u32>,
        /// CUDA device ordinal.
        #[arg(long, default_value_t = 0)]
        device: usize,
        /// Where to run: cuda, sim, or auto (GPU if present, else the simulator).
        #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
        backend: BackendArg,
        /// Seed of the random input (random when absent).
        #[arg(long)]
        seed: Option<u64>,
        /// Run the seeds' kernel ladder instead and print its table.
        #[arg(long)]
        ladder: bool,
        /// Element type of the ladder.
        #[arg(long, value_enum, default_value_t = gpu_reduce_tools::ladder::LadderDtype::F32)]
        dtype: gpu_reduce_tools::ladder::LadderDtype,
        /// Shard the input over this many GPUs (ranks 0..N, one process) and compare with one
        /// GPU holding the same total; prints per-GPU and total bandwidth. With
        /// `--backend sim`, simulated devices.
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
        gpus: Option<u32>,
        /// With --gpus: fill --n ones on the devices instead of random host data (for arrays
        /// beyond host or one GPU's memory), check the f32 sum and an i32 scan in place.
        #[arg(long, requires = "gpus")]
        ones: bool,
    },
    /// Seed 003's table: BIT, BCAO and the decoupled look-back scan (and CUB when its shim is
    /// given) on the same input, each checked against a CPU scan, times over lengths.
    Scan {
        /// Lengths [default: 100,1e3,...,1e9 (those that fit) on a GPU; 100,1e3,1e4 on the
        /// simulator]. Accepts 1e6-style values.
        #[arg(long, value_delimiter = ',', value_parser = parse_len)]
        n: Vec<u64>,
        /// Element type.
        #[arg(long, value_enum, default_value_t = gpu_reduce_tools::ladder::LadderDtype::I32)]
        dtype: gpu_reduce_tools::ladder::LadderDtype,
        /// Rows to run (the others say n/a).
        #[arg(long, value_delimiter = ',', value_enum, default_values_t = gpu_reduce_tools::scan_table::Method::ALL)]
        methods: Vec<gpu_reduce_tools::scan_table::Method>,
        /// Timed runs per cell [default: 100 up to 1e7 elements, 20 above; 2 on the simulator].
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
        iters: Option<u32>,
        /// CUDA device ordinal.
        #[arg(long, default_value_t = 0)]
        device: usize,
        /// Where to run: cuda, sim, or auto (GPU if present, else the simulator).
        #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
        backend: BackendArg,
        /// The CUB shim (built by host/cub/build.sh); without it the CUB row says n/a.
        #[arg(long, env = "GPU_REDUCE_CUB_LIB")]
        cub_lib: Option<std::path::PathBuf>,
        /// Seed of the random input.
        #[arg(long, default_value_t = 3)]
        seed: u64,
        /// Also write the table to this file.
        #[arg(long)]
        out: Option<std::path::PathBuf>,
        /// Shard the input over this many GPUs (ranks 0..N, one process) and compare with one
        /// GPU holding the same total; prints per-GPU and total bandwidth. With
        /// `--backend sim`, simulated devices.
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
        gpus: Option<u32>,
    },
    /// One rank of a job with one process per GPU over NCCL: reduce and scan a logical array
    /// (each element a hash of its index) sharded in equal pieces; prints this rank's view
    /// (every rank, and any number of ranks, prints the same sum bits).
    Rank {
        /// This process's rank.
        #[arg(long)]
        rank: usize,
        /// Ranks of the job.
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        world: u64,
        /// Elements of the logical array.
        #[arg(long, value_parser = parse_len, default_value = "268435456")]
        n: u64,
        /// CUDA device [default: the rank].
        #[arg(long)]
        device: Option<usize>,
        /// File through which rank 0 hands the NCCL id to the others (else GPU_REDUCE_NCCL_ID).
        #[arg(long)]
        id_file: Option<std::path::PathBuf>,
        /// Seed of the array's hash.
        #[arg(long, default_value_t = 7)]
        seed: u64,
    },
    /// Print the CUDA devices and the embedded PTX's target; with --verbose, also what the
    /// first calls cost in this process (context, kernel loads and JIT, first sum, first scan).
    Info {
        /// Time a first sum and a first scan on --device and print what loading cost.
        #[arg(long)]
        verbose: bool,
        /// CUDA device ordinal for --verbose.
        #[arg(long, default_value_t = 0)]
        device: usize,
    },
    /// Benchmark sweep: our reduce and scan (and the reduction ladder) against CUB and the
    /// memory limit (device copy, read-only stream); writes results.json, results.md and plots.
    Bench {
        /// Operations to sweep.
        #[arg(long, value_delimiter = ',', value_enum, default_values_t = [gpu_reduce_tools::bench::Op::Reduce, gpu_reduce_tools::bench::Op::Scan])]
        ops: Vec<gpu_reduce_tools::bench::Op>,
        /// Element types.
        #[arg(long, value_delimiter = ',', value_enum, default_values_t = [gpu_reduce_tools::bench::Dtype::F32, gpu_reduce_tools::bench::Dtype::I32])]
        dtypes: Vec<gpu_reduce_tools::bench::Dtype>,
        /// Sizes: numbers (1000, 1e6, 2^20) and power-of-two ranges (2^10..2^30), comma
        /// separated [default: 2^10..2^28 on a GPU, 2^10..2^12 on the simulator].
        #[arg(long, value_parser = parse_sizes_arg)]
        sizes: Option<SizeList>,
        /// Also run the seeds' reduction ladder at every size.
        #[arg(long)]
        ladder: bool,
        /// Timed runs per measurement [default: 100 on a GPU, 3 on the simulator].
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
        iters: Option<u32>,
        /// Untimed warm-up runs [default: 10 on a GPU, 1 on the simulator].
        #[arg(long)]
        warmup: Option<u32>,
        /// The CUB shim (built by tools/cli/cub/build.sh); without it the CUB rows are left out.
        #[arg(long, env = "GPU_REDUCE_CUB_LIB")]
        cub_lib: Option<std::path::PathBuf>,
        /// A CCCL checkout (github.com/NVIDIA/cccl; or the bundle's cccl/): also build a CUB
        /// shim against its headers with nvcc (into OUT/cub-cccl/) and time it too, as
        /// "CUB(cccl)" rows and a "vs CUB(cccl)" column.
        #[arg(long, env = "GPU_REDUCE_CCCL")]
        cccl: Option<std::path::PathBuf>,
        /// CUDA device ordinal.
        #[arg(long, default_value_t = 0)]
        device: usize,
        /// Where to run: cuda, sim, or auto.
        #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
        backend: BackendArg,
        /// Seed of the random inputs.
        #[arg(long, default_value_t = 2026)]
        seed: u64,
        /// Folder for results.json, results.md and the plots (created if missing).
        #[arg(long, default_value = "bench-out")]
        out: std::path::PathBuf,
        /// No progress bar.
        #[arg(long)]
        quiet: bool,
        /// Cap the reductions' physical grid (tuning experiments; never changes a result).
        #[arg(long, hide = true)]
        reduce_grid_limit: Option<u32>,
        /// Run the whole sweep this many times in one process; the reports are of the first,
        /// the speed guard (--save-baseline, --compare) takes each cell's median and range over
        /// all [default: 1; with --compare, the baseline's].
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
        repeat: Option<u32>,
        /// Save a speed baseline to FILE (JSON): for each of our measurements, its speed against
        /// CUB and its share of the memory limit, median and range over the --repeat sweeps
        /// (3 or more recommended).
        /// With --compare, the run is saved as a new baseline too.
        #[arg(long, value_name = "FILE")]
        save_baseline: Option<std::path::PathBuf>,
        /// Run the sweep of a baseline saved by --save-baseline again (its ops, dtypes, sizes,
        /// iters, warm-up, seed and ladder) and compare: exits 1 when a cell is slower than the
        /// baseline by more than the run-to-run spread (at least 1%), or missing or wrong.
        /// Prints the table and writes it to OUT/guard.md.
        #[arg(
            long,
            value_name = "FILE",
            conflicts_with_all = ["ops", "dtypes", "sizes", "ladder", "iters", "warmup", "seed"]
        )]
        compare: Option<std::path::PathBuf>,
        /// With --compare: compare against FILE, another saved baseline (e.g. of a new build,
        /// saved on the same machine), instead of running the sweep; no device is used.
        #[arg(long, value_name = "FILE", requires = "compare")]
        against: Option<std::path::PathBuf>,
        /// With --compare: only the baseline's cells whose name (as the guard prints it, e.g.
        /// "scan bf16 2^24") contains PATTERN, and only their ops, types and sizes are run.
        #[arg(long, value_name = "PATTERN", requires = "compare")]
        cells: Option<String>,
    },
}

/// What the first calls of a fresh process cost on GPU `device`: `Context::new`, a first f32
/// sum of 2^20 elements (upload included), a first f32 inclusive scan, and each kernel load.
fn first_calls(device: usize) -> Result<String, gpu_reduce::Error> {
    use std::fmt::Write as _;
    use std::time::Instant;
    let t0 = Instant::now();
    // The driver's own start (cuInit), then the rest of Context::new (primary context, stream,
    // pinned result slot): the first is the floor no library can go under.
    gpu_reduce::device_count()?;
    let t_init = t0.elapsed().as_secs_f64();
    let ctx = Context::new(device)?;
    let t_ctx = t0.elapsed().as_secs_f64();
    let data: Vec<f32> = (0..1u32 << 20).map(|i| (i % 7) as f32).collect();
    let x = ctx.htod(&data)?;
    let sum = ctx.sum(&x)?;
    let t_sum = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let mut out = ctx.alloc_zeros::<f32>(data.len())?;
    ctx.inclusive_sum(&x, &mut out)?;
    ctx.synchronize()?;
    let t_scan = t1.elapsed().as_secs_f64();
    let t2 = Instant::now();
    let again = ctx.sum(&x)?;
    let t_again = t2.elapsed().as_secs_f64();
    let want: f64 = data.iter().map(|&v| v as f64).sum();
    if sum as f64 != want || again != sum {
        return Err(gpu_reduce::Error::external(format!(
            "first-call check failed: sum {sum}, again {again}, expected {want}"
        )));
    }
    let stats = gpu_reduce::load_stats();
    let mut r = String::new();
    let _ = writeln!(r, "first calls on device {device} (this process):");
    let _ = writeln!(r, "  driver init (cuInit)              {:8.3} s", t_init);
    let _ = writeln!(r, "  Context::new (from the start)     {:8.3} s", t_ctx);
    let _ = writeln!(
        r,
        "  first sum (from the start)        {:8.3} s  (2^20 f32, upload included)",
        t_sum
    );
    let _ = writeln!(
        r,
        "  first scan (after the sum)        {:8.3} s  (2^20 f32 inclusive, synchronized)",
        t_scan
    );
    let _ = writeln!(r, "  second sum                        {:8.6} s", t_again);
    let _ = writeln!(
        r,
        "  kernel loads: {} module(s), {} from SASS, {:.0} kB of PTX JIT-compiled, {:.3} s",
        stats.modules,
        stats.from_sass,
        stats.ptx_bytes as f64 / 1e3,
        stats.seconds
    );
    for (lib, name, secs, sass) in &stats.loads {
        let how = if *sass { "SASS" } else { "PTX JIT" };
        let _ = writeln!(r, "    {lib}/{name}: {secs:.3} s ({how})");
    }
    Ok(r)
}

/// A parsed `--sizes` list.
#[derive(Clone, Debug)]
struct SizeList(Vec<u64>);

fn parse_sizes_arg(s: &str) -> Result<SizeList, String> {
    gpu_reduce_tools::bench::parse_sizes(s).map(SizeList)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode, gpu_reduce::Error> {
    match cli.command {
        Command::Rank {
            rank,
            world,
            n,
            device,
            id_file,
            seed,
        } => {
            let ctx = Context::new(device.unwrap_or(rank))?;
            let n = usize::try_from(n)
                .map_err(|_| gpu_reduce::Error::external(format!("--n {n} does not fit")))?;
            let line = gpu_reduce_tools::multi::run_rank(
                ctx,
                rank,
                world as usize,
                n,
                seed,
                id_file.as_deref(),
            )?;
            println!("{line}");
            Ok(ExitCode::SUCCESS)
        }
        Command::Info { verbose, device } => {
            let lib = &gpu_reduce::BUILTIN;
            println!(
                "PTX target: {} ({} kernels, {:.1} MB of PTX, one module per kernel, loaded on first use; SASS for: {})",
                lib.arch(),
                lib.entries().count(),
                lib.ptx_bytes() as f64 / 1e6,
                match lib.sass_archs() {
                    a if a.is_empty() => "none (JIT from PTX)".to_string(),
                    a => a.join(", "),
                }
            );
            // Timed before anything else touches the driver in this process.
            let first_calls = if verbose {
                Some(first_calls(device)?)
            } else {
                None
            };
            let n = gpu_reduce::device_count()?;
            println!("CUDA devices: {n}");
            for i in 0..n {
                let ctx = Context::new(i)?;
                let d = ctx.info();
                println!(
                    "  [{i}] {} sm_{}{}, {} SMs, L2 {} MiB, {:.1} GiB, driver {}",
                    d.name,
                    d.compute_capability.0,
                    d.compute_capability.1,
                    d.multiprocessors,
                    d.l2_bytes >> 20,
                    d.total_memory as f64 / (1u64 << 30) as f64,
                    d.driver_version
                );
            }
            if let Some(report) = first_calls {
                print!("{report}");
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Bench {
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
        } => {
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
                BenchArgs {
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
        Command::Scan {
            n,
            dtype,
            methods,
            iters,
            device,
            backend,
            cub_lib,
            seed,
            out,
            gpus,
        } => {
            if let Some(g) = gpus {
                let n = n.first().copied().unwrap_or(1 << 28);
                let iters = iters.unwrap_or(20) as usize;
                return multi(
                    backend,
                    g as usize,
                    gpu_reduce_tools::multi::MultiOp::Scan,
                    n,
                    iters,
                    2,
                    seed,
                );
            }
            let ctx = open(backend, device)?;
            scan(
                &ctx,
                ScanArgs {
                    lengths: n,
                    dtype,
                    methods,
                    iters: iters.map(|i| i as usize),
                    cub_lib,
                    seed,
                    out,
                },
            )
        }
        Command::Reduce {
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
        } => {
            if let (Some(g), true) = (gpus, ones) {
                let n = n.unwrap_or(1 << 28);
                let n = usize::try_from(n)
                    .map_err(|_| gpu_reduce::Error::external(format!("--n {n} does not fit")))?;
                let ranks = (0..g as usize)
                    .map(|o| match backend {
                        BackendArg::Sim => Context::sim(),
                        _ => Context::new(o),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                let ok = gpu_reduce_tools::multi::run_ones(ranks, n)?;
                return Ok(if ok {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::FAILURE
                });
            }
            if let Some(g) = gpus {
                let n = n.unwrap_or(1 << 28);
                let iters = iters.unwrap_or(20) as usize;
                let warmup = warmup.unwrap_or(2) as usize;
                let seed = seed.unwrap_or_else(rand::random);
                return multi(
                    backend,
                    g as usize,
                    gpu_reduce_tools::multi::MultiOp::Reduce,
                    n,
                    iters,
                    warmup,
                    seed,
                );
            }
            let ctx = open(backend, device)?;
            let gpu = ctx.backend_kind() == BackendKind::Cuda;
            if ladder {
                // The ladder runs ~15 kernels; on the simulator keep it small.
                let n = n.unwrap_or(if gpu { 1 << 26 } else { 1 << 14 });
                let iters = iters.unwrap_or(if gpu { 100 } else { 1 }) as usize;
                let warmup = warmup.unwrap_or(if gpu { 10 } else { 0 }) as usize;
                let n = usize::try_from(n).map_err(|_| {
                    gpu_reduce::Error::external(format!("--n {n} does not fit in memory"))
                })?;
                let seed = seed.unwrap_or_else(rand::random);
                let rows = gpu_reduce_tools::ladder::run_ladder_seeded(
                    &ctx, n, dtype, iters, warmup, seed,
                )?;
                println!("{}", gpu_reduce_tools::ladder::format_table(&rows));
                return Ok(if rows.iter().all(|r| r.checked) {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::FAILURE
                });
            }
            let n = n.unwrap_or(if gpu { 1 << 26 } else { 1 << 20 });
            let iters = iters.unwrap_or(if gpu { 100 } else { 3 }) as usize;
            let warmup = warmup.unwrap_or(if gpu { 10 } else { 1 }) as usize;
            reduce(&ctx, n, iters, warmup, seed)
        }
    }
}

/// A length: an integer, or `1e6`-style.
fn parse_len(s: &str) -> Result<u64, String> {
    if let Ok(n) = s.parse::<u64>() {
        return Ok(n);
    }
    match s.split_once(['e', 'E']) {
        Some((m, e)) => {
            let (m, e) = (m.parse::<u64>(), e.parse::<u32>());
            match (m, e) {
                (Ok(m), Ok(e)) => 10u64
                    .checked_pow(e)
                    .and_then(|p| p.checked_mul(m))
                    .ok_or_else(|| format!("{s} is too large")),
                _ => Err(format!("{s} is not a length (e.g. 1000000 or 1e6)")),
            }
        }
        None => Err(format!("{s} is not a length (e.g. 1000000 or 1e6)")),
    }
}

/// What `host scan` was asked for.
struct ScanArgs {
    lengths: Vec<u64>,
    dtype: gpu_reduce_tools::ladder::LadderDtype,
    methods: Vec<gpu_reduce_tools::scan_table::Method>,
    iters: Option<usize>,
    cub_lib: Option<std::path::PathBuf>,
    seed: u64,
    out: Option<std::path::PathBuf>,
}

fn scan(ctx: &Context, args: ScanArgs) -> Result<ExitCode, gpu_reduce::Error> {
    let ScanArgs {
        lengths,
        dtype,
        methods,
        iters,
        cub_lib,
        seed,
        out,
    } = args;
    let methods = &methods[..];
    use gpu_reduce_tools::ladder::LadderDtype as D;
    use gpu_reduce_tools::scan_table::{SEED_LENGTHS, run_scan_table};
    let gpu = ctx.backend_kind() == BackendKind::Cuda;
    let lengths = if !lengths.is_empty() {
        lengths
    } else if gpu {
        SEED_LENGTHS.to_vec()
    } else {
        SEED_LENGTHS[..3].to_vec()
    };
    let cub = match (&cub_lib, gpu) {
        (Some(p), true) => match gpu_reduce_tools::cub::Cub::load(p) {
            Ok(c) => Some(c),
            Err(e) => {
                eprintln!("CUB not available ({e}); its row says n/a");
                None
            }
        },
        _ => None,
    };
    let d = ctx.info();
    let mut text = match d.backend {
        BackendKind::Cuda => format!(
            "device: {} (sm_{}{}, {} SMs), CUDA driver {}.{}, PTX {}, CUB {}\n",
            d.name,
            d.compute_capability.0,
            d.compute_capability.1,
            d.multiprocessors,
            d.driver_version / 1000,
            d.driver_version % 1000 / 10,
            gpu_reduce::PTX_ARCH,
            cub.as_ref().map_or(
                "n/a".to_string(),
                |c| gpu_reduce_tools::cub::version_string(c.version())
            )
        ),
        BackendKind::Sim => {
            "backend: simulator (CPU) — times are SIMULATED wall-clock, not GPU times\n".to_string()
        }
    };
    let progress = |m: &str| eprintln!("scan: {m}");
    let table = match dtype {
        D::I32 => {
            run_scan_table::<i32>(ctx, cub.as_ref(), methods, &lengths, iters, seed, progress)?
        }
        D::F32 => {
            run_scan_table::<f32>(ctx, cub.as_ref(), methods, &lengths, iters, seed, progress)?
        }
        D::F64 => {
            run_scan_table::<f64>(ctx, cub.as_ref(), methods, &lengths, iters, seed, progress)?
        }
    };
    text += &table.to_markdown();
    print!("{text}");
    if let Some(p) = out {
        std::fs::write(&p, &text)
            .map_err(|e| gpu_reduce::Error::external(format!("writing {}: {e}", p.display())))?;
    }
    Ok(if table.all_checked() {
        ExitCode::SUCCESS
    } else {
        eprintln!("a scan result did not match the CPU scan");
        ExitCode::FAILURE
    })
}

fn reduce(
    ctx: &Context,
    n: u64,
    iters: usize,
    warmup: usize,
    seed: Option<u64>,
) -> Result<ExitCode, gpu_reduce::Error> {
    let len = usize::try_from(n)
        .map_err(|_| gpu_reduce::Error::external(format!("--n {n} does not fit in memory")))?;
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
            "time: median {:.4} ms over {} runs (min {:.4}, max {:.4}) after {} warm-up; effective bandwidth {:.1} GB/s",
            s.median,
            s.count,
            s.min,
            s.max,
            warmup,
            stats::gb_per_s(bytes, s.median)
        ),
        BackendKind::Sim => println!(
            "time: SIMULATED on the CPU — median {:.1} ms wall clock over {} runs (not a GPU time; no bandwidth figure)",
            s.median, s.count
        ),
    }
    if again.to_bits() != got.to_bits() {
        eprintln!("error: the timed runs returned {again}, the first run {got}: not deterministic");
        return Ok(ExitCode::FAILURE);
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// What `host bench` was asked for.
struct BenchArgs {
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
        "guard: baseline {} ({} sweeps, {}, {}) against {now} ({now_repeat} sweeps, {}, {})\n{}",
        base_path.display(),
        base.repeat,
        base.machine.device,
        base.machine.date,
        now_machine.device,
        now_machine.date,
        c.markdown()
    )
}

fn bench(ctx: &Context, args: BenchArgs) -> Result<ExitCode, gpu_reduce::Error> {
    use gpu_reduce_tools::bench::{self, guard};
    use gpu_reduce_tools::cub::version_string;
    let BenchArgs {
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
            "guard: comparing with the baseline {} ({} sweeps on {}, {}): its ops, types, sizes, \
             iters, warm-up and seed; {repeat} sweeps now",
            p.display(),
            b.repeat,
            b.machine.device,
            b.machine.date
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
                "guard: saved the baseline {} ({} cells over {repeat} sweeps{})",
                p.display(),
                b.cells.len(),
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
                    "guard: {} cells slower; measuring them again ({repeat} sweeps of {:?} \
                     {:?} {:?}) to tell a regression from noise",
                    slower.len(),
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
    Ok(if all_checked && guard_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The first line of `reduce` and `bench`: which backend runs the kernels.
fn backend_line(ctx: &Context) -> String {
    let d = ctx.info();
    match d.backend {
        BackendKind::Cuda => format!(
            "cuda — {} (sm_{}{}, {} SMs), PTX {}",
            d.name,
            d.compute_capability.0,
            d.compute_capability.1,
            d.multiprocessors,
            gpu_reduce::PTX_ARCH
        ),
        BackendKind::Sim => format!(
            "sim — {} (the same kernel source as the PTX; no GPU used)",
            d.name
        ),
    }
}

/// CUB for `bench`: the shim given (`--cub-lib` / `GPU_REDUCE_CUB_LIB`), else the one
/// `tools/cli/cub/build.sh` leaves in the repository, else one built now with nvcc into `out` when
/// nvcc is found; `None` (the report then says "not available") on the simulator or without
/// any of them.
fn find_cub(
    ctx: &Context,
    given: Option<&std::path::Path>,
    out: &std::path::Path,
) -> Option<gpu_reduce_tools::cub::Cub> {
    use gpu_reduce_tools::cub;
    if ctx.backend_kind() != BackendKind::Cuda {
        eprintln!("CUB not available on the simulator: CUB rows left out");
        return None;
    }
    let load = |p: &std::path::Path| match cub::Cub::load(p) {
        Ok(c) => Some(c),
        Err(e) => {
            eprintln!("CUB not available ({e}): CUB rows left out");
            None
        }
    };
    if let Some(p) = given {
        return load(p);
    }
    let repo = cub::default_library_path();
    if repo.is_file() {
        return load(&repo);
    }
    let Some(nvcc) = cub::find_nvcc() else {
        eprintln!("CUB not available (no --cub-lib, no built shim, no nvcc): CUB rows left out");
        return None;
    };
    let (major, minor) = ctx.info().compute_capability;
    let arch = format!("sm_{major}{minor}");
    eprintln!(
        "building the CUB shim with {} for {arch} ...",
        nvcc.display()
    );
    match cub::build_shim(&nvcc, &out.join("cub"), &arch, None) {
        Ok(p) => load(&p),
        Err(e) => {
            eprintln!("CUB not available ({e}): CUB rows left out");
            None
        }
    }
}

/// The second CUB of `bench --cccl DIR`: a shim built now with nvcc against the CCCL checkout
/// `dir` into `out/cub-cccl/`, and checked to hold the checkout's CUB_VERSION; `None`, with
/// the reason on stderr, when it cannot be had (the other columns are unaffected).
fn find_cub_cccl(
    ctx: &Context,
    dir: &std::path::Path,
    out: &std::path::Path,
) -> Option<gpu_reduce_tools::cub::Cub> {
    use gpu_reduce_tools::cub;
    let unavailable = |why: &dyn std::fmt::Display| {
        eprintln!("CUB(cccl) not available ({why}): CUB(cccl) rows left out");
    };
    if ctx.backend_kind() != BackendKind::Cuda {
        unavailable(&"simulator");
        return None;
    }
    let includes = match cub::cccl_include_dirs(dir) {
        Ok(i) => i,
        Err(e) => {
            unavailable(&e);
            return None;
        }
    };
    let want = cub::cccl_cub_version(&includes);
    let Some(nvcc) = cub::find_nvcc() else {
        unavailable(&"no nvcc on PATH or in $CUDA_HOME/bin");
        return None;
    };
    let (major, minor) = ctx.info().compute_capability;
    let arch = format!("sm_{major}{minor}");
    eprintln!(
        "building the CUB shim against the CCCL checkout {} (CUB {}) with {} for {arch} ...",
        dir.display(),
        want.map_or("of unknown version".into(), cub::version_string),
        nvcc.display()
    );
    let started = std::time::Instant::now();
    let lib = match cub::build_shim(&nvcc, &out.join("cub-cccl"), &arch, Some(dir)) {
        Ok(p) => p,
        Err(e) => {
            unavailable(&e);
            return None;
        }
    };
    eprintln!("built {} in {:.0?}", lib.display(), started.elapsed());
    match cub::Cub::load(&lib) {
        Ok(c) if want.is_some_and(|w| w != c.version()) => {
            unavailable(&format!(
                "{} holds CUB_VERSION {}, the checkout {}: the toolkit's headers were used",
                lib.display(),
                c.version(),
                want.unwrap_or_default()
            ));
            None
        }
        Ok(c) => match gpu_reduce_tools::bench::cub_works(ctx, &c) {
            Ok(()) => Some(c),
            Err(e) => {
                unavailable(&format!(
                    "{} fails a first sum and scan: {e}",
                    lib.display()
                ));
                None
            }
        },
        Err(e) => {
            unavailable(&e);
            None
        }
    }
}

/// The context `--backend` and `--device` ask for.
/// `--gpus N`: the sharded `op` over ranks 0..N against one rank, as a table.
fn multi(
    backend: BackendArg,
    gpus: usize,
    op: gpu_reduce_tools::multi::MultiOp,
    n: u64,
    iters: usize,
    warmup: usize,
    seed: u64,
) -> Result<ExitCode, gpu_reduce::Error> {
    let cuda = match backend {
        BackendArg::Cuda => true,
        BackendArg::Sim => false,
        BackendArg::Auto => gpu_reduce::device_count().unwrap_or(0) > 0,
    };
    if cuda {
        let present = gpu_reduce::device_count()?;
        if present < gpus {
            return Err(gpu_reduce::Error::external(format!(
                "--gpus {gpus} asks for more GPUs than the {present} present"
            )));
        }
    }
    let make = |r: usize| -> Result<Vec<Context>, gpu_reduce::Error> {
        (0..r)
            .map(|o| {
                if cuda {
                    Context::new(o)
                } else {
                    Context::sim()
                }
            })
            .collect()
    };
    let n = usize::try_from(n)
        .map_err(|_| gpu_reduce::Error::external(format!("--n {n} does not fit in memory")))?;
    let what = match op {
        gpu_reduce_tools::multi::MultiOp::Reduce => "f32 sum",
        gpu_reduce_tools::multi::MultiOp::Scan => "i32 inclusive sum",
    };
    println!(
        "{what} of {n} elements sharded over {gpus} {} (equal shards), against one holding all; {iters} timed runs after {warmup}",
        if cuda { "GPUs" } else { "simulated devices" }
    );
    let rows = gpu_reduce_tools::multi::run(&make, op, n, gpus, iters, warmup, seed)?;
    println!("{}", gpu_reduce_tools::multi::format_table(&rows));
    Ok(if rows.iter().all(|r| r.checked) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn open(backend: BackendArg, device: usize) -> Result<Context, gpu_reduce::Error> {
    match backend {
        BackendArg::Cuda => Context::new(device),
        BackendArg::Sim => Context::sim(),
        BackendArg::Auto => Context::auto(device),
    }
}
