//! Randomized differential stress on the CPU SIMT simulator (CI): every family (reduce, scan,
//! segmented, by key, transforms), random types, operators, sizes biased to boundaries,
//! offsets, distributions and layouts, each case against the CPU and its bits against a second
//! context; and several threads at once, each with its own contexts. `STRESS_REPRO=<family>:
//! <seed>` (from a failure's message) replays one case.

use integration_tests::sim;
use integration_tests::stress::{check_random_cases, check_random_cases_threads, families, replay};

#[test]
fn random_cases_of_every_family_match_the_cpu() {
    let cases = std::env::var("STRESS_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let (a, b) = (sim(), sim());
    let c = check_random_cases((&a, &b, None), cases, 1 << 14, 0x5eed);
    println!("simulator stress: {c:?}, 0 mismatches");
    assert_eq!(c.total(), cases);
    for f in families() {
        let n = c.cases.get(f.name).copied().unwrap_or(0);
        assert!(
            n * families().len() * 2 >= cases,
            "family {} drew only {n} cases",
            f.name
        );
    }
}

#[test]
fn threads_with_their_own_contexts() {
    let c = check_random_cases_threads(sim, false, 3, 40, 1 << 13, 0xc0c0);
    println!("simulator stress, 3 threads: {c:?}, 0 mismatches");
    assert_eq!(c.total(), 120);
}

/// `STRESS_REPRO=<family>:<seed> [STRESS_MAX=n] cargo test -p integration-tests --test
/// stress_sim replay -- --nocapture`: one case again (skipped, visibly, without the variable).
#[test]
fn replay_one_case() {
    let Ok(spec) = std::env::var("STRESS_REPRO") else {
        eprintln!("note: STRESS_REPRO not set: nothing to replay (skipped)");
        return;
    };
    let max = std::env::var("STRESS_MAX")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1 << 14);
    let (a, b) = (sim(), sim());
    replay(&spec, (&a, &b, None), max);
}

#[test]
fn every_family_is_registered() {
    let names: Vec<_> = families().iter().map(|f| f.name).collect();
    for want in [
        "reduce",
        "reduce_by_key",
        "scan",
        "scan_by_key",
        "segmented",
        "transform",
    ] {
        assert!(names.contains(&want), "{want} in {names:?}");
    }
}

/// Found by the stress (a lone infinity summed to NaN in the reference, not on the device):
/// the sum of one infinity is that infinity, of both infinities NaN.
#[test]
fn regression_sums_of_infinities() {
    use integration_tests::reductions::check_all_ops_at;
    let ctx = sim();
    check_all_ops_at(&ctx, &[f64::NEG_INFINITY], 1, "a lone -inf");
    check_all_ops_at(&ctx, &[f32::INFINITY, 1.0, 2.0], 0, "+inf and finite");
    check_all_ops_at(
        &ctx,
        &[f64::INFINITY, 3.0, f64::NEG_INFINITY],
        0,
        "+inf and -inf",
    );
    assert_eq!(
        ctx.sum(&ctx.htod(&[f64::NEG_INFINITY]).unwrap()).unwrap(),
        f64::NEG_INFINITY
    );
}
