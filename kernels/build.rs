//! Tells dependents where this crate's source is (`DEP_GPU_REDUCE_KERNELS_SRC`), so their build
//! scripts can compile it to PTX without assuming a workspace layout.
fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    println!("cargo::metadata=src={dir}");
    println!("cargo::rerun-if-changed=build.rs");
}
