//! Top-k against a CPU reference, bit for bit: every type, largest and smallest, sorted and
//! not, k from 1 to n, and the adversarial inputs (all equal, sorted, reversed, all NaN).

use std::cmp::Ordering;

use gpu_reduce::{Context, DeviceView, Error, TopK, TopkElement};

use crate::reductions::TestElem;
use crate::select::data;

/// The documented order: NaN above every number (every NaN equal), `-0.0` below `+0.0`;
/// integers as themselves.
fn order<T: TestElem>(a: T, b: T) -> Ordering {
    if T::IS_FLOAT {
        let f = |x: T| {
            let v = x.to_f64();
            if v.is_nan() { f64::NAN.abs() } else { v }
        };
        f(a).total_cmp(&f(b))
    } else {
        int(a).cmp(&int(b))
    }
}

/// An integer element's value (through its bits and signedness).
fn int<T: TestElem>(x: T) -> i128 {
    let b = x.bits();
    match (T::DTYPE.starts_with('i'), size_of::<T>()) {
        (true, 4) => b as u32 as i32 as i128,
        (true, _) => b as i64 as i128,
        _ => b as i128,
    }
}

/// The CPU's top-k of `x`: (value bits, index), as [`Context::topk`] documents its order.
pub fn topk_ref<T: TestElem>(x: &[T], k: usize, how: TopK) -> Vec<(u64, u64)> {
    topk_ref_by(x.len(), k, how, |i, j| order(x[i], x[j]), |i| x[i].bits())
}

/// The top-k of `n` elements compared by `cmp(i, j)` (values of elements i and j), with bits
/// `bits(i)`.
pub fn topk_ref_by(
    n: usize,
    k: usize,
    how: TopK,
    cmp: impl Fn(usize, usize) -> Ordering,
    bits: impl Fn(usize) -> u64,
) -> Vec<(u64, u64)> {
    // Best first: by value (down for the largest), then by index.
    let better = |i: usize, j: usize| {
        let o = cmp(i, j);
        let o = if how.largest { o.reverse() } else { o };
        o.then(i.cmp(&j))
    };
    let mut idx: Vec<usize> = (0..n).collect();
    idx.sort_by(|&i, &j| better(i, j));
    let mut top: Vec<usize> = idx[..k].to_vec();
    if !how.sorted && k > 0 {
        // Beyond the k-th in index order, then the k-th's ties in index order.
        let kth = top[k - 1];
        top.sort_by_key(|&i| (cmp(i, kth) == Ordering::Equal, i));
    }
    top.into_iter().map(|i| (bits(i), i as u64)).collect()
}

/// Values and indices read back as (value bits, index) pairs.
fn read_pairs<T: TestElem>(
    ctx: &Context,
    v: &gpu_reduce::DeviceBuffer<T>,
    i: &gpu_reduce::DeviceBuffer<u64>,
) -> Vec<(u64, u64)> {
    ctx.dtoh(v)
        .unwrap()
        .into_iter()
        .map(|v| v.bits())
        .zip(ctx.dtoh(i).unwrap())
        .collect()
}

/// `topk` of `x` (k of them, `how`) read back as (value bits, index) pairs.
pub fn run_topk<'a, T: TestElem + TopkElement>(
    ctx: &Context,
    x: impl Into<DeviceView<'a, T>>,
    k: usize,
    how: TopK,
) -> Vec<(u64, u64)> {
    let (mut v, mut i) = (
        ctx.alloc_zeros::<T>(k).unwrap(),
        ctx.alloc_zeros::<u64>(k).unwrap(),
    );
    ctx.topk(x, &mut v, &mut i, how).unwrap();
    read_pairs(ctx, &v, &i)
}

fn check_one<T: TestElem + TopkElement>(ctx: &Context, x: &[T], k: usize, how: TopK, what: &str) {
    let got = run_topk(ctx, &ctx.htod(x).unwrap(), k, how);
    let want = topk_ref(x, k, how);
    if got != want {
        let at = got.iter().zip(&want).position(|(a, b)| a != b);
        panic!(
            "topk of {} {} ({what}), k = {k}, {how:?}: first difference at {at:?}: {:?} vs {:?}",
            x.len(),
            T::DTYPE,
            at.map(|a| got[a]),
            at.map(|a| want[a]),
        );
    }
}

