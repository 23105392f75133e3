//! Histograms on the GPU (`cargo xtask test --gpu`).

use integration_tests::gpu;
use integration_tests::histogram::*;

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn histogram_every_type_both_counts_shared_and_global_bins() {
    check_histogram(
        &gpu(),
        &[0, 1, 7, 1000, 20_011, 1_000_003],
        &[1, 7, 256, 4096, 5000],
    );
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn histogram_bad_bins_are_typed_errors() {
    check_histogram_errors(&gpu());
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn histogram_f16_and_bf16() {
    for n in [1, 1000, 20_003, 1_000_003] {
        check_histogram_half(&gpu(), n);
    }
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn histogram_samples_on_every_bin_edge() {
    check_histogram_bin_edges(&gpu());
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn histogram_weighted_sums_exact_and_order_free() {
    check_histogram_weighted(
        &gpu(),
        &[0, 1, 1000, 20_011, 1_000_003],
        &[1, 7, 256, 2048, 3000],
    );
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn histogram_weighted_cancellation_ranges_and_specials() {
    check_histogram_weighted_exact(&gpu());
}
