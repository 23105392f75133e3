//! Several GPUs: one logical array sharded over the devices (one contiguous piece per GPU, any
//! lengths), reduced and scanned where it lies.
//!
//! **The same bits on 1..N GPUs.** A reduction cuts the logical array into tiles whose size
//! depends on its total length alone ([`tile_elems`]); each tile's partial is reduced by one
//! block in an order fixed by the tile's own elements (`kernels::reduce::tiles`), and the
//! partials are combined on the host in a balanced tree over the tile index. Two things make
//! the partials independent of where the shards begin and end: a tile that straddles a shard
//! boundary is gathered whole on the rank that holds its first element (each rank sends the
//! piece of its shard that belongs to a tile begun before it: at most one tile's worth), and
//! every shard is allocated so that an element's address modulo 16 follows from its global
//! index (a front pad of `offset mod (16 / size)` elements), which fixes which elements share a
//! 16-byte load. So `reduce` returns the same bits for any number of ranks and any shard
//! lengths, including one rank. (It may differ in the last bits from [`Context::reduce`] on
//! one array, whose tiles interleave over the whole array.)
//!
//! **Scans** leave their results in the shards, with the bits of [`Context::scan`] of the whole
//! array on one context, for any number of ranks and any shard lengths, float sums included.
//! The one-context scan combines its tiles in groups of 32 in an order fixed by the tile index
//! ([`kernels::scan::fixed_order`]), so the launches are cut at those global groups
//! ([`scan_group_elems`]) rather than at the shards: each rank scans, in place, the groups that
//! begin in its shard, and the group that runs from its shard's end into the next shards
//! (gathered whole, as a straddling reduction tile is; its results sent back), each launch
//! seeded with the one-context scan's checkpoint before its first group. A first pass (the scan
//! kernel writing its tiles' aggregates only) gives each group's combination in the kernel's
//! order; the ranks exchange them (one value per group) and each combines the checkpoints the
//! kernel would. Three passes over memory where one GPU needs two, because no element of rank
//! `r > 0` is final before the groups before it are read; the groups from the last launch's
//! start on are read once (no launch after them needs their checkpoints; one rank: a plain
//! scan). So two GPUs can at best scan 4/3 as fast as one (rank 0 moves 3/2 of half the data
//! against 2 of all of it). An integer scan (exact: wrapping) gives the same values however
//! the launches are cut, so its scan takes the cheaper passes: each shard's
//! total by the one-launch reduction (the read-only rate), exchanged, then each shard scanned
//! in place seeded with the totals before it (no gathering): still 4/3 at best, rank 1
//! waiting for rank 0's total. The deferred form ([`MultiContext::scan_deferred`], integers)
//! has no such bound: each shard is scanned on its own at once on every rank, and the offsets
//! (one value a rank) are applied when the result is read or by the caller's next kernel.
//!
//! **Two ways to run**, as a cluster job would: one process driving all GPUs of a host
//! ([`MultiContext::new`], every rank local), or one process per GPU
//! ([`MultiContext::rank`]: this process's rank and an [`Exchange`] that reaches the others).
//! The exchange moves small host-side messages only (tile partials, group aggregates, boundary
//! pieces of at most one reduction tile or scan group); [`ThreadExchange`] connects ranks that
//! are threads of one process (the tests, and simulated devices). The ranks must make the same
//! calls in the same order, as with any collective library.
//!
//! | call | what |
//! | --- | --- |
//! | [`MultiContext::alloc_zeros`]`(lengths)`, [`MultiContext::htod`]`(data, lengths)` | a sharded array (`lengths: &[u64]`, one per rank) |
//! | [`MultiContext::htod_local`]`(data, b)`, [`MultiContext::dtoh`]`(b)`, [`MultiContext::dtoh_local`]`(b)`, [`MultiContext::fill`]`(b, value)`, [`MultiContext::get`]`(b, index)` | copies |
//! | [`MultiContext::reduce`]`(b, op)` | a [`Reduction`] over the whole array |
//! | [`MultiContext::argmin`]`(b)`, [`MultiContext::argmax`]`(b)` | `Option<(global index: u64, value)>` |
//! | [`MultiContext::scan_in_place`]`(b, op, kind)` | a scan ([`Reduction::SCAN`]) left in the shards (two GPUs: at most 4/3 one GPU's speed) |
//! | [`MultiContext::scan_deferred`]`(b, op, kind)` | integers: each shard's own scan left in it, and a [`DeferredScan`] with the offsets, applied on `dtoh`/`get` or in your next kernel (two GPUs: 1.97x one GPU's in-place scan, measured on 2 x H200) |
//! | [`scan_group_elems`]`::<T>()` | where the scan's launches begin (cuts there need no gathering) |