/// Every `k` of `ks` (clamped to n) both ways, sorted (k <= 2048) and not.
fn check_ks<T: TestElem + TopkElement>(ctx: &Context, x: &[T], ks: &[usize], what: &str) {
    for &k in ks {
        let k = k.min(x.len());
        for how in [TopK::LARGEST, TopK::SMALLEST] {
            check_one(ctx, x, k, how, what);
            if k <= 2048 {
                check_one(ctx, x, k, how.sorted(), what);
            }
        }
    }
}

/// Every type at `sizes`: random data (NaN, infinities, zeros, runs of equal values), then all
/// equal, ascending, descending and (floats) all NaN; k = 1, 2, 50, 1000, n / 3, n.
pub fn check_topk(ctx: &Context, sizes: &[usize]) {
    fn each<T: TestElem + TopkElement + PartialOrd>(ctx: &Context, sizes: &[usize]) {
        for (s, &n) in sizes.iter().enumerate() {
            let ks = [1, 2, 50, 1000, n / 3, n];
            let x = data::<T>(n, 0x70b + s as u64);
            check_ks(ctx, &x, &ks, "random");
            if s % 2 == 1 {
                let mut sorted: Vec<T> = x
                    .iter()
                    .copied()
                    .filter(|v| v.partial_cmp(v).is_some())
                    .collect();
                sorted.sort_by(|a, b| a.partial_cmp(b).unwrap());
                check_ks(ctx, &vec![x[0]; n], &[1, 50, n], "all equal");
                // A view one element in: the unaligned (element by element) loads.
                let mut padded = vec![x[0]];
                padded.extend_from_slice(&x);
                let buf = ctx.htod(&padded).unwrap();
                let k = 50.min(n);
                let got = run_topk(ctx, buf.view(1..).unwrap(), k, TopK::LARGEST);
                assert!(
                    got == topk_ref(&x, k, TopK::LARGEST),
                    "topk of {n} {} from an unaligned view",
                    T::DTYPE
                );
                check_ks(ctx, &sorted, &[1, 50, n / 2], "ascending");
                sorted.reverse();
                check_ks(ctx, &sorted, &[1, 50, n / 2], "descending");
                if let Some(nan) = T::nan() {
                    check_ks(ctx, &vec![nan; n], &[1, n], "all NaN");
                }
            }
        }
    }
    each::<i32>(ctx, sizes);
    each::<u32>(ctx, sizes);
    each::<i64>(ctx, sizes);
    each::<u64>(ctx, sizes);
    each::<f32>(ctx, sizes);
    each::<f64>(ctx, sizes);
    for &n in sizes {
        check_topk_half(ctx, n);
    }
}

/// The candidate buffer after several passes (more elements than it holds, one top byte):
/// `n` f32 in [0.5, 1) with a few larger, equal and NaN values, and ties across the k-th
/// (enough that the list is too long and the result is written by chunks instead).
pub fn check_topk_candidates(ctx: &Context, n: usize) {
    use rand::{Rng, SeedableRng, rngs::SmallRng};
    let mut rng = SmallRng::seed_from_u64(0xca4d);
    let mut x: Vec<f32> = (0..n).map(|_| rng.random_range(0.5f32..1.0)).collect();
    for (j, v) in [2.0, 2.0, f32::NAN, 0.75, 0.75, -0.0, 0.0]
        .into_iter()
        .enumerate()
    {
        x[(j * 7919) % n] = v;
    }
    check_ks(ctx, &x, &[1, 7, 50, 1000, 2048, 2049, 5000], "one top byte");
    // 3000 copies of the 100th largest: ties beyond what the list holds.
    let mut y = x.clone();
    let mut top = x.clone();
    top.sort_by(|a, b| b.total_cmp(a));
    for j in 0..3000 {
        y[(j * 61) % n] = top[100];
    }
    check_ks(ctx, &y, &[100, 1000, 2048], "ties beyond the list");
    // The filter's misses (its sample: elements j n / 8192): every sampled element among the
    // largest (fewer than k at or above its threshold), and all equal (more than the buffer
    // holds); the digit passes then read the input.
    let mut z = x.clone();
    for j in 0..8192 {
        z[j * n / 8192] = 2.0 + j as f32 / 8192.0;
    }
    check_ks(ctx, &z, &[7, 1000, 2048], "a misleading sample");
    check_ks(ctx, &vec![0.5f32; n], &[1, 2048], "all equal");
}

