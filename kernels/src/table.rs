//! The library's built-in (operator, element type) pairs, written once.
//!
//! Every family's built-in kernels (one-launch, segmented and tile reductions, scans, the by-key
//! families) and the host's dispatch to them expand [`builtin_table!`](crate::builtin_table)
//! instead of listing pairs: a type or an operator added to a class here reaches every family
//! that takes the class. A family picks classes (`int`, `float`, `half`) and keeps the operators
//! its algorithm offers by matching their name tokens.

/// Expands the built-in table through the caller's macro.
///
/// - `builtin_table!(pairs each! { ctx } int float half)` calls `each! { ctx t op Op }` for every
///   (element type, operator) pair of the named classes: `t` the type's name token (`f32`,
///   `f16`; [`builtin_elem!`](crate::builtin_elem) makes it a type), `op` the operator's name
///   token (`sum`, `and`, `sum_f32`), `Op` its type (`$crate::ops::Sum`).
/// - `builtin_table!(types each! { ctx } int float half)` calls `each! { ctx t { [op Op] ... } }`
///   once per element type with all of its operators (for per-type dispatch on the host).
/// - `builtin_table!(keys each! { ctx })` calls `each! { ctx [u32 u64] }`: the key types of the
///   by-key families (compared bitwise).
///
/// Classes: `int` (i32, u32, i64, u64), `float` (f32, f64), `half` (f16, bf16, whose sum
/// accumulates in f32: `sum_f32`). Argmin and argmax are operators of every class.
#[macro_export]
#[doc(hidden)]
macro_rules! builtin_table {
    (keys $each:ident! { $($ctx:tt)* }) => { $each! { $($ctx)* [u32 u64] } };
    ($mode:ident $each:ident! $ctx:tt $($class:ident)*) => {
        $( $crate::builtin_table!(@class $class $mode $each $ctx); )*
    };
    (@class int $($rest:tt)*) => {
        $crate::builtin_table!(@cross $($rest)* [i32 u32 i64 u64] {
            [sum $crate::ops::Sum] [product $crate::ops::Product] [min $crate::ops::Min]
            [max $crate::ops::Max] [and $crate::ops::BitAnd] [or $crate::ops::BitOr]
            [xor $crate::ops::BitXor] [argmin $crate::ops::ArgMin] [argmax $crate::ops::ArgMax]
        });
    };
    (@class float $($rest:tt)*) => {
        $crate::builtin_table!(@cross $($rest)* [f32 f64] {
            [sum $crate::ops::Sum] [product $crate::ops::Product] [min $crate::ops::Min]
            [max $crate::ops::Max] [argmin $crate::ops::ArgMin] [argmax $crate::ops::ArgMax]
        });
    };
    (@class half $($rest:tt)*) => {
        $crate::builtin_table!(@cross $($rest)* [f16 bf16] {
            [sum_f32 $crate::half::SumF32] [min $crate::ops::Min] [max $crate::ops::Max]
            [argmin $crate::ops::ArgMin] [argmax $crate::ops::ArgMax]
        });
    };
    (@cross pairs $each:ident $ctx:tt [$($t:ident)*] $ops:tt) => {
        $( $crate::builtin_table!(@row $each $ctx $t $ops); )*
    };
    (@cross types $each:ident $ctx:tt [$($t:ident)*] $ops:tt) => {
        $( $crate::builtin_table!(@call $each $ctx $t $ops); )*
    };
    (@row $each:ident $ctx:tt $t:ident { $([$op:ident $Op:path])* }) => {
        $( $crate::builtin_table!(@call $each $ctx $t $op $Op); )*
    };
    (@call $each:ident { $($ctx:tt)* } $($item:tt)*) => { $each! { $($ctx)* $($item)* } };
}

/// The element type of a name token of [`builtin_table!`](crate::builtin_table): `f16` and
/// `bf16` are [`crate::half`]'s types, the others are Rust's.
#[macro_export]
#[doc(hidden)]
macro_rules! builtin_elem {
    (f16) => {
        $crate::half::F16
    };
    (bf16) => {
        $crate::half::Bf16
    };
    ($t:ident) => {
        $t
    };
}
