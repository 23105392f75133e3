//! Builds the `kernels` crate to PTX with the one PTX builder (`ptx-builder`) and embeds it,
//! one module per kernel: the library then needs no build step of its own and no file beside
//! the binary. The kernels are compiled with the toolchain pinned in `ptx-builder` (through
//! rustup), whatever toolchain builds this crate. `KERNELS_ARCH=sm_90` selects another target
//! (default sm_80); `GPU_REDUCE_PTX_DIR=<dir>` takes prebuilt PTX instead (for machines without
//! the nightly); `GPU_REDUCE_SASS=sm_90,...` also embeds SASS made by `ptxas`, so that device
//! needs no JIT at all.

use std::path::PathBuf;

fn main() {
    // The kernels crate's own build script says where its source is: this works whether it
    // came by path, git or a registry.
    let src = std::env::var_os("DEP_GPU_REDUCE_KERNELS_SRC")
        .map(PathBuf::from)
        .unwrap_or_else(|| fail("the `kernels` dependency did not report its source directory"));
    ptx_builder::emit_rerun_if_changed(&src);
    let arch = std::env::var("KERNELS_ARCH").unwrap_or_else(|_| ptx_builder::DEFAULT_ARCH.into());
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let sass: Vec<String> = std::env::var("GPU_REDUCE_SASS")
        .ok()
        .map(|v| {
            v.split(',')
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let artifact = ptx_builder::PtxBuild::new(&src, &arch)
        .map(|b| {
            b.target_dir(out.join("ptx"))
                .sass(&sass.iter().map(String::as_str).collect::<Vec<_>>())
        })
        .and_then(|b| b.build())
        .unwrap_or_else(|e| fail(&format!("building the kernels to PTX failed: {e}")));
    ptx_builder::write_embed_index(&artifact, &out.join("kernels_index.rs"))
        .unwrap_or_else(|e| fail(&format!("writing the kernel index failed: {e}")));
    println!("cargo::rustc-env=KERNELS_PTX_ARCH={arch}");
}

/// A build script reports failure by exiting non-zero; the message is the error.
fn fail(msg: &str) -> ! {
    eprintln!("error: {msg}");
    std::process::exit(1);
}
