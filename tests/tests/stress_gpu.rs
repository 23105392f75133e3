//! Randomized stress, concurrency and leak checks on a GPU.

use integration_tests::gpu;
use integration_tests::stress::{check_random_cases_threads, leaked_bytes};

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn ten_thousand_random_cases_on_many_threads() {
    // 16 host threads (the CPU references are the slow part), each with its own context and
    // stream, 625 cases each, sizes up to 2^26.
    let c = check_random_cases_threads(gpu, 16, 625, 1 << 26, 0x0ddba11);
    println!("GPU stress: {c:?}, 0 mismatches");
    assert_eq!(c.reduce_cases + c.scan_cases, 10_000);
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn ten_thousand_calls_leak_nothing() {
    let leaked = leaked_bytes(&gpu(), 10_000);
    println!("GPU leak check: 10000 calls, {leaked} bytes of device memory not returned");
    assert_eq!(leaked, 0);
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn bad_input_and_out_of_memory_on_the_gpu() {
    let ctx = gpu();
    integration_tests::bad_input::check_bad_input_everywhere(&ctx);
    // Twice the free memory, in f32.
    let free = ctx.free_memory().unwrap();
    integration_tests::bad_input::check_out_of_memory(&ctx, free / 2);
}
