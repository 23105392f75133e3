//! The benchmark sweep on a GPU, small: every measurement checked, outputs written.

use integration_tests::bench::{check_bench_sweep, check_bench_sweep_half, scratch_dir};
use integration_tests::gpu;

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn bench_sweep_on_the_gpu() {
    let dir = scratch_dir("bench-gpu");
    check_bench_sweep(&gpu(), &dir, &[1000, 1 << 20, (1 << 22) + 3], true);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn bench_sweep_f16_and_bf16_on_the_gpu() {
    let dir = scratch_dir("bench-gpu-half");
    check_bench_sweep_half(&gpu(), &dir, &[1000, 1 << 20, (1 << 22) + 3]);
    let _ = std::fs::remove_dir_all(&dir);
}
