//! The guard's tests: cells, baselines and their file, comparisons.

use super::*;
use crate::bench::Measurement;

const N: u64 = 1 << 20;

/// A checked row at 2^20 f32 elements moving 4 MiB, its GB/s from the time unless `sim`.
fn row(op: &str, method: &str, family: Family, ms: f64, sim: bool) -> Measurement {
    crate::bench::case_measurement(op, "f32", method, family, N, 4 << 20, &[ms], true, sim)
}

/// One sweep of ours (reduce, and scan with no CUB row), CUB's reduce, and the limits:
/// ours at `reduce_ms`, CUB at `cub_ms`, the read-only stream at 1 ms.
fn sweep(reduce_ms: f64, cub_ms: f64, backend: &str) -> Sweep {
    let sim = backend == "sim";
    Sweep {
        machine: Machine {
            backend: backend.into(),
            device: "test GPU".into(),
            compute_capability: "9.0".into(),
            multiprocessors: 132,
            l2_bytes: 50 << 20,
            memory_bytes: 80 << 30,
            cuda_driver: "13.0".into(),
            ptx_arch: "sm_90".into(),
            cub_version: Some(300001),
            cub_cccl_version: None,
            cccl: None,
            date: "2026-10-01T00:00:00Z".into(),
            command: "host bench".into(),
        },
        config: SweepConfig {
            ops: vec![super::super::Op::Reduce, super::super::Op::Scan],
            dtypes: vec![super::super::Dtype::F32],
            sizes: vec![N],
            iters: 10,
            warmup: 1,
            ladder: false,
            seed: 5,
        },
        measurements: vec![
            row(
                "memory",
                "device copy (read + write)",
                Family::Limit,
                2.0,
                sim,
            ),
            row("memory", "read-only stream", Family::Limit, 1.0, sim),
            row(
                "reduce",
                "ours: sum (one launch)",
                Family::Ours,
                reduce_ms,
                sim,
            ),
            row("reduce", "CUB DeviceReduce::Sum", Family::Cub, cub_ms, sim),
            row(
                "scan",
                "ours: inclusive sum (one pass)",
                Family::Ours,
                4.0,
                sim,
            ),
        ],
        skipped: vec![],
        scan_accuracy: vec![],
    }
}

fn reduce_cell() -> Cell {
    Cell {
        op: "reduce".into(),
        dtype: "f32".into(),
        n: N,
        method: "ours: sum (one launch)".into(),
    }
}

/// Baseline sweeps: ours at 1.25 ms each time, CUB at 1.30, 1.32, 1.34 ms (vs CUB 1.04,
/// 1.056, 1.072: a spread of 0.032).
fn baseline() -> Baseline {
    Baseline::from_sweeps(&[1.30, 1.32, 1.34].map(|c| sweep(1.25, c, "cuda"))).unwrap()
}

/// [`baseline`] against `sweeps`.
fn against(sweeps: &[Sweep]) -> Comparison {
    let base = baseline();
    compare(&base, &sweeps[0].machine, sweeps.len(), &cell_stats(sweeps))
}

fn verdicts(c: &Comparison, metric: Metric) -> Vec<Verdict> {
    c.lines
        .iter()
        .filter(|l| l.cell == reduce_cell() && l.metric == metric)
        .map(|l| l.verdict)
        .collect()
}

