//! The teaching prefix scans (BIT and BCAO) on the GPU: the simulator tests' checks at larger
//! sizes, every recursion level up to n > 2^30, and agreement with the simulator bit for bit.
//! `#[ignore]`d: run with `cargo xtask test --gpu`.

use gpu_reduce::{Reduction, ScanKind};
use gpu_reduce_tools::scan_ladder::{bcao_plan, bit_plan};
use integration_tests::scans::*;
use integration_tests::{gpu, sim};

/// The simulator's boundary sizes, then sizes at the edges of each further level: the BIT's
/// second level filling a block (512^2 + 1) and its third (2 * 512^2 + 1), BCAO's third
/// (2^20 + 1), and an odd size of a few million.
const SIZES: &[usize] = &[
    0,
    1,
    2,
    31,
    32,
    33,
    511,
    512,
    513,
    1023,
    1024,
    1025,
    4099,
    65_537,
    512 * 512 + 1,
    2 * 512 * 512 + 1,
    (1 << 20) + 1,
    3_000_017,
];

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn all_types_ops_kinds_at_level_boundaries() {
    check_ladder_all_types(&gpu(), SIZES, 0x6a0);
}

/// 2^30 + 1 elements (over 10^9, 4 GiB per buffer): the BIT's four build levels (offsets up to
/// 512^3) and BCAO's four recursion levels, byte offsets far past 2^32. Counted with all ones.
#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn over_a_billion_elements() {
    let n = (1 << 30) + 1;
    assert_eq!(bit_plan(n).len(), 5);
    assert_eq!(bcao_plan(n).len(), 7);
    let ctx = gpu();
    for method in LadderScan::ALL {
        check_ladder_counts(&ctx, method, n, ScanKind::Inclusive);
    }
    check_ladder_counts(&ctx, LadderScan::Bcao, n, ScanKind::Exclusive);
}

/// The GPU and the simulator run the same source in the same order: the same bits, float sums
/// included.
#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn gpu_and_simulator_agree() {
    let (g, s) = (gpu(), sim());
    check_ladder_backends_agree::<f32>(&g, &s, 100_003, 1);
    check_ladder_backends_agree::<f64>(&g, &s, 5000, 2);
    check_ladder_backends_agree::<i32>(&g, &s, 3000, 3);
}

/// Errors, not faults: a short output on the GPU.
#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn short_output_is_an_error() {
    let ctx = gpu();
    let input = ctx.htod(&[1u64, 2, 3]).unwrap();
    let mut out = ctx.alloc_zeros::<u64>(2).unwrap();
    for method in LadderScan::ALL {
        let e = method
            .run(&ctx, &input, &mut out, Reduction::Sum, ScanKind::Inclusive)
            .unwrap_err();
        assert!(
            matches!(e, gpu_reduce::Error::OutputTooSmall { .. }),
            "{method:?}: {e}"
        );
    }
}
