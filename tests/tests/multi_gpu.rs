//! Sharded reductions and scans on GPUs (`cargo xtask test --gpu`): ranks on the GPUs present
//! (several ranks per GPU on a one-GPU machine), against one rank, bit for bit.

use integration_tests::multi::*;

#[test]
#[ignore = "needs a GPU: cargo xtask test --gpu"]
fn reductions_same_bits_for_every_layout() {
    check_reduce_every_type(&gpus, 1_000_003);
}

#[test]
#[ignore = "needs a GPU: cargo xtask test --gpu"]
fn reductions_same_bits_many_tiles() {
    // 2^25 + 5 elements: tiles of 4096, so boundary tiles in the middle of long shards.
    check_reduce_every_type(&gpus, (1 << 25) + 5);
}

#[test]
#[ignore = "needs a GPU: cargo xtask test --gpu"]
fn scans_match_the_cpu() {
    check_scans(&gpus, 3_000_017);
}

/// Float sums included: every layout gives the bits of one context's scan, over many groups
/// of tiles (so checkpoints far into the array).
#[test]
#[ignore = "needs a GPU: cargo xtask test --gpu"]
fn scans_same_bits_as_one_context() {
    check_f32_scan_bits_match_one_context(&gpus, 40);
    check_f64_scan_bits_match_one_context(&gpus, 40);
    check_int_scan_bits_match_one_context(&gpus, 40);
}

#[test]
#[ignore = "needs a GPU: cargo xtask test --gpu"]
fn deferred_scans_match_the_cpu() {
    check_deferred_scans(&gpus, 3_000_017);
}

#[test]
#[ignore = "needs a GPU: cargo xtask test --gpu"]
fn one_process_per_rank() {
    check_process_per_rank(&gpus, 2_000_003);
}

#[test]
#[ignore = "needs a GPU: cargo xtask test --gpu"]
fn clear_errors() {
    check_errors(&gpus);
}

#[test]
#[ignore = "needs a GPU: cargo xtask test --gpu"]
fn nccl_one_rank() {
    println!("{}", check_nccl_one_rank(integration_tests::gpu));
}

#[test]
#[ignore = "needs a GPU: cargo xtask test --gpu"]
fn nccl_across_two_gpus() {
    println!("{}", check_nccl_threads());
}

#[test]
#[ignore = "needs a GPU: cargo xtask test --gpu"]
fn fill_and_get() {
    check_fill_and_get(&gpus);
}
