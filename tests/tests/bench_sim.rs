//! The benchmark sweep on the CPU SIMT simulator (CI): tiny sizes, every output written and
//! read back.

use integration_tests::bench::{check_bench_sweep, check_bench_sweep_half, scratch_dir};
use integration_tests::sim;

#[test]
fn bench_sweep_writes_json_markdown_and_plots() {
    let dir = scratch_dir("bench-sim");
    check_bench_sweep(&sim(), &dir, &[1000, 1 << 11], false);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bench_sweep_with_the_ladder() {
    let dir = scratch_dir("bench-sim-ladder");
    check_bench_sweep(&sim(), &dir, &[1 << 10], true);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bench_sweep_f16_and_bf16() {
    let dir = scratch_dir("bench-sim-half");
    check_bench_sweep_half(&sim(), &dir, &[1000, 1 << 11, 4097]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bench_multi_gpu_ops() {
    integration_tests::bench::check_bench_multi(&sim(), &[5000, 1 << 13]);
}
