//! Top-k on the CPU simulator.

use integration_tests::sim;
use integration_tests::topk::*;

#[test]
fn topk_every_type_both_ways_sorted_or_not_adversarial_inputs() {
    check_topk(&sim(), &[1, 2, 37, 3000, 20_011]);
}

#[test]
fn topk_candidates_after_several_passes() {
    check_topk_candidates(&sim(), 300_000);
}

#[test]
fn topk_bad_calls_are_typed_errors() {
    check_topk_errors(&sim());
}

#[test]
fn topk_rows_every_type_both_ways_sorted_or_not() {
    check_topk_rows(&sim(), &[(1, 1), (3, 37), (7, 1000), (2, 5003)]);
}

#[test]
fn topk_rows_bad_calls_are_typed_errors() {
    check_topk_rows_errors(&sim());
}

#[test]
fn topk_rows_lean_sanitizer_workload() {
    check_topk_rows_lean(&sim());
}

#[test]
fn topk_lean_sanitizer_workload() {
    check_topk_lean(&sim());
}
