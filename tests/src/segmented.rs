//! Segmented reductions against CPU references: every operator and type, segment lengths at
//! the warp/block/tile boundaries, empty and huge segments, CSR and begin/end offsets, fixed
//! rows, argmin/argmax first occurrence and NaN, determinism across grids, bad input.
//!
//! The reference is a CPU model of the kernel's combining order (a function of the segment
//! length alone, `kernels::reduce::segmented`), run with the same `kernels::ops` operators, so
//! results are compared bit for bit, floats included; integer and min/max results are also
//! checked against order-free references, float sums against an f64 sum.

use gpu_reduce::kernels::ops::{ArgAcc, ArgMax, ArgMin, Max, Min, Product, ReduceOp, Sum};
use gpu_reduce::kernels::reduce::policy::SEGMENTED;
use gpu_reduce::kernels::reduce::segmented::{
    BLOCK, CHUNK_VECS, LISTED_MAX, WARP_MAX, tiles_items,
};
use gpu_reduce::kernels::scan::policy::ACTIVE;
use gpu_reduce::{Context, Error, Reduction, SegmentedElement, Segments};
use rand::{Rng, SeedableRng, rngs::SmallRng};

use crate::reductions::TestElem;

/// A type the segmented tests run on.
pub trait SegElem: TestElem + SegmentedElement {}
impl<T: TestElem + SegmentedElement> SegElem for T {}

/// The kernel's warp path: lane `l` folds elements `l, l + 32, ...` in order.
fn lane_fold<T: SegElem, O: ReduceOp<T>>(x: &[T], lane: usize) -> O::Acc {
    x.iter()
        .enumerate()
        .skip(lane)
        .step_by(32)
        .fold(O::identity(), |a, (i, &v)| {
            O::combine(a, O::lift(v, i as u64))
        })
}

/// `warp_reduce`'s butterfly (lane masks 16 … 1, lower lane on the left): lane 0's result.
fn butterfly<A: Copy>(mut v: Vec<A>, op: impl Fn(A, A) -> A) -> A {
    assert_eq!(v.len(), 32);
    let mut off = 16;
    while off > 0 {
        v = (0..32)
            .map(|l| {
                if l & off == 0 {
                    op(v[l], v[l ^ off])
                } else {
                    op(v[l ^ off], v[l])
                }
            })
            .collect();
        off >>= 1;
    }
    v[0]
}

/// `block_reduce` over BLOCK threads: each warp's butterfly, then warp 0's over the totals.
fn block_model<A: Copy>(v: Vec<A>, identity: A, op: impl Fn(A, A) -> A + Copy) -> A {
    let mut totals: Vec<A> = v.chunks(32).map(|c| butterfly(c.to_vec(), op)).collect();
    totals.resize(32, identity);
    butterfly(totals, op)
}

/// The kernel's result for one segment that starts `start` elements into a 16-byte-aligned
/// input, in its exact combining order: the warp path, or the head/vectors/tail cut into
/// chunks (each a block reduction of per-thread folds), whose partials thread `j` folds
/// `j, j + BLOCK, ...` before a last block reduction.
pub fn model<T: SegElem, O: ReduceOp<T>>(seg: &[T], start: usize) -> O::Acc {
    let len = seg.len();
    if len as u64 <= WARP_MAX {
        let lanes = (0..32).map(|l| lane_fold::<T, O>(seg, l)).collect();
        return butterfly(lanes, O::combine);
    }
    let size = std::mem::size_of::<T>();
    let per_vec = 16 / size;
    let misalign = (start * size) % 16 / size;
    let head = if misalign == 0 {
        0
    } else {
        (per_vec - misalign).min(len)
    };
    let vectors = (len - head) / per_vec;
    let chunk = CHUNK_VECS as usize;
    // Whole chunks, the last taking a remainder of at most half a chunk (`chunks_of`).
    let chunks = vectors.saturating_sub(chunk / 2).div_ceil(chunk).max(1);
    let tail_start = head + vectors * per_vec;
    let block = BLOCK as usize;
    let lift = |i: usize| O::lift(seg[i], i as u64);
    let vec_acc = |v: usize| {
        let f = head + v * per_vec;
        if per_vec == 4 {
            O::combine(
                O::combine(lift(f), lift(f + 1)),
                O::combine(lift(f + 2), lift(f + 3)),
            )
        } else {
            O::combine(lift(f), lift(f + 1))
        }
    };
    let parts: Vec<O::Acc> = (0..chunks)
        .map(|c| {
            let hi = if c + 1 == chunks {
                vectors
            } else {
                (c + 1) * chunk
            };
            let v = (0..block)
                .map(|j| {
                    let mut acc = O::identity();
                    if c == 0 && j < head {
                        acc = O::combine(acc, lift(j));
                    }
                    let mut v = c * chunk + j;
                    while v < hi {
                        acc = O::combine(acc, vec_acc(v));
                        v += block;
                    }
                    if c == chunks - 1 && j < len - tail_start {
                        acc = O::combine(acc, lift(tail_start + j));
                    }
                    acc
                })
                .collect();
            block_model(v, O::identity(), O::combine)
        })
        .collect();
    if chunks == 1 {
        return parts[0];
    }
    let accs = (0..block)
        .map(|j| {
            parts
                .iter()
                .skip(j)
                .step_by(block)
                .fold(O::identity(), |a, &p| O::combine(a, p))
        })
        .collect();
    block_model(accs, O::identity(), O::combine)
}

// The tiles form's pair and its segmented operator, the kernels' own (the model's order is
// what it checks, not the operator).
use gpu_reduce::kernels::reduce::by_key::counted;
use gpu_reduce::kernels::scan::Headed;

/// `a ⊕ b` where `a` may be absent (`kernels::reduce::by_key::then`).
fn then<T: SegElem, O: ReduceOp<T, Acc = T>>(a: Option<Headed<T>>, b: Headed<T>) -> Headed<T> {
    match a {
        Some(a) => counted::<T, O>(a, b),
        None => b,
    }
}

/// `warp_reduce_rev`'s butterfly (masks 1 … 16, higher lane on the left): lane 0's result.
fn butterfly_rev<A: Copy>(mut v: Vec<A>, op: impl Fn(A, A) -> A) -> A {
    let mut off = 1;
    while off < 32 {
        v = (0..32)
            .map(|l| {
                if l & off == 0 {
                    op(v[l ^ off], v[l])
                } else {
                    op(v[l], v[l ^ off])
                }
            })
            .collect();
        off <<= 1;
    }
    v[0]
}