/// A lean whole-array workload for the sanitizers (racecheck slows every launch a
/// thousandfold): the sampled filter and its two misses, the passes that write the buffer, the
/// chunked writing (k above the sort), 8- and 2-byte keys; a dozen calls.
pub fn check_topk_lean(ctx: &Context) {
    let x = data::<f32>(20_011, 0x1ea0);
    check_one(ctx, &x, 50, TopK::LARGEST.sorted(), "lean");
    check_one(ctx, &x, 50, TopK::SMALLEST, "lean");
    check_one(ctx, &x, 3000, TopK::LARGEST, "lean");
    let n = 100_000;
    let mut z: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 / 1000.0).collect();
    for j in 0..8192 {
        z[j * n / 8192] = 2.0 + j as f32 / 8192.0;
    }
    check_one(ctx, &z, 1000, TopK::LARGEST.sorted(), "a misleading sample");
    check_one(ctx, &vec![0.5f32; n], 7, TopK::LARGEST, "all equal");
    check_one(
        ctx,
        &data::<f64>(3000, 0x1ea1),
        50,
        TopK::LARGEST.sorted(),
        "lean",
    );
    let h = half::f16::data(3000, 0x1ea2);
    let (mut v, mut i) = (
        ctx.alloc_zeros::<half::f16>(50).unwrap(),
        ctx.alloc_zeros::<u64>(50).unwrap(),
    );
    let how = TopK::SMALLEST.sorted();
    ctx.topk(&ctx.htod(&h).unwrap(), &mut v, &mut i, how)
        .unwrap();
    assert!(
        half_pairs(ctx, &v, &i) == half_ref(&h, 50, how),
        "topk of 3000 f16"
    );
}

/// f16 and bf16 (NaN, infinities, many ties) against the reference on their f64 values.
pub fn check_topk_half(ctx: &Context, n: usize) {
    fn each<H: Half>(ctx: &Context, n: usize) {
        let x = H::data(n, 0x16 + n as u64);
        let dx = ctx.htod(&x).unwrap();
        for k in [1, 50, n / 3, n] {
            let k = k.min(n);
            for how in [
                TopK::LARGEST,
                TopK::SMALLEST.sorted(),
                TopK::LARGEST.sorted(),
                TopK::SMALLEST,
            ] {
                if how.sorted && k > 2048 {
                    continue;
                }
                let (mut v, mut i) = (
                    ctx.alloc_zeros::<H>(k).unwrap(),
                    ctx.alloc_zeros::<u64>(k).unwrap(),
                );
                ctx.topk(&dx, &mut v, &mut i, how).unwrap();
                assert!(
                    half_pairs(ctx, &v, &i) == half_ref(&x, k, how),
                    "topk of {n} {}, k = {k}, {how:?}",
                    H::DTYPE
                );
            }
        }
    }
    each::<half::f16>(ctx, n);
    each::<half::bf16>(ctx, n);
}

/// f16 and bf16 for the checks: compared on their f64 values (NaN above every number).
trait Half: TopkElement + Copy {
    fn from_f32(v: f32) -> Self;
    fn to_f64(self) -> f64;
    fn bits(self) -> u64;
    /// `n` values of the f32 test data, rounded.
    fn data(n: usize, seed: u64) -> Vec<Self> {
        data::<f32>(n, seed)
            .into_iter()
            .map(Self::from_f32)
            .collect()
    }
    /// The value as the order has it.
    fn ordered(self) -> f64 {
        let v = self.to_f64();
        if v.is_nan() { f64::NAN.abs() } else { v }
    }
}

