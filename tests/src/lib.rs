//! Test bodies shared by the simulator tests (run everywhere, CI included) and the GPU tests
//! (`#[ignore]`d; `cargo xtask test --gpu`). Each takes the context to run on, so the same
//! function checks both backends.

pub mod bad_input;
pub mod bench;
pub mod by_key;
pub mod deterministic;
pub mod faults;
pub mod half;
pub mod half_scan;
pub mod histogram;
pub mod interop;
pub mod lookback;
pub mod multi;
pub mod reductions;
pub mod scans;
pub mod segmented;
pub mod select;
pub mod stress;
pub mod topk;
pub mod transform;

use gpu_reduce::{Context, Error};
use gpu_reduce_tools::conformance::Conformance;
use gpu_reduce_tools::conformance::{As64, Shfl};
use gpu_reduce_tools::cpu;
use rand::{Rng, SeedableRng, rngs::SmallRng};

/// The context GPU tests run on. GPU tests are `#[ignore]`d and run only through
/// `cargo xtask test --gpu` (or the bundle's run.sh), which first checks that a device exists;
/// reaching this without one is a failure, not a pass.
/// Whether `e` is one of the typed errors of a bad argument (the variants that replaced
/// `InvalidArgument`).
pub fn is_argument_error(e: &Error) -> bool {
    matches!(
        e,
        Error::LengthMismatch { .. }
            | Error::OutputTooSmall { .. }
            | Error::OutOfRange { .. }
            | Error::BadSegment { .. }
            | Error::Unsupported { .. }
            | Error::UnsupportedOnBackend { .. }
            | Error::NotCapturable { .. }
            | Error::WrongBackend
            | Error::WrongDevice { .. }
            | Error::BadPointer { .. }
            | Error::TooLarge { .. }
            | Error::MultiGpu(_)
    )
}

pub fn gpu() -> Context {
    match Context::new(0) {
        Ok(c) => c,
        Err(e) => panic!("GPU test run without a usable GPU: {e}"),
    }
}

/// The simulator context.
pub fn sim() -> Context {
    Context::sim().expect("the simulator needs no device")
}

/// `n` uniform values in [-1, 1) from `seed`.
pub fn random_f32(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect()
}

/// Seed 002's printed table for `__shfl_down(i, 2, 8)` on one warp: `i:j` pairs.
pub const SEED_002_TABLE: &str = "0:2 1:3 2:4 3:5 4:6 5:7 6:6 7:7 8:10 9:11 10:12 11:13 12:14 13:15 14:14 15:15 \
16:18 17:19 18:20 19:21 20:22 21:23 22:22 23:23 24:26 25:27 26:28 27:29 28:30 29:31 30:30 31:31";

/// Seed 002's example: one warp, `j = shfl_down(lane, 2, width 8)`, printed as the seed does.
pub fn check_seed_002(ctx: &Context) {
    let j = ctx.conformance_shfl(Shfl::Down, 2, 8, 32).unwrap();
    let printed: Vec<String> = j
        .iter()
        .enumerate()
        .map(|(i, j)| format!("{i}:{j}"))
        .collect();
    assert_eq!(printed.join(" "), SEED_002_TABLE);
}

/// CUDA's documented semantics, written independently of the PTX formula the simulator uses:
/// the source lane, or the caller's own lane when the source lies outside what `width` allows.
/// Only the low 5 bits of the delta/mask/lane argument count (CUDA leaves larger values
/// undefined; an H200 masks them, e.g. a shuffle down by 33 moves by 1).
pub fn expected_shfl(op: Shfl, lane: u32, arg: u32, width: u32) -> u32 {
    let arg = arg & 0x1f;
    let seg = lane / width * width;
    match op {
        Shfl::Down => {
            let src = lane as u64 + arg as u64;
            if src < (seg + width) as u64 {
                src as u32
            } else {
                lane
            }
        }
        Shfl::Up => {
            if lane as i64 - arg as i64 >= seg as i64 {
                lane - arg
            } else {
                lane
            }
        }
        // Earlier segments may be read, later ones not.
        Shfl::Xor => {
            let src = lane ^ arg;
            if src < seg + width { src } else { lane }
        }
        Shfl::Idx => seg + arg % width,
    }
}

