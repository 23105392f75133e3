//! The speed guard. `host bench --save-baseline FILE` keeps, for each of our measurements (a
//! *cell*: op, type, size, method), two ratios taken within one sweep, its speed against CUB's
//! and its bandwidth against the memory limit, as median and range over repeated sweeps;
//! `host bench --compare FILE` runs the same sweep again and flags a cell whose ratio fell by
//! more than the run-to-run spread. Ratios rather than times: a slow phase or a clock change of
//! the GPU moves ours and its peer in the same sweep alike.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::report::{of_limit, size_label, vs_cub};
use super::{CUB, Family, Machine, Sweep, SweepConfig};
use gpu_reduce::{Error, Result};

/// One of our measurements, as the guard names it (sorted by op, type, size, method).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Cell {
    pub op: String,
    pub dtype: String,
    pub n: u64,
    pub method: String,
}

impl fmt::Display for Cell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (op, dt, n, m) = (&self.op, &self.dtype, size_label(self.n), &self.method);
        write!(f, "{op} {dt} {n} {m}")
    }
}

/// Median and range of one metric over repeated sweeps (the range: the run-to-run spread).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Stat {
    pub median: f64,
    pub lo: f64,
    pub hi: f64,
}

impl Stat {
    /// Of `values` (`None` when there are none).
    pub fn of(values: &[f64]) -> Option<Stat> {
        crate::stats::summarize(values).map(|s| Stat {
            median: s.median,
            lo: s.min,
            hi: s.max,
        })
    }

    pub fn spread(&self) -> f64 {
        self.hi - self.lo
    }
}

/// A cell over repeated sweeps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellStats {
    #[serde(flatten)]
    pub cell: Cell,
    /// The toolkit CUB's median time over ours (> 1: ours is faster); `None` without a CUB row.
    pub vs_cub: Option<Stat>,
    /// Our GB/s over the memory limit's; `None` on the simulator or without a limit row.
    pub of_limit: Option<Stat>,
    /// Sweeps that measured the cell.
    pub runs: usize,
    /// Of those, the sweeps whose result failed its check.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub failed: usize,
}

fn is_zero(x: &usize) -> bool {
    *x == 0
}

/// Each of our cells in one sweep: (vs CUB, of the limit, checked); a cell's first row if it
/// has several, as the report's peers take the first.
fn cell_metrics(sweep: &Sweep) -> BTreeMap<Cell, (Option<f64>, Option<f64>, bool)> {
    let mut cells = BTreeMap::new();
    for m in sweep
        .measurements
        .iter()
        .filter(|m| m.family == Family::Ours)
    {
        let cell = Cell {
            op: m.op.clone(),
            dtype: m.dtype.clone(),
            n: m.n,
            method: m.method.clone(),
        };
        cells
            .entry(cell)
            .or_insert_with(|| (vs_cub(sweep, m, CUB), of_limit(sweep, m), m.checked));
    }
    cells
}

/// The cells of `sweeps` (one config, repeated), sorted: each metric's stats over the sweeps
/// that have it.
pub fn cell_stats(sweeps: &[Sweep]) -> Vec<CellStats> {
    let mut acc: BTreeMap<Cell, (Vec<f64>, Vec<f64>, usize, usize)> = BTreeMap::new();
    for sweep in sweeps {
        for (cell, (c, l, ok)) in cell_metrics(sweep) {
            let a = acc.entry(cell).or_default();
            a.0.extend(c);
            a.1.extend(l);
            a.2 += 1;
            a.3 += usize::from(!ok);
        }
    }
    acc.into_iter()
        .map(|(cell, (c, l, runs, failed))| CellStats {
            cell,
            vs_cub: Stat::of(&c),
            of_limit: Stat::of(&l),
            runs,
            failed,
        })
        .collect()
}

/// What `--save-baseline` writes and `--compare` reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    /// Where the first of the sweeps ran.
    pub machine: Machine,
    pub config: SweepConfig,
    /// Sweeps the stats are over.
    pub repeat: usize,
    pub cells: Vec<CellStats>,
}

impl Baseline {
    /// From `sweeps`, one config repeated (the machine and config of the first).
    pub fn from_sweeps(sweeps: &[Sweep]) -> Result<Baseline> {
        let first = sweeps
            .first()
            .ok_or_else(|| Error::external("a baseline needs at least one sweep"))?;
        Ok(Baseline {
            machine: first.machine.clone(),
            config: first.config.clone(),
            repeat: sweeps.len(),
            cells: cell_stats(sweeps),
        })
    }

