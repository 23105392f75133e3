//! Sharded reductions: fixed tiles over the logical array, each rank's tile partials
//! gathered to every rank and combined in one fixed tree, so the bits never depend on the ranks.

use kernels::Kernel;
use kernels::gpu::ShflValue;
use kernels::reduce::policy::BLOCK;
use kernels::reduce::tiles::{SimTilesFn, TilesInstance, TilesParams};

use crate::error::{Error, Result, plural};
use crate::reduce::Reduction;
use crate::runtime::{BackendKind, Context, LaunchShape};

use super::exchange::{from_words, to_words};
use super::{MultiContext, ShardElement, ShardedBuffer, straddle};

pub use kernels::reduce::policy::{
    SHARDED_MAX_TILES as MAX_TILES, sharded_tile_elems as tile_elems,
};

/// `a[lo..hi]` combined as a balanced binary tree (left half first): the fixed order of the
/// tile partials.
pub(super) fn tree<A: Copy>(a: &[A], identity: A, combine: &impl Fn(A, A) -> A) -> A {
    match a.len() {
        0 => identity,
        1 => combine(identity, a[0]),
        len => {
            let mid = len / 2;
            combine(
                tree(&a[..mid], identity, combine),
                tree(&a[mid..], identity, combine),
            )
        }
    }
}

impl MultiContext {
    /// `op` over the whole sharded array, on every rank: the same bits for any number of
    /// ranks and any shard lengths (see the module docs). Empty: the operator's identity.
    pub fn reduce<T: ShardElement>(&self, b: &ShardedBuffer<T>, op: Reduction) -> Result<T> {
        T::reduce_sharded(self, b, op)
    }

    /// The smallest value and the global index of its first occurrence (a NaN wins), on every
    /// rank; `None` for an empty array.
    pub fn argmin<T: ShardElement>(&self, b: &ShardedBuffer<T>) -> Result<Option<(u64, T)>> {
        let a = T::argmin_sharded(self, b)?;
        Ok((a.index != u64::MAX).then_some((a.index, a.value)))
    }

    /// The largest value and the global index of its first occurrence (a NaN wins), on every
    /// rank; `None` for an empty array.
    pub fn argmax<T: ShardElement>(&self, b: &ShardedBuffer<T>) -> Result<Option<(u64, T)>> {
        let a = T::argmax_sharded(self, b)?;
        Ok((a.index != u64::MAX).then_some((a.index, a.value)))
    }