/// Every shuffle kind, width and a spread of arguments, against [`expected_shfl`], over 4 warps.
pub fn check_shfl_semantics(ctx: &Context) {
    for op in [Shfl::Down, Shfl::Up, Shfl::Xor, Shfl::Idx] {
        for width in [1, 2, 4, 8, 16, 32] {
            for arg in [0, 1, 2, 3, 5, 8, 15, 16, 31, 33] {
                let got = ctx.conformance_shfl(op, arg, width, 128).unwrap();
                for (t, &j) in got.iter().enumerate() {
                    let lane = t as u32 % 32;
                    assert_eq!(
                        j,
                        expected_shfl(op, lane, arg, width),
                        "{op:?} arg {arg} width {width} thread {t}"
                    );
                }
            }
        }
    }
}

/// Bit patterns that a 64-bit shuffle must carry intact in both halves.
pub fn tricky_u64() -> Vec<u64> {
    let mut v = vec![
        f64::NAN.to_bits(),
        0x7ff8_dead_beef_0001, // quiet NaN with a payload
        0x7ff0_0000_0000_0001, // signalling NaN payload
        0xfff8_0000_1234_5678, // negative NaN with payload
        (-0.0f64).to_bits(),
        0.0f64.to_bits(),
        f64::INFINITY.to_bits(),
        f64::NEG_INFINITY.to_bits(),
        f64::MIN_POSITIVE.to_bits(),
        1u64, // smallest subnormal
        f64::MAX.to_bits(),
        i64::MIN as u64,
        i64::MAX as u64,
        u64::MAX,
        0x0000_0001_0000_0000,
        0xffff_ffff_0000_0000,
    ];
    let mut rng = SmallRng::seed_from_u64(64);
    while v.len() < 64 {
        v.push(rng.random());
    }
    v
}

pub fn check_shfl64_bits(ctx: &Context) {
    let input = tricky_u64();
    for kind in [As64::U64, As64::F64, As64::I64] {
        for arg in [0, 1, 7, 16] {
            let got = ctx.conformance_shfl64(&input, kind, arg).unwrap();
            for (t, &g) in got.iter().enumerate() {
                let lane = t as u32 % 32;
                let src = expected_shfl(Shfl::Down, lane, arg, 32) + (t as u32 / 32) * 32;
                assert_eq!(
                    g, input[src as usize],
                    "{kind:?} arg {arg} thread {t}: {g:#018x}"
                );
            }
        }
    }
}

pub fn check_vote(ctx: &Context) {
    let mut rng = SmallRng::seed_from_u64(5);
    // Warp 0 random, warp 1 all true, warp 2 all false, warp 3 one lane.
    let mut pred: Vec<u32> = (0..32)
        .map(|_| rng.random_range(0..2) * rng.random_range(1..9))
        .collect();
    pred.extend([1; 32]);
    pred.extend([0; 32]);
    pred.extend((0..32).map(|l| (l == 17) as u32));
    let out = ctx.conformance_vote(&pred).unwrap();
    for w in 0..4 {
        let lanes = &pred[32 * w..32 * w + 32];
        let ballot = lanes
            .iter()
            .enumerate()
            .fold(0u32, |m, (l, &p)| m | (((p != 0) as u32) << l));
        for l in 0..32 {
            let t = 32 * w + l;
            assert_eq!(out[3 * t], ballot, "ballot warp {w} lane {l}");
            assert_eq!(out[3 * t + 1], (ballot != 0) as u32, "any warp {w}");
            assert_eq!(out[3 * t + 2], (ballot == u32::MAX) as u32, "all warp {w}");
        }
    }
}

/// The barrier/shared-memory kernel against a CPU model; fails if any thread passed a barrier
/// before its neighbours wrote their slot.
pub fn check_barrier_rotate(ctx: &Context) {
    for (blocks, threads, rounds) in [(1, 32, 1), (3, 64, 5), (2, 1000, 3), (1, 1024, 2)] {
        let got = ctx
            .conformance_barrier_rotate(blocks, threads, rounds)
            .unwrap();
        for b in 0..blocks {
            let mut v: Vec<u32> = (0..threads).map(|t| t + 1000 * b).collect();
            for r in 0..rounds {
                v = (0..threads)
                    .map(|t| {
                        v[((t + 1) % threads) as usize]
                            .wrapping_mul(3)
                            .wrapping_add(r)
                    })
                    .collect();
            }
            let start = (b * threads) as usize;
            assert_eq!(
                &got[start..start + threads as usize],
                &v[..],
                "{blocks}x{threads}, {rounds} rounds, block {b}"
            );
        }
    }
}

