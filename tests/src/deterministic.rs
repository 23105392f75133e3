//! Every float result the library returns is the same bits on every run, grid, GPU and the
//! simulator: scans (issue 16: the cross-tile prefixes in a fixed order), reductions, dot,
//! norm, mean/variance, segmented reduce, 16-bit sums, the sharded sum over 1..N GPUs,
//! reduce by key (issue 32: the value carried between tiles in a fixed order), weighted
//! histograms and top-k (whole array and rows: their lists arrive in any order, the sort fixes
//! them).
//!
//! The bits of fixed-seed cases are recorded in `tests/data/float_bits.txt` (an FNV-1a hash of
//! every output element's bits, and the last element's bits): the simulator (CI) and every GPU
//! must reproduce them. A change of the kernels' combining order changes them on purpose; then
//! `GPU_REDUCE_RECORD_BITS=1` rewrites the cases of the run's size from the simulator (review
//! the diff; larger recorded cases are kept as they were).

use gpu_reduce::multi::MultiContext;
use gpu_reduce::{BackendKind, Context, Reduction, ScanKind, Segments};
use std::fmt::Write as _;

/// Data independent of any crate's RNG (splitmix64), so the recorded bits stay valid.
fn splitmix(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed;
    move || {
        s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// `n` values in [-1, 1) (24 random bits each).
pub fn uniform_f32(n: usize, seed: u64) -> Vec<f32> {
    let mut r = splitmix(seed);
    (0..n)
        .map(|_| (r() >> 40) as f32 / (1u64 << 23) as f32 - 1.0)
        .collect()
}

/// `n` values in [-1, 1) (53 random bits each).
pub fn uniform_f64(n: usize, seed: u64) -> Vec<f64> {
    let mut r = splitmix(seed);
    (0..n)
        .map(|_| (r() >> 11) as f64 / (1u64 << 52) as f64 - 1.0)
        .collect()
}

/// Keys in runs of 1..=`max_run` equal values.
fn run_keys(n: usize, max_run: u64, seed: u64) -> Vec<u32> {
    let mut r = splitmix(seed);
    let mut keys = Vec::with_capacity(n);
    let mut k = 0u32;
    while keys.len() < n {
        let run = 1 + (r() % max_run) as usize;
        k = k.wrapping_add(1);
        keys.extend(std::iter::repeat_n(k, run.min(n - keys.len())));
    }
    keys
}

/// CSR offsets of segments of 0..=`max_len` elements over `n` (the last one takes the rest).
fn csr_offsets(n: usize, max_len: u64, seed: u64) -> Vec<u64> {
    let mut r = splitmix(seed);
    let mut offsets = vec![0u64];
    while (*offsets.last().unwrap() as usize) < n {
        let next = offsets.last().unwrap() + r() % (max_len + 1);
        offsets.push(next.min(n as u64));
    }
    offsets
}

/// FNV-1a over the little-endian bytes of every element's bits.
fn fnv(words: impl Iterator<Item = u64>, bytes: usize) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for w in words {
        for b in &w.to_le_bytes()[..bytes] {
            h = (h ^ *b as u64).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// A float's bits, widened.
pub trait FloatBits: Copy {
    fn bits64(self) -> u64;
}
impl FloatBits for f32 {
    fn bits64(self) -> u64 {
        self.to_bits() as u64
    }
}
impl FloatBits for f64 {
    fn bits64(self) -> u64 {
        self.to_bits()
    }
}

/// The fingerprint of a few scalar results (the last one is `last`).
fn bits_of(values: &[u64]) -> Bits {
    Bits {
        hash: fnv(values.iter().copied(), 8),
        last: values.last().copied().unwrap_or(0),
    }
}

/// One recorded case's fingerprint: hash of all output bits, bits of the last element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bits {
    pub hash: u64,
    pub last: u64,
}

fn bits_f32(v: &[f32]) -> Bits {
    Bits {
        hash: fnv(v.iter().map(|x| x.to_bits() as u64), 4),
        last: v.last().map_or(0, |x| x.to_bits() as u64),
    }
}

fn bits_f64(v: &[f64]) -> Bits {
    Bits {
        hash: fnv(v.iter().map(|x| x.to_bits()), 8),
        last: v.last().map_or(0, |x| x.to_bits()),
    }
}

/// The recorded cases: name, element count. `SMALL` ones run on the simulator in CI; the
/// large one (thousands of tiles) on GPUs, and once on the simulator when recorded.
pub const SMALL: usize = (1 << 20) + 12_345;
pub const LARGE: usize = 100_000_000;
/// The reduce by key of issue 32's report: 2,000,003 u64 keys in runs of 1..500,000.
pub const ISSUE_32: usize = 2_000_003;

/// Reduce by key of `n` keys `K` in runs of 1..=`max_run` and values `T` with the sum; the
/// run count's bits first, then every aggregate's. `into`: the stream-ordered form.
fn reduce_by_key_bits<K, T>(ctx: &Context, keys: Vec<K>, vals: Vec<T>, into: bool) -> Bits
where
    K: gpu_reduce::DeviceElement,
    T: gpu_reduce::ReduceByKeyElement<K> + FloatBits,
{
    let n = vals.len();
    let (k, v) = (ctx.htod(&keys).unwrap(), ctx.htod(&vals).unwrap());
    let mut uk = ctx.alloc_zeros::<K>(n).unwrap();
    let mut agg = ctx.alloc_zeros::<T>(n).unwrap();
    let runs = if into {
        let mut count = ctx.alloc_zeros::<u64>(1).unwrap();
        ctx.reduce_by_key_into(&k, &v, &mut uk, &mut agg, &mut count, Reduction::Sum)
            .unwrap();
        ctx.dtoh(&count).unwrap()[0] as usize
    } else {
        ctx.reduce_by_key(&k, &v, &mut uk, &mut agg, Reduction::Sum)
            .unwrap() as usize
    };
    let a = ctx.dtoh(&agg).unwrap();
    let words = std::iter::once(runs as u64).chain(a[..runs].iter().map(|x| x.bits64()));
    Bits {
        hash: fnv(words, 8),
        last: a[..runs].last().map_or(0, |x| x.bits64()),
    }
}

/// A top-k's fingerprint: every value's bits, then every index; the last index.
fn topk_bits(v: Vec<f32>, i: Vec<u64>) -> Bits {
    let words = v
        .iter()
        .map(|x| x.to_bits() as u64)
        .chain(i.iter().copied());
    Bits {
        hash: fnv(words, 8),
        last: i.last().copied().unwrap_or(0),
    }
}

/// Run case `name` at `n` elements on `ctx`.
pub fn run_case(ctx: &Context, name: &str, n: usize) -> Bits {
    let scan_f32 = |kind| {
        let x = ctx.htod(&uniform_f32(n, 16)).unwrap();
        let mut out = ctx.alloc_zeros::<f32>(n).unwrap();
        ctx.scan(&x, &mut out, Reduction::Sum, kind).unwrap();
        bits_f32(&ctx.dtoh(&out).unwrap())
    };
    match name {
        "f32_inclusive_sum" => scan_f32(ScanKind::Inclusive),
        "f32_exclusive_sum" => scan_f32(ScanKind::Exclusive),
        "f64_inclusive_sum" => {
            let x = ctx.htod(&uniform_f64(n, 17)).unwrap();
            let mut out = ctx.alloc_zeros::<f64>(n).unwrap();
            ctx.scan(&x, &mut out, Reduction::Sum, ScanKind::Inclusive)
                .unwrap();
            bits_f64(&ctx.dtoh(&out).unwrap())
        }
        "f32_inclusive_sum_by_key" => {
            let k = ctx.htod(&run_keys(n, 5000, 18)).unwrap();
            let v = ctx.htod(&uniform_f32(n, 19)).unwrap();
            let mut out = ctx.alloc_zeros::<f32>(n).unwrap();
            ctx.scan_by_key(&k, &v, &mut out, Reduction::Sum, ScanKind::Inclusive)
                .unwrap();
            bits_f32(&ctx.dtoh(&out).unwrap())
        }
        "f32_sum" => bits_of(&[ctx
            .sum(&ctx.htod(&uniform_f32(n, 30)).unwrap())
            .unwrap()
            .bits64()]),
        "f64_sum" => bits_of(&[ctx
            .sum(&ctx.htod(&uniform_f64(n, 31)).unwrap())
            .unwrap()
            .bits64()]),
        "f32_sum_unaligned" => {
            // A view one element in: another head/body/tail cut of the same tiles.
            let x = ctx.htod(&uniform_f32(n + 1, 32)).unwrap();
            bits_of(&[ctx.sum(x.view(1..).unwrap()).unwrap().bits64()])
        }
        "f16_bf16_sum" => {
            let h: Vec<half::f16> = uniform_f32(n, 33)
                .into_iter()
                .map(half::f16::from_f32)
                .collect();
            let b: Vec<half::bf16> = uniform_f32(n, 34)
                .into_iter()
                .map(half::bf16::from_f32)
                .collect();
            let sh = ctx.sum(&ctx.htod(&h).unwrap()).unwrap();
            let sb = ctx.sum(&ctx.htod(&b).unwrap()).unwrap();
            bits_of(&[sh.bits64(), sb.bits64()])
        }
        "f32_dot_norm_var" => {
            let x = ctx.htod(&uniform_f32(n, 35)).unwrap();
            let y = ctx.htod(&uniform_f32(n, 36)).unwrap();
            let m = ctx.mean_var(&x).unwrap().expect("non-empty");
            bits_of(&[
                ctx.dot(&x, &y).unwrap().bits64(),
                ctx.norm2(&x).unwrap().bits64(),
                ctx.sum_of_squares(&x).unwrap().bits64(),
                m.mean.bits64(),
                m.variance.bits64(),
            ])
        }
        "f64_dot_norm" => {
            let x = ctx.htod(&uniform_f64(n, 37)).unwrap();
            let y = ctx.htod(&uniform_f64(n, 38)).unwrap();
            bits_of(&[
                ctx.dot(&x, &y).unwrap().bits64(),
                ctx.norm2(&x).unwrap().bits64(),
            ])
        }
        "f32_segmented_sum" | "f64_segmented_sum" | "f32_segmented_sum_tiles" => {
            // Segments of 0..3000 elements, some empty (the work list's forms: a segment's bits
            // by its length alone); `_tiles`: of 0..30 (read as tiles).
            let longest = if name.ends_with("_tiles") { 30 } else { 3000 };
            let mut offsets = csr_offsets(n, longest, 39);
            let len = offsets.len();
            // A run of empty segments, then one long one (several chunks: the work list).
            let at = offsets[len / 4];
            offsets[len / 4..len / 2].fill(at);
            let segs = offsets.len() - 1;
            let off = ctx.htod(&offsets).unwrap();
            if name.starts_with("f32") {
                let x = ctx.htod(&uniform_f32(n, 40)).unwrap();
                let mut out = ctx.alloc_zeros::<f32>(segs).unwrap();
                ctx.segmented_reduce(&x, Segments::csr(&off), &mut out, Reduction::Sum)
                    .unwrap();
                bits_f32(&ctx.dtoh(&out).unwrap())
            } else {
                let x = ctx.htod(&uniform_f64(n, 41)).unwrap();
                let mut out = ctx.alloc_zeros::<f64>(segs).unwrap();
                ctx.segmented_reduce(&x, Segments::csr(&off), &mut out, Reduction::Sum)
                    .unwrap();
                bits_f64(&ctx.dtoh(&out).unwrap())
            }
        }
        "f32_multi_sum" => {
            // Three ranks on the simulator, one on a GPU: the same bits for any rank count.
            let m = match ctx.backend_kind() {
                BackendKind::Sim => MultiContext::sim(3).unwrap(),
                BackendKind::Cuda => MultiContext::new(vec![Context::new(0).unwrap()]).unwrap(),
            };
            let x = uniform_f32(n, 42);
            let lengths = match m.world() {
                1 => vec![n],
                _ => vec![n / 3 + 7, n / 3 - 7, n - 2 * (n / 3)],
            };
            let b = m.htod(&x, &crate::multi::u64s(&lengths)).unwrap();
            bits_of(&[m.reduce(&b, Reduction::Sum).unwrap().bits64()])
        }
        "f32_reduce_by_key_sum" => {
            // Issue 32's report: u64 keys in runs of 1..500,000 (up to ~245 tiles of 2048, several
            // windows of the fixed order).
            let keys: Vec<u64> = run_keys(n, 500_000, 43)
                .into_iter()
                .map(u64::from)
                .collect();
            reduce_by_key_bits(ctx, keys, uniform_f32(n, 44), false)
        }
        "f32_reduce_by_key_sum_into" => {
            let keys: Vec<u64> = run_keys(n, 500_000, 43)
                .into_iter()
                .map(u64::from)
                .collect();
            reduce_by_key_bits(ctx, keys, uniform_f32(n, 44), true)
        }
        "f64_reduce_by_key_sum" => {
            reduce_by_key_bits(ctx, run_keys(n, 9000, 45), uniform_f64(n, 46), false)
        }
        "f32_histogram_weighted" => {
            // 1000 even bins over [-1, 1), weights over 2^40 of range, both signs.
            let x = ctx.htod(&uniform_f32(n, 47)).unwrap();
            let w: Vec<f32> = uniform_f32(n, 48)
                .into_iter()
                .enumerate()
                .map(|(i, v)| v * 2f32.powi((i % 41) as i32 - 20))
                .collect();
            let mut sums = ctx.alloc_zeros::<f32>(1000).unwrap();
            ctx.histogram_even_weighted(&x, &ctx.htod(&w).unwrap(), &mut sums, -1.0, 1.0)
                .unwrap();
            bits_f32(&ctx.dtoh(&sums).unwrap())
        }
        "f64_histogram_weighted" => {
            // 3000 bins (past the shared digit sums: global atomics).
            let x = ctx.htod(&uniform_f64(n, 49)).unwrap();
            let w: Vec<f64> = uniform_f64(n, 50)
                .into_iter()
                .enumerate()
                .map(|(i, v)| v * 2f64.powi((i % 61) as i32 - 30))
                .collect();
            let mut sums = ctx.alloc_zeros::<f64>(3000).unwrap();
            ctx.histogram_even_weighted(&x, &ctx.htod(&w).unwrap(), &mut sums, -1.0, 1.0)
                .unwrap();
            bits_f64(&ctx.dtoh(&sums).unwrap())
        }
        "f32_topk" => {
            // The 1000 largest, sorted: values' bits then indices.
            let x = ctx.htod(&uniform_f32(n, 51)).unwrap();
            let (mut v, mut i) = (
                ctx.alloc_zeros::<f32>(1000).unwrap(),
                ctx.alloc_zeros::<u64>(1000).unwrap(),
            );
            ctx.topk(&x, &mut v, &mut i, gpu_reduce::TopK::LARGEST.sorted())
                .unwrap();
            topk_bits(ctx.dtoh(&v).unwrap(), ctx.dtoh(&i).unwrap())
        }
        "f32_topk_rows" => {
            // Rows of 1021, the 50 smallest of each in index order (values with 12 random bits:
            // ties across the k-th).
            let cols = 1021;
            let x: Vec<f32> = uniform_f32(n / cols * cols, 52)
                .into_iter()
                .map(|v| (v * 2048.0).round() / 2048.0)
                .collect();
            let rows = x.len() / cols;
            let (mut v, mut i) = (
                ctx.alloc_zeros::<f32>(rows * 50).unwrap(),
                ctx.alloc_zeros::<u64>(rows * 50).unwrap(),
            );
            let x = ctx.htod(&x).unwrap();
            ctx.topk_rows(&x, cols as u64, &mut v, &mut i, gpu_reduce::TopK::SMALLEST)
                .unwrap();
            topk_bits(ctx.dtoh(&v).unwrap(), ctx.dtoh(&i).unwrap())
        }
        _ => panic!("no case {name}"),
    }
}

/// The small cases (every recorded kind).
pub const CASES: [&str; 21] = [
    "f32_inclusive_sum",
    "f32_exclusive_sum",
    "f64_inclusive_sum",
    "f32_inclusive_sum_by_key",
    "f32_sum",
    "f64_sum",
    "f32_sum_unaligned",
    "f16_bf16_sum",
    "f32_dot_norm_var",
    "f64_dot_norm",
    "f32_segmented_sum",
    "f64_segmented_sum",
    "f32_segmented_sum_tiles",
    "f32_multi_sum",
    "f32_reduce_by_key_sum",
    "f32_reduce_by_key_sum_into",
    "f64_reduce_by_key_sum",
    "f32_histogram_weighted",
    "f64_histogram_weighted",
    "f32_topk",
    "f32_topk_rows",
];

/// Every recorded (case, n): all cases at `SMALL`, issue 32's reduce by key at its size, and
/// the scans and sums at `LARGE` (thousands of tiles; on GPUs, and on the simulator when
/// recorded).
pub fn recorded_cases() -> Vec<(&'static str, usize)> {
    let mut v: Vec<(&str, usize)> = CASES.iter().map(|&c| (c, SMALL)).collect();
    v.push(("f32_reduce_by_key_sum", ISSUE_32));
    for c in [
        "f32_inclusive_sum",
        "f32_exclusive_sum",
        "f64_inclusive_sum",
        "f32_inclusive_sum_by_key",
        "f32_sum",
        "f32_reduce_by_key_sum",
    ] {
        v.push((c, LARGE));
    }
    v
}

fn data_file() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/float_bits.txt")
}

/// The recorded fingerprints: `name n hash last` per line (hex), `#` comments.
pub fn recorded() -> Vec<(String, usize, Bits)> {
    // Compiled in: GPU test binaries run in bundles, away from the source tree.
    let text = include_str!("../data/float_bits.txt");
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            assert_eq!(f.len(), 4, "bad line in float_bits.txt: {l}");
            let hex = |s: &str| u64::from_str_radix(s, 16).expect("hex");
            (
                f[0].to_string(),
                f[1].parse().expect("n"),
                Bits {
                    hash: hex(f[2]),
                    last: hex(f[3]),
                },
            )
        })
        .collect()
}