    /// The sharded reduction with operator `O` (see the module docs).
    pub(super) fn reduce_with<T: ShardElement, O: TilesInstance<T>>(
        &self,
        b: &ShardedBuffer<T>,
    ) -> Result<O::Acc>
    where
        O::Acc: ShflValue,
    {
        self.check_owner(b)?;
        let n = b.len();
        let size = std::mem::size_of::<T>() as u64;
        let l = tile_elems(n, size);
        let tiles = n.div_ceil(l);

        // 1. Each rank's head piece: the part of its shard in a tile begun on an earlier rank.
        let heads = self.gather_heads(b, l)?;

        // 2. Each rank's partials: the tiles that begin in its shard, in place, and the last
        //    of them gathered whole when it runs past the shard. Every rank's kernels are
        //    queued before any result is read back, so the GPUs run at the same time.
        let acc_bytes = std::mem::size_of::<O::Acc>();
        let tile_end = |t: u64| ((t + 1) * l).min(n);
        let mut queued = Vec::with_capacity(self.local.len());
        for ((r, ctx), (buf, pad)) in self.local.iter().zip(&b.shards) {
            let (s, e) = (b.offsets[*r] as u64, (b.offsets[*r] + b.lengths[*r]) as u64);
            let (first, end) = (s.div_ceil(l), e.div_ceil(l).min(tiles));
            if first >= end {
                queued.push(None);
                continue;
            }
            let count = (end - first) as usize;
            let straddles = tile_end(end - 1) > e;
            let whole = if straddles { count - 1 } else { count };
            // The straddling tile, gathered on the host first (before this rank's stream has
            // work queued): this shard's tail, then the head pieces of the next ranks.
            let staged = if straddles {
                let t = end - 1;
                let want = (tile_end(t) - t * l) as usize;
                let lo = (t * l - s) as usize + pad;
                let tail = ctx.dtoh(buf.view(lo..pad + (e - s) as usize)?)?;
                let tile = straddle::complete(*r, ("tile", t), tail, &heads, want)?;
                // A fresh buffer starts 16-byte aligned, as a tile start is by the layout rule.
                Some((t, ctx.htod(&tile)?))
            } else {
                None
            };
            let partials = ctx.alloc_zeros::<u64>((count * acc_bytes).div_ceil(8))?;
            let kernel = O::TILES_KERNEL;
            if whole > 0 {
                let lo = (first * l - s) as usize + pad;
                let len = tile_end(first + whole as u64 - 1) - first * l;
                let input = ctx.device_addr(buf.view(lo..lo + len as usize)?)?;
                let out = ctx.device_addr(&partials)?;
                self.launch_tiles(ctx, kernel, input, len, l, first * l, out, whole as u64)?;
            }
            if let Some((t, tile)) = &staged {
                let slot = ctx.device_addr(&partials)? + (whole * acc_bytes) as u64;
                let len = tile.len() as u64;
                self.launch_tiles(ctx, kernel, ctx.device_addr(tile)?, len, l, t * l, slot, 1)?;
            }
            queued.push(Some((count, partials, staged)));
        }
        let mut mine = Vec::with_capacity(self.local.len());
        for ((_, ctx), q) in self.local.iter().zip(queued) {
            let Some((count, partials, _staged)) = q else {
                mine.push(Vec::new());
                continue;
            };
            let words = ctx.dtoh(&partials)?;
            // SAFETY: the kernels wrote `count` accumulators at their natural stride into this
            // zero-initialised buffer; `O::Acc` is plain data (a value, or a value and index).
            let accs: Vec<O::Acc> = (0..count)
                .map(|i| unsafe {
                    std::ptr::read_unaligned(
                        (words.as_ptr() as *const u8).add(i * acc_bytes) as *const O::Acc
                    )
                })
                .collect();
            mine.push(to_words(&accs));
        }

        // 3. Every rank gets every partial, in tile order, and combines them the same way.
        let all = self.exchange.all_gather(mine)?;
        let mut partials = Vec::with_capacity(tiles as usize);
        for w in &all {
            partials.extend(from_words::<O::Acc>(w)?);
        }
        if partials.len() as u64 != tiles {
            return Err(Error::Collective(format!(
                "{} gathered for {}",
                plural(partials.len() as u64, "tile partial"),
                plural(tiles, "tile")
            )));
        }
        // The host's NaN rules are not the GPU's: the one NaN, as the kernels write it out.
        Ok(tree(&partials, O::identity(), &O::combine).canonical())
    }

    /// Launch the tile-partials kernel `k` on `ctx` over `n` elements at `input` (tiles of `l`,
    /// `tiles` of them), the first at global index `base`, partials to `out`.
    #[allow(clippy::too_many_arguments)] // the kernel's arguments, passed straight through
    fn launch_tiles<T: ShardElement, A>(
        &self,
        ctx: &Context,
        k: Kernel<SimTilesFn<T, A>>,
        input: u64,
        n: u64,
        l: u64,
        base: u64,
        out: u64,
        tiles: u64,
    ) -> Result<()> {
        let grid = match ctx.backend_kind() {
            BackendKind::Sim => tiles,
            BackendKind::Cuda => {
                let per_sm = ctx.kernel(&crate::BUILTIN, k.name)?.blocks_per_sm(BLOCK)?;
                tiles.min(u64::from(ctx.info().multiprocessors.max(1) * per_sm))
            }
        };
        let grid = u32::try_from(grid).map_err(|_| Error::TooLarge {
            what: "the tiles of a shard's reduction (the launch limit)".into(),
            size: tiles,
            limit: u32::MAX as u64,
        })?;
        let params = TilesParams {
            input: input as *const T,
            n,
            tile_elems: l,
            index_base: base,
            partials: out as *mut A,
        };
        // SAFETY: `input` holds `n` elements and `out` room for `tiles` accumulators, all of
        // `ctx`.
        unsafe {
            ctx.launch_kernel(
                &crate::BUILTIN,
                &k,
                LaunchShape::linear(grid, BLOCK, 0),
                params,
            )
        }
    }
}
