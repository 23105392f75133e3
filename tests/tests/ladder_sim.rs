//! The reduction ladder on the CPU SIMT simulator: every step, for i32, f32 and f64, at sizes
//! around warp, block and tile boundaries, checked against the CPU (integers exactly, floats
//! within the ladder's error bound). Run everywhere, CI included.

use gpu_reduce::Context;
use gpu_reduce_tools::ladder::{
    self, Ladder, LadderDtype, LadderElem, check_all, ladder_sum, run_ladder, schedule,
};
use integration_tests::sim;
use rand::{Rng, SeedableRng, rngs::SmallRng};

/// Sizes around the warp (32), the tiles (128..2048 elements per block) and reduce6's
/// power-of-two path (512, 4096), plus one larger size drawn from a fixed seed.
fn sizes() -> Vec<usize> {
    let larger = SmallRng::seed_from_u64(0x1add).random_range(20_000..40_000);
    vec![
        0, 1, 31, 32, 33, 255, 256, 257, 512, 1000, 4096, 4097, larger,
    ]
}

/// Every step on `n` random values of `T`: the sum must check.
fn check_every_step<T: LadderElem>(ctx: &Context, n: usize, seed: u64) {
    let data = T::random(n, seed);
    let results = check_all(ctx, &data).unwrap();
    assert_eq!(results.len(), Ladder::ROWS.len());
    for (step, check) in results {
        assert!(
            check.ok,
            "{} {} n = {n}: {}",
            step.label(),
            T::DTYPE.name(),
            check.detail
        );
    }
}

fn check_sizes<T: LadderElem>(ctx: &Context) {
    for (i, n) in sizes().into_iter().enumerate() {
        check_every_step::<T>(ctx, n, 100 + i as u64);
    }
}

#[test]
fn every_step_i32_exact() {
    check_sizes::<i32>(&sim());
}

#[test]
fn every_step_f32_within_bound() {
    check_sizes::<f32>(&sim());
}

#[test]
fn every_step_f64_within_bound() {
    check_sizes::<f64>(&sim());
}

/// All ones: every step must count every element exactly once (an element lost or added
/// twice shows as an off-by-one), including the reduce6 fast path at 4096.
#[test]
fn every_step_counts_each_element_once() {
    let ctx = sim();
    for n in [1usize, 129, 513, 4096, 5000] {
        let input = ctx.htod(&vec![1i32; n]).unwrap();
        for step in Ladder::ROWS {
            assert_eq!(
                ladder_sum(&ctx, step, &input).unwrap(),
                n as i32,
                "{step:?} n = {n}"
            );
        }
    }
    assert_eq!(
        schedule(Ladder::Reduce6, 4096)[0].kernel,
        Ladder::Reduce6Pow2
    );
}

/// reduceGmem reduces in place: it must work on a copy and leave the caller's input intact.
#[test]
fn gmem_keeps_the_input() {
    let ctx = sim();
    let data = f64::random(3000, 7);
    let input = ctx.htod(&data).unwrap();
    ladder_sum(&ctx, Ladder::Gmem, &input).unwrap();
    let after = ctx.dtoh(&input).unwrap();
    assert!(
        after
            .iter()
            .zip(&data)
            .all(|(a, b)| a.to_bits() == b.to_bits())
    );
}

/// The table on the simulator: every row checked, no bandwidth claims, labelled SIMULATED.
#[test]
fn table_on_the_simulator() {
    let ctx = sim();
    let rows = run_ladder(&ctx, 5000, LadderDtype::F32, 1, 0).unwrap();
    assert_eq!(rows.len(), Ladder::ROWS.len());
    for r in &rows {
        assert!(r.checked, "{}: {}", r.kernel, r.detail);
        assert!(r.median_ms > 0.0 && r.gb_per_s.is_nan() && r.percent_of_copy.is_nan());
    }
    assert_eq!(rows[0].kernel, "reduce0");
    assert_eq!(rows[0].speedup_vs_reduce0, 1.0);
    let table = ladder::format_table(&rows);
    assert!(
        table.contains("SIMULATED") && table.contains("n/a"),
        "{table}"
    );
    assert_eq!(
        table.matches("| ok |").count(),
        Ladder::ROWS.len(),
        "{table}"
    );
}
