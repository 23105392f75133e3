//! The reduce by key on the GPU (`cargo xtask test --gpu`).

use integration_tests::by_key::*;
use integration_tests::gpu;

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn reduce_by_key_every_operator_and_key_type() {
    check_reduce_by_key(&gpu(), &[0, 1, 2, 100, 8_193, 20_000, 3_000_001]);
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn reduce_by_key_small_outputs_empty_and_bad_input() {
    check_reduce_by_key_edges(&gpu());
}
