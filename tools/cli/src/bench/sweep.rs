//! Running the sweep: every size and type, then the fixed-case and multi-GPU ops.

use gpu_reduce::{BackendKind, Context, Error, Result};

use super::measure::case_measurement;
use super::{Cubs, Dtype, Family, Machine, Measurement, Op, Sweep, SweepConfig};
use super::{basic, by_key, extrema, halves, histogram, segmented, select, topk};
use crate::cub::Cub;

/// Run the sweep; `progress` is told what is being measured (one call per measurement).
pub fn run_sweep(
    ctx: &Context,
    cub: Option<&Cub>,
    config: &SweepConfig,
    command: &str,
    progress: impl FnMut(&str),
    step_done: impl FnMut(),
) -> Result<Sweep> {
    let cubs = Cubs {
        toolkit: cub,
        cccl: None,
    };
    run_sweep_cubs(ctx, cubs, config, command, progress, step_done, |_| {})
}

/// [`run_sweep`] timing each of `cubs`' shims (their rows named [`CUB`] and [`CUB_CCCL`]);
/// `note` gets the lines for the log (the f32 scans' [`ScanAccuracy`], which the sweep keeps
/// too) at the end of each size and type.
pub fn run_sweep_cubs(
    ctx: &Context,
    cubs: Cubs<'_>,
    config: &SweepConfig,
    command: &str,
    mut progress: impl FnMut(&str),
    mut step_done: impl FnMut(),
    mut note: impl FnMut(&str),
) -> Result<Sweep> {
    let machine = machine(ctx, cubs, command);
    let mut sweep = Sweep {
        machine,
        config: config.clone(),
        measurements: Vec::new(),
        skipped: Vec::new(),
        scan_accuracy: Vec::new(),
    };
    let basic_ops = [Op::Reduce, Op::Scan, Op::Dot, Op::Variance];
    if config.dtypes.iter().any(|d| d.select_only())
        && config.ops.iter().any(|o| basic_ops.contains(o))
    {
        note(
            "note: u32 and u64 are the compaction's (select) types only: no reduce, scan, dot or variance rows for them",
        );
    }
    for &n in &config.sizes {
        for (i, &dt) in config.dtypes.iter().enumerate() {
            let seed = config.seed ^ (n << 8) ^ i as u64;
            let acc = &mut sweep.scan_accuracy;
            let noted = acc.len();
            let r = match dt {
                Dtype::F32 => {
                    basic::sweep_one::<f32>(ctx, cubs, config, n, seed, &mut progress, acc)
                }
                Dtype::F64 => {
                    basic::sweep_one::<f64>(ctx, cubs, config, n, seed, &mut progress, acc)
                }
                Dtype::I32 => {
                    basic::sweep_one::<i32>(ctx, cubs, config, n, seed, &mut progress, acc)
                }
                Dtype::F16 => {
                    halves::sweep_half::<half::f16>(ctx, cubs, config, n, seed, &mut progress)
                }
                Dtype::Bf16 => {
                    halves::sweep_half::<half::bf16>(ctx, cubs, config, n, seed, &mut progress)
                }
                // The compaction's types: its matrix, below.
                Dtype::U32 | Dtype::U64 => Ok(Vec::new()),
            };
            for a in &sweep.scan_accuracy[noted..] {
                note(&a.to_string());
            }
            match r {
                Ok(m) => sweep.measurements.extend(m),
                Err(Error::OutOfMemory { bytes }) => sweep.skipped.push(format!(
                    "{} n = {n}: does not fit in device memory ({bytes} bytes asked)",
                    dt.name()
                )),
                Err(e) => return Err(e),
            }
            step_done();
        }
    }
    if config.ops.contains(&Op::Segmented) {
        let rows = segmented::segmented_cases(
            ctx,
            cubs,
            config.iters,
            config.warmup,
            config.seed,
            &mut progress,
        )?;
        sweep.measurements.extend(rows);
    }
    if config.ops.contains(&Op::ReduceByKey) {
        let rows = by_key::by_key_cases(
            ctx,
            cubs,
            config.iters,
            config.warmup,
            config.seed,
            &mut progress,
        )?;
        sweep.measurements.extend(rows);
    }
    multi_rows(ctx, config, &mut sweep.measurements)?;
    if config.ops.contains(&Op::ScanByKey) {
        let rows = by_key::scan_by_key_cases(
            ctx,
            cubs,
            config.iters,
            config.warmup,
            config.seed,
            &mut progress,
        )?;
        sweep.measurements.extend(rows);
    }
    if config.ops.contains(&Op::Select) {
        let (rows, skipped) =
            select::select_cases(ctx, cubs, config, &sweep.measurements, &mut progress)?;
        sweep.measurements.extend(rows);
        sweep.skipped.extend(skipped);
    }
    if config.ops.contains(&Op::Histogram) {
        let (rows, skipped) =
            histogram::histogram_cases(ctx, cubs, config, &sweep.measurements, &mut progress)?;
        sweep.measurements.extend(rows);
        sweep.skipped.extend(skipped);
    }
    if config.ops.contains(&Op::Topk) {
        let (rows, skipped) =
            topk::topk_cases(ctx, cubs, config, &sweep.measurements, &mut progress)?;
        sweep.measurements.extend(rows);
        sweep.skipped.extend(skipped);
    }
    if config.ops.contains(&Op::Extrema) {
        let rows = extrema::extrema_cases(ctx, cubs, config, &sweep.measurements, &mut progress)?;
        sweep.measurements.extend(rows);
    }
    Ok(sweep)
}

