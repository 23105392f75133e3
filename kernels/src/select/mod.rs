//! Stream compaction in ONE pass (CUB's `DeviceSelect` / `DevicePartition`): the elements a
//! flag keeps are written in input order, with their indices if asked, and (a partition) the
//! others in input order to a second output; the count of kept elements goes to the device. A
//! three-way partition ([`ThreeWay`]) splits the others once more by a second predicate: its
//! part between the kept and the rest, a second count and a second look-back field beside it.
//!
//! The flag of element `i` is, by the launch's mode: the predicate `P(x[i])` (select, `nonzero`,
//! partition), `flags[i] != 0` (a byte mask: `masked_select`), or `i == 0 || x[i] != x[i-1]`
//! (unique consecutive; IEEE `!=`, so every NaN is kept, as CUB and PyTorch do).
//!
//! A tile is the block's threads ([`BLOCK`], or [`SMALL_BLOCK`] for short inputs:
//! [`block_for`]) × [`items`] elements. Each warp reads its stretch as rows of
//! coalesced 16-byte vectors (lane `l` of row `v` holds elements `(32 v + l) * PER_VEC ..`),
//! so no L2 sector is fetched twice. The kept elements' positions come from one warp scan of
//! each thread's per-row counts (packed into fields of one word), the warps' counts through
//! shared memory, and
//! the count before the tile from the scan's decoupled look-back ([`crate::scan::lookback`]):
//! integer sums are exact in any association, so the output is the same on every run. Every
//! element is staged in shared memory, with no branch: the kept at their tile positions, the
//! others from the far end, reversed; then written out by consecutive threads: coalesced
//! stores whatever the selectivity, in input order.

pub mod predicate;

use crate::gpu::{self, FULL_MASK};
use crate::half::{F16, HalfFloat};
use crate::ops::Element;
use crate::scan::lookback::TileStatus;
use crate::scan::next_tile;
use crate::scan::policy::ACTIVE;
use crate::scan::tile::prefetch_stretch;
pub use predicate::{
    Bound, Bounds, Flagged, MODE_FLAGGED, MODE_IF, MODE_NONTRIVIAL, MODE_RUNS, MODE_THREE_WAY,
    MODE_UNIQUE, MODE_UNIQUE_BY_KEY, NonTrivialRuns, Ordered, Predicate, Runs, Short, ThreeWay,
    Unique, UniqueByKey,
};

/// Threads per block (one tile per block), the most a launch may use.
pub const BLOCK: u32 = ACTIVE.block;
/// Threads per block of short selections and partitions ([`block_for`]): half the tile,
/// twice the tiles, so the last wave of blocks is a smaller share of the launch.
pub const SMALL_BLOCK: u32 = BLOCK / 2;
/// Whether the kernels of `mode` take their block size from the launch (else [`BLOCK`], a
/// constant): select-if (and so the partitions) and the flagged selection, which gain from
/// [`SMALL_BLOCK`] on short inputs. The others were no faster in small blocks, and a run-time
/// tile costs the three-way partition and the run encodings registers (spills: the three-way
/// partition 11% slower at 2^28; CHANGELOG.md, issue 36).
pub const fn sized_by_launch(mode: u32) -> bool {
    mode == MODE_IF || mode == MODE_FLAGGED
}
const WARPS: usize = BLOCK as usize / 32;
/// Elements per thread for `bytes`-byte elements: eight 16-byte vectors (128 bytes a thread:
/// tiles of 32 KiB, long enough to pay for their look-back), at most 32 (a thread's flags
/// are the bits of one `u32`).
pub const fn items(bytes: usize) -> usize {
    let i = 128 / bytes;
    if i > MAX_ITEMS { MAX_ITEMS } else { i }
}
/// Elements per tile for `bytes`-byte elements in blocks of `block` threads (the grid is
/// `ceil(n / tile_elems)`).
pub const fn tile_elems(bytes: usize, block: u32) -> u64 {
    block as u64 * items(bytes) as u64
}
/// A launch over fewer tiles of [`BLOCK`] threads than this (64 MiB of input) is short: it
/// runs blocks of [`SMALL_BLOCK`] (where [`sized_by_launch`]) and no L2 prefetch (its tiles
/// are mostly in flight at once, so the prefetches only add requests). At 2^22 elements of 4
/// and 8 bytes each was faster, at 2^24 neither (CHANGELOG.md, issue 36).
pub const SHORT_BELOW_TILES: u64 = 2048;
/// Whether a launch over `n` elements of `bytes` bytes is short ([`SHORT_BELOW_TILES`]).
pub const fn is_short(n: u64, bytes: usize) -> bool {
    n.div_ceil(tile_elems(bytes, BLOCK)) < SHORT_BELOW_TILES
}
/// The block size of a launch in `mode` over `n` elements of `bytes` bytes: [`SMALL_BLOCK`]
/// for short inputs, whose few tiles of [`BLOCK`] threads would leave a partial last wave of
/// blocks (2^22 u32: 512 tiles on 396 block slots of an H100), else [`BLOCK`].
pub const fn block_for(n: u64, bytes: usize, mode: u32) -> u32 {
    if sized_by_launch(mode) && is_short(n, bytes) {
        SMALL_BLOCK
    } else {
        BLOCK
    }
}
/// Dynamic shared memory a launch of `block` threads needs: the staging, 128 bytes a thread.
pub const fn shared_bytes(block: u32) -> u32 {
    block * 128
}
const MAX_ITEMS: usize = 32;
/// 16-byte vectors a thread, at most (rows of a warp's stretch).
const MAX_VECS: usize = 8;
/// A warp's staging: 32 lanes x 128 bytes of elements, or their `u32` indices.
const REGION_BYTES: usize = 32 * 128;
/// Blocks per SM the registers of a kernel over `bytes`-byte elements in `mode` are capped
/// for (`launch_bounds!`): three (80 registers, no spills), a tile more in flight per SM than
/// at two while the others wait in their look-back, faster in every cell (CHANGELOG.md, issue
/// 36). Unique by key of keys under 8 bytes (values held in registers) and the 2-byte run
/// encodings spill at three: two. 8-byte selections, partitions and unique (16 elements a
/// thread) fit 64 registers (f64's select-if and unique spill 16 bytes): four, more of the
/// input in flight (faster in every such u64 cell, CHANGELOG.md); the rest spill at four.
pub const fn min_blocks(bytes: usize, mode: u32) -> u32 {
    if (mode == MODE_UNIQUE_BY_KEY && bytes < 8)
        || ((mode == MODE_RUNS || mode == MODE_NONTRIVIAL) && bytes < 4)
    {
        2
    } else if bytes == 8
        && (mode == MODE_IF
            || mode == MODE_FLAGGED
            || mode == MODE_UNIQUE
            || mode == MODE_THREE_WAY)
    {
        4
    } else {
        3
    }
}
/// How far ahead a block asks L2 for a later tile, in the element bytes the tiles between
/// may move (read, and written kept or not; the host counts them, indices and run lengths
/// aside): farther, the tiles' own writes evict the prefetched lines before they are read
/// (unique by key read 1.6x its input's bytes from DRAM at 192 tiles). 6 MiB: 96 tiles of a
/// selection of u32, 48 of a unique by key of u32 keys and values (CHANGELOG.md, issue 36).
/// None in a short launch ([`is_short`]).
pub const PREFETCH_BYTES: u64 = 6 << 20;
/// The look-back's first wait (ns) before a tile reads its predecessors (twice it for a tile
/// that writes a quarter of its input's bytes or reads twice them).
pub const DELAY_NS: u32 = 1000;

