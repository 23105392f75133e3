//! Teaching prefix scans from seed 003, kept apart from the production scan (`kernels::scan`):
//!
//! | module | method | kernels | work |
//! |---|---|---|---|
//! | [`bit`] | Fenwick tree (binary indexed tree), the seed's own | build (once per level), query | `O(n log n)` |
//! | [`bcao`] | GPU Gems 3 ch. 39 Blelloch scan with bank-conflict avoidance, the seed's baseline | block scan (once per level), add (once per level but the last) | `O(n)` |
//!
//! Every kernel body is generic over the element type `T` (`i32`, `u32`, `i64`, `u64`, `f32`,
//! `f64`) and the operator `O: ReduceOp<T, Acc = T>` (exported for `Sum`, `Min`, `Max`), and
//! combines strictly left to right, so any associative operator (commutative or not) is
//! correct. Inclusive or exclusive is a run-time flag (`inclusive: u32`), which halves the
//! number of entry points; the inner scans of the block totals are always exclusive.
//!
//! Indices are `u64` wherever a product can pass `u32` (`n` up to 10^9 and beyond); grids are
//! 1-D: [`bit::BLOCK`] threads per block for the BIT, [`bcao::BLOCK`] threads and
//! [`bcao::TILE`] elements per block for BCAO.
//!
//! Exported as `scan_bit_build_<op>_<type>`, `scan_bit_query_<op>_<type>`,
//! `scan_bcao_block_<op>_<type>` and `scan_bcao_add_<op>_<type>` (e.g.
//! `scan_bit_query_sum_i32`), all listed in [`KERNEL_NAMES`].

pub mod bcao;
pub mod bit;

/// The operators the teaching scans are exported for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScanLadderOp {
    Sum,
    Min,
    Max,
}

impl ScanLadderOp {
    pub const ALL: [ScanLadderOp; 3] = [ScanLadderOp::Sum, ScanLadderOp::Min, ScanLadderOp::Max];
}

/// Simulator signature of `scan_bit_build_*`: `(data, n, offset)`.
#[cfg(not(target_arch = "nvptx64"))]
pub type BitBuildFn<T> = unsafe fn(*mut T, u64, u64);
/// Simulator signature of `scan_bit_query_*`: `(tree, out, n, inclusive)`.
#[cfg(not(target_arch = "nvptx64"))]
pub type BitQueryFn<T> = unsafe fn(*const T, *mut T, u64, u32);
/// Simulator signature of `scan_bcao_block_*`: `(input, out, block_sums, n, inclusive)`.
#[cfg(not(target_arch = "nvptx64"))]
pub type BcaoBlockFn<T> = unsafe fn(*const T, *mut T, *mut T, u64, u32);
/// Simulator signature of `scan_bcao_add_*`: `(data, offsets, n)`.
#[cfg(not(target_arch = "nvptx64"))]
pub type BcaoAddFn<T> = unsafe fn(*mut T, *const T, u64);

/// One exported kernel: its PTX entry name and the same function for the simulator.
#[cfg(not(target_arch = "nvptx64"))]
#[derive(Clone, Copy, Debug)]
pub struct Kernel<F> {
    pub name: &'static str,
    pub sim: F,
}

/// The four kernels of one (type, operator).
#[cfg(not(target_arch = "nvptx64"))]
#[derive(Clone, Copy, Debug)]
pub struct ScanLadderKernels<T> {
    pub bit_build: Kernel<BitBuildFn<T>>,
    pub bit_query: Kernel<BitQueryFn<T>>,
    pub bcao_block: Kernel<BcaoBlockFn<T>>,
    pub bcao_add: Kernel<BcaoAddFn<T>>,
}

/// An element type the teaching scans are exported for. Host builds only, as the other items
/// with a simulator function: on nvptx64 the kernels are PTX entry points, not `unsafe fn`s.
#[cfg(not(target_arch = "nvptx64"))]
pub trait ScanLadderElem: kernels::ops::Element {
    /// This type's kernels for `op`.
    fn scan_ladder_kernels(op: ScanLadderOp) -> ScanLadderKernels<Self>;
}

/// Exports the four kernels per (type, operator) line, implements [`ScanLadderElem`] and
/// builds [`KERNEL_NAMES`]. The operator's name is both the `kernels::ops` type and the
/// [`ScanLadderOp`] variant.
macro_rules! scan_ladder_kernels {
    ($($t:ty { $($op:ident => $build:ident, $query:ident, $block:ident, $add:ident;)* })*) => {
        $($(
            kernels::kernel! {
                #[doc = concat!("BIT build level (`bit::build`), ", stringify!($op), " over `", stringify!($t), "`.")]
                pub unsafe fn $build(data: *mut $t, n: u64, offset: u64) {
                    unsafe { bit::build::<$t, kernels::ops::$op>(data, n, offset) }
                }
            }
            kernels::kernel! {
                #[doc = concat!("BIT query (`bit::query`), ", stringify!($op), " over `", stringify!($t), "`.")]
                pub unsafe fn $query(tree: *const $t, out: *mut $t, n: u64, inclusive: u32) {
                    unsafe { bit::query::<$t, kernels::ops::$op>(tree, out, n, inclusive) }
                }
            }
            kernels::kernel! {
                #[doc = concat!("BCAO tile scan (`bcao::block_scan`), ", stringify!($op), " over `", stringify!($t), "`.")]
                pub unsafe fn $block(
                    input: *const $t,
                    out: *mut $t,
                    block_sums: *mut $t,
                    n: u64,
                    inclusive: u32,
                ) {
                    unsafe {
                        bcao::block_scan::<$t, kernels::ops::$op>(input, out, block_sums, n, inclusive)
                    }
                }
            }
            kernels::kernel! {
                #[doc = concat!("BCAO add-back (`bcao::add`), ", stringify!($op), " over `", stringify!($t), "`.")]
                pub unsafe fn $add(data: *mut $t, offsets: *const $t, n: u64) {
                    unsafe { bcao::add::<$t, kernels::ops::$op>(data, offsets, n) }
                }
            }
        )*)*

        /// PTX entry points of the teaching scans, for the host's kernel registry.
        pub const KERNEL_NAMES: &[&str] = &[
            $($(stringify!($build), stringify!($query), stringify!($block), stringify!($add),)*)*
        ];

        $(#[cfg(not(target_arch = "nvptx64"))]
        impl ScanLadderElem for $t {
            fn scan_ladder_kernels(op: ScanLadderOp) -> ScanLadderKernels<Self> {
                match op {
                    $(ScanLadderOp::$op => ScanLadderKernels {
                        bit_build: Kernel { name: stringify!($build), sim: $build },
                        bit_query: Kernel { name: stringify!($query), sim: $query },
                        bcao_block: Kernel { name: stringify!($block), sim: $block },
                        bcao_add: Kernel { name: stringify!($add), sim: $add },
                    },)*
                }
            }
        })*
    };
}