/// The tiles form's results over sorted CSR `offsets` (`kernels::reduce::segmented::tiles`),
/// in its exact combining order: tiles of `BLOCK` threads × `tiles_items` elements, each
/// thread's fold after its last boundary, the warps' inclusive scans (Kogge-Stone) of the
/// pairs, the warps' totals folded in order, the value carried into a tile in windows of 32
/// tile aggregates (`butterfly_rev`, windows right to left), then each thread's walk.
pub fn tiles_model<T: SegElem, O: ReduceOp<T, Acc = T>>(data: &[T], offsets: &[u64]) -> Vec<T> {
    const NO: u32 = u32::MAX;
    const GAP: u32 = u32::MAX - 1;
    let (n, k) = (data.len(), offsets.len() - 1);
    let items = tiles_items(std::mem::size_of::<T>() as u64) as usize;
    let block = ACTIVE.block as usize;
    let te = block * items;
    let mut out = vec![O::identity(); k];
    let mut label = vec![NO; n];
    for (i, &at) in offsets.iter().enumerate() {
        let l = if i == k {
            GAP
        } else if offsets[i + 1] == at {
            continue;
        } else {
            i as u32
        };
        if (at as usize) < n {
            label[at as usize] = l;
        }
    }
    let id = Headed {
        head: 0,
        value: O::identity(),
    };
    let tiles = n.div_ceil(te);
    // Per tile: each thread's pair, its warp's inclusive scan, the tile's aggregate.
    struct Tile<T> {
        incl: Vec<Headed<T>>,
        before_warp: Vec<Option<Headed<T>>>,
        aggregate: Headed<T>,
    }
    let mut tile_data = Vec::with_capacity(tiles);
    for t in 0..tiles {
        let mut pairs = vec![id; block];
        for (j, pair) in pairs.iter_mut().enumerate() {
            let first = t * te + j * items;
            let valid = n.saturating_sub(first).min(items);
            let mut acc = O::identity();
            let mut heads = 0;
            for e in 0..valid {
                let head = label[first + e] != NO;
                heads += head as u32;
                acc = if e == 0 || head {
                    data[first + e]
                } else {
                    O::combine(acc, data[first + e])
                };
            }
            if valid > 0 {
                *pair = Headed {
                    head: heads,
                    value: acc,
                };
            }
        }
        let mut incl = pairs.clone();
        for w in 0..block / 32 {
            let mut d = 1;
            while d < 32 {
                let old = incl[w * 32..w * 32 + 32].to_vec();
                for l in d..32 {
                    incl[w * 32 + l] = counted::<T, O>(old[l - d], old[l]);
                }
                d <<= 1;
            }
        }
        let mut before_warp = vec![None; block / 32];
        let mut aggregate = incl[31];
        for w in 1..block / 32 {
            before_warp[w] = Some(aggregate);
            aggregate = counted::<T, O>(aggregate, incl[w * 32 + 31]);
        }
        tile_data.push(Tile {
            incl,
            before_warp,
            aggregate,
        });
    }
    for t in 0..tiles {
        let start = t * te;
        let last_tile = start + te >= n;
        let Tile {
            incl,
            before_warp,
            aggregate,
        } = &tile_data[t];
        let carry = if t > 0 && (aggregate.head != 0 || last_tile) {
            let mut end = t;
            let mut carry: Option<Headed<T>> = None;
            loop {
                let valid = |l: usize| end > l;
                let heads: Vec<bool> = (0..32)
                    .map(|l| !valid(l) || tile_data[end - 1 - l].aggregate.head != 0)
                    .collect();
                let stop = heads.iter().position(|&h| h).unwrap_or(31);
                let mine: Vec<Headed<T>> = (0..32)
                    .map(|l| {
                        if l <= stop && valid(l) {
                            tile_data[end - 1 - l].aggregate
                        } else {
                            id
                        }
                    })
                    .collect();
                let window = butterfly_rev(mine, counted::<T, O>);
                let c = match carry {
                    Some(later) => counted::<T, O>(window, later),
                    None => window,
                };
                if heads.iter().any(|&h| h) {
                    break c.value;
                }
                carry = Some(c);
                end -= 32;
            }
        } else {
            O::identity()
        };
        // The segment running into the tile: lo - 1 when good and non-empty.
        let lo = if t == 0 {
            0
        } else {
            offsets.partition_point(|&o| o < start as u64)
        };
        let open = if lo >= 1 && lo <= k && offsets[lo - 1] < offsets[lo] && offsets[lo] <= n as u64
        {
            (lo - 1) as u32
        } else {
            GAP
        };
        let mut running = open;
        for j in 0..block {
            let first = start + j * items;
            let valid = n.saturating_sub(first).min(items);
            if valid == 0 {
                break;
            }
            let (w, l) = (j / 32, j % 32);
            let mut before = (t > 0).then_some(Headed {
                head: 0,
                value: carry,
            });
            if let Some(b) = before_warp[w] {
                before = Some(then::<T, O>(before, b));
            }
            if l > 0 {
                before = Some(then::<T, O>(before, incl[j - 1]));
            }
            let mut acc = before.map_or(O::identity(), |b| b.value);
            for e in 0..valid {
                let lab = label[first + e];
                if lab != NO {
                    if running != GAP {
                        out[running as usize] = acc;
                    }
                    running = lab;
                    acc = data[first + e];
                } else {
                    acc = O::combine(acc, data[first + e]);
                }
            }
            if first + items >= n && running != GAP {
                out[running as usize] = acc;
            }
        }
    }
    out
}

/// Model of built-in `op` (Sum/Product/Min/Max by the model, bitwise by order-free folds).
fn model_op<T: SegElem>(seg: &[T], start: usize, op: Reduction) -> Option<T> {
    Some(match op {
        Reduction::Sum => model::<T, Sum>(seg, start),
        Reduction::Product => model::<T, Product>(seg, start),
        Reduction::Min => model::<T, Min>(seg, start),
        Reduction::Max => model::<T, Max>(seg, start),
        _ => return T::bitwise(seg, op),
    })
}

/// Order-free references: integers exactly (wrapping), float min/max exactly, float sums
/// within a loose bound of an f64 sum.
fn independent_check<T: SegElem>(seg: &[T], op: Reduction, got: T, tag: &str) {
    match op {
        Reduction::Sum if !T::IS_FLOAT => assert_eq!(got, T::wrapping_sum(seg), "{tag}"),
        Reduction::Product if !T::IS_FLOAT => assert_eq!(got, T::wrapping_product(seg), "{tag}"),
        Reduction::Sum => {
            let exact: f64 = seg.iter().map(|x| x.to_f64()).sum();
            if exact.is_finite() {
                let abs: f64 = seg.iter().map(|x| x.to_f64().abs()).sum();
                let bound = 64.0 * T::EPS * abs + 1e-30;
                assert!(
                    (got.to_f64() - exact).abs() <= bound,
                    "{tag}: {got:?} vs {exact}"
                );
            }
        }
        Reduction::Min | Reduction::Max => {
            let max = op == Reduction::Max;
            let want = arg_ref(seg, max).1;
            assert_eq!(got.bits(), want.bits(), "{tag}: {got:?} vs {want:?}");
        }
        _ => {}
    }
}

/// First occurrence of the min (max), NaN winning; empty: (u64::MAX, identity).
fn arg_ref<T: SegElem>(seg: &[T], max: bool) -> (u64, T) {
    if let Some(i) = seg.iter().position(|x| x.to_f64().is_nan()) {
        return (i as u64, seg[i]);
    }
    let mut best: Option<(usize, T)> = None;
    for (i, &x) in seg.iter().enumerate() {
        let better = match best {
            None => true,
            Some((_, b)) => {
                // total order: -0.0 < +0.0, as the kernels order them (NaN handled above).
                let (a, c) = if max { (b, x) } else { (x, b) };
                T::total_lt(a, c)
            }
        };
        if better {
            best = Some((i, x));
        }
    }
    match best {
        Some((i, x)) => (i as u64, x),
        None => (u64::MAX, if max { T::MAX_ID } else { T::MIN_ID }),
    }
}

/// Data for operator `op`: values near one for products, random otherwise.
fn data_for<T: SegElem>(n: usize, op: Reduction, seed: u64) -> Vec<T> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            if op == Reduction::Product {
                T::near_one(&mut rng)
            } else {
                T::random(&mut rng)
            }
        })
        .collect()
}

