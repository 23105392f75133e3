//! Segmented reductions on the GPU (`cargo xtask test --gpu`): every operator and type against a CPU
//! model of the kernel's combining order (bit for bit) and order-free references.

use integration_tests::gpu;
use integration_tests::segmented::*;

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn boundary_lengths_every_op_and_type() {
    check_boundary_lengths_every_type(&gpu());
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn csr_mixed_random_lengths() {
    let ctx = gpu();
    check_csr_mixed::<f32>(&ctx, 400, 1);
    check_csr_mixed::<i64>(&ctx, 300, 2);
    check_csr_mixed::<f64>(&ctx, 200, 3);
}

/// Lengths of up to 300, many segments a window: the warp's bits.
#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn csr_medium_lengths() {
    let ctx = gpu();
    check_csr_medium::<f32>(&ctx, 3000, 4);
    check_csr_medium::<f64>(&ctx, 1000, 5);
    check_csr_medium::<i32>(&ctx, 1000, 6);
}

/// Short lengths: the tiles form, against the tile model bit for bit (hundreds of thousands of segments:
/// thousands of tiles, the carried values waited for across blocks).
#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn csr_short_lengths_by_tiles() {
    let ctx = gpu();
    check_csr_short::<f32>(&ctx, 400_000, 7);
    check_csr_short::<f64>(&ctx, 300_000, 8);
    check_csr_short::<i32>(&ctx, 300_000, 9);
    check_csr_short::<u64>(&ctx, 200_000, 10);
    check_tiles_edges::<f32>(&ctx, 11);
    check_tiles_edges::<i64>(&ctx, 12);
    check_tiles_unsorted(&ctx);
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn many_empty_segments() {
    check_many_empty(&gpu());
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn one_huge_segment() {
    check_huge_segment(&gpu(), 50_000_000);
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn fixed_rows() {
    let ctx = gpu();
    check_fixed_rows::<f32>(&ctx, 1000, 37);
    check_fixed_rows::<u32>(&ctx, 1000, 37);
    check_fixed_rows::<f64>(&ctx, 3, 100_000);
    check_fixed_rows::<i32>(&ctx, 3, 100_000);
    check_fixed_rows::<u64>(&ctx, 17, 1);
    check_fixed_rows::<f32>(&ctx, 40, 1025);
    check_fixed_rows::<f32>(&ctx, 6, 32_773);
    check_fixed_rows::<f32>(&ctx, 1024, 65_536);
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn argmin_argmax_semantics() {
    check_arg_semantics(&gpu());
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn same_bits_for_every_grid() {
    check_grid_independent(&gpu());
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn user_operator_entry_points() {
    check_custom(&gpu());
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn bad_input_is_an_error() {
    check_bad_input(&gpu());
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn same_bits_as_the_simulator() {
    check_matches_sim(&gpu());
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn work_list_full_same_bits() {
    check_work_list_full(&gpu());
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn listed_form_same_bits_as_work_list() {
    let ctx = gpu();
    check_listed::<f32>(&ctx);
    check_listed::<i64>(&ctx);
    check_listed::<f64>(&ctx);
    check_listed::<u32>(&ctx);
}
