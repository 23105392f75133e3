//! Top-k on the GPU (`cargo xtask test --gpu`).

use integration_tests::gpu;
use integration_tests::topk::*;

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn topk_every_type_both_ways_sorted_or_not_adversarial_inputs() {
    check_topk(&gpu(), &[1, 2, 37, 3000, 20_011, 1_000_003]);
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn topk_candidates_after_several_passes() {
    check_topk_candidates(&gpu(), 3_000_000);
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn topk_bad_calls_are_typed_errors() {
    check_topk_errors(&gpu());
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn topk_rows_every_type_both_ways_sorted_or_not() {
    // 64 x 32,000 (logits), many short rows, and few long rows (the whole-GPU passes a row).
    check_topk_rows(
        &gpu(),
        &[(1, 1), (3, 37), (64, 32_000), (1000, 300), (3, 300_000)],
    );
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn topk_rows_bad_calls_are_typed_errors() {
    check_topk_rows_errors(&gpu());
}
