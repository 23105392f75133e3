//! The command line's definitions: every subcommand, flag and default (clap).

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Parser)]
#[command(
    name = "host",
    version,
    about = "GPU reductions and scans, kernels written in Rust"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// Where kernels run.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum BackendArg {
    /// A CUDA GPU (error when there is none).
    Cuda,
    /// The CPU SIMT simulator.
    Sim,
    /// The GPU when a driver and a device are present, the simulator otherwise.
    Auto,
}

#[derive(Subcommand)]
pub enum Command {
    /// Sum random f32 data on the GPU in one launch, check it against an f64 CPU sum, time it.
    Reduce(ReduceArgs),
    /// Seed 003's table: BIT, BCAO and the library's single-pass fixed-order scan (and CUB when its shim is
    /// given) on the same input, each checked against a CPU scan, times over lengths.
    Scan(ScanArgs),
    /// One rank of a job with one process per GPU over NCCL: reduce and scan a logical array
    /// (each element a hash of its index) sharded in equal pieces; prints this rank's view
    /// (every rank, and any number of ranks, prints the same sum bits).
    Rank(RankArgs),
    /// Print the CUDA devices and the embedded PTX's target; with --verbose, also what the
    /// first calls cost in this process (context, kernel loads and JIT, first sum, first scan).
    Info(InfoArgs),
    /// Benchmark sweep: our reduce and scan (and the reduction ladder) against CUB and the
    /// memory limit (device copy, read-only stream); writes results.json, results.md and plots.
    Bench(BenchArgs),
}

// `host reduce`.
#[derive(Args)]
pub struct ReduceArgs {
    /// Number of elements (1000000, 1_000_000, 1e6 or 2^20) [default: 2^26 on a GPU, 2^20 on
    /// the simulator; with --gpus 2^28 on GPUs, 2^20 on the simulator].
    #[arg(long, value_parser = parse_len)]
    pub n: Option<u64>,
    /// Timed runs, the median is reported [default: 100 on a GPU, 3 on the simulator; with
    /// --gpus 20 on GPUs].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub iters: Option<u32>,
    /// Untimed warm-up runs [default: 10 on a GPU, 1 on the simulator; with --gpus 2 on GPUs].
    #[arg(long)]
    pub warmup: Option<u32>,
    /// CUDA device ordinal (a GPU's option: on the simulator, or with --gpus, a warning says it
    /// is ignored).
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// Where to run: cuda, sim, or auto (GPU if present, else the simulator).
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    pub backend: BackendArg,
    /// Seed of the random input (random when absent).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Run the seeds' kernel ladder instead and print its table.
    #[arg(long)]
    pub ladder: bool,
    /// Element type of the ladder (--ladder only).
    #[arg(long, value_enum, default_value_t = gpu_reduce_tools::ladder::LadderDtype::F32)]
    pub dtype: gpu_reduce_tools::ladder::LadderDtype,
    /// Shard the input over this many GPUs (ranks 0..N, one process) and compare with one
    /// GPU holding the same total; prints per-GPU and total bandwidth. With
    /// `--backend sim`, simulated devices.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub gpus: Option<u32>,
    /// With --gpus: fill --n ones on the devices instead of random host data (for arrays
    /// beyond host or one GPU's memory), check the f32 sum and an i32 scan in place.
    #[arg(long, requires = "gpus")]
    pub ones: bool,
}

// `host scan`.
#[derive(Args)]
pub struct ScanArgs {
    /// Lengths [default: 100,1e3,...,1e9 (those that fit) on a GPU; 100,1e3,1e4 on the
    /// simulator; with --gpus one length, 2^28 on GPUs, 2^20 on the simulator]. Each 1000000,
    /// 1_000_000, 1e6 or 2^20.
    #[arg(long, value_delimiter = ',', value_parser = parse_len)]
    pub n: Vec<u64>,
    /// Element type.
    #[arg(long, value_enum, default_value_t = gpu_reduce_tools::ladder::LadderDtype::I32)]
    pub dtype: gpu_reduce_tools::ladder::LadderDtype,
    /// Rows to run (the others say n/a).
    #[arg(long, value_delimiter = ',', value_enum, default_values_t = gpu_reduce_tools::scan_table::Method::ALL)]
    pub methods: Vec<gpu_reduce_tools::scan_table::Method>,
    /// Timed runs per cell [default: 100 up to 1e7 elements, 20 above; 2 on the simulator; with
    /// --gpus 20 on GPUs, 3 on the simulator].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub iters: Option<u32>,
    /// CUDA device ordinal (a GPU's option: on the simulator, or with --gpus, a warning says it
    /// is ignored).
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// Where to run: cuda, sim, or auto (GPU if present, else the simulator).
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    pub backend: BackendArg,
    /// The CUB shim (built by tools/cli/cub/build.sh); without it the CUB row says n/a. GPU
    /// only (given on the simulator: a warning, ignored).
    #[arg(long, env = "GPU_REDUCE_CUB_LIB")]
    pub cub_lib: Option<std::path::PathBuf>,
    /// Seed of the random input.
    #[arg(long, default_value_t = 3)]
    pub seed: u64,
    /// Also write the table to this file.
    #[arg(long)]
    pub out: Option<std::path::PathBuf>,
    /// Shard the input over this many GPUs (ranks 0..N, one process) and compare with one
    /// GPU holding the same total; prints per-GPU and total bandwidth. With
    /// `--backend sim`, simulated devices.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub gpus: Option<u32>,
}