#[test]
fn stats_over_repeats_are_median_min_max() {
    let b = baseline();
    assert_eq!(b.repeat, 3);
    let cells: Vec<&Cell> = b.cells.iter().map(|c| &c.cell).collect();
    assert_eq!(cells.len(), 2, "ours only: {cells:?}");
    assert!(cells.windows(2).all(|w| w[0] < w[1]), "sorted");
    let r = b.cells.iter().find(|c| c.cell == reduce_cell()).unwrap();
    let v = r.vs_cub.unwrap();
    assert!((v.median - 1.32 / 1.25).abs() < 1e-12, "{v:?}");
    assert!((v.lo - 1.30 / 1.25).abs() < 1e-12, "{v:?}");
    assert!((v.hi - 1.34 / 1.25).abs() < 1e-12, "{v:?}");
    // The stream moves 4 MiB in 1 ms, ours in 1.25 ms: 80% every time.
    let l = r.of_limit.unwrap();
    assert!(
        (l.median - 0.8).abs() < 1e-12 && l.spread().abs() < 1e-12,
        "{l:?}"
    );
    assert_eq!((r.runs, r.failed), (3, 0));
    // The scan: no CUB row; its limit is the device copy, at 2 ms against ours at 4.
    let s = b.cells.iter().find(|c| c.cell.op == "scan").unwrap();
    assert_eq!(s.vs_cub, None);
    assert!((s.of_limit.unwrap().median - 0.5).abs() < 1e-12, "{s:?}");
    // An even count takes the middle two's mean.
    let st = Stat::of(&[4.0, 1.0, 3.0, 2.0]).unwrap();
    assert_eq!((st.median, st.lo, st.hi), (2.5, 1.0, 4.0));
    assert_eq!(Stat::of(&[]), None);
}

#[test]
fn slower_by_more_than_the_spread_is_flagged() {
    // Ours 1.32 ms against CUB's 1.32: vs CUB 1.0, below 1.056 - 0.032; of the limit
    // 1/1.32 = 75.8%, below 80% - 0.8%.
    let c = against(&[sweep(1.32, 1.32, "cuda"), sweep(1.32, 1.32, "cuda")]);
    assert_eq!(verdicts(&c, Metric::VsCub), [Verdict::Slower]);
    assert_eq!(verdicts(&c, Metric::OfLimit), [Verdict::Slower]);
    assert_eq!((c.cells(), c.slower(), c.missing()), (2, 1, 0));
    assert!(!c.passed());
    assert_eq!(c.summary(), "guard: 2 cells, 1 slower, 0 missing -> FAIL");
    let md = c.markdown();
    assert!(md.contains("| reduce f32 2^20 ours: sum (one launch) | vs CUB | 1.056x (1.040x-1.072x) | 1.000x (1.000x-1.000x) | -5.3% | ±3.0% | SLOWER |"), "{md}");
}

#[test]
fn slower_by_less_than_the_spread_is_ok() {
    // Ours at 1.30 and 1.25 ms: vs CUB median 1.036 (1.015-1.056), 0.020 below the
    // baseline, within its spread of 0.032; of the limit 78.5% (76.9-80%), 1.5 points
    // below, more than 1% of the baseline but within this run's own spread of 3.1 points.
    let c = against(&[sweep(1.30, 1.32, "cuda"), sweep(1.25, 1.32, "cuda")]);
    let line = |metric| {
        c.lines
            .iter()
            .find(|l| l.cell == reduce_cell() && l.metric == metric)
            .unwrap()
    };
    let (v, l) = (line(Metric::VsCub), line(Metric::OfLimit));
    let now_spread = 1.056 - 1.32 / 1.30;
    assert!((v.tolerance.unwrap() - now_spread).abs() < 1e-12, "{v:?}");
    assert!(
        (l.tolerance.unwrap() - (0.8 - 1.0 / 1.30)).abs() < 1e-12,
        "{l:?}"
    );
    assert_eq!((v.verdict, l.verdict), (Verdict::Ok, Verdict::Ok));
    assert!(c.passed(), "{}", c.markdown());
    // The baseline's spread alone: ours at 1.30 ms against CUB at 1.35, vs CUB 1.038.
    let c = against(&[sweep(1.30, 1.35, "cuda")]);
    let v = c.lines.iter().find(|l| l.metric == Metric::VsCub).unwrap();
    assert!((v.tolerance.unwrap() - 0.032).abs() < 1e-12, "{v:?}");
    assert_eq!(v.verdict, Verdict::Ok);
    // No spread of the limit's share either side: 1% of the baseline is the tolerance, and
    // ours at 1.26 ms (79.4%) is within it.
    let c = against(&[sweep(1.26, 1.32, "cuda")]);
    let l = c
        .lines
        .iter()
        .find(|l| l.metric == Metric::OfLimit)
        .unwrap();
    assert!((l.tolerance.unwrap() - 0.008).abs() < 1e-12, "{l:?}");
    assert_eq!(l.verdict, Verdict::Ok);
    // Ours at 1.275 ms once: vs CUB 1.035 is within 1.056 - 0.032, but of the limit 78.4%
    // is below 80% - 0.8% (no spread now, 1% of the baseline is the tolerance).
    let c = against(&[sweep(1.275, 1.32, "cuda")]);
    assert_eq!(verdicts(&c, Metric::VsCub), [Verdict::Ok]);
    assert_eq!(verdicts(&c, Metric::OfLimit), [Verdict::Slower]);
}

