//! The seeds' reduction ladder on either backend: every variant on the same input, timed and
//! checked, as one table.

use crate::context::Context;
use crate::error::{Error, Result};

/// Element types the ladder is instantiated for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LadderDtype {
    I32,
    F32,
    F64,
}

/// One row of the ladder table.
#[derive(Debug, Clone)]
pub struct LadderRow {
    pub kernel: String,
    pub median_ms: f64,
    pub gb_per_s: f64,
    pub speedup_vs_reduce0: f64,
    pub percent_of_copy: f64,
    pub checked: bool,
}

/// Run every ladder kernel on the same random input of `n` elements.
pub fn run_ladder(
    _ctx: &Context,
    _n: usize,
    _dtype: LadderDtype,
    _iters: usize,
    _warmup: usize,
) -> Result<Vec<LadderRow>> {
    Err(Error::InvalidArgument("the reduction ladder is not built yet".into()))
}

/// The rows as a Markdown table.
pub fn format_table(rows: &[LadderRow]) -> String {
    let mut s = String::from("| kernel | time (ms) | GB/s | speedup vs reduce0 | % of copy | check |\n|---|---|---|---|---|---|\n");
    for r in rows {
        s.push_str(&format!(
            "| {} | {:.4} | {:.1} | {:.2}x | {:.1}% | {} |\n",
            r.kernel,
            r.median_ms,
            r.gb_per_s,
            r.speedup_vs_reduce0,
            r.percent_of_copy,
            if r.checked { "ok" } else { "WRONG" }
        ));
    }
    s
}
