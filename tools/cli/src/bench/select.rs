//! Compaction cases (u32, one size: 2^28 elements, 2^14 on the simulator): select-if keeping
//! 1%, 50% and 99% (`x < t` over values uniform on u32), a 50% partition and the unique of runs
//! of 8, ours (the `_into` forms, the count left on the device) against CUB's
//! `DeviceSelect::If`, `DevicePartition::If` and `DeviceSelect::Unique` (each loaded shim that
//! has them; an older one's rows are left out and the column says "not available") and the
//! device copy in the same run.

use gpu_reduce::{BackendKind, Context, DeviceBuffer, Predicate, Result};

use super::{Cubs, Family, Measurement, Setter, case_measurement, tuning_sweeps};
use crate::cub::Cub;

/// The rows' type.
const DTYPE: &str = "u32";

/// The rows' op (the sweep op's name, as the speed guard maps cells back to ops).
const OP: &str = "select";

/// What a case measures.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    /// `x < threshold`, keeping about `percent` of the elements.
    SelectIf { percent: u32 },
    /// The 50% partition (`x < 2^31`).
    Partition,
    /// The first of each run of equal consecutive elements (runs of 8 here).
    Unique,
}

/// The length of the unique case's runs.
const RUN: usize = 8;

impl Kind {
    /// Every case, in the order of the rows.
    const ALL: [Kind; 5] = [
        Kind::SelectIf { percent: 1 },
        Kind::SelectIf { percent: 50 },
        Kind::SelectIf { percent: 99 },
        Kind::Partition,
        Kind::Unique,
    ];

    /// The case's name (no `": "` in it: a CUB row is `{label} {call}: {name}`).
    fn name(self) -> String {
        match self {
            Kind::SelectIf { percent } => format!("select-if {percent}% kept"),
            Kind::Partition => "partition 50% kept (ours 2 outputs in order, CUB 1 with the \
                                rest reversed at its back; same bytes)"
                .into(),
            Kind::Unique => format!("unique, runs of {RUN}"),
        }
    }

    /// CUB's call.
    fn cub_call(self) -> &'static str {
        match self {
            Kind::SelectIf { .. } => "DeviceSelect::If",
            Kind::Partition => "DevicePartition::If",
            Kind::Unique => "DeviceSelect::Unique",
        }
    }

    /// The threshold `t` of `x < t` keeping `percent` of values uniform on u32 (0 for unique).
    fn threshold(self) -> u32 {
        let percent = match self {
            Kind::SelectIf { percent } => percent,
            Kind::Partition => 50,
            Kind::Unique => return 0,
        };
        ((1u64 << 32) * percent as u64 / 100).min(u32::MAX as u64) as u32
    }

    /// Whether `cub` has the case's call.
    fn in_shim(self, cub: &Cub) -> bool {
        match self {
            Kind::SelectIf { .. } => cub.has_select_if_lt_u32(),
            Kind::Partition => cub.has_partition_if_lt_u32(),
            Kind::Unique => cub.has_select_unique_u32(),
        }
    }
}

