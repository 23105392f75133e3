//! Conformance and reduction tests on the CPU SIMT simulator: run everywhere, CI included.

use integration_tests::*;
use proptest::prelude::*;

#[test]
fn seed_002_shuffle_table() {
    check_seed_002(&sim());
}

#[test]
fn shuffle_semantics_every_kind_and_width() {
    check_shfl_semantics(&sim());
}

#[test]
fn shuffle_64_bit_keeps_both_halves() {
    check_shfl64_bits(&sim());
}

#[test]
fn votes() {
    check_vote(&sim());
}

#[test]
fn barriers_and_shared_memory_are_honoured() {
    check_barrier_rotate(&sim());
}

#[test]
fn sum_boundaries() {
    // Up to 2^16 + 1 (incl. warp/block boundaries); larger sizes run on the GPU.
    check_sum_boundaries(&sim(), (1 << 16) + 1);
}

#[test]
fn sum_exact_integers() {
    check_sum_exact_integers(&sim(), &[1, 777, 65_537]);
}

#[test]
fn sum_offsets() {
    check_sum_offsets(&sim(), 10_007);
}

#[test]
fn sum_repeatable() {
    check_sum_repeatable(&sim(), 100_003);
}

#[test]
fn bad_requests() {
    check_bad_requests(&sim());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn sum_random_sizes_and_data(n in 0usize..40_000, seed: u64, off in 0usize..4, scale in -20i32..20) {
        let s = 2f32.powi(scale);
        let data: Vec<f32> = random_f32(n + off, seed).into_iter().map(|x| x * s).collect();
        check_sum(&sim(), &data[off.min(data.len())..]);
    }
}

mod reductions {
    use integration_tests::reductions::*;
    use integration_tests::sim;

    #[test]
    fn every_op_and_type() {
        check_every_op_and_type(&sim(), &[0, 1, 2, 31, 33, 257, 2049, 8197]);
    }

    #[test]
    fn nan_inf_zero_and_empty() {
        check_specials(&sim());
    }

    #[test]
    fn integer_overflow_wraps() {
        check_wrapping(&sim());
    }

    #[test]
    fn compensated_sum() {
        check_compensated(&sim(), 50_000);
    }

    #[test]
    fn deterministic_across_grids() {
        check_deterministic(&sim(), 70_001);
    }

    #[test]
    fn small_inputs_fast_paths_keep_the_bits() {
        check_small_inputs_fast_paths(&sim());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn every_op_random_size_offset(n in 0usize..6000, seed: u64, off in 0usize..3) {
        use integration_tests::reductions::{check_all_ops, data};
        let ctx = sim();
        let d = data::<i64>(n + off, seed, false);
        check_all_ops::<i64>(&ctx, &d[off..], "proptest");
        let f = data::<f32>(n + off, seed, seed % 3 == 0);
        check_all_ops::<f32>(&ctx, &f[off..], "proptest");
    }
}
