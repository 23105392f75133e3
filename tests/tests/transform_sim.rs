//! Maps applied on load on the simulator (runs everywhere, CI included).

use integration_tests::{sim, transform::*};

#[test]
fn squares_and_norm() {
    check_squares_and_norm(&sim(), 100_003);
}

#[test]
fn mean_and_variance() {
    check_mean_var(&sim(), 300_001);
}

#[test]
fn min_and_max() {
    check_min_max(&sim(), 70_001);
}

#[test]
fn deterministic_across_grids() {
    check_transform_deterministic(&sim(), 100_000);
}

#[test]
fn dot_product() {
    check_dot(&sim(), 100_001);
}

#[test]
fn mean_and_variance_long() {
    // Past 792 tiles x 256 threads x 4 vectors (3.2M f32), so every thread's first step has
    // four loads in flight and the loop runs after it.
    check_mean_var(&sim(), 3_300_007);
}

#[test]
fn deterministic_across_grids_long() {
    // The variance's first step of four loads in every thread, under every grid.
    check_transform_deterministic(&sim(), 3_300_007);
}

#[test]
fn value_forms_agree() {
    check_value_forms(&sim(), 100_003);
}
