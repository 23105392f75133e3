//! The reduce by key on the CPU simulator.

use integration_tests::by_key::*;
use integration_tests::sim;

#[test]
fn reduce_by_key_every_operator_and_key_type() {
    // Tile boundaries +- 1 and runs that span several tiles.
    let t = kernels::scan::policy::ACTIVE.reduce_by_key_tile_elems(4, 4) as usize;
    check_reduce_by_key(&sim(), &[0, 1, 2, 100, t - 1, t + 1, 2 * t, 5 * t + 3]);
}

#[test]
fn reduce_by_key_small_outputs_empty_and_bad_input() {
    check_reduce_by_key_edges(&sim());
}