/// Run every operator of `T` (and argmin/argmax) over the segments `ranges` of `data` given
/// as begin/end offsets, and check each segment bit for bit against the model.
pub fn check_ranges<T: SegElem>(ctx: &Context, ranges: &[(usize, usize)], n: usize, what: &str) {
    let k = ranges.len();
    let begin: Vec<u64> = ranges.iter().map(|r| r.0 as u64).collect();
    let end: Vec<u64> = ranges.iter().map(|r| r.1 as u64).collect();
    let (db, de) = (ctx.htod(&begin).unwrap(), ctx.htod(&end).unwrap());
    for (oi, op) in Reduction::ALL.into_iter().enumerate() {
        let data: Vec<T> = data_for(n, op, 7 + oi as u64);
        let x = ctx.htod(&data).unwrap();
        let mut out = ctx.alloc_zeros::<T>(k).unwrap();
        let r = ctx.segmented_reduce(&x, Segments::offsets(&db, &de), &mut out, op);
        if T::segmented_kernel(op).is_none() {
            assert!(
                matches!(r, Err(Error::Unsupported { .. })),
                "{} {}",
                op.name(),
                T::DTYPE
            );
            continue;
        }
        r.unwrap();
        let got = ctx.dtoh(&out).unwrap();
        for (s, &(b, e)) in ranges.iter().enumerate() {
            let seg = &data[b..e];
            let tag = format!("{}/{}/{what}/segment {s} ({b}..{e})", T::DTYPE, op.name());
            let want = model_op(seg, b, op).unwrap();
            assert_eq!(
                got[s].bits(),
                want.bits(),
                "{tag}: {:?} vs {want:?}",
                got[s]
            );
            independent_check(seg, op, got[s], &tag);
        }
    }
    let data: Vec<T> = crate::reductions::data(n, 99, true);
    let x = ctx.htod(&data).unwrap();
    for max in [false, true] {
        let mut ix = ctx.alloc_zeros::<u64>(k).unwrap();
        let mut v = ctx.alloc_zeros::<T>(k).unwrap();
        let segs = Segments::offsets(&db, &de);
        if max {
            ctx.segmented_argmax(&x, segs, &mut ix, &mut v).unwrap();
        } else {
            ctx.segmented_argmin(&x, segs, &mut ix, &mut v).unwrap();
        }
        let (ix, v) = (ctx.dtoh(&ix).unwrap(), ctx.dtoh(&v).unwrap());
        for (s, &(b, e)) in ranges.iter().enumerate() {
            let seg = &data[b..e];
            let m: ArgAcc<T> = if max {
                model::<T, ArgMax>(seg, b)
            } else {
                model::<T, ArgMin>(seg, b)
            };
            let tag = format!(
                "{}/arg{}/{what}/segment {s} ({b}..{e})",
                T::DTYPE,
                if max { "max" } else { "min" }
            );
            assert_eq!(
                (ix[s], v[s].bits()),
                (m.index, m.value.bits()),
                "{tag} (model)"
            );
            let (ri, rv) = arg_ref(seg, max);
            assert_eq!((ix[s], v[s].bits()), (ri, rv.bits()), "{tag} (reference)");
        }
    }
}

/// Segments at the warp/block/chunk boundaries ±1 (and empty ones) back to back, so they
/// start at every alignment, plus overlapping and out-of-order begin/end segments, for one
/// type.
pub fn check_boundary_lengths<T: SegElem>(ctx: &Context) {
    // Elements per chunk of this type (several-chunk segments go through the work list).
    let c = CHUNK_VECS as usize * 16 / std::mem::size_of::<T>();
    let lens = [
        0usize,
        1,
        2,
        31,
        32,
        33,
        63,
        64,
        65,
        255,
        256,
        257,
        511,
        512,
        513,
        1023,
        1024,
        1025,
        4095,
        4096,
        4097,
        8191,
        8193,
        0,
        0,
        3,
        0,
        c - 1,
        c,
        c + 1,
        c + 3,
        // Around the half chunk that decides whether the remainder gets a chunk of its own.
        c + c / 2 - 5,
        c + c / 2,
        c + c / 2 + 5,
        2 * c + 5,
        2 * c + c / 2 + 9,
        7,
    ];
    let mut ranges = vec![];
    let mut at = 0;
    for &l in &lens {
        ranges.push((at, at + l));
        at += l;
    }
    let n = at;
    // Overlapping and reversed order: the whole input, and segments counted from the end.
    ranges.push((0, n));
    ranges.push((n - 300, n));
    ranges.push((5, 2000));
    ranges.push((n, n));
    check_ranges::<T>(ctx, &ranges, n, "boundaries");
}

/// [`check_boundary_lengths`] for every type.
pub fn check_boundary_lengths_every_type(ctx: &Context) {
    check_boundary_lengths::<i32>(ctx);
    check_boundary_lengths::<u32>(ctx);
    check_boundary_lengths::<i64>(ctx);
    check_boundary_lengths::<u64>(ctx);
    check_boundary_lengths::<f32>(ctx);
    check_boundary_lengths::<f64>(ctx);
}

/// Random lengths (mostly short, some medium, a few long, many empty) through CSR offsets,
/// given both as `offsets` (k + 1) and as the `offsets[..k]` / `offsets[1..]` views.
pub fn check_csr_mixed<T: SegElem>(ctx: &Context, k: usize, seed: u64) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut offsets = vec![0u64];
    for _ in 0..k {
        let l = match rng.random_range(0..10) {
            0..=3 => 0,
            4..=7 => rng.random_range(1..64),
            8 => rng.random_range(64..2000),
            _ => rng.random_range(2000..12_000),
        };
        offsets.push(offsets.last().unwrap() + l);
    }
    check_csr::<T>(ctx, &offsets, seed);
}

/// Short lengths (0..=40, a few of 41..=3000): CSR offsets of this mean length go by tiles,
/// checked against the tile model (sums) and the model (min, max) as [`check_csr_mixed`]
/// checks them.
pub fn check_csr_short<T: SegElem>(ctx: &Context, k: usize, seed: u64) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut offsets = vec![0u64];
    for _ in 0..k {
        let l = if rng.random_range(0..200) == 0 {
            rng.random_range(41..=3000)
        } else {
            rng.random_range(0..=40)
        };
        offsets.push(offsets.last().unwrap() + l);
    }
    let n = *offsets.last().unwrap();
    assert!(
        n <= k as u64 * SEGMENTED.tiles_max_average,
        "not short enough to go by tiles"
    );
    check_csr::<T>(ctx, &offsets, seed);
}

/// The tiles form at its edges, against the tile model (sums) and the model (min, max): an
/// unaligned view of the input (tiles copied element by element), elements before the first
/// offset and after the last one (in no segment), and a segment of 150,000 elements (its carry
/// gathered over more than 32 tiles, two windows).
pub fn check_tiles_edges<T: SegElem>(ctx: &Context, seed: u64) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut offsets = vec![37u64];
    for s in 0..20_000 {
        let l = if s == 7_000 {
            150_000
        } else {
            rng.random_range(0..=24)
        };
        offsets.push(offsets.last().unwrap() + l);
    }
    let n = *offsets.last().unwrap() as usize + 53;
    let k = offsets.len() - 1;
    assert!(n as u64 <= k as u64 * SEGMENTED.tiles_max_average);
    // One element more in the buffer: the view from element 1 starts off the 16-byte grid.
    let all: Vec<T> = data_for(n + 1, Reduction::Sum, seed);
    let data = &all[1..];
    let buf = ctx.htod(&all).unwrap();
    let x = buf.view(1..).unwrap();
    let off = ctx.htod(&offsets).unwrap();
    let sums = tiles_model::<T, Sum>(data, &offsets);
    for op in [Reduction::Sum, Reduction::Min, Reduction::Max] {
        let mut out = ctx.alloc_zeros::<T>(k).unwrap();
        ctx.segmented_reduce(x, Segments::csr(&off), &mut out, op)
            .unwrap();
        let got = ctx.dtoh(&out).unwrap();
        for s in 0..k {
            let seg = &data[offsets[s] as usize..offsets[s + 1] as usize];
            let tag = format!(
                "{}/{}/tiles edges segment {s} (len {})",
                T::DTYPE,
                op.name(),
                seg.len()
            );
            let want = if op == Reduction::Sum {
                sums[s]
            } else {
                model_op(seg, offsets[s] as usize, op).unwrap()
            };
            assert_eq!(got[s].bits(), want.bits(), "{tag}");
            independent_check(seg, op, got[s], &tag);
        }
    }
}

