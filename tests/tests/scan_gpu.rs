//! The production scan and the scan by key on the GPU: the simulator's test bodies at larger
//! sizes, a stress run, and > 2^32 elements. `#[ignore]`d: run with `cargo xtask test --gpu`.

use integration_tests::lookback::*;
use integration_tests::{gpu, sim};

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn scan_every_operator_type_and_kind_at_boundaries() {
    let mut sizes = scan_boundary_sizes(usize::MAX);
    sizes.extend([1_000_003, 10_000_019]);
    check_scan_every_op_and_type(&gpu(), &sizes);
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn scan_in_place_offsets_and_errors() {
    check_scan_in_place_offsets_and_errors(&gpu());
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn scan_by_key_every_operator() {
    check_scan_by_key(&gpu(), &[0, 1, 100, 4097, 20_000, 3_000_001]);
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn scan_stress_many_tiles_waiting() {
    // 2^24 + 17 i32: over a thousand tiles, more than the GPU holds at once, so tiles wait on
    // tiles that are still running; 100 runs, every element checked.
    check_scan_stress(&gpu(), (1 << 24) + 17, 100);
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn scan_stress_sleeping_lookback() {
    // 2^27 + 17 i32: 8193 tiles, a launch large enough (>= 2048 tiles) for the look-back's
    // first sleep; 6 runs, every element checked.
    check_scan_stress(&gpu(), (1 << 27) + 17, 6);
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn scan_integers_deterministic() {
    check_scan_integer_determinism(&gpu(), 10_000_000, 20);
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn lookback_walk_order_and_windows() {
    check_lookback_walk(&gpu());
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn lookback_walk_agrees_with_simulator() {
    // Same prepared states, same answers (checked against the CPU inside) on both backends.
    check_lookback_walk(&sim());
    check_lookback_walk(&gpu());
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn scan_more_than_2_pow_32_elements() {
    check_scan_huge(&gpu());
}
