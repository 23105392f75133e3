//! Compaction (`select`, `select_indices`, `nonzero`, `select_flagged`, `partition`,
//! `partition_three_way`, `unique`, run lengths) against a CPU reference, bit for bit (nothing is combined: the kept elements in order).

use gpu_reduce::{Context, Error, Predicate, SelectElement};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::reductions::TestElem;

/// Elements per tile of the compaction kernels over `bytes`-byte elements ([`BLOCK`]
/// threads: every kernel but select-if's and the flagged selection's on short inputs).
///
/// [`BLOCK`]: kernels::select::BLOCK
pub fn tile(bytes: usize) -> usize {
    kernels::select::tile_elems(bytes, kernels::select::BLOCK) as usize
}

/// [`check_select`] with select-if's and the flagged selection's blocks of each of `blocks`
/// threads (`Context::set_select_block`), at each block's tile boundaries +- 1 and over
/// several tiles: one warp, the short inputs' block and the full one give the same results.
pub fn check_select_blocks(ctx: &Context, blocks: &[u32]) {
    for &b in blocks {
        ctx.set_select_block(Some(b));
        let t = kernels::select::tile_elems(4, b) as usize;
        let h = kernels::select::tile_elems(8, b) as usize;
        check_select(ctx, &[h - 1, h + 1, t - 1, t + 1, 3 * t + 5]);
    }
    ctx.set_select_block(None);
}

/// The CPU's answer to `pred(x)` (IEEE comparisons).
pub fn keeps<T: TestElem + PartialOrd>(pred: Predicate<T>, x: T) -> bool {
    match pred {
        Predicate::Lt(c) => x < c,
        Predicate::Le(c) => x <= c,
        Predicate::Gt(c) => x > c,
        Predicate::Ge(c) => x >= c,
        Predicate::Eq(c) => x == c,
        Predicate::Ne(c) => x != c,
        Predicate::InRange(lo, hi) => lo <= x && x < hi,
        Predicate::NonZero => x != T::ZERO,
        Predicate::Finite => x.to_f64().is_finite(),
        #[allow(clippy::eq_op)] // IEEE: false for a NaN
        Predicate::NotNan => x == x,
    }
}

/// Each run of equal consecutive elements (IEEE `==`): its first element and its length.
pub fn runs_ref<T: TestElem>(x: &[T]) -> (Vec<T>, Vec<u64>) {
    let (mut u, mut c) = (Vec::new(), Vec::<u64>::new());
    for (i, &v) in x.iter().enumerate() {
        if i == 0 || x[i - 1] != v {
            u.push(v);
            c.push(1);
        } else if let Some(last) = c.last_mut() {
            *last += 1;
        }
    }
    (u, c)
}

/// Each run of two or more equal consecutive elements (IEEE `==`): its first index and its
/// length.
pub fn nontrivial_runs_ref<T: TestElem>(x: &[T]) -> (Vec<u64>, Vec<u64>) {
    let (_, lens) = runs_ref(x);
    let mut at = 0u64;
    let (mut o, mut l) = (Vec::new(), Vec::new());
    for len in lens {
        if len > 1 {
            o.push(at);
            l.push(len);
        }
        at += len;
    }
    (o, l)
}

/// The first of each run of equal consecutive elements (IEEE `==`).
pub fn unique_ref<T: TestElem>(x: &[T]) -> Vec<T> {
    x.iter()
        .enumerate()
        .filter(|&(i, v)| i == 0 || x[i - 1] != *v)
        .map(|(_, &v)| v)
        .collect()
}

fn bits<T: TestElem>(x: &[T]) -> Vec<u64> {
    x.iter().map(|v| v.bits()).collect()
}

/// Data with runs and repeated values (so `unique` and `Eq` have work), NaN and infinities
/// among floats.
pub fn data<T: TestElem>(n: usize, seed: u64) -> Vec<T> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let pool: Vec<T> = (0..7).map(|_| T::random(&mut rng)).collect();
    let mut v = Vec::with_capacity(n);
    while v.len() < n {
        let x = match rng.random_range(0..10) {
            0 => T::nan().unwrap_or(pool[0]),
            1 => T::from_f64(f64::INFINITY).unwrap_or(pool[1]),
            2 => T::ZERO,
            3..=5 => pool[rng.random_range(0..pool.len())],
            _ => T::random(&mut rng),
        };
        let run = if rng.random_bool(0.3) {
            rng.random_range(1..40)
        } else {
            1
        };
        v.extend(std::iter::repeat_n(x, run.min(n - v.len())));
    }
    v
}

