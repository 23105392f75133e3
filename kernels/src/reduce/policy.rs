//! Tuning of the one-launch reduction, in one place (CUB's `tuning_*.cuh` are the model): the
//! shape every reduction kernel is compiled for and the host launches with, and why.
//!
//! One policy serves every architecture, on purpose: the tile set of a reduction (and so the
//! association order of a float sum) depends on these numbers and on `n` alone, which is what
//! makes a result bitwise identical on an A100, an H100, an H200 and the simulator. What does
//! differ per device is only the physical grid (how many blocks share the tiles), which the
//! host reads from the driver's occupancy calculator at run time and which never changes a bit.

/// The shape of the one-launch reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReducePolicy {
    /// Threads per block. A multiple of 32: the warp collectives assume full warps.
    pub block: u32,
    /// Bytes each thread loads per grid-stride step: two 16-byte vectors in flight. Four in
    /// flight were slower (CHANGELOG.md, issue 4).
    pub bytes_per_step: u64,
    /// Most tiles (virtual blocks) of one reduction, and the length of the partials workspace:
    /// 2048 tiles of 256 threads cover 2^28 f32 in 64 steps per thread, and leave the last
    /// block 2048 partials to combine (a few microseconds).
    pub max_tiles: u32,
    /// Inputs of at most this many tiles run on one block, which then needs no ticket (grid
    /// 1): small inputs are latency-bound, and the ticket's fence, atomic and partials cost
    /// more than the parallel loads save (BENCHMARKS.md, Small inputs and the call path).
    pub single_block_tiles: u32,
}

/// The policy of every architecture (see the module docs for why there is one).
pub const POLICY: ReducePolicy = ReducePolicy {
    block: 256,
    bytes_per_step: 32,
    max_tiles: 2048,
    single_block_tiles: 2,
};

/// The policy the kernels for `sm` (e.g. 90 for sm_90) are compiled with.
pub const fn for_arch(_sm: u32) -> ReducePolicy {
    POLICY
}

/// Most tiles of a sharded (multi-GPU) reduction: the partials every rank gathers (at most
/// 8192 × 16 bytes).
pub const SHARDED_MAX_TILES: u64 = 8192;

/// Elements per tile of a sharded reduction over `n` elements of `elem_bytes` bytes: a
/// function of `n` and the type alone (never of the ranks or the shard lengths, so the bits
/// are the same on any number of GPUs), a multiple of a step of every thread of a block, and
/// so that at most [`SHARDED_MAX_TILES`] tiles cover `n`.
pub const fn sharded_tile_elems(n: u64, elem_bytes: u64) -> u64 {
    let elem_bytes = if elem_bytes == 0 { 1 } else { elem_bytes };
    let step = POLICY.block as u64 * POLICY.bytes_per_step / elem_bytes;
    let tiles = n.div_ceil(SHARDED_MAX_TILES).div_ceil(step);
    (if tiles == 0 { 1 } else { tiles }) * step
}

/// Threads per block of the reduction kernels ([`POLICY`]).
pub const BLOCK: u32 = POLICY.block;
const _: () = assert!(BLOCK.is_multiple_of(32) && BLOCK <= 1024);

impl ReducePolicy {
    /// Tiles of a reduction over `n` elements of `elem_bytes` bytes: depends on those alone
    /// (never on the device), so the combining order, and thus the bits of a float result,
    /// are reproducible everywhere. The physical grid may be smaller.
    pub const fn tiles(&self, n: u64, elem_bytes: u64) -> u32 {
        let per_block = self.block as u64 * self.bytes_per_step / elem_bytes;
        let blocks = n.div_ceil(per_block);
        if blocks == 0 {
            1
        } else if blocks > self.max_tiles as u64 {
            self.max_tiles
        } else {
            blocks as u32
        }
    }

    /// Elements one thread visits in sequence at most (for error bounds).
    pub const fn per_thread_steps(&self, n: u64, elem_bytes: u64) -> u64 {
        let tiles = self.tiles(n, elem_bytes) as u64;
        let per_step = self.bytes_per_step / elem_bytes;
        n.div_ceil(tiles * self.block as u64 * per_step)
    }
}

