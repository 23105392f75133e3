//! The reduction ladder on the GPU: the simulator tests' checks at larger sizes, the table,
//! and agreement with the simulator. `#[ignore]`d: run with `cargo xtask test --gpu`.

use gpu_reduce::Context;
use gpu_reduce_tools::ladder::{
    self, Ladder, LadderDtype, LadderElem, check_all, ladder_sum, run_ladder,
};
use integration_tests::{gpu, sim};
use rand::{Rng, SeedableRng, rngs::SmallRng};

/// Boundary sizes, the first pass's and later passes' grid edges, reduce6's power-of-two
/// path, up to 2^24 + 1; then ten sizes drawn from a fixed seed.
fn sizes() -> Vec<usize> {
    let mut s = vec![
        0usize,
        1,
        31,
        32,
        33,
        255,
        256,
        257,
        512,
        1000,
        4096,
        4097,
        65_535,
        65_536,
        65_537,
        (1 << 20) - 1,
        1 << 20,
        (1 << 20) + 1,
        3_000_017,
        1 << 24,
        (1 << 24) + 1,
    ];
    let mut rng = SmallRng::seed_from_u64(0x1add_0009);
    s.extend((0..10).map(|_| rng.random_range(1..6_000_000usize)));
    s
}

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
        check_every_step::<T>(ctx, n, 200 + i as u64);
    }
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn every_step_i32_exact() {
    check_sizes::<i32>(&gpu());
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn every_step_f32_within_bound() {
    check_sizes::<f32>(&gpu());
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn every_step_f64_within_bound() {
    check_sizes::<f64>(&gpu());
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn every_step_counts_each_element_once() {
    let ctx = gpu();
    for n in [1usize, 129, 513, 4096, 5000, 1 << 22, (1 << 22) + 3] {
        let input = ctx.htod(&vec![1i32; n]).unwrap();
        for step in Ladder::ROWS {
            assert_eq!(
                ladder_sum(&ctx, step, &input).unwrap(),
                n as i32,
                "{step:?} n = {n}"
            );
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn gmem_keeps_the_input() {
    let ctx = gpu();
    let data = f32::random(1 << 20, 7);
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

/// The table on the GPU, every dtype: every row checked, with finite times and bandwidths and
/// a copy baseline.
#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn table_on_the_gpu() {
    let ctx = gpu();
    for dtype in LadderDtype::ALL {
        let rows = run_ladder(&ctx, 1 << 22, dtype, 5, 2).unwrap();
        assert_eq!(rows.len(), Ladder::ROWS.len());
        for r in &rows {
            assert!(r.checked, "{} {dtype:?}: {}", r.kernel, r.detail);
            assert!(r.median_ms > 0.0 && r.gb_per_s > 0.0 && r.percent_of_copy > 0.0);
            assert!(r.copy_gb_per_s.is_finite() && r.copy_gb_per_s > 0.0);
        }
        let table = ladder::format_table(&rows);
        assert!(
            table.contains("CUDA events") && !table.contains("SIMULATED"),
            "{table}"
        );
    }
}

/// The simulator runs the same source in the same order: every step's sum agrees with the
/// GPU's bit for bit, except the float atomic kernel, whose block sums land in the order the
/// blocks finish (then both must still check).
#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn gpu_and_simulator_agree() {
    let (g, s) = (gpu(), sim());
    fn agree<T: LadderElem>(g: &Context, s: &Context, n: usize, bits: impl Fn(T) -> u64) {
        let data = T::random(n, 31);
        let (gi, si) = (g.htod(&data).unwrap(), s.htod(&data).unwrap());
        for step in Ladder::ROWS {
            let (a, b) = (
                ladder_sum(g, step, &gi).unwrap(),
                ladder_sum(s, step, &si).unwrap(),
            );
            let exact = T::DTYPE == LadderDtype::I32 || !step.atomic();
            assert!(
                !exact || bits(a) == bits(b),
                "{step:?} {} n = {n}: gpu {a:?} vs sim {b:?}",
                T::DTYPE.name()
            );
        }
    }
    for n in [1000usize, 65_537, 200_003] {
        agree::<i32>(&g, &s, n, |x| x as u32 as u64);
        agree::<f32>(&g, &s, n, |x| x.to_bits() as u64);
        agree::<f64>(&g, &s, n, f64::to_bits);
    }
}