#[test]
fn slower_once_is_noise_slower_again_a_regression() {
    let base = baseline();
    let c = against(&[sweep(1.32, 1.32, "cuda"), sweep(1.32, 1.32, "cuda")]);
    assert_eq!(c.slower_cells(), [reduce_cell()]);
    let again = |ms: f64| {
        let s = [sweep(ms, 1.32, "cuda")];
        compare(
            &base.only(&c.slower_cells()),
            &s[0].machine,
            1,
            &cell_stats(&s),
        )
    };
    // Measured again at the baseline's speed: noise, a pass.
    let a = again(1.25);
    assert_eq!(a.cells(), 1, "only the slower cell: {}", a.markdown());
    let mut noise = c.clone();
    noise.confirm(&a);
    assert_eq!(verdicts(&noise, Metric::VsCub), [Verdict::SlowerOnce]);
    assert_eq!(verdicts(&noise, Metric::OfLimit), [Verdict::SlowerOnce]);
    assert!(noise.passed());
    assert_eq!(
        noise.summary(),
        "guard: 2 cells, 0 slower (1 more slower once, not when measured again), 0 missing \
         -> PASS"
    );
    assert!(
        noise
            .markdown()
            .contains("| slower once, not again (noise) |")
    );
    // Slower again: a regression.
    let mut regression = c.clone();
    regression.confirm(&again(1.32));
    assert_eq!(verdicts(&regression, Metric::VsCub), [Verdict::Slower]);
    assert_eq!(
        regression.summary(),
        "guard: 2 cells, 1 slower, 0 missing -> FAIL"
    );
    // Not measured again (or its check failed there): the first verdict stands.
    let mut s = sweep(1.25, 1.32, "cuda");
    s.measurements.retain(|m| m.op != "reduce");
    let gone = [s];
    let mut missing = c.clone();
    missing.confirm(&compare(
        &base.only(&c.slower_cells()),
        &gone[0].machine,
        1,
        &cell_stats(&gone),
    ));
    assert_eq!(missing.slower(), 1, "{}", missing.markdown());
    // Slower again in one metric only: still a regression.
    let mut one = c.clone();
    one.confirm(&again(1.275));
    assert_eq!(verdicts(&one, Metric::VsCub), [Verdict::SlowerOnce]);
    assert_eq!(verdicts(&one, Metric::OfLimit), [Verdict::Slower]);
    assert!(!one.passed());
}

