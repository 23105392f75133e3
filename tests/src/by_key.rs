//! Test bodies of the reduce by key, shared by the simulator tests and their GPU twins.

use gpu_reduce::{Context, Error, ReduceByKeyElement, Reduction};
use kernels::scan::policy::ACTIVE;

use crate::lookback::run_keys;
use crate::reductions::{TestElem, data};

/// The CPU reference: (unique keys, aggregates) of the maximal runs of equal keys.
pub fn cpu_reduce_by_key<K: Copy + PartialEq, T: TestElem>(
    keys: &[K],
    vals: &[T],
    op: Reduction,
) -> (Vec<K>, Vec<T>) {
    let (mut uk, mut agg) = (Vec::new(), Vec::new());
    for (i, (&k, &v)) in keys.iter().zip(vals).enumerate() {
        if i == 0 || keys[i - 1] != k {
            uk.push(k);
            // As the device writes floats (and as `Reduction::combine` returns them).
            agg.push(kernels::gpu::ShflValue::canonical(v));
        } else {
            let last = agg.len() - 1;
            agg[last] = op.combine(agg[last], v).expect("a by-key operator");
        }
    }
    (uk, agg)
}

/// Run lengths of `keys` (for per-run float bounds).
fn run_lengths<K: PartialEq>(keys: &[K]) -> Vec<usize> {
    let mut lens = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        if i == 0 || keys[i - 1] != *k {
            lens.push(1);
        } else if let Some(l) = lens.last_mut() {
            *l += 1;
        }
    }
    lens
}

