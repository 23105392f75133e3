//! Several GPUs (`gpu_reduce::multi`): sharded reductions give the same bits for every number of
//! ranks and every shard layout, scans match the CPU, in both process models. The bodies take a
//! function that makes the contexts, so the same checks run on simulated devices (CI) and on
//! GPUs.

use gpu_reduce::multi::{MultiContext, ShardElement, ThreadExchange, tile_elems};
use gpu_reduce::{Context, Error, Reduction, ScanKind};
use rand::{Rng, SeedableRng, rngs::SmallRng};

/// Shard lengths as the multi-GPU calls take them (u64, as every element count of the library).
pub fn u64s(lengths: &[usize]) -> Vec<u64> {
    lengths.iter().map(|&l| l as u64).collect()
}

/// Shard layouts of `n` elements over 1..=5 ranks: one rank, halves, tile-misaligned cuts,
/// empty shards and shards of one element, a shard inside one tile, many small ones.
pub fn layouts(n: usize) -> Vec<Vec<usize>> {
    let t = tile_elems(n as u64, 4) as usize;
    let mut v = vec![
        vec![n],
        vec![n / 2, n - n / 2],
        vec![0, n],
        vec![n, 0],
        vec![1, n - 1],
        vec![t + 3, n - t - 3],
        vec![t - 1, 1, 1, n - t - 1],
        vec![0, 1, 0, 5, n - 6],
        vec![7, t / 3, t / 3, n - 7 - 2 * (t / 3)],
    ];
    let third = n / 3;
    v.push(vec![third + 1, third - 1, n - 2 * third]);
    v.retain(|l| l.iter().sum::<usize>() == n);
    v
}

/// Every built-in reduction of `data` over every layout, on `make(ranks)`'s contexts: the
/// same bits as one rank, and integers equal to the CPU's.
pub fn check_reduce_layouts<T>(make: &dyn Fn(usize) -> Vec<Context>, data: &[T], int: bool)
where
    T: ShardElement + PartialEq + std::fmt::Debug,
{
    let ops: Vec<Reduction> = Reduction::ALL
        .into_iter()
        .filter(|op| int || !matches!(op, Reduction::And | Reduction::Or | Reduction::Xor))
        .collect();
    let one = MultiContext::new(make(1)).unwrap();
    let b1 = one.htod(data, &[data.len() as u64]).unwrap();
    let want: Vec<Vec<u32>> = ops
        .iter()
        .map(|&op| bits(one.reduce(&b1, op).unwrap()))
        .collect();
    let want_min = one.argmin(&b1).unwrap();
    let want_max = one.argmax(&b1).unwrap();
    for layout in layouts(data.len()) {
        let m = MultiContext::new(make(layout.len())).unwrap();
        let b = m.htod(data, &u64s(&layout)).unwrap();
        assert_eq!(m.dtoh(&b).unwrap(), data, "round trip, layout {layout:?}");
        for (op, w) in ops.iter().zip(&want) {
            let got = m.reduce(&b, *op).unwrap();
            assert_eq!(&bits(got), w, "{} {:?}, layout {layout:?}", op.name(), got);
        }
        assert_eq!(m.argmin(&b).unwrap(), want_min, "argmin, layout {layout:?}");
        assert_eq!(m.argmax(&b).unwrap(), want_max, "argmax, layout {layout:?}");
    }
}

fn bits<T: ShardElement>(v: T) -> Vec<u32> {
    v.to_words()[..T::WORDS].to_vec()
}