/// The predicates tried on `x` (constants from the data, so they split it).
fn predicates<T: TestElem + PartialOrd>(x: &[T]) -> Vec<Predicate<T>> {
    let c = x.get(x.len() / 3).copied().unwrap_or(T::ZERO);
    let d = x.get(2 * x.len() / 3).copied().unwrap_or(T::ONE);
    let (lo, hi) = if d < c { (d, c) } else { (c, d) };
    vec![
        Predicate::Lt(c),
        Predicate::Le(c),
        Predicate::Gt(c),
        Predicate::Ge(c),
        Predicate::Eq(c),
        Predicate::Ne(c),
        Predicate::InRange(lo, hi),
        Predicate::NonZero,
        Predicate::Finite,
        Predicate::NotNan,
    ]
}

/// Every call on `x` (at element `offset` of its buffer: misaligned vectors) against the CPU.
fn check_one<T: TestElem + SelectElement + PartialOrd>(
    ctx: &Context,
    x: &[T],
    offset: usize,
    seed: u64,
) {
    let n = x.len();
    let what = |call: &str| format!("{call} of {n} {} at offset {offset}", T::DTYPE);
    let mut host = vec![T::ZERO; offset];
    host.extend_from_slice(x);
    let buf = ctx.htod(&host).unwrap();
    let dx = buf.view(offset..).unwrap();
    let mut out = ctx.alloc_zeros::<T>(n.max(1)).unwrap();
    let mut rest = ctx.alloc_zeros::<T>(n.max(1)).unwrap();
    let mut ix = ctx.alloc_zeros::<u64>(n.max(1)).unwrap();
    let mut second = ctx.alloc_zeros::<T>(n.max(1)).unwrap();
    let preds = predicates(x);
    for (p, &pred) in preds.iter().enumerate() {
        let want: Vec<T> = x.iter().copied().filter(|&v| keeps(pred, v)).collect();
        let others: Vec<T> = x.iter().copied().filter(|&v| !keeps(pred, v)).collect();
        let want_ix: Vec<u64> = (0..n as u64)
            .filter(|&i| keeps(pred, x[i as usize]))
            .collect();
        let k = ctx.select(dx, &mut out, pred).unwrap() as usize;
        assert_eq!(k, want.len(), "{} {pred:?}: count", what("select"));
        assert_eq!(
            bits(&ctx.dtoh(&out).unwrap()[..k]),
            bits(&want),
            "{} {pred:?}",
            what("select")
        );
        let k = ctx.select_indices(dx, &mut ix, pred).unwrap() as usize;
        assert_eq!(
            ctx.dtoh(&ix).unwrap()[..k],
            want_ix,
            "{} {pred:?}",
            what("select_indices")
        );
        ctx.memset_zeros(&mut out).unwrap();
        let k = ctx
            .select_with_indices(dx, &mut out, &mut ix, pred)
            .unwrap() as usize;
        assert_eq!(
            (
                bits(&ctx.dtoh(&out).unwrap()[..k]),
                &ctx.dtoh(&ix).unwrap()[..k]
            ),
            (bits(&want), &want_ix[..]),
            "{} {pred:?}",
            what("select_with_indices")
        );
        let k = ctx.partition(dx, &mut out, &mut rest, pred).unwrap() as usize;
        assert_eq!(k, want.len(), "{} {pred:?}: count", what("partition"));
        assert_eq!(
            bits(&ctx.dtoh(&out).unwrap()[..k]),
            bits(&want),
            "{} {pred:?}",
            what("partition")
        );
        assert_eq!(
            bits(&ctx.dtoh(&rest).unwrap()[..n - k]),
            bits(&others),
            "{} {pred:?}: the rest",
            what("partition")
        );
        // Three ways: `pred`, then another predicate among the others.
        let q = preds[(p + 3) % preds.len()];
        let part = |v: T| {
            if keeps(pred, v) {
                0
            } else if keeps(q, v) {
                1
            } else {
                2
            }
        };
        let want3: Vec<Vec<T>> = (0..3)
            .map(|w| x.iter().copied().filter(|&v| part(v) == w).collect())
            .collect();
        // Fresh outputs: the partition above left the first part in `out` already.
        for o in [&mut out, &mut second, &mut rest] {
            ctx.memset_zeros(o).unwrap();
        }
        let (a, b) = ctx
            .partition_three_way(dx, &mut out, &mut second, &mut rest, pred, q)
            .unwrap();
        let (a, b) = (a as usize, b as usize);
        assert_eq!(
            [
                bits(&ctx.dtoh(&out).unwrap()[..a]),
                bits(&ctx.dtoh(&second).unwrap()[..b]),
                bits(&ctx.dtoh(&rest).unwrap()[..n - a - b]),
            ],
            [bits(&want3[0]), bits(&want3[1]), bits(&want3[2])],
            "{} {pred:?}, {q:?}",
            what("partition_three_way")
        );
    }
    let nz: Vec<u64> = (0..n as u64)
        .filter(|&i| x[i as usize] != T::ZERO)
        .collect();
    let k = ctx.nonzero(dx, &mut ix).unwrap() as usize;
    assert_eq!(ctx.dtoh(&ix).unwrap()[..k], nz, "{}", what("nonzero"));

    let mut rng = SmallRng::seed_from_u64(seed);
    let p = rng.random_range(0.0..1.0);
    let mask: Vec<u8> = (0..n)
        .map(|_| {
            if rng.random_bool(p) {
                rng.random_range(1..=255)
            } else {
                0
            }
        })
        .collect();
    let dm = ctx.htod(&mask).unwrap();
    let want: Vec<T> = x
        .iter()
        .zip(&mask)
        .filter(|&(_, &m)| m != 0)
        .map(|(&v, _)| v)
        .collect();
    let k = ctx.select_flagged(dx, &dm, &mut out).unwrap() as usize;
    assert_eq!(
        bits(&ctx.dtoh(&out).unwrap()[..k]),
        bits(&want),
        "{}",
        what("select_flagged")
    );

    let want = unique_ref(x);
    let k = ctx.unique(dx, &mut out).unwrap() as usize;
    assert_eq!(
        bits(&ctx.dtoh(&out).unwrap()[..k]),
        bits(&want),
        "{}",
        what("unique")
    );
    // Unique by key: the keys `x`, each run's first index as its value (8-byte values).
    let idx: Vec<u64> = (0..n as u64).map(|i| i * 3 + seed).collect();
    let want_v: Vec<u64> = (0..n)
        .filter(|&i| i == 0 || !(x[i] == x[i - 1]))
        .map(|i| idx[i])
        .collect();
    let mut first = ctx.alloc_zeros::<u64>(n.max(1)).unwrap();
    let k = ctx
        .unique_by_key(dx, &ctx.htod(&idx).unwrap(), &mut out, &mut first)
        .unwrap() as usize;
    assert_eq!(
        bits(&ctx.dtoh(&out).unwrap()[..k]),
        bits(&want),
        "{}",
        what("unique_by_key keys")
    );
    assert_eq!(
        ctx.dtoh(&first).unwrap()[..k],
        want_v[..],
        "{}",
        what("unique_by_key values")
    );

    let (u, c) = runs_ref(x);
    let k = ctx.run_length_encode(dx, &mut out, &mut ix).unwrap() as usize;
    assert_eq!(
        bits(&ctx.dtoh(&out).unwrap()[..k]),
        bits(&u),
        "{}",
        what("run_length_encode")
    );
    assert_eq!(
        ctx.dtoh(&ix).unwrap()[..k],
        c,
        "{}: lengths",
        what("run_length_encode")
    );

    let (o, l) = nontrivial_runs_ref(x);
    let mut lens = ctx.alloc_zeros::<u64>(n).unwrap();
    let k = ctx.non_trivial_runs(dx, &mut ix, &mut lens).unwrap() as usize;
    assert_eq!(k, o.len(), "{}: runs", what("non_trivial_runs"));
    assert_eq!(
        ctx.dtoh(&ix).unwrap()[..k],
        o,
        "{}: offsets",
        what("non_trivial_runs")
    );
    assert_eq!(
        ctx.dtoh(&lens).unwrap()[..k],
        l,
        "{}: lengths",
        what("non_trivial_runs")
    );
}