/// Unsorted CSR offsets over enough tiles for the tiles form's bounds pass (1,954 tiles: more
/// than a GPU of up to 390 SMs runs at once): the call returns, the check names the lowest bad
/// segment, bad segments get the identity and nothing is written past the output. Segments far
/// from the bad offsets are promised nothing, but today's kernel sums them (a wrong tile range
/// from the bounds pass would show there).
pub fn check_tiles_unsorted(ctx: &Context) {
    let (n, k) = (8_000_000usize, 800_000usize);
    let mut offsets: Vec<u64> = (0..=k as u64).map(|s| s * 10).collect();
    offsets[100_001] = offsets[100_000] - 5; // segment 100,000 decreasing
    offsets[200_000] = n as u64 + 7; // 199,999 past the end, 200,000 decreasing
    let x = ctx.htod(&vec![1.0f32; n]).unwrap();
    let off = ctx.htod(&offsets).unwrap();
    // Two guard elements past the output: never written.
    let mut out = ctx.htod(&vec![7.0f32; k + 2]).unwrap();
    let check = ctx.offset_check().unwrap();
    ctx.segmented_reduce(
        &x,
        Segments::csr(&off).check_later(&check),
        out.view_mut(..k).unwrap(),
        Reduction::Sum,
    )
    .unwrap();
    expect_invalid(
        ctx.take_offset_check(&check),
        "segment 100000: its end offset is before",
    );
    let got = ctx.dtoh(&out).unwrap();
    for s in [100_000, 199_999, 200_000] {
        assert_eq!(got[s], 0.0, "bad segment {s}");
    }
    for s in (0..99_000).chain(202_000..k).step_by(997) {
        assert_eq!(got[s], 10.0, "segment {s}, far from the bad offsets");
    }
    assert_eq!(got[k..], [7.0, 7.0], "written past the output");
}

/// Lengths of 0..=300: a quarter of 1..=64, most of 160..=256 (the staged windows' packs and
/// warps, many segments a window; a mean above the tiles form's): every result against the
/// warp's order (the model), bit for bit, as [`check_csr_mixed`] checks it.
pub fn check_csr_medium<T: SegElem>(ctx: &Context, k: usize, seed: u64) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut offsets = vec![0u64];
    for _ in 0..k {
        let l = match rng.random_range(0..20) {
            0 => 0,
            1 => rng.random_range(257..=300),
            2..=6 => rng.random_range(1..=64),
            _ => rng.random_range(160..=256),
        };
        offsets.push(offsets.last().unwrap() + l);
    }
    let n = *offsets.last().unwrap();
    assert!(
        n > k as u64 * SEGMENTED.tiles_max_average,
        "too short to go by the staged windows"
    );
    check_csr::<T>(ctx, &offsets, seed);
}

/// Sum, max, argmax over CSR `offsets` (given also as begin/end views and checked later):
/// every segment's bits the model's.
fn check_csr<T: SegElem>(ctx: &Context, offsets: &[u64], seed: u64) {
    let k = offsets.len() - 1;
    let n = *offsets.last().unwrap() as usize;
    let data: Vec<T> = data_for(n, Reduction::Sum, seed);
    let (x, off) = (ctx.htod(&data).unwrap(), ctx.htod(offsets).unwrap());
    let by_tiles = n > 0 && n as u64 <= k as u64 * SEGMENTED.tiles_max_average;
    let tiles_sum = tiles_model::<T, Sum>(&data, offsets);
    for op in [Reduction::Sum, Reduction::Max, Reduction::Min] {
        let mut a = ctx.alloc_zeros::<T>(k).unwrap();
        let mut b = ctx.alloc_zeros::<T>(k).unwrap();
        ctx.segmented_reduce(&x, Segments::csr(&off), &mut a, op)
            .unwrap();
        ctx.segmented_reduce(
            &x,
            Segments::offsets(off.view(..k).unwrap(), off.view(1..).unwrap()),
            &mut b,
            op,
        )
        .unwrap();
        // The same offsets checked later (no read-back): the same bits, and a clean check.
        let check = ctx.offset_check().unwrap();
        let mut c = ctx.alloc_zeros::<T>(k).unwrap();
        ctx.segmented_reduce(&x, Segments::csr(&off).check_later(&check), &mut c, op)
            .unwrap();
        ctx.take_offset_check(&check).unwrap();
        let (a, b) = (ctx.dtoh(&a).unwrap(), ctx.dtoh(&b).unwrap());
        assert_eq!(
            ctx.dtoh(&c)
                .unwrap()
                .iter()
                .map(|v| v.bits())
                .collect::<Vec<_>>(),
            a.iter().map(|v| v.bits()).collect::<Vec<_>>(),
            "{}/{}: check_later gives the checked form's bits",
            T::DTYPE,
            op.name()
        );
        for s in 0..k {
            let seg = &data[offsets[s] as usize..offsets[s + 1] as usize];
            let want = model_op(seg, offsets[s] as usize, op).unwrap();
            let tag = format!(
                "{}/{}/csr segment {s} (len {})",
                T::DTYPE,
                op.name(),
                seg.len()
            );
            // CSR offsets of short segments go by tiles: a float sum's bits are the tiles
            // form's there (checked against the tile model below), every other result the
            // model's.
            if by_tiles && op == Reduction::Sum {
                assert_eq!(a[s].bits(), tiles_sum[s].bits(), "{tag} (tiles model)");
            } else {
                assert_eq!(a[s].bits(), want.bits(), "{tag}");
            }
            assert_eq!(b[s].bits(), want.bits(), "{tag} (begin/end views)");
            independent_check(seg, op, a[s], &tag);
        }
    }
    // Argmax through CSR.
    let mut ix = ctx.alloc_zeros::<u64>(k).unwrap();
    let mut v = ctx.alloc_zeros::<T>(k).unwrap();
    ctx.segmented_argmax(&x, Segments::csr(&off), &mut ix, &mut v)
        .unwrap();
    let (ix, v) = (ctx.dtoh(&ix).unwrap(), ctx.dtoh(&v).unwrap());
    for s in 0..k {
        let seg = &data[offsets[s] as usize..offsets[s + 1] as usize];
        let (ri, rv) = arg_ref(seg, true);
        assert_eq!(
            (ix[s], v[s].bits()),
            (ri, rv.bits()),
            "{}/argmax csr segment {s}",
            T::DTYPE
        );
    }
}

/// The same several-chunk segment 24 times (begin/end offsets may overlap): the work list has
/// room for only some of them (its room follows the input length), so some are spread over
/// blocks and the rest reduced each by its own block. Every copy must have the same bits (and
/// the model's), whichever path it took; also across two calls of different shapes (the list's
/// layout changes between them).
pub fn check_work_list_full(ctx: &Context) {
    let chunk = CHUNK_VECS as usize * 4; // f32 elements per chunk
    let n = 3 * chunk + 1001;
    let data: Vec<f32> = data_for(n, Reduction::Sum, 77);
    let x = ctx.htod(&data).unwrap();
    let want = model::<f32, Sum>(&data[3..n], 3);
    for copies in [24usize, 3] {
        let begin = ctx.htod(&vec![3u64; copies]).unwrap();
        let end = ctx.htod(&vec![n as u64; copies]).unwrap();
        let mut out = ctx.alloc_zeros::<f32>(copies).unwrap();
        ctx.segmented_reduce(
            &x,
            Segments::offsets(&begin, &end),
            &mut out,
            Reduction::Sum,
        )
        .unwrap();
        for (s, g) in ctx.dtoh(&out).unwrap().iter().enumerate() {
            assert_eq!(g.to_bits(), want.to_bits(), "copy {s} of {copies}");
        }
    }
}

