//! The sweep's reports: `results.json` (everything, machine-readable) and a Markdown table.

use std::path::Path;

use super::{CUB, CUB_CCCL, Family, Measurement, Sweep};
use crate::cub::version_string;
use gpu_reduce::{Error, Result};

fn io_err(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::external(format!("cannot write {}: {e}", path.display()))
}

/// Write `sweep` as pretty JSON.
pub fn write_json(sweep: &Sweep, path: &Path) -> Result<()> {
    let text = serde_json::to_string_pretty(sweep).map_err(|e| io_err(path, e))?;
    std::fs::write(path, text).map_err(|e| io_err(path, e))
}

/// Read a sweep back (what `write_json` wrote).
pub fn read_json(path: &Path) -> Result<Sweep> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::external(format!("cannot read {}: {e}", path.display())))?;
    serde_json::from_str(&text)
        .map_err(|e| Error::external(format!("{} is not a sweep: {e}", path.display())))
}

/// The measurement of `method` (by prefix) in the same op, type and size as `m`.
fn peer<'a>(sweep: &'a Sweep, m: &Measurement, op: &str, prefix: &str) -> Option<&'a Measurement> {
    sweep
        .measurements
        .iter()
        .find(|o| o.op == op && o.dtype == m.dtype && o.n == m.n && o.method.starts_with(prefix))
}

/// The memory limit that applies to `m`: the read-only stream for a reduction (it only reads),
/// the device copy for a scan and for the copy itself (read + write).
pub fn limit_for<'a>(sweep: &'a Sweep, m: &Measurement) -> Option<&'a Measurement> {
    if m.op.starts_with("reduce")
        || m.op == "dot"
        || m.op == "segmented"
        || m.op == "variance"
        || m.op == "histogram"
        || m.op == "topk"
        || m.op == super::extrema::OP
        || m.method.starts_with("read-only")
    {
        peer(sweep, m, "memory", "read-only")
    } else {
        peer(sweep, m, "memory", "device copy")
    }
}

/// The CUB row of `m`'s op, type and size whose method begins with `label` (`CUB` or
/// `CUB(cccl)`, then a space); for a segmented, reduce-by-key, scan-by-key or select row, of
/// the same case too.
fn cub_peer<'a>(sweep: &'a Sweep, m: &Measurement, label: &str) -> Option<&'a Measurement> {
    use super::segmented::case_of;
    sweep.measurements.iter().find(|o| {
        o.op == m.op
            && o.dtype == m.dtype
            && o.n == m.n
            && o.family == Family::Cub
            && o.method
                .strip_prefix(label)
                .is_some_and(|r| r.starts_with(' '))
            && (![
                "segmented",
                "reduce_by_key",
                "scan_by_key",
                "select",
                "histogram",
                super::extrema::OP,
            ]
            .contains(&m.op.as_str())
                || case_of(&o.method) == case_of(&m.method))
    })
}

/// The "vs CUB" ratio: the median of `m`'s CUB row of `label` over `m`'s (> 1: `m` is faster);
/// `None` without such a row.
pub(crate) fn vs_cub(sweep: &Sweep, m: &Measurement, label: &str) -> Option<f64> {
    cub_peer(sweep, m, label).map(|c| c.median_ms / m.median_ms)
}

/// The "% of memory limit" share: `m`'s GB/s over its limit's ([`limit_for`]), as a fraction;
/// `None` on the simulator (no GB/s), without a limit row, or for the device copy itself.
pub(crate) fn of_limit(sweep: &Sweep, m: &Measurement) -> Option<f64> {
    match (m.gb_per_s, limit_for(sweep, m).and_then(|l| l.gb_per_s)) {
        (Some(g), Some(l)) if m.op != "memory" || m.method.starts_with("read-only") => Some(g / l),
        _ => None,
    }
}

