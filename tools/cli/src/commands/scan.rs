//! `host scan`: seed 003's table of scans (and CUB's), or sharded over GPUs.

use std::process::ExitCode;

use gpu_reduce::{BackendKind, Context};

use super::{exit_code, open};
use crate::cli::ScanArgs;

pub fn scan_command(args: ScanArgs) -> Result<ExitCode, gpu_reduce::Error> {
    let ScanArgs {
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
    } = args;
    if let Some(g) = gpus {
        let n = n.first().copied().unwrap_or(1 << 28);
        let iters = iters.unwrap_or(20) as usize;
        return super::multi::multi(
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
        ScanTable {
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

/// What `host scan` was asked for.
struct ScanTable {
    lengths: Vec<u64>,
    dtype: gpu_reduce_tools::ladder::LadderDtype,
    methods: Vec<gpu_reduce_tools::scan_table::Method>,
    iters: Option<usize>,
    cub_lib: Option<std::path::PathBuf>,
    seed: u64,
    out: Option<std::path::PathBuf>,
}

fn scan(ctx: &Context, args: ScanTable) -> Result<ExitCode, gpu_reduce::Error> {
    let ScanTable {
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
    if !table.all_checked() {
        eprintln!("a scan result did not match the CPU scan");
    }
    Ok(exit_code(table.all_checked()))
}