/// `e` is the error of an output with room for `got` where `needed` were.
fn assert_too_small(e: &Error, needed: u64, got: u64) {
    assert!(
        matches!(e, Error::OutputTooSmall { needed: a, got: b, .. } if (*a, *b) == (needed, got)),
        "{e}"
    );
}

/// The part of a buffer past an output's end still holds its fill (`u64::MAX`).
fn assert_untouched(past_end: &[u64]) {
    assert!(
        past_end.iter().all(|&v| v == u64::MAX),
        "nothing past the end"
    );
}

/// Every call, type and the built-in predicates at `sizes`, offsets 0 and 1-3.
pub fn check_select(ctx: &Context, sizes: &[usize]) {
    fn each<T: TestElem + SelectElement + PartialOrd>(ctx: &Context, sizes: &[usize]) {
        for (k, &n) in sizes.iter().enumerate() {
            let x = data::<T>(n, 0x5e1ec7 + k as u64);
            check_one(ctx, &x, 0, k as u64);
            check_one(ctx, &x, 1 + k % 3, k as u64 + 99);
        }
    }
    each::<i32>(ctx, sizes);
    each::<u32>(ctx, sizes);
    each::<i64>(ctx, sizes);
    each::<u64>(ctx, sizes);
    each::<f32>(ctx, sizes);
    each::<f64>(ctx, sizes);
}

