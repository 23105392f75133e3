//! Mean and variance of f32 data in one launch, at the read limit. The generic reduction with
//! [`MeanVar`] merges every thread's next four elements into its running (count, mean, m2)
//! with Chan's formula, one division per merge, and that latency held the loads back (83% of
//! the read limit at 2^26 on an H100). Here the threads of a tile keep *shifted sums*
//! instead, `s1 = Σ(x - k)` and `s2 = Σ(x - k)²` in f64 with one shift `k` per tile (the
//! tile's first element): no division per element, and a tile's sums add up as plain f64
//! additions in the fixed tree of every reduction. Thread 0 turns them into a [`MeanVarAcc`]
//! once per tile (`mean = k + s1/c`, `m2 = s2 - s1²/c`); the tiles' partials then merge with
//! [`MeanVar`]'s Chan formula in tile order (the same bits for any grid, GPU and the
//! simulator).
//!
//! Why one shift per tile: the per-tile finish is the part of the work that no load hides, and
//! with a shift per thread it had to rebase 256 threads' sums (a division and Chan merges per
//! warp): 86-88% of the read limit at 2^26 on an H100, against the plain sum's 96%.
//!
//! Error of a tile's part: `k` is one of the tile's `c` elements, so `(k - mean_t)² <= m2_t` and
//! `s2 = m2_t + c·(k - mean_t)² <= (1 + c)·m2_t`: `m2 = s2 - s1²/c` loses at most a factor
//! `1 + c` to cancellation on top of the f64 sums' rounding (`~(c/256 + log2 c)·2^-53`, a
//! thread adding `c/256` terms in sequence). For data whose tile-first elements lie within a
//! few standard deviations (every test's, and most real data) that is ~2^-48; in the worst
//! case, a tile's first element an outlier holding nearly all of the tile's variance, ~`n²·2^-83`
//! (2048 tiles of `c = n/2048`): below f32's own 2^-24 up to n = 2^29. The Chan merges of the
//! f32 partials above it keep the `log2(n)` bound of [`MeanVarAcc`].

use super::finish_tiles;
use super::policy::BLOCK as REDUCE_BLOCK;
#[cfg(all(feature = "builtin", not(target_arch = "nvptx64")))]
use super::{ReduceInstance, SimReduceFn};
use crate::gpu;
use crate::gpu::{ShflValue, WARP_SIZE};
use crate::ops::ReduceOp;
use crate::reduce::transform::{MeanVar, MeanVarAcc};
use crate::warp::warp_reduce;

/// Two f64 sums moved together by a warp shuffle (four 32-bit words).
#[derive(Clone, Copy)]
struct Sums {
    s1: f64,
    s2: f64,
}

impl Sums {
    const ZERO: Self = Self { s1: 0.0, s2: 0.0 };

    #[inline(always)]
    fn add(self, o: Self) -> Self {
        Self {
            s1: self.s1 + o.s1,
            s2: self.s2 + o.s2,
        }
    }

    /// Four elements' deviations from `k`, summed pairwise, into the running sums.
    #[inline(always)]
    fn add4(&mut self, w: [u32; 4], k: f64) {
        let d = w.map(|b| f32::from_bits(b) as f64 - k);
        self.s1 += (d[0] + d[1]) + (d[2] + d[3]);
        self.s2 += (d[0] * d[0] + d[1] * d[1]) + (d[2] * d[2] + d[3] * d[3]);
    }

    #[inline(always)]
    fn add1(&mut self, x: f32, k: f64) {
        let d = x as f64 - k;
        self.s1 += d;
        self.s2 += d * d;
    }

    /// Count, mean and m2 of `count` elements whose shifted sums these are (one division; a
    /// rounding that makes m2 negative gives 0).
    #[inline(always)]
    fn finish(self, count: u64, k: f64) -> MeanVarAcc {
        if count == 0 {
            return <MeanVar as ReduceOp<f32>>::identity();
        }
        let q = self.s1 / count as f64;
        let m2 = self.s2 - self.s1 * q;
        MeanVarAcc {
            count: count as u32,
            mean: (k + q) as f32,
            m2: if m2 < 0.0 { 0.0 } else { m2 as f32 },
        }
    }
}

impl ShflValue for Sums {
    const WORDS: usize = 4;
    #[inline(always)]
    fn to_words(self) -> [u32; 4] {
        let (a, b) = (self.s1.to_bits(), self.s2.to_bits());
        [a as u32, (a >> 32) as u32, b as u32, (b >> 32) as u32]
    }
    #[inline(always)]
    fn from_words(w: [u32; 4]) -> Self {
        Self {
            s1: f64::from_bits(w[0] as u64 | (w[1] as u64) << 32),
            s2: f64::from_bits(w[2] as u64 | (w[3] as u64) << 32),
        }
    }
}

