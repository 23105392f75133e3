//! Shared helpers of the integration tests.

use gpu_reduce::Context;
use rand::{Rng, SeedableRng, rngs::SmallRng};

/// The context GPU tests run on. GPU tests are `#[ignore]`d and run only through
/// `cargo xtask test --gpu` (or the bundle's run.sh), which first checks that a device exists;
/// reaching this without one is a failure, not a pass.
pub fn gpu() -> Context {
    match Context::new(0) {
        Ok(c) => c,
        Err(e) => panic!("GPU test run without a usable GPU: {e}"),
    }
}

/// `n` uniform values in [-1, 1) from `seed`.
pub fn random_f32(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect()
}
