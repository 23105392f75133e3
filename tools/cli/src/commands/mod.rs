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

pub fn run(command: Command, given: &Given) -> Result<ExitCode, gpu_reduce::Error> {
    match command {
        Command::Rank(args) => multi::rank(args),
        Command::Info(args) => info::info(args, given),
        Command::Bench(args) => bench::bench_command(args, given),
        Command::Scan(args) => scan::scan_command(args, given),
        Command::Reduce(args) => reduce::reduce_command(args, given),
    }
}

/// The options of the subcommand typed on the command line (not defaults, not from the
/// environment), by clap id (the field's name): an option that does not apply to what runs is
/// warned about only when the user gave it.
#[derive(Default)]
pub struct Given(Vec<String>);

impl Given {
    /// Of a subcommand's matches.
    pub fn of(m: &clap::ArgMatches) -> Self {
        Given(
            m.ids()
                .filter(|id| {
                    m.value_source(id.as_str()) == Some(clap::parser::ValueSource::CommandLine)
                })
                .map(|id| id.to_string())
                .collect(),
        )
    }

    /// Whether option `id` (`"cub_lib"` for `--cub-lib`) was typed.
    fn has(&self, id: &str) -> bool {
        self.0.iter().any(|g| g == id)
    }

    /// One `warning:` line on stderr for each of `ids` typed: `--<id> <why>; ignored`.
    fn ignore(&self, ids: &[&str], why: &str) {
        for id in ids.iter().filter(|id| self.has(id)) {
            eprintln!("warning: --{} {why}; ignored", id.replace('_', "-"));
        }
    }

    /// Warn about each of `ids` typed, when `ctx` is the simulator: they are for a GPU.
    fn ignore_on_sim(&self, ctx: &Context, backend: BackendArg, ids: &[&str]) {
        if ctx.backend_kind() == BackendKind::Sim {
            self.ignore(ids, sim_reason(backend));
        }
    }
}

/// Why a GPU's option does not apply: the simulator runs, asked for or chosen by `auto`.
fn sim_reason(backend: BackendArg) -> &'static str {
    match backend {
        BackendArg::Auto => {
            "does not apply to the CPU simulator (--backend auto chose it: no CUDA device here)"
        }
        _ => "does not apply to the CPU simulator (--backend sim)",
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
        BackendArg::Cuda => cuda(device),
        BackendArg::Sim => Context::sim(),
        BackendArg::Auto => Context::auto(device),
    }
}

/// CUDA device `device`; without a driver or a GPU the library's error, with where the
/// simulator is.
fn cuda(device: usize) -> Result<Context, gpu_reduce::Error> {
    Context::new(device).map_err(|e| match e {
        gpu_reduce::Error::NoDriver | gpu_reduce::Error::NoDevice => gpu_reduce::Error::external(
            format!("{e}; `--backend sim` runs on the CPU simulator instead"),
        ),
        e => e,
    })
}