use std::sync::atomic::{AtomicU64, Ordering};

use cudarc::driver::ValidAsZeroBits;
use kernels::gpu::ShflValue;
use kernels::ops::{ArgAcc, ArgMax, ArgMin};

use crate::error::{Error, Result, plural};
use crate::reduce::{DeviceElement, Reduction, reduction_arm};
use crate::runtime::{Context, DeviceBuffer, DeviceView, DeviceViewMut};
use crate::scan::ScanElement;

mod deferred;
mod exchange;
mod reduce;
mod scan;
mod straddle;

pub use deferred::{DeferredScan, ExactElement};
use exchange::AllLocal;
pub use exchange::{Exchange, ThreadExchange};
pub use reduce::{MAX_TILES, tile_elems};
pub use scan::scan_group_elems;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// One handle over the GPUs of a job: a [`Context`] per rank this process holds, and the
/// exchange that reaches the other ranks.
pub struct MultiContext {
    /// (world rank, its context), in rank order.
    local: Vec<(usize, Context)>,
    world: usize,
    exchange: Box<dyn Exchange>,
    id: u64,
}

impl std::fmt::Debug for MultiContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MultiContext")
            .field("world", &self.world)
            .field(
                "local_ranks",
                &self.local.iter().map(|l| l.0).collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// A logical array sharded over the ranks of a [`MultiContext`]: rank `r` holds elements
/// `offsets[r] .. offsets[r] + lengths[r]`. This process holds the shards of its ranks.
pub struct ShardedBuffer<T> {
    owner: u64,
    /// Every rank's shard length (the public form of `lengths`).
    shard_lengths: Vec<u64>,
    lengths: Vec<usize>,
    offsets: Vec<usize>,
    /// One per local rank, in the handle's order: the buffer and the front pad (elements)
    /// before the shard's first element.
    shards: Vec<(DeviceBuffer<T>, usize)>,
}

impl<T> std::fmt::Debug for ShardedBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardedBuffer")
            .field("lengths", &self.lengths)
            .finish()
    }
}

impl<T> ShardedBuffer<T> {
    /// Elements of the logical array.
    pub fn len(&self) -> u64 {
        self.shard_lengths.iter().sum()
    }
    /// Whether the logical array is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Every rank's shard length, in rank order.
    pub fn lengths(&self) -> &[u64] {
        &self.shard_lengths
    }
    /// This process's `i`-th shard (in [`MultiContext::local`]'s order) as a device view, for
    /// kernels of your own; its first element is the logical array's element
    /// `lengths()[..r].iter().sum()` for that shard's rank `r`.
    pub fn local_shard(&self, i: usize) -> Result<DeviceView<'_, T>> {
        let (buf, pad) = self.shards.get(i).ok_or_else(|| self.no_shard(i))?;
        buf.view(*pad..)
    }
    /// [`ShardedBuffer::local_shard`], writable (e.g. a kernel of your own applying
    /// [`DeferredScan::offsets`] in place).
    pub fn local_shard_mut(&mut self, i: usize) -> Result<DeviceViewMut<'_, T>> {
        if i >= self.shards.len() {
            return Err(self.no_shard(i));
        }
        let (buf, pad) = &mut self.shards[i];
        buf.view_mut(*pad..)
    }
    fn no_shard(&self, i: usize) -> Error {
        let held = plural(self.shards.len() as u64, "shard");
        Error::MultiGpu(format!("shard {i} asked of a process holding {held}"))
    }
}

