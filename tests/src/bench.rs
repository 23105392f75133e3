//! The benchmark sweep's code path, run small: every measurement checked, the JSON report
//! reads back to the same sweep, the Markdown table and the figures are written.

use gpu_reduce::Context;
use gpu_reduce_tools::bench::{self, Dtype, Op, SweepConfig};

/// Run a tiny sweep on `ctx` into `dir` and check what comes out.
pub fn check_bench_sweep(ctx: &Context, dir: &std::path::Path, sizes: &[u64], ladder: bool) {
    let config = SweepConfig {
        ops: vec![Op::Reduce, Op::Scan],
        dtypes: vec![Dtype::F32, Dtype::I32, Dtype::F64],
        sizes: sizes.to_vec(),
        iters: 2,
        warmup: 1,
        ladder,
        seed: 7,
    };
    let mut messages = 0;
    let mut steps = 0;
    let sweep =
        bench::run_sweep(ctx, None, &config, "test", |_| messages += 1, || steps += 1).unwrap();
    assert_eq!(steps, sizes.len() * 3, "one step per size and type");
    assert!(messages >= steps);
    // Per size and type: copy, stream, reduce (on the device and returned to the host), scan,
    // and with `ladder` the ladder's kernels.
    for &n in sizes {
        for dt in ["f32", "i32", "f64"] {
            let here = |f: bench::Family| {
                sweep
                    .measurements
                    .iter()
                    .filter(|m| m.n == n && m.dtype == dt && m.family == f)
                    .count()
            };
            // (and back to back, for small n)
            let small = usize::from(n <= 1 << 16);
            assert_eq!(here(bench::Family::Ours), 3 + small, "{dt} n={n}");
            assert_eq!(here(bench::Family::Limit), 2, "{dt} n={n}");
            assert_eq!(here(bench::Family::Ladder) > 0, ladder, "{dt} n={n}");
            assert_eq!(here(bench::Family::Cub), 0, "no CUB given");
        }
    }
    for m in &sweep.measurements {
        assert!(
            m.checked,
            "{} {} n={} did not check",
            m.method, m.dtype, m.n
        );
        assert!(m.median_ms.is_finite() && m.median_ms >= 0.0, "{m:?}");
    }
    for (op, method) in [
        ("reduce", "ours"),
        ("reduce to host", "ours"),
        ("scan", "ours"),
        ("memory", "device copy"),
        ("memory", "read-only"),
    ] {
        for &n in sizes {
            assert!(
                sweep
                    .measurements
                    .iter()
                    .any(|m| m.op == op && m.n == n && m.method.starts_with(method)),
                "{op} {method} n={n} missing"
            );
        }
    }

    std::fs::create_dir_all(dir).unwrap();
    let json = dir.join("results.json");
    bench::report::write_json(&sweep, &json).unwrap();
    let back = bench::report::read_json(&json).unwrap();
    assert_eq!(back.measurements.len(), sweep.measurements.len());
    assert_eq!(back.machine.device, sweep.machine.device);
    assert_eq!(back.config.sizes, sizes);
    let md = bench::report::markdown(&sweep);
    assert!(
        md.contains("| reduce | f32 |") && md.contains("| scan | i32 |"),
        "{md}"
    );
    assert!(!md.contains("| WRONG |"), "{md}");
    // No CUB here: the column says so instead of staying empty.
    assert!(md.contains("| not available |"), "{md}");
    let files = bench::plot::write_plots(&sweep, dir).unwrap();
    assert!(!files.is_empty());
    for f in &files {
        let bytes = std::fs::read(f).unwrap();
        if f.extension().is_some_and(|e| e == "png") {
            assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "{}", f.display());
        } else {
            let text = String::from_utf8(bytes).unwrap();
            assert!(
                text.contains("<svg") && text.trim_end().ends_with("</svg>"),
                "{}",
                f.display()
            );
        }
    }
    // A time figure per op and type at least.
    for op in ["reduce", "scan"] {
        for dt in ["f32", "i32", "f64"] {
            assert!(
                dir.join(format!("{op}-{dt}-time.svg")).exists(),
                "{op} {dt}"
            );
        }
    }
}

