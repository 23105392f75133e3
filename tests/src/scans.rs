//! Prefix-scan checks shared by every scan's tests: [`check_scan`] compares a device scan with
//! independent CPU references, and the bodies of the teaching scans' tests (BIT and BCAO,
//! `gpu_reduce_tools::scan_ladder`) that run on the simulator (`tests/scan_ladder_sim.rs`) and on the
//! GPU (`tests/scan_ladder_gpu.rs`).
//!
//! References: integer sums wrap, so they are compared exactly (in any order the wrapped sum is
//! the same); min and max are exact operations, compared bit for bit; float sums against a
//! compensated f64 scan, within a bound that grows with the rounding depth of the scan.

use gpu_reduce::{Context, Reduction, ScanKind};
use gpu_reduce_tools::cpu::cpu_scan;
use gpu_reduce_tools::scan_ladder::ScanLadderElement;
use gpu_reduce_tools::scan_ladder::ScanLadderExt;
use rand::{SeedableRng, rngs::SmallRng};

use crate::reductions::TestElem;

/// Random data typical of `T` (integers over their full range, so sums wrap; floats in
/// [-1, 1)), never all zero.
pub fn random_data<T: TestElem>(n: usize, seed: u64) -> Vec<T> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut v: Vec<T> = (0..n).map(|_| T::random(&mut rng)).collect();
    if v.iter().all(|x| x.to_f64() == 0.0)
        && let Some(x) = v.first_mut()
    {
        *x = T::ONE;
    }
    v
}

/// Longest chain of roundings a float prefix of a tree-shaped scan over `n` elements goes
/// through: both teaching scans add along at most two root-to-leaf paths of a tree of height
/// `log2(n)` (the BIT: a node's build tree, then the query's walk; BCAO: the up-sweep, then the
/// down-sweep, per recursion level), plus a few combines (inclusive step, add-back per level).
pub fn tree_scan_depth(n: usize) -> u64 {
    let log2 = (usize::BITS - n.leading_zeros()) as u64;
    2 * log2 + 16
}

/// Inclusive prefixes of `data` in f64, compensated (Neumaier): within a few f64 ulps of
/// exact. Also the prefixes of `|x|`, which scale the error bounds.
pub fn f64_prefixes<T: TestElem>(data: &[T]) -> (Vec<f64>, Vec<f64>) {
    gpu_reduce_tools::cpu::compensated_prefixes(data.iter().map(|x| x.to_f64())).unzip()
}

/// `got` (at least `input.len()` elements; only those are checked) against the scan of `input`
/// with `op` and `kind`. Integers and min/max must match [`cpu_scan`] exactly (bits); a float
/// sum's prefix `i` must be within `(depth * eps + 4 * eps_f64) * sum_{j<=i} |x_j|` of the
/// compensated f64 prefix, `depth` being the longest chain of roundings of any prefix (any
/// summation order of `k` terms has depth at most `k - 1`; see [`tree_scan_depth`]).
/// `Err` names the first wrong element.
pub fn check_scan_within<T: TestElem>(
    got: &[T],
    input: &[T],
    op: Reduction,
    kind: ScanKind,
    depth: u64,
) -> Result<(), String> {
    let n = input.len();
    let what = format!("{} {} scan of {n} {}", kind.name(), op.name(), T::DTYPE);
    if got.len() < n {
        return Err(format!("{what}: {} results for {n} inputs", got.len()));
    }
    if T::IS_FLOAT && op == Reduction::Sum {
        let (sums, abs) = f64_prefixes(input);
        for (i, g) in got[..n].iter().enumerate() {
            // Exclusive prefix i is the inclusive prefix i - 1 (the identity, 0, for i = 0).
            let j = match kind {
                ScanKind::Inclusive => Some(i),
                ScanKind::Exclusive => i.checked_sub(1),
            };
            let (want, a) = j.map_or((0.0, 0.0), |j| (sums[j], abs[j]));
            let tol = (depth as f64 * T::EPS + 4.0 * f64::EPSILON) * a;
            if !approx::abs_diff_eq!(g.to_f64(), want, epsilon = tol) {
                return Err(format!(
                    "{what}: element {i} is {g:?}, want {want:e} within {tol:.3e} (depth {depth})"
                ));
            }
        }
    } else {
        let want = cpu_scan(input, op, kind);
        if let Some(i) = (0..n).find(|&i| got[i].bits() != want[i].bits()) {
            return Err(format!(
                "{what}: element {i} is {:?}, want {:?}",
                got[i], want[i]
            ));
        }
    }
    Ok(())
}

