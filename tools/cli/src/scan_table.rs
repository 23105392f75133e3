//! `host scan`: seed 003's comparison table. The three scans of this library (BIT on a
//! Fenwick tree, BCAO reduce-then-scan, the single-pass fixed-order scan) and CUB's
//! `DeviceScan::InclusiveSum` on the same input, each checked against a CPU scan, timed over
//! the seed's lengths (100 … 1e9, those that fit), plus effective bandwidth at the largest.

use cudarc::driver::{DeviceRepr, ValidAsZeroBits};
use rand::{Rng, SeedableRng, rngs::SmallRng};

use crate::cpu::cpu_scan;
use crate::cub::{Cub, CubInclusiveSum};
use crate::scan_ladder::{ScanLadderElement, ScanLadderExt};
use crate::stats;
use gpu_reduce::Result;
use gpu_reduce::{BackendKind, Context, DeviceBuffer};
use gpu_reduce::{Reduction, ScanElement, ScanKind};

/// The seed's lengths.
pub const SEED_LENGTHS: [u64; 8] = [
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
    1_000_000_000,
];

/// Element types of the table.
pub trait TableElement: ScanElement + ScanLadderElement + DeviceRepr + ValidAsZeroBits {
    fn random(rng: &mut SmallRng) -> Self;
    /// Whether `got` is the inclusive sum of `input` (exact for integers; for floats within a
    /// bound from an f64 scan).
    fn check(got: &[Self], input: &[Self]) -> bool;
    /// CUB's inclusive sum for this type, when the shim has it.
    fn cub_inclusive_sum<'a>(
        cub: &'a Cub,
        ctx: &Context,
        input: &DeviceBuffer<Self>,
        out: &mut DeviceBuffer<Self>,
    ) -> Option<Result<CubRunner<'a>>>;
}

/// A prepared CUB call (its scratch allocated), run by [`CubRunner::run`].
pub struct CubRunner<'a> {
    run: Box<dyn Fn() -> Result<()> + 'a>,
    _temp: DeviceBuffer<u8>,
}

fn cub_runner<'a, T: CubInclusiveSum + DeviceRepr>(
    cub: &'a Cub,
    ctx: &Context,
    input: &DeviceBuffer<T>,
    out: &mut DeviceBuffer<T>,
) -> Result<CubRunner<'a>> {
    let stream = crate::cub::stream_of(ctx)? as usize;
    let n = input.len() as u64;
    let temp_bytes = cub.temp_bytes_inclusive_sum::<T>(n)?;
    let temp = ctx.alloc_zeros::<u8>(temp_bytes.max(1))?;
    let (t, i, o) = (
        ctx.device_addr(&temp)?,
        ctx.device_addr(input)?,
        ctx.device_addr(&*out)?,
    );
    let run = Box::new(move || {
        // SAFETY: device buffers of this context, alive as long as the runner (the caller keeps
        // input and output; the runner owns the scratch).
        Ok(unsafe {
            cub.inclusive_sum::<T>(t, temp_bytes, i, o, n, stream as *mut std::ffi::c_void)
        }?)
    });
    Ok(CubRunner { run, _temp: temp })
}

impl CubRunner<'_> {
    pub fn run(&self) -> Result<()> {
        (self.run)()
    }
}

fn float_check<T: Copy>(got: &[T], input: &[T], f: impl Fn(T) -> f64, eps: f64) -> bool {
    let (mut exact, mut abs) = (0.0f64, 0.0f64);
    let depth = 64.0 + input.len() as f64 / 1024.0;
    got.iter().zip(input).all(|(&g, &x)| {
        exact += f(x);
        abs += f(x).abs();
        (f(g) - exact).abs() <= depth * eps * abs + f64::MIN_POSITIVE
    })
}

impl TableElement for i32 {
    fn random(rng: &mut SmallRng) -> Self {
        rng.random()
    }
    fn check(got: &[Self], input: &[Self]) -> bool {
        got == cpu_scan(input, Reduction::Sum, ScanKind::Inclusive)
    }
    fn cub_inclusive_sum<'a>(
        cub: &'a Cub,
        ctx: &Context,
        input: &DeviceBuffer<Self>,
        out: &mut DeviceBuffer<Self>,
    ) -> Option<Result<CubRunner<'a>>> {
        Some(cub_runner(cub, ctx, input, out))
    }
}

impl TableElement for f32 {
    fn random(rng: &mut SmallRng) -> Self {
        rng.random_range(-1.0..1.0)
    }
    fn check(got: &[Self], input: &[Self]) -> bool {
        float_check(got, input, |x| x as f64, f32::EPSILON as f64 / 2.0)
    }
    fn cub_inclusive_sum<'a>(
        cub: &'a Cub,
        ctx: &Context,
        input: &DeviceBuffer<Self>,
        out: &mut DeviceBuffer<Self>,
    ) -> Option<Result<CubRunner<'a>>> {
        Some(cub_runner(cub, ctx, input, out))
    }
}

