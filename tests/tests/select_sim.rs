//! Compaction on the CPU simulator.

use integration_tests::select::*;
use integration_tests::sim;

#[test]
fn select_partition_unique_every_type_and_predicate() {
    // Tile boundaries +- 1 and several tiles.
    // Tile boundaries +- 1 (the tiles of 8-byte and of smaller elements) and several tiles.
    let (t, h) = (tile(4), tile(8));
    check_select(
        &sim(),
        &[0, 1, 2, 33, 100, h - 1, h + 1, t - 1, t, t + 1, 3 * t + 5],
    );
}

#[test]
fn select_in_blocks_of_one_warp_and_of_the_full_tile() {
    check_select_blocks(&sim(), &[32, kernels::select::BLOCK]);
}

#[test]
fn select_small_outputs_into_forms_and_bad_input() {
    check_select_edges(&sim());
}

#[test]
fn select_f16_and_bf16() {
    let t = tile(2);
    for n in [1, 100, t - 1, 2 * t + 7] {
        check_select_half(&sim(), n);
    }
}

#[test]
fn select_predicates_with_extreme_constants() {
    check_predicate_constants(&sim());
}