/// Element types of the sharded reductions and scans: i32, u32, i64, u64, f32, f64.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an element type of the sharded (multi-GPU) arrays",
    note = "sharded arrays hold i32, u32, i64, u64, f32 or f64"
)]
pub trait ShardElement: DeviceElement + ScanElement + ShflValue + ValidAsZeroBits {
    /// [`MultiContext::reduce`] for this type (the operator types per element type).
    fn reduce_sharded(m: &MultiContext, b: &ShardedBuffer<Self>, op: Reduction) -> Result<Self>;
    /// [`MultiContext::argmin`] for this type.
    fn argmin_sharded(m: &MultiContext, b: &ShardedBuffer<Self>) -> Result<ArgAcc<Self>>;
    /// [`MultiContext::argmax`] for this type.
    fn argmax_sharded(m: &MultiContext, b: &ShardedBuffer<Self>) -> Result<ArgAcc<Self>>;
}

/// [`ShardElement`] of one element type of the kernels' built-in table.
macro_rules! shard_element {
    ($t:ident { $([$op:ident $Op:path])* }) => {
        impl ShardElement for $t {
            fn reduce_sharded(
                m: &MultiContext,
                b: &ShardedBuffer<Self>,
                op: Reduction,
            ) -> Result<Self> {
                let run = || {
                    $( reduction_arm!(op, $op, m.reduce_with::<$t, $Op>(b)); )*
                    None
                };
                run().unwrap_or_else(|| {
                    Err(Error::Unsupported {
                        op: format!("the {} reduction", op.name()),
                        dtype: <$t as DeviceElement>::DTYPE,
                        reason: "the reduction is defined for integers",
                    })
                })
            }
            fn argmin_sharded(m: &MultiContext, b: &ShardedBuffer<Self>) -> Result<ArgAcc<Self>> {
                m.reduce_with::<$t, ArgMin>(b)
            }
            fn argmax_sharded(m: &MultiContext, b: &ShardedBuffer<Self>) -> Result<ArgAcc<Self>> {
                m.reduce_with::<$t, ArgMax>(b)
            }
        }
    };
}
kernels::builtin_table!(types shard_element! {} int float);

impl MultiContext {
    /// One process driving every rank: `contexts[r]` is rank `r` (GPUs, or simulators).
    pub fn new(contexts: Vec<Context>) -> Result<Self> {
        if contexts.is_empty() {
            return Err(Error::MultiGpu(
                "a multi-GPU handle needs at least one context".into(),
            ));
        }
        let world = contexts.len();
        Ok(Self {
            local: contexts.into_iter().enumerate().collect(),
            world,
            exchange: Box::new(AllLocal(world)),
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        })
    }

    /// One process driving the GPUs `ordinals` (rank `r` on `ordinals[r]`).
    pub fn cuda(ordinals: &[usize]) -> Result<Self> {
        let mut seen = Vec::new();
        for &o in ordinals {
            if seen.contains(&o) {
                return Err(Error::MultiGpu(format!(
                    "GPU {o} appears twice in the device list {ordinals:?}"
                )));
            }
            seen.push(o);
        }
        Self::new(
            ordinals
                .iter()
                .map(|&o| Context::new(o))
                .collect::<Result<Vec<_>>>()?,
        )
    }

    /// `world` simulated devices in one process.
    pub fn sim(world: usize) -> Result<Self> {
        Self::new(
            (0..world)
                .map(|_| Context::sim())
                .collect::<Result<Vec<_>>>()?,
        )
    }

    /// One process per GPU: this process is rank `rank` of `exchange.world()`, on `ctx`.
    pub fn rank(ctx: Context, rank: usize, exchange: Box<dyn Exchange>) -> Result<Self> {
        let world = exchange.world();
        if rank >= world {
            return Err(Error::MultiGpu(format!(
                "rank {rank} of a job of {}",
                plural(world as u64, "rank")
            )));
        }
        Ok(Self {
            local: vec![(rank, ctx)],
            world,
            exchange,
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        })
    }

