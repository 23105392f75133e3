//! The f32 sum kernel on the GPU against the CPU. `#[ignore]`d: run with
//! `cargo xtask test --gpu`, which reports them skipped when no GPU is present.

use gpu_reduce::{Error, cpu};
use integration_tests::{gpu, random_f32};
use rand::{Rng, SeedableRng, rngs::SmallRng};

const NEEDS_GPU: &str = "needs a CUDA GPU: cargo xtask test --gpu";

fn check_sum(ctx: &gpu_reduce::Context, data: &[f32]) {
    let buf = ctx.htod(data).unwrap();
    let got = ctx.sum_f32(&buf).unwrap() as f64;
    let (want, sum_abs) = cpu::sum_f64(data);
    let bound = cpu::f32_sum_bound(data.len() as u64, sum_abs);
    assert!(
        (got - want).abs() <= bound,
        "n = {}: gpu {got} vs cpu {want}, bound {bound}",
        data.len()
    );
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn sum_matches_cpu_at_boundaries() {
    let _ = NEEDS_GPU;
    let ctx = gpu();
    let per_block = 256 * 8;
    let mut sizes = vec![
        0usize, 1, 2, 3, 4, 5, 31, 32, 33, 255, 256, 257, 1023, 1024, 1025,
    ];
    sizes.extend([
        per_block - 1,
        per_block,
        per_block + 1,
        2048 * per_block - 1,
        2048 * per_block + 1,
    ]);
    for k in [10, 16, 20, 24] {
        sizes.extend([(1usize << k) - 1, 1 << k, (1 << k) + 1]);
    }
    for (i, &n) in sizes.iter().enumerate() {
        check_sum(&ctx, &random_f32(n, i as u64));
    }
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn sum_matches_cpu_at_random_sizes_and_offsets() {
    let ctx = gpu();
    let mut rng = SmallRng::seed_from_u64(7);
    for case in 0..40 {
        let n = rng.random_range(0..3_000_000usize);
        let data = random_f32(n, 100 + case);
        check_sum(&ctx, &data);
        // A sub-slice starting at an odd element: the kernel's scalar head handles the
        // misalignment for 16-byte loads.
        if n > 3 {
            check_sum(&ctx, &data[1..n - 1]);
            check_sum(&ctx, &data[3..]);
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn integer_valued_sums_are_exact() {
    // Small integers: every partial sum is an integer below 2^24, so f32 arithmetic is exact
    // and any lost or double-counted element shows.
    let ctx = gpu();
    let mut rng = SmallRng::seed_from_u64(3);
    for n in [1usize, 777, 65_537, 1_000_003] {
        let data: Vec<f32> = (0..n).map(|_| rng.random_range(-8i32..=8) as f32).collect();
        let want: i64 = data.iter().map(|&x| x as i64).sum();
        let buf = ctx.htod(&data).unwrap();
        assert_eq!(ctx.sum_f32(&buf).unwrap(), want as f32, "n = {n}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn repeated_sums_give_identical_bits() {
    let ctx = gpu();
    let data = random_f32(10_000_019, 11);
    let buf = ctx.htod(&data).unwrap();
    let first = ctx.sum_f32(&buf).unwrap().to_bits();
    for _ in 0..20 {
        assert_eq!(ctx.sum_f32(&buf).unwrap().to_bits(), first);
    }
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn bad_requests_are_errors_not_panics() {
    let ctx = gpu();
    let input = ctx.htod(&random_f32(1000, 1)).unwrap();
    let mut empty = ctx.alloc_zeros::<f32>(0).unwrap();
    assert!(matches!(
        ctx.sum_f32_into(&input, &mut empty),
        Err(Error::InvalidArgument(_))
    ));

    let count = gpu_reduce::device_count().unwrap();
    assert!(matches!(
        gpu_reduce::Context::new(count),
        Err(Error::BadOrdinal { .. })
    ));

    // Far more than any GPU has: a clean OutOfMemory, and earlier buffers still work.
    let huge = ctx.alloc_zeros::<f32>(1 << 40);
    assert!(matches!(huge, Err(Error::OutOfMemory { .. })), "{huge:?}");
    let (want, _) = cpu::sum_f64(&ctx.dtoh(&input).unwrap());
    approx::assert_relative_eq!(
        ctx.sum_f32(&input).unwrap() as f64,
        want,
        max_relative = 1e-4
    );
}
