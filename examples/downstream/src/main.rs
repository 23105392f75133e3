//! A user's program: a sum and a scan through the library, on a GPU when there is one and on the
//! CPU simulator otherwise (`--sim` forces it), checked against the CPU.

use gpu_reduce::{Context, Reduction, ScanKind};

fn main() -> Result<(), gpu_reduce::Error> {
    let ctx = if std::env::args().any(|a| a == "--sim") {
        Context::sim()?
    } else {
        Context::auto(0)?
    };
    let data: Vec<i64> = (0..100_000).map(|i| (i % 13) - 6).collect();
    let x = ctx.htod(&data)?;

    let sum = ctx.sum(&x)?;
    let mut prefix = ctx.alloc_zeros::<i64>(data.len())?;
    ctx.scan(&x, &mut prefix, Reduction::Sum, ScanKind::Inclusive)?;
    let prefix = ctx.dtoh(&prefix)?;

    let want: Vec<i64> = data
        .iter()
        .scan(0i64, |acc, &v| {
            *acc += v;
            Some(*acc)
        })
        .collect();
    let ok = sum == data.iter().sum::<i64>() && prefix == want;
    println!(
        "{}: sum {sum}, last prefix {}, {}",
        ctx.info().name,
        prefix[prefix.len() - 1],
        if ok { "checked against the CPU" } else { "WRONG" }
    );
    if !ok {
        std::process::exit(1);
    }
    Ok(())
}