/// A few long offsets segments take the listed form of the kernel (at most `LISTED_MAX`
/// segments over an input of at least a chunk per segment); more segments take the work list.
/// The same segments both ways (the second time behind `LISTED_MAX` empty ones), every
/// operator bit for bit against the model: lengths around the warp path's end and the chunk
/// cuts, every start alignment, an overlapping segment. Then the listed form under other
/// grids, and its report of bad offsets (returned, and checked later).
pub fn check_listed<T: SegElem>(ctx: &Context) {
    let c = CHUNK_VECS as usize * 16 / std::mem::size_of::<T>();
    let w = WARP_MAX as usize;
    let lens = [
        0,
        1,
        33,
        w,
        w + 1,
        c - 1,
        c + 1,
        c + c / 2 - 3,
        c + c / 2 + 5,
        2 * c + 7,
        3 * c + 1,
        5,
    ];
    let mut ranges = Vec::new();
    let mut at = 3usize;
    for l in lens {
        ranges.push((at, at + l));
        at += l;
    }
    ranges.push((10, 10 + 2 * c)); // overlaps the first segments
    let n = at.max(ranges.len() * c) + 11;
    assert!(ranges.len() as u64 <= LISTED_MAX);
    check_ranges::<T>(ctx, &ranges, n, "listed");
    let mut padded = ranges.clone();
    padded.extend(std::iter::repeat_n((n, n), LISTED_MAX as usize));
    check_ranges::<T>(ctx, &padded, n, "work list");

    // Any grid: the same bits (the model's).
    let data: Vec<T> = data_for(n, Reduction::Sum, 5);
    let x = ctx.htod(&data).unwrap();
    let begin: Vec<u64> = ranges.iter().map(|r| r.0 as u64).collect();
    let mut end: Vec<u64> = ranges.iter().map(|r| r.1 as u64).collect();
    let (db, de) = (ctx.htod(&begin).unwrap(), ctx.htod(&end).unwrap());
    for grid in [Some(1), Some(2), Some(7), None] {
        ctx.set_segmented_grid_limit(grid);
        let mut out = ctx.alloc_zeros::<T>(ranges.len()).unwrap();
        ctx.segmented_reduce(&x, Segments::offsets(&db, &de), &mut out, Reduction::Sum)
            .unwrap();
        for (s, (g, &(b, e))) in ctx.dtoh(&out).unwrap().iter().zip(&ranges).enumerate() {
            let want = model_op(&data[b..e], b, Reduction::Sum).unwrap();
            assert_eq!(g.bits(), want.bits(), "grid {grid:?}, segment {s}");
        }
    }
    ctx.set_segmented_grid_limit(None);

    // Bad offsets: segment 9 decreasing, 4 past the end; the lowest is named, the good
    // segments are still reduced and the bad ones give the identity.
    end[9] = begin[9] - 1;
    end[4] = n as u64 + 1;
    let de = ctx.htod(&end).unwrap();
    let mut out = ctx.alloc_zeros::<T>(ranges.len()).unwrap();
    expect_invalid(
        ctx.segmented_reduce(&x, Segments::offsets(&db, &de), &mut out, Reduction::Sum),
        "segment 4: offsets",
    );
    let check = ctx.offset_check().unwrap();
    ctx.segmented_reduce(
        &x,
        Segments::offsets(&db, &de).check_later(&check),
        &mut out,
        Reduction::Sum,
    )
    .unwrap();
    let got = ctx.dtoh(&out).unwrap();
    for (s, &(b, e)) in ranges.iter().enumerate() {
        let want = if s == 4 || s == 9 {
            model_op(&data[..0], 0, Reduction::Sum).unwrap()
        } else {
            model_op(&data[b..e], b, Reduction::Sum).unwrap()
        };
        assert_eq!(got[s].bits(), want.bits(), "bad offsets: segment {s}");
    }
    expect_invalid(
        ctx.take_offset_check(&check),
        "segment 4: its offsets reach past",
    );
}

/// Many segments, almost all empty (identity), a few not.
pub fn check_many_empty(ctx: &Context) {
    let k = 20_000;
    let mut offsets = vec![0u64; k + 1];
    for (s, o) in offsets.iter_mut().enumerate() {
        *o = match s {
            0..=100 => 0,
            101..=9_999 => 10,
            10_000..=19_998 => 50,
            _ => 60,
        };
    }
    let data: Vec<i64> = (0..60).map(|i| i * 3 - 7).collect();
    let (x, off) = (ctx.htod(&data).unwrap(), ctx.htod(&offsets).unwrap());
    for op in [Reduction::Sum, Reduction::Min, Reduction::And] {
        let mut out = ctx.alloc_zeros::<i64>(k).unwrap();
        ctx.segmented_reduce(&x, Segments::csr(&off), &mut out, op)
            .unwrap();
        let got = ctx.dtoh(&out).unwrap();
        for s in 0..k {
            let seg = &data[offsets[s] as usize..offsets[s + 1] as usize];
            assert_eq!(
                got[s],
                model_op(seg, offsets[s] as usize, op).unwrap(),
                "{} segment {s}",
                op.name()
            );
        }
    }
    let identity = [i64::MAX, 0];
    let mut ix = ctx.alloc_zeros::<u64>(k).unwrap();
    let mut v = ctx.alloc_zeros::<i64>(k).unwrap();
    ctx.segmented_argmin(&x, Segments::csr(&off), &mut ix, &mut v)
        .unwrap();
    let (ix, v) = (ctx.dtoh(&ix).unwrap(), ctx.dtoh(&v).unwrap());
    assert_eq!((ix[0], v[0]), (u64::MAX, identity[0]), "empty argmin");
    assert_eq!((ix[100], v[100]), (0, -7), "argmin of 0..10");
    assert_eq!((ix[9_999], v[9_999]), (0, 23), "argmin of 10..50");
}

/// One huge segment (block path, many tiles) of `n` elements, every type's sum and argmax and
/// min, checked against the model and the references.
pub fn check_huge_segment(ctx: &Context, n: usize) {
    fn one<T: SegElem>(ctx: &Context, n: usize) {
        let data: Vec<T> = data_for(n, Reduction::Sum, n as u64);
        let x = ctx.htod(&data).unwrap();
        let off = ctx.htod(&[0u64, n as u64]).unwrap();
        for op in [Reduction::Sum, Reduction::Min] {
            let mut out = ctx.alloc_zeros::<T>(1).unwrap();
            ctx.segmented_reduce(&x, Segments::csr(&off), &mut out, op)
                .unwrap();
            let got = ctx.dtoh(&out).unwrap()[0];
            let tag = format!("{}/{}/huge {n}", T::DTYPE, op.name());
            assert_eq!(got.bits(), model_op(&data, 0, op).unwrap().bits(), "{tag}");
            independent_check(&data, op, got, &tag);
        }
        let mut ix = ctx.alloc_zeros::<u64>(1).unwrap();
        let mut v = ctx.alloc_zeros::<T>(1).unwrap();
        ctx.segmented_argmax(&x, Segments::fixed(n as u64), &mut ix, &mut v)
            .unwrap();
        let (ri, rv) = arg_ref(&data, true);
        assert_eq!(
            (ctx.dtoh(&ix).unwrap()[0], ctx.dtoh(&v).unwrap()[0].bits()),
            (ri, rv.bits())
        );
    }
    one::<f32>(ctx, n);
    one::<f64>(ctx, n);
    one::<i32>(ctx, n);
    one::<u64>(ctx, n);
}

