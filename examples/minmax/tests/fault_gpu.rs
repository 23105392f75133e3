//! A user operator's failed check on a GPU: a typed error, no hang, and the device's context
//! lost for the process as the docs say. Its own test binary (one test): the fault leaves the
//! GPU unusable for the rest of the process. `#[ignore]`d: `cargo xtask test --gpu`.

mod common;
use common::*;
use gpu_reduce::{Context, Error};

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn failing_operator_check_traps_with_a_typed_error() {
    let ctx = Context::new(0).unwrap_or_else(|e| panic!("GPU test run without a usable GPU: {e}"));
    let e = check_failing_operator(&ctx);
    println!("the trapping operator: {e}");
    assert!(matches!(e, Error::KernelFault { .. }), "{e:?}");
    // Sticky, as documented: the next call on this device (on this context or a new one),
    // an upload included, reports the fault instead of running.
    let again = ctx.htod(&[1.0f32, 2.0]).and_then(|x| ctx.sum(&x));
    println!("the next call on the same context: {again:?}");
    assert!(matches!(again, Err(Error::KernelFault { .. })), "{again:?}");
    let other = Context::new(0).and_then(|c| c.sum(&c.htod(&[1.0f32, 2.0])?));
    println!("a new context of the same device: {other:?}");
    assert!(matches!(other, Err(Error::KernelFault { .. })), "{other:?}");
    // The simulator in the same process is unaffected.
    let sim = Context::sim().unwrap();
    check_failing_operator_free(&sim);
}