/// [`MeanVar`] over `n` f32 at `input`, in `tiles` tiles; the interface (workspace, outputs,
/// any grid <= `tiles`) of [`reduce_device`](super::reduce_device).
///
/// # Safety
/// As `reduce_device`.
#[inline(always)]
#[allow(clippy::too_many_arguments)] // the kernel's launch parameters, passed straight through
pub unsafe fn mean_var_device(
    input: *const f32,
    n: u64,
    tiles: u32,
    partials: *mut MeanVarAcc,
    retire_count: *mut u32,
    out: *mut MeanVarAcc,
    done: *mut u32,
    seq: u32,
) {
    let scratch = crate::static_shared!(MOMENTS_SCRATCH: [u128; 32]);
    // Two sets of per-warp sums, by tile parity: thread 0 reads one set while the other
    // threads may already write the next tile's (no second barrier per tile).
    let sums = crate::static_shared!(MOMENTS_SUMS: [u128; 64]);
    let sums = unsafe { sums.cast::<Sums>() };
    let scratch = unsafe { scratch.cast::<MeanVarAcc>() };
    let combine = <MeanVar as ReduceOp<f32>>::combine;
    let identity = <MeanVar as ReduceOp<f32>>::identity();
    let tid = gpu::thread_idx_x() as u64;
    let lane = gpu::lane_id();
    let warp = gpu::warp_id() as u64;
    let warps = (gpu::block_dim_x() / WARP_SIZE) as u64;
    let grid = gpu::grid_dim_x() as u64;
    let tiles = tiles as u64;
    let b = REDUCE_BLOCK as u64;
    let threads = tiles * b;

    // As reduce_device: scalar head to the first 16-byte boundary, 128-bit body, scalar tail.
    let misalign = (input as u64 & 15) / 4;
    let head = if misalign == 0 {
        0
    } else {
        (4 - misalign).min(n)
    };
    let vectors = (n - head) / 4;
    let body = unsafe { input.add(head as usize) } as *const u32;
    let tail_start = head + vectors * 4;
    let load = |v: u64| unsafe { gpu::load_nc_v4_b32(body.add(4 * v as usize)) };

    let mut tile = gpu::block_idx_x() as u64;
    let mut tile_acc = identity;
    let mut parity = 0;
    while tile < tiles {
        let gtid = tile * b + tid;
        // The tile's shift: its first element (thread 0's first vector), else the array's.
        let k = if n == 0 {
            0.0
        } else {
            let first = if tile * b < vectors { head + 4 * tile * b } else { 0 };
            unsafe { input.add(first as usize).read() as f64 }
        };
        // Two loads in flight per step, into one set of sums (few registers: the kernel
        // needs many blocks per SM to keep enough bytes in flight).
        let mut st = Sums::ZERO;
        let mut v = gtid;
        while v + threads < vectors {
            let (x, y) = (load(v), load(v + threads));
            st.add4(x, k);
            st.add4(y, k);
            v += 2 * threads;
        }
        if v < vectors {
            st.add4(load(v), k);
        }
        if gtid < head {
            st.add1(unsafe { input.add(gtid as usize).read() }, k);
        }
        if gtid < n - tail_start {
            st.add1(unsafe { input.add((tail_start + gtid) as usize).read() }, k);
        }
        let w = warp_reduce(st, Sums::add);
        if lane == 0 {
            unsafe { sums.write((parity * 32 + warp) as usize, w) };
        }
        gpu::sync_threads();
        if tid == 0 {
            let mut t = Sums::ZERO;
            for i in 0..warps {
                t = t.add(unsafe { sums.read((parity * 32 + i) as usize) });
            }
            // The tile's elements: its threads' vectors (whole rounds of `threads`, then the
            // rest), and tile 0 holds the scalar head and tail.
            let (q, r) = (vectors / threads, vectors % threads);
            let mut count = 4 * (q * b + r.saturating_sub(tile * b).min(b));
            if tile == 0 {
                count += head + (n - tail_start);
            }
            tile_acc = t.finish(count, k);
            if tiles > 1 {
                unsafe { partials.add(tile as usize).write(tile_acc) };
            }
        }
        parity ^= 1;
        tile += grid;
    }
    unsafe {
        finish_tiles(
            tiles,
            tile_acc,
            partials,
            retire_count,
            out,
            done,
            seq,
            identity,
            combine,
            scratch,
        )
    };
}

#[cfg(feature = "builtin")]
crate::kernel! {
    /// Mean and variance of f32 ([`mean_var_device`]).
    pub unsafe fn reduce_mean_var_f32(
        input: *const f32,
        n: u64,
        tiles: u32,
        partials: *mut MeanVarAcc,
        retire_count: *mut u32,
        out: *mut MeanVarAcc,
        done: *mut u32,
        seq: u32,
    ) {
        unsafe { mean_var_device(input, n, tiles, partials, retire_count, out, done, seq) }
    }
}

// Six blocks per SM (40 registers, no spills): at the 56 registers ptxas chose alone, four
// blocks held too few loads in flight (H100, 2^26: 50% occupancy, 73% of DRAM bandwidth,
// against the sum's 86% at 32 registers).
#[cfg(feature = "builtin")]
crate::launch_bounds!(reduce_mean_var_f32, super::policy::BLOCK, 6);

/// The host finds the mean-and-variance kernel as any reduction's, by operator and type.
#[cfg(all(feature = "builtin", not(target_arch = "nvptx64")))]
impl ReduceInstance<f32> for MeanVar {
    const KERNEL: crate::Kernel<SimReduceFn<f32, MeanVarAcc>> = crate::Kernel {
        name: "reduce_mean_var_f32",
        sim: reduce_mean_var_f32,
    };
}
