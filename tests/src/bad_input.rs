//! Bad input to every public entry point gets a typed error or the documented result, never a
//! panic: empty input, short outputs, views out of range, mismatched lengths, operators that do
//! not apply, requests larger than the device's memory.

use gpu_reduce::{Context, Error, Reduction, ScanKind};
use gpu_reduce_tools::scan_ladder::ScanLadderExt;

/// `r` is the typed argument error `want` names (a variant of [`Error`]), with a message.
fn invalid<T: std::fmt::Debug>(r: gpu_reduce::Result<T>, what: &str, want: fn(&Error) -> bool) {
    match r {
        Err(e) if want(&e) => assert!(!e.to_string().is_empty(), "{what}: empty message"),
        other => panic!("{what}: expected another error, got {other:?}"),
    }
}

/// Every public call with the bad inputs above; results checked where the call is valid.
pub fn check_bad_input_everywhere(ctx: &Context) {
    let x = ctx.htod(&[3.0f32, -1.0, 2.0, 7.0, -5.0]).unwrap();
    let xi = ctx.htod(&[3i32, -1, 2, 7, -5]).unwrap();
    let empty = ctx.htod::<f32>(&[]).unwrap();
    let mut none = ctx.alloc_zeros::<f32>(0).unwrap();
    let mut short = ctx.alloc_zeros::<f32>(4).unwrap();
    let mut out = ctx.alloc_zeros::<f32>(5).unwrap();

    // Views out of range.
    invalid(x.view(3..9), "view past the end", |e| {
        matches!(
            e,
            Error::OutOfRange {
                start: 3,
                end: 9,
                len: 5,
                ..
            }
        )
    });
    #[allow(clippy::reversed_empty_ranges)]
    invalid(x.view(4..2), "reversed view", |e| {
        matches!(
            e,
            Error::OutOfRange {
                start: 4,
                end: 2,
                ..
            }
        )
    });
    assert_eq!(x.view(5..).unwrap().len(), 0);

    // Empty input: the identity, None for argmin/argmax, no-op scans.
    assert_eq!(ctx.sum(&empty).unwrap(), 0.0);
    assert_eq!(
        ctx.reduce(&empty, Reduction::Max).unwrap(),
        f32::NEG_INFINITY
    );
    assert_eq!(ctx.argmin(&empty).unwrap(), None);
    assert_eq!(ctx.argmax(x.view(5..).unwrap()).unwrap(), None);
    assert_eq!(ctx.sum_compensated(&empty).unwrap(), 0.0);
    ctx.scan(&empty, &mut none, Reduction::Sum, ScanKind::Inclusive)
        .unwrap();
    let mut e2 = ctx.alloc_zeros::<f32>(0).unwrap();
    ctx.scan_in_place(&mut e2, Reduction::Max, ScanKind::Exclusive)
        .unwrap();

    // Outputs with no room.
    invalid(
        ctx.reduce_into(&x, &mut none, Reduction::Sum),
        "reduce_into empty output",
        |e| {
            matches!(
                e,
                Error::OutputTooSmall {
                    needed: 1,
                    got: 0,
                    ..
                }
            )
        },
    );
    let mut none64 = ctx.alloc_zeros::<f64>(0).unwrap();
    invalid(
        ctx.sum_compensated_into(&x, &mut none64),
        "compensated into empty output",
        |e| {
            matches!(
                e,
                Error::OutputTooSmall {
                    needed: 1,
                    got: 0,
                    ..
                }
            )
        },
    );
    invalid(
        ctx.reduce_into(&x, &mut none, gpu_reduce::Reduction::Sum),
        "reduce_into empty output",
        |e| {
            matches!(
                e,
                Error::OutputTooSmall {
                    needed: 1,
                    got: 0,
                    ..
                }
            )
        },
    );
    invalid(
        ctx.scan(&x, &mut short, Reduction::Sum, ScanKind::Inclusive),
        "scan into a short output",
        |e| {
            matches!(
                e,
                Error::OutputTooSmall {
                    needed: 5,
                    got: 4,
                    ..
                }
            )
        },
    );
    invalid(
        ctx.scan_bit(&x, &mut short, Reduction::Sum, ScanKind::Inclusive),
        "BIT scan into a short output",
        |e| {
            matches!(
                e,
                Error::OutputTooSmall {
                    needed: 5,
                    got: 4,
                    ..
                }
            )
        },
    );
    invalid(
        ctx.scan_bcao(&x, &mut short, Reduction::Sum, ScanKind::Exclusive),
        "BCAO scan into a short output",
        |e| {
            matches!(
                e,
                Error::OutputTooSmall {
                    needed: 5,
                    got: 4,
                    ..
                }
            )
        },
    );
    // Mismatched keys and values.
    let keys = ctx.htod(&[1u32, 1, 2]).unwrap();
    invalid(
        ctx.scan_by_key(&keys, &x, &mut out, Reduction::Sum, ScanKind::Inclusive),
        "3 keys for 5 values",
        |e| {
            matches!(
                e,
                Error::LengthMismatch {
                    expected: 5,
                    got: 3,
                    ..
                }
            )
        },
    );
    // Operators that do not apply: bitwise on floats.
    for op in [Reduction::And, Reduction::Or, Reduction::Xor] {
        invalid(ctx.reduce(&x, op), "bitwise on f32", |e| {
            matches!(e, Error::Unsupported { dtype: "f32", .. })
        });
    }
    assert_eq!(
        ctx.reduce(&xi, Reduction::Xor).unwrap(),
        3 ^ -1 ^ 2 ^ 7 ^ -5
    );

    // After all that, the context still works, at odd offsets too.
    assert_eq!(ctx.sum(x.view(1..4).unwrap()).unwrap(), 8.0);
    assert_eq!(ctx.argmax(&xi).unwrap(), Some((3, 7)));
    ctx.scan(
        x.view(1..).unwrap(),
        &mut short,
        Reduction::Sum,
        ScanKind::Inclusive,
    )
    .unwrap();
    assert_eq!(ctx.dtoh(&short).unwrap(), vec![-1.0, 1.0, 8.0, 3.0]);
}

/// A request for more than the device has is a clean `OutOfMemory`, and buffers allocated
/// before it keep their contents and still work.
pub fn check_out_of_memory(ctx: &Context, too_many_f32: usize) {
    let data: Vec<f32> = (0..100_000).map(|i| (i % 10) as f32).collect();
    let before = ctx.htod(&data).unwrap();
    match ctx.alloc_zeros::<f32>(too_many_f32) {
        Err(Error::OutOfMemory { bytes }) => assert!(bytes > 0),
        Err(e) => panic!("expected OutOfMemory, got {e}"),
        Ok(_) => panic!("{too_many_f32} f32 were allocated"),
    }
    assert_eq!(ctx.dtoh(&before).unwrap(), data);
    assert_eq!(ctx.sum(&before).unwrap(), 450_000.0);
}
