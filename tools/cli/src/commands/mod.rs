//! Each subcommand's handler, and what they share: the context `--backend` asks for, the
//! backend line, the exit code.

mod bench;
mod find_cub;
mod info;
mod multi;
mod reduce;
mod scan;

use std::process::ExitCode;

use gpu_reduce::{BackendKind, Context};

use crate::cli::{BackendArg, Command};

pub fn run(command: Command) -> Result<ExitCode, gpu_reduce::Error> {
    match command {
        Command::Rank(args) => multi::rank(args),
        Command::Info(args) => info::info(args),
        Command::Bench(args) => bench::bench_command(args),
        Command::Scan(args) => scan::scan_command(args),
        Command::Reduce(args) => reduce::reduce_command(args),
    }
}

/// Success when `ok`, else failure.
fn exit_code(ok: bool) -> ExitCode {
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// `--n` as a length in memory; `why` ends the error message.
fn length(n: u64, why: &str) -> Result<usize, gpu_reduce::Error> {
    usize::try_from(n)
        .map_err(|_| gpu_reduce::Error::external(format!("--n {n} does not fit{why}")))
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

/// The context `--backend` and `--device` ask for.
fn open(backend: BackendArg, device: usize) -> Result<Context, gpu_reduce::Error> {
    match backend {
        BackendArg::Cuda => Context::new(device),
        BackendArg::Sim => Context::sim(),
        BackendArg::Auto => Context::auto(device),
    }
}