    /// Ranks of the job.
    pub fn world(&self) -> usize {
        self.world
    }

    /// The ranks this process holds, with their contexts.
    pub fn local(&self) -> impl Iterator<Item = (usize, &Context)> {
        self.local.iter().map(|(r, c)| (*r, c))
    }

    /// The shard lengths as `usize` (each shard is allocated) and their offsets.
    fn check_layout(&self, lengths: &[u64]) -> Result<(Vec<usize>, Vec<usize>)> {
        if lengths.len() != self.world {
            return Err(Error::LengthMismatch {
                what: "the shard lengths (one shard per GPU of the job)".into(),
                expected: self.world as u64,
                got: lengths.len() as u64,
            });
        }
        let mut offsets = Vec::with_capacity(lengths.len());
        let mut sizes = Vec::with_capacity(lengths.len());
        let mut at = 0usize;
        for &l in lengths {
            let l = usize::try_from(l).map_err(|_| Error::TooLarge {
                what: "a shard length (it exceeds usize)".into(),
                size: l,
                limit: usize::MAX as u64,
            })?;
            sizes.push(l);
            offsets.push(at);
            at = at.checked_add(l).ok_or_else(|| Error::TooLarge {
                what: "the sum of the shard lengths (it overflows usize)".into(),
                size: (at as u64).saturating_add(l as u64),
                limit: usize::MAX as u64,
            })?;
        }
        Ok((sizes, offsets))
    }

    fn check_owner<T>(&self, b: &ShardedBuffer<T>) -> Result<()> {
        if b.owner != self.id {
            return Err(Error::MultiGpu(
                "this sharded buffer belongs to another multi-GPU handle".into(),
            ));
        }
        Ok(())
    }

    /// A zeroed sharded array with shard `r` of `lengths[r]` elements (`lengths` has one entry
    /// per rank of the job, the same on every rank).
    pub fn alloc_zeros<T: ShardElement + ValidAsZeroBits>(
        &self,
        lengths: &[u64],
    ) -> Result<ShardedBuffer<T>> {
        let (sizes, offsets) = self.check_layout(lengths)?;
        let per_vec = 16 / std::mem::size_of::<T>();
        let mut shards = Vec::with_capacity(self.local.len());
        for (r, ctx) in &self.local {
            let pad = offsets[*r] % per_vec;
            shards.push((ctx.alloc_zeros::<T>(pad + sizes[*r])?, pad));
        }
        Ok(ShardedBuffer {
            owner: self.id,
            shard_lengths: lengths.to_vec(),
            lengths: sizes,
            offsets,
            shards,
        })
    }

    /// Copy `data` into this process's shards of `b`: `data[i]` is the `i`-th local rank's
    /// shard (its length must match).
    pub fn htod_local<T: ShardElement>(
        &self,
        data: &[&[T]],
        b: &mut ShardedBuffer<T>,
    ) -> Result<()> {
        self.check_owner(b)?;
        if data.len() != self.local.len() {
            return Err(Error::LengthMismatch {
                what: "the pieces of data (one per rank this process holds)".into(),
                expected: self.local.len() as u64,
                got: data.len() as u64,
            });
        }
        for (((r, ctx), (buf, pad)), d) in self.local.iter().zip(&mut b.shards).zip(data) {
            if d.len() != b.lengths[*r] {
                return Err(Error::LengthMismatch {
                    what: format!("the data for rank {r}'s shard (as long as the shard)"),
                    expected: b.lengths[*r] as u64,
                    got: d.len() as u64,
                });
            }
            ctx.htod_into(d, buf.view_mut(*pad..*pad + d.len())?)?;
        }
        Ok(())
    }

