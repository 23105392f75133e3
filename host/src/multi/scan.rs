//! The sharded scan in place, with the bits of one context's scan of the whole array.
//!
//! The one-context scan ([`kernels::scan::fixed_order`]) combines its tiles in groups of
//! [`GROUP`]: a tile's prefix is the checkpoint `C(g - 1)` (everything before its group `g`)
//! then its group's earlier tiles, and the order within a tile follows from the tile's own
//! elements. So the launches here are cut at the global group boundaries, not at the shards':
//! each rank scans the groups that begin in its shard, in place, and the last of them, when it
//! runs into the next shards, gathered whole in a small buffer; each launch is seeded with the
//! checkpoint before its first group (`C(-1)` to the kernel). The checkpoints come from a first
//! pass: the same kernel writing its tiles' aggregates only, combined on the host as the
//! kernel combines them (each group's 32 aggregates as its balanced tree, then the chain).

use kernels::scan::fixed_order::GROUP;

use crate::error::{Error, Result, plural};
use crate::reduce::Reduction;
use crate::runtime::{Context, DeviceBuffer};
use crate::scan::{ScanElement, ScanKind};

use super::exchange::{from_words, to_words};
use super::{MultiContext, ShardElement, ShardedBuffer, straddle};

/// Elements of a group of the scan's tiles for `T` (the scan's launches begin at multiples of
/// it; shards cut there need no gathering).
pub fn scan_group_elems<T: ShardElement>() -> u64 {
    GROUP * <T as ScanElement>::SCAN_TILE_ELEMS
}

/// Where rank `r`'s shard `[s, e)` meets the groups of `gs` elements (global indices): its
/// head piece `[s, head)` belongs to a group begun on an earlier rank, the groups `[head, mid)`
/// are scanned in place, and `[mid, end)` is the group begun here that runs past the shard
/// (`end == mid`: none).
#[derive(Clone, Copy, Debug)]
struct Cut {
    s: u64,
    e: u64,
    head: u64,
    mid: u64,
    end: u64,
}

impl Cut {
    fn new<T>(b: &ShardedBuffer<T>, r: usize, gs: u64) -> Self {
        let (s, head) = straddle::head(b, r, gs);
        let e = (b.offsets[r] + b.lengths[r]) as u64;
        // The group holding index `e` runs past the shard when it begins inside it, not at `e`
        // (then the next rank's), and ends after `e` (not at the array's end).
        let last = e / gs * gs;
        let group_end = (last + gs).min(b.len());
        let (mid, end) = if last >= head && last < e && group_end > e {
            (last, group_end)
        } else {
            (e, e)
        };
        Cut {
            s,
            e,
            head,
            mid,
            end,
        }
    }
    /// The first elements of this rank's launches (in place, then the gathered group).
    fn starts(&self) -> impl Iterator<Item = u64> {
        let (a, b) = (self.mid > self.head, self.end > self.mid);
        [a.then_some(self.head), b.then_some(self.mid)]
            .into_iter()
            .flatten()
    }
}

/// `v` (a power of two long) combined as [`kernels::warp::warp_reduce_in_order`] combines 32
/// lanes: each half, then the two (no identity anywhere, so the same bits).
fn in_order<T: Copy>(v: &[T], op: &impl Fn(T, T) -> Option<T>) -> Option<T> {
    match v {
        [x] => Some(*x),
        _ => {
            let (l, r) = v.split_at(v.len() / 2);
            op(in_order(l, op)?, in_order(r, op)?)
        }
    }
}