/// Which CUB the header names: `3.0.1` (its CUB_VERSION as major.minor.patch), and the one built
/// against a CCCL checkout when there is one.
fn cub_versions(m: &super::Machine) -> String {
    let mut s = m
        .cub_version
        .map_or("not available".to_string(), version_string);
    if let Some(v) = m.cub_cccl_version {
        s.push_str(&format!(" · {CUB_CCCL} {}", version_string(v)));
        if let Some(dir) = &m.cccl {
            s.push_str(&format!(" (from {dir})"));
        }
    }
    s
}

/// The Markdown report: a header naming the machine, then one table row per measurement with
/// the ratio to CUB (CUB's median / this one's: > 1 is faster) and to the memory limit. When
/// a second CUB built against a CCCL checkout ran, a "vs CUB(cccl)" column gives the ratio to
/// it, and its own rows' "vs CUB" column compares it with the toolkit's CUB.
pub fn markdown(sweep: &Sweep) -> String {
    let m = &sweep.machine;
    let sim = m.backend == "sim";
    let cccl = m.cub_cccl_version.is_some();
    // The simulator has no compute capability, SMs, L2, driver or PTX of its own: it is named.
    let device = if sim {
        format!("device: {} · backend sim", m.device)
    } else {
        format!(
            "device: {} (sm {}, {}, L2 {} MiB) · backend {} · CUDA driver {} · PTX {}",
            m.device,
            m.compute_capability,
            crate::plural(m.multiprocessors as u64, "SM"),
            m.l2_bytes >> 20,
            m.backend,
            if m.cuda_driver.is_empty() {
                "n/a"
            } else {
                &m.cuda_driver
            },
            m.ptx_arch,
        )
    };
    let mut s = format!(
        "{device} · CUB {} · {}\n\
         command: `{}`\n\
         {} after {} warm-up per cell; times in ms (median, and p10-p90 of the runs){}\n\n",
        cub_versions(m),
        m.date,
        m.command,
        crate::plural(sweep.config.iters as u64, "timed run"),
        sweep.config.warmup,
        if sim {
            "; SIMULATED: CPU wall-clock times of the simulator, not GPU times (no bandwidth)"
        } else {
            ""
        },
    );
    let (cccl_head, cccl_rule) = if cccl {
        (format!(" vs {CUB_CCCL} |"), "---|")
    } else {
        (String::new(), "")
    };
    s.push_str(&format!(
        "| op | dtype | n | method | median ms | p10-p90 ms | GB/s | vs CUB |{cccl_head} % of memory limit | check |\n\
         |---|---|---|---|---|---|---|---|{cccl_rule}---|---|\n",
    ));
    let mut rows: Vec<&Measurement> = sweep.measurements.iter().collect();
    let op_rank = |o: &str| match o {
        "reduce" => 0,
        "scan" => 1,
        _ => 2,
    };
    rows.sort_by(|a, b| (op_rank(&a.op), &a.dtype, a.n).cmp(&(op_rank(&b.op), &b.dtype, b.n)));
    let ratio = |x: Option<f64>| x.map(|x| format!("{x:.3}x"));
    for r in rows {
        let is_cub = r.family == Family::Cub;
        let is_cccl_cub = is_cub && r.method.starts_with(CUB_CCCL);
        // The toolkit's CUB against everything but itself (the CCCL one included).
        let cub = if (is_cub && !is_cccl_cub) || r.op == "memory" {
            None
        } else {
            vs_cub(sweep, r, CUB)
        };
        let vs_cub_col = match ratio(cub) {
            Some(x) => x,
            // No shim (no nvcc where it ran, or the simulator), or a shim built before the
            // select op's calls: say so rather than leave a gap.
            None if !is_cub
                && r.op != "memory"
                && (m.cub_version.is_none() || r.op == "select") =>
            {
                "not available".into()
            }
            None => String::new(),
        };
        let vs_cccl = if !cccl {
            String::new()
        } else if is_cub || r.op == "memory" {
            " |".into()
        } else {
            format!(
                " {} |",
                ratio(vs_cub(sweep, r, CUB_CCCL)).unwrap_or_default()
            )
        };
        let of_limit_col =
            of_limit(sweep, r).map_or(String::new(), |x| format!("{:.1}%", 100.0 * x));
        let spread = match (r.p10_ms, r.p90_ms) {
            (Some(a), Some(b)) => format!("{a:.4}-{b:.4}"),
            _ => String::new(),
        };
        s.push_str(&format!(
            "| {} | {} | {} | {} | {:.4} | {} | {} | {} |{vs_cccl} {} | {} |\n",
            r.op,
            r.dtype,
            size_label(r.n),
            r.method,
            r.median_ms,
            spread,
            r.gb_per_s.map_or("n/a".into(), |g| format!("{g:.0}")),
            vs_cub_col,
            of_limit_col,
            if r.checked { "ok" } else { "WRONG" }
        ));
    }
    for k in &sweep.skipped {
        s.push_str(&format!("\nskipped: {k}"));
    }
    if !sweep.scan_accuracy.is_empty() {
        s.push_str(
            "\n\nAccuracy of the f32 inclusive sums: the last element (the sum of all n inputs) \
             against the exact sum (f64, compensated), its error also as a share of sum|x| (the \
             scale of the rounding bounds).\n",
        );
        for a in &sweep.scan_accuracy {
            s.push_str(&format!("\n- {a}"));
        }
    }
    if cccl {
        s.push_str(&format!(
            "\n\n{CUB_CCCL} rows: CUB built from the CCCL checkout; their \"vs CUB\" is the \
             toolkit's CUB median / theirs (> 1: the checkout's CUB is faster)."
        ));
    }
    if sweep
        .measurements
        .iter()
        .any(|m| m.dtype == "f16" || m.dtype == "bf16")
    {
        s.push_str(
            "\n\nf16/bf16: our sum and scan accumulate in f32 (the scan rounds each output to the \
             type). Our reduce row's \"vs CUB\" compares with CUB's DeviceReduce::Reduce \
             accumulating in f32 (the same result); CUB's DeviceReduce::Sum and \
             DeviceScan::InclusiveSum accumulate in the 16-bit type (less accurate; their checks \
             are the 16-bit worst-case bounds).",
        );
    }
    s.push_str(
        "\n\nGB/s = bytes the method must move (reduce: read; scan and copy: read + write) / \
         median time. The memory limit of a reduction is the read-only streaming kernel, of a \
         scan the device copy, at the same size and type. Every result was checked against a \
         CPU reference before its time was recorded (WRONG marks a failed check).\n",
    );
    s
}