impl TableElement for f64 {
    fn random(rng: &mut SmallRng) -> Self {
        rng.random_range(-1.0..1.0)
    }
    fn check(got: &[Self], input: &[Self]) -> bool {
        float_check(got, input, |x| x, f64::EPSILON / 2.0)
    }
    fn cub_inclusive_sum<'a>(
        cub: &'a Cub,
        ctx: &Context,
        input: &DeviceBuffer<Self>,
        out: &mut DeviceBuffer<Self>,
    ) -> Option<Result<CubRunner<'a>>> {
        // A shim built before its f64 scan existed has none.
        cub.has_inclusive_sum::<f64>()
            .then(|| cub_runner(cub, ctx, input, out))
    }
}

/// One cell: the median time, or why there is none.
#[derive(Debug, Clone)]
pub enum Cell {
    Time { median_ms: f64, checked: bool },
    NotAvailable(&'static str),
}

/// The table: rows = methods, columns = lengths.
#[derive(Debug, Clone)]
pub struct ScanTable {
    pub dtype: &'static str,
    pub lengths: Vec<u64>,
    pub methods: Vec<String>,
    /// `cells[method][length]`.
    pub cells: Vec<Vec<Cell>>,
    pub elem_bytes: usize,
    pub backend: BackendKind,
    pub iters: Vec<usize>,
}

/// A row of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Method {
    Bit,
    Bcao,
    Ours,
    Cub,
    Copy,
}

impl Method {
    pub const ALL: [Method; 5] = [
        Method::Bit,
        Method::Bcao,
        Method::Ours,
        Method::Cub,
        Method::Copy,
    ];
}

/// The methods, in table order.
pub const METHODS: [&str; 5] = [
    "BIT (seed 003, Fenwick tree)",
    "BCAO (reduce-then-scan)",
    "single pass, fixed order (ours)",
    "CUB DeviceScan::InclusiveSum",
    "device copy (read + write)",
];

/// Timed runs for a length: many for short scans (whose times are small and noisy), fewer for
/// long ones (whose times are long and steady).
pub fn default_iters(n: u64, backend: BackendKind) -> usize {
    match backend {
        BackendKind::Sim => 2,
        BackendKind::Cuda if n <= 10_000_000 => 100,
        BackendKind::Cuda => 20,
    }
}

/// Run the table for `T` over `lengths` (skipping those whose buffers do not fit).
pub fn run_scan_table<T: TableElement>(
    ctx: &Context,
    cub: Option<&Cub>,
    methods: &[Method],
    lengths: &[u64],
    iters: Option<usize>,
    seed: u64,
    mut progress: impl FnMut(&str),
) -> Result<ScanTable> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut cells: Vec<Vec<Cell>> = vec![Vec::new(); METHODS.len()];
    let mut used = Vec::new();
    let mut iters_used = Vec::new();
    let size = std::mem::size_of::<T>();
    for &n in lengths {
        // Input, output, BIT's tree (and CUB scratch): about three copies.
        if ctx.backend_kind() == BackendKind::Cuda {
            let free = ctx.free_memory()? as u64;
            if 3 * n * size as u64 + (64 << 20) > free {
                progress(&format!(
                    "n = {n}: does not fit ({free} bytes free), skipped"
                ));
                continue;
            }
        }
        let iters = iters.unwrap_or_else(|| default_iters(n, ctx.backend_kind()));
        let warmup = (iters / 10).max(1);
        progress(&format!(
            "n = {n}: {} per method",
            crate::plural(iters as u64, "run")
        ));
        let host: Vec<T> = (0..n).map(|_| T::random(&mut rng)).collect();
        let input = ctx.htod(&host)?;
        let mut out = ctx.alloc_zeros::<T>(n as usize)?;
        let time = |out: &mut DeviceBuffer<T>,
                    f: &dyn Fn(&mut DeviceBuffer<T>) -> Result<()>|
         -> Result<Cell> {
            ctx.memset_zeros(&mut *out)?;
            f(out)?;
            let got = ctx.dtoh(&*out)?;
            let checked = T::check(&got, &host);
            let t = ctx.time_ms(warmup, iters, || f(out))?;
            let median_ms = stats::summarize(&t).map_or(f64::NAN, |s| s.median);
            Ok(Cell::Time { median_ms, checked })
        };
        let (op, incl) = (Reduction::Sum, ScanKind::Inclusive);
        let skipped = || Cell::NotAvailable("not selected");
        let on = |m: Method| methods.contains(&m);
        cells[0].push(if on(Method::Bit) {
            time(&mut out, &|o| ctx.scan_bit(&input, o, op, incl))?
        } else {
            skipped()
        });
        cells[1].push(if on(Method::Bcao) {
            time(&mut out, &|o| ctx.scan_bcao(&input, o, op, incl))?
        } else {
            skipped()
        });
        cells[2].push(if on(Method::Ours) {
            time(&mut out, &|o| ctx.scan(&input, o, op, incl))?
        } else {
            skipped()
        });
        let cub_cell = if !on(Method::Cub) {
            skipped()
        } else {
            match cub {
                None => Cell::NotAvailable("no CUB shim"),
                Some(c) => match T::cub_inclusive_sum(c, ctx, &input, &mut out) {
                    None => Cell::NotAvailable("not in the shim"),
                    Some(r) => {
                        let r = r?;
                        time(&mut out, &|_| r.run())?
                    }
                },
            }
        };
        cells[3].push(cub_cell);
        let copy = if on(Method::Copy) {
            time(&mut out, &|o| ctx.copy_into(&input, o, 0))?
        } else {
            skipped()
        };
        // The copy "checks" when it copied.
        cells[4].push(match copy {
            Cell::Time { median_ms, .. } => Cell::Time {
                median_ms,
                checked: ctx.dtoh(&out)? == host,
            },
            c => c,
        });
        used.push(n);
        iters_used.push(iters);
    }
    Ok(ScanTable {
        dtype: T::DTYPE,
        lengths: used,
        methods: METHODS.iter().map(|s| s.to_string()).collect(),
        cells,
        elem_bytes: size,
        backend: ctx.backend_kind(),
        iters: iters_used,
    })
}

