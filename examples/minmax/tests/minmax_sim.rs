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

/// The operator's failed `assert!` is a fault naming the kernel and the panic's message; the
/// simulator context stays usable (the next calls give every result).
#[test]
fn failing_operator_check_is_a_typed_fault() {
    let ctx = sim();
    let e = check_failing_operator(&ctx);
    let m = e.to_string();
    assert!(
        matches!(e, gpu_reduce::Error::Sim(_)) && m.contains("a NaN in the input"),
        "{m}"
    );
    // The same context afterwards: the clean sum again, and the other operators.
    check_failing_operator_free(&ctx);
    check_all_sizes(&ctx);
}
