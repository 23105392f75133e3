//! The sanitizer workload: every kernel family (production reduce for every operator and type,
//! every scan, the scan and reduce by key, segmented reductions, the transforms, the f16/bf16
//! reductions and scans, seed 003's BIT and BCAO scans, the reduction ladder, the read-only
//! streaming kernel) once or a few times on small and odd sizes, each result checked, and
//! buffers and a context dropped with kernels in flight.
//! The bundle's `run.sh` (step `sanitize`) runs it under `compute-sanitizer` with memcheck,
//! racecheck, synccheck and initcheck; small sizes keep the instrumented run short.

use gpu_reduce_tools::bench::StreamExt;
use gpu_reduce_tools::ladder::check_all;
use integration_tests::gpu;
use integration_tests::lookback::{check_scan_by_key, check_scan_every_op_and_type};
use integration_tests::reductions::check_every_op_and_type;
use integration_tests::scans::check_ladder_all_types;

// Reduce tiles hold 2048 4-byte or 1024 8-byte elements: 1000 is one tile (the ticket-free
// path), 1500 two tiles of 8-byte and 3001 two of 4-byte elements (one block, both tiles'
// loads in flight), 70,001 many (one block per tile, ticket, last block combines).
const SIZES: [usize; 5] = [1, 1000, 1500, 3001, 70_001];

#[test]
#[ignore = "needs a CUDA GPU: run under compute-sanitizer by the bundle's run.sh"]
fn sanitizer_workload_every_kernel() {
    let ctx = gpu();
    check_every_op_and_type(&ctx, &SIZES);
    check_scan_every_op_and_type(&ctx, &SIZES);
    check_scan_by_key(&ctx, &SIZES);
    integration_tests::by_key::check_reduce_by_key(&ctx, &[1, 4097, 20_000]);
    integration_tests::half_scan::check_small_every_kernel::<half::f16>(&ctx);
    integration_tests::half_scan::check_small_every_kernel::<half::bf16>(&ctx);
    // Segmented reductions (segments at every boundary and alignment, overlapping and out of
    // order; rows), the transforms, the 16-bit reductions (issue 35: every family).
    integration_tests::segmented::check_boundary_lengths::<f32>(&ctx);
    integration_tests::segmented::check_boundary_lengths::<i64>(&ctx);
    integration_tests::segmented::check_fixed_rows::<f64>(&ctx, 5, 3001);
    integration_tests::transform::check_squares_and_norm(&ctx, 5000);
    integration_tests::transform::check_mean_var(&ctx, 5000);
    integration_tests::transform::check_min_max(&ctx, 5000);
    integration_tests::transform::check_dot(&ctx, 5000);
    integration_tests::half::check_basic::<half::f16>(&ctx);
    integration_tests::half::check_basic::<half::bf16>(&ctx);
    // Buffers, pending values and a second context dropped with kernels in flight (memcheck:
    // no use after free).
    integration_tests::faults::dropped_in_flight_leak(&gpu, 70_001, 3);
    check_ladder_all_types(&ctx, &SIZES, 3);
    for n in [1usize, 4097] {
        let x: Vec<f32> = (0..n).map(|i| (i % 13) as f32).collect();
        for (step, c) in check_all(&ctx, &x).unwrap() {
            assert!(c.ok, "{step:?} n={n}: {}", c.detail);
        }
        let y: Vec<i32> = (0..n as i32).collect();
        for (step, c) in check_all(&ctx, &y).unwrap() {
            assert!(c.ok, "{step:?} n={n}: {}", c.detail);
        }
    }
    let words: Vec<u32> = (0..70_001u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    let d = ctx.htod(&words).unwrap();
    let (g, b) = ctx.stream_shape();
    let mut partials = ctx.alloc_zeros::<u32>((g * b / 32) as usize).unwrap();
    ctx.stream_read_xor(&d, &mut partials).unwrap();
    let got = ctx.dtoh(&partials).unwrap().iter().fold(0, |a, &x| a ^ x);
    assert_eq!(got, words.iter().fold(0, |a, &x| a ^ x));
}

/// Compaction (issue 36): every call and type, tile boundaries, short outputs; a test of its
/// own, so that a sanitizer can run it alone (the test's name as the filter).
#[test]
#[ignore = "needs a CUDA GPU: run under compute-sanitizer by the bundle's run.sh"]
fn sanitizer_workload_compaction() {
    let ctx = gpu();
    let (t, h) = (
        integration_tests::select::tile(4),
        integration_tests::select::tile(8),
    );
    integration_tests::select::check_select(&ctx, &[1, h + 1, t - 1, t + 1, 3 * t + 5]);
    integration_tests::select::check_select_blocks(&ctx, &[32, 128]);
    integration_tests::select::check_select_edges(&ctx);
    integration_tests::select::check_select_half(&ctx, 2 * integration_tests::select::tile(2) + 7);
}

/// Histograms (issue 37): every type, both count types, shared and global bins, edges; weighted
/// sums (shared and global digit sums).
#[test]
#[ignore = "needs a CUDA GPU: run under compute-sanitizer by the bundle's run.sh"]
fn sanitizer_workload_histogram() {
    let ctx = gpu();
    integration_tests::histogram::check_histogram(&ctx, &[1, 1000, 20_011], &[1, 256, 1000, 5000]);
    integration_tests::histogram::check_histogram_errors(&ctx);
    integration_tests::histogram::check_histogram_half(&ctx, 20_003);
    integration_tests::histogram::check_histogram_weighted(&ctx, &[1, 20_011], &[7, 256, 3000]);
    integration_tests::histogram::check_histogram_weighted_exact(&ctx);
}

/// Top-k (issue 37): every type, both ways, sorted and not, the adversarial inputs.
#[test]
#[ignore = "needs a CUDA GPU: run under compute-sanitizer by the bundle's run.sh"]
fn sanitizer_workload_topk() {
    let ctx = gpu();
    integration_tests::topk::check_topk(&ctx, &[1, 37, 20_011]);
    // More elements than the candidate buffer holds after one digit: the later passes' form.
    integration_tests::topk::check_topk_candidates(&ctx, 100_000);
    integration_tests::topk::check_topk_errors(&ctx);
}

/// Top-k, lean: what racecheck can finish (sanitizer_workload_topk did not in 150 s).
#[test]
#[ignore = "needs a CUDA GPU: run under compute-sanitizer by the bundle's run.sh"]
fn sanitizer_workload_topk_lean() {
    integration_tests::topk::check_topk_lean(&gpu());
}

/// Top-k over rows: one block a row, and a few long rows by the whole-GPU passes.
#[test]
#[ignore = "needs a CUDA GPU: run under compute-sanitizer by the bundle's run.sh"]
fn sanitizer_workload_topk_rows() {
    let ctx = gpu();
    // Lean: racecheck slows every launch a thousandfold (the long rows are the whole-GPU
    // passes, which sanitizer_workload_topk covers); the full check is topk_gpu's.
    integration_tests::topk::check_topk_rows_lean(&ctx);
    integration_tests::topk::check_topk_rows_errors(&ctx);
}