/// f32 and f64 sums, min, max, argmin/argmax and i32/u64 integer operators over `n` elements.
pub fn check_reduce_every_type(make: &dyn Fn(usize) -> Vec<Context>, n: usize) {
    let mut rng = SmallRng::seed_from_u64(17);
    let f: Vec<f32> = (0..n)
        .map(|i| rng.random_range(-1.0f32..1.0) * (1 << (i % 20)) as f32)
        .collect();
    check_reduce_layouts(make, &f, false);
    let d: Vec<f64> = f.iter().map(|&x| x as f64 * 1.000_000_1).collect();
    check_reduce_layouts(make, &d, false);
    let i: Vec<i32> = (0..n).map(|_| rng.random_range(-1000..1000)).collect();
    check_reduce_layouts(make, &i, true);
    let one = MultiContext::new(make(1)).unwrap();
    let b = one.htod(&i, &[n as u64]).unwrap();
    let cpu: i32 = i.iter().fold(0i32, |a, &x| a.wrapping_add(x));
    assert_eq!(one.reduce(&b, Reduction::Sum).unwrap(), cpu);
    let cpu_min = i.iter().enumerate().min_by_key(|(k, x)| (**x, *k)).unwrap();
    assert_eq!(
        one.argmin(&b).unwrap(),
        Some((cpu_min.0 as u64, *cpu_min.1))
    );
    let u: Vec<u64> = (0..n).map(|_| rng.random::<u64>()).collect();
    check_reduce_layouts(make, &u, true);
    // The f32 sum is close to an f64 reference (its bits are checked above).
    let m = MultiContext::new(make(3)).unwrap();
    let b = m
        .htod(
            &f,
            &[(n / 3) as u64, (n / 3) as u64, (n - 2 * (n / 3)) as u64],
        )
        .unwrap();
    let s = m.reduce(&b, Reduction::Sum).unwrap() as f64;
    let exact: f64 = f.iter().map(|&x| x as f64).sum();
    let abs: f64 = f.iter().map(|&x| (x as f64).abs()).sum();
    assert!((s - exact).abs() <= 1e-5 * abs, "{s} vs {exact}");
}

