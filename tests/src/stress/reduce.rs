//! Stress family "reduce": one value of the whole input, every operator and argmin/argmax, each
//! element type, in the blocking, `_into` and `_async` forms.

use gpu_reduce::{ArgValue, Context, Reduction};
use rand::Rng;

use super::{Case, Family, bytes, make, pick};
use crate::reductions::{TestElem, check_all_ops_at};

fn case<T: TestElem>(c: &mut Case) -> u64 {
    let n = c.size(&crate::boundary_sizes(c.max));
    let (offset, dist) = (c.offset(), c.dist());
    let data = make::<T>(&mut c.rng, n, dist);
    c.note(format!("{} n={n} offset={offset} {dist:?}", T::DTYPE));
    // Every operator against the CPU (exact, or the float sum's bound).
    check_all_ops_at(c.ctx, &data, offset, &c.what);

    // One operator and one form again, on the replicas: the same bits.
    let ops: &[Reduction] = if T::IS_FLOAT {
        &super::ORDERED_OPS
    } else {
        &[
            Reduction::Sum,
            Reduction::Min,
            Reduction::Max,
            Reduction::And,
            Reduction::Or,
            Reduction::Xor,
        ]
    };
    let op = pick(&mut c.rng, ops);
    let form = c.rng.random_range(0..3);
    let arg_max = c.rng.random_bool(0.5);
    c.note(format!("{} form {form}", op.name()));
    let mut padded = make::<T>(&mut c.rng, offset, super::Dist::Random);
    padded.extend_from_slice(&data);
    let run = |ctx: &Context| -> Vec<u8> {
        let whole = ctx.htod(&padded).unwrap();
        let x = whole.view(offset..).unwrap();
        let (value, arg) = match form {
            0 => (
                ctx.reduce(x, op).unwrap(),
                if arg_max {
                    ctx.argmax(x)
                } else {
                    ctx.argmin(x)
                }
                .unwrap(),
            ),
            1 => {
                let mut out = ctx.alloc_zeros::<T>(1).unwrap();
                ctx.reduce_into(x, &mut out, op).unwrap();
                let mut a = ctx.alloc_zeros::<ArgValue<T>>(1).unwrap();
                if arg_max {
                    ctx.argmax_into(x, &mut a).unwrap()
                } else {
                    ctx.argmin_into(x, &mut a).unwrap()
                }
                let a = ctx.dtoh(&a).unwrap()[0];
                (ctx.dtoh(&out).unwrap()[0], a.get())
            }
            _ => {
                let v = ctx.reduce_async(x, op).unwrap();
                let a = if arg_max {
                    ctx.argmax_async(x)
                } else {
                    ctx.argmin_async(x)
                }
                .unwrap();
                (v.wait().unwrap(), a.wait().unwrap())
            }
        };
        let mut b = bytes(&[value]);
        b.extend(arg.map_or(vec![0xff], |(i, v)| {
            [i.to_le_bytes().to_vec(), bytes(&[v])].concat()
        }));
        b
    };
    c.replicated(n, &run);
    n as u64
}

fn run(c: &mut Case) -> u64 {
    super::any_element_type!(c, case)
}

inventory::submit! { Family { name: "reduce", run } }