#[test]
fn measuring_again_takes_the_slower_cells_ops_types_and_sizes() {
    use super::super::{Dtype, Op};
    let config = SweepConfig {
        ops: vec![Op::Reduce, Op::Scan, Op::Segmented, Op::ScanByKey],
        dtypes: vec![Dtype::F64, Dtype::I32, Dtype::F32],
        sizes: vec![N, 4 * N],
        ..sweep(1.0, 1.0, "cuda").config
    };
    let cell = |op: &str, dtype: &str, n: u64| Cell {
        op: op.into(),
        dtype: dtype.into(),
        n,
        method: "ours".into(),
    };
    let c = config_for(
        &config,
        &[
            cell("reduce to host", "f32", N),
            cell("reduce", "f64", N),
            cell("scan_by_key", "u32+f32", 1 << 27),
        ],
    );
    assert_eq!(c.ops, [Op::Reduce, Op::ScanByKey]);
    assert_eq!(c.dtypes, [Dtype::F64, Dtype::F32], "in the config's order");
    assert_eq!(c.sizes, [N]);
    assert_eq!(
        (c.iters, c.warmup, c.seed),
        (config.iters, config.warmup, config.seed)
    );
    // Only a fixed-size family: no sized sweep at all.
    let c = config_for(&config, &[cell("scan_by_key", "u32+f32", 1 << 27)]);
    assert_eq!(
        (c.ops.as_slice(), c.dtypes.len(), c.sizes.len()),
        ([Op::ScanByKey].as_slice(), 0, 0)
    );
    // A case cut from a size (top-k's rows: 2^28 elements in whole rows of 32,000) is measured
    // again at that size (it was "missing" when measured again, session 24).
    let topk = SweepConfig {
        ops: vec![Op::Reduce, Op::Topk],
        sizes: vec![1 << 24, 1 << 28],
        ..config.clone()
    };
    let c = config_for(&topk, &[cell("topk", "f32", 8388 * 32000)]);
    assert_eq!(
        (c.ops.as_slice(), c.dtypes.as_slice(), c.sizes.as_slice()),
        (
            [Op::Topk].as_slice(),
            [Dtype::F32].as_slice(),
            [1u64 << 28].as_slice()
        )
    );
    // Select's default cases (no u32 or u64 named) run at a size of their own: measured again
    // as they were, not mapped to a sweep size (which would name u32 and run the matrix).
    let select = SweepConfig {
        ops: vec![Op::Select],
        sizes: vec![1 << 24, 1 << 30],
        ..config.clone()
    };
    let c = config_for(&select, &[cell("select", "u32", 1 << 28)]);
    assert_eq!((c.dtypes.len(), c.sizes.len()), (0, 0));
    // An op or type it cannot name keeps them all.
    let c = config_for(&config, &[cell("multi-GPU sum", "f32", N)]);
    assert_eq!(c.ops, config.ops);
    let c = config_for(&config, &[cell("scan", "u8", N)]);
    assert_eq!(c.dtypes, config.dtypes);
    // Select's matrix (a u32 or u64 named) stays the matrix for its f32 cells alone.
    let config = SweepConfig {
        ops: vec![Op::Reduce, Op::Select],
        dtypes: vec![Dtype::U32, Dtype::F32, Dtype::U64, Dtype::I32],
        ..config
    };
    let c = config_for(&config, &[cell("select", "f32", N)]);
    assert_eq!(c.ops, [Op::Select]);
    assert_eq!(c.dtypes, [Dtype::U32, Dtype::F32, Dtype::U64]);
    assert_eq!(c.sizes, [N]);
    let c = config_for(&config, &[cell("reduce", "f32", N)]);
    assert_eq!(c.dtypes, [Dtype::F32], "no select cell: no select type");
}

#[test]
fn faster_is_faster_and_passes() {
    let c = against(&[sweep(1.1, 1.32, "cuda")]);
    assert_eq!(verdicts(&c, Metric::VsCub), [Verdict::Faster]);
    assert_eq!(verdicts(&c, Metric::OfLimit), [Verdict::Faster]);
    assert!(c.passed());
    assert_eq!(c.summary(), "guard: 2 cells, 0 slower, 0 missing -> PASS");
}

#[test]
fn a_missing_cell_or_metric_fails() {
    let mut s = sweep(1.25, 1.32, "cuda");
    s.measurements.retain(|m| m.op != "scan");
    let c = against(&[s]);
    assert_eq!((c.slower(), c.missing()), (0, 1));
    let l = c.lines.iter().find(|l| l.cell.op == "scan").unwrap();
    assert_eq!(
        (l.verdict, l.note.as_deref()),
        (Verdict::Missing, Some("not measured"))
    );
    assert_eq!(c.summary(), "guard: 2 cells, 0 slower, 1 missing -> FAIL");
    // No CUB row now: "vs CUB" cannot be compared, which fails too.
    let mut s = sweep(1.25, 1.32, "cuda");
    s.measurements.retain(|m| m.family != Family::Cub);
    let c = against(&[s]);
    assert_eq!(verdicts(&c, Metric::VsCub), [Verdict::Missing]);
    assert_eq!(verdicts(&c, Metric::OfLimit), [Verdict::Ok]);
    assert!(!c.passed());
    // A cell measured in only one of two sweeps.
    let mut s = sweep(1.25, 1.32, "cuda");
    s.measurements.retain(|m| m.op != "scan");
    let c = against(&[sweep(1.25, 1.32, "cuda"), s]);
    assert_eq!(c.missing(), 1, "{}", c.markdown());
    // A new cell is listed, not failed.
    let mut s = sweep(1.25, 1.32, "cuda");
    s.measurements
        .push(row("dot", "ours: dot", Family::Ours, 1.0, false));
    let c = against(&[s]);
    assert!(c.passed() && c.new_cells.len() == 1, "{}", c.markdown());
}