/// The built-in predicates with extreme constants (the host makes strict bounds inclusive:
/// the type's ends, zeros of both signs, the least subnormals, infinities, NaN) over data of
/// those values, against the CPU's IEEE comparisons.
pub fn check_predicate_constants(ctx: &Context) {
    fn each<T: TestElem + SelectElement + PartialOrd>(ctx: &Context) {
        let (low, high) = (T::MAX_ID, T::MIN_ID);
        let mut special = vec![low, high, T::ZERO, T::ONE];
        special.extend(
            [low.next_up(), high.next_down(), T::ZERO.next_up()]
                .into_iter()
                .flatten(),
        );
        special.extend(T::ZERO.next_down());
        special.extend(T::nan());
        special.extend(T::from_f64(-0.0));
        special.extend(T::from_f64(f64::MAX).and_then(|m| m.next_down()));
        let x: Vec<T> = (0..5000).map(|i| special[i * 7 % special.len()]).collect();
        let dx = ctx.htod(&x).unwrap();
        let mut out = ctx.alloc_zeros::<T>(x.len()).unwrap();
        for &c in &special {
            let mut preds = vec![
                Predicate::Lt(c),
                Predicate::Le(c),
                Predicate::Gt(c),
                Predicate::Ge(c),
                Predicate::Eq(c),
                Predicate::Ne(c),
                Predicate::NonZero,
                Predicate::Finite,
                Predicate::NotNan,
            ];
            preds.extend(special.iter().map(|&d| Predicate::InRange(c, d)));
            for pred in preds {
                let want: Vec<T> = x.iter().copied().filter(|&v| keeps(pred, v)).collect();
                let k = ctx.select(&dx, &mut out, pred).unwrap() as usize;
                assert_eq!(
                    bits(&ctx.dtoh(&out).unwrap()[..k]),
                    bits(&want),
                    "{} {pred:?}",
                    T::DTYPE
                );
            }
        }
    }
    each::<i32>(ctx);
    each::<u32>(ctx);
    each::<i64>(ctx);
    each::<u64>(ctx);
    each::<f32>(ctx);
    each::<f64>(ctx);
}

