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
