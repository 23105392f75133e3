//! The shim's symbol table: the element types each op takes, and every C symbol the loader
//! resolves (their names are those `cub_shim.cu` exports).

#[allow(unused_imports)] // for the doc links
use super::{Cub, CubError};

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
    impl Sealed for i32 {}
    impl Sealed for u32 {}
    impl Sealed for u64 {}
    impl Sealed for super::F16 {}
    impl Sealed for super::Bf16 {}
}

/// IEEE binary16 elements (CUDA's `__half`), for the type parameter of [`Cub::sum`],
/// [`Cub::sum_to_f32`] and [`Cub::inclusive_sum`]: 2 bytes each, held on the Rust side as
/// their `u16` bit patterns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct F16;

/// bfloat16 elements (CUDA's `__nv_bfloat16`, the upper half of an f32), for the type parameter
/// of [`Cub::sum`], [`Cub::sum_to_f32`] and [`Cub::inclusive_sum`]: 2 bytes each, held on the
/// Rust side as their `u16` bit patterns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bf16;

/// Element types with a CUB sum reduction (`cub::DeviceReduce::Sum`) in the shim.
/// The constants are the NUL-terminated symbol names of the run and the temp-size query.
pub trait CubSum: Copy + sealed::Sealed {
    const SUM: &'static [u8];
    const SUM_TEMP: &'static [u8];
}

/// Element types with CUB min/max reductions (`cub::DeviceReduce::Min` / `Max`).
pub trait CubMinMax: Copy + sealed::Sealed {
    const MIN: &'static [u8];
    const MIN_TEMP: &'static [u8];
    const MAX: &'static [u8];
    const MAX_TEMP: &'static [u8];
}

/// Element types with a CUB inclusive sum scan (`cub::DeviceScan::InclusiveSum`).
pub trait CubInclusiveSum: Copy + sealed::Sealed {
    const INCLUSIVE_SUM: &'static [u8];
    const INCLUSIVE_SUM_TEMP: &'static [u8];
}

/// Element types with a CUB exclusive sum scan (`cub::DeviceScan::ExclusiveSum`).
pub trait CubExclusiveSum: Copy + sealed::Sealed {
    const EXCLUSIVE_SUM: &'static [u8];
    const EXCLUSIVE_SUM_TEMP: &'static [u8];
}

/// Half-precision element types with a CUB sum accumulated in f32 into one f32
/// (`cub::DeviceReduce::Reduce`, init 0.0f).
pub trait CubSumToF32: Copy + sealed::Sealed {
    const SUM_TO_F32: &'static [u8];
    const SUM_TO_F32_TEMP: &'static [u8];
}