/// Outputs too small (the error names how many were needed; nothing written past the end),
/// the `_into` forms, empty input, all kept, none kept, a mask of the wrong length.
pub fn check_select_edges(ctx: &Context) {
    let n = 10_000usize;
    let x: Vec<u32> = (0..n as u32).collect();
    let dx = ctx.htod(&x).unwrap();
    // Room for 100 of the 5,000 kept, in a buffer whose tail must stay untouched.
    let mut big = ctx.htod(&[u32::MAX; 200]).unwrap();
    let e = ctx
        .select(&dx, big.view_mut(0..100).unwrap(), Predicate::Lt(5000))
        .unwrap_err();
    match e {
        Error::OutputTooSmall { needed, got, .. } => assert_eq!((needed, got), (5000, 100), "{e}"),
        other => panic!("select into a short output: {other}"),
    }
    let got = ctx.dtoh(&big).unwrap();
    assert_eq!(got[..100], x[..100], "what fits is written");
    assert!(
        got[100..].iter().all(|&v| v == u32::MAX),
        "nothing past the output's end"
    );
    // The rest of a partition too short.
    let mut sel = ctx.alloc_zeros::<u32>(n).unwrap();
    let mut rest = ctx.htod(&[u32::MAX; 50]).unwrap();
    let e = ctx
        .partition(
            &dx,
            &mut sel,
            rest.view_mut(0..10).unwrap(),
            Predicate::Lt(5000),
        )
        .unwrap_err();
    assert_too_small(&e, 5000, 10);
    assert!(
        ctx.dtoh(&rest).unwrap()[10..]
            .iter()
            .all(|&v| v == u32::MAX)
    );
    // Stream-ordered: the count on the device, the rest counted, not written.
    let mut count = ctx.alloc_zeros::<u64>(1).unwrap();
    let mut short = ctx.htod(&[u32::MAX; 20]).unwrap();
    ctx.select_into(
        &dx,
        short.view_mut(0..7).unwrap(),
        &mut count,
        Predicate::Ge(9990),
    )
    .unwrap();
    assert_eq!(ctx.dtoh(&count).unwrap(), [10]);
    let s = ctx.dtoh(&short).unwrap();
    assert_eq!(s[..7], x[9990..9997]);
    assert!(s[7..].iter().all(|&v| v == u32::MAX));
    let mut none = ctx.alloc_zeros::<u64>(0).unwrap();
    assert!(matches!(
        ctx.unique_into(&dx, &mut sel, &mut none),
        Err(Error::OutputTooSmall { needed: 1, .. })
    ));
    // Pending forms: the count on wait, a short output's error on wait.
    let p = ctx.select_async(&dx, &mut sel, Predicate::Lt(77)).unwrap();
    assert_eq!(p.wait().unwrap(), 77);
    assert_eq!(ctx.dtoh(&sel).unwrap()[..77], x[..77]);
    let p = ctx
        .partition_async(
            &dx,
            &mut sel,
            rest.view_mut(0..10).unwrap(),
            Predicate::Lt(77),
        )
        .unwrap();
    assert!(matches!(
        p.wait(),
        Err(Error::OutputTooSmall {
            needed: 9923,
            got: 10,
            ..
        })
    ));
    let mut ix = ctx.alloc_zeros::<u64>(n).unwrap();
    let p = ctx
        .select_indices_async(&dx, &mut ix, Predicate::Ge(9998))
        .unwrap();
    assert_eq!(p.wait().unwrap(), 2);
    assert_eq!(ctx.dtoh(&ix).unwrap()[..2], [9998, 9999]);
    assert_eq!(
        ctx.unique_async(&dx, &mut sel).unwrap().wait().unwrap(),
        n as u64
    );
    let ones = ctx.htod(&vec![1u8; n]).unwrap();
    let p = ctx.select_flagged_async(&dx, &ones, &mut sel).unwrap();
    assert_eq!(p.wait().unwrap(), n as u64);
    // Run lengths: runs of 3 over 10,000 (3,334 runs, the last of 1), room for 100.
    let r: Vec<u32> = (0..n as u32).map(|i| i / 3).collect();
    let dr = ctx.htod(&r).unwrap();
    let mut u = ctx.alloc_zeros::<u32>(n).unwrap();
    let mut lens = ctx.htod(&[u64::MAX; 200]).unwrap();
    let e = ctx
        .run_length_encode(&dr, &mut u, lens.view_mut(0..100).unwrap())
        .unwrap_err();
    assert_too_small(&e, 3334, 100);
    let l = ctx.dtoh(&lens).unwrap();
    assert!(l[..100].iter().all(|&v| v == 3), "the lengths that fit");
    assert_untouched(&l[100..]);
    let mut all = ctx.alloc_zeros::<u64>(n).unwrap();
    ctx.run_length_encode_into(&dr, &mut u, &mut all, &mut count)
        .unwrap();
    assert_eq!(ctx.dtoh(&count).unwrap(), [3334]);
    assert_eq!(ctx.dtoh(&all).unwrap()[3333], 1, "the last run");
    let p = ctx.run_length_encode_async(&dr, &mut u, &mut all).unwrap();
    assert_eq!(p.wait().unwrap(), 3334);
    // Non-trivial runs of the same: 3,333 of 3 (the last run, of 1, is not one), room for 100.
    let mut offs = ctx.htod(&[u64::MAX; 200]).unwrap();
    let e = ctx
        .non_trivial_runs(&dr, offs.view_mut(0..100).unwrap(), &mut all)
        .unwrap_err();
    assert_too_small(&e, 3333, 100);
    let o = ctx.dtoh(&offs).unwrap();
    assert!(o[..100].iter().enumerate().all(|(i, &v)| v == 3 * i as u64));
    assert_untouched(&o[100..]);
    let mut lens = ctx.htod(&[u64::MAX; 200]).unwrap();
    let mut offs = ctx.alloc_zeros::<u64>(n).unwrap();
    let e = ctx
        .non_trivial_runs(&dr, &mut offs, lens.view_mut(0..100).unwrap())
        .unwrap_err();
    assert_too_small(&e, 3333, 100);
    let l = ctx.dtoh(&lens).unwrap();
    assert!(l[..100].iter().all(|&v| v == 3), "the lengths that fit");
    assert_untouched(&l[100..]);
    ctx.non_trivial_runs_into(&dr, &mut offs, &mut all, &mut count)
        .unwrap();
    assert_eq!(ctx.dtoh(&count).unwrap(), [3333]);
    assert_eq!(ctx.dtoh(&all).unwrap()[3332], 3);
    let p = ctx
        .non_trivial_runs_async(&dr, &mut offs, &mut all)
        .unwrap();
    assert_eq!(p.wait().unwrap(), 3333);
    assert_eq!(ctx.non_trivial_runs(&dx, &mut offs, &mut all).unwrap(), 0);
    // Three ways over 0..10,000: < 3000, then < 9500 (across the first tile's end, 8192), then
    // the 500 others; each part short in turn with the others whole (its error, what fits
    // written, nothing past the end, the others complete).
    let (lt3, lt95) = (Predicate::Lt(3000u32), Predicate::Lt(9500));
    let mut mid = ctx.alloc_zeros::<u32>(n).unwrap();
    let mut rest3 = ctx.alloc_zeros::<u32>(n).unwrap();
    let fence = |ctx: &Context| ctx.htod(&[u32::MAX; 200]).unwrap();
    let fenced_holds = |f: &[u32], want: &[u32]| {
        assert_eq!(f[..100], *want, "what fits is written");
        assert!(
            f[100..].iter().all(|&v| v == u32::MAX),
            "nothing past the end"
        );
    };
    let mut f = fence(ctx);
    let e = ctx
        .partition_three_way(
            &dx,
            f.view_mut(0..100).unwrap(),
            &mut mid,
            &mut rest3,
            lt3,
            lt95,
        )
        .unwrap_err();
    assert_too_small(&e, 3000, 100);
    fenced_holds(&ctx.dtoh(&f).unwrap(), &x[..100]);
    assert_eq!(ctx.dtoh(&mid).unwrap()[..6500], x[3000..9500]);
    assert_eq!(ctx.dtoh(&rest3).unwrap()[..500], x[9500..]);
    let mut f = fence(ctx);
    ctx.memset_zeros(&mut rest3).unwrap();
    let e = ctx
        .partition_three_way(
            &dx,
            &mut sel,
            f.view_mut(0..100).unwrap(),
            &mut rest3,
            lt3,
            lt95,
        )
        .unwrap_err();
    assert_too_small(&e, 6500, 100);
    fenced_holds(&ctx.dtoh(&f).unwrap(), &x[3000..3100]);
    assert_eq!(ctx.dtoh(&sel).unwrap()[..3000], x[..3000]);
    assert_eq!(ctx.dtoh(&rest3).unwrap()[..500], x[9500..]);
    let mut f = fence(ctx);
    ctx.memset_zeros(&mut mid).unwrap();
    let e = ctx
        .partition_three_way(
            &dx,
            &mut sel,
            &mut mid,
            f.view_mut(0..100).unwrap(),
            lt3,
            lt95,
        )
        .unwrap_err();
    assert_too_small(&e, 500, 100);
    fenced_holds(&ctx.dtoh(&f).unwrap(), &x[9500..9600]);
    assert_eq!(ctx.dtoh(&mid).unwrap()[..6500], x[3000..9500]);
    // The counts on the device (two words; one is too few): all three parts whole, or with a
    // short rest the counts still and nothing past its end; pending: the counts, an error.
    let mut two = ctx.alloc_zeros::<u64>(2).unwrap();
    for o in [&mut sel, &mut mid, &mut rest3] {
        ctx.memset_zeros(o).unwrap();
    }
    ctx.partition_three_way_into(&dx, &mut sel, &mut mid, &mut rest3, &mut two, lt3, lt95)
        .unwrap();
    assert_eq!(ctx.dtoh(&two).unwrap(), [3000, 6500]);
    assert_eq!(ctx.dtoh(&sel).unwrap()[..3000], x[..3000]);
    assert_eq!(ctx.dtoh(&mid).unwrap()[..6500], x[3000..9500]);
    assert_eq!(ctx.dtoh(&rest3).unwrap()[..500], x[9500..]);
    let mut f = fence(ctx);
    ctx.partition_three_way_into(
        &dx,
        &mut sel,
        &mut mid,
        f.view_mut(0..100).unwrap(),
        &mut two,
        lt95,
        lt3,
    )
    .unwrap();
    assert_eq!(ctx.dtoh(&two).unwrap(), [9500, 0]);
    fenced_holds(&ctx.dtoh(&f).unwrap(), &x[9500..9600]);
    assert!(matches!(
        ctx.partition_three_way_into(&dx, &mut sel, &mut mid, &mut rest3, &mut count, lt3, lt95),
        Err(Error::OutputTooSmall {
            needed: 2,
            got: 1,
            ..
        })
    ));
    let p = ctx
        .partition_three_way_async(
            &dx,
            &mut sel,
            &mut mid,
            &mut rest3,
            Predicate::Ge(9000),
            lt3,
        )
        .unwrap();
    assert_eq!(p.wait().unwrap(), (1000, 3000));
    assert_eq!(ctx.dtoh(&mid).unwrap()[..3000], x[..3000]);
    let p = ctx
        .partition_three_way_async(
            &dx,
            &mut sel,
            mid.view_mut(0..10).unwrap(),
            &mut rest3,
            lt3,
            lt95,
        )
        .unwrap();
    assert!(matches!(
        p.wait(),
        Err(Error::OutputTooSmall {
            needed: 6500,
            got: 10,
            ..
        })
    ));
    let nothing = ctx.alloc_zeros::<u32>(0).unwrap();
    ctx.partition_three_way_into(
        &nothing, &mut sel, &mut mid, &mut rest3, &mut two, lt3, lt95,
    )
    .unwrap();
    assert_eq!(ctx.dtoh(&two).unwrap(), [0, 0]);
    // All kept, none kept, empty.
    assert_eq!(
        ctx.select(&dx, &mut sel, Predicate::NotNan).unwrap(),
        n as u64
    );
    assert_eq!(ctx.dtoh(&sel).unwrap(), x);
    assert_eq!(
        ctx.select(&dx, &mut sel, Predicate::Gt(u32::MAX)).unwrap(),
        0
    );
    assert_eq!(ctx.unique(&dx, &mut sel).unwrap(), n as u64);
    let empty = ctx.alloc_zeros::<u32>(0).unwrap();
    assert_eq!(ctx.select(&empty, &mut sel, Predicate::NonZero).unwrap(), 0);
    ctx.partition_into(&empty, &mut sel, &mut rest, &mut count, Predicate::NonZero)
        .unwrap();
    assert_eq!(ctx.dtoh(&count).unwrap(), [0]);
    // One element.
    let one = ctx.htod(&[7u32]).unwrap();
    assert_eq!(ctx.unique(&one, &mut sel).unwrap(), 1);
    // A mask of the wrong length.
    let mask = ctx.htod(&vec![1u8; n - 1]).unwrap();
    assert!(matches!(
        ctx.select_flagged(&dx, &mask, &mut sel),
        Err(Error::LengthMismatch { .. })
    ));
    // Unique by key (the values read at each run's first key): runs of 3 across tile ends,
    // each output short in turn, the pending and stream-ordered forms, bad lengths, empty.
    let keys: Vec<u64> = (0..n as u64).map(|i| i / 3).collect();
    let vals: Vec<u64> = (0..n as u64).map(|i| i * 10 + 1).collect();
    let (dk, dv) = (ctx.htod(&keys).unwrap(), ctx.htod(&vals).unwrap());
    let runs = n.div_ceil(3);
    let want_v: Vec<u64> = (0..runs as u64).map(|r| r * 30 + 1).collect();
    let mut uk = ctx.alloc_zeros::<u64>(n).unwrap();
    let mut first = ctx.htod(&vec![u64::MAX; n + 5]).unwrap();
    assert_eq!(
        ctx.unique_by_key(&dk, &dv, &mut uk, first.view_mut(0..runs).unwrap())
            .unwrap(),
        runs as u64
    );
    let got = ctx.dtoh(&first).unwrap();
    assert_eq!(got[..runs], want_v[..], "unique by key: first values");
    assert_untouched(&got[runs..]);
    assert_eq!(
        ctx.dtoh(&uk).unwrap()[..runs],
        (0..runs as u64).collect::<Vec<_>>()[..]
    );
    let mut first = ctx.htod(&vec![u64::MAX; 100]).unwrap();
    let e = ctx
        .unique_by_key(&dk, &dv, &mut uk, first.view_mut(0..40).unwrap())
        .unwrap_err();
    assert_too_small(&e, runs as u64, 40);
    let got = ctx.dtoh(&first).unwrap();
    assert_eq!(got[..40], want_v[..40], "what fits is written");
    assert_untouched(&got[40..]);
    let mut short_k = ctx.htod(&vec![u64::MAX; 100]).unwrap();
    let mut all = ctx.alloc_zeros::<u64>(n).unwrap();
    let e = ctx
        .unique_by_key_async(&dk, &dv, short_k.view_mut(0..50).unwrap(), &mut all)
        .unwrap()
        .wait()
        .unwrap_err();
    assert_too_small(&e, runs as u64, 50);
    assert_untouched(&ctx.dtoh(&short_k).unwrap()[50..]);
    ctx.unique_by_key_into(&dk, &dv, &mut uk, &mut all, &mut count)
        .unwrap();
    assert_eq!(ctx.dtoh(&count).unwrap(), [runs as u64]);
    assert!(matches!(
        ctx.unique_by_key(&dk, dv.view(1..n).unwrap(), &mut uk, &mut all),
        Err(Error::LengthMismatch { .. })
    ));
    let (ek, ev) = (
        ctx.alloc_zeros::<u64>(0).unwrap(),
        ctx.alloc_zeros::<u64>(0).unwrap(),
    );
    ctx.unique_by_key_into(&ek, &ev, &mut uk, &mut all, &mut count)
        .unwrap();
    assert_eq!(ctx.dtoh(&count).unwrap(), [0]);
}

