//! The reduce by key on the GPU (`cargo xtask test --gpu`).

use integration_tests::by_key::*;
use integration_tests::gpu;

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn reduce_by_key_every_operator_and_key_type() {
    let t = kernels::scan::policy::ACTIVE.reduce_by_key_tile_elems(4, 4) as usize;
    check_reduce_by_key(&gpu(), &[0, 1, 2, 100, t - 1, t + 1, 5 * t + 3, 3_000_001]);
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn reduce_by_key_small_outputs_empty_and_bad_input() {
    check_reduce_by_key_edges(&gpu());
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn reduce_by_key_more_than_2_pow_32_elements_and_runs() {
    // ~69 GB of device memory: an 80 GB H100 or an H200.
    check_reduce_by_key_huge(&gpu());
}
