//! The program's own cudarc memory and streams, non-blocking reductions, graph capture and
//! waiting without spinning, on a GPU. `#[ignore]`d: `cargo xtask test --gpu`.

use integration_tests::{gpu, interop};

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn views_raw_pointers_and_memory_ops() {
    interop::check_views_and_raw(&gpu());
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn pending_reductions() {
    interop::check_pending(&gpu());
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn cudarc_memory_and_user_streams() {
    interop::check_cudarc_memory(&gpu());
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn graph_capture_and_replay() {
    interop::check_graph_capture(&gpu());
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask test --gpu"]
fn waiting_does_not_spin() {
    interop::check_wait_does_not_spin(&gpu());
}

/// Needs two GPUs: `cargo xtask test --gpu` and the bundle's run.sh skip it visibly on a
/// machine with one.
#[test]
#[ignore = "needs two CUDA GPUs: cargo xtask test --gpu on a 2-GPU machine"]
fn other_devices_memory_is_rejected_two_gpus() {
    interop::check_other_device_rejected();
}
