//! CPU references, written without the operators' `combine` (plain sequential loops, f64 for
//! the softmax) so that they check the kernels rather than repeat them.

use std::cmp::Ordering;

/// `(min, argmin, max, argmax)` of `x`, `None` when empty: the first NaN for both if there is
/// one; otherwise the first occurrence, `-0.0 < +0.0`.
pub fn min_max(x: &[f32]) -> Option<(f32, u64, f32, u64)> {
    if let Some(i) = x.iter().position(|v| v.is_nan()) {
        return Some((x[i], i as u64, x[i], i as u64));
    }
    let (mut lo, mut hi) = (0usize, 0usize);
    for (i, v) in x.iter().enumerate().skip(1) {
        // No NaN here: `total_cmp` is the numeric order with -0.0 < +0.0.
        if v.total_cmp(&x[lo]) == Ordering::Less {
            lo = i;
        }
        if v.total_cmp(&x[hi]) == Ordering::Greater {
            hi = i;
        }
    }
    (!x.is_empty()).then(|| (x[lo], lo as u64, x[hi], hi as u64))
}

/// `(max, sum of exp(x_i - max))` in f64 (the max is exact). NaN in the input: both NaN; no
/// element above `-inf`: `(-inf, 0)`; `+inf` elements: `(+inf, their count)`.
pub fn softmax_stats(x: &[f32]) -> (f64, f64) {
    if x.iter().any(|v| v.is_nan()) {
        return (f64::NAN, f64::NAN);
    }
    let m = x.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v as f64));
    if m == f64::NEG_INFINITY {
        return (m, 0.0);
    }
    if m == f64::INFINITY {
        return (m, x.iter().filter(|&&v| v == f32::INFINITY).count() as f64);
    }
    (m, x.iter().map(|&v| (v as f64 - m).exp()).sum())
}

/// The running max of `|x|`, inclusive or exclusive (0 first); a NaN makes every later output
/// NaN.
pub fn max_abs_scan(x: &[f32], inclusive: bool) -> Vec<f32> {
    let mut run = 0.0f32;
    let mut out = Vec::with_capacity(x.len());
    for &v in x {
        let next = if run.is_nan() || v.is_nan() {
            f32::NAN
        } else {
            run.max(v.abs())
        };
        out.push(if inclusive { next } else { run });
        run = next;
    }
    out
}
