//! Maps applied on load on a GPU. `#[ignore]`d: `cargo xtask test --gpu`.

use integration_tests::{gpu, transform::*};

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn squares_and_norm() {
    check_squares_and_norm(&gpu(), 20_000_003);
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn mean_and_variance() {
    check_mean_var(&gpu(), 30_000_001);
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn min_and_max() {
    check_min_max(&gpu(), 10_000_019);
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn deterministic_across_grids() {
    check_transform_deterministic(&gpu(), 20_000_003);
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn dot_product() {
    check_dot(&gpu(), 20_000_003);
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn value_forms_agree() {
    check_value_forms(&gpu(), 20_000_003);
}
