//! Top-k (issue 37): the 1000 largest of f32 uniform on [0, 1) with their indices, in index
//! order and sorted (`topk`), and the 50 largest of each row of 32,000 (`topk_rows`, sorted, as
//! logits sampling asks), at each size of `--sizes`, and the read-only stream of the same
//! input; once a sweep, 64 rows of 32,000. PyTorch's `torch.topk` on the same shapes is `tools/torch_ref.py`'s (a reference
//! column; CUB's `DeviceTopK` needs a CCCL newer than the toolkit's).
//!
//! Inputs hashed (the same on every run), copied so the timed runs rotate over copies that
//! miss the L2; every result checked against the CPU (a partial selection) before it is timed.

use std::cell::Cell;

use gpu_reduce::{BackendKind, Context, DeviceBuffer, Error, Result, TopK};

use super::limits::read_stream;
use super::select::{Input, copies, generate, hash};
use super::{Cubs, Family, Measurement, SweepConfig, case_measurement};

/// The rows' op.
const OP: &str = "topk";
/// The k of the whole-array cells.
const K: usize = 1000;
/// The rows' columns and k (a vocabulary of logits, the k of top-k sampling).
const COLS: usize = 32_000;
const ROW_K: usize = 50;
/// The rows of the once-a-sweep cell.
const FEW_ROWS: usize = 64;

/// The CPU's top `k` of `x` (largest, ties by lower index) as (value bits, index), in the
/// library's order for `sorted` (else index order past the k-th, then its ties).
fn reference(x: &[f32], k: usize, sorted: bool) -> Vec<(u32, u64)> {
    let better = |&i: &usize, &j: &usize| x[j].total_cmp(&x[i]).then(i.cmp(&j));
    let mut idx: Vec<usize> = (0..x.len()).collect();
    let k = k.min(x.len());
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

/// The values (as bits) and indices of a top-k, read back.
fn pairs(ctx: &Context, v: &DeviceBuffer<f32>, ix: &DeviceBuffer<u64>) -> Result<Vec<(u32, u64)>> {
    Ok(ctx
        .dtoh(v)?
        .into_iter()
        .map(f32::to_bits)
        .zip(ctx.dtoh(ix)?)
        .collect())
}

/// Every size of `config` (f32 only): ours unsorted and sorted, and the read-only stream
/// (unless `earlier` has it).
pub fn topk_cases(
    ctx: &Context,
    cubs: Cubs<'_>,
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
            let got = pairs(ctx, &v, &ix)?;
            let ok = got == reference(&input.host, K, how.sorted);
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
        for (label, cub) in cubs.iter() {
            let Ok(f) = cub.topk() else { continue };
            let name = format!("{label} DeviceTopK::MaxPairs: k = {K} largest, in no order");
            progress(&say(&name));
            let stream = crate::cub::stream_of(ctx)?;
            let tb = f.temp_bytes(n, K as u64)?;
            let temp = ctx.alloc_zeros::<u8>(tb.max(1))?;
            let scratch = (ctx.device_addr(&temp)?, tb);
            let (ck, ci) = (ctx.alloc_zeros::<f32>(K)?, ctx.alloc_zeros::<u32>(K)?);
            let outs = (ctx.device_addr(&ck)?, ctx.device_addr(&ci)?);
            let run = |i: usize| -> Result<()> {
                // SAFETY: the scratch, the outputs and every input live to the end of the case,
                // and every read of them (the check) waits for the stream.
                unsafe { f.max_pairs(scratch, input.addrs[i], outs, (n, K as u64), stream)? };
                Ok(())
            };
            run(0)?;
            // In no order, and any of the k-th's ties: the same values, each at its index.
            let (keys, idx) = (ctx.dtoh(&ck)?, ctx.dtoh(&ci)?);
            let mut got: Vec<u32> = keys.iter().map(|k| k.to_bits()).collect();
            let mut want: Vec<u32> = reference(&input.host, K, true)
                .iter()
                .map(|p| p.0)
                .collect();
            got.sort_unstable();
            want.sort_unstable();
            let at = |(&i, &k): (&u32, &f32)| {
                input
                    .host
                    .get(i as usize)
                    .is_some_and(|x| x.to_bits() == k.to_bits())
            };
            let ok = got == want && idx.iter().zip(&keys).all(at);
            let t = ctx.time_ms(wu, it, || run(next()))?;
            rows.push(case_measurement(
                OP,
                "f32",
                &name,
                Family::Cub,
                n,
                bytes,
                &t,
                ok,
                sim,
            ));
        }
        for r in [nn / COLS, FEW_ROWS] {
            if r == 0 || r * COLS > nn || (r == FEW_ROWS && n != config.sizes[0]) {
                continue;
            }
            let name = format!("{r} rows of {COLS}, k = {ROW_K} each, sorted");
            progress(&say(&name));
            let (m, nm) = (r * COLS, (r * COLS) as u64);
            let x = |b: usize| input.bufs[b].view(..m);
            let (mut v, mut ix) = (
                ctx.alloc_zeros::<f32>(r * ROW_K)?,
                ctx.alloc_zeros::<u64>(r * ROW_K)?,
            );
            let how = TopK::LARGEST.sorted();
            ctx.topk_rows(x(0)?, COLS as u64, &mut v, &mut ix, how)?;
            let got = pairs(ctx, &v, &ix)?;
            let want: Vec<(u32, u64)> = input.host[..m]
                .chunks(COLS)
                .flat_map(|r| reference(r, ROW_K, true))
                .collect();
            let t = ctx.time_ms(wu, it, || {
                ctx.topk_rows(x(next())?, COLS as u64, &mut v, &mut ix, how)
            })?;
            rows.push(case_measurement(
                OP,
                "f32",
                &name,
                Family::Ours,
                nm,
                nm * 4,
                &t,
                got == want,
                sim,
            ));
            // The limit at the rows' size (the guard's share of it).
            progress(&say("read-only stream of the rows"));
            let (ok, t) = read_stream(ctx, &input.bufs, &input.host[..m], (wu, it), &next)?;
            rows.push(case_measurement(
                "memory",
                "f32",
                "read-only stream",
                Family::Limit,
                nm,
                nm * 4,
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
