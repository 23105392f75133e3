//! `host scan`: seed 003's table of scans (and CUB's), or sharded over GPUs.

use std::process::ExitCode;

use gpu_reduce::{BackendKind, Context};

use super::{Given, exit_code, open};
use crate::cli::ScanArgs;

pub fn scan_command(args: ScanArgs, given: &Given) -> Result<ExitCode, gpu_reduce::Error> {
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
        let g = g as usize;
        given.ignore(
            &["device"],
            "does not apply with --gpus (its ranks use devices 0 to N-1)",
        );
        given.ignore(
            &["dtype", "methods", "cub_lib", "out"],
            "does not apply with --gpus (it scans i32 with the library's scan and prints its own \
             table)",
        );
        if n.len() > 1 {
            eprintln!(
                "warning: --gpus scans one length: {} of --n used, the others ignored",
                n[0]
            );
        }
        let cuda = super::multi::on_cuda(backend, g)?;
        let n = n
            .first()
            .copied()
            .unwrap_or(if cuda { 1 << 28 } else { 1 << 20 });
        let iters = iters.unwrap_or(if cuda { 20 } else { 3 }) as usize;
        let warmup = if cuda { 2 } else { 1 };
        return super::multi::multi(
            cuda,
            g,
            gpu_reduce_tools::multi::MultiOp::Scan,
            n,
            iters,
            warmup,
            seed,
        );
    }
    let ctx = open(backend, device)?;
    given.ignore_on_sim(&ctx, backend, &["device", "cub_lib"]);
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
        BackendKind::Sim => format!(
            "backend: sim — {} — times are SIMULATED wall-clock, not GPU times; no bandwidth\n",
            d.name
        ),
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
