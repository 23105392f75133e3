//! The sweep's reports: `results.json` (everything, machine-readable) and a Markdown table.

use std::path::Path;

use super::{Family, Measurement, Sweep};
use gpu_reduce::{Error, Result};

fn io_err(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::InvalidArgument(format!("cannot write {}: {e}", path.display()))
}

/// Write `sweep` as pretty JSON.
pub fn write_json(sweep: &Sweep, path: &Path) -> Result<()> {
    let text = serde_json::to_string_pretty(sweep).map_err(|e| io_err(path, e))?;
    std::fs::write(path, text).map_err(|e| io_err(path, e))
}

/// Read a sweep back (what `write_json` wrote).
pub fn read_json(path: &Path) -> Result<Sweep> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::InvalidArgument(format!("cannot read {}: {e}", path.display())))?;
    serde_json::from_str(&text)
        .map_err(|e| Error::InvalidArgument(format!("{} is not a sweep: {e}", path.display())))
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
    if m.op.starts_with("reduce") || m.method.starts_with("read-only") {
        peer(sweep, m, "memory", "read-only")
    } else {
        peer(sweep, m, "memory", "device copy")
    }
}

/// The Markdown report: a header naming the machine, then one table row per measurement with
/// the ratio to CUB (CUB's median / this one's: > 1 is faster) and to the memory limit.
pub fn markdown(sweep: &Sweep) -> String {
    let m = &sweep.machine;
    let sim = m.backend == "sim";
    let mut s = format!(
        "device: {} (sm {} , {} SMs, L2 {} MiB) · backend {} · CUDA driver {} · PTX {} · CUB {} · {}\n\
         command: `{}`\n\
         {} timed runs after {} warm-up per cell; times in ms (median, and p10-p90 of the runs){}\n\n",
        m.device,
        m.compute_capability,
        m.multiprocessors,
        m.l2_bytes >> 20,
        m.backend,
        if m.cuda_driver.is_empty() {
            "n/a"
        } else {
            &m.cuda_driver
        },
        m.ptx_arch,
        m.cub_version
            .map_or("not available".to_string(), |v| v.to_string()),
        m.date,
        m.command,
        sweep.config.iters,
        sweep.config.warmup,
        if sim {
            "; SIMULATED: CPU wall-clock times of the simulator, not GPU times (no bandwidth)"
        } else {
            ""
        },
    );
    s.push_str(
        "| op | dtype | n | method | median ms | p10-p90 ms | GB/s | vs CUB | % of memory limit | check |\n\
         |---|---|---|---|---|---|---|---|---|---|\n",
    );
    let mut rows: Vec<&Measurement> = sweep.measurements.iter().collect();
    let op_rank = |o: &str| match o {
        "reduce" => 0,
        "scan" => 1,
        _ => 2,
    };
    rows.sort_by(|a, b| (op_rank(&a.op), &a.dtype, a.n).cmp(&(op_rank(&b.op), &b.dtype, b.n)));
    for r in rows {
        let cub = if r.family == Family::Cub || r.op == "memory" {
            None
        } else {
            peer(sweep, r, &r.op, "CUB")
        };
        let vs_cub = match cub {
            Some(c) => format!("{:.3}x", c.median_ms / r.median_ms),
            // No shim (no nvcc where it ran, or the simulator): say so rather than leave a gap.
            None if r.family != Family::Cub && r.op != "memory" && m.cub_version.is_none() => {
                "not available".into()
            }
            None => String::new(),
        };
        let of_limit = match (r.gb_per_s, limit_for(sweep, r).and_then(|l| l.gb_per_s)) {
            (Some(g), Some(l)) if r.op != "memory" || r.method.starts_with("read-only") => {
                format!("{:.1}%", 100.0 * g / l)
            }
            _ => String::new(),
        };
        let spread = match (r.p10_ms, r.p90_ms) {
            (Some(a), Some(b)) => format!("{a:.4}-{b:.4}"),
            _ => String::new(),
        };
        s.push_str(&format!(
            "| {} | {} | {} | {} | {:.4} | {} | {} | {} | {} | {} |\n",
            r.op,
            r.dtype,
            size_label(r.n),
            r.method,
            r.median_ms,
            spread,
            r.gb_per_s.map_or("n/a".into(), |g| format!("{g:.0}")),
            vs_cub,
            of_limit,
            if r.checked { "ok" } else { "WRONG" }
        ));
    }
    for k in &sweep.skipped {
        s.push_str(&format!("\nskipped: {k}"));
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
