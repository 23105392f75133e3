//! Comparing a run with a baseline, cell by cell, and the comparison's table.

use std::fmt;

use super::*;

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
                format!(
                    "check failed in {} of {}",
                    nc.failed,
                    crate::plural(nc.runs as u64, "sweep")
                )
            } else {
                format!(
                    "measured in {} of {}",
                    nc.runs,
                    crate::plural(repeat as u64, "sweep")
                )
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
            "guard: {}, {} slower{}, {} missing -> {}",
            crate::plural(self.cells() as u64, "cell"),
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
                "\n{} measured now {} not in the baseline (not compared): {}\n",
                crate::plural(self.new_cells.len() as u64, "cell"),
                if self.new_cells.len() == 1 {
                    "is"
                } else {
                    "are"
                },
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
