//! The sweep's figures (plotters), each as PNG and SVG: for every op and element type,
//! bandwidth against n (our kernels, CUB, and the memory limit as a dashed line) and time
//! against n on log axes (where latency shows at small sizes). On the simulator only the time
//! figure is drawn, labelled simulated.

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{Family, Measurement, Sweep};
use gpu_reduce::{Error, Result};

/// DejaVu Sans Mono (licence: host/assets/DejaVu-LICENSE.txt): the PNG backend draws text with a font it is
/// given, so the figures look the same on a GPU machine without fonts.
static FONT: &[u8] = include_bytes!("../../assets/DejaVuSansMono.ttf");

fn plot_err(e: impl std::fmt::Display) -> Error {
    Error::external(format!("drawing a figure: {e}"))
}

fn register_font() -> Result<()> {
    static ONCE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let ok = *ONCE.get_or_init(|| register_font_inner().is_ok());
    if ok {
        Ok(())
    } else {
        Err(plot_err("the embedded font does not load"))
    }
}

fn register_font_inner() -> std::result::Result<(), ()> {
    plotters::style::register_font("sans-serif", FontStyle::Normal, FONT).map_err(|_| ())
}

/// One line of a figure: a method's (n, y) points.
struct Series {
    label: String,
    points: Vec<(f64, f64)>,
    family: Family,
}

fn series(ms: &[&Measurement], y: impl Fn(&Measurement) -> Option<f64>) -> Vec<Series> {
    let mut out: Vec<Series> = Vec::new();
    for m in ms {
        let Some(v) = y(m) else { continue };
        if !v.is_finite() || v <= 0.0 {
            continue;
        }
        match out.iter_mut().find(|s| s.label == m.method) {
            Some(s) => s.points.push((m.n as f64, v)),
            None => out.push(Series {
                label: m.method.clone(),
                points: vec![(m.n as f64, v)],
                family: m.family,
            }),
        }
    }
    for s in &mut out {
        s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    out
}

fn color(i: usize, family: Family, label: &str) -> RGBColor {
    match family {
        Family::Ours => [RGBColor(31, 119, 180), RGBColor(44, 160, 44)][i % 2],
        // The CUB built from a CCCL checkout darker than the toolkit's.
        Family::Cub if label.starts_with(super::CUB_CCCL) => RGBColor(120, 20, 20),
        Family::Cub => RGBColor(214, 39, 40),
        Family::Limit => RGBColor(80, 80, 80),
        Family::Ladder => {
            let p = [
                RGBColor(148, 103, 189),
                RGBColor(140, 86, 75),
                RGBColor(227, 119, 194),
                RGBColor(188, 189, 34),
                RGBColor(23, 190, 207),
                RGBColor(255, 127, 14),
            ];
            p[i % p.len()]
        }
    }
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    title: &str,
    y_label: &str,
    lines: &[Series],
    log_y: bool,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(plot_err)?;
    let xs = lines.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let ys = lines.iter().flat_map(|s| s.points.iter().map(|p| p.1));
    let (x0, x1) = xs.fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
    let (y0, y1) = ys.fold((f64::MAX, f64::MIN), |(a, b), y| (a.min(y), b.max(y)));
    let (x0, x1) = (x0 / 1.5, x1 * 1.5);
    let mut chart = ChartBuilder::on(&root);
    chart
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70);
    let fmt_n = |x: &f64| {
        let k = x.log2().round() as i32;
        if (x - 2f64.powi(k)).abs() < 0.5 {
            format!("2^{k}")
        } else {
            format!("{x:.0}")
        }
    };
    macro_rules! body {
        ($c:expr) => {{
            let mut c = $c;
            c.configure_mesh()
                .x_desc("n (elements)")
                .y_desc(y_label)
                .x_label_formatter(&fmt_n)
                .draw()
                .map_err(plot_err)?;
            for (i, s) in lines.iter().enumerate() {
                let col = color(i, s.family, &s.label);
                let style = ShapeStyle::from(&col).stroke_width(2);
                if s.family == Family::Limit {
                    // Dashed: the limit, not a kernel of ours.
                    c.draw_series(DashedLineSeries::new(s.points.iter().copied(), 8, 5, style))
                        .map_err(plot_err)?
                        .label(s.label.as_str())
                        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], col));
                } else {
                    c.draw_series(LineSeries::new(s.points.iter().copied(), style))
                        .map_err(plot_err)?
                        .label(s.label.as_str())
                        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], col));
                    c.draw_series(
                        s.points
                            .iter()
                            .map(|&p| Circle::new(p, 3, ShapeStyle::from(&col).filled())),
                    )
                    .map_err(plot_err)?;
                }
            }
            c.configure_series_labels()
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .position(SeriesLabelPosition::UpperLeft)
                .draw()
                .map_err(plot_err)?;
        }};
    }
    if log_y {
        body!(
            chart
                .build_cartesian_2d((x0..x1).log_scale(), (y0 / 1.5..y1 * 1.5).log_scale())
                .map_err(plot_err)?
        );
    } else {
        body!(
            chart
                .build_cartesian_2d((x0..x1).log_scale(), 0.0..y1 * 1.15)
                .map_err(plot_err)?
        );
    }
    root.present().map_err(plot_err)?;
    Ok(())
}

