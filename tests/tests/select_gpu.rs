//! Compaction on the GPU (`cargo xtask test --gpu`).

use integration_tests::gpu;
use integration_tests::select::*;

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn select_partition_unique_every_type_and_predicate() {
    let (t, h) = (tile(4), tile(8));
    check_select(
        &gpu(),
        &[
            0,
            1,
            2,
            33,
            100,
            h - 1,
            h + 1,
            t - 1,
            t,
            t + 1,
            3 * t + 5,
            1_000_003,
        ],
    );
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn select_in_blocks_of_every_size() {
    check_select_blocks(&gpu(), &[32, 64, 96, 128, 192, 256]);
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn select_small_outputs_into_forms_and_bad_input() {
    check_select_edges(&gpu());
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn select_f16_and_bf16() {
    let t = tile(2);
    for n in [1, 100, t - 1, 2 * t + 7, 1_000_003] {
        check_select_half(&gpu(), n);
    }
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn select_predicates_with_extreme_constants() {
    check_predicate_constants(&gpu());
}