macro_rules! half_impl {
    ($($h:ty),*) => {$(
        impl Half for $h {
            fn from_f32(v: f32) -> Self {
                <$h>::from_f32(v)
            }
            fn to_f64(self) -> f64 {
                <$h>::to_f64(self)
            }
            fn bits(self) -> u64 {
                self.to_bits() as u64
            }
        }
    )*};
}
half_impl!(half::f16, half::bf16);

/// The CPU's top-k of half-precision `x`.
fn half_ref<H: Half>(x: &[H], k: usize, how: TopK) -> Vec<(u64, u64)> {
    topk_ref_by(
        x.len(),
        k,
        how,
        |a, b| x[a].ordered().total_cmp(&x[b].ordered()),
        |a| x[a].bits(),
    )
}

/// Half-precision values and indices read back as (bits, index) pairs.
fn half_pairs<H: Half>(
    ctx: &Context,
    v: &gpu_reduce::DeviceBuffer<H>,
    i: &gpu_reduce::DeviceBuffer<u64>,
) -> Vec<(u64, u64)> {
    ctx.dtoh(v)
        .unwrap()
        .into_iter()
        .map(H::bits)
        .zip(ctx.dtoh(i).unwrap())
        .collect()
}

/// Bad calls: typed errors.
pub fn check_topk_errors(ctx: &Context) {
    let x = ctx.htod(&[1.0f32, 2.0, 3.0]).unwrap();
    let (mut v4, mut i4) = (
        ctx.alloc_zeros::<f32>(4).unwrap(),
        ctx.alloc_zeros::<u64>(4).unwrap(),
    );
    let e = ctx.topk(&x, &mut v4, &mut i4, TopK::LARGEST).unwrap_err();
    assert!(
        matches!(
            e,
            Error::LengthMismatch {
                expected: 3,
                got: 4,
                ..
            }
        ),
        "{e}"
    );
    let (mut v2, mut i1) = (
        ctx.alloc_zeros::<f32>(2).unwrap(),
        ctx.alloc_zeros::<u64>(1).unwrap(),
    );
    let e = ctx.topk(&x, &mut v2, &mut i1, TopK::LARGEST).unwrap_err();
    assert!(
        matches!(
            e,
            Error::LengthMismatch {
                expected: 2,
                got: 1,
                ..
            }
        ),
        "{e}"
    );
    let big = ctx.alloc_zeros::<f32>(3000).unwrap();
    let (mut v, mut i) = (
        ctx.alloc_zeros::<f32>(2049).unwrap(),
        ctx.alloc_zeros::<u64>(2049).unwrap(),
    );
    let e = ctx
        .topk(&big, &mut v, &mut i, TopK::LARGEST.sorted())
        .unwrap_err();
    assert!(matches!(e, Error::Unsupported { .. }), "{e}");
    // k = 0: nothing to do.
    let (mut v0, mut i0) = (
        ctx.alloc_zeros::<f32>(0).unwrap(),
        ctx.alloc_zeros::<u64>(0).unwrap(),
    );
    ctx.topk(&x, &mut v0, &mut i0, TopK::LARGEST).unwrap();
}

/// `topk_rows` of the `rows x cols` matrix `x` (k a row, `how`) read back as (value bits,
/// index within the row) pairs, row after row.
pub fn run_topk_rows<T: TestElem + TopkElement>(
    ctx: &Context,
    x: &[T],
    cols: usize,
    k: usize,
    how: TopK,
) -> Vec<(u64, u64)> {
    let rows = x.len().checked_div(cols).unwrap_or(0);
    let (mut v, mut i) = (
        ctx.alloc_zeros::<T>(rows * k).unwrap(),
        ctx.alloc_zeros::<u64>(rows * k).unwrap(),
    );
    ctx.topk_rows(&ctx.htod(x).unwrap(), cols as u64, &mut v, &mut i, how)
        .unwrap();
    read_pairs(ctx, &v, &i)
}

