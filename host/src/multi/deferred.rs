//! The deferred sharded scan: every shard scanned on its own, on all ranks at once, and what
//! comes before each shard (its *offset*) returned beside the shards, applied when the result
//! is read ([`DeferredScan::dtoh`], [`DeferredScan::get`]) or by the caller's next kernel.
//!
//! Why: in the in-place form ([`MultiContext::scan_in_place`]) no element of rank `r > 0` is
//! final before every earlier shard has been read, so rank 0 reads its shard twice and the
//! others wait for that: each GPU moves 1.5 shards' worth of traffic where one GPU moves 2
//! whole arrays' worth, at best 4/3 as fast on two GPUs. Here each rank reads and writes its
//! shard once and waits for no one (the offsets are one value a rank, gathered afterwards), so
//! two GPUs can reach twice one GPU's speed, as long as the offsets are applied where the
//! result is next read (a pass of their own would read and write every shard again).
//!
//! Exact: element `i` of shard `r` of the whole array's scan is `offsets[r] ⊕ local[i]` for
//! every associative operator whose combination does not round, the integers' (wrapping) sum,
//! min and max: the same values as the in-place scan and one context's scan, on any number of
//! ranks. A float's offset combined afterwards would round otherwise than one context's scan
//! (which combines a tile's prefix before the tile's own elements), so float arrays have no
//! deferred form: [`ExactElement`] is not implemented for them, and their scans stay in place.

use crate::error::{Error, Result, plural};
use crate::reduce::Reduction;
use crate::runtime::{Context, DeviceBuffer};
use crate::scan::ScanKind;

use super::exchange::{from_words, to_words};
use super::{MultiContext, ShardElement, ShardedBuffer};

/// Element types whose scans are exact (no rounding, any grouping): the integers, the types of
/// [`MultiContext::scan_deferred`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no deferred sharded scan: an offset combined after a float scan would round otherwise than one context's scan",
    note = "the deferred scan takes i32, u32, i64 or u64; scan float shards with `MultiContext::scan_in_place`"
)]
pub trait ExactElement: ShardElement {}

macro_rules! exact_element {
    ($t:ident { $($pairs:tt)* }) => {
        impl ExactElement for $t {}
    };
}
kernels::builtin_table!(types exact_element! {} int);

/// The result of [`MultiContext::scan_deferred`]: the shards hold their own scans (each as if
/// it were the whole array) and [`offsets`](Self::offsets) what comes before each. Holds the
/// array borrowed, so it is not taken for the finished scan while the offsets are pending.
pub struct DeferredScan<'a, T> {
    m: &'a MultiContext,
    b: &'a ShardedBuffer<T>,
    op: Reduction,
    offsets: Vec<T>,
    total: T,
}

impl<T: std::fmt::Debug> std::fmt::Debug for DeferredScan<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeferredScan")
            .field("op", &self.op.name())
            .field("offsets", &self.offsets)
            .field("total", &self.total)
            .finish()
    }
}

impl<'a, T: ExactElement> DeferredScan<'a, T> {
    /// What comes before each rank's shard: the scan operator over every earlier shard's
    /// elements (the identity for rank 0; after an empty shard, the same as its offset).
    /// Element `i` of shard `r` of the whole scan is `op(offsets[r], local[i])`.
    pub fn offsets(&self) -> &[T] {
        &self.offsets
    }

    /// The operator of the scan (to apply the offsets in a kernel of your own).
    pub fn op(&self) -> Reduction {
        self.op
    }

    /// The whole array's reduction by the scan's operator (the inclusive scan's last element).
    pub fn total(&self) -> T {
        self.total
    }