/// `impl Trait for Type`: each op's run symbol `cub_OP` and its query `cub_temp_bytes_OP`.
macro_rules! shim_ops {
    ($($(#[$attr:meta])* $tr:ident for $ty:ty { $($run:ident, $temp:ident = $op:literal;)+ })*) => {$(
        $(#[$attr])*
        impl $tr for $ty {$(
            const $run: &'static [u8] = concat!("cub_", $op, "\0").as_bytes();
            const $temp: &'static [u8] = concat!("cub_temp_bytes_", $op, "\0").as_bytes();
        )+}
    )*};
}

shim_ops! {
    CubSum for f32 { SUM, SUM_TEMP = "sum_f32"; }
    CubSum for f64 { SUM, SUM_TEMP = "sum_f64"; }
    CubSum for i32 { SUM, SUM_TEMP = "sum_i32"; }
    CubMinMax for f32 { MIN, MIN_TEMP = "min_f32"; MAX, MAX_TEMP = "max_f32"; }
    CubInclusiveSum for i32 { INCLUSIVE_SUM, INCLUSIVE_SUM_TEMP = "inclusive_sum_i32"; }
    CubInclusiveSum for f32 { INCLUSIVE_SUM, INCLUSIVE_SUM_TEMP = "inclusive_sum_f32"; }
    /// One of [`OPTIONAL_OPS`]: see [`Cub::has_inclusive_sum`].
    CubInclusiveSum for f64 { INCLUSIVE_SUM, INCLUSIVE_SUM_TEMP = "inclusive_sum_f64"; }
    CubExclusiveSum for i32 { EXCLUSIVE_SUM, EXCLUSIVE_SUM_TEMP = "exclusive_sum_i32"; }
    CubSum for F16 { SUM, SUM_TEMP = "sum_f16"; }
    CubSum for Bf16 { SUM, SUM_TEMP = "sum_bf16"; }
    CubSumToF32 for F16 { SUM_TO_F32, SUM_TO_F32_TEMP = "sum_f16_to_f32"; }
    CubSumToF32 for Bf16 { SUM_TO_F32, SUM_TO_F32_TEMP = "sum_bf16_to_f32"; }
    CubInclusiveSum for F16 { INCLUSIVE_SUM, INCLUSIVE_SUM_TEMP = "inclusive_sum_f16"; }
    CubInclusiveSum for Bf16 { INCLUSIVE_SUM, INCLUSIVE_SUM_TEMP = "inclusive_sum_bf16"; }
}

/// The (run symbol, temp-size symbol) pairs of `Type: Trait::RUN, TEMP` items.
macro_rules! pairs {
    ($($ty:ty: $tr:ident::$run:ident, $temp:ident);* $(;)?) => {
        &[$((<$ty as $tr>::$run, <$ty as $tr>::$temp)),*]
    };
}

/// Every op of the shim as (run symbol, temp-size symbol), [`OPTIONAL_OPS`] aside; all are
/// resolved by [`Cub::load`], which fails without one.
pub const OPS: &[(&[u8], &[u8])] = pairs![
    f32: CubSum::SUM, SUM_TEMP;
    f64: CubSum::SUM, SUM_TEMP;
    i32: CubSum::SUM, SUM_TEMP;
    f32: CubMinMax::MIN, MIN_TEMP;
    f32: CubMinMax::MAX, MAX_TEMP;
    i32: CubInclusiveSum::INCLUSIVE_SUM, INCLUSIVE_SUM_TEMP;
    f32: CubInclusiveSum::INCLUSIVE_SUM, INCLUSIVE_SUM_TEMP;
    i32: CubExclusiveSum::EXCLUSIVE_SUM, EXCLUSIVE_SUM_TEMP;
    F16: CubSum::SUM, SUM_TEMP;
    Bf16: CubSum::SUM, SUM_TEMP;
    F16: CubSumToF32::SUM_TO_F32, SUM_TO_F32_TEMP;
    Bf16: CubSumToF32::SUM_TO_F32, SUM_TO_F32_TEMP;
    F16: CubInclusiveSum::INCLUSIVE_SUM, INCLUSIVE_SUM_TEMP;
    Bf16: CubInclusiveSum::INCLUSIVE_SUM, INCLUSIVE_SUM_TEMP;
];

/// Ops of [`OPS`]' shape that shims built before them lack, as (run symbol, temp-size symbol):
/// [`Cub::load`] resolves each that is there and leaves the others out (calls to them then fail
/// with [`CubError::MissingSymbol`]; [`Cub::has_inclusive_sum`] says beforehand).
pub const OPTIONAL_OPS: &[(&[u8], &[u8])] =
    pairs![f64: CubInclusiveSum::INCLUSIVE_SUM, INCLUSIVE_SUM_TEMP];

/// `int cub_segmented_sum_f32(void* temp, size_t temp_bytes, const float* in, float* out,
/// int64_t num_segments, const unsigned long long* begin_offsets, const unsigned long long*
/// end_offsets, void* stream)`
pub const SEGMENTED_SUM_SYMBOL: &[u8] = b"cub_segmented_sum_f32\0";
/// `int cub_temp_bytes_segmented_sum_f32(int64_t num_segments, size_t* bytes)`
pub const SEGMENTED_SUM_TEMP_SYMBOL: &[u8] = b"cub_temp_bytes_segmented_sum_f32\0";
/// `int cub_segmented_sum_fixed_f32(void* temp, size_t temp_bytes, const float* in, float* out,
/// int64_t num_rows, int64_t row_len, void* stream)`
pub const SEGMENTED_SUM_FIXED_SYMBOL: &[u8] = b"cub_segmented_sum_fixed_f32\0";
/// `int cub_temp_bytes_segmented_sum_fixed_f32(int64_t num_rows, int64_t row_len, size_t* bytes)`
pub const SEGMENTED_SUM_FIXED_TEMP_SYMBOL: &[u8] = b"cub_temp_bytes_segmented_sum_fixed_f32\0";
/// `int cub_segmented_sum_fixed_native(void)`
pub const SEGMENTED_SUM_FIXED_NATIVE_SYMBOL: &[u8] = b"cub_segmented_sum_fixed_native\0";
/// `int cub_reduce_by_key_sum_u32_f32(void* temp, size_t temp_bytes, const unsigned int* keys_in,
/// unsigned int* unique_out, const float* values_in, float* aggregates_out, unsigned long long*
/// num_runs_out, unsigned long long n, void* stream)`
pub const REDUCE_BY_KEY_SYMBOL: &[u8] = b"cub_reduce_by_key_sum_u32_f32\0";
/// `int cub_temp_bytes_reduce_by_key_sum_u32_f32(unsigned long long n, size_t* bytes)`
pub const REDUCE_BY_KEY_TEMP_SYMBOL: &[u8] = b"cub_temp_bytes_reduce_by_key_sum_u32_f32\0";

/// `int cub_scan_by_key_sum_u32_f32(void* temp, size_t temp_bytes, const unsigned int* keys_in,
/// const float* values_in, float* values_out, unsigned long long n, void* stream)`
pub const SCAN_BY_KEY_SYMBOL: &[u8] = b"cub_scan_by_key_sum_u32_f32\0";
/// `int cub_temp_bytes_scan_by_key_sum_u32_f32(unsigned long long n, size_t* bytes)`
pub const SCAN_BY_KEY_TEMP_SYMBOL: &[u8] = b"cub_temp_bytes_scan_by_key_sum_u32_f32\0";

/// `int cub_select_if_lt_u32(void* temp, size_t temp_bytes, const unsigned int* in, unsigned
/// int* out, unsigned long long* num_selected, unsigned long long n, unsigned int threshold,
/// void* stream)`: the u32 [`CompactOp::SelectIfLt`] (as are the two below the u32
/// [`CompactOp::PartitionIfLt`] and [`CompactOp::SelectUnique`]; all three in
/// [`COMPACTION_OPS`])
pub const SELECT_IF_SYMBOL: &[u8] = b"cub_select_if_lt_u32\0";
/// `int cub_temp_bytes_select_if_lt_u32(unsigned long long n, size_t* bytes)`
pub const SELECT_IF_TEMP_SYMBOL: &[u8] = b"cub_temp_bytes_select_if_lt_u32\0";
/// `int cub_partition_if_lt_u32(...)`, [`SELECT_IF_SYMBOL`]'s arguments
pub const PARTITION_IF_SYMBOL: &[u8] = b"cub_partition_if_lt_u32\0";
/// `int cub_temp_bytes_partition_if_lt_u32(unsigned long long n, size_t* bytes)`
pub const PARTITION_IF_TEMP_SYMBOL: &[u8] = b"cub_temp_bytes_partition_if_lt_u32\0";
/// `int cub_select_unique_u32(void* temp, size_t temp_bytes, const unsigned int* in, unsigned
/// int* out, unsigned long long* num_selected, unsigned long long n, void* stream)`
pub const SELECT_UNIQUE_SYMBOL: &[u8] = b"cub_select_unique_u32\0";
/// `int cub_temp_bytes_select_unique_u32(unsigned long long n, size_t* bytes)`
pub const SELECT_UNIQUE_TEMP_SYMBOL: &[u8] = b"cub_temp_bytes_select_unique_u32\0";

/// The shim's ops with arguments of their own (not [`OPS`]' shape), as (run symbol, temp-size
/// symbol); all are resolved by [`Cub::load`] too.
pub const OTHER_OPS: &[(&[u8], &[u8])] = &[
    (SEGMENTED_SUM_SYMBOL, SEGMENTED_SUM_TEMP_SYMBOL),
    (SEGMENTED_SUM_FIXED_SYMBOL, SEGMENTED_SUM_FIXED_TEMP_SYMBOL),
    (REDUCE_BY_KEY_SYMBOL, REDUCE_BY_KEY_TEMP_SYMBOL),
];

/// Ops of [`OTHER_OPS`]' kind (arguments of their own) that shims built before them lack:
/// [`Cub::load`] resolves each that is there, as for [`OPTIONAL_OPS`]
/// ([`Cub::has_scan_by_key_sum_u32_f32`] says whether it was). The compactions, optional too,
/// are [`COMPACTION_OPS`].
pub const OPTIONAL_OTHER_OPS: &[(&[u8], &[u8])] = &[(SCAN_BY_KEY_SYMBOL, SCAN_BY_KEY_TEMP_SYMBOL)];

/// The shim's compactions, each for every [`CubCompact`] element type (its symbols
/// `cub_<op>_<type>`, `cub_temp_bytes_<op>_<type>`: [`CubCompact::SYMBOLS`]). All are
/// optional: [`Cub::load`] resolves each that is there, [`Cub::has_compaction`] says whether
/// it was (a shim built before an op lacks it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CompactOp {
    /// `cub::DeviceSelect::If` with `x < threshold` ([`Cub::select_if_lt`]): `select_if_lt`.
    SelectIfLt,
    /// `cub::DeviceSelect::Flagged`, byte flags ([`Cub::select_flagged`]): `select_flagged`.
    SelectFlagged,
    /// `cub::DevicePartition::If`, two-way, `x < threshold` ([`Cub::partition_if_lt`]):
    /// `partition_if_lt`.
    PartitionIfLt,
    /// `cub::DevicePartition::If`, three-way, `x < t1` then `x < t2`
    /// ([`Cub::partition_three_way_lt`]): `partition_three_way_lt`.
    PartitionThreeWayLt,
    /// `cub::DeviceSelect::Unique` ([`Cub::select_unique`]): `select_unique`.
    SelectUnique,
    /// `cub::DeviceRunLengthEncode::Encode`, u64 counts ([`Cub::run_length_encode`]):
    /// `run_length_encode`.
    RunLengthEncode,
    /// `cub::DeviceRunLengthEncode::NonTrivialRuns`, u64 offsets and lengths
    /// ([`Cub::non_trivial_runs`]): `non_trivial_runs`.
    NonTrivialRuns,
    /// `cub::DeviceSelect::UniqueByKey`, keys of the type and u32 values
    /// ([`Cub::unique_by_key`]): `select_unique_by_key_<type>_u32`.
    UniqueByKey,
}

impl CompactOp {
    /// Every op, in the order of [`CubCompact::SYMBOLS`].
    pub const ALL: [CompactOp; 8] = [
        CompactOp::SelectIfLt,
        CompactOp::SelectFlagged,
        CompactOp::PartitionIfLt,
        CompactOp::PartitionThreeWayLt,
        CompactOp::SelectUnique,
        CompactOp::RunLengthEncode,
        CompactOp::NonTrivialRuns,
        CompactOp::UniqueByKey,
    ];

    /// The op's place in [`CompactOp::ALL`] and [`CubCompact::SYMBOLS`].
    pub const fn index(self) -> usize {
        self as usize
    }
}

/// Element types of the shim's compactions ([`CompactOp`]): u32, f32 and u64 (CUDA's
/// `unsigned int`, `float`, `unsigned long long`).
pub trait CubCompact: Copy + sealed::Sealed + 'static {
    /// "u32", "f32" or "u64": the symbols' suffix.
    const NAME: &'static str;
    /// (run symbol, temp-size symbol) of each op, in [`CompactOp::ALL`]'s order.
    const SYMBOLS: [(&'static [u8], &'static [u8]); 8];
}

