//! CPU references and the error bounds GPU results are checked against.

use gpu_reduce::{DeviceElement, Reduction, ScanKind};

/// Sum in f64 (the reference for f32 sums), and the sum of magnitudes for the error bound.
pub fn sum_f64(data: &[f32]) -> (f64, f64) {
    data.iter().fold((0.0, 0.0), |(s, a), &x| {
        (s + x as f64, a + (x as f64).abs())
    })
}

/// Neumaier's compensated f64 sum of `xs` and the sum of their magnitudes. Its error is at
/// most `2 eps |s| + O(n eps^2) sum|x|` (Higham, 2002, §4.3): exact to within about an f64
/// rounding of the result for f32 inputs in [-1, 1) up to billions of them.
pub fn sum_compensated(xs: impl IntoIterator<Item = f64>) -> (f64, f64) {
    compensated_prefixes(xs).last().unwrap_or((0.0, 0.0))
}

/// [`sum_compensated`] after every element: the compensated inclusive prefixes and the
/// prefixes of the magnitudes (which scale a scan's error bounds).
pub fn compensated_prefixes(xs: impl IntoIterator<Item = f64>) -> impl Iterator<Item = (f64, f64)> {
    let (mut s, mut c, mut a) = (0.0f64, 0.0f64, 0.0f64);
    xs.into_iter().map(move |x| {
        let t = s + x;
        c += if s.abs() >= x.abs() {
            (s - t) + x
        } else {
            (x - t) + s
        };
        s = t;
        a += x.abs();
        (s + c, a)
    })
}

/// Height of the reduction's summation tree for `n` elements of `elem_bytes`: the longest chain
/// of additions any element goes through (the per-thread loop, the vector fold, the two
/// accumulators and the head/tail, the warp butterfly and block tree, the partials loop, and
/// the last block's trees).
pub fn reduce_depth(n: u64, elem_bytes: u64) -> u64 {
    use kernels::reduce::policy::POLICY;
    let partials_loop = POLICY.max_tiles as u64 / POLICY.block as u64;
    POLICY.per_thread_steps(n, elem_bytes) + 2 + 2 + (5 + 5) + partials_loop + (5 + 5)
}

/// Bound on |computed - exact| for a float sum: each addition rounds with relative error at
/// most `eps`, so `depth * eps * sum|x|` bounds the error (Higham, 2002, ch. 4).
pub fn sum_bound(n: u64, elem_bytes: u64, eps: f64, sum_abs: f64) -> f64 {
    reduce_depth(n, elem_bytes) as f64 * eps * sum_abs
}

/// [`sum_bound`] for the f32 sum.
pub fn f32_sum_bound(n: u64, sum_abs: f64) -> f64 {
    sum_bound(n, 4, f32::EPSILON as f64, sum_abs)
}

/// Bound for the accurate f32 sum (f64 accumulation, one final rounding to f32):
/// `u32*|exact| + depth*u64*sum|x|`, with a little slack for the final rounding's interplay.
pub fn compensated_f32_bound(n: u64, exact: f64, sum_abs: f64) -> f64 {
    let u32_ = f32::EPSILON as f64 / 2.0;
    let u64_ = f64::EPSILON / 2.0;
    let d = reduce_depth(n, 4) as f64;
    1.01 * (u32_ * exact.abs() + d * u64_ * sum_abs) + f32::MIN_POSITIVE as f64
}

/// `op`'s identity for `T`; panics for an operator `T` lacks.
pub fn identity<T: DeviceElement>(op: Reduction) -> T {
    op.identity::<T>()
        .unwrap_or_else(|| panic!("no {} on {}", op.name(), T::DTYPE))
}

/// `a ⊕ b` with `op`; panics for an operator `T` lacks.
pub fn combine<T: DeviceElement>(op: Reduction, a: T, b: T) -> T {
    op.combine(a, b)
        .unwrap_or_else(|| panic!("no {} on {}", op.name(), T::DTYPE))
}

/// The CPU scan the device scans are checked against: sequential, same operator semantics
/// (floats are summed in `T`; tests compare float sums against an f64 scan with a bound).
/// Panics for an operator `T` lacks (see [`Reduction::identity`]).
pub fn cpu_scan<T: DeviceElement>(data: &[T], op: Reduction, kind: ScanKind) -> Vec<T> {
    let mut acc = identity::<T>(op);
    data.iter()
        .map(|&x| {
            let before = acc;
            acc = combine(op, acc, x);
            match kind {
                ScanKind::Inclusive => acc,
                ScanKind::Exclusive => before,
            }
        })
        .collect()
}

/// The CPU scan by key the device is checked against.
pub fn cpu_scan_by_key<K: PartialEq + Copy, T: DeviceElement>(
    keys: &[K],
    values: &[T],
    op: Reduction,
    kind: ScanKind,
) -> Vec<T> {
    let mut out = Vec::with_capacity(values.len());
    let mut acc = identity::<T>(op);
    for (i, &v) in values.iter().enumerate() {
        if i == 0 || keys[i] != keys[i - 1] {
            acc = identity::<T>(op);
        }
        let before = acc;
        acc = combine(op, acc, v);
        out.push(match kind {
            ScanKind::Inclusive => acc,
            ScanKind::Exclusive => before,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_and_bound() {
        let (s, a) = sum_f64(&[1.0, -2.0, 3.5]);
        assert_eq!(s, 2.5);
        assert_eq!(a, 6.5);
        // The bound grows with n and with the magnitudes, and is small against sum|x|.
        assert!(f32_sum_bound(1 << 30, 1.0) > f32_sum_bound(1 << 10, 1.0));
        assert!(f32_sum_bound(1 << 26, 1.0) < 1e-4);
        assert_eq!(f32_sum_bound(100, 0.0), 0.0);
        // The compensated bound is far tighter for large n.
        assert!(compensated_f32_bound(1 << 26, 0.0, 1.0) < f32_sum_bound(1 << 26, 1.0) / 1000.0);
    }

    #[test]
    fn the_compensated_sum_keeps_what_plain_f64_loses() {
        let xs = [1e16, 1.0, -1e16, 0.5];
        assert_eq!(xs.iter().sum::<f64>(), 0.5);
        assert_eq!(sum_compensated(xs).0, 1.5);
    }

    #[test]
    fn bound_catches_a_wrong_sum() {
        // Dropping one element of 1.0 from a sum of 10^4 ones is far outside the bound.
        let n = 10_000u64;
        assert!(1.0 > 10.0 * f32_sum_bound(n, n as f64));
    }
}
