//! Summary statistics of repeated timings.

/// Median, min and max of a set of timings (milliseconds).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub count: usize,
}

/// Summarise `times`; `None` when empty.
pub fn summarize(times: &[f64]) -> Option<Summary> {
    if times.is_empty() {
        return None;
    }
    let mut v = times.to_vec();
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    let median = if v.len() % 2 == 1 {
        v[mid]
    } else {
        0.5 * (v[mid - 1] + v[mid])
    };
    Some(Summary {
        median,
        min: v[0],
        max: v[v.len() - 1],
        count: v.len(),
    })
}

/// Effective bandwidth in GB/s (10^9 bytes per second) of moving `bytes` in `ms` milliseconds.
pub fn gb_per_s(bytes: u64, ms: f64) -> f64 {
    bytes as f64 / (ms * 1e-3) / 1e9
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even() {
        assert_eq!(summarize(&[3.0, 1.0, 2.0]).unwrap().median, 2.0);
        let s = summarize(&[4.0, 1.0, 3.0, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max, s.count), (2.5, 1.0, 4.0, 4));
        assert!(summarize(&[]).is_none());
    }

    #[test]
    fn bandwidth() {
        assert!((gb_per_s(4_000_000_000, 1000.0) - 4.0).abs() < 1e-12);
    }
}
