//! The three user operators on pseudo-random data, on GPU 0 when there is one and on the CPU
//! simulator otherwise (`--sim` forces it; `--n N` sets the length), each checked against a
//! CPU reference. Exits with status 1 on a mismatch.
//!
//! `cargo run -p minmax-example -- [--sim] [--n N]`

use gpu_reduce::{Context, ScanKind};
use minmax_example::{cpu, lcg_f32, max_abs_scan, min_max, softmax_stats};

fn main() -> Result<(), gpu_reduce::Error> {
    let (mut sim, mut n) = (false, 1_000_003usize);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--sim" => sim = true,
            "--n" => {
                n = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or_else(|| usage())
            }
            _ => usage(),
        }
    }
    let ctx = if sim {
        Context::sim()?
    } else {
        Context::auto(0)?
    };
    println!("{}: {n} f32 in [-100, 100]", ctx.info().name);
    let data = lcg_f32(n, 14, -100.0, 100.0);
    let x = ctx.htod(&data)?;
    let mut ok = true;
    let mut report = |what: &str, good: bool, detail: String| {
        println!(
            "{what:<14} {detail}  [{}]",
            if good { "ok" } else { "WRONG" }
        );
        ok &= good;
    };

    // MinMax: min and max with the index of each, one launch.
    let got = min_max(&ctx, &x)?.map(|r| (r.min, r.argmin, r.max, r.argmax));
    let want = cpu::min_max(&data);
    report(
        "min_max",
        got.map(|g| (g.0.to_bits(), g.1, g.2.to_bits(), g.3))
            == want.map(|w| (w.0.to_bits(), w.1, w.2.to_bits(), w.3)),
        format!("(min, argmin, max, argmax) = {got:?}, CPU {want:?}"),
    );

    // Online softmax: max and sum of exp(x - max), one launch, against f64.
    let s = softmax_stats(&ctx, &x)?;
    let (m, sum) = cpu::softmax_stats(&data);
    let rel = (s.sum_exp as f64 - sum).abs() / sum;
    report(
        "softmax_stats",
        s.max as f64 == m && rel <= 1e-5,
        format!(
            "max {} sum_exp {} (f64 {sum:.7}, rel. error {rel:.1e}), log-sum-exp {}",
            s.max,
            s.sum_exp,
            s.log_sum_exp()
        ),
    );

    // MaxAbs scan: running max of |x|, exact.
    let mut out = ctx.alloc_zeros::<f32>(n)?;
    max_abs_scan(&ctx, &x, &mut out, ScanKind::Inclusive)?;
    let got = ctx.dtoh(&out)?;
    let want = cpu::max_abs_scan(&data, true);
    let first_bad = got
        .iter()
        .zip(&want)
        .position(|(g, w)| g.to_bits() != w.to_bits());
    report(
        "max_abs_scan",
        first_bad.is_none(),
        match first_bad {
            None => format!("last {:?}, all {n} outputs equal the CPU's", got.last()),
            Some(i) => format!("out[{i}] = {}, CPU {}", got[i], want[i]),
        },
    );

    if !ok {
        std::process::exit(1);
    }
    Ok(())
}

fn usage() -> ! {
    eprintln!("usage: minmax-example [--sim] [--n N]");
    std::process::exit(2)
}
