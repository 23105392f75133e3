//! f16/bf16 reductions on a GPU. `#[ignore]`d: `cargo xtask test --gpu`.

use half::{bf16, f16};
use integration_tests::{gpu, half::*};

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn basic_every_size_and_offset() {
    let ctx = gpu();
    check_basic::<f16>(&ctx);
    check_basic::<bf16>(&ctx);
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn sum_accuracy() {
    let ctx = gpu();
    check_sum_accuracy::<f16>(&ctx, 30_000_001);
    check_sum_accuracy::<bf16>(&ctx, 30_000_001);
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
fn deterministic_across_grids() {
    let ctx = gpu();
    check_deterministic::<f16>(&ctx, 30_000_001);
    check_deterministic::<bf16>(&ctx, 30_000_001);
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn transfers_and_unsupported_operators() {
    let ctx = gpu();
    check_api::<f16>(&ctx);
    check_api::<bf16>(&ctx);
}
