//! Prefix scans on the device: the production single-pass decoupled look-back scan, and the
//! operator/kind vocabulary shared with the teaching variants (`scan_ladder`: BIT, BCAO).

use crate::reduce::DeviceElement;

/// Inclusive (`out[i] = x[0] ⊕ … ⊕ x[i]`) or exclusive (`out[i] = x[0] ⊕ … ⊕ x[i-1]`,
/// `out[0]` = the operator's identity).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScanKind {
    Inclusive,
    Exclusive,
}

impl ScanKind {
    pub const ALL: [ScanKind; 2] = [ScanKind::Inclusive, ScanKind::Exclusive];
    pub fn name(self) -> &'static str {
        match self {
            ScanKind::Inclusive => "inclusive",
            ScanKind::Exclusive => "exclusive",
        }
    }
}

/// The built-in scan operators (any other associative operator with an identity goes through
/// `kernels::ops::ReduceOp` and `kernels::scan_kernels!`). Integer sums wrap; float min/max
/// propagate NaN, as the reductions do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScanOperator {
    Sum,
    Min,
    Max,
}

impl ScanOperator {
    pub const ALL: [ScanOperator; 3] = [ScanOperator::Sum, ScanOperator::Min, ScanOperator::Max];
    pub fn name(self) -> &'static str {
        match self {
            ScanOperator::Sum => "sum",
            ScanOperator::Min => "min",
            ScanOperator::Max => "max",
        }
    }

    /// The operator's identity for `T`.
    pub fn identity<T: DeviceElement>(self) -> T {
        use kernels::ops::{Max, Min, ReduceOp, Sum};
        match self {
            ScanOperator::Sum => <Sum as ReduceOp<T>>::identity(),
            ScanOperator::Min => <Min as ReduceOp<T>>::identity(),
            ScanOperator::Max => <Max as ReduceOp<T>>::identity(),
        }
    }

    /// `a ⊕ b` with the same semantics as the device kernels.
    pub fn combine<T: DeviceElement>(self, a: T, b: T) -> T {
        use kernels::ops::{Max, Min, ReduceOp, Sum};
        match self {
            ScanOperator::Sum => <Sum as ReduceOp<T>>::combine(a, b),
            ScanOperator::Min => <Min as ReduceOp<T>>::combine(a, b),
            ScanOperator::Max => <Max as ReduceOp<T>>::combine(a, b),
        }
    }
}

/// The CPU scan the device scans are checked against: sequential, same operator semantics
/// (floats are summed in `T`; tests compare float sums against an f64 scan with a bound).
pub fn cpu_scan<T: DeviceElement>(data: &[T], op: ScanOperator, kind: ScanKind) -> Vec<T> {
    let mut acc = op.identity::<T>();
    data.iter()
        .map(|&x| {
            let before = acc;
            acc = op.combine(acc, x);
            match kind {
                ScanKind::Inclusive => acc,
                ScanKind::Exclusive => before,
            }
        })
        .collect()
}