/// The parameters of [`SelectParams`]'s kernels, written once: the struct and every kernel
/// entry's parameter list ([`kernel_params!`](crate::kernel_params)).
#[macro_export]
#[doc(hidden)]
macro_rules! select_params {
    ($($mode:tt)*) => {
        $crate::kernel_params! { $($mode)* SelectParams<T> {
            /// The input, `n` elements.
            input: *const T,
            /// One byte per element (the flagged mode), else null.
            flags: *const u8,
            /// The kept elements (the first `capacity`), or null.
            out: *mut T,
            /// The kept elements' indices (the first `capacity`), or null.
            indices: *mut u64,
            /// The other elements (the first `rest_capacity`), or null.
            rest: *mut T,
            /// Three-way partition: the second part (the first `second_capacity`), else null.
            second: *mut T,
            /// Run-length encoding: each run's length (the first `capacity`), else null.
            counts: *mut u64,
            /// Unique by key (a [`UniqueByKey`] kernel over the keys): the values,
            /// `value_bytes` each.
            values: *const u8,
            /// Unique by key: each run's first value (the first `capacity`).
            values_out: *mut u8,
            /// Bytes of a value: 2, 4 or 8.
            value_bytes: u32,
            /// Room in `out` and `indices`.
            capacity: u64,
            /// Room in `rest`.
            rest_capacity: u64,
            /// Room in `second`.
            second_capacity: u64,
            /// Where the number of kept elements goes (a three-way partition: then the second
            /// part's).
            num_selected: *mut u64,
            /// Elements.
            n: u64,
            /// The built-in predicate's lower bound, its bits (`ShflValue` words, low first).
            lo: u64,
            /// The upper bound's bits.
            hi: u64,
            /// How the bounds apply ([`Bound::mode`](crate::select::Bound)).
            mode: u32,
            /// A three-way partition's second bounds and their mode.
            lo2: u64,
            hi2: u64,
            mode2: u32,
            /// The tile counter: 0 at launch, 0 again after.
            counter: *mut u32,
            /// 32 bytes a tile: the counts' look-back (tagged slots).
            status: *mut u32,
            /// New for every launch.
            epoch: u32,
            /// The look-back's first wait in nanoseconds.
            delay_ns: u32,
            /// Tiles ahead to prefetch into L2 (0: none).
            prefetch: u32,
        } }
    };
}

crate::select_params!(struct
    /// The launch parameters of [`select_device`] (the kernel's one parameter, by value).
);