/// `2^k` for powers of two, else the number.
pub fn size_label(n: u64) -> String {
    if n.is_power_of_two() {
        format!("2^{}", n.trailing_zeros())
    } else {
        n.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::{Machine, SweepConfig};

    fn row(op: &str, method: &str, family: Family, median_ms: f64) -> Measurement {
        Measurement {
            op: op.into(),
            dtype: "f32".into(),
            n: 1 << 20,
            method: method.into(),
            family,
            bytes: 4 << 20,
            median_ms,
            min_ms: None,
            p10_ms: None,
            p90_ms: None,
            max_ms: None,
            runs: 1,
            gb_per_s: None,
            checked: true,
        }
    }

    fn sweep(cub: Option<i32>, cccl: Option<i32>, rows: Vec<Measurement>) -> Sweep {
        Sweep {
            machine: Machine {
                backend: "cuda".into(),
                device: "test".into(),
                compute_capability: "9.0".into(),
                multiprocessors: 1,
                l2_bytes: 0,
                memory_bytes: 0,
                cuda_driver: "13.0".into(),
                ptx_arch: "sm_90".into(),
                cub_version: cub,
                cub_cccl_version: cccl,
                cccl: cccl.map(|_| "/x/cccl".into()),
                date: String::new(),
                command: String::new(),
            },
            config: SweepConfig {
                ops: vec![],
                dtypes: vec![],
                sizes: vec![],
                iters: 1,
                warmup: 0,
                ladder: false,
                seed: 0,
            },
            measurements: rows,
            skipped: vec![],
            scan_accuracy: vec![],
        }
    }

    #[test]
    fn select_rows_compare_by_case_and_say_when_the_shim_lacks_the_call() {
        let s = sweep(
            Some(300001),
            None,
            vec![
                row("select", "select-if 1% kept", Family::Ours, 1.0),
                row("select", "select-if 50% kept", Family::Ours, 1.0),
                row(
                    "select",
                    "CUB DeviceSelect::If: select-if 50% kept",
                    Family::Cub,
                    2.0,
                ),
            ],
        );
        let md = markdown(&s);
        assert!(
            md.contains("| select-if 1% kept | 1.0000 |  | n/a | not available |"),
            "{md}"
        );
        assert!(
            md.contains("| select-if 50% kept | 1.0000 |  | n/a | 2.000x |"),
            "{md}"
        );
    }

    #[test]
    fn one_cub_one_ratio_column_and_its_version() {
        let s = sweep(
            Some(300001),
            None,
            vec![
                row("reduce", "ours: sum", Family::Ours, 1.0),
                row("reduce", "CUB DeviceReduce::Sum", Family::Cub, 1.1),
            ],
        );
        let md = markdown(&s);
        assert!(md.contains("· CUB 3.0.1 ·"), "{md}");
        assert!(!md.contains("CUB(cccl)"), "{md}");
        assert!(
            md.contains("| ours: sum | 1.0000 |  | n/a | 1.100x |  | ok |"),
            "{md}"
        );
        assert!(md.contains("| vs CUB | % of memory limit |"), "{md}");
    }

    #[test]
    fn the_header_names_the_gpu_or_the_simulator() {
        let mut s = sweep(Some(300001), None, vec![]);
        s.machine.multiprocessors = 132;
        let md = markdown(&s);
        assert!(
            md.starts_with(
                "device: test (sm 9.0, 132 SMs, L2 0 MiB) · backend cuda · CUDA driver 13.0 · \
                 PTX sm_90 · CUB 3.0.1 · \n"
            ),
            "{md}"
        );
        assert!(
            md.contains("\n1 timed run after 0 warm-up per cell;"),
            "{md}"
        );
        // The simulator has no compute capability, SMs, L2, driver or PTX: it is named alone.
        s.machine = Machine {
            backend: "sim".into(),
            device: "CPU SIMT simulator (2 worker threads)".into(),
            compute_capability: "0.0".into(),
            multiprocessors: 2,
            cuda_driver: String::new(),
            cub_version: None,
            ..s.machine
        };
        s.config.iters = 3;
        let md = markdown(&s);
        assert!(
            md.starts_with(
                "device: CPU SIMT simulator (2 worker threads) · backend sim · CUB not available · \n"
            ),
            "{md}"
        );
        assert!(
            md.contains("\n3 timed runs after 0 warm-up per cell;"),
            "{md}"
        );
        assert!(md.contains("SIMULATED"), "{md}");
    }

    #[test]
    fn a_cccl_cub_adds_a_column_and_compares_with_the_toolkits() {
        let s = sweep(
            Some(300001),
            Some(300600),
            vec![
                row("reduce", "ours: sum", Family::Ours, 1.0),
                row("reduce", "CUB DeviceReduce::Sum", Family::Cub, 1.2),
                row("reduce", "CUB(cccl) DeviceReduce::Sum", Family::Cub, 0.8),
                row("memory", "read-only stream", Family::Limit, 0.5),
            ],
        );
        let md = markdown(&s);
        assert!(
            md.contains("· CUB 3.0.1 · CUB(cccl) 3.6.0 (from /x/cccl) ·"),
            "{md}"
        );
        assert!(
            md.contains("| vs CUB | vs CUB(cccl) | % of memory limit | check |\n|---|---|---|---|---|---|---|---|---|---|---|"),
            "{md}"
        );
        assert!(
            md.contains("| ours: sum | 1.0000 |  | n/a | 1.200x | 0.800x |  | ok |"),
            "{md}"
        );
        // The checkout's CUB against the toolkit's: 1.2 / 0.8.
        assert!(
            md.contains("| CUB(cccl) DeviceReduce::Sum | 0.8000 |  | n/a | 1.500x | |  | ok |"),
            "{md}"
        );
        assert!(
            md.contains("| CUB DeviceReduce::Sum | 1.2000 |  | n/a |  | |  | ok |"),
            "{md}"
        );
        // Every row has the same number of cells as the header.
        let cells = |l: &str| l.matches('|').count();
        let lines: Vec<&str> = md.lines().filter(|l| l.starts_with('|')).collect();
        assert!(lines.iter().all(|l| cells(l) == cells(lines[0])), "{md}");
    }

    #[test]
    fn only_a_cccl_cub_still_says_the_toolkits_is_missing() {
        let s = sweep(
            None,
            Some(300600),
            vec![
                row("scan", "ours: scan", Family::Ours, 1.0),
                row(
                    "scan",
                    "CUB(cccl) DeviceScan::InclusiveSum",
                    Family::Cub,
                    2.0,
                ),
            ],
        );
        let md = markdown(&s);
        assert!(md.contains("· CUB not available · CUB(cccl) 3.6.0"), "{md}");
        assert!(
            md.contains("| ours: scan | 1.0000 |  | n/a | not available | 2.000x |"),
            "{md}"
        );
    }

    /// Two segmented cases of the same n (the two matrix shapes) each compare with CUB's row of
    /// their own case.
    #[test]
    fn segmented_rows_compare_with_cubs_row_of_their_case() {
        let s = sweep(
            Some(300001),
            None,
            vec![
                row("segmented", "rows 65536 x 1024", Family::Ours, 1.0),
                row(
                    "segmented",
                    "CUB DeviceSegmentedReduce::Sum: rows 65536 x 1024",
                    Family::Cub,
                    2.0,
                ),
                row("segmented", "rows 1024 x 65536", Family::Ours, 4.0),
                row(
                    "segmented",
                    "CUB DeviceSegmentedReduce::Sum: rows 1024 x 65536",
                    Family::Cub,
                    1.0,
                ),
            ],
        );
        let md = markdown(&s);
        assert!(
            md.contains("| rows 65536 x 1024 | 1.0000 |  | n/a | 2.000x |"),
            "{md}"
        );
        assert!(
            md.contains("| rows 1024 x 65536 | 4.0000 |  | n/a | 0.250x |"),
            "{md}"
        );
    }

    #[test]
    fn the_scan_accuracy_is_a_section_of_its_own() {
        let mut s = sweep(Some(300001), None, vec![]);
        assert!(!markdown(&s).contains("accuracy"));
        s.scan_accuracy.push(crate::bench::ScanAccuracy {
            dtype: "f32".into(),
            n: 1000,
            exact: 1.5,
            sum_abs: 500.0,
            last: vec![("ours".into(), 1.5), ("CUB 3.0.1".into(), 1.25)],
        });
        let md = markdown(&s);
        assert!(
            md.contains(
                "\n- accuracy f32 n=1000: last element of the inclusive sum: exact 1.5, \
                 ours 1.5 (error 0.000e0, 0.00e0 of sum|x|), \
                 CUB 3.0.1 1.25 (error 2.500e-1, 5.00e-4 of sum|x|)\n"
            ),
            "{md}"
        );
    }

    #[test]
    fn old_results_without_the_cccl_fields_still_read() {
        let s = sweep(Some(300001), None, vec![]);
        let mut v = serde_json::to_value(&s).unwrap();
        assert!(v["machine"].get("cub_cccl_version").is_none());
        v["machine"].as_object_mut().unwrap().remove("cccl");
        assert!(v.get("scan_accuracy").is_none());
        let back: Sweep = serde_json::from_value(v).unwrap();
        assert_eq!(back.machine.cub_cccl_version, None);
        assert!(back.scan_accuracy.is_empty());
    }
}