    /// One process holding every rank: `data` cut into shards of `lengths` and copied to them.
    pub fn htod<T: ShardElement + ValidAsZeroBits>(
        &self,
        data: &[T],
        lengths: &[u64],
    ) -> Result<ShardedBuffer<T>> {
        self.require_all_local("copy a whole array to the devices")?;
        let mut b = self.alloc_zeros::<T>(lengths)?;
        if b.len() != data.len() as u64 {
            return Err(Error::LengthMismatch {
                what: "the data (as long as the shard lengths add up to)".into(),
                expected: b.len(),
                got: data.len() as u64,
            });
        }
        let pieces: Vec<&[T]> = b
            .offsets
            .iter()
            .zip(&b.lengths)
            .map(|(&o, &l)| &data[o..o + l])
            .collect();
        self.htod_local(&pieces, &mut b)?;
        Ok(b)
    }

    /// This process's shards, copied to the host (one vector per local rank).
    pub fn dtoh_local<T: ShardElement>(&self, b: &ShardedBuffer<T>) -> Result<Vec<Vec<T>>> {
        self.check_owner(b)?;
        self.local
            .iter()
            .zip(&b.shards)
            .map(|((r, ctx), (buf, pad))| ctx.dtoh(buf.view(*pad..*pad + b.lengths[*r])?))
            .collect()
    }

    /// One process holding every rank: the whole logical array.
    pub fn dtoh<T: ShardElement>(&self, b: &ShardedBuffer<T>) -> Result<Vec<T>> {
        self.require_all_local("copy a whole array to the host")?;
        Ok(self.dtoh_local(b)?.concat())
    }

    fn require_all_local(&self, what: &str) -> Result<()> {
        if self.local.len() != self.world {
            return Err(Error::MultiGpu(format!(
                "this process holds {} of the job's {}: it cannot {what} (use the _local calls)",
                self.local.len(),
                plural(self.world as u64, "rank")
            )));
        }
        Ok(())
    }

    /// Set every element of the sharded array to `value`, on the devices (a memset: no host
    /// copy, so arrays larger than host memory fill too).
    pub fn fill<T: ShardElement>(&self, b: &mut ShardedBuffer<T>, value: T) -> Result<()> {
        self.check_owner(b)?;
        let w = value.to_words();
        let bits = w[0] as u64
            | if T::WORDS == 2 {
                (w[1] as u64) << 32
            } else {
                0
            };
        for ((r, ctx), (buf, pad)) in self.local.iter().zip(&mut b.shards) {
            let len = b.lengths[*r];
            let mut v = buf.view_mut(*pad..*pad + len)?;
            let (a, _write) = ctx.write(&mut v)?;
            ctx.fill_raw(a, bits, std::mem::size_of::<T>(), len)?;
        }
        Ok(())
    }

    /// Element `index` of the logical array, read from the rank that holds it (which must be
    /// one of this process's).
    pub fn get<T: ShardElement>(&self, b: &ShardedBuffer<T>, index: u64) -> Result<T> {
        self.check_owner(b)?;
        for ((r, ctx), (buf, pad)) in self.local.iter().zip(&b.shards) {
            let o = b.offsets[*r] as u64;
            if (o..o + b.shard_lengths[*r]).contains(&index) {
                let at = pad + (index - o) as usize;
                return Ok(ctx.dtoh(buf.view(at..at + 1)?)?[0]);
            }
        }
        Err(Error::MultiGpu(format!(
            "element {index} is not in this process's shards (of {})",
            plural(b.len(), "element")
        )))
    }
}

#[cfg(feature = "nccl")]
pub mod nccl;

/// The names of the tile-partials kernels this module launches (for the library's index test):
/// one per pair of the kernels' built-in table that [`ShardElement`] covers.
#[cfg(test)]
pub(crate) fn kernel_names() -> Vec<&'static str> {
    use kernels::reduce::tiles::TilesInstance;
    let mut names = vec![];
    macro_rules! each {
        ($t:ident $op:ident $Op:path) => {
            names.push(<$Op as TilesInstance<$t>>::TILES_KERNEL.name)
        };
    }
    kernels::builtin_table!(pairs each! {} int float);
    names
}