/// Compaction of the `n` elements of `input` by `P` (its [`Predicate::MODE`]: the predicate,
/// [`Flagged`], [`Unique`]): kept element number `k` (in input order) goes to
/// `out[k]` and its index to `indices[k]` for `k < capacity` (each output when not null), the
/// `m`-th other element to `rest[m]` for `m < rest_capacity` (when not null), and the number
/// kept to `num_selected[0]`. Launch [`block_for`] threads a block (a multiple of 32, at most
/// [`BLOCK`]; [`BLOCK`] unless [`sized_by_launch`]) with [`shared_bytes`] of dynamic shared memory, `ceil(n / tile_elems)` blocks
/// (`n > 0`), counter 0, a fresh epoch, 32 status bytes a tile. `prefetch`: how many tiles
/// ahead each block asks L2 for a later block's data (0: none).
///
/// # Safety
/// Pointers valid for the sizes above; the outputs do not overlap the input.
#[inline(always)]
// Loops over constant ranges with constant-indexed arrays: fully unrolled, registers.
#[allow(clippy::needless_range_loop)]
pub unsafe fn select_device<T: Element, P: Predicate<T>>(p: SelectParams<T>) {
    let SelectParams {
        input,
        flags,
        out,
        indices,
        rest,
        second,
        counts,
        values,
        values_out,
        value_bytes,
        capacity,
        rest_capacity,
        second_capacity,
        num_selected,
        n,
        lo,
        hi,
        mode,
        lo2,
        hi2,
        mode2,
        counter,
        status,
        epoch,
        delay_ns,
        prefetch,
    } = p;
    let bits = |w: u64| T::from_words([w as u32, (w >> 32) as u32, 0, 0]);
    let bound = Bound {
        lo: bits(lo),
        hi: bits(hi),
        mode,
    };
    let bound2 = Bound {
        lo: bits(lo2),
        hi: bits(hi2),
        mode: mode2,
    };
    // A three-way partition: a second part (`keep2`, its counts, its look-back) after the kept.
    let three = P::MODE == MODE_THREE_WAY;
    // Staging (dynamic, [`shared_bytes`]): one tile of values, or of their tile-local `u32`
    // indices, a region of [`REGION_BYTES`] a warp; sized by the launch's block.
    let stage = gpu::dynamic_shared::<u128>();
    let warp_counts = crate::static_shared!(SEL_WARP_COUNTS: [u32; WARPS]);
    let tile_base = crate::static_shared!(SEL_TILE_BASE: [u64; 1]);
    let warp_last = crate::static_shared!(SEL_WARP_LAST: [u32; WARPS]);
    let run_before = crate::static_shared!(SEL_RUN_BEFORE: [u64; 1]);
    let warp_counts2 = crate::static_shared!(SEL_WARP_COUNTS2: [u32; WARPS]);
    let tile_base2 = crate::static_shared!(SEL_TILE_BASE2: [u64; 1]);
    let tile = unsafe { next_tile(counter) };
    let lane = gpu::lane_id();
    let warp = gpu::warp_id() as usize;
    let per_vec = T::PER_VEC;
    let items = items(size_of::<T>());
    let block = if sized_by_launch(P::MODE) {
        gpu::block_dim_x()
    } else {
        P::BLOCK
    };
    let warps = block as usize / 32;
    let tile_elems = tile_elems(size_of::<T>(), block);
    // Rows: 16-byte vectors a thread (8, or 4 for 2-byte elements).
    let vecs = items / per_vec;
    let tile_start = tile * tile_elems;
    // The warp's stretch; this thread's element `v * per_vec + j` is at `elem(v, j)`, tile
    // position `local(v, j)`.
    let warp_first = (warp * 32 * items) as u32;
    let stretch = tile_start + warp_first as u64;
    let local = |v: usize, j: usize| warp_first + ((v * 32 + lane as usize) * per_vec + j) as u32;
    let elem = |v: usize, j: usize| tile_start + local(v, j) as u64;
    let full = tile_start + tile_elems <= n;

    // 1. The elements: 16-byte vectors in a full tile of an aligned input, else one by one.
    // Slots past `n` hold zero bits (never kept: their flags are 0).
    let fill = T::from_words([0; 4]);
    let mut x = [fill; MAX_ITEMS];
    if full && input as usize & 15 == 0 {
        for v in 0..MAX_VECS {
            if v < vecs {
                let w =
                    unsafe { gpu::load_nc_v4_b32(input.add(elem(v, 0) as usize) as *const u32) };
                if per_vec == 8 {
                    let e = T::unpack8(w);
                    for j in 0..8 {
                        x[v * 8 + j] = e[j];
                    }
                } else {
                    let e = T::unpack(w);
                    for j in 0..4 {
                        if j < per_vec {
                            x[v * per_vec + j] = e[j];
                        }
                    }
                }
            }
        }
    } else {
        for v in 0..MAX_VECS {
            for j in 0..8 {
                if v < vecs && j < per_vec {
                    let i = elem(v, j);
                    if i < n {
                        x[v * per_vec + j] = unsafe { input.add(i as usize).read() };
                    }
                }
            }
        }
    }

    // While the loads are in flight, ask L2 for this warp's stretch of tile `tile +
    // prefetch`, which a block starting a fraction of a block lifetime from now will claim:
    // DRAM stays busy through this block's look-back and writes, when it loads nothing.
    if prefetch > 0 && tile_start + (prefetch as u64 + 1) * tile_elems <= n {
        let pf = stretch + prefetch as u64 * tile_elems;
        prefetch_stretch(input, pf, (32 * items) as u64);
        if P::MODE == MODE_FLAGGED {
            prefetch_stretch(flags, pf, (32 * items) as u64);
        }
    }
    // Unique by key (a unique kernel given values): this warp's values into L2 now, read by
    // the kept elements' positions after the look-back (and a later tile's, as the input's).
    let by_key = P::MODE == MODE_UNIQUE_BY_KEY && !values.is_null();
    // Values of 4 bytes or fewer wait in registers through the look-back (one word an
    // element); 8-byte ones (twice the registers) are read after it by position.
    let small_values = by_key && value_bytes <= 4;
    if by_key {
        let vb = value_bytes as u64;
        let span = 32 * items as u64 * vb;
        if full && !small_values {
            prefetch_stretch(values, stretch * vb, span);
        }
        if prefetch > 0 && tile_start + (prefetch as u64 + 1) * tile_elems <= n {
            prefetch_stretch(values, (stretch + prefetch as u64 * tile_elems) * vb, span);
        }
    }

    // Unique by key, small values: held in registers through the look-back; 4-byte values of
    // 4-byte keys loaded with the keys (one latency, not two), others after the staging
    // (8-byte keys' were slower loaded early; CHANGELOG.md).
    let mut vw = [0u32; MAX_ITEMS];
    let rows_of_words = per_vec == 4 && value_bytes == 4;
    macro_rules! load_values {
        () => {
            for v in 0..MAX_VECS {
                if v < vecs {
                    let e0 = elem(v, 0) as usize;
                    if full && rows_of_words && values as usize & 15 == 0 {
                        let w = unsafe { gpu::load_nc_v4_b32((values as *const u32).add(e0)) };
                        for j in 0..4 {
                            vw[v * per_vec + j] = w[j];
                        }
                    } else {
                        for j in 0..8 {
                            if j < per_vec && (full || elem(v, j) < n) {
                                vw[v * per_vec + j] = unsafe {
                                    if value_bytes == 4 {
                                        (values as *const u32).add(e0 + j).read()
                                    } else {
                                        (values as *const u16).add(e0 + j).read() as u32
                                    }
                                };
                            }
                        }
                    }
                }
            }
        };
    }
    if small_values && rows_of_words {
        load_values!();
    }

    // 2. The flags, one bit per element (bit `v * per_vec + j`); in a partial tile none past
    //    `n` (masked after, so that full tiles pay no bounds checks).
    let mut keep = 0u32;
    // A three-way partition's second part: `P::second` of those `P::select` rejects.
    let mut keep2 = 0u32;
    // Runs: the look-back carries the runs and the last head (run-length encoding, non-trivial
    // runs).
    let runs = P::MODE == MODE_RUNS || P::MODE == MODE_NONTRIVIAL;
    // Non-trivial runs: the runs' last elements (the runs of one excluded), and whether the
    // warp's first element is a head.
    let mut tails = 0u32;
    let mut warp_opens_on_head = true;
    if P::MODE == MODE_UNIQUE || P::MODE == MODE_UNIQUE_BY_KEY || runs {
        // The element before each: the previous slot, the previous lane's last of the row, or
        // (lane 0) the last lane's of the row before; before the warp's first, from memory.
        let before_stretch = if lane == 0 && stretch > 0 && stretch <= n {
            unsafe { input.add(stretch as usize - 1).read() }
        } else {
            fill
        };
        let mut prev_row_last = before_stretch;
        for v in 0..MAX_VECS {
            if v < vecs {
                let last = x[v * per_vec + per_vec - 1];
                let from_left = gpu::shfl_up_sync(FULL_MASK, last, 1, 32);
                let from_row = gpu::shfl_sync(FULL_MASK, prev_row_last, 31, 32);
                let first_prev = if lane > 0 {
                    from_left
                } else if v > 0 {
                    from_row
                } else {
                    before_stretch
                };
                for j in 0..8 {
                    if j < per_vec {
                        let prev = if j == 0 {
                            first_prev
                        } else {
                            x[v * per_vec + j - 1]
                        };
                        // IEEE: a NaN differs from itself.
                        let head = !(x[v * per_vec + j] == prev);
                        keep |= (head as u32) << (v * per_vec + j);
                    }
                }
                prev_row_last = last;
            }
        }
        // The input's first element heads a run.
        if stretch == 0 && lane == 0 {
            keep |= 1;
        }
        if P::MODE == MODE_NONTRIVIAL {
            // Element `b` ends a run when the one after it heads one (or is past `n`): the
            // next slot, the next lane's first of the row, lane 0's first of the next row, or
            // (the stretch's last) the element after the stretch, from memory.
            let heads = keep;
            let row_bits = (1u32 << per_vec) - 1;
            let end = stretch + (32 * items) as u64;
            let after = lane == 31
                && (end >= n || !(unsafe { input.add(end as usize).read() } == x[items - 1]));
            let mut next = 0u32;
            for v in 0..MAX_VECS {
                if v < vecs {
                    let h = heads >> (v * per_vec) & row_bits;
                    let right = gpu::shfl_down_sync(FULL_MASK, h & 1, 1, 32);
                    let below = if v + 1 < vecs {
                        heads >> ((v + 1) * per_vec) & 1
                    } else {
                        0
                    };
                    let below = gpu::shfl_sync(FULL_MASK, below, 0, 32);
                    let last = if lane < 31 {
                        right
                    } else if v + 1 < vecs {
                        below
                    } else {
                        after as u32
                    };
                    next |= ((h >> 1) | last << (per_vec - 1)) << (v * per_vec);
                }
            }
            if !full {
                for v in 0..MAX_VECS {
                    for j in 0..8 {
                        if v < vecs && j < per_vec && elem(v, j) + 1 >= n {
                            next |= 1 << (v * per_vec + j);
                        }
                    }
                }
            }
            warp_opens_on_head = gpu::shfl_sync(FULL_MASK, heads & 1, 0, 32) != 0;
            // Kept: the heads of runs of two or more; their ends are the other runs' last.
            keep = heads & !next;
            tails = next & !heads;
        }
    } else if P::MODE == MODE_FLAGGED {
        // A row's `per_vec` flag bytes are consecutive: one load of 2, 4 or 8 bytes (aligned),
        // every row's issued before any is used (a branch per row waited on each in turn).
        let row_bits = (1u32 << per_vec) - 1;
        if full && flags as usize & (per_vec - 1) == 0 {
            let mut w = [0u64; MAX_VECS];
            for v in 0..MAX_VECS {
                if v < vecs {
                    let at = unsafe { flags.add(elem(v, 0) as usize) };
                    w[v] = unsafe {
                        match per_vec {
                            2 => (at as *const u16).read() as u64,
                            4 => (at as *const u32).read() as u64,
                            _ => (at as *const u64).read(),
                        }
                    };
                }
            }
            for v in 0..MAX_VECS {
                if v < vecs {
                    keep |= (nonzero_bytes(w[v]) & row_bits) << (v * per_vec);
                }
            }
        } else {
            for v in 0..MAX_VECS {
                for j in 0..8 {
                    if v < vecs && j < per_vec && elem(v, j) < n {
                        let f = unsafe { flags.add(elem(v, j) as usize).read() } != 0;
                        keep |= (f as u32) << (v * per_vec + j);
                    }
                }
            }
        }
    } else {
        for v in 0..MAX_VECS {
            for j in 0..8 {
                if v < vecs && j < per_vec {
                    let f = P::select(x[v * per_vec + j], &bound);
                    keep |= (f as u32) << (v * per_vec + j);
                    if three {
                        let s = P::second(x[v * per_vec + j], &bound2) & !f;
                        keep2 |= (s as u32) << (v * per_vec + j);
                    }
                }
            }
        }
    }
    if !full {
        let mut inside = 0u32;
        for v in 0..MAX_VECS {
            for j in 0..8 {
                if v < vecs && j < per_vec {
                    inside |= ((elem(v, j) < n) as u32) << (v * per_vec + j);
                }
            }
        }
        keep &= inside;
        tails &= inside;
        keep2 &= inside;
    }

    // 3. Positions in the warp's stretch: rows first, then lanes, then slots. Each row's kept
    //    count goes to a field of one word (8 bits; 16 for 8 elements a vector, whose row can
    //    keep 256), so one warp scan gives every row's lanes-before at once.
    //    `positions(mask)`: each row's first position and the warp's count.
    let field = if per_vec > 4 { 16 } else { 8 };
    let row_bits = (1u32 << per_vec) - 1;
    let positions = |mask: u32| {
        let mut mine = 0u64;
        for v in 0..MAX_VECS {
            if v < vecs {
                mine |= ((mask >> (v * per_vec) & row_bits).count_ones() as u64) << (v * field);
            }
        }
        let inclusive = crate::warp::warp_inclusive_scan(mine, u64::wrapping_add);
        let lanes_before = inclusive - mine;
        let rows = gpu::shfl_sync(FULL_MASK, inclusive, 31, 32);
        let mut row_at = [0u32; MAX_VECS];
        let mut count = 0u32;
        for v in 0..MAX_VECS {
            if v < vecs {
                let f = |w: u64| (w >> (v * field)) as u32 & ((1u32 << field) - 1);
                row_at[v] = count + f(lanes_before);
                count += f(rows);
            }
        }
        (row_at, count)
    };
    let (row_at, warp_count) = positions(keep);
    let (row_at2, warp_count2) = if three {
        positions(keep2)
    } else {
        ([0; MAX_VECS], 0)
    };
    // Run-length encoding: one past the tile position of the warp's last head (0: none).
    if runs {
        let mut last = 0u32;
        for v in 0..MAX_VECS {
            for j in 0..8 {
                if v < vecs && j < per_vec && keep >> (v * per_vec + j) & 1 != 0 {
                    last = local(v, j) + 1;
                }
            }
        }
        let last = crate::warp::warp_reduce(last, u32::max);
        if lane == 0 {
            unsafe { warp_last.write(warp, last) };
        }
    }
    // 4. Stage every element in the warp's own region of shared memory (4 KiB a warp), with
    //    no branch: the kept from the front at their warp positions, the others from the back,
    //    reversed (a branch per element diverged at 50% kept). Done before the block's barrier,
    //    so the elements' registers are free while the block waits in the look-back.
    let region = warp * REGION_BYTES; // bytes
    let vals = unsafe { stage.cast::<T>() };
    let v0 = region / size_of::<T>();
    let warp_elems = 32 * items as u32;
    // Element `(v, j)`'s slot in the region: `at` (the warp's kept before it) or, the
    // `li - at`-th other, from the back (`li`: its index in the warp's stretch).
    let slot = |v: usize, j: usize, at: u32| {
        if keep >> (v * per_vec + j) & 1 != 0 {
            at
        } else {
            warp_elems - 1 - (local(v, j) - warp_first) + at
        }
    };
    // `$put(v, j, slot)` for each element (a macro: inlined, no closure object on the GPU).
    macro_rules! stage_each {
        ($put:expr) => {{
            let put = $put;
            for v in 0..MAX_VECS {
                if v < vecs {
                    let mut at = row_at[v];
                    for j in 0..8 {
                        if j < per_vec {
                            put(v, j, slot(v, j, at));
                            at += keep >> (v * per_vec + j) & 1;
                        }
                    }
                }
            }
        }};
    }
    // `$put(v, j, at)` for the elements of `$mask` only (`at`: the warp's before it; each row's
    // first in `$rows`), a predicated store each: when nothing reads the others, half the work
    // of `stage_each`.
    macro_rules! stage_kept {
        ($mask:expr, $rows:expr, $put:expr) => {{
            let (mask, rows, put) = ($mask, $rows, $put);
            for v in 0..MAX_VECS {
                if v < vecs {
                    let mut at = rows[v];
                    for j in 0..8 {
                        if j < per_vec {
                            let k = mask >> (v * per_vec + j) & 1;
                            if k != 0 {
                                put(v, j, at);
                            }
                            at += k;
                        }
                    }
                }
            }
        }};
    }
    // The warp's region as a shared address, computed once.
    let slots = unsafe { gpu::shared_slots(vals, v0) };
    if three {
        // The second part after the warp's kept: element `(v, j)` at `warp_count + at2` (`at2`
        // its second-part elements before it); the rest from the back, as above.
        for v in 0..MAX_VECS {
            if v < vecs {
                let (mut at, mut at2) = (row_at[v], row_at2[v]);
                for j in 0..8 {
                    if j < per_vec {
                        let b = v * per_vec + j;
                        let (k1, k2) = (keep >> b & 1, keep2 >> b & 1);
                        let s = if k1 != 0 {
                            at
                        } else if k2 != 0 {
                            warp_count + at2
                        } else {
                            warp_elems - 1 - (local(v, j) - warp_first) + at + at2
                        };
                        unsafe { gpu::store_slot(slots, s, x[b]) };
                        at += k1;
                        at2 += k2;
                    }
                }
            }
        }
    } else if !rest.is_null() {
        stage_each!(|v: usize, j: usize, s: u32| unsafe {
            gpu::store_slot(slots, s, x[v * per_vec + j])
        });
    } else if !out.is_null() {
        stage_kept!(keep, row_at, |v: usize, j: usize, s: u32| unsafe {
            gpu::store_slot(slots, s, x[v * per_vec + j])
        });
    }
    let tile_len = n.saturating_sub(tile_start).min(tile_elems) as u32;
    if small_values && !rows_of_words {
        load_values!();
    }
    if lane == 0 {
        unsafe { warp_counts.write(warp, warp_count) };
        if three {
            unsafe { warp_counts2.write(warp, warp_count2) };
        }
    }
    gpu::sync_threads();
    let mut warp_base = 0u32;
    let mut tile_count = 0u32;
    let (mut warp_base2, mut tile_count2) = (0u32, 0u32);
    for w in 0..WARPS {
        if w >= warps {
            break;
        }
        let c = unsafe { warp_counts.read(w) };
        if w < warp {
            warp_base += c;
        }
        tile_count += c;
        if three {
            let c = unsafe { warp_counts2.read(w) };
            if w < warp {
                warp_base2 += c;
            }
            tile_count2 += c;
        }
    }

    // 5. The count before the tile (warp 0): look-back over the tiles' counts (with the last
    //    head's index, for run lengths).
    if warp == 0 && runs {
        let st = TileStatus::<RunsAcc> {
            flags: status,
            aggregates: core::ptr::null_mut(),
            prefixes: core::ptr::null_mut(),
            epoch,
            first_delay_ns: delay_ns,
            tagged_slots: true,
            fixed_order: false,
        };
        let mut last = 0u32;
        for w in 0..WARPS {
            if w < warps {
                last = last.max(unsafe { warp_last.read(w) });
            }
        }
        let mine = RunsAcc {
            count: tile_count as u64,
            last: (tile_start + last as u64).saturating_sub(1),
        };
        let before = if tile > 0 {
            if lane == 0 {
                unsafe { st.publish_aggregate(tile, mine) };
            }
            let p = unsafe { st.exclusive_prefix(tile, RunsAcc::default(), RunsAcc::combine) };
            if lane == 0 {
                unsafe { st.publish_prefix(tile, RunsAcc::combine(p, mine)) };
            }
            p
        } else {
            if lane == 0 {
                unsafe { st.publish_prefix(0, mine) };
            }
            RunsAcc::default()
        };
        if lane == 0 {
            unsafe { tile_base.write(0, before.count) };
            unsafe { run_before.write(0, before.last) };
            if tile as u32 == gpu::grid_dim_x() - 1 {
                let all = RunsAcc::combine(before, mine);
                unsafe { num_selected.write(all.count) };
                // The last run ends at `n` (a non-trivial run's end is its last element's).
                if P::MODE == MODE_RUNS && all.count > 0 && all.count - 1 < capacity {
                    unsafe { counts.add(all.count as usize - 1).write(n - all.last) };
                }
            }
        }
    } else if warp == 0 && three {
        // The two parts' counts, one look-back.
        let st = TileStatus::<TwoCounts> {
            flags: status,
            aggregates: core::ptr::null_mut(),
            prefixes: core::ptr::null_mut(),
            epoch,
            first_delay_ns: delay_ns,
            tagged_slots: true,
            fixed_order: false,
        };
        let mine = TwoCounts {
            first: tile_count as u64,
            second: tile_count2 as u64,
        };
        let before = if tile > 0 {
            if lane == 0 {
                unsafe { st.publish_aggregate(tile, mine) };
            }
            let p = unsafe { st.exclusive_prefix(tile, TwoCounts::default(), TwoCounts::add) };
            if lane == 0 {
                unsafe { st.publish_prefix(tile, TwoCounts::add(p, mine)) };
            }
            p
        } else {
            if lane == 0 {
                unsafe { st.publish_prefix(0, mine) };
            }
            TwoCounts::default()
        };
        if lane == 0 {
            unsafe { tile_base.write(0, before.first) };
            unsafe { tile_base2.write(0, before.second) };
            if tile as u32 == gpu::grid_dim_x() - 1 {
                let all = TwoCounts::add(before, mine);
                unsafe { num_selected.write(all.first) };
                unsafe { num_selected.add(1).write(all.second) };
            }
        }
    } else if warp == 0 {
        // A tile that writes a quarter of its input's bytes or reads twice them (values) waits
        // twice as long before its first look-back read: faster for those, slower for the
        // others on an H100 (CHANGELOG.md).
        let elem_bytes = size_of::<T>() as u32;
        let (len, kept) = (tile_len, tile_count);
        let (mut read, mut written) = (len * elem_bytes, 0u32);
        if P::MODE == MODE_FLAGGED {
            read += len;
        }
        if by_key {
            read += len * value_bytes;
            written += kept * value_bytes;
        }
        if !out.is_null() {
            written += kept * elem_bytes;
        }
        if !indices.is_null() {
            written += kept * 8;
        }
        if !rest.is_null() {
            written += (len - kept) * elem_bytes;
        }
        let tile_bytes = tile_elems * elem_bytes as u64;
        let heavy = 4 * written as u64 >= tile_bytes || read as u64 >= 2 * tile_bytes;
        let counts = TileStatus::<u64> {
            flags: status,
            aggregates: core::ptr::null_mut(),
            prefixes: core::ptr::null_mut(),
            epoch,
            first_delay_ns: if heavy { 2 * delay_ns } else { delay_ns },
            tagged_slots: true,
            fixed_order: false,
        };
        let mine = tile_count as u64;
        let base = if tile > 0 {
            if lane == 0 {
                unsafe { counts.publish_aggregate(tile, mine) };
            }
            let p = unsafe { counts.exclusive_prefix(tile, 0, u64::wrapping_add) };
            if lane == 0 {
                unsafe { counts.publish_prefix(tile, p + mine) };
            }
            p
        } else {
            if lane == 0 {
                unsafe { counts.publish_prefix(0, mine) };
            }
            0
        };
        if lane == 0 {
            unsafe { tile_base.write(0, base) };
            if tile as u32 == gpu::grid_dim_x() - 1 {
                unsafe { num_selected.write(base + mine) };
            }
        }
    }
    gpu::sync_threads();
    let base = unsafe { tile_base.read(0) };

    // 6. Each warp writes its own elements out, lanes on consecutive positions: `$put(k)`
    //    for each of this lane's `k < room` (`k = 32 m + lane`; u32, a warp's fit).
    macro_rules! each_out {
        ($room:expr, $put:expr) => {{
            let room = $room as u32;
            let put = $put;
            for m in 0..MAX_ITEMS {
                let first = m as u32 * 32;
                if m >= items || first >= room {
                    break; // the warp's rest of the loop writes nothing
                }
                if first + lane < room {
                    put(m * 32 + lane as usize);
                }
            }
        }};
    }
    // `to[k] = slot from(k)` of the warp's region for this lane's `k < room`: the slot read
    // for every `k` of the warp's (`from` stays inside its region), the store predicated.
    macro_rules! copy_out {
        ($slots:expr, $room:expr, $to:expr, $from:expr) => {{
            let (slots, room, to, from) = ($slots, $room as u32, $to, $from);
            for m in 0..MAX_ITEMS {
                let first = m as u32 * 32;
                if m >= items || first >= room {
                    break; // the warp's rest of the loop writes nothing
                }
                let k = first + lane;
                let v = unsafe { gpu::load_slot(slots, from(k)) };
                if k < room {
                    unsafe { to.add(k as usize).write(v) };
                }
            }
        }};
    }
    // This warp's kept elements go from `base + warp_base`, its others from the others before
    // it in the tile; its elements inside the input: `valid`.
    let kept = warp_count as u64;
    let at_out = base + warp_base as u64;
    if !out.is_null() {
        let to = unsafe { out.add(at_out as usize) };
        copy_out!(
            slots,
            capacity.saturating_sub(at_out).min(kept),
            to,
            |k: u32| k
        );
    }
    if small_values {
        // The kept elements' values through the warp's region, the keys gone from it.
        gpu::sync_warp(FULL_MASK);
        let room = capacity.saturating_sub(at_out).min(kept);
        // 2-byte values staged as `F16` bits (a 2-byte shared slot; nothing is converted).
        macro_rules! small {
            ($v:ty, $from:expr) => {{
                let vs = unsafe { gpu::shared_slots(stage.cast::<$v>(), region / size_of::<$v>()) };
                stage_kept!(keep, row_at, |v: usize, j: usize, s: u32| unsafe {
                    gpu::store_slot(vs, s, $from(vw[v * per_vec + j]))
                });
                gpu::sync_warp(FULL_MASK);
                let to = unsafe { (values_out as *mut $v).add(at_out as usize) };
                copy_out!(vs, room, to, |k: u32| k);
            }};
        }
        if value_bytes == 4 {
            small!(u32, |w: u32| w)
        } else {
            small!(F16, |w: u32| F16::from_bits_(w as u16))
        }
    }
    // A three-way partition's second part: from `base2 + warp_base2`, staged after the kept.
    let (kept2, at2_out) = if three {
        let base2 = unsafe { tile_base2.read(0) };
        (warp_count2 as u64, base2 + warp_base2 as u64)
    } else {
        (0, 0)
    };
    if three && !second.is_null() {
        let to = unsafe { second.add(at2_out as usize) };
        copy_out!(
            slots,
            second_capacity.saturating_sub(at2_out).min(kept2),
            to,
            |k: u32| (warp_count + k) % warp_elems
        );
    }
    if !rest.is_null() {
        let valid = tile_len.saturating_sub(warp_first).min(warp_elems) as u64;
        let rest_at = tile_start + warp_first as u64 - at_out - at2_out;
        let to = unsafe { rest.add(rest_at as usize) };
        copy_out!(
            slots,
            rest_capacity
                .saturating_sub(rest_at)
                .min(valid - kept - kept2),
            to,
            |k: u32| warp_elems - 1 - k
        );
    }
    if !indices.is_null() || runs || (by_key && !small_values) {
        // Tile positions (u32) in the warp's region, after its values left it; non-trivial
        // runs' ends from the region's far end, reversed (kept and ends are other elements).
        let idx = unsafe { stage.cast::<u32>() };
        let i0 = region / 4;
        let last_slot = (REGION_BYTES / 4 - 1) as u32;
        let (tail_at, warp_tails) = if P::MODE == MODE_NONTRIVIAL {
            positions(tails)
        } else {
            ([0; MAX_VECS], 0)
        };
        gpu::sync_warp(FULL_MASK);
        let idx_slots = unsafe { gpu::shared_slots(idx, i0) };
        stage_kept!(keep, row_at, |v: usize, j: usize, s: u32| unsafe {
            gpu::store_slot(idx_slots, s, local(v, j))
        });
        if P::MODE == MODE_NONTRIVIAL {
            stage_kept!(tails, tail_at, |v: usize, j: usize, s: u32| unsafe {
                gpu::store_slot(idx_slots, last_slot - s, local(v, j))
            });
        }
        gpu::sync_warp(FULL_MASK);
        // The last head before the warp: the last of the warps before it in the tile, else the
        // last before the tile.
        let mut before_warp = 0u32;
        if runs {
            for w in 0..WARPS {
                if w < warp {
                    before_warp = before_warp.max(unsafe { warp_last.read(w) });
                }
            }
        }
        let last_before = if before_warp > 0 {
            tile_start + before_warp as u64 - 1
        } else if runs {
            unsafe { run_before.read(0) }
        } else {
            0
        };
        if P::MODE == MODE_NONTRIVIAL {
            // End `k` of the warp closes run `at_out - open + k`: a run open at the warp's
            // start (its first element no head) began at the last head before the warp, the
            // others at the warp's heads in order.
            let open = (stretch > 0 && stretch < n && !warp_opens_on_head) as u64;
            let first = at_out - open;
            let room = capacity.saturating_sub(first).min(warp_tails as u64);
            each_out!(room, |k: usize| {
                let end =
                    tile_start + unsafe { gpu::load_slot(idx_slots, last_slot - k as u32) } as u64;
                let head = if (k as u64) < open {
                    last_before
                } else {
                    tile_start
                        + unsafe { gpu::load_slot(idx_slots, (k - open as usize) as u32) } as u64
                };
                unsafe { counts.add(first as usize + k).write(end + 1 - head) };
            });
        }
        if P::MODE == MODE_RUNS {
            // Head `at_out + k` closes run `at_out + k - 1`, which began at the head before it:
            // the warp's previous one, else the last before the warp.
            let room = capacity.saturating_add(1).saturating_sub(at_out).min(kept);
            each_out!(room, |k: usize| {
                if at_out + k as u64 > 0 {
                    let at = unsafe { gpu::load_slot(idx_slots, k as u32) };
                    let len = if k > 0 {
                        (at - unsafe { gpu::load_slot(idx_slots, k as u32 - 1) }) as u64
                    } else {
                        tile_start + at as u64 - last_before
                    };
                    unsafe { counts.add(at_out as usize + k - 1).write(len) };
                }
            });
        } else if !indices.is_null() {
            let to = unsafe { indices.add(at_out as usize) };
            each_out!(
                capacity.saturating_sub(at_out).min(kept),
                |k: usize| unsafe {
                    to.add(k)
                        .write(tile_start + gpu::load_slot(idx_slots, k as u32) as u64)
                }
            );
        }
        if by_key && !small_values {
            // Unique by key, 8-byte values: each kept key's value, read by its tile position
            // (every load issued before the first store), copied as bits.
            let room = capacity.saturating_sub(at_out).min(kept) as u32;
            macro_rules! gather {
                ($v:ty) => {{
                    let src = values as *const $v;
                    let dst = unsafe { (values_out as *mut $v).add(at_out as usize) };
                    let mut g = [0 as $v; MAX_ITEMS];
                    for m in 0..MAX_ITEMS {
                        let k = m as u32 * 32 + lane;
                        if m < items && k < room {
                            let at = tile_start + unsafe { gpu::load_slot(idx_slots, k) } as u64;
                            g[m] = unsafe { src.add(at as usize).read() };
                        }
                    }
                    for m in 0..MAX_ITEMS {
                        let k = m as u32 * 32 + lane;
                        if m < items && k < room {
                            unsafe { dst.add(k as usize).write(g[m]) };
                        }
                    }
                }};
            }
            gather!(u64)
        }
    }
}

