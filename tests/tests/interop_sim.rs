//! Views, raw pointers and non-blocking reductions on the simulator (runs everywhere).

use integration_tests::{interop, sim};

#[test]
fn views_raw_pointers_and_memory_ops() {
    interop::check_views_and_raw(&sim());
}

#[test]
fn pending_reductions() {
    interop::check_pending(&sim());
}
