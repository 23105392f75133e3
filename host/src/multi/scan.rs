//! The sharded scan in place.

use crate::error::{Error, Result};
use crate::reduce::Reduction;
use crate::runtime::Context;
use crate::scan::ScanKind;

use super::exchange::{from_words, to_words};
use super::{MultiContext, ShardElement, ShardedBuffer};

impl MultiContext {
    /// Scan the sharded array in place with `op` (see the module docs for the passes): rank
    /// `r`'s shard ends up holding elements `offsets[r]..` of the logical array's scan.
    pub fn scan_in_place<T: ShardElement>(
        &self,
        b: &mut ShardedBuffer<T>,
        op: Reduction,
        kind: ScanKind,
    ) -> Result<()> {
        self.check_owner(b)?;
        // The operator's scan kernel and identity (an error for an operator the scans lack,
        // before any launch).
        let kernel = Context::scan_kernel_for::<T>(op, kind)?;
        let unsupported = || crate::scan::unsupported_scan(op, T::DTYPE, "scan");
        let identity = op.identity::<T>().ok_or_else(unsupported)?;
        // 1. Each shard's total (the one-launch reduction; the identity when empty), queued
        //    on every rank before any is awaited.
        //    No rank needs the last rank's total, so it is not computed (one rank: a plain
        //    scan).
        let mut pending = Vec::with_capacity(self.local.len());
        for ((r, ctx), (buf, pad)) in self.local.iter().zip(&b.shards) {
            let v = buf.view(*pad..*pad + b.lengths[*r])?;
            pending.push(if *r + 1 < self.world {
                Some(ctx.reduce_async(v, op)?)
            } else {
                None
            });
        }
        let mut totals = Vec::with_capacity(pending.len());
        for p in pending {
            totals.push(to_words(&[match p {
                Some(p) => p.wait()?,
                None => identity,
            }]));
        }
        // 2. Every rank learns every total; rank r's seed is the combination of those before.
        let all = self.exchange.all_gather(totals)?;
        let totals: Vec<T> = all
            .iter()
            .map(|w| {
                from_words::<T>(w)?
                    .first()
                    .copied()
                    .ok_or_else(|| Error::Collective("a rank sent no shard total".into()))
            })
            .collect::<Result<_>>()?;
        // 3. Each shard scanned once more, seeded; every rank's scan queued, then awaited.
        let mut seeds = Vec::with_capacity(self.local.len());
        for ((r, ctx), (buf, pad)) in self.local.iter().zip(&mut b.shards) {
            let len = b.lengths[*r];
            if len == 0 {
                continue;
            }
            let seed_buf = if *r == 0 {
                None
            } else {
                let seed = totals[1..*r]
                    .iter()
                    .try_fold(totals[0], |acc, &t| op.combine(acc, t))
                    .ok_or_else(unsupported)?;
                Some(ctx.htod(&[seed])?)
            };
            let seed = match &seed_buf {
                Some(s) => ctx.device_addr(s)?,
                None => 0,
            };
            let mut v = buf.view_mut(*pad..*pad + len)?;
            let (a, _write) = ctx.write(&mut v)?;
            ctx.launch_scan(&crate::BUILTIN, kernel, a, a, len as u64, seed)?;
            seeds.push(seed_buf);
        }
        // The seeds' buffers live until the scans have read them.
        for (_, ctx) in &self.local {
            ctx.synchronize()?;
        }
        drop(seeds);
        Ok(())
    }
}