    /// The shards with their own scans (the offsets not applied): for kernels of your own,
    /// which combine `offsets()[r]` with what they read ([`ShardedBuffer::local_shard`]).
    pub fn shards(&self) -> &'a ShardedBuffer<T> {
        self.b
    }

    /// This process's shards of the whole array's scan, the offsets applied on the host as they
    /// are copied (one vector per local rank).
    pub fn dtoh_local(&self) -> Result<Vec<Vec<T>>> {
        let mut shards = self.m.dtoh_local(self.b)?;
        for ((r, _), s) in self.m.local.iter().zip(&mut shards) {
            let o = self.offsets[*r];
            for x in s.iter_mut() {
                *x = self.apply(o, *x)?;
            }
        }
        Ok(shards)
    }

    /// One process holding every rank: the whole array's scan, the offsets applied on the host.
    pub fn dtoh(&self) -> Result<Vec<T>> {
        self.m.require_all_local("copy a whole array to the host")?;
        Ok(self.dtoh_local()?.concat())
    }

    /// Element `index` of the whole array's scan (read from the rank that holds it, which must
    /// be one of this process's).
    pub fn get(&self, index: u64) -> Result<T> {
        let v = self.m.get(self.b, index)?;
        let r = (0..self.m.world)
            .find(|&r| {
                let o = self.b.offsets[r] as u64;
                (o..o + self.b.shard_lengths[r]).contains(&index)
            })
            .ok_or_else(|| Error::MultiGpu(format!("no rank holds element {index}")))?;
        self.apply(self.offsets[r], v)
    }

    /// The offsets, the borrow of the array given up: the shards keep their own scans (a plain
    /// `MultiContext::dtoh` of them does not apply the offsets), for a kernel of your own that
    /// applies them in place ([`ShardedBuffer::local_shard_mut`]).
    pub fn into_offsets(self) -> Vec<T> {
        self.offsets
    }

    fn apply(&self, offset: T, local: T) -> Result<T> {
        self.op
            .combine(offset, local)
            .ok_or_else(|| crate::scan::unsupported_scan(self.op, T::DTYPE, "scan"))
    }
}

impl MultiContext {
    /// Scan every shard of `b` on its own, in place, all ranks at once, and return the offsets
    /// that make them the whole array's scan ([`DeferredScan`]): no rank waits for another, so
    /// `N` GPUs move each element once each way, as one GPU scanning its part alone (up to `N`
    /// times one GPU's speed when the offsets are applied on the read or inside the next
    /// kernel; applying them in a pass of their own reads and writes the shards again, slower
    /// than [`MultiContext::scan_in_place`]). Integers only ([`ExactElement`]: the offsets are
    /// then exact); `scan_in_place` leaves the finished scan in the shards instead, at most 4/3
    /// as fast on two GPUs as on one.
    pub fn scan_deferred<'a, T: ExactElement>(
        &'a self,
        b: &'a mut ShardedBuffer<T>,
        op: Reduction,
        kind: ScanKind,
    ) -> Result<DeferredScan<'a, T>> {
        self.check_owner(b)?;
        let kernel = Context::scan_kernel_for::<T>(op, kind)?;
        let unsupported = || crate::scan::unsupported_scan(op, T::DTYPE, "scan");
        let identity = op.identity::<T>().ok_or_else(unsupported)?;
        // Each rank's shard total: the inclusive scan's last element, or the exclusive scan's
        // last combined with the last input (copied aside before the scan overwrites it).
        let mut lasts: Vec<Option<DeviceBuffer<T>>> = Vec::with_capacity(self.local.len());
        for ((r, ctx), (buf, pad)) in self.local.iter().zip(&mut b.shards) {
            let len = b.lengths[*r];
            if len == 0 {
                lasts.push(None);
                continue;
            }
            let end = *pad + len;
            let mut last = ctx.alloc_zeros::<T>(2)?;
            if kind == ScanKind::Exclusive {
                ctx.copy_into(buf.view(end - 1..end)?, &mut last, 0)?;
            }
            {
                let mut v = buf.view_mut(*pad..end)?;
                let (a, _write) = ctx.write(&mut v)?;
                ctx.launch_scan(&crate::BUILTIN, kernel, a, a, len as u64, 0, 0)?;
            }
            ctx.copy_into(buf.view(end - 1..end)?, &mut last, 1)?;
            lasts.push(Some(last));
        }
        // Read back after every rank's scan is queued (each read waits for its own rank only).
        let mut mine = Vec::with_capacity(lasts.len());
        for ((_, ctx), last) in self.local.iter().zip(&lasts) {
            let total = match last {
                None => identity,
                Some(l) => {
                    let v = ctx.dtoh(l)?;
                    match kind {
                        ScanKind::Inclusive => v[1],
                        ScanKind::Exclusive => op.combine(v[1], v[0]).ok_or_else(unsupported)?,
                    }
                }
            };
            mine.push(to_words(&[total]));
        }
        let all = self.exchange.all_gather(mine)?;
        if all.len() != self.world {
            return Err(Error::Collective(format!(
                "{} gathered for {}",
                plural(all.len() as u64, "shard total"),
                plural(self.world as u64, "rank")
            )));
        }
        let mut offsets = Vec::with_capacity(self.world);
        let mut running = identity;
        for w in &all {
            offsets.push(running);
            let t = from_words::<T>(w)?
                .first()
                .copied()
                .ok_or_else(|| Error::Collective("a rank sent no shard total".into()))?;
            running = op.combine(running, t).ok_or_else(unsupported)?;
        }
        Ok(DeferredScan {
            m: self,
            b,
            op,
            offsets,
            total: running,
        })
    }
}