#[rustfmt::skip]
scan_ladder_kernels! {
    i32 {
        Sum => scan_bit_build_sum_i32, scan_bit_query_sum_i32, scan_bcao_block_sum_i32, scan_bcao_add_sum_i32;
        Min => scan_bit_build_min_i32, scan_bit_query_min_i32, scan_bcao_block_min_i32, scan_bcao_add_min_i32;
        Max => scan_bit_build_max_i32, scan_bit_query_max_i32, scan_bcao_block_max_i32, scan_bcao_add_max_i32;
    }
    u32 {
        Sum => scan_bit_build_sum_u32, scan_bit_query_sum_u32, scan_bcao_block_sum_u32, scan_bcao_add_sum_u32;
        Min => scan_bit_build_min_u32, scan_bit_query_min_u32, scan_bcao_block_min_u32, scan_bcao_add_min_u32;
        Max => scan_bit_build_max_u32, scan_bit_query_max_u32, scan_bcao_block_max_u32, scan_bcao_add_max_u32;
    }
    i64 {
        Sum => scan_bit_build_sum_i64, scan_bit_query_sum_i64, scan_bcao_block_sum_i64, scan_bcao_add_sum_i64;
        Min => scan_bit_build_min_i64, scan_bit_query_min_i64, scan_bcao_block_min_i64, scan_bcao_add_min_i64;
        Max => scan_bit_build_max_i64, scan_bit_query_max_i64, scan_bcao_block_max_i64, scan_bcao_add_max_i64;
    }
    u64 {
        Sum => scan_bit_build_sum_u64, scan_bit_query_sum_u64, scan_bcao_block_sum_u64, scan_bcao_add_sum_u64;
        Min => scan_bit_build_min_u64, scan_bit_query_min_u64, scan_bcao_block_min_u64, scan_bcao_add_min_u64;
        Max => scan_bit_build_max_u64, scan_bit_query_max_u64, scan_bcao_block_max_u64, scan_bcao_add_max_u64;
    }
    f32 {
        Sum => scan_bit_build_sum_f32, scan_bit_query_sum_f32, scan_bcao_block_sum_f32, scan_bcao_add_sum_f32;
        Min => scan_bit_build_min_f32, scan_bit_query_min_f32, scan_bcao_block_min_f32, scan_bcao_add_min_f32;
        Max => scan_bit_build_max_f32, scan_bit_query_max_f32, scan_bcao_block_max_f32, scan_bcao_add_max_f32;
    }
    f64 {
        Sum => scan_bit_build_sum_f64, scan_bit_query_sum_f64, scan_bcao_block_sum_f64, scan_bcao_add_sum_f64;
        Min => scan_bit_build_min_f64, scan_bit_query_min_f64, scan_bcao_block_min_f64, scan_bcao_add_min_f64;
        Max => scan_bit_build_max_f64, scan_bit_query_max_f64, scan_bcao_block_max_f64, scan_bcao_add_max_f64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names<T: ScanLadderElem>(op: ScanLadderOp) -> [&'static str; 4] {
        let k = T::scan_ladder_kernels(op);
        [
            k.bit_build.name,
            k.bit_query.name,
            k.bcao_block.name,
            k.bcao_add.name,
        ]
    }

    #[test]
    fn every_kernel_listed_once_with_its_type_and_op() {
        assert_eq!(KERNEL_NAMES.len(), 6 * 3 * 4);
        let mut all = std::vec::Vec::new();
        for op in ScanLadderOp::ALL {
            let o = std::format!("{op:?}").to_lowercase();
            for (t, ns) in [
                ("i32", names::<i32>(op)),
                ("u32", names::<u32>(op)),
                ("i64", names::<i64>(op)),
                ("u64", names::<u64>(op)),
                ("f32", names::<f32>(op)),
                ("f64", names::<f64>(op)),
            ] {
                for n in ns {
                    assert!(n.ends_with(&std::format!("_{o}_{t}")), "{n}");
                    assert!(KERNEL_NAMES.contains(&n), "{n}");
                    all.push(n);
                }
            }
        }
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), KERNEL_NAMES.len());
    }
}