/// A hash of `i` and `seed` (splitmix64's finalizer), the source of the inputs' values.
fn hash(i: u64, seed: u64) -> u64 {
    let mut z = (i ^ seed).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The case's input of `n` elements: values uniform on u32, or for unique random values each
/// repeated [`RUN`] times.
fn input(kind: Kind, n: usize, seed: u64) -> Vec<u32> {
    match kind {
        Kind::Unique => (0..n)
            .map(|i| hash((i / RUN) as u64, seed) as u32)
            .collect(),
        _ => (0..n).map(|i| hash(i as u64, seed) as u32).collect(),
    }
}

/// The CPU reference: the kept elements in order and the others in order.
fn reference(kind: Kind, x: &[u32]) -> (Vec<u32>, Vec<u32>) {
    match kind {
        Kind::Unique => {
            let kept = x
                .iter()
                .enumerate()
                .filter(|&(i, &v)| i == 0 || x[i - 1] != v)
                .map(|(_, &v)| v)
                .collect();
            (kept, Vec::new())
        }
        _ => {
            let t = kind.threshold();
            x.iter().partition(|&&v| v < t)
        }
    }
}

/// Whether CUB's single partition output (`k` kept, in order, at the front, the rest reversed
/// after them) holds `kept` and `rest`.
fn check_cub_partition(out: &[u32], k: usize, kept: &[u32], rest: &[u32]) -> bool {
    k == kept.len()
        && out.len() >= k + rest.len()
        && out[..k] == *kept
        && out[k..k + rest.len()].iter().rev().eq(rest.iter())
}

/// Every case: ours checked against the CPU (the blocking call, then the timed `_into` form's
/// last result too), then timed (`warmup` + `iters` runs), with CUB (each shim that has the
/// call) and the device copy beside it.
pub fn select_cases(
    ctx: &Context,
    cubs: Cubs<'_>,
    iters: usize,
    warmup: usize,
    seed: u64,
    progress: &mut impl FnMut(&str),
) -> Result<Vec<Measurement>> {
    let sim = ctx.backend_kind() == BackendKind::Sim;
    let n = if sim { 1 << 14 } else { 1 << 28 };
    let nn = n as u64;
    let mut rows = Vec::new();
    for (c, kind) in Kind::ALL.into_iter().enumerate() {
        let name = kind.name();
        progress(&format!("select: {name}"));
        let host = input(kind, n, seed ^ ((c as u64) << 40));
        let (kept, rest) = reference(kind, &host);
        let x = ctx.htod(&host)?;
        let mut out = ctx.alloc_zeros::<u32>(n)?;
        let mut other = ctx.alloc_zeros::<u32>(if kind == Kind::Partition { n } else { 1 })?;
        let mut count = ctx.alloc_zeros::<u64>(1)?;
        let pred = Predicate::Lt(kind.threshold());
        let k = match kind {
            Kind::SelectIf { .. } => ctx.select(&x, &mut out, pred)?,
            Kind::Partition => ctx.partition(&x, &mut out, &mut other, pred)?,
            Kind::Unique => ctx.unique(&x, &mut out)?,
        } as usize;
        let check = |out: &[u32], other: &[u32], k: usize| {
            k == kept.len()
                && out[..k] == *kept
                && (kind != Kind::Partition || other[..n - k] == *rest)
        };
        let mut ok = check(&ctx.dtoh(&out)?, &ctx.dtoh(&other)?, k);
        // Timed in stream order (the count stays on the device), as CUB is.
        let run = |out: &mut DeviceBuffer<u32>, other: &mut DeviceBuffer<u32>, count: &mut _| {
            match kind {
                Kind::SelectIf { .. } => ctx.select_into(&x, out, count, pred),
                Kind::Partition => ctx.partition_into(&x, out, other, count, pred),
                Kind::Unique => ctx.unique_into(&x, out, count),
            }
        };
        let t = ctx.time_ms(warmup, iters, || run(&mut out, &mut other, &mut count))?;
        // The `_into` form's result too (the outputs of its last run).
        let k_into = ctx.dtoh(&count)?[0] as usize;
        ok &= check(&ctx.dtoh(&out)?, &ctx.dtoh(&other)?, k_into);
        // Bytes: every element read once, each kept one written (partition: every element).
        let written = if kind == Kind::Partition {
            n
        } else {
            kept.len()
        };
        let bytes = 4 * (nn + written as u64);
        rows.push(case_measurement(
            OP,
            DTYPE,
            &name,
            Family::Ours,
            nn,
            bytes,
            &t,
            ok,
            sim,
        ));
        // Tuning sweeps, rows named with the setting: GPU_REDUCE_SELECT_DELAYS=0,500,... times
        // ours with other first look-back waits, GPU_REDUCE_SELECT_PREFETCH=0,64,... with other
        // L2 prefetch distances.
        let sweeps: [(&str, Setter, &str); 2] = [
            (
                "GPU_REDUCE_SELECT_DELAYS",
                Context::set_select_delay,
                "first wait {} ns",
            ),
            (
                "GPU_REDUCE_SELECT_PREFETCH",
                Context::set_select_prefetch,
                "prefetch {} tiles",
            ),
        ];
        for (setting, t) in tuning_sweeps(ctx, &sweeps, warmup, iters, || {
            run(&mut out, &mut other, &mut count)
        })? {
            let method = format!("{name}, {setting}");
            rows.push(case_measurement(
                OP,
                DTYPE,
                &method,
                Family::Ours,
                nn,
                bytes,
                &t,
                ok,
                sim,
            ));
        }
        drop((out, other));
        // A shim built before the call has no row (the column says "not available").
        for (label, cub) in cubs.iter().filter(|(_, c)| kind.in_shim(c)) {
            progress(&format!("select: {name}, {label}"));
            let stream = crate::cub::stream_of(ctx)?;
            let temp_bytes = match kind {
                Kind::SelectIf { .. } => cub.temp_bytes_select_if_lt_u32(nn)?,
                Kind::Partition => cub.temp_bytes_partition_if_lt_u32(nn)?,
                Kind::Unique => cub.temp_bytes_select_unique_u32(nn)?,
            };
            let temp = ctx.alloc_zeros::<u8>(temp_bytes.max(1))?;
            let cout = ctx.alloc_zeros::<u32>(n)?;
            let ccount = ctx.alloc_zeros::<u64>(1)?;
            let (ta, xa) = (ctx.device_addr(&temp)?, ctx.device_addr(&x)?);
            let (oa, ca) = (ctx.device_addr(&cout)?, ctx.device_addr(&ccount)?);
            let t_lt = kind.threshold();
            let run = || -> Result<()> {
                // SAFETY: device buffers of this context, alive for the whole case, sized as
                // the call needs (n u32 in, room for n u32 out, one u64 count).
                Ok(unsafe {
                    match kind {
                        Kind::SelectIf { .. } => {
                            cub.select_if_lt_u32(ta, temp_bytes, xa, oa, ca, nn, t_lt, stream)
                        }
                        Kind::Partition => {
                            cub.partition_if_lt_u32(ta, temp_bytes, xa, oa, ca, nn, t_lt, stream)
                        }
                        Kind::Unique => {
                            cub.select_unique_u32(ta, temp_bytes, xa, oa, ca, nn, stream)
                        }
                    }
                }?)
            };
            run()?;
            let ck = ctx.dtoh(&ccount)?[0] as usize;
            let cout_host = ctx.dtoh(&cout)?;
            let ok = match kind {
                Kind::Partition => check_cub_partition(&cout_host, ck, &kept, &rest),
                _ => ck == kept.len() && cout_host[..ck] == *kept,
            };
            let t = ctx.time_ms(warmup, iters, run)?;
            rows.push(case_measurement(
                OP,
                DTYPE,
                &format!("{label} {}: {name}", kind.cub_call()),
                Family::Cub,
                nn,
                bytes,
                &t,
                ok,
                sim,
            ));
        }
    }
    // The copy limit: a device copy of the n elements (each read and written once).
    progress("select: device copy");
    let host = input(Kind::SelectIf { percent: 50 }, n, seed);
    let x = ctx.htod(&host)?;
    let mut y = ctx.alloc_zeros::<u32>(n)?;
    ctx.copy_into(&x, &mut y, 0)?;
    let ok = ctx.dtoh(&y)? == host;
    let t = ctx.time_ms(warmup, iters, || ctx.copy_into(&x, &mut y, 0))?;
    rows.push(case_measurement(
        "memory",
        DTYPE,
        "device copy (read + write)",
        Family::Limit,
        nn,
        nn * 8,
        &t,
        ok,
        sim,
    ));
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_thresholds_keep_their_share() {
        let x = input(Kind::SelectIf { percent: 1 }, 1 << 16, 3);
        for kind in Kind::ALL {
            let Kind::SelectIf { percent } = kind else {
                continue;
            };
            let (kept, rest) = reference(kind, &x);
            assert_eq!(kept.len() + rest.len(), x.len());
            let share = 100.0 * kept.len() as f64 / x.len() as f64;
            assert!((share - percent as f64).abs() < 1.0, "{percent}%: {share}");
        }
        assert_eq!(Kind::Partition.threshold(), 1 << 31);
    }

    #[test]
    fn unique_runs_are_of_eight_and_cubs_partition_check_takes_the_reversed_rest() {
        let x = input(Kind::Unique, 80, 5);
        let (kept, _) = reference(Kind::Unique, &x);
        assert_eq!(kept.len(), 10);
        let (kept, rest) = (vec![1u32, 2], vec![7u32, 8, 9]);
        assert!(check_cub_partition(&[1, 2, 9, 8, 7], 2, &kept, &rest));
        assert!(!check_cub_partition(&[1, 2, 7, 8, 9], 2, &kept, &rest));
        assert!(!check_cub_partition(&[1, 2, 9, 8, 7], 3, &kept, &rest));
        for kind in Kind::ALL {
            assert!(!kind.name().contains(": "), "{}", kind.name());
        }
    }
}