#[test]
fn a_failed_check_fails() {
    let mut s = sweep(1.25, 1.32, "cuda");
    s.measurements
        .iter_mut()
        .filter(|m| m.family == Family::Ours && m.op == "reduce")
        .for_each(|m| m.checked = false);
    let c = against(&[sweep(1.25, 1.32, "cuda"), s]);
    let l: Vec<&Line> = c.lines.iter().filter(|l| l.cell == reduce_cell()).collect();
    assert_eq!(l.len(), 1);
    assert_eq!(l[0].verdict, Verdict::Missing);
    assert_eq!(l[0].note.as_deref(), Some("check failed in 1 of 2 sweeps"));
    assert!(!c.passed());
}

#[test]
fn across_machines_warns_and_still_compares() {
    let mut s = sweep(1.32, 1.32, "cuda");
    s.machine.device = "other GPU".into();
    s.machine.cub_version = Some(300200);
    let c = against(&[s]);
    assert!(
        c.warnings[0].contains("across machines"),
        "{:?}",
        c.warnings
    );
    assert!(
        c.warnings[1].contains("CUB is 3.0.1, this run's 3.2.0"),
        "{:?}",
        c.warnings
    );
    assert!(
        c.markdown()
            .starts_with("warning: comparing across machines")
    );
    assert_eq!(c.slower(), 1);
}

#[test]
fn on_the_simulator_only_presence_counts() {
    let base = Baseline::from_sweeps(&[sweep(1.25, 1.32, "sim")]).unwrap();
    assert!(base.cells.iter().all(|c| c.of_limit.is_none()), "no GB/s");
    // Ten times slower, simulated: still a pass.
    let now = [sweep(12.5, 1.32, "sim")];
    let c = compare(&base, &now[0].machine, 1, &cell_stats(&now));
    assert!(c.passed(), "{}", c.markdown());
    assert!(c.lines.iter().all(|l| l.metric == Metric::Present));
    assert!(c.warnings.iter().any(|w| w.contains("simulated")));
    let mut s = sweep(1.25, 1.32, "sim");
    s.measurements.retain(|m| m.op != "scan");
    let now = [s];
    let c = compare(&base, &now[0].machine, 1, &cell_stats(&now));
    assert_eq!(c.summary(), "guard: 2 cells, 0 slower, 1 missing -> FAIL");
}

#[test]
fn the_baseline_round_trips_through_json() {
    let b = baseline();
    let path = std::env::temp_dir().join(format!("guard-baseline-{}.json", std::process::id()));
    b.write(&path).unwrap();
    let back = Baseline::read(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    assert_eq!(back, b);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["repeat"], 3);
    assert_eq!(v["cells"][0]["op"], "reduce", "cells flattened, sorted");
    assert_eq!(v["cells"][0]["runs"], 3);
    assert!(v["cells"][0].get("failed").is_none());
    assert_eq!(v["cells"][1]["vs_cub"], serde_json::Value::Null);
    assert_eq!(v["machine"]["device"], "test GPU");
    assert!(Baseline::read(Path::new("/nonexistent/guard.json")).is_err());
}

#[test]
fn select_cuts_cells_and_config() {
    let b = Baseline::from_sweeps(&[sweep(1.0, 1.0, "cuda")]).unwrap();
    let s = b.select("scan f32").unwrap();
    assert_eq!(s.cells.len(), 1);
    assert_eq!(s.cells[0].cell.op, "scan");
    assert_eq!(s.config.ops, vec![super::super::Op::Scan]);
    assert_eq!(s.config.sizes, vec![N]);
    let e = b.select("histogram").unwrap_err().to_string();
    assert!(
        e.contains("no cell of the baseline matches \"histogram\""),
        "{e}"
    );
}
