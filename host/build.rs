//! Builds the `kernels` crate to PTX with the one PTX builder (`ptx-builder`) and embeds it,
//! one module per kernel: the library then needs no build step of its own and no file beside
//! the binary. The kernels are compiled with the toolchain pinned in `ptx-builder` (through
//! rustup), whatever toolchain builds this crate. `KERNELS_ARCH=sm_90` selects another target
//! (default sm_80); `GPU_REDUCE_PTX_DIR=<dir>` takes prebuilt PTX instead (for machines without
//! the nightly); `GPU_REDUCE_SASS=sm_90,...` also embeds SASS made by `ptxas`, so that device
//! needs no JIT at all.

fn main() {
    // The kernels crate's own build script says where its source is: this works whether it
    // came by path, git or a registry.
    let Some(src) = std::env::var_os("DEP_GPU_REDUCE_KERNELS_SRC") else {
        eprintln!("error: the `kernels` dependency did not report its source directory");
        std::process::exit(1);
    };
    ptx_builder::build_script_embed(std::path::PathBuf::from(src), "kernels_index.rs", &[]);
}