fn length_label(n: u64) -> String {
    match n {
        100 => "100".into(),
        1_000 => "1e3".into(),
        10_000 => "1e4".into(),
        100_000 => "1e5".into(),
        1_000_000 => "1e6".into(),
        10_000_000 => "1e7".into(),
        100_000_000 => "1e8".into(),
        1_000_000_000 => "1e9".into(),
        n => n.to_string(),
    }
}

impl ScanTable {
    /// The Markdown table: times in ms per length, then GB/s (read + write) at the largest
    /// length and the ratio to CUB there. A cell whose result did not check is marked.
    pub fn to_markdown(&self) -> String {
        let unit = if self.backend == BackendKind::Sim {
            "wall ms, SIMULATED"
        } else {
            "ms"
        };
        // One count ("1 run", "100 runs"), or each length's ("100/20 runs").
        let runs = match &self.iters[..] {
            [first, rest @ ..] if rest.iter().all(|i| i == first) => {
                crate::plural(*first as u64, "run")
            }
            all => format!(
                "{} runs",
                all.iter()
                    .map(|i| i.to_string())
                    .collect::<Vec<_>>()
                    .join("/")
            ),
        };
        let mut s = format!(
            "inclusive sum scan, {} ({unit}); medians over {runs} per cell\n\n| method |",
            self.dtype,
        );
        for &n in &self.lengths {
            s += &format!(" {} |", length_label(n));
        }
        let last = self.lengths.last().copied();
        if let Some(n) = last {
            s += &format!(
                " GB/s at {} | vs CUB at {} |",
                length_label(n),
                length_label(n)
            );
        }
        s += "\n|---|";
        for _ in 0..self.lengths.len() + 2 * last.is_some() as usize {
            s += "---|";
        }
        s += "\n";
        let cub_last = self.cells[3].last().and_then(|c| match c {
            Cell::Time { median_ms, .. } => Some(*median_ms),
            _ => None,
        });
        for (m, row) in self.methods.iter().zip(&self.cells) {
            s += &format!("| {m} |");
            for c in row {
                s += &match c {
                    Cell::Time { median_ms, checked } => {
                        format!(" {median_ms:.4}{} |", if *checked { "" } else { " WRONG" })
                    }
                    Cell::NotAvailable(_) => " n/a |".into(),
                };
            }
            if let (Some(n), Some(Cell::Time { median_ms, .. })) = (last, row.last()) {
                let bytes = 2 * n * self.elem_bytes as u64;
                if self.backend == BackendKind::Cuda {
                    s += &format!(" {:.0} |", stats::gb_per_s(bytes, *median_ms));
                } else {
                    s += " - |";
                }
                s += &match cub_last {
                    Some(c) => format!(" {:.3}x |", c / median_ms),
                    None => " n/a |".into(),
                };
            } else if last.is_some() {
                s += " n/a | n/a |";
            }
            s += "\n";
        }
        s += "\nEvery cell's result was checked against a CPU scan before timing (WRONG marks a failed check).\n\
GB/s = (bytes read + bytes written) / time; \"vs CUB\" = CUB's time / the method's time (> 1: faster than CUB).\n";
        s
    }

    /// Whether every timed cell checked.
    pub fn all_checked(&self) -> bool {
        self.cells
            .iter()
            .flatten()
            .all(|c| !matches!(c, Cell::Time { checked: false, .. }))
    }
}
