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

/// `--gpus N`: the sharded `op` over ranks 0..N against one rank, as a table.
pub(super) fn multi(
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
    let n = length(n, " in memory")?;
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
    Ok(exit_code(rows.iter().all(|r| r.checked)))
}
