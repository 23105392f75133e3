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
use super::{CUB, Family, Machine, Op, Sweep, SweepConfig};
use gpu_reduce::{Error, Result};

mod compare;
#[cfg(test)]
mod tests;

pub use compare::{Comparison, Line, Metric, Verdict, compare};

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
    // The sweep size a cell comes from: its own, or for a sized op's case cut from one (top-k's
    // rows: a size's elements in whole rows) the smallest size at or above it; none for the
    // fixed cases, which run at any sizes: segmented and by-key ops, and select without its
    // matrix (no u32 or u64 named: its default cases at one size of its own).
    let matrix = config.dtypes.iter().any(|d| d.select_only());
    let size_of = |c: &Cell| {
        let fixed = op_of(c).is_some_and(|o| {
            matches!(o, Op::Segmented | Op::ReduceByKey | Op::ScanByKey)
                || (o == Op::Select && !matrix)
        });
        if config.sizes.contains(&c.n) {
            Some(c.n)
        } else if fixed {
            None
        } else {
            config.sizes.iter().copied().filter(|&s| s >= c.n).min()
        }
    };
    let sized = |c: &&Cell| size_of(c).is_some();
    let dtypes: Option<Vec<_>> = cells
        .iter()
        .filter(sized)
        .map(|c| config.dtypes.iter().copied().find(|d| d.name() == c.dtype))
        .collect();
    let mut dtypes = dtypes.unwrap_or_else(|| config.dtypes.clone());
    // Select's matrix runs only when a type of its own (u32, u64) is named: the config's stay
    // while select's cells are measured again (its f32 cells alone included).
    if ops.contains(&Op::Select) && !dtypes.iter().any(|d| d.select_only()) {
        dtypes.extend(config.dtypes.iter().filter(|d| d.select_only()));
    }
    dtypes.sort_by_key(|d| config.dtypes.iter().position(|x| x == d));
    dtypes.dedup();
    let mut sizes: Vec<u64> = cells.iter().filter_map(size_of).collect();
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
