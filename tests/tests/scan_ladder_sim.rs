//! The teaching prefix scans (seed 003: Fenwick tree "BIT", GPU Gems 3 Blelloch "BCAO") on the
//! CPU SIMT simulator: both methods x inclusive/exclusive x sum/min/max x the six element
//! types, at sizes around the warp and the blocks (512 for the BIT, 1024-element tiles for
//! BCAO), plus the sizes that need a further level of each recursion, against the CPU
//! references of `integration_tests::scans`. Run everywhere, CI included.

use gpu_reduce::{Reduction, ScanKind};
use gpu_reduce_tools::scan_ladder::{ScanLadderStep, ScanLaunch, bcao_plan, bit_plan};
use integration_tests::scans::*;
use integration_tests::sim;
use proptest::prelude::*;

/// Sizes around a warp, the BIT's 512-thread block and BCAO's 1024-element tile (the latter two
/// also give the BIT its second build level, from 1024 on, and BCAO its second tile, at 1025).
const SIZES: &[usize] = &[0, 1, 2, 31, 32, 33, 511, 512, 513, 1023, 1024, 1025];

#[test]
fn all_types_ops_kinds_at_block_boundaries() {
    check_ladder_all_types(&sim(), SIZES, 0x5ca0);
}

/// A few thousand elements: several BCAO tiles with a partial last one, several BIT blocks at
/// both build levels.
#[test]
fn all_types_ops_kinds_several_blocks() {
    let ctx = sim();
    check_ladder_size::<i32>(&ctx, 4099, 1);
    check_ladder_size::<f64>(&ctx, 3 * 1024 + 7, 2);
}

/// 2 * 512^2 + 1 elements: the BIT needs a third build level (offset 512^2); its second level
/// fills two whole blocks, whose last steps make the nodes covering 2^18 elements. The deepest
/// recursion the simulator runs (512 * 512 + 1, the second level's edge, is a GPU test, to keep
/// this run short). Wrapping sums of full-range i64: exact.
#[test]
fn bit_third_level() {
    let n = 2 * 512 * 512 + 1;
    let plan = bit_plan(n);
    assert_eq!(
        plan[1..3],
        [
            ScanLaunch {
                step: ScanLadderStep::BitBuild { offset: 512 },
                grid: 2,
                block: 512
            },
            ScanLaunch {
                step: ScanLadderStep::BitBuild { offset: 512 * 512 },
                grid: 1,
                block: 512
            }
        ]
    );
    let data = random_data::<i64>(n, 3);
    check_ladder_scan(
        &sim(),
        LadderScan::Bit,
        &data,
        Reduction::Sum,
        ScanKind::Inclusive,
    );
}

/// 2^20 + 1 elements: BCAO's third recursion level (1025 tile totals, then 2). Wrapping sums of
/// full-range i64: exact.
#[test]
fn bcao_third_level() {
    let n = (1 << 20) + 1;
    assert_eq!(
        bcao_plan(n)[2].step,
        ScanLadderStep::BcaoBlock { level: 2, n: 2 }
    );
    let data = random_data::<i64>(n, 4);
    check_ladder_scan(
        &sim(),
        LadderScan::Bcao,
        &data,
        Reduction::Sum,
        ScanKind::Exclusive,
    );
}

/// Float sums whose prefixes cancel and grow: the tolerance scales with the prefix of |x|,
/// not with the (small) prefix itself.
#[test]
fn float_sums_of_large_and_small_values() {
    let ctx = sim();
    let data: Vec<f32> = (0..3000)
        .map(|i| match i % 3 {
            0 => 1.0e6,
            1 => -1.0e6,
            _ => 1.0e-3 * (i as f32),
        })
        .collect();
    for method in LadderScan::ALL {
        for kind in ScanKind::ALL {
            check_ladder_scan(&ctx, method, &data, Reduction::Sum, kind);
        }
    }
}

/// Errors, not panics: an output shorter than the input; n = 0 with an empty output is fine.
#[test]
fn short_output_is_an_error_and_empty_is_a_no_op() {
    let ctx = sim();
    let input = ctx.htod(&[1.0f64, 2.0]).unwrap();
    let mut short = ctx.alloc_zeros::<f64>(1).unwrap();
    for method in LadderScan::ALL {
        let e = method
            .run(
                &ctx,
                &input,
                &mut short,
                Reduction::Min,
                ScanKind::Inclusive,
            )
            .unwrap_err();
        assert!(
            matches!(e, gpu_reduce::Error::OutputTooSmall { .. })
                && e.to_string().contains("output"),
            "{method:?}: {e}"
        );
        let empty = ctx.alloc_zeros::<u64>(0).unwrap();
        let mut out = ctx.alloc_zeros::<u64>(0).unwrap();
        method
            .run(&ctx, &empty, &mut out, Reduction::Sum, ScanKind::Exclusive)
            .unwrap();
        assert!(ctx.dtoh(&out).unwrap().is_empty());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// Random sizes (mostly small, some over a few tiles), operators, kinds and data.
    #[test]
    fn random_sizes_u32(n in prop_oneof![0usize..70, 0usize..5000], seed: u64, op in 0usize..3) {
        let ctx = sim();
        let data = random_data::<u32>(n, seed);
        for method in LadderScan::ALL {
            for kind in ScanKind::ALL {
                check_ladder_scan(&ctx, method, &data, Reduction::SCAN[op], kind);
            }
        }
    }

    #[test]
    fn random_sizes_f32(n in prop_oneof![0usize..70, 0usize..5000], seed: u64, op in 0usize..3) {
        let ctx = sim();
        let data = random_data::<f32>(n, seed);
        for method in LadderScan::ALL {
            for kind in ScanKind::ALL {
                check_ladder_scan(&ctx, method, &data, Reduction::SCAN[op], kind);
            }
        }
    }
}
