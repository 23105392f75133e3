//! Float scans give the same bits every time, on every GPU, and the simulator's (issue 16).
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
