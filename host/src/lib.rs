//! GPU reductions and prefix scans from Rust, with kernels written in Rust.
//!
//! The kernels (the `kernels` crate, `no_std`) are compiled to PTX by rustc's nvptx64 backend
//! when this crate builds, embedded one module per kernel, and loaded into a device on first
//! use through [`cudarc`] (which loads the driver dynamically: the crate builds without CUDA).
//! The same kernel source also runs on a CPU SIMT simulator ([`Context::sim`]), so everything
//! below works, slowly, on a machine without a GPU.
//!
//! ```
//! # fn main() -> gpu_reduce::Result<()> {
//! use gpu_reduce::{Context, Reduction, ScanKind};
//! let ctx = Context::sim()?; // or Context::new(0)? for GPU 0, Context::auto(0)? for either
//! let x = ctx.htod(&[3.0f32, 1.0, 2.0])?;
//! assert_eq!(ctx.sum(&x)?, 6.0); // one launch, deterministic
//! assert_eq!(ctx.argmax(&x)?, Some((0, 3.0)));
//! assert_eq!(ctx.reduce(&x, Reduction::Min)?, 1.0);
//! let mut out = ctx.alloc_zeros::<f32>(3)?;
//! ctx.scan(&x, &mut out, Reduction::Sum, ScanKind::Inclusive)?; // single pass
//! assert_eq!(ctx.dtoh(&out)?, [3.0, 4.0, 6.0]);
//! # Ok(()) }
//! ```
//!
//! # Which call
//!
//! Every call is a method of [`Context`] (of [`multi::MultiContext`] for several GPUs), in the
//! module of its family. One operator enum, [`Reduction`], for every reducing call and the
//! scans. One argument order: inputs, then outputs, then the operator (then the scan kind);
//! a custom-operator form takes its [`KernelLibrary`] first. Every call that returns a value
//! has three forms: blocking (`sum`), `_into` (the result left in a device buffer: never
//! blocks, can be captured into a CUDA graph) and `_async` (a [`Pending`]).
//!
//! | family | calls |
//! | --- | --- |
//! | [`reduce`]: one value | `reduce(input, op)`, `sum`, `argmin`, `argmax`, `sum_compensated`, `reduce_custom`; each with `_into` and `_async` |
//! | [`transform`]: maps on load | `sum_of_squares`, `norm2`, `mean_var`, `min_max`, `dot(x, y)`; each with `_into` and `_async` |
//! | [`scan`]: prefix scans | `scan(input, output, op, kind)`, `scan_in_place(data, op, kind)`, `inclusive_sum`, `scan_by_key(keys, values, output, op, kind)`, `scan_custom` |
//! | [`segmented`]: one value per segment | `segmented_reduce(input, segments, out, op)`, `segmented_argmin`/`_argmax(input, segments, indices, values)`, `segmented_reduce_custom`, `segmented_arg_custom`; segments from [`Segments`] |
//! | [`by_key`]: runs of equal keys | `reduce_by_key(keys, values, unique_out, aggregates_out, op)`, `_into`, `_async`, `reduce_by_key_custom` |
//! | [`multi`]: several GPUs | `MultiContext::{reduce, argmin, argmax, scan_in_place, scan_deferred}` over a `ShardedBuffer` |
//!
//! # Integer types
//!
//! Counts and indices of elements are `u64` in every signature: argmin/argmax indices, run
//! counts, segment offsets and lengths, sharded arrays' lengths and indices (the device works
//! in 64-bit indices; more than 2^32 elements are supported). Sizes of host-side memory
//! objects are `usize`, as in cudarc and Rust's slices: [`DeviceBuffer::len`], view lengths
//! and ranges, allocation lengths, byte counts; so are device ordinals and ranks.
//!
//! Layers: [`runtime`] (contexts, buffers, kernel loading and launching; no algorithm) under
//! [`reduce`] and [`scan`]; [`error`] for everything that can fail.
#![warn(missing_docs)]

mod backend;
pub mod by_key;
pub mod error;
pub mod histogram;
pub mod multi;
pub mod reduce;
pub mod runtime;
pub mod scan;
pub mod segmented;
pub mod select;
pub mod topk;
pub mod transform;

pub use by_key::ReduceByKeyElement;
pub use error::{Error, Result, SegmentFault};
pub use histogram::{HistogramCount, HistogramSample, HistogramWeight};
pub use reduce::{ArgValue, DeviceElement, Pending, Reduction};
pub use runtime::{
    BackendKind, Context, DeviceBuffer, DeviceInfo, DeviceView, DeviceViewMut, KernelLibrary,
    LaunchShape, LoadStats, device_count, load_stats,
};
pub use scan::{ScanByKeyElement, ScanElement, ScanKind};
pub use segmented::{OffsetCheck, SegmentedElement, Segments};
pub use select::{Predicate, SelectElement};
pub use topk::{TopK, TopkElement};
pub use transform::{
    DotElement, MinMaxElement, MinMaxPair, Moments, MomentsAcc, NormElement, ScaledSumSquares,
};

pub use cudarc;
pub use kernels;

/// The architecture the embedded PTX targets (`KERNELS_ARCH` at build time, default sm_80).
pub const PTX_ARCH: &str = env!("GPU_REDUCE_KERNELS_ARCH");