/// The machine `ctx` runs on, with `cubs`' versions and the command line.
fn machine(ctx: &Context, cubs: Cubs<'_>, command: &str) -> Machine {
    let d = ctx.info();
    Machine {
        backend: match d.backend {
            BackendKind::Cuda => "cuda".into(),
            BackendKind::Sim => "sim".into(),
        },
        device: d.name.clone(),
        compute_capability: format!("{}.{}", d.compute_capability.0, d.compute_capability.1),
        multiprocessors: d.multiprocessors,
        l2_bytes: d.l2_bytes,
        memory_bytes: d.total_memory,
        cuda_driver: if d.driver_version > 0 {
            format!(
                "{}.{}",
                d.driver_version / 1000,
                d.driver_version % 1000 / 10
            )
        } else {
            String::new()
        },
        ptx_arch: gpu_reduce::PTX_ARCH.to_string(),
        cub_version: cubs.toolkit.map(|c| c.version()),
        cub_cccl_version: cubs.cccl.map(|c| c.version()),
        cccl: None,
        date: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        command: command.to_string(),
    }
}

/// The multi-GPU ops' rows at each size, sharded over every GPU present (two simulated
/// devices on the simulator).
fn multi_rows(
    ctx: &Context,
    config: &SweepConfig,
    measurements: &mut Vec<Measurement>,
) -> Result<()> {
    for (op, mop) in [
        (Op::MultiReduce, crate::multi::MultiOp::Reduce),
        (Op::MultiScan, crate::multi::MultiOp::Scan),
    ] {
        if !config.ops.contains(&op) {
            continue;
        }
        let sim = ctx.backend_kind() == BackendKind::Sim;
        let gpus = if sim { 2 } else { gpu_reduce::device_count()? };
        let make = |r: usize| -> Result<Vec<Context>> {
            (0..r)
                .map(|o| if sim { Context::sim() } else { Context::new(o) })
                .collect()
        };
        for &n in &config.sizes {
            let rows = crate::multi::run(
                &make,
                mop,
                n as usize,
                gpus,
                config.iters,
                config.warmup,
                config.seed,
            )?;
            let (name, dtype, bytes) = match mop {
                crate::multi::MultiOp::Reduce => ("multi-GPU sum", "f32", 4 * n),
                crate::multi::MultiOp::Scan => ("multi-GPU scan", "i32", 8 * n),
            };
            for r in rows {
                measurements.push(case_measurement(
                    name,
                    dtype,
                    &if sim {
                        format!(
                            "sharded over {}: {}",
                            crate::plural(r.ranks as u64, "simulated device"),
                            r.note
                        )
                    } else {
                        // As ever on a GPU: the name of saved baselines' cells.
                        format!("sharded over {} GPU(s): {}", r.ranks, r.note)
                    },
                    Family::Ours,
                    n,
                    bytes,
                    &r.times,
                    r.checked,
                    sim,
                ));
            }
        }
    }
    Ok(())
}