/// [`check_scan_within`] with the bound that holds for any summation order (prefix `i` of an
/// inclusive scan has depth at most `i`): for scans whose combining tree is not known.
pub fn check_scan<T: TestElem>(
    got: &[T],
    input: &[T],
    op: Reduction,
    kind: ScanKind,
) -> Result<(), String> {
    check_scan_within(got, input, op, kind, input.len() as u64)
}

/// The two teaching scans.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LadderScan {
    Bit,
    Bcao,
}

impl LadderScan {
    pub const ALL: [LadderScan; 2] = [LadderScan::Bit, LadderScan::Bcao];

    /// Run this scan of `input` into `output`.
    pub fn run<T: ScanLadderElement>(
        self,
        ctx: &Context,
        input: &gpu_reduce::DeviceBuffer<T>,
        output: &mut gpu_reduce::DeviceBuffer<T>,
        op: Reduction,
        kind: ScanKind,
    ) -> gpu_reduce::Result<()> {
        match self {
            LadderScan::Bit => ctx.scan_bit(input, output, op, kind),
            LadderScan::Bcao => ctx.scan_bcao(input, output, op, kind),
        }
    }
}

/// Elements past `n` in the output buffer, which a scan must leave alone.
const GUARD: usize = 3;

/// Run `method` on `data` and check it: the scan against the references, the input unchanged,
/// and the output's elements past `n` untouched.
pub fn check_ladder_scan<T: TestElem + ScanLadderElement>(
    ctx: &Context,
    method: LadderScan,
    data: &[T],
    op: Reduction,
    kind: ScanKind,
) {
    let n = data.len();
    let input = ctx.htod(data).unwrap();
    // A guard value no scan writes by accident: NaN for floats (the data is finite), a fixed
    // random value for integers (a collision has probability 2^-32 or less).
    let guard_val = T::nan().unwrap_or_else(|| T::random(&mut SmallRng::seed_from_u64(0x6a7d)));
    let mut output = ctx.htod(&vec![guard_val; n + GUARD]).unwrap();
    if let Err(e) = method.run(ctx, &input, &mut output, op, kind) {
        panic!(
            "{method:?}: {} {} over {n} {}: {e}",
            kind.name(),
            op.name(),
            T::DTYPE
        );
    }
    let got = ctx.dtoh(&output).unwrap();
    let depth = tree_scan_depth(n);
    if let Err(e) = check_scan_within(&got, data, op, kind, depth) {
        panic!("{method:?}: {e}");
    }
    assert!(
        got[n..].iter().all(|g| g.bits() == guard_val.bits()),
        "{method:?}: {} {} over {n} {} wrote past n",
        kind.name(),
        op.name(),
        T::DTYPE
    );
    let after = ctx.dtoh(&input).unwrap();
    assert!(
        after.iter().zip(data).all(|(a, b)| a.bits() == b.bits()),
        "{method:?}: the input changed"
    );
}

/// Both methods x inclusive/exclusive x sum/min/max on random `T` data of each size.
pub fn check_ladder_matrix<T: TestElem + ScanLadderElement>(
    ctx: &Context,
    sizes: &[usize],
    seed: u64,
) {
    for (i, &n) in sizes.iter().enumerate() {
        let data = random_data::<T>(n, seed.wrapping_add(i as u64));
        for method in LadderScan::ALL {
            for op in Reduction::SCAN {
                for kind in ScanKind::ALL {
                    check_ladder_scan(ctx, method, &data, op, kind);
                }
            }
        }
    }
}

/// [`check_ladder_matrix`] for all six element types.
pub fn check_ladder_all_types(ctx: &Context, sizes: &[usize], seed: u64) {
    check_ladder_matrix::<i32>(ctx, sizes, seed);
    check_ladder_matrix::<u32>(ctx, sizes, seed + 1000);
    check_ladder_matrix::<i64>(ctx, sizes, seed + 2000);
    check_ladder_matrix::<u64>(ctx, sizes, seed + 3000);
    check_ladder_matrix::<f32>(ctx, sizes, seed + 4000);
    check_ladder_matrix::<f64>(ctx, sizes, seed + 5000);
}

