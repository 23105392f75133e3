//! Top-k (issue 37): the 1000 largest of f32 uniform on [0, 1) with their indices, in index
//! order and sorted (`topk`), at each size of `--sizes`, and the read-only stream of the same
//! input. PyTorch's `torch.topk` on the same shapes is `tools/torch_ref.py`'s (a reference
//! column; CUB's `DeviceTopK` needs a CCCL newer than the toolkit's).
//!
//! Inputs hashed (the same on every run), copied so the timed runs rotate over copies that
//! miss the L2; every result checked against the CPU (a partial selection) before it is timed.

use std::cell::Cell;

use gpu_reduce::{BackendKind, Context, Error, Result, TopK};

use super::limits::read_stream;
use super::select::{Input, copies, generate, hash};
use super::{Cubs, Family, Measurement, SweepConfig, case_measurement};

/// The rows' op.
const OP: &str = "topk";
/// The k of every row.
const K: usize = 1000;

/// The CPU's top `K` of `x` (largest, ties by lower index) as (value bits, index), in the
/// library's order for `sorted` (else index order past the k-th, then its ties).
fn reference(x: &[f32], sorted: bool) -> Vec<(u32, u64)> {
    let better = |&i: &usize, &j: &usize| x[j].total_cmp(&x[i]).then(i.cmp(&j));
    let mut idx: Vec<usize> = (0..x.len()).collect();
    let k = K.min(x.len());
    if k < x.len() {
        idx.select_nth_unstable_by(k - 1, better);
    }
    let mut top = idx[..k].to_vec();
    top.sort_by(better);
    if !sorted {
        let kth = x[top[k - 1]];
        top.sort_by_key(|&i| (x[i] == kth, i));
    }
    top.into_iter()
        .map(|i| (x[i].to_bits(), i as u64))
        .collect()
}

/// Every size of `config` (f32 only): ours unsorted and sorted, and the read-only stream
/// (unless `earlier` has it).
pub fn topk_cases(
    ctx: &Context,
    _cubs: Cubs<'_>,
    config: &SweepConfig,
    earlier: &[Measurement],
    progress: &mut impl FnMut(&str),
) -> Result<(Vec<Measurement>, Vec<String>)> {
    let (mut rows, mut skipped) = (Vec::new(), Vec::new());
    let sim = ctx.backend_kind() == BackendKind::Sim;
    let (it, wu) = (config.iters, config.warmup);
    for &n in &config.sizes {
        let Ok(nn) = usize::try_from(n) else { continue };
        if nn < K {
            skipped.push(format!("topk f32 n = {n}: fewer than k = {K} elements"));
            continue;
        }
        let say = |what: &str| format!("topk f32 n={n}: {what}");
        progress(&say("inputs"));
        let bytes = n * 4;
        let k = copies(ctx, bytes as usize);
        let seed = config.seed ^ (n << 8) ^ 0x70b;
        let input = match Input::new(
            ctx,
            generate(nn, |i| {
                (hash(i as u64, seed) >> 40) as f32 / (1u32 << 24) as f32
            }),
            k,
        ) {
            Ok(i) => i,
            Err(Error::OutOfMemory { bytes }) => {
                skipped.push(format!(
                    "topk f32 n = {n}: does not fit ({bytes} bytes asked)"
                ));
                continue;
            }
            Err(e) => return Err(e),
        };
        let turn = Cell::new(0usize);
        let next = || {
            turn.set((turn.get() + 1) % k);
            turn.get()
        };
        let (mut v, mut ix) = (ctx.alloc_zeros::<f32>(K)?, ctx.alloc_zeros::<u64>(K)?);
        for (how, name) in [
            (TopK::LARGEST, format!("k = {K} largest, index order")),
            (TopK::LARGEST.sorted(), format!("k = {K} largest, sorted")),
        ] {
            progress(&say(&name));
            ctx.topk(&input.bufs[0], &mut v, &mut ix, how)?;
            let got: Vec<(u32, u64)> = ctx
                .dtoh(&v)?
                .into_iter()
                .map(f32::to_bits)
                .zip(ctx.dtoh(&ix)?)
                .collect();
            let ok = got == reference(&input.host, how.sorted);
            let t = ctx.time_ms(wu, it, || {
                ctx.topk(&input.bufs[next()], &mut v, &mut ix, how)
            })?;
            rows.push(case_measurement(
                OP,
                "f32",
                &name,
                Family::Ours,
                n,
                bytes,
                &t,
                ok,
                sim,
            ));
        }
        let has_read = earlier.iter().chain(&rows).any(|m: &Measurement| {
            m.op == "memory" && m.dtype == "f32" && m.n == n && m.method.starts_with("read-only")
        });
        if !has_read {
            progress(&say("read-only stream"));
            let (ok, t) = read_stream(ctx, &input.bufs, &input.host, (wu, it), &next)?;
            rows.push(case_measurement(
                "memory",
                "f32",
                "read-only stream",
                Family::Limit,
                n,
                bytes,
                &t,
                ok,
                sim,
            ));
        }
    }
    Ok((rows, skipped))
}