/// (`cub_<a><type><b>`, `cub_temp_bytes_<a><type><b>`), NUL-terminated.
macro_rules! compact_pair {
    ($a:literal, $t:literal, $b:literal) => {
        (
            concat!("cub_", $a, $t, $b, "\0").as_bytes(),
            concat!("cub_temp_bytes_", $a, $t, $b, "\0").as_bytes(),
        )
    };
}

macro_rules! cub_compact {
    ($($ty:ty => $t:literal),*) => {$(
        impl CubCompact for $ty {
            const NAME: &'static str = $t;
            const SYMBOLS: [(&'static [u8], &'static [u8]); 8] = [
                compact_pair!("select_if_lt_", $t, ""),
                compact_pair!("select_flagged_", $t, ""),
                compact_pair!("partition_if_lt_", $t, ""),
                compact_pair!("partition_three_way_lt_", $t, ""),
                compact_pair!("select_unique_", $t, ""),
                compact_pair!("run_length_encode_", $t, ""),
                compact_pair!("non_trivial_runs_", $t, ""),
                compact_pair!("select_unique_by_key_", $t, "_u32"),
            ];
        }
    )*};
}

cub_compact!(u32 => "u32", f32 => "f32", u64 => "u64");

/// Every compaction of every type as (run symbol, temp-size symbol): u32's ops, then f32's, then
/// u64's, each in [`CompactOp::ALL`]'s order. All optional (see [`CompactOp`]).
pub const COMPACTION_OPS: [(&[u8], &[u8]); 24] = {
    let per_type = [
        <u32 as CubCompact>::SYMBOLS,
        <f32 as CubCompact>::SYMBOLS,
        <u64 as CubCompact>::SYMBOLS,
    ];
    let empty: &[u8] = &[];
    let mut all = [(empty, empty); 24];
    let mut i = 0;
    while i < 24 {
        all[i] = per_type[i / 8][i % 8];
        i += 1;
    }
    all
};