/// Every operator, u32 and u64 keys, runs from single elements to several tiles long, at the
/// given sizes: keys exactly, integer and float min/max aggregates bit for bit, float sums
/// within a bound against an f64 sum of the run (`len * eps * sum |x|`, the worst case of any
/// summation order).
pub fn check_reduce_by_key(ctx: &Context, sizes: &[usize]) {
    fn each<K, T>(ctx: &Context, sizes: &[usize])
    where
        K: gpu_reduce::SelectElement + From<u32> + PartialEq,
        T: TestElem + ReduceByKeyElement<K>,
    {
        for (s, &n) in sizes.iter().enumerate() {
            for max_run in [1usize, 3, 300, 20_000] {
                let keys: Vec<K> = run_keys(n, max_run, s as u64 * 17 + max_run as u64);
                let vals: Vec<T> = data(n, 91 + s as u64, false);
                let (dk, dv) = (ctx.htod(&keys).unwrap(), ctx.htod(&vals).unwrap());
                let mut uk = ctx.alloc_zeros::<K>(n.max(1)).unwrap();
                let mut agg = ctx.alloc_zeros::<T>(n.max(1)).unwrap();
                for op in Reduction::SCAN {
                    let what = format!(
                        "reduce by key {} {} n={n} runs<={max_run}",
                        T::DTYPE,
                        op.name()
                    );
                    let runs = ctx.reduce_by_key(&dk, &dv, &mut uk, &mut agg, op).unwrap() as usize;
                    let (want_k, want_a) = cpu_reduce_by_key(&keys, &vals, op);
                    assert_eq!(runs, want_k.len(), "{what}: run count");
                    let got_k = ctx.dtoh(&uk).unwrap();
                    let got_a = ctx.dtoh(&agg).unwrap();
                    assert!(got_k[..runs] == want_k[..], "{what}: unique keys");
                    if T::IS_FLOAT && op == Reduction::Sum {
                        let lens = run_lengths(&keys);
                        let mut start = 0;
                        for (r, &len) in lens.iter().enumerate() {
                            let run = &vals[start..start + len];
                            let exact: f64 = run.iter().map(|x| x.to_f64()).sum();
                            let abs: f64 = run.iter().map(|x| x.to_f64().abs()).sum();
                            let bound = len as f64 * T::EPS * abs + f64::MIN_POSITIVE;
                            let g = got_a[r].to_f64();
                            assert!(
                                (g - exact).abs() <= bound,
                                "{what}: run {r} (len {len}): got {g}, want {exact} +- {bound}"
                            );
                            start += len;
                        }
                    } else {
                        for r in 0..runs {
                            assert!(
                                got_a[r].bits() == want_a[r].bits(),
                                "{what}: run {r}: got {:?}, want {:?}",
                                got_a[r],
                                want_a[r]
                            );
                        }
                    }
                }
                // Unique by key (the first value of each run), in its three forms by turns.
                let what = format!("unique by key {} n={n} runs<={max_run}", T::DTYPE);
                let mut first = ctx.alloc_zeros::<T>(n.max(1)).unwrap();
                let runs = match (s + max_run) % 3 {
                    0 => ctx.unique_by_key(&dk, &dv, &mut uk, &mut first).unwrap(),
                    1 => {
                        let mut count = ctx.alloc_zeros::<u64>(1).unwrap();
                        ctx.unique_by_key_into(&dk, &dv, &mut uk, &mut first, &mut count)
                            .unwrap();
                        ctx.dtoh(&count).unwrap()[0]
                    }
                    _ => ctx
                        .unique_by_key_async(&dk, &dv, &mut uk, &mut first)
                        .unwrap()
                        .wait()
                        .unwrap(),
                } as usize;
                let starts: Vec<usize> = (0..n)
                    .filter(|&i| i == 0 || keys[i - 1] != keys[i])
                    .collect();
                assert_eq!(runs, starts.len(), "{what}: run count");
                let (got_k, got_f) = (ctx.dtoh(&uk).unwrap(), ctx.dtoh(&first).unwrap());
                for (r, &i) in starts.iter().enumerate() {
                    assert!(got_k[r] == keys[i], "{what}: run {r}: key");
                    assert!(
                        got_f[r].bits() == vals[i].bits(),
                        "{what}: run {r}: first value"
                    );
                }
                // Inputs one element off 16-byte alignment: the element-wise loads.
                if n > 1 {
                    let (vk, vv) = (dk.view(1..n).unwrap(), dv.view(1..n).unwrap());
                    let what = format!("reduce by key {} max n={n} from 1", T::DTYPE);
                    let runs = ctx
                        .reduce_by_key(vk, vv, &mut uk, &mut agg, Reduction::Max)
                        .unwrap() as usize;
                    let (want_k, want_a) =
                        cpu_reduce_by_key(&keys[1..], &vals[1..], Reduction::Max);
                    assert_eq!(runs, want_k.len(), "{what}: run count");
                    let (got_k, got_a) = (ctx.dtoh(&uk).unwrap(), ctx.dtoh(&agg).unwrap());
                    assert!(got_k[..runs] == want_k[..], "{what}: unique keys");
                    for r in 0..runs {
                        assert!(got_a[r].bits() == want_a[r].bits(), "{what}: run {r}");
                    }
                }
            }
        }
    }
    each::<u32, i32>(ctx, sizes);
    each::<u32, f32>(ctx, sizes);
    each::<u64, u64>(ctx, sizes);
    each::<u64, f64>(ctx, sizes);
    each::<u32, i64>(ctx, sizes);
    each::<u64, u32>(ctx, sizes);
    each::<u32, f64>(ctx, sizes);
    each::<u64, f32>(ctx, sizes);
}

