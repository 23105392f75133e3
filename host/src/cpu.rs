//! CPU references and the error bounds GPU results are checked against.

/// Sum in f64 (the reference for f32 sums), and the sum of magnitudes for the error bound.
pub fn sum_f64(data: &[f32]) -> (f64, f64) {
    data.iter().fold((0.0, 0.0), |(s, a), &x| {
        (s + x as f64, a + (x as f64).abs())
    })
}

/// Bound on |gpu - exact| for the f32 sum kernel: rounding errors add up along the longest
/// chain of additions any element goes through (the per-thread loop, the vector, warp and block
/// trees, the partials pass), each at most one f32 epsilon of the running magnitude, so
/// `depth * eps * sum|x|` bounds the error (Higham, 2002, ch. 4).
pub fn f32_sum_bound(n: u64, sum_abs: f64) -> f64 {
    use kernels::launch::*;
    let threads = REDUCE_MAX_GRID as u64 * REDUCE_BLOCK as u64;
    let per_thread_steps = n.div_ceil(threads * REDUCE_ITEMS_PER_STEP as u64);
    // vector tree 2 + accumulators 1 + head/tail 2 + warp 5 + block 3, twice (second pass), plus
    // the partials loop.
    let depth = per_thread_steps + 2 * 13 + REDUCE_MAX_GRID as u64 / REDUCE_BLOCK as u64;
    depth as f64 * f32::EPSILON as f64 * sum_abs
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
    }

    #[test]
    fn bound_catches_a_wrong_sum() {
        // Dropping one element of 1.0 from a sum of 10^4 ones is far outside the bound.
        let n = 10_000u64;
        assert!(1.0 > 10.0 * f32_sum_bound(n, n as f64));
    }
}
