//! Builds ./kernels to PTX (with the pinned nightly, through rustup, whatever toolchain builds
//! this crate) and writes the embed index that `gpu_reduce::include_kernels!` reads.

fn main() {
    // A crate outside this repository passes `&[]`; here the library's kernels (our kernels'
    // hardware layer and algorithms) are a path dependency too, so watch them as well.
    ptx_builder::build_script_embed(
        "kernels",
        "minmax_kernels.rs",
        &[std::path::Path::new("../../kernels")],
    );
}
