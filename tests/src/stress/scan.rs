//! Stress family "scan": inclusive and exclusive scans of every scan operator and element
//! type, out of place or in place.

use gpu_reduce::{Context, Reduction, ScanElement};
use rand::Rng;

use super::{Case, Dist, Family, bytes, kind, make, pick};
use crate::lookback::{check_scan_result, scan_boundary_sizes};
use crate::reductions::TestElem;

fn case<T: TestElem + ScanElement>(c: &mut Case) -> u64 {
    let n = c.size(&scan_boundary_sizes(c.max));
    let (offset, mut dist) = (c.offset(), c.dist());
    let op = pick(&mut c.rng, &super::ORDERED_OPS);
    // A NaN or an infinity makes every later float prefix sum NaN or infinite: checked by the
    // reduce family; here the sums get finite data.
    if T::IS_FLOAT && op == Reduction::Sum && dist == Dist::Specials {
        dist = Dist::Random;
    }
    let kind = kind(&mut c.rng);
    let in_place = c.rng.random_bool(0.3);
    let data = make::<T>(&mut c.rng, n, dist);
    let mut padded = make::<T>(&mut c.rng, offset, Dist::Random);
    padded.extend_from_slice(&data);
    c.note(format!(
        "{} n={n} offset={offset} {dist:?} {} {} in_place={in_place}",
        T::DTYPE,
        op.name(),
        kind.name()
    ));
    let run = |ctx: &Context| -> Vec<T> {
        let mut whole = ctx.htod(&padded).unwrap();
        if in_place {
            ctx.scan_in_place(whole.view_mut(offset..).unwrap(), op, kind)
                .unwrap();
            ctx.dtoh(&whole).unwrap()[offset..].to_vec()
        } else {
            let mut out = ctx.alloc_zeros::<T>(n.max(1)).unwrap();
            ctx.scan(whole.view(offset..).unwrap(), &mut out, op, kind)
                .unwrap();
            ctx.dtoh(&out).unwrap()[..n].to_vec()
        }
    };
    let got = run(c.ctx);
    check_scan_result(&got, &data, op, kind, &c.what);
    c.check_replicas(n, &bytes(&got), &|ctx| bytes(&run(ctx)));
    n as u64
}

fn run(c: &mut Case) -> u64 {
    super::any_element_type!(c, case)
}

inventory::submit! { Family { name: "scan", run } }
