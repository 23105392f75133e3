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
//! use gpu_reduce::{Context, Reduction, ScanKind, ScanOperator};
//! let ctx = Context::sim()?; // or Context::new(0)? for GPU 0, Context::auto(0)? for either
//! let x = ctx.htod(&[3.0f32, 1.0, 2.0])?;
//! assert_eq!(ctx.sum(&x)?, 6.0); // one launch, deterministic
//! assert_eq!(ctx.argmax(&x)?, Some((0, 3.0)));
//! assert_eq!(ctx.reduce(&x, Reduction::Min)?, 1.0);
//! let mut out = ctx.alloc_zeros::<f32>(3)?;
//! ctx.scan(&x, &mut out, ScanOperator::Sum, ScanKind::Inclusive)?; // single pass
//! assert_eq!(ctx.dtoh(&out)?, [3.0, 4.0, 6.0]);
//! # Ok(()) }
//! ```
//!
//! Layers: [`runtime`] (contexts, buffers, kernel loading and launching; no algorithm) under
//! [`reduce`] and [`scan`]; [`error`] for everything that can fail.
#![warn(missing_docs)]

pub mod by_key;
pub mod error;
pub mod multi;
pub mod reduce;
pub mod runtime;
pub mod scan;
pub mod segmented;
pub mod transform;

pub use by_key::ReduceByKeyElement;
pub use error::{Error, Result, SegmentFault};
pub use reduce::{DeviceElement, Pending, Reduction};
pub use runtime::{
    BackendKind, Context, DeviceBuffer, DeviceInfo, DeviceView, DeviceViewMut, KernelLibrary,
    LaunchShape, LoadStats, device_count, load_stats,
};
pub use scan::{ByKeyKernel, ScanElement, ScanKind, ScanOperator};
pub use segmented::{DeviceOffsets, OffsetCheck, SegmentedElement, Segments};
pub use transform::{DotElement, Moments, MomentsAcc, NormElement};

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
    use kernels::reduce::ReduceInstance;

    /// Every kernel the host can ask for is in the embedded index (names come from the macro
    /// invocations, so a kernel compiled out of the PTX would fail here, not at run time).
    #[test]
    fn embedded_index_has_the_kernels_the_host_uses() {
        use crate::{ByKeyKernel, Reduction, ScanElement, ScanKind, ScanOperator};
        use kernels::ops::SumCompensated;
        let mut names = vec![<SumCompensated as ReduceInstance<f32>>::KERNEL.name];
        fn of<T: ScanElement + ByKeyKernel<u32> + ByKeyKernel<u64>>(names: &mut Vec<&str>) {
            names.extend(
                Reduction::ALL
                    .iter()
                    .filter_map(|&op| T::kernel(op))
                    .map(|k| k.name),
            );
            names.push(T::argmin_kernel().name);
            names.push(T::argmax_kernel().name);
            for op in ScanOperator::ALL {
                for kind in ScanKind::ALL {
                    names.push(T::scan_kernel(op, kind).name);
                }
                names.push(<T as ByKeyKernel<u32>>::by_key_kernel(op).name);
                names.push(<T as ByKeyKernel<u64>>::by_key_kernel(op).name);
            }
        }
        of::<i32>(&mut names);
        of::<u32>(&mut names);
        of::<i64>(&mut names);
        of::<u64>(&mut names);
        of::<f32>(&mut names);
        of::<f64>(&mut names);
        // f16 and bf16: sum (f32 accumulation), min, max, argmin, argmax, and 6 scans each
        // (sum in f32, min, max; inclusive and exclusive). Named through the kernels crate's
        // types, so this holds with or without the `f16` feature (the PTX has them either way).
        fn half<T: kernels::half::HalfFloat>(names: &mut Vec<&str>)
        where
            kernels::half::SumF32: ReduceInstance<T> + kernels::scan::ScanInstance<T>,
            kernels::ops::Min: ReduceInstance<T> + kernels::scan::ScanInstance<T>,
            kernels::ops::Max: ReduceInstance<T> + kernels::scan::ScanInstance<T>,
            kernels::ops::ArgMin: ReduceInstance<T>,
            kernels::ops::ArgMax: ReduceInstance<T>,
        {
            use kernels::half::SumF32;
            use kernels::ops::{ArgMax, ArgMin, Max, Min};
            use kernels::scan::ScanInstance;
            names.extend([
                <SumF32 as ReduceInstance<T>>::KERNEL.name,
                <Min as ReduceInstance<T>>::KERNEL.name,
                <Max as ReduceInstance<T>>::KERNEL.name,
                <ArgMin as ReduceInstance<T>>::KERNEL.name,
                <ArgMax as ReduceInstance<T>>::KERNEL.name,
                <SumF32 as ScanInstance<T>>::INCLUSIVE.name,
                <SumF32 as ScanInstance<T>>::EXCLUSIVE.name,
                <Min as ScanInstance<T>>::INCLUSIVE.name,
                <Min as ScanInstance<T>>::EXCLUSIVE.name,
                <Max as ScanInstance<T>>::INCLUSIVE.name,
                <Max as ScanInstance<T>>::EXCLUSIVE.name,
            ]);
        }
        half::<kernels::half::F16>(&mut names);
        half::<kernels::half::Bf16>(&mut names);
        // With the feature, the host's f16/bf16 impls name the same kernels.
        #[cfg(feature = "f16")]
        {
            fn host_half<T: crate::ScanElement>() -> Vec<&'static str> {
                let mut v = vec![
                    T::sum_kernel().name,
                    T::argmin_kernel().name,
                    T::argmax_kernel().name,
                ];
                v.extend(
                    Reduction::ALL
                        .iter()
                        .filter_map(|&op| T::kernel(op))
                        .map(|k| k.name),
                );
                for op in ScanOperator::ALL {
                    for kind in ScanKind::ALL {
                        v.push(T::scan_kernel(op, kind).name);
                    }
                }
                v
            }
            for v in [host_half::<half::f16>(), host_half::<half::bf16>()] {
                assert!(v.iter().all(|n| names.contains(n)), "{v:?}");
            }
        }
        // The other families name their own kernels.
        names.extend(crate::transform::kernel_names());
        names.extend(crate::segmented::kernel_names());
        names.extend(crate::by_key::kernel_names());
        names.extend(crate::multi::kernel_names());
        for n in &names {
            let ptx = super::BUILTIN
                .ptx(n)
                .unwrap_or_else(|| panic!("no module for {n}"));
            assert!(ptx.contains(&format!(".entry {n}(")), "{n}");
            assert!(ptx.contains(&format!(".target {}", super::PTX_ARCH)));
        }
        let entries: Vec<_> = super::BUILTIN.entries().collect();
        assert!(entries.windows(2).all(|w| w[0] < w[1]), "index sorted");
        // No count to keep up to date: no kernel named twice, and the index holds exactly the
        // host's kernels (so none the library cannot launch: ladder, stream or test kernels).
        let set: std::collections::BTreeSet<&str> = names.iter().copied().collect();
        assert_eq!(set.len(), names.len(), "a kernel named twice");
        let index: std::collections::BTreeSet<&str> = entries.iter().copied().collect();
        let missing: Vec<_> = set.difference(&index).collect();
        let extra: Vec<_> = index.difference(&set).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "not in the index: {missing:?}; in the index, not launched by the host: {extra:?}"
        );
    }
}