/// The f32 sum of `data` on `ctx` within the rigorous bound of the f64 sum; returns the result.
pub fn check_sum(ctx: &Context, data: &[f32]) -> f32 {
    let buf = ctx.htod(data).unwrap();
    let got = ctx.sum(&buf).unwrap();
    let (want, sum_abs) = cpu::sum_f64(data);
    let bound = cpu::f32_sum_bound(data.len() as u64, sum_abs);
    assert!(
        (got as f64 - want).abs() <= bound,
        "n = {}: got {got} vs f64 {want}, bound {bound}",
        data.len()
    );
    got
}

/// Sizes around warp, block and grid boundaries, up to `max`.
pub fn boundary_sizes(max: usize) -> Vec<usize> {
    let per_block = 256 * 8;
    let mut s = vec![
        0usize, 1, 2, 3, 4, 5, 7, 8, 9, 31, 32, 33, 255, 256, 257, 1023, 1024, 1025,
    ];
    s.extend([per_block - 1, per_block, per_block + 1, 3 * per_block + 5]);
    s.extend([2048 * per_block - 1, 2048 * per_block, 2048 * per_block + 1]);
    for k in [10, 12, 16, 20, 24] {
        s.extend([(1usize << k) - 1, 1 << k, (1 << k) + 1]);
    }
    s.retain(|&n| n <= max);
    s.sort_unstable();
    s.dedup();
    s
}

pub fn check_sum_boundaries(ctx: &Context, max: usize) {
    for (i, n) in boundary_sizes(max).into_iter().enumerate() {
        check_sum(ctx, &random_f32(n, i as u64));
    }
}

/// Small integers: every partial sum is an integer below 2^24, so f32 arithmetic is exact and
/// any lost or double-counted element shows.
pub fn check_sum_exact_integers(ctx: &Context, sizes: &[usize]) {
    let mut rng = SmallRng::seed_from_u64(3);
    for &n in sizes {
        let data: Vec<f32> = (0..n).map(|_| rng.random_range(-8i32..=8) as f32).collect();
        let want: i64 = data.iter().map(|&x| x as i64).sum();
        let buf = ctx.htod(&data).unwrap();
        assert_eq!(ctx.sum(&buf).unwrap(), want as f32, "n = {n}");
    }
}

/// Sub-slices at odd element offsets: the scalar head handles the 16-byte misalignment.
pub fn check_sum_offsets(ctx: &Context, n: usize) {
    let data = random_f32(n, 99);
    for off in [1, 2, 3, 5] {
        if off < n {
            check_sum(ctx, &data[off..]);
            check_sum(ctx, &data[off..n - off.min(n - off)]);
        }
    }
}

pub fn check_sum_repeatable(ctx: &Context, n: usize) {
    let data = random_f32(n, 11);
    let buf = ctx.htod(&data).unwrap();
    let first = ctx.sum(&buf).unwrap().to_bits();
    for _ in 0..5 {
        assert_eq!(ctx.sum(&buf).unwrap().to_bits(), first);
    }
}

/// Errors, not panics: an empty output, a bad ordinal, a huge allocation (the simulator's host
/// allocator may or may not refuse it; the GPU must).
pub fn check_bad_requests(ctx: &Context) {
    let input = ctx.htod(&random_f32(1000, 1)).unwrap();
    let mut empty = ctx.alloc_zeros::<f32>(0).unwrap();
    match ctx.reduce_into(&input, &mut empty, gpu_reduce::Reduction::Sum) {
        Err(
            e @ Error::OutputTooSmall {
                needed: 1, got: 0, ..
            },
        ) => {
            assert!(
                e.to_string().contains("output buffer of a reduction"),
                "{e}"
            )
        }
        other => panic!("expected OutputTooSmall, got {other:?}"),
    }
    match ctx.conformance_shfl(Shfl::Down, 1, 3, 32) {
        Err(e @ Error::External(_)) => assert!(e.to_string().contains("width 3"), "{e}"),
        other => panic!("expected the tool's error on width 3, got {other:?}"),
    }
    let (want, _) = cpu::sum_f64(&ctx.dtoh(&input).unwrap());
    approx::assert_relative_eq!(ctx.sum(&input).unwrap() as f64, want, max_relative = 1e-4);
}