impl MultiContext {
    /// Scan the sharded array in place with `op`: rank `r`'s shard ends up holding elements
    /// `offsets[r]..` of the logical array's scan, the same bits as [`Context::scan`] of the
    /// whole array on one context, for any number of ranks and any shard lengths (see the
    /// module docs for the passes).
    ///
    /// Speed bound: no element of rank `r > 0` is final before every earlier shard has been
    /// read, so rank 0 reads its shard twice and the others wait for that; on two GPUs with
    /// equal shards each moves 1.5 half-arrays' worth of traffic where one GPU moves 2 whole
    /// arrays' worth: at most **4/3** one GPU's speed. For integers
    /// [`MultiContext::scan_deferred`] leaves each shard's own scan and returns the offsets
    /// (up to 2x on two GPUs when they are applied on the read or in the next kernel).
    pub fn scan_in_place<T: ShardElement>(
        &self,
        b: &mut ShardedBuffer<T>,
        op: Reduction,
        kind: ScanKind,
    ) -> Result<()> {
        self.check_owner(b)?;
        // The operator's scan kernel (an error for an operator the scans lack, before any
        // launch); its aggregates are those of either kind.
        let kernel = Context::scan_kernel_for::<T>(op, kind)?;
        let unsupported = || crate::scan::unsupported_scan(op, T::DTYPE, "scan");
        let identity = op.identity::<T>().ok_or_else(unsupported)?;
        let combine = |a: T, b: T| op.combine(a, b);
        let n = b.len();
        if n == 0 {
            return Ok(());
        }
        if exact::<T>(op) {
            return self.scan_by_shard_totals(b, op, kernel, identity);
        }
        let tile = <T as ScanElement>::SCAN_TILE_ELEMS;
        let gs = scan_group_elems::<T>();
        let cuts: Vec<Cut> = (0..self.world).map(|r| Cut::new(b, r, gs)).collect();
        // Launches begin at global group starts; every group before the last of them needs
        // its aggregate G(g) (all of those are whole groups). One rank: none.
        let last_start = cuts.iter().flat_map(Cut::starts).max().unwrap_or(0);
        let any_head = cuts.iter().any(|c| c.head > c.s);

        // 1. The head pieces, and on each rank the group that runs past its shard, whole.
        let heads = if any_head {
            self.gather_heads(b, gs)?
        } else {
            vec![Vec::new(); self.world]
        };
        let mut staged: Vec<Option<DeviceBuffer<T>>> = Vec::with_capacity(self.local.len());
        for ((r, ctx), (buf, pad)) in self.local.iter().zip(&b.shards) {
            let c = cuts[*r];
            staged.push(if c.end > c.mid {
                let lo = pad + (c.mid - c.s) as usize;
                let tail = ctx.dtoh(buf.view(lo..pad + (c.e - c.s) as usize)?)?;
                let want = (c.end - c.mid) as usize;
                let group = straddle::complete(*r, ("group", c.mid / gs), tail, &heads, want)?;
                // A fresh buffer starts 16-byte aligned, as a group start is by the layout rule.
                Some(ctx.htod(&group)?)
            } else {
                None
            });
        }

        // 2. Pass A: the tile aggregates of the groups before `last_start` (the scan kernel
        //    writing nothing else), queued on every rank before any is read back; each group's
        //    G(g), gathered to every rank in group order.
        let checkpoints = if last_start > 0 {
            let mut queued = Vec::with_capacity(self.local.len());
            for (((r, ctx), (buf, pad)), group) in self.local.iter().zip(&b.shards).zip(&staged) {
                let c = cuts[*r];
                let in_place = c.mid.min(last_start).saturating_sub(c.head);
                let gathered = group.as_ref().filter(|_| c.mid < last_start);
                let tiles = (in_place / tile) as usize + gathered.map_or(0, |_| GROUP as usize);
                if tiles == 0 {
                    queued.push(None);
                    continue;
                }
                let totals = ctx.alloc_zeros::<T>(tiles)?;
                let at = ctx.device_addr(&totals)?;
                if in_place > 0 {
                    let lo = pad + (c.head - c.s) as usize;
                    let a = ctx.device_addr(buf.view(lo..lo + in_place as usize)?)?;
                    ctx.launch_scan(&crate::BUILTIN, kernel, a, a, in_place, 0, at)?;
                }
                if let Some(g) = gathered {
                    let a = ctx.device_addr(g)?;
                    let slot = at + (in_place / tile) * std::mem::size_of::<T>() as u64;
                    ctx.launch_scan(&crate::BUILTIN, kernel, a, a, gs, 0, slot)?;
                }
                queued.push(Some(totals));
            }
            let mut mine = Vec::with_capacity(self.local.len());
            for ((_, ctx), q) in self.local.iter().zip(queued) {
                let groups = match q {
                    Some(t) => ctx
                        .dtoh(&t)?
                        .chunks(GROUP as usize)
                        .map(|a| in_order(a, &combine).ok_or_else(unsupported))
                        .collect::<Result<Vec<T>>>()?,
                    None => Vec::new(),
                };
                mine.push(to_words(&groups));
            }
            let mut g = Vec::with_capacity((last_start / gs) as usize);
            for w in &self.exchange.all_gather(mine)? {
                g.extend(from_words::<T>(w)?);
            }
            if g.len() as u64 != last_start / gs {
                return Err(Error::Collective(format!(
                    "{} gathered for {}",
                    plural(g.len() as u64, "group aggregate"),
                    plural(last_start / gs, "group")
                )));
            }
            // C(0) = G(0), C(g) = C(g - 1) ⊕ G(g): the kernel's chain.
            let mut c = Vec::with_capacity(g.len());
            for x in g {
                c.push(match c.last() {
                    Some(&p) => combine(p, x).ok_or_else(unsupported)?,
                    None => x,
                });
            }
            c
        } else {
            Vec::new()
        };
        // The checkpoint before global index `x` (a group start): none before the first group.
        let seed_at = |x: u64| (x > 0).then(|| checkpoints[(x / gs - 1) as usize]);

        // 3. Pass B: each rank's gathered group scanned and read back, then its groups in
        //    place (running while the pieces are exchanged); its own part of the gathered
        //    group written back, the rest sent to the ranks it came from.
        let mut seeds = Vec::with_capacity(self.local.len());
        let mut pieces = Vec::with_capacity(self.local.len());
        for (((r, ctx), (buf, pad)), group) in self.local.iter().zip(&mut b.shards).zip(&mut staged)
        {
            let c = cuts[*r];
            let in_place_seed = (c.mid > c.head).then(|| seed_at(c.head)).flatten();
            let group_seed = group.as_ref().and_then(|_| seed_at(c.mid));
            let s = ctx.htod(&[
                in_place_seed.unwrap_or(identity),
                group_seed.unwrap_or(identity),
            ])?;
            let s_addr = ctx.device_addr(&s)?;
            let seed_addr = |seed: Option<T>, i: u64| {
                seed.map_or(0, |_| s_addr + i * std::mem::size_of::<T>() as u64)
            };
            let mut piece = Vec::new();
            if let Some(g) = group {
                {
                    let mut v = g.view_mut(..)?;
                    let (a, _write) = ctx.write(&mut v)?;
                    let seed = seed_addr(group_seed, 1);
                    ctx.launch_scan(&crate::BUILTIN, kernel, a, a, c.end - c.mid, seed, 0)?;
                }
                let done = ctx.dtoh(&*g)?;
                let own = (c.e - c.mid) as usize;
                let lo = *pad + (c.mid - c.s) as usize;
                ctx.htod_into(&done[..own], buf.view_mut(lo..lo + own)?)?;
                piece = to_words(&done[own..]);
            }
            if c.mid > c.head {
                let lo = *pad + (c.head - c.s) as usize;
                let len = c.mid - c.head;
                let mut v = buf.view_mut(lo..lo + len as usize)?;
                let (a, _write) = ctx.write(&mut v)?;
                let seed = seed_addr(in_place_seed, 0);
                ctx.launch_scan(&crate::BUILTIN, kernel, a, a, len, seed, 0)?;
            }
            seeds.push(s);
            pieces.push(piece);
        }
        if any_head {
            let all = self.exchange.all_gather(pieces)?;
            for ((r, ctx), (buf, pad)) in self.local.iter().zip(&mut b.shards) {
                let c = cuts[*r];
                if c.head == c.s {
                    continue;
                }
                // The rank whose gathered group holds this head piece sent `[its e, its end)`.
                let from = cuts
                    .iter()
                    .position(|o| o.end > o.mid && o.e <= c.s && c.s < o.end)
                    .ok_or_else(|| {
                        Error::Collective(format!("no rank gathered rank {r}'s head piece"))
                    })?;
                let got = from_words::<T>(&all[from])?;
                let (lo, hi) = (
                    (c.s - cuts[from].e) as usize,
                    (c.head - cuts[from].e) as usize,
                );
                let mine = got.get(lo..hi).ok_or_else(|| {
                    Error::Collective(format!(
                        "rank {from} sent {} of the scanned pieces, rank {r} needs up to {hi}",
                        got.len()
                    ))
                })?;
                ctx.htod_into(mine, buf.view_mut(*pad..*pad + mine.len())?)?;
            }
        }
        // The seeds and gathered groups live until the scans have read them.
        for (_, ctx) in &self.local {
            ctx.synchronize()?;
        }
        drop((seeds, staged));
        Ok(())
    }
}