/// Both methods, both kinds, every operator, on `n` elements of `T`.
pub fn check_ladder_size<T: TestElem + ScanLadderElement>(ctx: &Context, n: usize, seed: u64) {
    check_ladder_matrix::<T>(ctx, &[n], seed);
}

/// All ones, summed with `kind`: prefix `i` must be exactly `i + 1` (inclusive) or `i`
/// (exclusive), so an element counted twice or lost shows at once. The expected values are
/// computed, not scanned on the CPU, so `n` can be large (`u32`: exact modulo 2^32).
pub fn check_ladder_counts(ctx: &Context, method: LadderScan, n: usize, kind: ScanKind) {
    let input = ctx.htod(&vec![1u32; n]).unwrap();
    let mut output = ctx.alloc_zeros::<u32>(n).unwrap();
    method
        .run(ctx, &input, &mut output, Reduction::Sum, kind)
        .unwrap();
    let got = ctx.dtoh(&output).unwrap();
    let first = u32::from(kind == ScanKind::Inclusive);
    if let Some(i) = (0..n).find(|&i| got[i] != (i as u32).wrapping_add(first)) {
        panic!(
            "{method:?} {} over {n} ones: element {i} is {}",
            kind.name(),
            got[i]
        );
    }
}

/// The same scan on two contexts (the GPU and the simulator) gives the same bits: both run the
/// same kernel source, combining in the same order. Float sums included.
pub fn check_ladder_backends_agree<T: TestElem + ScanLadderElement>(
    a: &Context,
    b: &Context,
    n: usize,
    seed: u64,
) {
    let data = random_data::<T>(n, seed);
    let (ia, ib) = (a.htod(&data).unwrap(), b.htod(&data).unwrap());
    let (mut oa, mut ob) = (
        a.alloc_zeros::<T>(n).unwrap(),
        b.alloc_zeros::<T>(n).unwrap(),
    );
    for method in LadderScan::ALL {
        for op in Reduction::SCAN {
            for kind in ScanKind::ALL {
                method.run(a, &ia, &mut oa, op, kind).unwrap();
                method.run(b, &ib, &mut ob, op, kind).unwrap();
                let (ga, gb) = (a.dtoh(&oa).unwrap(), b.dtoh(&ob).unwrap());
                let what = format!(
                    "{method:?} {} {} over {n} {}",
                    kind.name(),
                    op.name(),
                    T::DTYPE
                );
                if let Err(e) = check_scan_within(&ga, &data, op, kind, tree_scan_depth(n)) {
                    panic!("{what}: {e}");
                }
                if let Some(i) = (0..n).find(|&i| ga[i].bits() != gb[i].bits()) {
                    panic!("{what}: element {i} differs: {:?} vs {:?}", ga[i], gb[i]);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_catch_wrong_scans() {
        let data = random_data::<f32>(1000, 1);
        let inc = cpu_scan(&data, Reduction::Sum, ScanKind::Inclusive);
        let (s, k) = (Reduction::Sum, ScanKind::Inclusive);
        assert!(check_scan(&inc, &data, s, k).is_ok());
        // A lost element.
        let mut bad = inc.clone();
        bad[700] -= data[700];
        assert!(check_scan_within(&bad, &data, s, k, tree_scan_depth(1000)).is_err());
        // Exclusive vs inclusive.
        assert!(check_scan(&inc, &data, s, ScanKind::Exclusive).is_err());
        // Integers: exact and wrapping.
        let ints = random_data::<i64>(100, 2);
        let mut exc = cpu_scan(&ints, Reduction::Max, ScanKind::Exclusive);
        assert_eq!(exc[0], i64::MIN);
        assert!(check_scan(&exc, &ints, Reduction::Max, ScanKind::Exclusive).is_ok());
        exc[99] = exc[99].wrapping_add(1);
        let e = check_scan(&exc, &ints, Reduction::Max, ScanKind::Exclusive).unwrap_err();
        assert!(e.contains("element 99"), "{e}");
        assert!(check_scan(&exc[..5], &ints, Reduction::Max, ScanKind::Exclusive).is_err());
        // Never all zero.
        assert!(random_data::<u32>(1, 0).iter().any(|&x| x != 0));
    }
}