/// Every recorded case of at most `max_n` elements, run on `ctx`, gives the recorded bits.
/// With `GPU_REDUCE_RECORD_BITS=1` (simulator only) the file is rewritten instead, every
/// size included.
pub fn check_recorded_bits(ctx: &Context, max_n: usize) {
    if std::env::var("GPU_REDUCE_RECORD_BITS").is_ok_and(|v| v == "1") {
        assert!(
            ctx.backend_kind() == BackendKind::Sim,
            "record the bits from the simulator"
        );
        let old = recorded();
        let mut text = String::from(
            "# Float fingerprints (tests/src/deterministic.rs): case, n, FNV-1a of all output\n\
             # bits, bits of the last element. Written by the simulator; every GPU must match.\n",
        );
        for (name, n) in recorded_cases() {
            // Cases above `max_n` keep their recorded bits (a release build records them all).
            let b = if n <= max_n {
                run_case(ctx, name, n)
            } else {
                match old.iter().find(|(c, m, _)| c == name && *m == n) {
                    Some((_, _, b)) => *b,
                    None => run_case(ctx, name, n),
                }
            };
            writeln!(text, "{name} {n} {:016x} {:016x}", b.hash, b.last).unwrap();
        }
        std::fs::write(data_file(), text).unwrap();
        return;
    }
    let mut checked = 0;
    for (name, n, want) in recorded() {
        if n > max_n {
            continue;
        }
        let got = run_case(ctx, &name, n);
        assert_eq!(got, want, "{name} at n = {n}: not the recorded bits");
        checked += 1;
    }
    assert!(checked > 0, "no recorded case of at most {max_n} elements");
}