/// f16 and bf16: every call and built-in predicate against the CPU on the values widened to
/// f32 (exact), with NaN, infinities and both zeros in the data.
pub fn check_select_half(ctx: &Context, n: usize) {
    macro_rules! each {
        ($h:ty) => {{
            let mut rng = SmallRng::seed_from_u64(n as u64 ^ 0x16);
            let specials = [f32::NAN, f32::INFINITY, -f32::INFINITY, 0.0, -0.0, 1.5];
            let x: Vec<$h> = (0..n)
                .map(|_| {
                    let v = if rng.random_bool(0.2) {
                        specials[rng.random_range(0..specials.len())]
                    } else {
                        (rng.random_range(-8i32..8) as f32) * 0.5
                    };
                    <$h>::from_f32(v)
                })
                .collect();
            // Runs, for unique: every third element repeats the one before.
            let mut x = x;
            for i in (1..n).step_by(3) {
                x[i] = x[i - 1];
            }
            let w: Vec<f32> = x.iter().map(|v| v.to_f32()).collect();
            let bits = |v: &[$h]| v.iter().map(|h| h.to_bits()).collect::<Vec<u16>>();
            let dx = ctx.htod(&x).unwrap();
            let mut out = ctx.alloc_zeros::<$h>(n.max(1)).unwrap();
            let mut rest = ctx.alloc_zeros::<$h>(n.max(1)).unwrap();
            let mut ix = ctx.alloc_zeros::<u64>(n.max(1)).unwrap();
            let c = <$h>::from_f32(0.5);
            let (lo, hi) = (<$h>::from_f32(-1.0), <$h>::from_f32(2.0));
            let cases: [(Predicate<$h>, fn(f32) -> bool); 10] = [
                (Predicate::Lt(c), |v| v < 0.5),
                (Predicate::Le(c), |v| v <= 0.5),
                (Predicate::Gt(c), |v| v > 0.5),
                (Predicate::Ge(c), |v| v >= 0.5),
                (Predicate::Eq(c), |v| v == 0.5),
                (Predicate::Ne(c), |v| v != 0.5),
                (Predicate::InRange(lo, hi), |v| (-1.0..2.0).contains(&v)),
                (Predicate::NonZero, |v| v != 0.0),
                (Predicate::Finite, |v| v.is_finite()),
                (Predicate::NotNan, |v| !v.is_nan()),
            ];
            let mut second = ctx.alloc_zeros::<$h>(n.max(1)).unwrap();
            for (i, (pred, keep)) in cases.into_iter().enumerate() {
                let what = format!("{} n={n} {pred:?}", stringify!($h));
                let want: Vec<$h> = (0..n).filter(|&i| keep(w[i])).map(|i| x[i]).collect();
                let others: Vec<$h> = (0..n).filter(|&i| !keep(w[i])).map(|i| x[i]).collect();
                let k = ctx.select(&dx, &mut out, pred).unwrap() as usize;
                assert_eq!(
                    bits(&ctx.dtoh(&out).unwrap()[..k]),
                    bits(&want),
                    "select {what}"
                );
                let k = ctx.partition(&dx, &mut out, &mut rest, pred).unwrap() as usize;
                assert_eq!(
                    bits(&ctx.dtoh(&out).unwrap()[..k]),
                    bits(&want),
                    "partition {what}"
                );
                assert_eq!(
                    bits(&ctx.dtoh(&rest).unwrap()[..n - k]),
                    bits(&others),
                    "rest {what}"
                );
                let (q, keep_q) = cases[(i + 3) % cases.len()];
                for o in [&mut out, &mut second, &mut rest] {
                    ctx.memset_zeros(o).unwrap();
                }
                let (a, b) = ctx
                    .partition_three_way(&dx, &mut out, &mut second, &mut rest, pred, q)
                    .unwrap();
                let (a, b) = (a as usize, b as usize);
                let part = |w: f32| {
                    if keep(w) {
                        0
                    } else if keep_q(w) {
                        1
                    } else {
                        2
                    }
                };
                let want3: Vec<Vec<u16>> = (0..3)
                    .map(|p| {
                        bits(
                            &(0..n)
                                .filter(|&i| part(w[i]) == p)
                                .map(|i| x[i])
                                .collect::<Vec<_>>(),
                        )
                    })
                    .collect();
                assert_eq!(
                    [
                        bits(&ctx.dtoh(&out).unwrap()[..a]),
                        bits(&ctx.dtoh(&second).unwrap()[..b]),
                        bits(&ctx.dtoh(&rest).unwrap()[..n - a - b]),
                    ],
                    [want3[0].clone(), want3[1].clone(), want3[2].clone()],
                    "three ways {what}, then {q:?}"
                );
                let k = ctx.select_indices(&dx, &mut ix, pred).unwrap() as usize;
                let want_ix: Vec<u64> = (0..n as u64).filter(|&i| keep(w[i as usize])).collect();
                assert_eq!(ctx.dtoh(&ix).unwrap()[..k], want_ix, "indices {what}");
            }
            let want: Vec<$h> = (0..n)
                .filter(|&i| i == 0 || w[i] != w[i - 1])
                .map(|i| x[i])
                .collect();
            let k = ctx.unique(&dx, &mut out).unwrap() as usize;
            assert_eq!(
                bits(&ctx.dtoh(&out).unwrap()[..k]),
                bits(&want),
                "unique {}",
                stringify!($h)
            );
            // Unique by key with 2-byte values: the keys' bits reversed, each run's first.
            let vals: Vec<$h> = x.iter().rev().copied().collect();
            let want_v: Vec<$h> = (0..n)
                .filter(|&i| i == 0 || w[i] != w[i - 1])
                .map(|i| vals[i])
                .collect();
            let mut first = ctx.alloc_zeros::<$h>(n.max(1)).unwrap();
            let k = ctx
                .unique_by_key(&dx, &ctx.htod(&vals).unwrap(), &mut out, &mut first)
                .unwrap() as usize;
            assert_eq!(
                (
                    bits(&ctx.dtoh(&out).unwrap()[..k]),
                    bits(&ctx.dtoh(&first).unwrap()[..k])
                ),
                (bits(&want), bits(&want_v)),
                "unique_by_key {}",
                stringify!($h)
            );
        }};
    }
    each!(half::f16);
    each!(half::bf16);
}
