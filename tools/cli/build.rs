//! Builds the tools' kernels (`tools/kernels`: the seeds' teaching kernels, the streaming
//! kernel, the conformance kernels) to PTX with the same builder as the library's, and embeds
//! them as their own kernel library: the library's users never load them.

use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let src = manifest.join("../kernels");
    ptx_builder::emit_rerun_if_changed(&src);
    // The tool kernels use the library's hardware layer: rebuild when it changes too.
    ptx_builder::emit_rerun_if_changed(manifest.join("../../kernels"));
    let arch = std::env::var("KERNELS_ARCH").unwrap_or_else(|_| ptx_builder::DEFAULT_ARCH.into());
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let artifact = ptx_builder::PtxBuild::new(&src, &arch)
        .map(|b| b.target_dir(out.join("ptx")))
        .and_then(|b| b.build())
        .unwrap_or_else(|e| {
            eprintln!("error: building the tool kernels to PTX failed: {e}");
            std::process::exit(1);
        });
    ptx_builder::write_embed_index(&artifact, &out.join("tool_kernels_index.rs")).unwrap_or_else(
        |e| {
            eprintln!("error: writing the tool kernel index failed: {e}");
            std::process::exit(1);
        },
    );
    println!("cargo::rustc-env=TOOL_KERNELS_PTX_ARCH={arch}");
}
