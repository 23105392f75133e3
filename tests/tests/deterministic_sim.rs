//! Every float result gives the same bits every time, and the recorded bits (issues 16 and
//! 32), on the CPU simulator.

use integration_tests::deterministic::*;
use integration_tests::sim;

#[test]
fn recorded_bits() {
    // 65 f32 tiles, 130 f64 tiles: group checkpoints written, read and rebuilt.
    check_recorded_bits(&sim(), SMALL);
}

#[test]
fn repeatable() {
    check_repeatable(&sim(), None, SMALL, 4);
}

#[test]
fn reduce_by_key_repeatable() {
    // Runs up to ~245 tiles of 2048: the fixed order's windows of 32 tiles, several per run.
    check_reduce_by_key_repeatable(&sim(), None, ISSUE_32, 500_000, 3);
}

#[test]
fn accuracy_against_exact() {
    check_accuracy(&sim(), 3_000_001);
}

#[test]
fn nan_results_are_the_canonical_nan() {
    check_nan_results_canonical(&sim(), 50_078);
}