/// `run(r)` gives the same bits for `r` in `0..reps`, with an f32 scan of `n` elements queued
/// before every other run on `noise`, a second stream of the same device (different blocks
/// take the SMs, so tiles run and publish in a different timing).
fn same_bits_with_noise(
    noise: Option<&Context>,
    n: usize,
    reps: usize,
    what: &str,
    mut run: impl FnMut(usize) -> Bits,
) {
    let mut busy = noise.map(|c| {
        let b = c.htod(&uniform_f32(n, 22)).unwrap();
        let o = c.alloc_zeros::<f32>(n).unwrap();
        (c, b, o)
    });
    let mut first = None;
    for r in 0..reps {
        if r % 2 == 1
            && let Some((c, b, o)) = busy.as_mut()
        {
            // Queued before ours, on its own stream: the two share the GPU.
            c.scan(&*b, &mut *o, Reduction::Sum, ScanKind::Inclusive)
                .unwrap();
        }
        let b = run(r);
        match first {
            None => first = Some(b),
            Some(f) => assert_eq!(b, f, "{what}: run {r} of {reps}: different bits"),
        }
        if let Some((c, _, _)) = busy.as_ref() {
            c.synchronize().unwrap();
        }
    }
}

/// `reps` scans of the same `n` f32 give the same bits, with other work beside them on
/// `noise` every other run.
pub fn check_repeatable(ctx: &Context, noise: Option<&Context>, n: usize, reps: usize) {
    let x = ctx.htod(&uniform_f32(n, 21)).unwrap();
    let mut out = ctx.alloc_zeros::<f32>(n).unwrap();
    same_bits_with_noise(noise, n, reps, "scan", |_| {
        ctx.scan(&x, &mut out, Reduction::Sum, ScanKind::Inclusive)
            .unwrap();
        bits_f32(&ctx.dtoh(&out).unwrap())
    });
}

