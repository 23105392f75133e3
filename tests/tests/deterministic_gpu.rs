//! Every float result gives the same bits every time, on every GPU, and the simulator's
//! (issues 16 and 32).
//! `#[ignore]`d: run with `cargo xtask test --gpu`.

use integration_tests::deterministic::*;
use integration_tests::gpu;

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn recorded_bits() {
    // The simulator's recorded bits, also at 1e8 (6104 f32 tiles).
    check_recorded_bits(&gpu(), LARGE);
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn same_bits_as_simulator() {
    check_same_as_simulator(&gpu());
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn repeatable_many_runs_with_noise() {
    // 1e8 f32 (6104 tiles), 60 runs; every other one shares the GPU with another scan on a
    // second stream.
    let ctx = gpu();
    let (cuda, _) = ctx.cuda().expect("a GPU context");
    let noise = gpu_reduce::Context::from_stream(cuda.new_stream().unwrap()).unwrap();
    check_repeatable(&ctx, Some(&noise), LARGE, 60);
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn accuracy_against_exact() {
    check_accuracy(&gpu(), 100_000_007);
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn reduce_by_key_repeatable_many_runs_with_noise() {
    // Issue 32's report: 2,000,003 u64 keys in runs of 1..500,000, f32 sums, compared run to
    // run, 40 times (it differed before the fixed order); then 2^26 keys in runs of 1..100, 20 times.
    let ctx = gpu();
    let (cuda, _) = ctx.cuda().expect("a GPU context");
    let noise = gpu_reduce::Context::from_stream(cuda.new_stream().unwrap()).unwrap();
    check_reduce_by_key_repeatable(&ctx, Some(&noise), ISSUE_32, 500_000, 40);
    check_reduce_by_key_repeatable(&ctx, Some(&noise), 1 << 26, 100, 20);
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn nan_results_are_the_canonical_nan() {
    // 50,078 f64 (49 tiles) is the stress case that found the GPU's NaN pick (session 10);
    // 3,000,017: thousands of tiles.
    let ctx = gpu();
    for n in [50_078, 3_000_017] {
        check_nan_results_canonical(&ctx, n);
    }
}
