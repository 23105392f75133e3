//! f16/bf16 scans on a GPU. `#[ignore]`d: `cargo xtask test --gpu`.

use half::{bf16, f16};
use integration_tests::{gpu, half_scan::*};

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn every_operator_and_kind_at_tile_edges_and_offsets() {
    let ctx = gpu();
    check_sizes_and_offsets::<f16>(&ctx);
    check_sizes_and_offsets::<bf16>(&ctx);
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn many_tiles() {
    // About 610 tiles: the look-back across waves of blocks; exact integer partial sums.
    let ctx = gpu();
    check_many_tiles::<f16>(&ctx, 10_000_003);
    check_many_tiles::<bf16>(&ctx, 10_000_003);
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn nan_inf_subnormals_zeros_overflow() {
    let ctx = gpu();
    check_specials::<f16>(&ctx);
    check_specials::<bf16>(&ctx);
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn accuracy_of_inexact_sums() {
    let ctx = gpu();
    check_accuracy::<f16>(&ctx, 3_000_017);
    check_accuracy::<bf16>(&ctx, 3_000_017);
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn in_place_and_errors() {
    let ctx = gpu();
    check_in_place_and_errors::<f16>(&ctx);
    check_in_place_and_errors::<bf16>(&ctx);
}