fn check_rows_one<T: TestElem + TopkElement>(
    ctx: &Context,
    x: &[T],
    cols: usize,
    k: usize,
    how: TopK,
    what: &str,
) {
    let got = run_topk_rows(ctx, x, cols, k, how);
    let want: Vec<(u64, u64)> = x.chunks(cols).flat_map(|r| topk_ref(r, k, how)).collect();
    if got != want {
        let at = got.iter().zip(&want).position(|(a, b)| a != b);
        panic!(
            "topk_rows of {} x {cols} {} ({what}), k = {k}, {how:?}: first difference at {at:?} \
             (row {:?}): {:?} vs {:?}",
            x.len() / cols,
            T::DTYPE,
            at.map(|a| a / k.max(1)),
            at.map(|a| got[a]),
            at.map(|a| want[a]),
        );
    }
}

/// Every type, `(rows, cols)` of `shapes`: random rows (NaN, infinities, runs of ties), then rows
/// all equal and (floats) all NaN; k = 1, 50, cols / 3 and cols, both ways, sorted (k <= 2048)
/// and not.
pub fn check_topk_rows(ctx: &Context, shapes: &[(usize, usize)]) {
    fn each<T: TestElem + TopkElement>(ctx: &Context, shapes: &[(usize, usize)]) {
        for (s, &(rows, cols)) in shapes.iter().enumerate() {
            let x = data::<T>(rows * cols, 0x7a0 + s as u64);
            for k in [1, 50, cols / 3, cols] {
                let k = k.min(cols);
                for how in [TopK::LARGEST, TopK::SMALLEST] {
                    check_rows_one(ctx, &x, cols, k, how, "random");
                    if k <= 2048 {
                        check_rows_one(ctx, &x, cols, k, how.sorted(), "random");
                    }
                }
            }
            let k = 50.min(cols);
            check_rows_one(
                ctx,
                &vec![x[0]; x.len()],
                cols,
                k,
                TopK::LARGEST.sorted(),
                "all equal",
            );
            check_rows_one(
                ctx,
                &vec![x[0]; x.len()],
                cols,
                k,
                TopK::SMALLEST,
                "all equal",
            );
            if let Some(nan) = T::nan() {
                check_rows_one(ctx, &vec![nan; x.len()], cols, k, TopK::LARGEST, "all NaN");
            }
        }
    }
    each::<i32>(ctx, shapes);
    each::<u32>(ctx, shapes);
    each::<i64>(ctx, shapes);
    each::<u64>(ctx, shapes);
    each::<f32>(ctx, shapes);
    each::<f64>(ctx, shapes);
    // Half precision: one shape.
    fn half<H: Half>(ctx: &Context, (rows, cols): (usize, usize)) {
        let x = H::data(rows * cols, 0x7a16);
        for (k, how) in [
            (1, TopK::LARGEST),
            (50.min(cols), TopK::SMALLEST.sorted()),
            (cols / 3, TopK::LARGEST),
        ] {
            let (mut v, mut i) = (
                ctx.alloc_zeros::<H>(rows * k).unwrap(),
                ctx.alloc_zeros::<u64>(rows * k).unwrap(),
            );
            ctx.topk_rows(&ctx.htod(&x).unwrap(), cols as u64, &mut v, &mut i, how)
                .unwrap();
            let want: Vec<(u64, u64)> = x.chunks(cols).flat_map(|r| half_ref(r, k, how)).collect();
            assert!(
                half_pairs(ctx, &v, &i) == want,
                "topk_rows of {rows} x {cols} {}, k = {k}, {how:?}",
                H::DTYPE
            );
        }
    }
    half::<half::f16>(ctx, shapes[shapes.len() / 2]);
    half::<half::bf16>(ctx, shapes[shapes.len() / 2]);
}

