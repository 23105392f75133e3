//! The same test bodies on the GPU, plus agreement with the simulator. `#[ignore]`d: run with
//! `cargo xtask test --gpu`, which reports them skipped when no GPU is present.

use gpu_reduce::conformance::Shfl;
use integration_tests::*;
use rand::{Rng, SeedableRng, rngs::SmallRng};

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn seed_002_shuffle_table() {
    check_seed_002(&gpu());
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn shuffle_semantics_every_kind_and_width() {
    check_shfl_semantics(&gpu());
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn shuffle_64_bit_keeps_both_halves() {
    check_shfl64_bits(&gpu());
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn votes() {
    check_vote(&gpu());
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn barriers_and_shared_memory_are_honoured() {
    check_barrier_rotate(&gpu());
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn sum_boundaries() {
    check_sum_boundaries(&gpu(), usize::MAX);
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn sum_exact_integers() {
    check_sum_exact_integers(&gpu(), &[1, 777, 65_537, 1_000_003]);
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn sum_offsets() {
    check_sum_offsets(&gpu(), 3_000_017);
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn sum_repeatable() {
    check_sum_repeatable(&gpu(), 10_000_019);
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn sum_random_sizes() {
    let ctx = gpu();
    let mut rng = SmallRng::seed_from_u64(7);
    for case in 0..40 {
        let n = rng.random_range(0..3_000_000usize);
        check_sum(&ctx, &random_f32(n, 100 + case));
    }
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn bad_requests() {
    let ctx = gpu();
    check_bad_requests(&ctx);
    let count = gpu_reduce::device_count().unwrap();
    assert!(matches!(
        gpu_reduce::Context::new(count),
        Err(gpu_reduce::Error::BadOrdinal { .. })
    ));
    // Far more than any GPU has: a clean OutOfMemory, and earlier buffers still work.
    let kept = ctx.htod(&random_f32(4096, 2)).unwrap();
    let huge = ctx.alloc_zeros::<f32>(1 << 40);
    assert!(
        matches!(huge, Err(gpu_reduce::Error::OutOfMemory { .. })),
        "{huge:?}"
    );
    check_sum(&ctx, &ctx.dtoh(&kept).unwrap());
}

/// The simulator and the GPU run the same source: their answers must agree exactly, the f32
/// sums bit for bit (same grid, same combining order, IEEE adds).
#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn gpu_and_simulator_agree() {
    let (g, s) = (gpu(), sim());
    for op in [Shfl::Down, Shfl::Up, Shfl::Xor, Shfl::Idx] {
        for width in [4, 8, 32] {
            assert_eq!(
                g.conformance_shfl(op, 3, width, 64).unwrap(),
                s.conformance_shfl(op, 3, width, 64).unwrap()
            );
        }
    }
    assert_eq!(
        g.conformance_barrier_rotate(2, 96, 4).unwrap(),
        s.conformance_barrier_rotate(2, 96, 4).unwrap()
    );
    for (i, n) in [0usize, 1, 1000, 65_537, 1 << 20].into_iter().enumerate() {
        let data = random_f32(n, 500 + i as u64);
        let (a, b) = (check_sum(&g, &data), check_sum(&s, &data));
        assert_eq!(a.to_bits(), b.to_bits(), "n = {n}: gpu {a} vs sim {b}");
    }
}