    /// Write as pretty JSON.
    pub fn write(&self, path: &Path) -> Result<()> {
        let err =
            |e: &dyn fmt::Display| Error::external(format!("cannot write {}: {e}", path.display()));
        let text = serde_json::to_string_pretty(self).map_err(|e| err(&e))?;
        std::fs::write(path, text + "\n").map_err(|e| err(&e))
    }

    /// Read what [`Baseline::write`] wrote.
    pub fn read(path: &Path) -> Result<Baseline> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::external(format!("cannot read {}: {e}", path.display())))?;
        serde_json::from_str(&text).map_err(|e| {
            Error::external(format!("{} is not a bench baseline: {e}", path.display()))
        })
    }
}

impl Baseline {
    /// The baseline cut to the cells whose name (as the guard prints it: "scan bf16 2^24 ours:
    /// ...") contains `pattern`, and its config to their ops, types and sizes: the guard on
    /// those cells alone (`--compare FILE --cells PATTERN`). No cell matching is an error.
    pub fn select(&self, pattern: &str) -> Result<Baseline> {
        let cells: Vec<Cell> = self
            .cells
            .iter()
            .map(|c| c.cell.clone())
            .filter(|c| c.to_string().contains(pattern))
            .collect();
        if cells.is_empty() {
            return Err(Error::external(format!(
                "no cell of the baseline matches \"{pattern}\" (cells are named like \"{}\")",
                self.cells
                    .first()
                    .map_or(String::new(), |c| c.cell.to_string())
            )));
        }
        Ok(Baseline {
            config: config_for(&self.config, &cells),
            ..self.only(&cells)
        })
    }

    /// The baseline of `cells` only (to compare a re-measurement of them).
    pub fn only(&self, cells: &[Cell]) -> Baseline {
        Baseline {
            cells: self
                .cells
                .iter()
                .filter(|c| cells.contains(&c.cell))
                .cloned()
                .collect(),
            ..self.clone()
        }
    }
}

/// The part of `config` that measures `cells` again: their ops, types and sizes (a cell's op
/// is its sweep op's name, `_` for `-`, or that with " to host"). A cell of an op or type
/// `config` does not name keeps all of them: measuring more is safe, less is not.
pub fn config_for(config: &SweepConfig, cells: &[Cell]) -> SweepConfig {
    use clap::ValueEnum;
    let op_of = |c: &Cell| {
        let name = c.op.trim_end_matches(" to host").replace('_', "-");
        config
            .ops
            .iter()
            .copied()
            .find(|o| o.to_possible_value().is_some_and(|v| v.get_name() == name))
    };
    let ops: Option<Vec<_>> = cells.iter().map(op_of).collect();
    let mut ops = ops.unwrap_or_else(|| config.ops.clone());
    ops.dedup();
    let sized = |c: &&Cell| config.sizes.contains(&c.n);
    let dtypes: Option<Vec<_>> = cells
        .iter()
        .filter(sized)
        .map(|c| config.dtypes.iter().copied().find(|d| d.name() == c.dtype))
        .collect();
    let mut dtypes = dtypes.unwrap_or_else(|| config.dtypes.clone());
    dtypes.sort_by_key(|d| config.dtypes.iter().position(|x| x == d));
    dtypes.dedup();
    let mut sizes: Vec<u64> = cells.iter().filter(sized).map(|c| c.n).collect();
    sizes.sort_unstable();
    sizes.dedup();
    SweepConfig {
        ops: config
            .ops
            .iter()
            .copied()
            .filter(|o| ops.contains(o))
            .collect(),
        dtypes,
        sizes,
        ..config.clone()
    }
}

/// How a line of the comparison came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Ok,
    Faster,
    Slower,
    /// Slower in the comparison, not when measured again ([`Comparison::confirm`]): noise.
    SlowerOnce,
    /// Not measured now, its check failed, or the metric is gone (no CUB row now, ...).
    Missing,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Ok => "ok",
            Verdict::Faster => "faster",
            Verdict::Slower => "SLOWER",
            Verdict::SlowerOnce => "slower once, not again (noise)",
            Verdict::Missing => "missing",
        })
    }
}

/// Which ratio a line compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    VsCub,
    OfLimit,
    /// No ratio: only that the cell was measured and checked (the simulator, or a cell with
    /// neither ratio in the baseline).
    Present,
}

impl Metric {
    fn name(self) -> &'static str {
        match self {
            Metric::VsCub => "vs CUB",
            Metric::OfLimit => "of memory limit",
            Metric::Present => "present",
        }
    }

    /// The ratio as results.md writes it.
    fn value(self, x: f64) -> String {
        match self {
            Metric::OfLimit => format!("{:.1}%", 100.0 * x),
            _ => format!("{x:.3}x"),
        }
    }

    fn stat(self, s: &Stat) -> String {
        let (m, lo, hi) = (self.value(s.median), self.value(s.lo), self.value(s.hi));
        format!("{m} ({lo}-{hi})")
    }
}