/// Fixed-length rows: `rows x row_len`, every operator of `T`, and argmin.
pub fn check_fixed_rows<T: SegElem>(ctx: &Context, rows: usize, row_len: usize) {
    let n = rows * row_len;
    for (oi, op) in Reduction::ALL.into_iter().enumerate() {
        if T::segmented_kernel(op).is_none() {
            continue;
        }
        let data: Vec<T> = data_for(n, op, 31 + oi as u64);
        let x = ctx.htod(&data).unwrap();
        let mut out = ctx.alloc_zeros::<T>(rows).unwrap();
        ctx.segmented_reduce(&x, Segments::fixed(row_len as u64), &mut out, op)
            .unwrap();
        let got = ctx.dtoh(&out).unwrap();
        for (r, row) in data.chunks(row_len.max(1)).enumerate().take(rows) {
            let tag = format!("{}/{}/row {r} of {rows}x{row_len}", T::DTYPE, op.name());
            let want = model_op(row, r * row_len, op).unwrap();
            assert_eq!(got[r].bits(), want.bits(), "{tag}");
            independent_check(row, op, got[r], &tag);
        }
    }
    let data: Vec<T> = crate::reductions::data(n, 5, true);
    let x = ctx.htod(&data).unwrap();
    let mut ix = ctx.alloc_zeros::<u64>(rows).unwrap();
    let mut v = ctx.alloc_zeros::<T>(rows).unwrap();
    ctx.segmented_argmin(&x, Segments::fixed(row_len as u64), &mut ix, &mut v)
        .unwrap();
    let (ix, v) = (ctx.dtoh(&ix).unwrap(), ctx.dtoh(&v).unwrap());
    for (r, row) in data.chunks(row_len.max(1)).enumerate().take(rows) {
        let (ri, rv) = arg_ref(row, false);
        assert_eq!(
            (ix[r], v[r].bits()),
            (ri, rv.bits()),
            "{}/argmin row {r}",
            T::DTYPE
        );
    }
}

/// Argmin/argmax semantics: ties give the first occurrence, a NaN wins (the first NaN),
/// -0.0 < +0.0, indices are within the segment; empty segments give `u64::MAX`.
pub fn check_arg_semantics(ctx: &Context) {
    let nan = f32::NAN;
    // Segment 0: ties; 1: NaNs; 2: zeros; 3: empty; 4: long with a late tie and an early max.
    let mut data = vec![3.0f32, 1.0, 2.0, 1.0, 5.0, 5.0];
    data.extend([2.0, nan, 9.0, nan, -1.0]);
    data.extend([0.0, -0.0, 0.0, -0.0]);
    let long_start = data.len();
    let mut long = vec![0.5f32; 5000];
    long[1234] = -2.0;
    long[4321] = -2.0;
    long[77] = 8.0;
    long[4999] = 8.0;
    data.extend(&long);
    let begin = [0u64, 6, 11, 15, long_start as u64];
    let end = [6u64, 11, 15, 15, data.len() as u64];
    let x = ctx.htod(&data).unwrap();
    let (b, e) = (ctx.htod(&begin).unwrap(), ctx.htod(&end).unwrap());
    let mut ix = ctx.alloc_zeros::<u64>(5).unwrap();
    let mut v = ctx.alloc_zeros::<f32>(5).unwrap();
    ctx.segmented_argmin(&x, Segments::offsets(&b, &e), &mut ix, &mut v)
        .unwrap();
    let (i, vals) = (ctx.dtoh(&ix).unwrap(), ctx.dtoh(&v).unwrap());
    assert_eq!(i, [1, 1, 1, u64::MAX, 1234]);
    assert_eq!(vals[0], 1.0);
    assert!(vals[1].is_nan());
    assert_eq!(vals[2].to_bits(), (-0.0f32).to_bits());
    assert_eq!(vals[3], f32::INFINITY);
    assert_eq!(vals[4], -2.0);
    ctx.segmented_argmax(&x, Segments::offsets(&b, &e), &mut ix, &mut v)
        .unwrap();
    let (i, vals) = (ctx.dtoh(&ix).unwrap(), ctx.dtoh(&v).unwrap());
    assert_eq!(i, [4, 1, 0, u64::MAX, 77]);
    assert_eq!(vals[0], 5.0);
    assert!(vals[1].is_nan());
    assert_eq!(vals[2].to_bits(), 0.0f32.to_bits());
    assert_eq!(vals[3], f32::NEG_INFINITY);
    // Min/max propagate NaN per segment only.
    let mut out = ctx.alloc_zeros::<f32>(5).unwrap();
    ctx.segmented_reduce(&x, Segments::offsets(&b, &e), &mut out, Reduction::Min)
        .unwrap();
    let m = ctx.dtoh(&out).unwrap();
    assert_eq!(m[0], 1.0);
    assert!(m[1].is_nan());
    assert_eq!(m[2].to_bits(), (-0.0f32).to_bits());
    assert_eq!(m[3], f32::INFINITY);
    assert_eq!(m[4], -2.0);
}