/// Scans of every operator and kind over several layouts against the CPU (i64: exact), and f32
/// sums: the same bits in two runs of a layout, close to the CPU.
pub fn check_scans(make: &dyn Fn(usize) -> Vec<Context>, n: usize) {
    let mut rng = SmallRng::seed_from_u64(5);
    let x: Vec<i64> = (0..n)
        .map(|_| rng.random_range(-1_000_000..1_000_000))
        .collect();
    for layout in layouts(n).into_iter().take(7) {
        let m = MultiContext::new(make(layout.len())).unwrap();
        for op in Reduction::SCAN {
            for kind in ScanKind::ALL {
                let mut b = m.htod(&x, &u64s(&layout)).unwrap();
                m.scan_in_place(&mut b, op, kind).unwrap();
                let got = m.dtoh(&b).unwrap();
                let want = gpu_reduce_tools::cpu::cpu_scan(&x, op, kind);
                assert_eq!(got, want, "{} {} layout {layout:?}", op.name(), kind.name());
            }
        }
    }
    let f: Vec<f32> = (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect();
    let layout = [n / 4, n / 2, n - n / 4 - n / 2];
    let m = MultiContext::new(make(3)).unwrap();
    let run = || {
        let mut b = m.htod(&f, &u64s(&layout)).unwrap();
        m.scan_in_place(&mut b, Reduction::Sum, ScanKind::Inclusive)
            .unwrap();
        m.dtoh(&b).unwrap()
    };
    let (a, b) = (run(), run());
    assert!(
        a.iter().zip(&b).all(|(p, q)| p.to_bits() == q.to_bits()),
        "two runs of the same f32 scan differ"
    );
    let mut exact = 0f64;
    let mut abs = 0f64;
    for (i, &v) in f.iter().enumerate() {
        exact += v as f64;
        abs += (v as f64).abs();
        assert!(
            (a[i] as f64 - exact).abs() <= 1e-5 * abs + 1e-6,
            "element {i}: {} vs {exact}",
            a[i]
        );
    }
}

/// Shard layouts of `n` elements around the scan's groups of `gs` elements (1..=5 ranks): one
/// rank, cuts at group boundaries and one off them, empty and one-element shards, shards so
/// short that one group spans 3 or more ranks, and `random` layouts of random cuts.
pub fn group_layouts(n: usize, gs: usize, random: usize, seed: u64) -> Vec<Vec<usize>> {
    let rest = |v: &[usize]| {
        let used: usize = v.iter().sum();
        (used <= n).then(|| [v, &[n - used]].concat())
    };
    let mut v: Vec<Vec<usize>> = [
        &[][..],
        &[gs],
        &[gs, gs],
        &[gs - 1],
        &[gs + 1],
        &[0, 1],
        &[1, 0, 0],
        &[n / 2],
        &[gs - 5, 2, 1, 3],
        &[gs / 2, 0, 7, gs / 3],
        &[3, 1, gs, 0],
        &[gs + 11, gs / 4, gs / 4],
    ]
    .iter()
    .filter_map(|p| rest(p))
    .collect();
    let mut rng = SmallRng::seed_from_u64(seed);
    for _ in 0..random {
        let ranks = rng.random_range(2..=5);
        let mut cuts: Vec<usize> = (1..ranks).map(|_| rng.random_range(0..=n)).collect();
        cuts.sort_unstable();
        cuts.push(n);
        v.push(
            cuts.iter()
                .scan(0, |at, &c| {
                    let l = c - *at;
                    *at = c;
                    Some(l)
                })
                .collect(),
        );
    }
    v
}

/// `op`'s scans (both kinds) of `data` over every layout of [`group_layouts`] on
/// `make(ranks)`'s contexts: bit for bit those of one rank and of [`Context::scan`] of the
/// whole array on one context (the 1..N GPUs promise, float sums included).
pub fn check_scan_bits_every_layout<T>(
    make: &dyn Fn(usize) -> Vec<Context>,
    data: &[T],
    ops: &[Reduction],
    random: usize,
    seed: u64,
) where
    T: ShardElement + std::fmt::Debug,
{
    let n = data.len();
    let gs = gpu_reduce::multi::scan_group_elems::<T>() as usize;
    let to_bits = |v: &[T]| v.iter().flat_map(|&x| bits(x)).collect::<Vec<u32>>();
    let ctx = make(1).remove(0);
    let x = ctx.htod(data).unwrap();
    for &op in ops {
        for kind in ScanKind::ALL {
            let mut out = ctx.alloc_zeros::<T>(n).unwrap();
            ctx.scan(&x, &mut out, op, kind).unwrap();
            let want = to_bits(&ctx.dtoh(&out).unwrap());
            for layout in group_layouts(n, gs, random, seed) {
                let m = MultiContext::new(make(layout.len())).unwrap();
                let mut b = m.htod(data, &u64s(&layout)).unwrap();
                m.scan_in_place(&mut b, op, kind).unwrap();
                let got = to_bits(&m.dtoh(&b).unwrap());
                let words = T::WORDS;
                let first = got.iter().zip(&want).position(|(a, b)| a != b);
                assert!(
                    first.is_none() && got.len() == want.len(),
                    "{} {} {} n={n}, layout {layout:?}: element {:?} differs from one context",
                    T::DTYPE,
                    op.name(),
                    kind.name(),
                    first.map(|w| w / words),
                );
            }
        }
    }
}

/// Values over many binades (from `seed`), so that a float sum's rounding depends on its order.
fn spread(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..n)
        .map(|i| rng.random_range(-1.0f32..1.0) * (1 << (i % 23)) as f32)
        .collect()
}

/// f32: [`check_scan_bits_every_layout`] for every scan operator at small sizes, and for the sum
/// at the sizes around a group (one off it each way) and over `groups` groups and a part.
pub fn check_f32_scan_bits_match_one_context(make: &dyn Fn(usize) -> Vec<Context>, groups: usize) {
    let gs = gpu_reduce::multi::scan_group_elems::<f32>() as usize;
    for n in [0, 1, 2, 1000] {
        check_scan_bits_every_layout(make, &spread(n, 1), &Reduction::SCAN, 2, n as u64);
    }
    for n in [gs - 1, gs, gs + 1, groups * gs + 12_345] {
        check_scan_bits_every_layout(make, &spread(n, 2), &[Reduction::Sum], 2, n as u64);
    }
}

