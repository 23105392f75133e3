//! Sharded reductions and scans over simulated devices (runs everywhere, CI included): the
//! sharding logic against one device, bit for bit, in both process models.

use integration_tests::multi::*;

#[test]
fn reductions_same_bits_for_every_layout() {
    check_reduce_every_type(&sims, 20_011);
}

#[test]
fn scans_match_the_cpu() {
    check_scans(&sims, 9_001);
}

/// Integer scans over several groups of tiles: one context's bits in every layout (the float
/// sums' check is stress_sim's `multi_float_sum_scan_bits_do_not_depend_on_the_shards`).
#[test]
fn integer_scans_same_bits_as_one_context() {
    check_int_scan_bits_match_one_context(&sims, 2);
}

#[test]
fn one_process_per_rank() {
    check_process_per_rank(&sims, 12_345);
}

#[test]
fn clear_errors() {
    check_errors(&sims);
}

#[test]
fn nccl_errors() {
    println!("{}", check_nccl_one_rank(integration_tests::sim));
}

#[test]
fn fill_and_get() {
    check_fill_and_get(&sims);
}