/// `int cub_version(void)`
pub const VERSION_SYMBOL: &[u8] = b"cub_version\0";
/// `int cub_wide_num_items(void)`
pub const WIDE_SYMBOL: &[u8] = b"cub_wide_num_items\0";
/// `const char* cub_error_string(int)`
pub const ERROR_STRING_SYMBOL: &[u8] = b"cub_error_string\0";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cub::{SHIM_SOURCE, loader::symbol_name};

    fn all_symbols() -> Vec<&'static [u8]> {
        let mut v: Vec<&'static [u8]> = OPS
            .iter()
            .chain(OPTIONAL_OPS)
            .chain(OTHER_OPS)
            .chain(OPTIONAL_OTHER_OPS)
            .chain(&COMPACTION_OPS)
            .flat_map(|&(r, t)| [r, t])
            .collect();
        v.extend([
            VERSION_SYMBOL,
            WIDE_SYMBOL,
            ERROR_STRING_SYMBOL,
            SEGMENTED_SUM_FIXED_NATIVE_SYMBOL,
        ]);
        v
    }

    #[test]
    fn symbol_names_are_nul_terminated_and_distinct() {
        let syms = all_symbols();
        assert_eq!(syms.len(), 2 * (14 + 1 + 3 + 1 + 24) + 4);
        for s in &syms {
            assert_eq!(s.last(), Some(&0u8), "{s:?} lacks its NUL");
            assert_eq!(
                s.iter().filter(|&&b| b == 0).count(),
                1,
                "{s:?} has an inner NUL"
            );
            let name = std::str::from_utf8(&s[..s.len() - 1]).expect("ASCII name");
            assert!(name.starts_with("cub_"), "{name}");
            assert!(
                name.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
            );
        }
        let mut sorted = syms.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), syms.len(), "duplicate symbol names");
    }

    #[test]
    fn temp_symbols_follow_the_shim_macro() {
        // CUB_SHIM_OP(NAME, ...) exports cub_NAME and cub_temp_bytes_NAME; the other ops are
        // named the same way.
        let ops = OPS.iter().chain(OPTIONAL_OPS).chain(OTHER_OPS);
        for &(run, temp) in ops.chain(OPTIONAL_OTHER_OPS).chain(&COMPACTION_OPS) {
            let run = symbol_name(run);
            let op = run.strip_prefix("cub_").unwrap();
            assert_eq!(symbol_name(temp), format!("cub_temp_bytes_{op}"));
        }
    }

    /// Every symbol the loader resolves is defined in the shim's source: by CUB_SHIM_OP /
    /// CUB_SHIM_OP_IO or a compaction's CUB_SHIM_*_OP macro (its op's run and query), or
    /// written out as an `extern "C"` function.
    #[test]
    fn every_symbol_is_in_the_shim_source() {
        let macro_op = |op: &str| {
            SHIM_SOURCE.lines().any(|l| {
                l.starts_with(&format!("CUB_SHIM_OP({op},"))
                    || l.starts_with(&format!("CUB_SHIM_OP_IO({op},"))
                    || (l.starts_with("CUB_SHIM_") && l.contains(&format!("_OP({op}, ")))
            })
        };
        for sym in all_symbols() {
            let name = symbol_name(sym);
            let written = SHIM_SOURCE
                .lines()
                .any(|l| l.starts_with("extern \"C\"") && l.contains(&format!(" {name}(")));
            let op = name
                .strip_prefix("cub_temp_bytes_")
                .or_else(|| name.strip_prefix("cub_"))
                .unwrap();
            assert!(
                written || macro_op(op),
                "{name} is not defined in cub_shim.cu"
            );
        }
        // The macro ops are exactly OPS and OPTIONAL_OPS.
        let macro_ops = SHIM_SOURCE
            .lines()
            .filter(|l| l.starts_with("CUB_SHIM_OP(") || l.starts_with("CUB_SHIM_OP_IO("))
            .count();
        assert_eq!(macro_ops, OPS.len() + OPTIONAL_OPS.len());
        // The compaction macros' uses are exactly COMPACTION_OPS, in its order, each with the
        // element type its name says.
        let uses: Vec<&str> = SHIM_SOURCE
            .lines()
            .filter(|l| l.starts_with("CUB_SHIM_") && l.contains("_OP(") && !l.contains('\\'))
            .filter(|l| !l.starts_with("CUB_SHIM_OP(") && !l.starts_with("CUB_SHIM_OP_IO("))
            .collect();
        assert_eq!(uses.len(), COMPACTION_OPS.len(), "{uses:?}");
        for (i, (l, &(run, _))) in uses.iter().zip(&COMPACTION_OPS).enumerate() {
            let op = symbol_name(run);
            let op = op.strip_prefix("cub_").unwrap();
            assert!(l.contains(&format!("_OP({op}, ")), "{l} is not {op}");
            let ty = ["u32", "f32", "u64"][i / CompactOp::ALL.len()];
            assert!(l.ends_with(&format!(", cub_shim_{ty})")), "{l}");
        }
    }

    #[test]
    fn compaction_symbols_are_per_type_and_the_first_u32_ones_keep_their_names() {
        for (t, syms) in [
            ("u32", <u32 as CubCompact>::SYMBOLS),
            ("f32", <f32 as CubCompact>::SYMBOLS),
            ("u64", <u64 as CubCompact>::SYMBOLS),
        ] {
            for op in CompactOp::ALL {
                let run = symbol_name(syms[op.index()].0);
                assert!(run.contains(&format!("_{t}")), "{run}");
            }
        }
        let u32s = <u32 as CubCompact>::SYMBOLS;
        let pair = |op: CompactOp| u32s[op.index()];
        assert_eq!(
            pair(CompactOp::SelectIfLt),
            (SELECT_IF_SYMBOL, SELECT_IF_TEMP_SYMBOL)
        );
        assert_eq!(
            pair(CompactOp::PartitionIfLt),
            (PARTITION_IF_SYMBOL, PARTITION_IF_TEMP_SYMBOL)
        );
        assert_eq!(
            pair(CompactOp::SelectUnique),
            (SELECT_UNIQUE_SYMBOL, SELECT_UNIQUE_TEMP_SYMBOL)
        );
        assert_eq!(
            symbol_name(pair(CompactOp::UniqueByKey).0),
            "cub_select_unique_by_key_u32_u32"
        );
        assert_eq!(
            symbol_name(<f32 as CubCompact>::SYMBOLS[CompactOp::PartitionThreeWayLt.index()].1),
            "cub_temp_bytes_partition_three_way_lt_f32"
        );
        assert_eq!(COMPACTION_OPS[8], <f32 as CubCompact>::SYMBOLS[0]);
        assert_eq!(COMPACTION_OPS[23], <u64 as CubCompact>::SYMBOLS[7]);
        for (i, op) in CompactOp::ALL.into_iter().enumerate() {
            assert_eq!(op.index(), i);
        }
    }

    #[test]
    fn symbol_name_strips_the_nul() {
        assert_eq!(symbol_name(b"cub_sum_f32\0"), "cub_sum_f32");
        assert_eq!(symbol_name(b"plain"), "plain");
    }
}