/// A lean `topk_rows` check for the sanitizers (racecheck slows every launch a thousandfold):
/// each width once or twice (f32, u64, f16), rows listed from the first pass (37 and 1000
/// columns), listed after the second (5003 columns, k = 50) and never listed (k = cols / 3).
pub fn check_topk_rows_lean(ctx: &Context) {
    for (rows, cols) in [(3, 37), (2, 1000), (2, 5003)] {
        let x = data::<f32>(rows * cols, 0x1ea7 + cols as u64);
        for (k, how) in [
            (1, TopK::LARGEST),
            (50.min(cols), TopK::SMALLEST.sorted()),
            (cols / 3, TopK::LARGEST),
        ] {
            check_rows_one(ctx, &x, cols, k, how, "lean");
        }
        let y = data::<u64>(rows * cols, 0x1ea8 + cols as u64);
        check_rows_one(ctx, &y, cols, 50.min(cols), TopK::LARGEST.sorted(), "lean");
    }
    fn half<H: Half>(ctx: &Context) {
        let x = H::data(2 * 1000, 0x1ea9);
        let (mut v, mut i) = (
            ctx.alloc_zeros::<H>(2 * 50).unwrap(),
            ctx.alloc_zeros::<u64>(2 * 50).unwrap(),
        );
        let how = TopK::LARGEST.sorted();
        ctx.topk_rows(&ctx.htod(&x).unwrap(), 1000, &mut v, &mut i, how)
            .unwrap();
        let want: Vec<(u64, u64)> = x.chunks(1000).flat_map(|r| half_ref(r, 50, how)).collect();
        assert!(
            half_pairs(ctx, &v, &i) == want,
            "topk_rows of 2 x 1000 {}",
            H::DTYPE
        );
    }
    half::<half::f16>(ctx);
}

/// Bad `topk_rows` calls: typed errors.
pub fn check_topk_rows_errors(ctx: &Context) {
    let x = ctx.htod(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
    let (mut v, mut i) = (
        ctx.alloc_zeros::<f32>(4).unwrap(),
        ctx.alloc_zeros::<u64>(4).unwrap(),
    );
    // Not whole rows, no columns, k above the columns, a partial k, indices too short.
    for (cols, v_len, i_len) in [(4u64, 4, 4), (0, 4, 4), (3, 8, 8), (3, 3, 3), (3, 4, 2)] {
        let (v, i) = (
            v.view_mut(..v_len.min(4)).unwrap(),
            i.view_mut(..i_len.min(4)).unwrap(),
        );
        let e = if v_len > 4 {
            let (mut v8, mut i8) = (
                ctx.alloc_zeros::<f32>(v_len).unwrap(),
                ctx.alloc_zeros::<u64>(i_len).unwrap(),
            );
            ctx.topk_rows(&x, cols, &mut v8, &mut i8, TopK::LARGEST)
                .unwrap_err()
        } else {
            ctx.topk_rows(&x, cols, v, i, TopK::LARGEST).unwrap_err()
        };
        assert!(
            matches!(e, Error::LengthMismatch { .. }),
            "cols {cols}: {e}"
        );
    }
    let big = ctx.alloc_zeros::<f32>(2 * 3000).unwrap();
    let (mut v, mut i) = (
        ctx.alloc_zeros::<f32>(2 * 2049).unwrap(),
        ctx.alloc_zeros::<u64>(2 * 2049).unwrap(),
    );
    let e = ctx
        .topk_rows(&big, 3000, &mut v, &mut i, TopK::LARGEST.sorted())
        .unwrap_err();
    assert!(matches!(e, Error::Unsupported { .. }), "{e}");
    // k = 0 and an empty matrix: nothing to do.
    let (mut v0, mut i0) = (
        ctx.alloc_zeros::<f32>(0).unwrap(),
        ctx.alloc_zeros::<u64>(0).unwrap(),
    );
    ctx.topk_rows(&x, 3, &mut v0, &mut i0, TopK::LARGEST)
        .unwrap();
    let empty = ctx.alloc_zeros::<f32>(0).unwrap();
    ctx.topk_rows(&empty, 5, &mut v0, &mut i0, TopK::LARGEST)
        .unwrap();
    // An empty matrix with outputs: no rows to take k from.
    let (mut v2, mut i2) = (
        ctx.alloc_zeros::<f32>(2).unwrap(),
        ctx.alloc_zeros::<u64>(2).unwrap(),
    );
    let e = ctx
        .topk_rows(&empty, 4, &mut v2, &mut i2, TopK::LARGEST)
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::LengthMismatch {
                expected: 0,
                got: 2,
                ..
            }
        ),
        "{e}"
    );
}