/// A fresh scratch folder under the system's temp dir.
pub fn scratch_dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("gpu-reduce-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// The sweep's f16/bf16 rows on `ctx` (no CUB): our sum and scan and the limits, all checked,
/// and the report's note on what the 16-bit rows compare.
pub fn check_bench_sweep_half(ctx: &Context, dir: &std::path::Path, sizes: &[u64]) {
    let config = SweepConfig {
        ops: vec![Op::Reduce, Op::Scan],
        dtypes: vec![Dtype::F16, Dtype::Bf16],
        sizes: sizes.to_vec(),
        iters: 2,
        warmup: 1,
        ladder: false,
        seed: 9,
    };
    let sweep = bench::run_sweep(ctx, None, &config, "test", |_| {}, || {}).unwrap();
    for &n in sizes {
        for dt in ["f16", "bf16"] {
            let here = |op: &str, f: bench::Family| {
                sweep
                    .measurements
                    .iter()
                    .filter(|m| m.n == n && m.dtype == dt && m.op == op && m.family == f)
                    .count()
            };
            assert_eq!(here("reduce", bench::Family::Ours), 1, "{dt} n={n}");
            assert_eq!(here("scan", bench::Family::Ours), 1, "{dt} n={n}");
            // The read-only stream reads whole 32-bit words: even n only.
            let limits = 1 + usize::from(n % 2 == 0);
            assert_eq!(here("memory", bench::Family::Limit), limits, "{dt} n={n}");
        }
    }
    for m in &sweep.measurements {
        assert!(
            m.checked,
            "{} {} n={} did not check",
            m.method, m.dtype, m.n
        );
    }
    let md = bench::report::markdown(&sweep);
    assert!(
        md.contains("| reduce | f16 |") && md.contains("| scan | bf16 |"),
        "{md}"
    );
    assert!(
        md.contains("f16/bf16: our sum and scan accumulate in f32"),
        "{md}"
    );
    assert!(!md.contains("| WRONG |"), "{md}");
    std::fs::create_dir_all(dir).unwrap();
    assert!(!bench::plot::write_plots(&sweep, dir).unwrap().is_empty());
    assert!(dir.join("scan-bf16-time.svg").exists());
}

/// The multi-GPU ops of the sweep (`multi-reduce`, `multi-scan`): one rank and all ranks at
/// each size, every row checked (on the simulator: two simulated devices).
pub fn check_bench_multi(ctx: &Context, sizes: &[u64]) {
    let config = SweepConfig {
        ops: vec![Op::MultiReduce, Op::MultiScan],
        dtypes: vec![Dtype::F32],
        sizes: sizes.to_vec(),
        iters: 2,
        warmup: 1,
        ladder: false,
        seed: 7,
    };
    let sweep = bench::run_sweep(ctx, None, &config, "test", |_| {}, || {}).unwrap();
    for &n in sizes {
        for op in ["multi-GPU sum", "multi-GPU scan"] {
            let rows: Vec<_> = sweep
                .measurements
                .iter()
                .filter(|m| m.n == n && m.op == op)
                .collect();
            // The scan: in place and deferred at each rank count.
            let per = if op == "multi-GPU scan" { 2 } else { 1 };
            assert_eq!(rows.len(), 2 * per, "{op} n={n}: one rank and all ranks");
            if per == 2 {
                assert!(
                    rows.iter()
                        .zip(["in place", "deferred"].iter().cycle())
                        .all(|(m, form)| m.method.contains(form)),
                    "{op} n={n}: in place, then deferred"
                );
            }
            assert!(rows.iter().all(|m| m.checked), "{op} n={n}");
            // The simulator's ranks are named as such (and as one device, not "devices").
            let one = if ctx.backend_kind() == gpu_reduce::BackendKind::Sim {
                "sharded over 1 simulated device:"
            } else {
                "sharded over 1 GPU(s):"
            };
            assert!(rows[0].method.starts_with(one), "{}", rows[0].method);
        }
    }
}
