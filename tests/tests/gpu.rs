//! The same test bodies on the GPU, plus agreement with the simulator. `#[ignore]`d: run with
//! `cargo xtask test --gpu`, which reports them skipped when no GPU is present.

use gpu_reduce_tools::conformance::{Conformance, Shfl};
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

mod reductions {
    use integration_tests::reductions::*;
    use integration_tests::{gpu, sim};

    #[test]
    #[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
    fn every_op_and_type() {
        check_every_op_and_type(
            &gpu(),
            &[
                0,
                1,
                2,
                31,
                32,
                33,
                255,
                256,
                257,
                2047,
                2049,
                8197,
                65_537,
                1 << 20,
                (1 << 22) + 3,
            ],
        );
    }

    #[test]
    #[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
    fn nan_inf_zero_and_empty() {
        check_specials(&gpu());
    }

    #[test]
    #[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
    fn integer_overflow_wraps() {
        check_wrapping(&gpu());
    }

    #[test]
    #[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
    fn compensated_sum() {
        check_compensated(&gpu(), 10_000_000);
    }

    #[test]
    #[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
    fn deterministic_across_grids() {
        check_deterministic(&gpu(), 20_000_003);
    }

    #[test]
    #[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
    fn small_inputs_fast_paths_keep_the_bits() {
        check_small_inputs_fast_paths(&gpu());
    }

    /// Same bits as the simulator for every operator (floats included).
    #[test]
    #[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
    fn bits_match_the_simulator() {
        let (g, s) = (gpu(), sim());
        for n in [0usize, 5, 1000, 70_001, 1 << 20] {
            let d = data::<f32>(n, n as u64, false);
            let (bg, bs) = (g.htod(&d).unwrap(), s.htod(&d).unwrap());
            for op in [
                gpu_reduce::Reduction::Sum,
                gpu_reduce::Reduction::Product,
                gpu_reduce::Reduction::Min,
            ] {
                assert_eq!(
                    g.reduce(&bg, op).unwrap().to_bits(),
                    s.reduce(&bs, op).unwrap().to_bits(),
                    "{op:?} n={n}"
                );
            }
            assert_eq!(
                g.sum_compensated(&bg).unwrap().to_bits(),
                s.sum_compensated(&bs).unwrap().to_bits()
            );
            let d = data::<f64>(n, n as u64, true);
            let (bg, bs) = (g.htod(&d).unwrap(), s.htod(&d).unwrap());
            assert_eq!(
                g.sum(&bg).unwrap().to_bits(),
                s.sum(&bs).unwrap().to_bits(),
                "f64 n={n}"
            );
            assert_eq!(
                g.argmax(&bg).unwrap().map(|(i, _)| i),
                s.argmax(&bs).unwrap().map(|(i, _)| i)
            );
        }
    }

    /// More than 2^32 elements: 64-bit indices end to end (2^32 + 77 i32, 17 GB: every GPU this
    /// library targets has that; a smaller one fails here rather than passing untested).
    #[test]
    #[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
    fn more_than_2_pow_32_elements() {
        let ctx = gpu();
        let n = (1usize << 32) + 77;
        let mut buf = ctx.alloc_zeros::<i32>(n).expect("17 GB of device memory");
        // All zeros except a marker near the end: sum, max and argmax see past 2^32.
        let tail = [5i32, -3, 9];
        let probe = ctx.htod(&tail).unwrap();
        ctx.copy_into(&probe, &mut buf, n - 10).unwrap();
        assert_eq!(ctx.sum(&buf).unwrap(), 11);
        assert_eq!(ctx.argmax(&buf).unwrap(), Some(((n - 8) as u64, 9)));
        assert_eq!(ctx.reduce(&buf, gpu_reduce::Reduction::Min).unwrap(), -3);
    }
}
