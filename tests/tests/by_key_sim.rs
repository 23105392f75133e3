//! The reduce by key on the CPU simulator.

use integration_tests::by_key::*;
use integration_tests::sim;

#[test]
fn reduce_by_key_every_operator_and_key_type() {
    // Up to five 8-byte-value tiles: runs that span tiles and tile boundaries.
    check_reduce_by_key(&sim(), &[0, 1, 2, 100, 8_193, 20_000]);
}

#[test]
fn reduce_by_key_small_outputs_empty_and_bad_input() {
    check_reduce_by_key_edges(&sim());
}
