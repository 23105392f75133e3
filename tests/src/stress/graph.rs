//! Stress family "graph": the stream-ordered forms of four families (reduce into a device
//! value, scan, segmented reduce over rows, reduce by key with its run count on the device)
//! captured into one CUDA graph and replayed on new data in the same buffers; every replay's
//! results must be the bits of the blocking calls on that data (on another context). On the
//! simulator (no graphs) the same calls are queued again for each round instead of replayed.

use gpu_reduce::cudarc::driver::sys;
use gpu_reduce::{DeviceBuffer, ReduceByKeyElement, ScanElement, Segments};
use rand::Rng;

use super::{Case, Family, bytes, kind, make, pick};
use crate::segmented::SegElem;

struct Outputs<T> {
    value: DeviceBuffer<T>,
    scanned: DeviceBuffer<T>,
    rows: DeviceBuffer<T>,
    unique: DeviceBuffer<u32>,
    by_key: DeviceBuffer<T>,
    runs: DeviceBuffer<u64>,
}

fn case<T>(c: &mut Case) -> u64
where
    T: SegElem + ScanElement + ReduceByKeyElement<u32>,
{
    let n = c.size(&crate::boundary_sizes(c.max)).max(1);
    let op = pick(&mut c.rng, &super::ORDERED_OPS);
    let scan_kind = kind(&mut c.rng);
    let row = c.rng.random_range(1..=n);
    // Whole rows only (a partial last row is an error).
    let rows = n / row;
    let rounds = c.rng.random_range(2..=3);
    let run_len = c.rng.random_range(1..=64u32);
    let keys: Vec<u32> = (0..n as u32).map(|i| i / run_len).collect();
    c.note(format!(
        "{} n={n} {} scan {} rows of {row} runs of {run_len} {rounds} rounds",
        T::DTYPE,
        op.name(),
        scan_kind.name()
    ));
    // Float sums of NaN/inf make every later prefix NaN: finite data here (the reduce family
    // has the specials).
    let dists: Vec<super::Dist> = (0..rounds)
        .map(|_| match c.dist() {
            super::Dist::Specials if T::IS_FLOAT => super::Dist::Random,
            d => d,
        })
        .collect();
    let data: Vec<Vec<T>> = dists.iter().map(|&d| make::<T>(&mut c.rng, n, d)).collect();

    let ctx = c.ctx;
    let d_keys = ctx.htod(&keys).unwrap();
    let mut x = ctx.alloc_zeros::<T>(n).unwrap();
    let mut o = Outputs {
        value: ctx.alloc_zeros::<T>(1).unwrap(),
        scanned: ctx.alloc_zeros::<T>(n).unwrap(),
        rows: ctx.alloc_zeros::<T>(rows).unwrap(),
        unique: ctx.alloc_zeros::<u32>(n).unwrap(),
        by_key: ctx.alloc_zeros::<T>(n).unwrap(),
        runs: ctx.alloc_zeros::<u64>(1).unwrap(),
    };
    let calls = |x: &DeviceBuffer<T>, o: &mut Outputs<T>| -> gpu_reduce::Result<()> {
        ctx.reduce_into(x, &mut o.value, op)?;
        ctx.scan(x, &mut o.scanned, op, scan_kind)?;
        let x_rows = x.view(..rows * row)?;
        ctx.segmented_reduce(x_rows, Segments::fixed(row as u64), &mut o.rows, op)?;
        ctx.reduce_by_key_into(&d_keys, x, &mut o.unique, &mut o.by_key, &mut o.runs, op)
    };
    // Once outside the graph: kernels loaded and the context's scratch made before capture.
    ctx.htod_into(&data[0], &mut x).unwrap();
    calls(&x, &mut o).unwrap();
    let graph = ctx.cuda().map(|(_, stream)| {
        stream
            .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .unwrap();
        let captured = calls(&x, &mut o);
        let g = stream
            .end_capture(
                sys::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH,
            )
            .unwrap()
            .expect("a graph");
        captured.unwrap();
        g
    });
    c.note(if graph.is_some() { "graph" } else { "queued" });
    let results = |o: &Outputs<T>| -> Vec<u8> {
        let runs = ctx.dtoh(&o.runs).unwrap()[0] as usize;
        [
            bytes(&ctx.dtoh(&o.value).unwrap()),
            bytes(&ctx.dtoh(&o.scanned).unwrap()),
            bytes(&ctx.dtoh(&o.rows).unwrap()),
            bytes(&[runs as u64]),
            bytes(&ctx.dtoh(&o.unique).unwrap()[..runs]),
            bytes(&ctx.dtoh(&o.by_key).unwrap()[..runs]),
        ]
        .concat()
    };
    let other = c.other;
    for (round, host) in data.iter().enumerate() {
        ctx.htod_into(host, &mut x).unwrap();
        match &graph {
            Some(g) => g.launch().unwrap(),
            None => calls(&x, &mut o).unwrap(),
        }
        let got = results(&o);
        // The blocking calls on another context (its stream, its grid limits).
        let want = {
            let x = other.htod(host).unwrap();
            let k = other.htod(&keys).unwrap();
            let mut scanned = other.alloc_zeros::<T>(n).unwrap();
            other.scan(&x, &mut scanned, op, scan_kind).unwrap();
            let mut row_out = other.alloc_zeros::<T>(rows).unwrap();
            let x_rows = x.view(..rows * row).unwrap();
            other
                .segmented_reduce(x_rows, Segments::fixed(row as u64), &mut row_out, op)
                .unwrap();
            let (mut unique, mut by_key) = (
                other.alloc_zeros::<u32>(n).unwrap(),
                other.alloc_zeros::<T>(n).unwrap(),
            );
            let runs = other
                .reduce_by_key(&k, &x, &mut unique, &mut by_key, op)
                .unwrap() as usize;
            [
                bytes(&[other.reduce(&x, op).unwrap()]),
                bytes(&other.dtoh(&scanned).unwrap()),
                bytes(&other.dtoh(&row_out).unwrap()),
                bytes(&[runs as u64]),
                bytes(&other.dtoh(&unique).unwrap()[..runs]),
                bytes(&other.dtoh(&by_key).unwrap()[..runs]),
            ]
            .concat()
        };
        assert!(
            got == want,
            "{}: round {round}: the {} results differ from the blocking calls'",
            c.what,
            if graph.is_some() {
                "graph's"
            } else {
                "queued calls'"
            }
        );
    }
    (n * rounds) as u64
}

fn run(c: &mut Case) -> u64 {
    match c.rng.random_range(0..3) {
        0 => case::<f32>(c),
        1 => case::<f64>(c),
        _ => case::<i64>(c),
    }
}

inventory::submit! { Family { name: "graph", run } }