/// One cell and metric of the comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub cell: Cell,
    pub metric: Metric,
    pub base: Option<Stat>,
    pub now: Option<Stat>,
    /// Why `now` is empty on a missing line ("not measured", "check failed", ...).
    pub note: Option<String>,
    /// max(both spreads, 1% of the baseline median), in the metric's units.
    pub tolerance: Option<f64>,
    pub verdict: Verdict,
}

/// A baseline against a run of its config.
#[derive(Debug, Clone)]
pub struct Comparison {
    /// Why the comparison may mislead (another machine, simulated times).
    pub warnings: Vec<String>,
    pub lines: Vec<Line>,
    /// Cells of the run that the baseline lacks (not compared).
    pub new_cells: Vec<Cell>,
}

/// Compare `base` with `now`, the cells of `repeat` sweeps of its config on `machine`.
pub fn compare(base: &Baseline, machine: &Machine, repeat: usize, now: &[CellStats]) -> Comparison {
    let mut warnings = Vec::new();
    let b = &base.machine;
    if b.device != machine.device || b.ptx_arch != machine.ptx_arch {
        warnings.push(format!(
            "warning: comparing across machines: the baseline ran on {} (PTX {}), this run on {} \
             (PTX {}); the ratios may differ for that alone",
            b.device, b.ptx_arch, machine.device, machine.ptx_arch
        ));
    }
    if b.cub_version != machine.cub_version {
        let v = |v: Option<i32>| v.map_or("none".into(), crate::cub::version_string);
        warnings.push(format!(
            "warning: the baseline's CUB is {}, this run's {}: \"vs CUB\" compares with \
             another CUB",
            v(b.cub_version),
            v(machine.cub_version)
        ));
    }
    let sim = b.backend == "sim" || machine.backend == "sim";
    if sim {
        warnings.push(
            "times are simulated (backend sim): only that each cell was measured and checked \
             is compared, no speed"
                .into(),
        );
    }
    let by_cell: BTreeMap<&Cell, &CellStats> = now.iter().map(|c| (&c.cell, c)).collect();
    let mut lines = Vec::new();
    for bc in &base.cells {
        let line = |metric, now: Option<Stat>, note: Option<&str>, verdict, tolerance| Line {
            cell: bc.cell.clone(),
            metric,
            base: match metric {
                Metric::VsCub => bc.vs_cub,
                Metric::OfLimit => bc.of_limit,
                Metric::Present => None,
            },
            now,
            note: note.map(String::from),
            tolerance,
            verdict,
        };
        let Some(nc) = by_cell.get(&bc.cell) else {
            let why = Some("not measured");
            lines.push(line(Metric::Present, None, why, Verdict::Missing, None));
            continue;
        };
        if nc.failed > 0 || nc.runs < repeat {
            let why = if nc.failed > 0 {
                format!("check failed in {} of {} sweeps", nc.failed, nc.runs)
            } else {
                format!("measured in {} of {repeat} sweeps", nc.runs)
            };
            lines.push(line(
                Metric::Present,
                None,
                Some(&why),
                Verdict::Missing,
                None,
            ));
            continue;
        }
        let metrics = [
            (Metric::VsCub, bc.vs_cub, nc.vs_cub),
            (Metric::OfLimit, bc.of_limit, nc.of_limit),
        ];
        let mut compared = false;
        for (metric, b, n) in metrics {
            let Some(b) = b.filter(|_| !sim) else {
                continue;
            };
            compared = true;
            let Some(n) = n else {
                lines.push(line(
                    metric,
                    None,
                    Some("not measured now"),
                    Verdict::Missing,
                    None,
                ));
                continue;
            };
            let tol = b.spread().max(n.spread()).max(0.01 * b.median.abs());
            let verdict = if n.median < b.median - tol {
                Verdict::Slower
            } else if n.median > b.median + tol {
                Verdict::Faster
            } else {
                Verdict::Ok
            };
            lines.push(line(metric, Some(n), None, verdict, Some(tol)));
        }
        if !compared {
            lines.push(line(Metric::Present, None, None, Verdict::Ok, None));
        }
    }
    let in_base: std::collections::BTreeSet<&Cell> = base.cells.iter().map(|c| &c.cell).collect();
    let new_cells = now
        .iter()
        .filter(|c| !in_base.contains(&c.cell))
        .map(|c| c.cell.clone())
        .collect();
    Comparison {
        warnings,
        lines,
        new_cells,
    }
}

