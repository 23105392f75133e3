//! `host info`: the devices and the embedded PTX; with --verbose, what the first calls cost.

use std::process::ExitCode;

use gpu_reduce::Context;

use super::Given;
use crate::cli::InfoArgs;

/// Exits 0 on any machine: without a driver or a GPU it lists none and names the simulator.
pub fn info(args: InfoArgs, given: &Given) -> Result<ExitCode, gpu_reduce::Error> {
    let InfoArgs { verbose, device } = args;
    if !verbose {
        given.ignore(&["device"], "applies only with --verbose");
    }
    let lib = &gpu_reduce::BUILTIN;
    println!(
        "PTX target: {} ({} kernels in {} modules, {:.1} MB of PTX embedded as {:.1} MB deflated, inflated and loaded one module at a time on first use; SASS for: {})",
        lib.arch(),
        lib.entries().count(),
        lib.module_count(),
        lib.ptx_bytes() as f64 / 1e6,
        lib.embedded_bytes() as f64 / 1e6,
        match lib.sass_archs() {
            a if a.is_empty() => "none (JIT from PTX)".to_string(),
            a => a.join(", "),
        }
    );
    // Timed before anything else touches the driver in this process.
    let first_calls = if verbose { first_calls(device)? } else { None };
    let n = gpu_reduce::device_count()?;
    println!("CUDA devices: {n}");
    if n == 0 {
        // Why none: the library's error for a first device (no driver, or no GPU).
        if let Err(e) = Context::new(0) {
            println!("  none: {e}");
        }
    }
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
    if n == 0 {
        println!(
            "CPU simulator: available; `--backend sim` runs reduce, scan and bench on it (the \
             default, `--backend auto`, picks it when there is no GPU)"
        );
        if verbose {
            println!("first calls: not timed (no CUDA device)");
        }
    } else {
        println!("CPU simulator: available (`--backend sim`)");
    }
    if let Some(report) = first_calls {
        print!("{report}");
    }
    Ok(ExitCode::SUCCESS)
}

/// What the first calls of a fresh process cost on GPU `device`: `Context::new`, a first f32
/// sum of 2^20 elements (upload included), a first f32 inclusive scan, and each kernel load;
/// `None` on a machine without a CUDA device.
fn first_calls(device: usize) -> Result<Option<String>, gpu_reduce::Error> {
    use std::fmt::Write as _;
    use std::time::Instant;
    let t0 = Instant::now();
    // The driver's own start (cuInit), then the rest of Context::new (primary context, stream,
    // pinned result slot): the first is the floor no library can go under.
    if gpu_reduce::device_count()? == 0 {
        return Ok(None);
    }
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
    Ok(Some(r))
}