/// The same bits whatever the physical grid (1 block, 3 blocks, automatic).
pub fn check_grid_independent(ctx: &Context) {
    let mut rng = SmallRng::seed_from_u64(42);
    let mut offsets = vec![0u64];
    for _ in 0..300 {
        let l = if rng.random_bool(0.1) {
            rng.random_range(1025..20_000)
        } else {
            rng.random_range(0..600)
        };
        offsets.push(offsets.last().unwrap() + l);
    }
    let n = *offsets.last().unwrap() as usize;
    let k = offsets.len() - 1;
    let data: Vec<f32> = crate::random_f32(n, 3);
    let (x, off) = (ctx.htod(&data).unwrap(), ctx.htod(&offsets).unwrap());
    let run = |grid: Option<u32>| {
        ctx.set_segmented_grid_limit(grid);
        let mut out = ctx.alloc_zeros::<f32>(k).unwrap();
        ctx.segmented_reduce(&x, Segments::csr(&off), &mut out, Reduction::Sum)
            .unwrap();
        let mut ix = ctx.alloc_zeros::<u64>(k).unwrap();
        let mut v = ctx.alloc_zeros::<f32>(k).unwrap();
        ctx.segmented_argmax(&x, Segments::csr(&off), &mut ix, &mut v)
            .unwrap();
        let bits: Vec<u32> = ctx
            .dtoh(&out)
            .unwrap()
            .iter()
            .map(|f| f.to_bits())
            .collect();
        (
            bits,
            ctx.dtoh(&ix).unwrap(),
            ctx.dtoh(&v)
                .unwrap()
                .iter()
                .map(|f| f.to_bits())
                .collect::<Vec<_>>(),
        )
    };
    let auto = run(None);
    for g in [1, 3, 7] {
        assert!(run(Some(g)) == auto, "grid {g} changed the bits");
    }
    // Short CSR segments go by tiles (one block a tile, whatever the grid limit): the tile
    // model's bits, every run.
    let mut short = vec![0u64];
    for _ in 0..40_000 {
        short.push(short.last().unwrap() + rng.random_range(0..24));
    }
    let sn = *short.last().unwrap() as usize;
    let sdata: Vec<f32> = crate::random_f32(sn, 5);
    let (sx, soff) = (ctx.htod(&sdata).unwrap(), ctx.htod(&short).unwrap());
    let tiles_run = |grid: Option<u32>| {
        ctx.set_segmented_grid_limit(grid);
        let mut out = ctx.alloc_zeros::<f32>(short.len() - 1).unwrap();
        ctx.segmented_reduce(&sx, Segments::csr(&soff), &mut out, Reduction::Sum)
            .unwrap();
        ctx.dtoh(&out)
            .unwrap()
            .iter()
            .map(|f| f.to_bits())
            .collect::<Vec<_>>()
    };
    let tiles = tiles_run(None);
    assert!(
        tiles_run(Some(3)) == tiles,
        "the tiles form changed its bits"
    );
    let want = tiles_model::<f32, Sum>(&sdata, &short);
    for (s, w) in want.iter().enumerate() {
        assert_eq!(tiles[s], w.to_bits(), "tiles: segment {s}");
    }
    // Fixed-size long rows (their own kernel): rows of 32773 f32 start at every alignment,
    // so some have one chunk and some two.
    let (rows, cols) = (7, 32_773);
    let rdata: Vec<f32> = crate::random_f32(rows * cols, 4);
    let rx = ctx.htod(&rdata).unwrap();
    let run = |grid: Option<u32>| {
        ctx.set_segmented_grid_limit(grid);
        let mut out = ctx.alloc_zeros::<f32>(rows).unwrap();
        ctx.segmented_reduce(&rx, Segments::fixed(cols as u64), &mut out, Reduction::Sum)
            .unwrap();
        ctx.dtoh(&out)
            .unwrap()
            .iter()
            .map(|f| f.to_bits())
            .collect::<Vec<_>>()
    };
    let rows_auto = run(None);
    for g in [1, 2, 5] {
        assert!(run(Some(g)) == rows_auto, "rows: grid {g} changed the bits");
    }
    for (r, row) in rdata.chunks(cols).enumerate() {
        assert_eq!(
            rows_auto[r],
            model::<f32, Sum>(row, r * cols).to_bits(),
            "row {r}"
        );
    }
    // Short rows (a warp a row, the grid's warps striding over them): the same bits and
    // argmax for every grid, with more rows than one block's warps.
    let (rows, cols) = (300, 1000);
    let sdata: Vec<f32> = crate::random_f32(rows * cols, 6);
    let sx = ctx.htod(&sdata).unwrap();
    let short_run = |grid: Option<u32>| {
        ctx.set_segmented_grid_limit(grid);
        let mut out = ctx.alloc_zeros::<f32>(rows).unwrap();
        ctx.segmented_reduce(&sx, Segments::fixed(cols as u64), &mut out, Reduction::Sum)
            .unwrap();
        let mut ix = ctx.alloc_zeros::<u64>(rows).unwrap();
        let mut v = ctx.alloc_zeros::<f32>(rows).unwrap();
        ctx.segmented_argmax(&sx, Segments::fixed(cols as u64), &mut ix, &mut v)
            .unwrap();
        let bits = |b: &[f32]| b.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        (
            bits(&ctx.dtoh(&out).unwrap()),
            ctx.dtoh(&ix).unwrap(),
            bits(&ctx.dtoh(&v).unwrap()),
        )
    };
    let short_auto = short_run(None);
    for g in [1, 3, 7] {
        assert!(
            short_run(Some(g)) == short_auto,
            "short rows: grid {g} changed the bits"
        );
    }
    for (r, row) in sdata.chunks(cols).enumerate() {
        assert_eq!(
            short_auto.0[r],
            model::<f32, Sum>(row, r * cols).to_bits(),
            "short row {r}"
        );
        let best = (0..cols).fold(0, |b, j| if row[j] > row[b] { j } else { b });
        assert_eq!(short_auto.1[r], best as u64, "short row {r}: argmax");
        assert_eq!(short_auto.2[r], row[best].to_bits(), "short row {r}: max");
    }
    ctx.set_segmented_grid_limit(None);
    for s in 0..k {
        let seg = &data[offsets[s] as usize..offsets[s + 1] as usize];
        assert_eq!(
            auto.0[s],
            model::<f32, Sum>(seg, offsets[s] as usize).to_bits(),
            "segment {s}"
        );
    }
}

/// A user operator through `segmented_reduce_custom` (the built-in Sum instance, reached
/// through the generic path), and the compensated-free f64 sum of a row.
pub fn check_custom(ctx: &Context) {
    let data: Vec<f64> = (0..3000).map(|i| (i as f64).sin()).collect();
    let x = ctx.htod(&data).unwrap();
    let mut out = ctx.alloc_zeros::<f64>(3).unwrap();
    ctx.segmented_reduce_custom::<f64, Sum>(
        &gpu_reduce::BUILTIN,
        &x,
        Segments::fixed(1000),
        &mut out,
    )
    .unwrap();
    let got = ctx.dtoh(&out).unwrap();
    for (r, row) in data.chunks(1000).enumerate() {
        assert_eq!(
            got[r].to_bits(),
            model::<f64, Sum>(row, 1000 * r).to_bits(),
            "row {r}"
        );
    }
    // The arg form through the custom entry point, and the wrong one refused.
    let mut ix = ctx.alloc_zeros::<u64>(3).unwrap();
    let mut v = ctx.alloc_zeros::<f64>(3).unwrap();
    ctx.segmented_arg_custom::<f64, ArgMax>(
        &gpu_reduce::BUILTIN,
        &x,
        Segments::fixed(1000),
        &mut ix,
        &mut v,
    )
    .unwrap();
    assert_eq!(ctx.dtoh(&ix).unwrap()[0], arg_ref(&data[..1000], true).0);
    let e = ctx.segmented_reduce_custom::<f64, ArgMax>(
        &gpu_reduce::BUILTIN,
        &x,
        Segments::fixed(1000),
        &mut v,
    );
    match e {
        Err(e @ Error::Unsupported { dtype: "f64", .. }) => {
            assert!(e.to_string().contains("segmented_arg_custom"), "{e}")
        }
        other => panic!("expected Unsupported naming segmented_arg_custom, got {other:?}"),
    }
}

fn expect_invalid(r: gpu_reduce::Result<()>, needle: &str) {
    match r {
        Err(e) if crate::is_argument_error(&e) => {
            let m = e.to_string();
            assert!(m.contains(needle), "message `{m}` lacks `{needle}`")
        }
        other => panic!("expected an argument error containing `{needle}`, got {other:?}"),
    }
}