/// The stream-ordered form, small outputs, empty input and bad input.
pub fn check_reduce_by_key_edges(ctx: &Context) {
    let n = 3 * ACTIVE.reduce_by_key_tile_elems(4, 4) as usize + 5;
    let keys: Vec<u32> = run_keys(n, 7, 5);
    let vals: Vec<i32> = data(n, 6, false);
    let (want_k, want_a) = cpu_reduce_by_key(&keys, &vals, Reduction::Sum);
    let (dk, dv) = (ctx.htod(&keys).unwrap(), ctx.htod(&vals).unwrap());

    // Stream-ordered, into device memory; outputs with room for 10 runs only: the count is the
    // true one and the first 10 runs are written, nothing past them.
    let mut uk = ctx.htod(&[u32::MAX; 11]).unwrap();
    let mut agg = ctx.htod(&[-7i32; 11]).unwrap();
    let mut count = ctx.alloc_zeros::<u64>(1).unwrap();
    ctx.reduce_by_key_into(
        &dk,
        &dv,
        uk.view_mut(0..10).unwrap(),
        agg.view_mut(0..10).unwrap(),
        &mut count,
        Reduction::Sum,
    )
    .unwrap();
    assert_eq!(ctx.dtoh(&count).unwrap()[0] as usize, want_k.len());
    let (gk, ga) = (ctx.dtoh(&uk).unwrap(), ctx.dtoh(&agg).unwrap());
    assert_eq!(gk[..10], want_k[..10]);
    assert_eq!(ga[..10], want_a[..10]);
    assert_eq!((gk[10], ga[10]), (u32::MAX, -7), "wrote past the outputs");

    // The blocking form with too little room: an error naming both numbers.
    let e = ctx
        .reduce_by_key(&dk, &dv, &mut uk, &mut agg, Reduction::Sum)
        .unwrap_err();
    let runs = want_k.len().to_string();
    assert!(
        matches!(e, Error::OutputTooSmall { needed, .. } if needed.to_string() == runs)
            && e.to_string().contains(&runs)
            && e.to_string().contains("11"),
        "{e}"
    );

    // Empty input: no runs, the device count set to 0.
    let (ek, ev) = (
        ctx.alloc_zeros::<u32>(0).unwrap(),
        ctx.alloc_zeros::<i32>(0).unwrap(),
    );
    assert_eq!(
        ctx.reduce_by_key(&ek, &ev, &mut uk, &mut agg, Reduction::Max)
            .unwrap(),
        0
    );
    let mut count = ctx.htod(&[5u64]).unwrap();
    ctx.reduce_by_key_into(&ek, &ev, &mut uk, &mut agg, &mut count, Reduction::Min)
        .unwrap();
    assert_eq!(ctx.dtoh(&count).unwrap(), [0]);

    // Mismatched lengths and an empty count output: clear errors.
    let e = ctx
        .reduce_by_key(
            &dk,
            dv.view(1..).unwrap(),
            &mut uk,
            &mut agg,
            Reduction::Sum,
        )
        .unwrap_err();
    assert!(
        matches!(e, Error::LengthMismatch { .. }) && e.to_string().contains("keys"),
        "{e}"
    );
    let mut none = ctx.alloc_zeros::<u64>(0).unwrap();
    let e = ctx
        .reduce_by_key_into(&dk, &dv, &mut uk, &mut agg, &mut none, Reduction::Sum)
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::OutputTooSmall {
                needed: 1,
                got: 0,
                ..
            }
        ) && e.to_string().contains("run-count"),
        "{e}"
    );
}

/// More than 2^32 elements AND more than 2^32 runs (issue 32: run counts were 32-bit): keys
/// `i as u32` (every element its own run, the key wrapping at 2^32 still differs from its
/// neighbour), values 1, so run `r` has key `r as u32` and sum 1, and the count is `n`. Needs
/// ~69 GB of device memory (inputs and outputs of 2^32 + 4099 u32 each).
pub fn check_reduce_by_key_huge(ctx: &Context) {
    let n = (1usize << 32) + 4099;
    let (dk, dv) = {
        let keys: Vec<u32> = (0..n).map(|i| i as u32).collect();
        let dk = ctx
            .htod(&keys)
            .unwrap_or_else(|e| panic!("{n} u32 keys: {e}"));
        drop(keys);
        (dk, ctx.htod(&vec![1u32; n]).unwrap())
    };
    let mut uk = ctx.alloc_zeros::<u32>(n).unwrap();
    let mut agg = ctx.alloc_zeros::<u32>(n).unwrap();
    let mut count = ctx.alloc_zeros::<u64>(1).unwrap();
    ctx.reduce_by_key_into(&dk, &dv, &mut uk, &mut agg, &mut count, Reduction::Sum)
        .unwrap();
    assert_eq!(ctx.dtoh(&count).unwrap()[0], n as u64, "run count");
    drop((dk, dv));
    let (got_k, got_a) = (ctx.dtoh(&uk).unwrap(), ctx.dtoh(&agg).unwrap());
    for r in (0..n).step_by(1 << 20).chain(n - 5000..n) {
        assert_eq!(got_k[r], r as u32, "unique key of run {r}");
        assert_eq!(got_a[r], 1, "aggregate of run {r}");
    }
}
