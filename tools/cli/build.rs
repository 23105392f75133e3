//! Builds the tools' kernels (`tools/kernels`: the seeds' teaching kernels, the streaming
//! kernel, the conformance kernels) to PTX with the same builder as the library's, and embeds
//! them as their own kernel library: the library's users never load them.

fn main() {
    // The tool kernels use the library's hardware layer: rebuild when it changes too.
    let library_kernels = std::path::Path::new("../../kernels");
    ptx_builder::build_script_embed("../kernels", "tool_kernels_index.rs", &[library_kernels]);
}
