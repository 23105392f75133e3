//! The same test bodies on the GPU. `#[ignore]`d: run with `cargo xtask test --gpu`, which
//! reports them skipped when no GPU is present (or from the bundle's run.sh).

mod common;
use common::*;
use gpu_reduce::Context;

/// The context these tests run on. They are `#[ignore]`d and run through `cargo xtask test
/// --gpu` (or the bundle), which first checks that a device exists; reaching this without one
/// is a failure, not a pass.
fn gpu() -> Context {
    match Context::new(0) {
        Ok(c) => c,
        Err(e) => panic!("GPU test run without a usable GPU: {e}"),
    }
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn every_operator_every_size() {
    check_all_sizes(&gpu());
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn min_max_nan_inf_zeros_ties_offsets() {
    check_min_max_edges(&gpu());
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn softmax_large_values_and_infinities() {
    check_softmax_edges(&gpu());
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn max_abs_scan_exact() {
    check_max_abs_edges(&gpu());
}