/// The library's own kernels: reductions and scans of the built-in operators.
pub static BUILTIN: KernelLibrary = include_kernels!("gpu-reduce", "kernels_index.rs");

/// The [`KernelLibrary`] of a kernel crate that this crate's build script built with
/// `ptx_builder::build_script_embed(dir, index_file, &[])`: `name` must be unique in the
/// process (loaded modules are cached under it).
///
/// ```ignore
/// // build.rs: ptx_builder::build_script_embed("my-kernels", "my_kernels.rs", &[]);
/// static MY_KERNELS: gpu_reduce::KernelLibrary =
///     gpu_reduce::include_kernels!("my-kernels", "my_kernels.rs");
/// ```
#[macro_export]
macro_rules! include_kernels {
    ($name:expr, $index_file:expr) => {
        $crate::KernelLibrary::new(
            $name,
            env!("GPU_REDUCE_KERNELS_ARCH"),
            include!(concat!(env!("OUT_DIR"), "/", $index_file)),
        )
    };
}

#[cfg(test)]
mod tests {
    /// What the kernels add to every user's binary stays small: the PTX, deflated and shared
    /// between kernels of the same code, within 6 MB (issue 34; BENCHMARKS.md, Binary size).
    #[test]
    fn embedded_ptx_within_budget() {
        let lib = &super::BUILTIN;
        if !lib.sass_archs().is_empty() {
            eprintln!(
                "note: built with SASS ({:?}): PTX budget check skipped",
                lib.sass_archs()
            );
            return;
        }
        let (embedded, ptx) = (lib.embedded_bytes(), lib.ptx_bytes());
        eprintln!(
            "{} kernels, {} modules, {ptx} bytes of PTX embedded as {embedded}",
            lib.entries().count(),
            lib.module_count()
        );
        assert!(embedded <= 6_000_000, "{embedded} bytes embedded");
        assert!(embedded < ptx / 4, "{embedded} of {ptx}: not compressed?");
    }

    /// No kernel calls a function with arguments: the kernels' code is meant to be inlined
    /// whole (a call a sample is slow), and the only functions left are the panics, which take
    /// none. An outlined function is also copied into every embedded module (session 26: a
    /// histogram's counting outlined for 16-bit samples, 4.5 MB more deflated PTX).
    #[test]
    fn no_kernel_calls_an_outlined_function() {
        let lib = &super::BUILTIN;
        for entry in lib.entries() {
            let ptx = lib.ptx(entry).unwrap();
            if let Some(call) = ptx
                .lines()
                .find(|l| l.trim_start().starts_with("call") && !l.trim_end().ends_with("();"))
            {
                panic!(
                    "{entry}: calls a function with arguments: `{}`",
                    call.trim()
                );
            }
        }
    }

    /// Every embedded module inflates to its recorded length and holds its kernel's entry (a
    /// stale compressed module once embedded another architecture's text, which the driver
    /// then refused at the first call).
    #[test]
    fn every_embedded_module_inflates_to_its_kernel() {
        let lib = &super::BUILTIN;
        for entry in lib.entries() {
            let ptx = lib
                .ptx(entry)
                .unwrap_or_else(|| panic!("{entry}: the module does not inflate"));
            let function = lib.function(entry).unwrap();
            assert!(
                ptx.contains(&format!(".entry {function}(")),
                "{entry}: its module has no entry {function}"
            );
        }
    }

    /// Every kernel the host can ask for is in the embedded index, and the index holds nothing
    /// else: each family names its own kernels from the kernels' built-in table (names come
    /// from the macro invocations, so a kernel compiled out of the PTX fails here, not at run
    /// time). No count or list to keep up to date.
    #[test]
    fn embedded_index_has_the_kernels_the_host_uses() {
        let names: Vec<&str> = [
            crate::reduce::kernel_names(),
            crate::scan::kernel_names(),
            crate::transform::kernel_names(),
            crate::segmented::kernel_names(),
            crate::by_key::kernel_names(),
            crate::select::kernel_names(),
            crate::histogram::kernel_names(),
            crate::topk::kernel_names(),
            crate::multi::kernel_names(),
        ]
        .concat();
        for n in &names {
            let ptx = super::BUILTIN
                .ptx(n)
                .unwrap_or_else(|| panic!("no module for {n}"));
            let function = super::BUILTIN.function(n).unwrap();
            assert!(ptx.contains(&format!(".entry {function}(")), "{n}");
            assert!(ptx.contains(&format!(".target {}", super::PTX_ARCH)));
        }
        let entries: Vec<_> = super::BUILTIN.entries().collect();
        assert!(entries.windows(2).all(|w| w[0] < w[1]), "index sorted");
        let set: std::collections::BTreeSet<&str> = names.iter().copied().collect();
        assert_eq!(set.len(), names.len(), "a kernel named twice");
        let index: std::collections::BTreeSet<&str> = entries.iter().copied().collect();
        let missing: Vec<_> = set.difference(&index).collect();
        // Without the `f16` feature the host cannot launch the 16-bit kernels the PTX holds.
        let extra: Vec<_> = index
            .difference(&set)
            .filter(|n| cfg!(feature = "f16") || !n.ends_with("f16"))
            .collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "not in the index: {missing:?}; in the index, not launched by the host: {extra:?}"
        );
    }
}