/// f64 sums as [`check_f32_scan_bits_match_one_context`]'s.
pub fn check_f64_scan_bits_match_one_context(make: &dyn Fn(usize) -> Vec<Context>, groups: usize) {
    let gs = gpu_reduce::multi::scan_group_elems::<f64>() as usize;
    for n in [1, gs - 1, gs + 1, groups * gs + 777] {
        let d: Vec<f64> = spread(n, 3)
            .iter()
            .map(|&x| x as f64 * 1.000_000_1)
            .collect();
        check_scan_bits_every_layout(make, &d, &[Reduction::Sum], 2, n as u64);
    }
}

/// i64 scans over `groups` groups and a part: every operator one context's bits (exact), and
/// the CPU's values.
pub fn check_int_scan_bits_match_one_context(make: &dyn Fn(usize) -> Vec<Context>, groups: usize) {
    let gs = gpu_reduce::multi::scan_group_elems::<i64>() as usize;
    let n = groups * gs + 3;
    let mut rng = SmallRng::seed_from_u64(43);
    let i: Vec<i64> = (0..n)
        .map(|_| rng.random_range(-1 << 40..1 << 40))
        .collect();
    check_scan_bits_every_layout(make, &i, &[Reduction::Sum, Reduction::Max], 1, 7);
    let m = MultiContext::new(make(3)).unwrap();
    let layout = [gs / 3, gs, n - gs - gs / 3];
    let mut b = m.htod(&i, &u64s(&layout)).unwrap();
    m.scan_in_place(&mut b, Reduction::Sum, ScanKind::Exclusive)
        .unwrap();
    let want = gpu_reduce_tools::cpu::cpu_scan(&i, Reduction::Sum, ScanKind::Exclusive);
    assert_eq!(
        m.dtoh(&b).unwrap(),
        want,
        "i64 exclusive sum, layout {layout:?}"
    );
}

