//! f16/bf16 reductions on the simulator (runs everywhere, CI included).

use half::{bf16, f16};
use integration_tests::{half::*, sim};

#[test]
fn basic_every_size_and_offset() {
    let ctx = sim();
    check_basic::<f16>(&ctx);
    check_basic::<bf16>(&ctx);
}

#[test]
fn sum_accuracy() {
    let ctx = sim();
    check_sum_accuracy::<f16>(&ctx, 300_001);
    check_sum_accuracy::<bf16>(&ctx, 300_001);
}

#[test]
fn nan_inf_subnormals_zeros_overflow() {
    let ctx = sim();
    check_specials::<f16>(&ctx);
    check_specials::<bf16>(&ctx);
}

#[test]
fn deterministic_across_grids() {
    let ctx = sim();
    check_deterministic::<f16>(&ctx, 300_001);
    check_deterministic::<bf16>(&ctx, 300_001);
}

#[test]
fn transfers_and_unsupported_operators() {
    let ctx = sim();
    check_api::<f16>(&ctx);
    check_api::<bf16>(&ctx);
}
