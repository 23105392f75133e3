//! Mean and variance of f32 data in one launch, at the read limit. The generic reduction with
//! [`MeanVar`] merges every thread's next four elements into its running (count, mean, m2)
//! with Chan's formula, one division per merge, and that latency held the loads back well
//! below the read limit (CHANGELOG.md, issue 15). Here each thread keeps *shifted sums* instead,
//! `s1 = Σ(x - k)` and `s2 = Σ(x - k)²` in f64 with `k` its first element — no division per
//! element. At the end every thread moves its sums to one shift `K` for the whole input, its
//! first element (`s1 + c·d`, `s2 + d·(2·s1 + c·d)` with `d = k - K`: exact algebra, no
//! division), so threads, tiles and the partials add plain f64 pairs in the fixed tree of every
//! reduction (the same bits for any grid, GPU and the simulator), and the last block divides
//! once: `mean = K + S1/n`, `m2 = S2 - S1·(S1/n)`. A Chan merge per step of that tree (a
//! division, and a reduction no load hides) made the finish slow (CHANGELOG.md, issue 15).
//!
//! Error. A thread's part: f64 sums of at most ~21,000 terms (2^32 elements over 792 tiles of
//! 256 threads) around one of its own elements, so `m2`'s absolute error is about
//! `c·2^-52·((mean - k)² + var)`, far below the f32 rounding unless `k` lies ~10^4 standard
//! deviations from the mean. Above it, about 20 levels of f64 additions (warp, block, 792
//! partials) of sums around `K` lose about `70·2^-53·n·(var + (mean - K)²)` to cancellation in
//! `S2 - S1²/n`: in the variance, `2^-46·(var + (x[0] - mean)²)`. Samuelson's inequality caps
//! `(x[0] - mean)²` at `(n - 1)·var`, so up to n = 2^29 this stays below the
//! `4·log2(n)·2^-24·(1 + mean²/var)·var` of [`MeanVarAcc`] for any data; beyond, the bound is
//! their sum (an input whose first element lies ~2^15 standard deviations out, at 2^32
//! elements, could reach it).

use super::policy::BLOCK as REDUCE_BLOCK;
#[cfg(all(feature = "builtin", not(target_arch = "nvptx64")))]
use super::{ReduceInstance, SimReduceFn};
use super::{ReduceParams, reduce_tiles};
use crate::gpu;
use crate::gpu::ShflValue;
use crate::load::Cut;
use crate::ops::ReduceOp;
use crate::reduce::transform::{MeanVar, MeanVarAcc};

/// One thread's shifted sums.
#[derive(Clone, Copy)]
struct Shifted {
    count: u32,
    k: f64,
    s1: f64,
    s2: f64,
}

impl Shifted {
    #[inline(always)]
    fn new() -> Self {
        Self {
            count: 0,
            k: 0.0,
            s1: 0.0,
            s2: 0.0,
        }
    }

    /// Four elements: their deviations summed pairwise, then into the running sums (the
    /// first element seen becomes the shift).
    #[inline(always)]
    fn add4(&mut self, w: [u32; 4]) {
        let e = w.map(|b| f32::from_bits(b) as f64);
        if self.count == 0 {
            self.k = e[0];
        }
        let d = e.map(|x| x - self.k);
        self.s1 += (d[0] + d[1]) + (d[2] + d[3]);
        self.s2 += (d[0] * d[0] + d[1] * d[1]) + (d[2] * d[2] + d[3] * d[3]);
        self.count += 4;
    }

    #[inline(always)]
    fn add1(&mut self, x: f32) {
        let x = x as f64;
        if self.count == 0 {
            self.k = x;
        }
        let d = x - self.k;
        self.s1 += d;
        self.s2 += d * d;
        self.count += 1;
    }

    /// The sums moved to the shift `shift` (all of a thread's sums are then around one
    /// value, and add as plain numbers).
    #[inline(always)]
    fn rebase(self, shift: f64) -> Sums {
        if self.count == 0 {
            return Sums::ZERO;
        }
        let c = self.count as f64;
        let d = self.k - shift;
        Sums {
            s1: self.s1 + c * d,
            s2: self.s2 + d * (2.0 * self.s1 + c * d),
        }
    }
}

/// Two f64 sums moved together by a warp shuffle (four 32-bit words).
#[derive(Clone, Copy)]
struct Sums {
    s1: f64,
    s2: f64,
}

impl Sums {
    const ZERO: Self = Self { s1: 0.0, s2: 0.0 };

    #[inline(always)]
    fn add(a: Self, b: Self) -> Self {
        Self {
            s1: a.s1 + b.s1,
            s2: a.s2 + b.s2,
        }
    }

