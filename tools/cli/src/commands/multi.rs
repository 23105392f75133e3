//! The multi-GPU commands: `host rank` (one rank of an NCCL job) and `--gpus N` of `reduce`
//! and `scan` (sharded over devices of one process).

use std::process::ExitCode;

use gpu_reduce::Context;

use super::{exit_code, length};
use crate::cli::{BackendArg, RankArgs};

pub fn rank(args: RankArgs) -> Result<ExitCode, gpu_reduce::Error> {
    let RankArgs {
        rank,
        world,
        n,
        device,
        id_file,
        seed,
    } = args;
    let ctx = Context::new(device.unwrap_or(rank))?;
    let n = length(n, "")?;
    let line =
        gpu_reduce_tools::multi::run_rank(ctx, rank, world as usize, n, seed, id_file.as_deref())?;
    println!("{line}");
    Ok(ExitCode::SUCCESS)
}

/// Whether `--gpus N` runs on CUDA devices (else on simulated ones), as `--backend` asks:
/// `auto` takes the GPUs when there are any. On CUDA, fewer than `gpus` devices is an error
/// (without any: no driver, or no GPU, as for one device).
pub(super) fn on_cuda(backend: BackendArg, gpus: usize) -> Result<bool, gpu_reduce::Error> {
    let cuda = match backend {
        BackendArg::Cuda => true,
        BackendArg::Sim => false,
        BackendArg::Auto => gpu_reduce::device_count()? > 0,
    };
    if cuda {
        let present = gpu_reduce::device_count()?;
        if present == 0 {
            super::cuda(0)?;
        }
        if present < gpus {
            return Err(gpu_reduce::Error::external(format!(
                "--gpus {gpus} asks for more GPUs than the {present} present"
            )));
        }
    }
    Ok(cuda)
}

/// `gpus` contexts: CUDA devices 0..gpus, or as many simulated devices.
pub(super) fn ranks(cuda: bool, gpus: usize) -> Result<Vec<Context>, gpu_reduce::Error> {
    (0..gpus)
        .map(|o| {
            if cuda {
                Context::new(o)
            } else {
                Context::sim()
            }
        })
        .collect()
}

/// `--gpus N`: the sharded `op` over ranks 0..N against one rank, as a table; `cuda` from
/// [`on_cuda`].
pub(super) fn multi(
    cuda: bool,
    gpus: usize,
    op: gpu_reduce_tools::multi::MultiOp,
    n: u64,
    iters: usize,
    warmup: usize,
    seed: u64,
) -> Result<ExitCode, gpu_reduce::Error> {
    use gpu_reduce_tools::plural;
    let make = |r: usize| ranks(cuda, r);
    let n = length(n, " in memory")?;
    let what = match op {
        gpu_reduce_tools::multi::MultiOp::Reduce => "f32 sum",
        gpu_reduce_tools::multi::MultiOp::Scan => "i32 inclusive sum",
    };
    println!(
        "{what} of {} sharded over {} (equal shards), against one holding all; {} after {} warm-up",
        plural(n as u64, "element"),
        plural(gpus as u64, if cuda { "GPU" } else { "simulated device" }),
        plural(iters as u64, "timed run"),
        warmup
    );
    if !cuda {
        println!("{}", gpu_reduce_tools::multi::SIMULATED);
    }
    let rows = gpu_reduce_tools::multi::run(&make, op, n, gpus, iters, warmup, seed)?;
    println!("{}", gpu_reduce_tools::multi::format_table(&rows, !cuda));
    Ok(exit_code(rows.iter().all(|r| r.checked)))
}
