//! Randomized stress on the CPU SIMT simulator (CI): random operators, types, sizes biased to
//! boundaries, offsets and distributions, each case against the CPU; and several threads at
//! once, each with its own context.

use integration_tests::sim;
use integration_tests::stress::{check_random_cases, check_random_cases_threads};

#[test]
fn random_cases_match_the_cpu() {
    let cases = std::env::var("STRESS_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let c = check_random_cases(&sim(), cases, 1 << 14, 0x5eed);
    println!("simulator stress: {c:?}, 0 mismatches");
    assert_eq!(c.reduce_cases + c.scan_cases, cases);
    assert!(c.reduce_cases > 100 && c.scan_cases > 100, "{c:?}");
}

#[test]
fn threads_with_their_own_contexts() {
    let c = check_random_cases_threads(sim, 3, 40, 1 << 13, 0xc0c0);
    println!("simulator stress, 3 threads: {c:?}, 0 mismatches");
    assert_eq!(c.reduce_cases + c.scan_cases, 120);
}
