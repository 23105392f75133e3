//! Segmented reductions on the CPU SIMT simulator (CI): every operator and type against a CPU
//! model of the kernel's combining order (bit for bit) and order-free references.

use integration_tests::segmented::*;
use integration_tests::sim;

#[test]
fn boundary_lengths_every_op_and_type() {
    check_boundary_lengths_every_type(&sim());
}

#[test]
fn csr_mixed_random_lengths() {
    let ctx = sim();
    check_csr_mixed::<f32>(&ctx, 400, 1);
    check_csr_mixed::<i64>(&ctx, 300, 2);
    check_csr_mixed::<f64>(&ctx, 200, 3);
}

/// Lengths of up to 300, many segments a window: the warp's bits.
#[test]
fn csr_medium_lengths() {
    let ctx = sim();
    check_csr_medium::<f32>(&ctx, 3000, 4);
    check_csr_medium::<f64>(&ctx, 1000, 5);
    check_csr_medium::<i32>(&ctx, 1000, 6);
}

/// Short lengths: the tiles form, against the tile model bit for bit.
#[test]
fn csr_short_lengths_by_tiles() {
    let ctx = sim();
    check_csr_short::<f32>(&ctx, 6000, 7);
    check_csr_short::<f64>(&ctx, 3000, 8);
    check_csr_short::<i32>(&ctx, 3000, 9);
    check_csr_short::<u64>(&ctx, 2000, 10);
    check_tiles_edges::<f32>(&ctx, 11);
    check_tiles_edges::<i64>(&ctx, 12);
    check_tiles_unsorted(&ctx);
}

#[test]
fn many_empty_segments() {
    check_many_empty(&sim());
}

#[test]
fn one_huge_segment() {
    check_huge_segment(&sim(), 300_000);
}

#[test]
fn fixed_rows() {
    let ctx = sim();
    check_fixed_rows::<f32>(&ctx, 1000, 37);
    check_fixed_rows::<u32>(&ctx, 1000, 37);
    check_fixed_rows::<f64>(&ctx, 3, 100_000);
    check_fixed_rows::<i32>(&ctx, 3, 100_000);
    check_fixed_rows::<u64>(&ctx, 17, 1);
    check_fixed_rows::<f32>(&ctx, 40, 1025);
    check_fixed_rows::<f32>(&ctx, 6, 32_773);
}

#[test]
fn argmin_argmax_semantics() {
    check_arg_semantics(&sim());
}

#[test]
fn same_bits_for_every_grid() {
    check_grid_independent(&sim());
}

#[test]
fn user_operator_entry_points() {
    check_custom(&sim());
}

#[test]
fn bad_input_is_an_error() {
    check_bad_input(&sim());
}

#[test]
fn work_list_full_same_bits() {
    check_work_list_full(&sim());
}

#[test]
fn listed_form_same_bits_as_work_list() {
    let ctx = sim();
    check_listed::<f32>(&ctx);
    check_listed::<i64>(&ctx);
}