/// `reps` reductions by key of issue 32's shape (u64 keys in runs of 1..`max_run`, f32 sums;
/// every third through `reduce_by_key_into`) give the same run count and aggregate bits, with
/// other work beside them on `noise` every other run.
pub fn check_reduce_by_key_repeatable(
    ctx: &Context,
    noise: Option<&Context>,
    n: usize,
    max_run: u64,
    reps: usize,
) {
    let keys: Vec<u64> = run_keys(n, max_run, 47)
        .into_iter()
        .map(u64::from)
        .collect();
    let vals = uniform_f32(n, 48);
    same_bits_with_noise(noise, n, reps, "reduce by key", |r| {
        reduce_by_key_bits(ctx, keys.clone(), vals.clone(), r % 3 == 2)
    });
}

/// Accuracy against an exact reference on adversarial data: large values that cancel (so the
/// prefixes are small against the terms) and a wide exponent range (2^-30 .. 2^30). Every
/// f32 here is a multiple of 2^-53 below 2^31, so i128 sums of `x · 2^53` are exact. Bound:
/// each prefix is a combination of its terms with at most `depth` roundings on any path, so
/// `|error| <= depth · 2^-24 · sum |x_j|`, with `depth = 64 + tiles / 32 + log2(n)` (within a
/// tile: 4 elements, a 5-level warp scan, 16 rows, 8 warps; across tiles: the chain of group
/// checkpoints, two 5-level group trees, three more combinations).
pub fn check_accuracy(ctx: &Context, n: usize) {
    let mut r = splitmix(23);
    let tile = kernels::scan::policy::ACTIVE.tile_elems(4) as usize;
    let x: Vec<f32> = (0..n)
        .map(|i| {
            let e = (r() % 61) as i32 - 30;
            let m = 1.0 + (r() >> 41) as f32 / (1u64 << 23) as f32;
            let v = m * 2f32.powi(e);
            // Pairs of equal magnitude and opposite sign, plus the small ones: cancellation.
            if i % 2 == 0 {
                v
            } else {
                -v * (1.0 - 2f32.powi(-20))
            }
        })
        .collect();
    let d = ctx.htod(&x).unwrap();
    let mut out = ctx.alloc_zeros::<f32>(n).unwrap();
    ctx.scan(&d, &mut out, Reduction::Sum, ScanKind::Inclusive)
        .unwrap();
    let got = ctx.dtoh(&out).unwrap();
    let scale = 2f64.powi(53);
    let depth = 64.0 + (n.div_ceil(tile) as f64) / 32.0 + (n as f64).log2();
    let (mut exact, mut abs) = (0i128, 0f64);
    let mut worst = 0f64;
    for (i, (&xi, &g)) in x.iter().zip(&got).enumerate() {
        let q = xi as f64 * scale;
        assert_eq!(q.fract(), 0.0, "test data must be exact in i128");
        exact += q as i128;
        abs += (xi as f64).abs();
        let e = exact as f64 / scale;
        let err = (g as f64 - e).abs();
        let bound = depth * 2f64.powi(-24) * abs;
        assert!(
            err <= bound,
            "element {i} of {n}: got {g}, exact {e}, error {err:e} > bound {bound:e}"
        );
        worst = worst.max(err / abs);
    }
    assert!(worst.is_finite());
}