    /// `n` elements' sums around `shift` as count, mean and m2 (one division; a rounding that
    /// makes m2 negative gives 0).
    #[inline(always)]
    fn finish(self, n: u64, shift: f64) -> MeanVarAcc {
        if n == 0 {
            return <MeanVar as ReduceOp<f32>>::identity();
        }
        let q = self.s1 / n as f64;
        let m2 = self.s2 - self.s1 * q;
        MeanVarAcc {
            count: n as u32,
            mean: (shift + q) as f32,
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
pub unsafe fn mean_var_device(p: ReduceParams<f32, MeanVarAcc>) {
    let ReduceParams {
        input,
        n,
        tiles,
        partials,
        retire_count,
        out,
        done,
        seq,
        ..
    } = p;
    let scratch = crate::static_shared!(MOMENTS_SCRATCH: [u128; 32]);
    let scratch = unsafe { scratch.cast::<Sums>() };
    // The partials are sums, 16 bytes a tile: the host's workspace has room for 16 bytes a
    // tile at 8-byte alignment (any reduction's accumulator fits there).
    let partials = partials.cast::<Sums>();
    // The whole input's shift, its first element: one load all threads share (a cache hit
    // for all but the first), issued before the loop so that its latency hides behind it.
    let shift = if n > 0 { unsafe { input.read() } } else { 0.0 };
    let tid = gpu::thread_idx_x() as u64;
    let tiles = tiles as u64;
    let threads = tiles * REDUCE_BLOCK as u64;

    // As reduce_device: scalar head to the first 16-byte boundary, 128-bit body, scalar tail.
    let cut = Cut::new(input, n);
    let (head, vectors, tail_start) = (cut.head, cut.vectors, cut.tail_start());
    let load = |v: u64| unsafe { cut.vector(v) };

    let thread_acc = |tile: u64| {
        let gtid = tile * REDUCE_BLOCK as u64 + tid;
        // Two loads in flight per step, into one set of sums (few registers: the kernel
        // needs many blocks per SM to keep enough bytes in flight).
        let mut st = Shifted::new();
        let mut v = gtid;
        // The first step with four loads in flight (the same elements in the same order, so
        // the same bits): every block starts at once, waits for its first loads, then spends
        // a while converting and summing in f64 with nothing else in flight; four
        // (all that 40 registers hold: ptxas serialises six or eight) keep DRAM busier there
        // (faster than two: CHANGELOG.md, issue 15).
        if v + 3 * threads < vectors {
            let (a, b, c, d) = (
                load(v),
                load(v + threads),
                load(v + 2 * threads),
                load(v + 3 * threads),
            );
            st.add4(a);
            st.add4(b);
            st.add4(c);
            st.add4(d);
            v += 4 * threads;
        }
        while v + threads < vectors {
            let (a, b) = (load(v), load(v + threads));
            st.add4(a);
            st.add4(b);
            v += 2 * threads;
        }
        if v < vectors {
            st.add4(load(v));
        }
        if gtid < head {
            st.add1(unsafe { cut.get(gtid) });
        }
        if gtid < n - tail_start {
            st.add1(unsafe { cut.get(tail_start + gtid) });
        }
        st.rebase(shift as f64)
    };
    unsafe {
        // Four of a thread's partials in flight at once (three or four a thread at the policy's
        // tile count).
        reduce_tiles::<4, _, _, _, _, _>(
            tiles,
            partials,
            retire_count,
            out,
            done,
            seq,
            Sums::ZERO,
            Sums::add,
            scratch,
            |s: Sums| s.finish(n, shift as f64),
            thread_acc,
        )
    };
}

/// The mean-and-variance kernel's exported name.
macro_rules! mean_var_name {
    () => {
        "reduce_mean_var_f32"
    };
}

// The host finds the mean-and-variance kernel as any reduction's, by operator and type.
#[cfg(feature = "builtin")]
const _: () = {
    type T = f32;
    type A = MeanVarAcc;
    // Mean and variance of f32 (`mean_var_device`).
    crate::reduce_params!(entry #[export_name = mean_var_name!()] kernel => (mean_var_device));
    #[cfg(not(target_arch = "nvptx64"))]
    impl ReduceInstance<f32> for MeanVar {
        const KERNEL: crate::Kernel<SimReduceFn<f32, MeanVarAcc>> = crate::Kernel {
            name: mean_var_name!(),
            sim: kernel,
        };
    }
};

// Six blocks per SM (40 registers, no spills): at the registers ptxas chose alone, four blocks
// held too few loads in flight to keep DRAM busy (CHANGELOG.md, issue 15).
#[cfg(feature = "builtin")]
crate::launch_bounds!(@named mean_var_name!(), super::policy::BLOCK, 6);