/// Bit `j` set for each nonzero byte `j` of `w` (bytes 0-7).
#[inline(always)]
fn nonzero_bytes(w: u64) -> u32 {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    // A byte's high bit: set when any of its bits is (no carry crosses a byte).
    let high = (((w & LOW7) + LOW7) | w) & !LOW7;
    // Gather the 8 high bits into the top byte.
    ((high >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56) as u32
}

/// The run-length encoding's look-back value: runs (heads) in a range and the index of its
/// last head. Integers: exact in any association.
#[derive(Clone, Copy, Default)]
pub struct RunsAcc {
    pub count: u64,
    pub last: u64,
}

impl RunsAcc {
    #[inline(always)]
    fn combine(a: Self, b: Self) -> Self {
        Self {
            count: a.count.wrapping_add(b.count),
            last: if b.count > 0 { b.last } else { a.last },
        }
    }
}

/// A three-way partition's look-back value: the two parts' counts in a range.
#[derive(Clone, Copy, Default)]
pub struct TwoCounts {
    pub first: u64,
    pub second: u64,
}

impl TwoCounts {
    #[inline(always)]
    fn add(a: Self, b: Self) -> Self {
        Self {
            first: a.first.wrapping_add(b.first),
            second: a.second.wrapping_add(b.second),
        }
    }
}

/// A pair of `u64` fields as the four words a shuffle or a look-back slot moves.
macro_rules! u64_pair_words {
    ($($t:ident { $a:ident, $b:ident })*) => {$(
        impl gpu::ShflValue for $t {
            const WORDS: usize = 4;
            #[inline(always)]
            fn to_words(self) -> [u32; 4] {
                let (a, b) = (self.$a, self.$b);
                [a as u32, (a >> 32) as u32, b as u32, (b >> 32) as u32]
            }
            #[inline(always)]
            fn from_words(w: [u32; 4]) -> Self {
                Self {
                    $a: w[0] as u64 | (w[1] as u64) << 32,
                    $b: w[2] as u64 | (w[3] as u64) << 32,
                }
            }
        }
    )*};
}
u64_pair_words! { RunsAcc { count, last } TwoCounts { first, second } }

/// The simulator's entry point of a select kernel.
#[cfg(not(target_arch = "nvptx64"))]
pub type SimSelectFn<T> = unsafe fn(SelectParams<T>);

/// A predicate (or [`Flagged`], [`Unique`]) whose select kernel over `T` exists
/// ([`select_kernels!`](crate::select_kernels) implements it).
#[cfg(not(target_arch = "nvptx64"))]
pub trait SelectInstance<T: Element>: Predicate<T> {
    /// The kernel: `select_device::<T, Self>` under its exported name.
    const KERNEL: crate::Kernel<SimSelectFn<T>>;
}

/// Export `select_device::<T, P>` as a kernel and register it with [`SelectInstance`]; a
/// user's predicate (any [`Predicate<T>`]) the same way: `select_kernels! { my_select: f32,
/// MyPredicate; }`.
#[macro_export]
macro_rules! select_kernels {
    ($($name:ident : $t:ty, $p:ty;)*) => {$(
        $crate::select_kernels!(@emit stringify!($name), $t, $p);
    )*};
    (@emit $name:expr, $t:ty, $p:ty) => {
        const _: () = {
            use $crate::select::SelectParams;
            type T = $t;
            // Compaction; see `select_device`.
            $crate::select_params!(entry #[export_name = $name] kernel =>
                ($crate::select::select_device::<$t, $p>));
            #[cfg(not(target_arch = "nvptx64"))]
            impl $crate::select::SelectInstance<$t> for $p {
                const KERNEL: $crate::Kernel<$crate::select::SimSelectFn<$t>> =
                    $crate::Kernel { name: $name, sim: kernel };
            }
        };
        $crate::launch_bounds!(@named $name, $crate::select::BLOCK,
            $crate::select::min_blocks(::core::mem::size_of::<$t>(),
                <$p as $crate::select::Predicate<$t>>::MODE));
    };
}

/// The built-in select kernels of every element type: `select_if_{t}` (the [`Bounds`]
/// predicate), `select_flagged_{t}`, `select_unique_{t}`, `select_runs_{t}`,
/// `select_nontrivial_{t}`, `select_three_way_{t}` (two [`Bounds`]; `select_three_way_short_{t}`
/// in [`SMALL_BLOCK`] threads, [`Short`]), `select_unique_by_key_{t}`.
macro_rules! builtin_select {
    ($t:ident { $($ops:tt)* }) => {
        $crate::select_kernels!(@emit concat!("select_if_", stringify!($t)),
            $crate::builtin_elem!($t), Bounds);
        $crate::select_kernels!(@emit concat!("select_flagged_", stringify!($t)),
            $crate::builtin_elem!($t), Flagged);
        $crate::select_kernels!(@emit concat!("select_unique_", stringify!($t)),
            $crate::builtin_elem!($t), Unique);
        $crate::select_kernels!(@emit concat!("select_runs_", stringify!($t)),
            $crate::builtin_elem!($t), Runs);
        $crate::select_kernels!(@emit concat!("select_nontrivial_", stringify!($t)),
            $crate::builtin_elem!($t), NonTrivialRuns);
        $crate::select_kernels!(@emit concat!("select_three_way_", stringify!($t)),
            $crate::builtin_elem!($t), ThreeWay<Bounds, Bounds>);
        $crate::select_kernels!(@emit concat!("select_three_way_short_", stringify!($t)),
            $crate::builtin_elem!($t), Short<ThreeWay<Bounds, Bounds>>);
        $crate::select_kernels!(@emit concat!("select_unique_by_key_", stringify!($t)),
            $crate::builtin_elem!($t), UniqueByKey);
    };
}

#[cfg(feature = "builtin")]
crate::builtin_table!(types builtin_select! {} int float half);
