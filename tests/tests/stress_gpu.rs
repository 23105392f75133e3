//! Randomized stress, concurrency and leak checks on a GPU.

use integration_tests::gpu;
use integration_tests::stress::{check_random_cases_threads, leaked_bytes};

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn ten_thousand_random_cases_of_every_family_on_many_threads() {
    // 16 host threads (the CPU references are the slow part), each with two contexts (two
    // streams, the second with other grid limits) and the simulator for a sample; 625 cases
    // each of every family, sizes up to 2^27. STRESS_CASES: cases per thread; STRESS_SEED: the
    // run's seed (another seed gives other cases: a run split over two calls).
    let env = |k: &str| std::env::var(k).ok();
    let per_thread = env("STRESS_CASES")
        .and_then(|v| v.parse().ok())
        .unwrap_or(625);
    let seed = env("STRESS_SEED")
        .and_then(|v| u64::from_str_radix(v.trim_start_matches("0x"), 16).ok())
        .unwrap_or(0x0ddba11);
    let c = check_random_cases_threads(gpu, true, 16, per_thread, 1 << 27, seed);
    println!("GPU stress (seed {seed:#x}): {c:?}, 0 mismatches");
    assert_eq!(c.total(), 16 * per_thread);
}

/// `STRESS_REPRO=<family>:<seed> [STRESS_MAX=n]`: one case of a failed run again on the GPU.
#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn replay_one_case_on_the_gpu() {
    integration_tests::stress::replay_from_env(&gpu, true, 1 << 27);
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn ten_thousand_calls_leak_nothing() {
    let leaked = leaked_bytes(&gpu(), 10_000);
    println!(
        "GPU leak check: 10000 calls of every family, {leaked} bytes of device memory not returned"
    );
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

/// 8 threads race the first call of every family (lazy module loads, workspace creation) on one
/// context and on their own contexts: every result the same bits as a reference run.
#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn first_calls_of_every_family_race() {
    integration_tests::faults::check_first_calls_race(&gpu, 8);
}

/// The device full in the middle of every family's call: `OutOfMemory` or the right result,
/// and the same context works once memory is freed.
#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn out_of_memory_in_every_family() {
    let oom = integration_tests::faults::check_out_of_memory_every_family(&gpu);
    println!("full device: OutOfMemory from {oom:?}; every other family's result correct");
}

/// Graphs captured and never launched, and a capture invalidated halfway: the context goes on
/// giving every family's bits.
#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn abandoned_captures_leave_the_context_working() {
    integration_tests::faults::check_abandoned_captures(&gpu);
}

/// Buffers, pending values and a context dropped with their kernels in flight: no leak (the
/// sanitizer step runs the same under memcheck: no use after free).
#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn dropped_with_work_in_flight() {
    let leaked = integration_tests::faults::dropped_in_flight_leak(&gpu, 1 << 24, 50);
    println!("dropped in flight: 50 rounds, {leaked} bytes of device memory not returned");
    assert_eq!(leaked, 0);
}

/// Random cases above 2^32 elements (reduce with every operator and argmin/argmax, scans,
/// segmented sums with a segment longer than 2^32), one at a time: 17 GB per array.
#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn random_cases_above_two_to_the_32() {
    let cases = std::env::var("STRESS_HUGE_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6);
    let covered =
        integration_tests::stress::huge::check_huge_cases(&gpu(), cases, 0x4_0000_0000, 1 << 32);
    println!("huge stress: {cases} cases, {covered} elements, 0 mismatches");
}

/// A capture on one thread while other threads open contexts of the same device (found by the
/// stress's graph family: opening a context synchronised the device and broke the capture).
#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn capture_while_other_threads_open_contexts() {
    integration_tests::faults::check_capture_while_contexts_open(&gpu);
}