/// One process per rank (threads, each its own context and [`ThreadExchange`]): the same bits
/// as one process holding every rank, and the scan's shards as the single-process scan's.
pub fn check_process_per_rank(make: &dyn Fn(usize) -> Vec<Context>, n: usize) {
    let mut rng = SmallRng::seed_from_u64(9);
    let f: Vec<f32> = (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect();
    let t = tile_elems(n as u64, 4) as usize;
    let layout = vec![t + 5, 0, 3, n - t - 8];
    let world = layout.len();
    let all = MultiContext::new(make(world)).unwrap();
    let b = all.htod(&f, &u64s(&layout)).unwrap();
    let want = all.reduce(&b, Reduction::Sum).unwrap().to_bits();
    let want_max = all.argmax(&b).unwrap();
    let mut scanned = all.htod(&f, &u64s(&layout)).unwrap();
    all.scan_in_place(&mut scanned, Reduction::Sum, ScanKind::Exclusive)
        .unwrap();
    let want_scan = all.dtoh_local(&scanned).unwrap();

    let contexts = make(world);
    let exchanges = ThreadExchange::group(world);
    let offsets: Vec<usize> = layout
        .iter()
        .scan(0, |at, &l| {
            let o = *at;
            *at += l;
            Some(o)
        })
        .collect();
    let results: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = contexts
            .into_iter()
            .zip(exchanges)
            .enumerate()
            .map(|(r, (ctx, ex))| {
                let (f, layout, offsets) = (&f, &layout, &offsets);
                s.spawn(move || {
                    let m = MultiContext::rank(ctx, r, Box::new(ex)).unwrap();
                    let mut b = m.alloc_zeros::<f32>(&u64s(layout)).unwrap();
                    let mine = &f[offsets[r]..offsets[r] + layout[r]];
                    m.htod_local(&[mine], &mut b).unwrap();
                    let sum = m.reduce(&b, Reduction::Sum).unwrap().to_bits();
                    let max = m.argmax(&b).unwrap();
                    m.scan_in_place(&mut b, Reduction::Sum, ScanKind::Exclusive)
                        .unwrap();
                    (sum, max, m.dtoh_local(&b).unwrap().remove(0))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (r, (sum, max, shard)) in results.into_iter().enumerate() {
        assert_eq!(sum, want, "rank {r}'s sum");
        assert_eq!(max, want_max, "rank {r}'s argmax");
        assert!(
            shard
                .iter()
                .zip(&want_scan[r])
                .all(|(a, b)| a.to_bits() == b.to_bits()),
            "rank {r}'s scanned shard"
        );
    }
}

/// The deferred scan (integers) over every layout, operator and kind, in both process models:
/// the offsets applied on `dtoh` and `get` give the CPU's scan of the whole array, the shards
/// hold each shard's own scan, `total` is the whole reduction, and rank 0's offset the identity.
pub fn check_deferred_scans(make: &dyn Fn(usize) -> Vec<Context>, n: usize) {
    let mut rng = SmallRng::seed_from_u64(23);
    let x: Vec<i32> = (0..n).map(|_| rng.random_range(-1000..1000)).collect();
    // Wrapping u64 sums: values near the top of the range overflow.
    let u: Vec<u64> = (0..n).map(|_| rng.random::<u64>()).collect();
    check_deferred_layouts(make, &x);
    check_deferred_layouts(make, &u);

    // One process per rank, over a thread exchange: each rank's shard with its offset.
    let layout = [n / 3, 0, 7, n - n / 3 - 7];
    let world = layout.len();
    let want = gpu_reduce_tools::cpu::cpu_scan(&x, Reduction::Sum, ScanKind::Exclusive);
    let starts: Vec<usize> = (0..world).map(|r| layout[..r].iter().sum()).collect();
    // Per rank: its shard as read back, the total, `get` at its ends, the shard after the
    // offset was applied through `local_shard_mut`.
    type Seen = (Vec<i32>, i32, Vec<i32>, Vec<i32>);
    let results: Vec<Seen> = std::thread::scope(|s| {
        let handles: Vec<_> = make(world)
            .into_iter()
            .zip(ThreadExchange::group(world))
            .enumerate()
            .map(|(r, (ctx, ex))| {
                let (x, starts) = (&x, &starts);
                s.spawn(move || {
                    let m = MultiContext::rank(ctx, r, Box::new(ex)).unwrap();
                    let mut b = m.alloc_zeros::<i32>(&u64s(&layout)).unwrap();
                    m.htod_local(&[&x[starts[r]..starts[r] + layout[r]]], &mut b)
                        .unwrap();
                    let d = m
                        .scan_deferred(&mut b, Reduction::Sum, ScanKind::Exclusive)
                        .unwrap();
                    let ctx = m.local().next().unwrap().1;
                    let own = ctx.dtoh(d.shards().local_shard(0).unwrap()).unwrap();
                    let (at, len) = (starts[r] as u64, layout[r] as u64);
                    let ends: Vec<i32> = if len == 0 {
                        vec![]
                    } else {
                        vec![d.get(at).unwrap(), d.get(at + len - 1).unwrap()]
                    };
                    let shard = d.dtoh_local().unwrap().remove(0);
                    let total = d.total();
                    // The offset applied in place through the writable view: the same values.
                    let offset = d.into_offsets()[r];
                    let applied: Vec<i32> = own.iter().map(|v| v.wrapping_add(offset)).collect();
                    ctx.htod_into(&applied, b.local_shard_mut(0).unwrap())
                        .unwrap();
                    let back = m.dtoh_local(&b).unwrap().remove(0);
                    (shard, total, ends, back)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let total = x.iter().fold(0i32, |a, &v| a.wrapping_add(v));
    for (r, (shard, t, ends, back)) in results.into_iter().enumerate() {
        let mine = &want[starts[r]..starts[r] + layout[r]];
        assert_eq!(shard, mine, "rank {r}'s shard");
        assert_eq!(
            back, mine,
            "rank {r}'s shard, the offset applied in local_shard_mut"
        );
        assert_eq!(t, total, "rank {r}'s total");
        let want_ends: Vec<i32> = match mine {
            [] => vec![],
            [first, .., last] => vec![*first, *last],
            [one] => vec![*one, *one],
        };
        assert_eq!(ends, want_ends, "rank {r}'s first and last elements by get");
    }
}

fn check_deferred_layouts<T>(make: &dyn Fn(usize) -> Vec<Context>, x: &[T])
where
    T: gpu_reduce::multi::ExactElement + PartialEq + std::fmt::Debug,
{
    use gpu_reduce_tools::cpu::cpu_scan;
    for layout in layouts(x.len()) {
        let m = MultiContext::new(make(layout.len())).unwrap();
        for op in Reduction::SCAN {
            for kind in ScanKind::ALL {
                let what = format!("{} {} layout {layout:?}", op.name(), kind.name());
                let want = cpu_scan(x, op, kind);
                let mut b = m.htod(x, &u64s(&layout)).unwrap();
                let d = m.scan_deferred(&mut b, op, kind).unwrap();
                assert_eq!(d.dtoh().unwrap(), want, "{what}");
                let inclusive = cpu_scan(x, op, ScanKind::Inclusive);
                assert_eq!(d.total(), *inclusive.last().unwrap(), "total, {what}");
                // Every offset: the inclusive scan just before the shard (empty shards too).
                let identity = op.identity::<T>().unwrap();
                let mut at = 0;
                let mut offsets = Vec::new();
                for l in &layout {
                    offsets.push(if at == 0 { identity } else { inclusive[at - 1] });
                    at += l;
                }
                assert_eq!(d.offsets(), offsets, "offsets, {what}");
                // Each shard holds its own scan, as if it were the whole array, through the
                // copies and through its device view; `get` at each shard's ends.
                let local = m.dtoh_local(d.shards()).unwrap();
                let mut at = 0;
                for ((r, l), (_, ctx)) in layout.iter().enumerate().zip(m.local()) {
                    let own = cpu_scan(&x[at..at + l], op, kind);
                    assert_eq!(local[r], own, "shard {r}, {what}");
                    let v = d.shards().local_shard(r).unwrap();
                    assert_eq!(ctx.dtoh(v).unwrap(), own, "shard {r}'s view, {what}");
                    if *l > 0 {
                        for i in [at, at + l - 1] {
                            assert_eq!(d.get(i as u64).unwrap(), want[i], "element {i}, {what}");
                        }
                    }
                    at += l;
                }
            }
        }
    }
}

/// Clear errors: a layout of the wrong rank count, a buffer of another handle, a bitwise
/// operator on floats, data of the wrong length, the same GPU twice.
pub fn check_errors(make: &dyn Fn(usize) -> Vec<Context>) {
    let m = MultiContext::new(make(2)).unwrap();
    let other = MultiContext::new(make(2)).unwrap();
    let e = m.alloc_zeros::<f32>(&[1, 2, 3]).unwrap_err();
    assert!(
        matches!(
            &e,
            Error::LengthMismatch {
                expected: 2,
                got: 3,
                ..
            }
        ) && e.to_string().contains("shard lengths"),
        "{e}"
    );
    let b = other.alloc_zeros::<f32>(&[1, 2]).unwrap();
    let e = m.reduce(&b, Reduction::Sum).unwrap_err();
    assert!(
        matches!(&e, Error::MultiGpu(s) if s.contains("another")),
        "{e}"
    );
    let b = m.alloc_zeros::<f32>(&[1, 2]).unwrap();
    let e = m.reduce(&b, Reduction::Xor).unwrap_err();
    assert!(
        matches!(&e, Error::Unsupported { dtype: "f32", .. }) && e.to_string().contains("integers"),
        "{e}"
    );
    let e = m.htod(&[1.0f32; 4], &[1, 2]).unwrap_err();
    assert!(
        matches!(
            &e,
            Error::LengthMismatch {
                expected: 3,
                got: 4,
                ..
            }
        ) && e.to_string().contains("add up to"),
        "{e}"
    );
    let e = MultiContext::new(Vec::new()).unwrap_err();
    assert!(
        matches!(&e, Error::MultiGpu(s) if s.contains("at least one context")),
        "{e}"
    );
    // An empty array reduces to the identity; argmin finds nothing.
    let b = m.alloc_zeros::<i32>(&[0, 0]).unwrap();
    assert_eq!(m.reduce(&b, Reduction::Sum).unwrap(), 0);
    assert_eq!(m.argmin(&b).unwrap(), None);
}

/// `ranks` simulated devices.
pub fn sims(ranks: usize) -> Vec<Context> {
    (0..ranks).map(|_| crate::sim()).collect()
}

/// `ranks` contexts on the GPUs present, rank `r` on device `r mod count` (two ranks share a
/// GPU on a one-GPU machine: the sharding logic runs on real kernels all the same).
pub fn gpus(ranks: usize) -> Vec<Context> {
    let count = gpu_reduce::device_count().expect("GPU test run without a usable GPU");
    assert!(count > 0, "GPU test run without a usable GPU");
    (0..ranks)
        .map(|r| Context::new(r % count).expect("a context on a present GPU"))
        .collect()
}

/// NCCL, one process per rank (here one rank; NCCL refuses two ranks on one GPU): with NCCL
/// loadable, an [`NcclExchange`] rank gives the same bits as the single-process handle, for the
/// sum, the argmax and the scan. Without NCCL, the clear error. Returns which branch ran.
pub fn check_nccl_one_rank(ctx: impl Fn() -> Context) -> &'static str {
    use gpu_reduce::multi::nccl::{NcclExchange, NcclId};
    assert!(matches!(
        NcclId::from_hex("zz"),
        Err(Error::MultiGpu(ref s)) if s.contains("256 hex digits")
    ));
    let id = match NcclId::new() {
        Ok(id) => id,
        Err(e) => {
            assert!(
                matches!(&e, Error::Collective(s) if s.contains("NCCL could not be loaded")),
                "{e}"
            );
            return "NCCL missing: the clear error checked";
        }
    };
    let again = NcclId::from_hex(&id.to_hex()).unwrap();
    assert_eq!(again.to_hex(), id.to_hex());
    let c = ctx();
    if c.backend_kind() == gpu_reduce::BackendKind::Sim {
        let e = NcclExchange::new(&c, 0, 1, id)
            .err()
            .expect("the simulator has no NCCL");
        assert!(
            matches!(&e, Error::UnsupportedOnBackend { .. }) && e.to_string().contains("CUDA"),
            "{e}"
        );
        return "NCCL present, simulator: the clear error checked";
    }
    let n = 3_000_017;
    let mut rng = SmallRng::seed_from_u64(21);
    let f: Vec<f32> = (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect();
    let single = MultiContext::new(vec![ctx()]).unwrap();
    let b = single.htod(&f, &[n as u64]).unwrap();
    let want = single.reduce(&b, Reduction::Sum).unwrap().to_bits();
    let ex = NcclExchange::new(&c, 0, 1, id).unwrap();
    let m = MultiContext::rank(c, 0, Box::new(ex)).unwrap();
    let mut b = m.alloc_zeros::<f32>(&[n as u64]).unwrap();
    m.htod_local(&[&f], &mut b).unwrap();
    assert_eq!(m.reduce(&b, Reduction::Sum).unwrap().to_bits(), want);
    let mut b1 = single.htod(&f, &[n as u64]).unwrap();
    assert_eq!(m.argmax(&b).unwrap(), single.argmax(&b1).unwrap());
    single
        .scan_in_place(&mut b1, Reduction::Sum, ScanKind::Inclusive)
        .unwrap();
    m.scan_in_place(&mut b, Reduction::Sum, ScanKind::Inclusive)
        .unwrap();
    let x = single.dtoh(&b1).unwrap();
    let y = m.dtoh_local(&b).unwrap().remove(0);
    assert!(x.iter().zip(&y).all(|(p, q)| p.to_bits() == q.to_bits()));
    "NCCL present: one rank checked"
}

/// NCCL across the GPUs present, one thread per rank (each its own context and communicator,
/// as separate processes would be): the same bits as one process holding every rank, for the
/// sum and the scan. Needs two GPUs and NCCL (a `*two_gpus` test); returns what ran.
pub fn check_nccl_threads() -> String {
    use gpu_reduce::multi::nccl::{NcclExchange, NcclId};
    let world = gpu_reduce::device_count().expect("the CUDA driver starts");
    assert!(
        world >= 2,
        "a *two_gpus test run with {world} GPU (the runners skip it there)"
    );
    let id = NcclId::new().expect("NCCL for a multi-GPU NCCL test");
    let n = 5_000_011;
    let mut rng = SmallRng::seed_from_u64(31);
    let f: Vec<f32> = (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect();
    let t = tile_elems(n as u64, 4) as usize;
    let mut layout = vec![n / world; world];
    layout[0] = n / world + t / 2 + 1; // a boundary inside a tile
    let last = n - layout[..world - 1].iter().sum::<usize>();
    layout[world - 1] = last;
    let all = MultiContext::new((0..world).map(|r| Context::new(r).unwrap()).collect()).unwrap();
    let b = all.htod(&f, &u64s(&layout)).unwrap();
    let want = all.reduce(&b, Reduction::Sum).unwrap().to_bits();
    let mut s = all.htod(&f, &u64s(&layout)).unwrap();
    all.scan_in_place(&mut s, Reduction::Sum, ScanKind::Inclusive)
        .unwrap();
    let want_scan = all.dtoh_local(&s).unwrap();
    let offsets: Vec<usize> = layout
        .iter()
        .scan(0, |at, &l| {
            *at += l;
            Some(*at - l)
        })
        .collect();
    std::thread::scope(|sc| {
        let hs: Vec<_> = (0..world)
            .map(|r| {
                let (f, layout, offsets, want_scan) = (&f, &layout, &offsets, &want_scan);
                sc.spawn(move || {
                    let ctx = Context::new(r).unwrap();
                    let ex = NcclExchange::new(&ctx, r, world, id).unwrap();
                    let m = MultiContext::rank(ctx, r, Box::new(ex)).unwrap();
                    let mut b = m.alloc_zeros::<f32>(&u64s(layout)).unwrap();
                    m.htod_local(&[&f[offsets[r]..offsets[r] + layout[r]]], &mut b)
                        .unwrap();
                    assert_eq!(
                        m.reduce(&b, Reduction::Sum).unwrap().to_bits(),
                        want,
                        "rank {r}"
                    );
                    m.scan_in_place(&mut b, Reduction::Sum, ScanKind::Inclusive)
                        .unwrap();
                    let got = m.dtoh_local(&b).unwrap().remove(0);
                    assert!(
                        got.iter()
                            .zip(&want_scan[r])
                            .all(|(p, q)| p.to_bits() == q.to_bits()),
                        "rank {r}'s scan"
                    );
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
    });
    format!("NCCL across {world} GPUs: layout {layout:?} checked")
}

/// `fill` on the devices (4- and 8-byte elements) and `get` of single elements: ones scanned
/// give 1, 2, 3, … across shard boundaries; f64 fills keep every bit.
pub fn check_fill_and_get(make: &dyn Fn(usize) -> Vec<Context>) {
    let m = MultiContext::new(make(3)).unwrap();
    let layout = [5000, 1, 7001];
    let mut b = m.alloc_zeros::<i32>(&u64s(&layout)).unwrap();
    m.fill(&mut b, 1).unwrap();
    assert_eq!(m.reduce(&b, Reduction::Sum).unwrap(), 12_002);
    m.scan_in_place(&mut b, Reduction::Sum, ScanKind::Inclusive)
        .unwrap();
    for i in [0, 4999, 5000, 5001, 12_001] {
        assert_eq!(m.get(&b, i).unwrap(), i as i32 + 1, "element {i}");
    }
    assert!(m.get(&b, 12_002).is_err());
    let mut d = m.alloc_zeros::<f64>(&u64s(&layout)).unwrap();
    let v = -1.0f64 / 3.0;
    m.fill(&mut d, v).unwrap();
    assert!(
        m.dtoh(&d)
            .unwrap()
            .iter()
            .all(|x| x.to_bits() == v.to_bits())
    );
    let mut u = m.alloc_zeros::<u64>(&u64s(&layout)).unwrap();
    m.fill(&mut u, 0x0123_4567_89ab_cdef).unwrap();
    assert_eq!(m.get(&u, 5000).unwrap(), 0x0123_4567_89ab_cdef);
}
