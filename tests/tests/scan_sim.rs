//! The production scan (decoupled look-back) and the scan by key on the CPU simulator.

use integration_tests::lookback::*;
use integration_tests::sim;
use proptest::prelude::*;

#[test]
fn scan_every_operator_type_and_kind_at_boundaries() {
    // Up to three 4-byte tiles and one past (six 8-byte tiles).
    let tile = kernels::scan::policy::ACTIVE.tile_elems(4) as usize;
    check_scan_every_op_and_type(&sim(), &scan_boundary_sizes(3 * tile + 1));
}

#[test]
fn scan_in_place_offsets_and_errors() {
    check_scan_in_place_offsets_and_errors(&sim());
}

#[test]
fn scan_by_key_every_operator() {
    check_scan_by_key(&sim(), &[0, 1, 100, 16_385, 40_000]);
}

#[test]
fn scan_stress_many_tiles() {
    // 40 tiles waiting on each other, repeatedly (the simulator runs blocks on OS threads).
    let tile = kernels::scan::policy::ACTIVE.tile_elems(4) as usize;
    check_scan_stress(&sim(), 40 * tile + 17, 3);
}

#[test]
fn scan_integers_deterministic() {
    check_scan_integer_determinism(&sim(), 30_000, 3);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]
    #[test]
    fn scan_random_sizes(n in 0usize..40_000, op in 0usize..3, kind in 0usize..2) {
        use gpu_reduce::{ScanKind, Reduction};
        let ctx = sim();
        let x: Vec<f32> = integration_tests::reductions::data(n, n as u64, false);
        let d = ctx.htod(&x).unwrap();
        let mut out = ctx.alloc_zeros::<f32>(n.max(1)).unwrap();
        let (op, kind) = (Reduction::SCAN[op], ScanKind::ALL[kind]);
        ctx.scan(&d, &mut out, op, kind).unwrap();
        check_scan_result(&ctx.dtoh(&out).unwrap()[..n], &x, op, kind, "proptest");
    }
}

#[test]
fn lookback_walk_order_and_windows() {
    check_lookback_walk(&sim());
}