// `host rank`.
#[derive(Args)]
pub struct RankArgs {
    /// This process's rank.
    #[arg(long)]
    pub rank: usize,
    /// Ranks of the job.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub world: u64,
    /// Elements of the logical array.
    #[arg(long, value_parser = parse_len, default_value = "268435456")]
    pub n: u64,
    /// CUDA device [default: the rank].
    #[arg(long)]
    pub device: Option<usize>,
    /// File through which rank 0 hands the NCCL id to the others (else GPU_REDUCE_NCCL_ID).
    #[arg(long)]
    pub id_file: Option<std::path::PathBuf>,
    /// Seed of the array's hash.
    #[arg(long, default_value_t = 7)]
    pub seed: u64,
}

// `host info`.
#[derive(Args)]
pub struct InfoArgs {
    /// Time a first sum and a first scan on --device and print what loading cost.
    #[arg(long)]
    pub verbose: bool,
    /// CUDA device ordinal for --verbose.
    #[arg(long, default_value_t = 0)]
    pub device: usize,
}

// `host bench`.
#[derive(Args)]
pub struct BenchArgs {
    /// Operations to sweep.
    #[arg(long, value_delimiter = ',', value_enum, default_values_t = [gpu_reduce_tools::bench::Op::Reduce, gpu_reduce_tools::bench::Op::Scan])]
    pub ops: Vec<gpu_reduce_tools::bench::Op>,
    /// Element types. u32 and u64 are the compaction's (`--ops select`) only: naming one runs
    /// its matrix, every --sizes size for each of u32, f32 and u64 named (without them select
    /// runs its default cases, u32 at 2^28).
    #[arg(long, value_delimiter = ',', value_enum, default_values_t = [gpu_reduce_tools::bench::Dtype::F32, gpu_reduce_tools::bench::Dtype::I32])]
    pub dtypes: Vec<gpu_reduce_tools::bench::Dtype>,
    /// Sizes: numbers (1000, 1e6, 2^20) and power-of-two ranges (2^10..2^30), comma
    /// separated [default: 2^10..2^28 on a GPU, 2^10..2^12 on the simulator].
    #[arg(long, value_parser = parse_sizes_arg)]
    pub sizes: Option<SizeList>,
    /// Also run the seeds' reduction ladder at every size.
    #[arg(long)]
    pub ladder: bool,
    /// Timed runs per measurement [default: 100 on a GPU, 3 on the simulator].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub iters: Option<u32>,
    /// Untimed warm-up runs [default: 10 on a GPU, 1 on the simulator].
    #[arg(long)]
    pub warmup: Option<u32>,
    /// The CUB shim (built by tools/cli/cub/build.sh); without it the CUB rows are left out.
    #[arg(long, env = "GPU_REDUCE_CUB_LIB")]
    pub cub_lib: Option<std::path::PathBuf>,
    /// A CCCL checkout (github.com/NVIDIA/cccl; or the bundle's cccl/): also build a CUB
    /// shim against its headers with nvcc (into OUT/cub-cccl/) and time it too, as
    /// "CUB(cccl)" rows and a "vs CUB(cccl)" column.
    #[arg(long, env = "GPU_REDUCE_CCCL")]
    pub cccl: Option<std::path::PathBuf>,
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// Where to run: cuda, sim, or auto.
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    pub backend: BackendArg,
    /// Seed of the random inputs.
    #[arg(long, default_value_t = 2026)]
    pub seed: u64,
    /// Folder for results.json, results.md and the plots (created if missing).
    #[arg(long, default_value = "bench-out")]
    pub out: std::path::PathBuf,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
    /// Cap the reductions' physical grid (tuning experiments; never changes a result).
    #[arg(long, hide = true)]
    pub reduce_grid_limit: Option<u32>,
    /// Run the whole sweep this many times in one process; the reports are of the first,
    /// the speed guard (--save-baseline, --compare) takes each cell's median and range over
    /// all [default: 1; with --compare, the baseline's].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: Option<u32>,
    /// Save a speed baseline to FILE (JSON): for each of our measurements, its speed against
    /// CUB and its share of the memory limit, median and range over the --repeat sweeps
    /// (3 or more recommended).
    /// With --compare, the run is saved as a new baseline too.
    #[arg(long, value_name = "FILE")]
    pub save_baseline: Option<std::path::PathBuf>,
    /// Run the sweep of a baseline saved by --save-baseline again (its ops, dtypes, sizes,
    /// iters, warm-up, seed and ladder) and compare: exits 1 when a cell is slower than the
    /// baseline by more than the run-to-run spread (at least 1%), or missing or wrong.
    /// Prints the table and writes it to OUT/guard.md.
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with_all = ["ops", "dtypes", "sizes", "ladder", "iters", "warmup", "seed"]
    )]
    pub compare: Option<std::path::PathBuf>,
    /// With --compare: compare against FILE, another saved baseline (e.g. of a new build,
    /// saved on the same machine), instead of running the sweep; no device is used.
    #[arg(long, value_name = "FILE", requires = "compare")]
    pub against: Option<std::path::PathBuf>,
    /// With --compare: only the baseline's cells whose name (as the guard prints it, e.g.
    /// "scan bf16 2^24") contains PATTERN, and only their ops, types and sizes are run.
    #[arg(long, value_name = "PATTERN", requires = "compare")]
    pub cells: Option<String>,
}

/// A parsed `--sizes` list.
#[derive(Clone, Debug)]
pub struct SizeList(pub Vec<u64>);

fn parse_sizes_arg(s: &str) -> Result<SizeList, String> {
    gpu_reduce_tools::bench::parse_sizes(s).map(SizeList)
}

/// A length: `1000000`, `1_000_000`, `1e6` or `2^20`.
fn parse_len(s: &str) -> Result<u64, String> {
    gpu_reduce_tools::bench::parse_count(s)
}