impl Comparison {
    /// Cells of the baseline with a line of `verdict`.
    fn cells_with(&self, verdict: Verdict) -> usize {
        let mut cells: Vec<&Cell> = self
            .lines
            .iter()
            .filter(|l| l.verdict == verdict)
            .map(|l| &l.cell)
            .collect();
        cells.dedup();
        cells.len()
    }

    /// Cells of the baseline.
    pub fn cells(&self) -> usize {
        let mut cells: Vec<&Cell> = self.lines.iter().map(|l| &l.cell).collect();
        cells.dedup();
        cells.len()
    }

    pub fn slower(&self) -> usize {
        self.cells_with(Verdict::Slower)
    }

    pub fn missing(&self) -> usize {
        self.cells_with(Verdict::Missing)
    }

    /// No cell slower, none missing.
    pub fn passed(&self) -> bool {
        self.slower() == 0 && self.missing() == 0
    }

    /// `guard: N cells, K slower, M missing -> FAIL|PASS` (and how many were slower only once,
    /// when any were measured again).
    pub fn summary(&self) -> String {
        let once = self.cells_with(Verdict::SlowerOnce);
        format!(
            "guard: {} cells, {} slower{}, {} missing -> {}",
            self.cells(),
            self.slower(),
            if once > 0 {
                format!(" ({once} more slower once, not when measured again)")
            } else {
                String::new()
            },
            self.missing(),
            if self.passed() { "PASS" } else { "FAIL" }
        )
    }

    /// The cells with a line slower than the baseline.
    pub fn slower_cells(&self) -> Vec<Cell> {
        let mut cells: Vec<Cell> = self
            .lines
            .iter()
            .filter(|l| l.verdict == Verdict::Slower)
            .map(|l| l.cell.clone())
            .collect();
        cells.dedup();
        cells
    }

    /// Take `again` (the slower cells measured once more, compared with the same baseline)
    /// into account: a slower line that is ok or faster there was noise
    /// ([`Verdict::SlowerOnce`]); slower again, or not compared there (not measured, check
    /// failed), it stays SLOWER. A regression is slower every time; a 2^24 cell whose machine
    /// code did not change has been flagged once by a three-sweep range too narrow for its
    /// noise.
    pub fn confirm(&mut self, again: &Comparison) {
        for l in self
            .lines
            .iter_mut()
            .filter(|l| l.verdict == Verdict::Slower)
        {
            let cleared = again.lines.iter().any(|a| {
                a.cell == l.cell
                    && a.metric == l.metric
                    && matches!(a.verdict, Verdict::Ok | Verdict::Faster)
            });
            if cleared {
                l.verdict = Verdict::SlowerOnce;
            }
        }
    }

    /// The warnings, a Markdown table of the lines, the new cells and the summary.
    pub fn markdown(&self) -> String {
        let mut s = String::new();
        for w in &self.warnings {
            s.push_str(&format!("{w}\n"));
        }
        s.push_str(
            "\n| cell | metric | baseline median (lo-hi) | now median (lo-hi) | change | \
             tolerance | verdict |\n|---|---|---|---|---|---|---|\n",
        );
        for l in &self.lines {
            let m = l.metric;
            let base = l.base.map_or("-".into(), |b| m.stat(&b));
            let now = match (&l.now, &l.note) {
                (Some(n), _) => m.stat(n),
                (None, Some(why)) => why.clone(),
                (None, None) => "-".into(),
            };
            let (change, tol) = match (l.base, l.now, l.tolerance) {
                (Some(b), Some(n), Some(t)) => (
                    format!("{:+.1}%", 100.0 * (n.median / b.median - 1.0)),
                    format!("±{:.1}%", 100.0 * t / b.median.abs()),
                ),
                _ => ("-".into(), "-".into()),
            };
            s.push_str(&format!(
                "| {} | {} | {base} | {now} | {change} | {tol} | {} |\n",
                l.cell,
                m.name(),
                l.verdict
            ));
        }
        if !self.new_cells.is_empty() {
            s.push_str(&format!(
                "\n{} cells measured now are not in the baseline (not compared): {}\n",
                self.new_cells.len(),
                self.new_cells
                    .iter()
                    .map(|c| c.to_string())
                    .collect::<Vec<_>>()
                    .join("; ")
            ));
        }
        s.push_str(&format!("\n{}\n", self.summary()));
        s
    }
}

#[cfg(test)]
mod tests {
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
        // An op or type it cannot name keeps them all.
        let c = config_for(&config, &[cell("multi-GPU sum", "f32", N)]);
        assert_eq!(c.ops, config.ops);
        let c = config_for(&config, &[cell("scan", "u8", N)]);
        assert_eq!(c.dtypes, config.dtypes);
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
}