/// `name` as a file stem: lowercase ASCII letters and digits, each run of other characters one
/// `-`, none at either end (`reduce, back to back-f32-time` -> `reduce-back-to-back-f32-time`).
pub fn slug(name: &str) -> String {
    let mut s = String::with_capacity(name.len());
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            s.push(c.to_ascii_lowercase());
        } else if !s.is_empty() && !s.ends_with('-') {
            s.push('-');
        }
    }
    while s.ends_with('-') {
        s.pop();
    }
    s
}

/// Draw one figure as `<dir>/<stem>.png` and `.svg` (the stem made a [`slug`]); returns both
/// paths.
fn figure(
    dir: &Path,
    stem: &str,
    title: &str,
    y_label: &str,
    lines: &[Series],
    log_y: bool,
) -> Result<Vec<PathBuf>> {
    let stem = slug(stem);
    let (png, svg) = (
        dir.join(format!("{stem}.png")),
        dir.join(format!("{stem}.svg")),
    );
    let size = (1000, 620);
    draw(
        BitMapBackend::new(&png, size).into_drawing_area(),
        title,
        y_label,
        lines,
        log_y,
    )?;
    draw(
        SVGBackend::new(&svg, size).into_drawing_area(),
        title,
        y_label,
        lines,
        log_y,
    )?;
    Ok(vec![png, svg])
}

/// Every figure of `sweep` into `dir`; returns the files written.
pub fn write_plots(sweep: &Sweep, dir: &Path) -> Result<Vec<PathBuf>> {
    register_font()?;
    let sim = sweep.machine.backend == "sim";
    let mut files = Vec::new();
    let mut keys: Vec<(String, String)> = sweep
        .measurements
        .iter()
        .filter(|m| m.op != "memory")
        .map(|m| (m.op.clone(), m.dtype.clone()))
        .collect();
    keys.dedup();
    keys.sort();
    keys.dedup();
    for (op, dtype) in keys {
        let limit = if op == "reduce" {
            "read-only"
        } else {
            "device copy"
        };
        let ms: Vec<&Measurement> = sweep
            .measurements
            .iter()
            .filter(|m| {
                m.dtype == dtype
                    && (m.op == op || (m.op == "memory" && m.method.starts_with(limit)))
            })
            .collect();
        let device = &sweep.machine.device;
        if !sim {
            let lines = series(&ms, |m| m.gb_per_s);
            if !lines.is_empty() {
                files.extend(figure(
                    dir,
                    &format!("{op}-{dtype}-bandwidth"),
                    &format!("{op} {dtype}: effective bandwidth, {device}"),
                    "GB/s",
                    &lines,
                    false,
                )?);
            }
        }
        let lines = series(&ms, |m| Some(m.median_ms));
        if !lines.is_empty() {
            let what = if sim {
                "SIMULATED wall time"
            } else {
                "median time"
            };
            files.extend(figure(
                dir,
                &format!("{op}-{dtype}-time"),
                &format!("{op} {dtype}: {what}, {device}"),
                "ms",
                &lines,
                true,
            )?);
        }
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::slug;

    #[test]
    fn file_stems_are_slugs() {
        assert_eq!(
            slug("reduce, back to back-f32-time"),
            "reduce-back-to-back-f32-time"
        );
        assert_eq!(
            slug("multi-GPU sum-f32-bandwidth"),
            "multi-gpu-sum-f32-bandwidth"
        );
        assert_eq!(slug("reduce_by_key-bf16-time"), "reduce-by-key-bf16-time");
        assert_eq!(slug("  a -- b (µs)/c  "), "a-b-s-c");
        assert_eq!(slug("scan-i32-time"), "scan-i32-time");
        assert_eq!(slug(", ;"), "");
    }
}