/// Whether `op`'s combination of `T` is exact for any grouping and order of the operands:
/// integers (wrapping). Not float min/max: they keep the left operand's NaN, and the shard
/// total's reduction meets its elements in another order than the scan, so a NaN's payload
/// could differ from the one-context scan's.
fn exact<T: ShardElement>(_op: Reduction) -> bool {
    !T::DTYPE.starts_with('f')
}

impl MultiContext {
    /// The scan of an exact operator (integers): each rank's shard total by the one-launch reduction
    /// (the fast read-only pass; not the last rank's), exchanged, then each shard scanned in
    /// place seeded with the totals before it. No gathering: the values do not depend on where
    /// the launches are cut.
    fn scan_by_shard_totals<T: ShardElement>(
        &self,
        b: &mut ShardedBuffer<T>,
        op: Reduction,
        kernel: crate::scan::ScanKernel<T>,
        identity: T,
    ) -> Result<()> {
        let unsupported = || crate::scan::unsupported_scan(op, T::DTYPE, "scan");
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
        let mut seeds = Vec::with_capacity(self.local.len());
        for ((r, ctx), (buf, pad)) in self.local.iter().zip(&mut b.shards) {
            let len = b.lengths[*r] as u64;
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
            let mut v = buf.view_mut(*pad..*pad + len as usize)?;
            let (a, _write) = ctx.write(&mut v)?;
            ctx.launch_scan(&crate::BUILTIN, kernel, a, a, len, seed, 0)?;
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

#[cfg(test)]
mod tests {
    #[test]
    fn exact_operators() {
        use super::exact;
        use crate::reduce::Reduction::*;
        assert!(exact::<i32>(Sum) && exact::<u64>(Product) && exact::<i64>(Max));
        assert!(!exact::<f64>(Min) && !exact::<f32>(Sum) && !exact::<f64>(Product));
    }
}