/// The simulator and `ctx` (a GPU) give the same bits for the small cases (directly, not only
/// through the recorded file).
pub fn check_same_as_simulator(ctx: &Context) {
    let sim = crate::sim();
    for name in CASES {
        assert_eq!(
            run_case(ctx, name, SMALL),
            run_case(&sim, name, SMALL),
            "{name}: GPU and simulator differ"
        );
    }
}

/// Data of `n` uniform values with NaNs of odd payloads (negative, signalling, with payload
/// bits) and both infinities at fixed places: every sum over it is a NaN.
fn with_nans_f32(n: usize, seed: u64) -> Vec<f32> {
    let mut x = uniform_f32(n, seed);
    let odd = [0xffc1_2345u32, 0x7f80_0001, 0x7fc0_0f00, 0xff80_0077];
    for (k, &b) in odd.iter().enumerate() {
        x[(k * 7919 + n / 3) % n] = f32::from_bits(b);
    }
    x[n / 2] = f32::INFINITY;
    x[n - 1] = f32::NEG_INFINITY;
    x
}

fn with_nans_f64(n: usize, seed: u64) -> Vec<f64> {
    let mut x = uniform_f64(n, seed);
    let odd = [
        0xfff8_0000_1234_5678u64,
        0x7ff0_0000_0000_0001,
        0x7ff8_dead_beef_0000,
    ];
    for (k, &b) in odd.iter().enumerate() {
        x[(k * 7919 + n / 3) % n] = f64::from_bits(b);
    }
    x[n / 2] = f64::INFINITY;
    x[n - 1] = f64::NEG_INFINITY;
    x
}

