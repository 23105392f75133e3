//! The user operators on the CPU simulator: run everywhere, CI included.

mod common;
use common::*;
use gpu_reduce::Context;

fn sim() -> Context {
    Context::sim().expect("the simulator needs no device")
}

#[test]
fn every_operator_every_size() {
    check_all_sizes(&sim());
}

#[test]
fn min_max_nan_inf_zeros_ties_offsets() {
    check_min_max_edges(&sim());
}

#[test]
fn softmax_large_values_and_infinities() {
    check_softmax_edges(&sim());
}

#[test]
fn max_abs_scan_exact() {
    check_max_abs_edges(&sim());
}