/// Bad input: typed errors naming the problem, never a panic or an out-of-bounds read.
pub fn check_bad_input(ctx: &Context) {
    let x = ctx.htod(&[1.0f32; 100]).unwrap();
    let mut out = ctx.alloc_zeros::<f32>(3).unwrap();
    let op = Reduction::Sum;
    // Decreasing offsets (CSR), and the segment named.
    let off = ctx.htod(&[0u64, 50, 40, 100]).unwrap();
    expect_invalid(
        ctx.segmented_reduce(&x, Segments::csr(&off), &mut out, op),
        "segment 1",
    );
    expect_invalid(
        ctx.segmented_reduce(&x, Segments::csr(&off), &mut out, op),
        "before its begin",
    );
    // Past the input.
    let off = ctx.htod(&[0u64, 50, 60, 101]).unwrap();
    expect_invalid(
        ctx.segmented_reduce(&x, Segments::csr(&off), &mut out, op),
        "segment 2",
    );
    expect_invalid(
        ctx.segmented_reduce(&x, Segments::csr(&off), &mut out, op),
        "past the end",
    );
    let off = ctx.htod(&[0u64, u64::MAX, 60, 100]).unwrap();
    expect_invalid(
        ctx.segmented_reduce(&x, Segments::csr(&off), &mut out, op),
        "segment 0",
    );
    // The lowest bad segment is the one named, whichever block saw it first.
    let mut big = ctx.alloc_zeros::<f32>(5000).unwrap();
    let mut bad: Vec<u64> = (0..=5000).map(|i| i / 50).collect();
    bad[4000] = 1000;
    bad[1234] = 0;
    let off = ctx.htod(&bad).unwrap();
    expect_invalid(
        ctx.segmented_reduce(&x, Segments::csr(&off), &mut big, op),
        "segment 1233",
    );
    // A good call right after a bad one is fine (the flag is cleared).
    let off = ctx.htod(&[0u64, 50, 60, 100]).unwrap();
    ctx.segmented_reduce(&x, Segments::csr(&off), &mut out, op)
        .unwrap();
    assert_eq!(ctx.dtoh(&out).unwrap(), [50.0, 10.0, 40.0]);
    check_bad_offsets_later(ctx);
    // Mismatched lengths.
    let off4 = ctx.htod(&[0u64, 1, 2, 3, 4]).unwrap();
    expect_invalid(
        ctx.segmented_reduce(&x, Segments::csr(&off4), &mut out, op),
        "one more entry",
    );
    let (b, e2) = (
        ctx.htod(&[0u64, 1, 2]).unwrap(),
        ctx.htod(&[1u64, 2]).unwrap(),
    );
    expect_invalid(
        ctx.segmented_reduce(&x, Segments::offsets(&b, &e2), &mut out, op),
        "end offsets (one per begin offset): expected 3, got 2",
    );
    let (b2, e3) = (ctx.htod(&[0u64, 1]).unwrap(), ctx.htod(&[1u64, 2]).unwrap());
    expect_invalid(
        ctx.segmented_reduce(&x, Segments::offsets(&b2, &e3), &mut out, op),
        "one per output element): expected 3",
    );
    let mut ix = ctx.alloc_zeros::<u64>(2).unwrap();
    expect_invalid(
        ctx.segmented_argmin(&x, Segments::csr(&off), &mut ix, &mut out),
        "index output",
    );
    // Fixed lengths.
    expect_invalid(
        ctx.segmented_reduce(&x, Segments::fixed(0), &mut out, op),
        "segments of length 0",
    );
    expect_invalid(
        ctx.segmented_reduce(&x, Segments::fixed(33), &mut out, op),
        "partial last row",
    );
    expect_invalid(
        ctx.segmented_reduce(&x, Segments::fixed(u64::MAX), &mut out, op),
        "segments of",
    );
    let empty = ctx.alloc_zeros::<f32>(0).unwrap();
    ctx.segmented_reduce(&empty, Segments::fixed(0), &mut out, op)
        .unwrap();
    assert_eq!(
        ctx.dtoh(&out).unwrap(),
        [0.0; 3],
        "zero-length rows give the identity"
    );
    // Operators a type lacks.
    expect_invalid(
        ctx.segmented_reduce(
            &x,
            Segments::fixed(100),
            out.view_mut(..1).unwrap(),
            Reduction::Xor,
        ),
        "integers",
    );
    // Zero segments: nothing to do.
    let mut none = ctx.alloc_zeros::<f32>(0).unwrap();
    ctx.segmented_reduce(&x, Segments::csr(&empty_u64(ctx)), &mut none, op)
        .unwrap();
    let one = ctx.htod(&[7u64]).unwrap();
    ctx.segmented_reduce(&x, Segments::csr(&one), &mut none, op)
        .unwrap();
}

/// Bad offsets checked later ([`Segments::check_later`]): the call returns `Ok` without
/// blocking, the bad segments give the identity (never read), the good ones their sums (by
/// tiles, when the offsets are sorted), and
/// the check names the lowest bad segment of every launch since it was last taken, then reads
/// clean. Lengths are still checked at the call.
fn check_bad_offsets_later(ctx: &Context) {
    let x = ctx.htod(&[1.0f32; 100]).unwrap();
    let mut out = ctx.alloc_zeros::<f32>(3).unwrap();
    let op = Reduction::Sum;
    let check = ctx.offset_check().unwrap();
    ctx.take_offset_check(&check).unwrap();
    let dec = ctx.htod(&[0u64, 50, 40, 100]).unwrap();
    ctx.segmented_reduce(&x, Segments::csr(&dec).check_later(&check), &mut out, op)
        .unwrap();
    // Short CSR segments go by tiles, which read the offsets as sorted: decreasing ones leave
    // the other segments unspecified. The bad one is the identity either way.
    assert_eq!(ctx.dtoh(&out).unwrap()[1], 0.0);
    expect_invalid(
        ctx.take_offset_check(&check),
        "segment 1: its end offset is before",
    );
    ctx.take_offset_check(&check).unwrap(); // taken: clear again
    // The work list's forms reduce every good segment whatever the order.
    ctx.set_segmented_tiles(false);
    ctx.segmented_reduce(&x, Segments::csr(&dec).check_later(&check), &mut out, op)
        .unwrap();
    ctx.set_segmented_tiles(true);
    assert_eq!(ctx.dtoh(&out).unwrap(), [50.0, 0.0, 60.0]);
    expect_invalid(
        ctx.take_offset_check(&check),
        "segment 1: its end offset is before",
    );
    // Two launches before the check is taken: the lowest bad segment of both.
    let past = ctx.htod(&[0u64, 50, 60, 101]).unwrap();
    ctx.segmented_reduce(&x, Segments::csr(&past).check_later(&check), &mut out, op)
        .unwrap();
    assert_eq!(ctx.dtoh(&out).unwrap(), [50.0, 10.0, 0.0]);
    let (b, e) = (
        ctx.htod(&[0u64, 0, 0]).unwrap(),
        ctx.htod(&[1u64, 200, 2]).unwrap(),
    );
    ctx.segmented_argmax(
        &x,
        Segments::offsets(&b, &e).check_later(&check),
        ctx.alloc_zeros::<u64>(3).unwrap().view_mut(..).unwrap(),
        &mut out,
    )
    .unwrap();
    expect_invalid(
        ctx.take_offset_check(&check),
        "segment 1: its offsets reach past the end",
    );
    // Lengths are checked at the call, deferred or not.
    let off4 = ctx.htod(&[0u64, 1, 2, 3, 4]).unwrap();
    expect_invalid(
        ctx.segmented_reduce(&x, Segments::csr(&off4).check_later(&check), &mut out, op),
        "one more entry",
    );
    // Fixed rows need no device check: check_later leaves them as they are.
    ctx.segmented_reduce(
        &x,
        Segments::fixed(50).check_later(&check),
        out.view_mut(..2).unwrap(),
        op,
    )
    .unwrap();
    assert_eq!(ctx.dtoh(&out).unwrap()[..2], [50.0, 50.0]);
    ctx.take_offset_check(&check).unwrap();
}

fn empty_u64(ctx: &Context) -> gpu_reduce::DeviceBuffer<u64> {
    ctx.alloc_zeros::<u64>(0).unwrap()
}

/// The same bits on `ctx` as on the simulator (for the GPU: the simulator runs the same code).
pub fn check_matches_sim(ctx: &Context) {
    let sim = crate::sim();
    let mut rng = SmallRng::seed_from_u64(9);
    let mut offsets = vec![0u64];
    for _ in 0..500 {
        let l = if rng.random_bool(0.05) {
            rng.random_range(1025..50_000)
        } else {
            rng.random_range(0..900)
        };
        offsets.push(offsets.last().unwrap() + l);
    }
    let k = offsets.len() - 1;
    let data: Vec<f32> = crate::random_f32(*offsets.last().unwrap() as usize, 4);
    let run = |c: &Context| {
        let (x, off) = (c.htod(&data).unwrap(), c.htod(&offsets).unwrap());
        let mut out = c.alloc_zeros::<f32>(k).unwrap();
        c.segmented_reduce(&x, Segments::csr(&off), &mut out, Reduction::Sum)
            .unwrap();
        let mut ix = c.alloc_zeros::<u64>(k).unwrap();
        let mut v = c.alloc_zeros::<f32>(k).unwrap();
        c.segmented_argmin(&x, Segments::csr(&off), &mut ix, &mut v)
            .unwrap();
        let bits: Vec<u32> = c.dtoh(&out).unwrap().iter().map(|f| f.to_bits()).collect();
        (bits, c.dtoh(&ix).unwrap())
    };
    assert!(
        run(ctx) == run(&sim),
        "the device and the simulator disagree"
    );
}