/// The shape of the segmented reductions (`reduce::segmented`). Like [`POLICY`], one for every
/// architecture: a segment's chunks (and so its float bits) follow from it. Measurements:
/// BENCHMARKS.md, Segmented reduce; the shapes tried, CHANGELOG.md, issue 15.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentedPolicy {
    /// Threads per block; a block takes one segment per warp at a time.
    pub block: u32,
    /// Longest segment reduced by one warp alone; longer ones go by chunks to whole blocks.
    pub warp_max: u64,
    /// Scalar loads a lane of a warp-reduced segment keeps in flight.
    pub warp_loads: u64,
    /// 16-byte loads a thread keeps in flight reducing a chunk (fewer leave the chunk loop
    /// latency-bound).
    pub vec_loads: u64,
    /// 16-byte loads a thread keeps in flight in the fixed-size rows kernel: two, like the
    /// one-launch reduction (few registers, many blocks per SM).
    pub rows_loads: usize,
    /// 16-byte loads a thread keeps in flight in the listed-segments kernel: six, not
    /// `vec_loads`, so that the f32 sum fits 80 registers without spilling.
    pub listed_loads: usize,
    /// Most segments the listed-segments kernel takes: a `u64` each in dynamic shared memory.
    pub listed_max: u64,
    /// 16-byte vectors of the stage that short segments are copied to (dynamic shared memory;
    /// a block's loads in flight): the bits do not depend on it.
    pub stage_vecs: u64,
    /// Longest average segment length (elements / segments) at which CSR offsets go by tiles
    /// (`segmented::tiles_device`): the tiles form costs about the same per element whatever
    /// the lengths, the warp per segment about a fixed amount per segment, and the two cross
    /// between means of 128 and 160 on the H100 (BENCHMARKS.md, Segmented reduce). The bits of
    /// a float sum depend on the form taken, which depends on this and on the counts alone.
    pub tiles_max_average: u64,
}

/// The segmented policy of every architecture.
pub const SEGMENTED: SegmentedPolicy = SegmentedPolicy {
    block: 256,
    warp_max: 1024,
    warp_loads: 8,
    vec_loads: 8,
    rows_loads: 2,
    listed_loads: 6,
    listed_max: 2048,
    stage_vecs: 2048,
    tiles_max_average: 144,
};
const _: () = assert!(SEGMENTED.block.is_multiple_of(32) && SEGMENTED.block <= 1024);

impl SegmentedPolicy {
    /// 16-byte vectors per chunk (128 KiB at this shape): big enough that a chunk's bookkeeping
    /// (a claim, a partial, two barriers) is small, small enough that one long segment spreads
    /// over dozens of blocks.
    pub const fn chunk_vecs(&self) -> u64 {
        4 * self.vec_loads * self.block as u64
    }
}

/// The mean-and-variance kernel's shape (`reduce::moments`): the reduction's, with 792 tiles
/// at most (six resident blocks of 40 registers on each of an H100's or H200's 132 SMs), so
/// from 2^18 elements every block takes one tile, finishes its shifted sums once, and the last
/// block merges 792 partials, not 2048 (BENCHMARKS.md, Transforms). A constant, like
/// every tile count: the bits depend on `n` alone (another SM count only balances less well).
pub const MEAN_VAR: ReducePolicy = ReducePolicy {
    max_tiles: 792,
    ..POLICY
};
const _: () = assert!(MEAN_VAR.max_tiles <= POLICY.max_tiles);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiles_depend_on_n_only_and_are_bounded() {
        let p = POLICY;
        assert_eq!(p.tiles(0, 4), 1);
        assert_eq!(p.tiles(1, 8), 1);
        let per_block = p.block as u64 * 8;
        assert_eq!(p.tiles(per_block, 4), 1);
        assert_eq!(p.tiles(per_block + 1, 4), 2);
        assert_eq!(p.tiles(per_block + 1, 8), 3);
        assert_eq!(p.tiles(u64::MAX, 4), p.max_tiles);
        assert_eq!(p.per_thread_steps(1 << 30, 4), 256);
        assert_eq!(for_arch(80), for_arch(90));
    }
}