/// Every NaN of `v` has the canonical bits (CUDA's, `0x7fffffff`); returns how many NaNs
/// there were.
fn canonical_f32(v: &[f32], what: &str) -> usize {
    let nans = v.iter().filter(|x| x.is_nan()).count();
    if let Some((i, x)) = v
        .iter()
        .enumerate()
        .find(|(_, x)| x.is_nan() && x.to_bits() != 0x7fff_ffff)
    {
        panic!(
            "{what}: element {i} is the NaN {:#010x}, not the canonical one",
            x.to_bits()
        );
    }
    nans
}

fn canonical_f64(v: &[f64], what: &str) -> usize {
    let nans = v.iter().filter(|x| x.is_nan()).count();
    if let Some((i, x)) = v
        .iter()
        .enumerate()
        .find(|(_, x)| x.is_nan() && x.to_bits() != f64::NAN.to_bits())
    {
        panic!(
            "{what}: element {i} is the NaN {:#018x}, not the canonical one",
            x.to_bits()
        );
    }
    nans
}

/// Every float the library computes comes back as the one canonical NaN when it is a NaN,
/// whatever NaNs the input holds and whichever NaN the hardware's addition picks (the GPU's
/// and the CPU's rules differ, and depend on operand order): the sums, products and
/// min/max of the reductions (on several grids), scans, scans by key, segmented reduce,
/// reduce by key, dot, norm, sum of squares, mean/variance, the compensated and 16-bit sums
/// min_max and the sharded sum. An uncanonicalized result fails here on the simulator too (the x86
/// addition keeps an input NaN's payload).
pub fn check_nan_results_canonical(ctx: &Context, n: usize) {
    let x32 = with_nans_f32(n, 50);
    let x64 = with_nans_f64(n, 51);
    let (d32, d64) = (ctx.htod(&x32).unwrap(), ctx.htod(&x64).unwrap());
    for grid in [None, Some(1), Some(3)] {
        ctx.set_reduce_grid_limit(grid);
        for op in [
            Reduction::Sum,
            Reduction::Product,
            Reduction::Min,
            Reduction::Max,
        ] {
            let what = format!("reduce {} on grid {grid:?}", op.name());
            let a = ctx.reduce(&d32, op).unwrap();
            let b = ctx.reduce(&d64, op).unwrap();
            assert_eq!(
                canonical_f32(&[a], &what) + canonical_f64(&[b], &what),
                2,
                "{what}"
            );
        }
        let what = format!("sums on grid {grid:?}");
        let s = [ctx.sum(&d32).unwrap(), ctx.sum_compensated(&d32).unwrap()];
        assert_eq!(canonical_f32(&s, &what), 2, "{what}");
        let s = [ctx.sum(&d64).unwrap(), ctx.sum_of_squares(&d32).unwrap()];
        assert_eq!(canonical_f64(&s, &what), 2, "{what}");
        let s = [
            ctx.dot(&d32, &d32).unwrap(),
            ctx.norm2(&d32).unwrap(),
            ctx.mean_var(&d32).unwrap().expect("non-empty").mean,
        ];
        assert_eq!(canonical_f32(&s, &what), 3, "{what}: dot, norm, mean");
        let s = [ctx.dot(&d64, &d64).unwrap(), ctx.norm2(&d64).unwrap()];
        assert_eq!(canonical_f64(&s, &what), 2, "{what}: f64 dot, norm");
        let (lo, hi) = ctx.min_max(&d32).unwrap().expect("non-empty");
        assert_eq!(canonical_f32(&[lo, hi], &what), 2, "{what}: min_max");
        let h: Vec<half::f16> = x32.iter().map(|&v| half::f16::from_f32(v)).collect();
        let b: Vec<half::bf16> = x32.iter().map(|&v| half::bf16::from_f32(v)).collect();
        let s = [
            ctx.sum(&ctx.htod(&h).unwrap()).unwrap(),
            ctx.sum(&ctx.htod(&b).unwrap()).unwrap(),
        ];
        assert_eq!(canonical_f32(&s, &what), 2, "{what}: f16, bf16");
    }
    ctx.set_reduce_grid_limit(None);

    for kind in [ScanKind::Inclusive, ScanKind::Exclusive] {
        for op in [Reduction::Sum, Reduction::Max, Reduction::Min] {
            let what = format!("{kind:?} {} scan", op.name());
            let mut o32 = ctx.alloc_zeros::<f32>(n).unwrap();
            ctx.scan(&d32, &mut o32, op, kind).unwrap();
            assert!(canonical_f32(&ctx.dtoh(&o32).unwrap(), &what) > 0, "{what}");
            let mut o64 = ctx.alloc_zeros::<f64>(n).unwrap();
            ctx.scan(&d64, &mut o64, op, kind).unwrap();
            assert!(canonical_f64(&ctx.dtoh(&o64).unwrap(), &what) > 0, "{what}");
        }
    }
    // Keys in runs: the segmented scan, reduce by key and segmented reduce see the NaNs in
    // some runs and not in others.
    let keys = ctx.htod(&run_keys(n, 5000, 52)).unwrap();
    for kind in [ScanKind::Inclusive, ScanKind::Exclusive] {
        let what = format!("{kind:?} scan by key");
        let mut o32 = ctx.alloc_zeros::<f32>(n).unwrap();
        ctx.scan_by_key(&keys, &d32, &mut o32, Reduction::Sum, kind)
            .unwrap();
        assert!(canonical_f32(&ctx.dtoh(&o32).unwrap(), &what) > 0, "{what}");
        let mut o64 = ctx.alloc_zeros::<f64>(n).unwrap();
        ctx.scan_by_key(&keys, &d64, &mut o64, Reduction::Max, kind)
            .unwrap();
        assert!(canonical_f64(&ctx.dtoh(&o64).unwrap(), &what) > 0, "{what}");
    }
    let mut uk = ctx.alloc_zeros::<u32>(n).unwrap();
    let mut agg = ctx.alloc_zeros::<f64>(n).unwrap();
    let runs = ctx
        .reduce_by_key(&keys, &d64, &mut uk, &mut agg, Reduction::Sum)
        .unwrap() as usize;
    assert!(canonical_f64(&ctx.dtoh(&agg).unwrap()[..runs], "reduce by key") > 0);
    let mut agg32 = ctx.alloc_zeros::<f32>(n).unwrap();
    let runs = ctx
        .reduce_by_key(&keys, &d32, &mut uk, &mut agg32, Reduction::Max)
        .unwrap() as usize;
    assert!(canonical_f32(&ctx.dtoh(&agg32).unwrap()[..runs], "reduce by key max") > 0);
    // The first value of each run is a copy, as every compaction's: its bits, NaN payloads
    // and all.
    let runs = ctx.unique_by_key(&keys, &d32, &mut uk, &mut agg32).unwrap() as usize;
    let hk = ctx.dtoh(&keys).unwrap();
    let heads: Vec<u32> = (0..n)
        .filter(|&i| i == 0 || hk[i] != hk[i - 1])
        .map(|i| x32[i].to_bits())
        .collect();
    let got: Vec<u32> = ctx.dtoh(&agg32).unwrap()[..runs]
        .iter()
        .map(|v| v.to_bits())
        .collect();
    assert_eq!(got, heads, "unique by key: the first values' bits");
    let offsets = ctx.htod(&csr_offsets(n, 3000, 53)).unwrap();
    let segs = offsets.len() - 1;
    let mut out = ctx.alloc_zeros::<f32>(segs).unwrap();
    ctx.segmented_reduce(&d32, Segments::csr(&offsets), &mut out, Reduction::Sum)
        .unwrap();
    assert!(canonical_f32(&ctx.dtoh(&out).unwrap(), "segmented reduce") > 0);
    // Rows of a matrix (their own kernels).
    let rows = n / 1000;
    let mut out = ctx.alloc_zeros::<f32>(rows).unwrap();
    let x = d32.view(0..rows * 1000).unwrap();
    ctx.segmented_reduce(x, Segments::fixed(1000), &mut out, Reduction::Sum)
        .unwrap();
    assert!(canonical_f32(&ctx.dtoh(&out).unwrap(), "segmented rows") > 0);

    // The sharded sum: the ranks' partials combined on the host (its NaN rules, not the GPU's).
    let m = match ctx.backend_kind() {
        BackendKind::Sim => MultiContext::sim(3).unwrap(),
        BackendKind::Cuda => MultiContext::new(vec![Context::new(0).unwrap()]).unwrap(),
    };
    let lengths = match m.world() {
        1 => vec![n],
        _ => vec![n / 3 + 7, n / 3 - 7, n - 2 * (n / 3)],
    };
    let b = m.htod(&x64, &crate::multi::u64s(&lengths)).unwrap();
    let s = m.reduce(&b, Reduction::Sum).unwrap();
    assert_eq!(canonical_f64(&[s], "sharded sum"), 1);
    // The host's combine as well.
    let c = Reduction::Sum
        .combine(f64::from_bits(0xfff8_0000_0000_0001), 1.0)
        .unwrap();
    assert_eq!(canonical_f64(&[c], "Reduction::combine"), 1);
}
