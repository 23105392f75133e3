//! Builds the kernels to PTX with the workspace's one PTX builder and embeds it: the host
//! binary then needs no separate build step and no file next to it.
//! `KERNELS_ARCH=sm_90` selects another target (default sm_80).

use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let workspace = manifest
        .parent()
        .expect("host/ lives in the workspace")
        .to_path_buf();
    for p in [
        "kernels/src",
        "kernels/Cargo.toml",
        "Cargo.toml",
        "ptx-builder/src",
    ] {
        println!("cargo:rerun-if-changed={}", workspace.join(p).display());
    }
    println!("cargo:rerun-if-env-changed=KERNELS_ARCH");
    // Build-time tuning knobs of the kernels (read with option_env! on both sides).
    println!("cargo:rerun-if-env-changed=GPU_REDUCE_SCAN_BLOCK");
    println!("cargo:rerun-if-env-changed=GPU_REDUCE_SCAN_ROWS");
    println!("cargo:rerun-if-env-changed=GPU_REDUCE_SCAN_LOOKBACK");
    println!("cargo:rerun-if-env-changed=GPU_REDUCE_SCAN_MIN_BLOCKS");
    println!("cargo:rerun-if-env-changed=GPU_REDUCE_SCAN_FIRST_DELAY");
    println!("cargo:rerun-if-env-changed=GPU_REDUCE_SCAN_POLL_DELAY");
    println!("cargo:rerun-if-env-changed=GPU_REDUCE_SCAN_DELAY_FROM");
    println!("cargo:rerun-if-env-changed=GPU_REDUCE_SCAN_DELAY_MIN_TILES");
    let arch = std::env::var("KERNELS_ARCH").unwrap_or_else(|_| ptx_builder::DEFAULT_ARCH.into());

    let artifact = ptx_builder::PtxBuild::new(&workspace, &arch)
        .and_then(|b| b.build())
        .unwrap_or_else(|e| {
            // A build script reports failure by exiting non-zero; the message is the error.
            eprintln!("error: building the kernels to PTX failed: {e}");
            std::process::exit(1);
        });
    let out =
        PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets it")).join("kernels.ptx");
    std::fs::copy(&artifact.ptx_path, &out).expect("copy PTX into OUT_DIR");
    println!("cargo:rustc-env=KERNELS_PTX_ARCH={arch}");
}
