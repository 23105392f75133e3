//! Histograms on the CPU simulator.

use integration_tests::histogram::*;
use integration_tests::sim;

#[test]
fn histogram_every_type_both_counts_shared_and_global_bins() {
    // 5000 bins: past the shared counters (global atomics); odd sizes: the scalar tail.
    // 4096: shared counters, the 8-byte types' edges in global memory (past 48 KiB).
    check_histogram(&sim(), &[0, 1, 7, 1000, 20_011], &[1, 7, 256, 4096, 5000]);
}

#[test]
fn histogram_bad_bins_are_typed_errors() {
    check_histogram_errors(&sim());
}

#[test]
fn histogram_f16_and_bf16() {
    for n in [1, 1000, 20_003] {
        check_histogram_half(&sim(), n);
    }
}

#[test]
fn histogram_samples_on_every_bin_edge() {
    check_histogram_bin_edges(&sim());
}

#[test]
fn histogram_weighted_sums_exact_and_order_free() {
    // 2048 and 3000 bins: past the shared digit sums (global atomics).
    check_histogram_weighted(&sim(), &[0, 1, 1000, 20_011], &[1, 7, 256, 2048, 3000]);
}

#[test]
fn histogram_weighted_cancellation_ranges_and_specials() {
    check_histogram_weighted_exact(&sim());
}
