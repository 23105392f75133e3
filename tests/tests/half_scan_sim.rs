//! f16/bf16 scans on the simulator (runs everywhere, CI included).

use half::{bf16, f16};
use integration_tests::{half_scan::*, sim};

#[test]
fn every_operator_and_kind_at_tile_edges_and_offsets() {
    let ctx = sim();
    check_sizes_and_offsets::<f16>(&ctx);
    check_sizes_and_offsets::<bf16>(&ctx);
}

#[test]
fn many_tiles() {
    let ctx = sim();
    check_many_tiles::<f16>(&ctx, 12 * tile() + 7);
    check_many_tiles::<bf16>(&ctx, 12 * tile() + 7);
}

#[test]
fn nan_inf_subnormals_zeros_overflow() {
    let ctx = sim();
    check_specials::<f16>(&ctx);
    check_specials::<bf16>(&ctx);
}

#[test]
fn accuracy_of_inexact_sums() {
    let ctx = sim();
    check_accuracy::<f16>(&ctx, 100_003);
    check_accuracy::<bf16>(&ctx, 100_003);
}

#[test]
fn in_place_and_errors() {
    let ctx = sim();
    check_in_place_and_errors::<f16>(&ctx);
    check_in_place_and_errors::<bf16>(&ctx);
}

#[test]
fn sanitizer_workload() {
    // What sanitize_gpu runs of the 16-bit kernels, here on the simulator.
    let ctx = sim();
    check_small_every_kernel::<f16>(&ctx);
    check_small_every_kernel::<bf16>(&ctx);
}

/// The reference itself: an f32 running sum rounded per output, not a 16-bit running sum.
#[test]
fn reference_rounds_the_f32_prefix() {
    use gpu_reduce::{Reduction, ScanKind};
    let x = [2048.0f32, 1.0, 1.0].map(f16::from_f32);
    let got = scan_ref(&x, Reduction::Sum, ScanKind::Inclusive);
    assert_eq!(got, [2048.0, 2048.0, 2050.0].map(f16::from_f32));
    let got = scan_ref(&x, Reduction::Sum, ScanKind::Exclusive);
    assert_eq!(got, [0.0, 2048.0, 2048.0].map(f16::from_f32));
}
