//! Histograms in one launch (CUB's `DeviceHistogram::HistogramEven` / `HistogramRange`): the
//! count of samples in each of `bins` bins, even over `[lo, hi)` or between sorted edges
//! ([`bins`]). Samples outside the range and NaN are not counted.
//!
//! Each block counts into its own copy of the histogram in shared memory (up to
//! [`SHARED_BINS`] bins; more go straight to the output with global atomics), then adds its
//! nonzero bins to the output. Up to [`STRIPED_BINS`] bins each lane of a warp has a column of
//! its own, so the lanes of a warp never collide on a counter or a bank. Counts are integers,
//! exact in any order, so the result is the same on every run. A thread reads its stretch of
//! the input as 16-byte vectors, the next step's loads issued before this step's samples are
//! counted. Past the striped counters it adds runs of equal bins once: a skewed input (every
//! sample in one bin) costs one atomic per run, not 32 colliding ones per warp. The binning
//! rule is chosen once a launch, each rule with a loop of its own. Bins between edges: each
//! block first tabulates, for cells even over the edges' range, which edges fall in each cell
//! ([`edge_cells`]), so a sample's binary search runs over its cell's few edges, not all.

pub mod bins;
pub mod weighted;

use crate::gpu;
use crate::ops::Element;
pub use bins::{F32_BINS, NO_BIN, Sample, edge_bin, edge_range, edge_search, edges_below};

/// Threads per block.
pub const BLOCK: u32 = 256;
/// 16-byte vectors a thread loads per step (in flight at once).
pub const VECS: usize = 4;
/// 16-byte vectors a thread loads per step for `bytes`-byte samples: [`VECS`] for the 4-byte
/// types (the baseline's), 2 for the others: every sample a step is a copy of the counting
/// code, and the embedded PTX has a budget (6 MB deflated).
pub const fn vecs(bytes: usize) -> usize {
    if bytes == 4 { VECS } else { VECS / 2 }
}
/// Bins counted in shared memory (16 KiB of `u32` a block); more go to global atomics.
pub const SHARED_BINS: u32 = 4096;
/// Bins up to which each lane of a warp counts into a column of its own (32 counters a bin,
/// 32 KiB at most): two lanes of a warp never add to the same counter or bank, so few bins
/// (where lanes collide most) count at full speed.
pub const STRIPED_BINS: u32 = 256;
/// Blocks per SM the grid fills (the kernel loops over the input), and its registers allow
/// (`launch_bounds!`: 80 registers, no spills; at 4 an SM, 64 registers spilled and the f32
/// bins ran 10-13% slower).
pub const BLOCKS_PER_SM: u32 = 3;
/// Samples one block may count (its shared counters are `u32`): the host's grid keeps each
/// block's share below it.
pub const MAX_BLOCK_SAMPLES: u64 = 1 << 31;

/// Dynamic shared memory a launch may take without opting in (48 KiB).
const SHARED_LIMIT: u32 = 48 << 10;
/// The `u32` counters a block keeps for `bins` bins: 32 a bin when striped, one a bin up to
/// [`SHARED_BINS`], none past it.
pub const fn counter_words(bins: u32) -> u32 {
    if bins <= STRIPED_BINS {
        bins * 32
    } else if bins <= SHARED_BINS {
        bins
    } else {
        0
    }
}
/// Whether the `bins + 1` edges of `bytes`-byte samples go to shared memory beside the
/// counters (within [`SHARED_LIMIT`]; else the kernel reads them from global memory).
pub const fn edges_shared(bins: u32, bytes: usize) -> bool {
    bins <= SHARED_BINS
        && ((counter_words(bins) * 4).next_multiple_of(16) + (bins + 1) * bytes as u32)
            .next_multiple_of(16)
            <= SHARED_LIMIT
}
/// Where the edges' table starts in shared memory: after the counters and the `bins + 1`
/// edges, each 16-byte aligned.
const fn table_offset(bins: u32, bytes: usize) -> u32 {
    ((counter_words(bins) * 4).next_multiple_of(16) + (bins + 1) * bytes as u32)
        .next_multiple_of(16)
}
/// Most cells of the edges' table.
pub const MAX_CELLS: u32 = 4096;
/// Cells of the edges' table (a power of two, or 0: none), where the edges are shared: each
/// cell's entry bounds the bins of its samples ([`edge_range`]), so a sample's search starts
/// among its cell's edges (evenly spread edges: none or one) instead of all of them. Four a
/// bin rounded up to a power of two (4 to 8 a bin) and at most [`MAX_CELLS`], as many as fit
/// beside the counters and the edges. None for 16-bit
/// samples: eight a vector, the table's code copied into each outgrew what the compiler
/// inlines (the counting was outlined, and with it the embedded PTX's budget).
pub const fn edge_cells(bins: u32, bytes: usize) -> u32 {
    if bytes == 2 || !edges_shared(bins, bytes) {
        return 0;
    }
    let mut g = MAX_CELLS;
    while g > 2 && g > 4 * bins.next_power_of_two() {
        g /= 2;
    }
    while g >= 2 && table_offset(bins, bytes) + g * 4 > SHARED_LIMIT {
        g /= 2;
    }
    if g >= 2 { g } else { 0 }
}
/// Dynamic shared memory of a launch with `bins` bins of `bytes`-byte samples (`edges`: bins
/// by edges): the counters ([`counter_words`]), then the edges and their table, where
/// [`edges_shared`].
pub const fn shared_bytes(bins: u32, bytes: usize, edges: bool) -> u32 {
    if bins > SHARED_BINS {
        0
    } else if edges && edges_shared(bins, bytes) {
        table_offset(bins, bytes) + edge_cells(bins, bytes) * 4
    } else {
        (counter_words(bins) * 4).next_multiple_of(16)
    }
}

/// Add `v` to count `b` of the output: `u64` counts when `wide`, else `u32` (one kernel serves
/// both: the choice is made once a bin, off the counting loop).
///
/// # Safety
/// `counts` holds `b + 1` counts of that width, in global memory.
#[inline(always)]
unsafe fn add_count(counts: *mut u32, wide: bool, b: u32, v: u32) {
    if wide {
        unsafe { gpu::atomic_add_u64((counts as *mut u64).add(b as usize), v as u64) };
    } else {
        unsafe { gpu::atomic_add_u32(counts.add(b as usize), v) };
    }
}

/// The parameters of [`HistogramParams`]'s kernels, written once.
#[macro_export]
#[doc(hidden)]
macro_rules! histogram_params {
    ($($mode:tt)*) => {
        $crate::kernel_params! { $($mode)* HistogramParams<T> {
            /// The samples, `n` of them.
            input: *const T,
            /// The output, `bins` counts, `u64` when `wide` is 1, else `u32` (zeroed by the host
            /// before the launch: the kernel adds).
            counts: *mut u32,
            wide: u32,
            /// `bins + 1` ascending edges, or null for even bins over `[lo, hi)`.
            edges: *const T,
            n: u64,
            bins: u32,
            /// Even bins' range `[lo, hi)`: the bits of two `T` (`ShflValue::to_words`).
            lo: u64,
            hi: u64,
            /// Even bins: `bins / (hi - lo)` in f64, and the 32-bit integers' multiplier
            /// (`Sample::even_rule`).
            scale: f64,
            mul: u64,
        } }
    };
}

crate::histogram_params!(struct
    /// The launch parameters of [`histogram_device`].
);

/// Count the `n` samples of `input` into `counts` (`bins` of them, zeroed beforehand). Launch
/// [`BLOCK`] threads a block, any grid whose blocks see at most [`MAX_BLOCK_SAMPLES`] samples
/// each, with [`shared_bytes`] of dynamic shared memory.
///
/// # Safety
/// Pointers valid for the sizes above; `lo < hi` (even bins) or ascending edges; `bins >= 1`.
#[inline(always)]
#[allow(clippy::needless_range_loop)]
pub unsafe fn histogram_device<T: Element + Sample>(p: HistogramParams<T>) {
    let HistogramParams {
        input,
        counts,
        wide,
        edges,
        n,
        bins,
        lo,
        hi,
        scale,
        mul,
    } = p;
    let bits = |w: u64| T::from_words([w as u32, (w >> 32) as u32, 0, 0]);
    let (lo, hi) = (bits(lo), bits(hi));
    let wide = wide != 0;
    let shared = bins <= SHARED_BINS;
    let striped = bins <= STRIPED_BINS;
    let words = counter_words(bins) as usize;
    let by_edges = !edges.is_null();
    let se_in = shared && by_edges && edges_shared(bins, size_of::<T>());
    let tid = gpu::thread_idx_x();
    let block = gpu::block_dim_x();
    let smem = gpu::dynamic_shared::<u32>();
    // The edges after the counters (16-byte aligned), where the bins fit.
    let e_off = (words * 4).next_multiple_of(16);
    let se_len = if se_in { bins as usize + 1 } else { 0 };
    let cells = if se_in {
        edge_cells(bins, size_of::<T>())
    } else {
        0
    };
    let (ctr, se, tab) = unsafe {
        (
            smem.part::<u32>(0, words),
            smem.part::<T>(e_off, se_len),
            // (Its offset only where it exists: past the edges of huge bins it would overflow.)
            smem.part::<u32>(
                if cells > 0 {
                    table_offset(bins, size_of::<T>()) as usize
                } else {
                    0
                },
                cells as usize,
            ),
        )
    };
    if shared {
        let mut w = tid as usize;
        while w < words {
            unsafe { ctr.write(w, 0) };
            w += block as usize;
        }
        let mut i = tid;
        while i < se_len as u32 {
            unsafe { se.write(i as usize, edges.add(i as usize).read()) };
            i += block;
        }
        gpu::sync_threads();
    }
    // The edges' table (`edge_range`), from the shared edges.
    let rule = if cells > 0 {
        let e = |i: u32| unsafe { se.read(i as usize) };
        let rule = T::cell_rule(e(0), e(bins), cells);
        let cell = |x| T::cell(x, e(0), rule, cells);
        let mut c = tid;
        while c < cells {
            let below = |c| edges_below(c, bins, e, cell);
            unsafe { tab.write(c as usize, below(c) | below(c + 1) << 16) };
            c += block;
        }
        gpu::sync_threads();
        rule
    } else {
        0
    };
    // Bin b's counter: column `lane` of its 32 when striped.
    let (stride, col) = if striped {
        (32, tid as usize % 32)
    } else {
        (1, 0)
    };
    // The lane's column as a shared-space address: a counter's is one multiply-add (a generic
    // address costs a 64-bit add and a conversion a sample).
    let column = unsafe { gpu::shared_slots(ctr, col) };
    let add = |b: u32, len: u32| {
        if shared {
            unsafe { gpu::red_add_slot(column, b * stride as u32, len) };
        } else {
            unsafe { add_count(counts, wide, b, len) };
        }
    };
    // One loop a binning rule (the rule chosen once, not per sample). Striped counters take
    // every sample's add straight away: a lane's column is its own, so even a run of one bin
    // does not collide within a warp.
    // 16-bit samples (eight a vector) keep one loop where the others have two: a second copy
    // of their larger counting made the compiler outline it (a call a vector, and the code in
    // every embedded module).
    let eight = T::PER_VEC == 8;
    let even = |x| T::even_bin(x, lo, hi, bins, scale, mul);
    let even4 = |x| T::even_bins4(x, lo, hi, bins, scale, mul);
    if !by_edges && striped {
        let add = |b: u32, len: u32| unsafe { gpu::red_add_slot(column, b * 32, len) };
        count_input::<T, false>(input, n, even, even4, add);
    } else if !by_edges && shared && !eight {
        // One counter a bin, runs combined (a skewed input's lanes would collide), each add
        // straight to its shared counter.
        let add = |b: u32, len: u32| unsafe { gpu::red_add_slot(column, b, len) };
        count_input::<T, true>(input, n, even, even4, add);
    } else if !by_edges {
        count_input::<T, true>(input, n, even, even4, add);
    } else {
        // The edges from shared memory where they fit (with their table), else from global
        // (one loop for both).
        let (eslot, tslot) = unsafe { (gpu::shared_slots(se, 0), gpu::shared_slots(tab, 0)) };
        let e = |i: u32| unsafe {
            if se_in {
                gpu::load_slot(eslot, i)
            } else {
                edges.add(i as usize).read()
            }
        };
        let (first, last) = (e(0), e(bins));
        let bin = |x: T| {
            if !(first.le(x) && x.lt(last)) {
                return NO_BIN;
            }
            if cells == 0 {
                return edge_search(x, 0, bins, e);
            }
            let (lo, hi) =
                edge_range(unsafe { gpu::load_slot(tslot, T::cell(x, first, rule, cells)) });
            // Most cells hold one edge or none: the first compared without a branch (edge
            // `lo + 1` exists: `lo < bins`), any others searched.
            let m = lo + 1;
            let up = m <= hi && !x.lt(unsafe { gpu::load_slot(eslot, m) });
            if up && m < hi {
                edge_search(x, m, hi + 1, e)
            } else if up {
                m
            } else {
                lo
            }
        };
        let bin4 = |x: [T; 4]| x.map(bin);
        if striped && !eight {
            let add = |b: u32, len: u32| unsafe { gpu::red_add_slot(column, b * 32, len) };
            count_input::<T, false>(input, n, bin, bin4, add);
        } else {
            count_input::<T, true>(input, n, bin, bin4, add);
        }
    }

    // The block's counts to the output.
    if shared {
        gpu::sync_threads();
        let mut b = tid;
        while b < bins {
            let c = if striped {
                // Bin b's 32 columns, each thread starting at its own (no bank conflicts).
                let mut c = 0u32;
                for l in 0..32 {
                    c += unsafe { ctr.read(b as usize * 32 + ((l + b as usize) & 31)) };
                }
                c
            } else {
                unsafe { ctr.read(b as usize) }
            };
            if c > 0 {
                unsafe { add_count(counts, wide, b, c) };
            }
            b += block;
        }
    }
}

/// Count this thread's share of the `n` samples at `input` (the grid striding over 16-byte
/// vectors, [`vecs`] a step, the next step's loads issued before this step's samples are counted,
/// so the memory stays busy while the thread computes; the vectors after the last whole step,
/// then the elements after the last whole vector, one by one): each sample's bin by `bin`, passed to `add` one by one or (`RUNS`) a run
/// of one bin at once.
#[inline(always)]
#[allow(clippy::needless_range_loop)]
fn count_input<T: Element + Sample, const RUNS: bool>(
    input: *const T,
    n: u64,
    bin: impl Fn(T) -> u32,
    bin4: impl Fn([T; 4]) -> [u32; 4],
    add: impl Fn(u32, u32),
) {
    // The open run: its bin and length.
    let (mut cur, mut len) = (NO_BIN, 0u32);
    let mut count_bin = |b: u32| {
        if !RUNS {
            if b != NO_BIN {
                add(b, 1);
            }
            return;
        }
        if b != cur {
            if cur != NO_BIN {
                add(cur, len);
            }
            cur = b;
            len = 0;
        }
        len += 1;
    };
    let per_vec = T::PER_VEC as u64;
    let block = gpu::block_dim_x() as u64;
    let threads = block * gpu::grid_dim_x() as u64;
    let me = gpu::block_idx_x() as u64 * block + gpu::thread_idx_x() as u64;
    let aligned = input as usize & 15 == 0;
    let nvec = if aligned { n / per_vec } else { 0 };
    let mut count_vec = |w: [u32; 4]| {
        if T::PER_VEC == 8 {
            for x in T::unpack8(w) {
                count_bin(bin(x));
            }
        } else if T::PER_VEC == 4 && T::BINS4 {
            let b = bin4(T::unpack(w));
            // Static indices (an array iterated by value would live in local memory).
            for j in 0..4 {
                count_bin(b[j]);
            }
        } else {
            let e = T::unpack(w);
            for j in 0..4 {
                if j < T::PER_VEC {
                    count_bin(bin(e[j]));
                }
            }
        }
    };
    let nv = vecs(size_of::<T>());
    let vec_at =
        |v: u64| unsafe { gpu::load_nc_v4_b32(input.add((v * per_vec) as usize) as *const u32) };
    let load = |v: u64| -> [[u32; 4]; VECS] {
        let mut w = [[0u32; 4]; VECS];
        for k in 0..nv {
            w[k] = vec_at(v + k as u64 * threads);
        }
        w
    };
    // Whole steps unchecked (the hot loop), then the vectors left one by one.
    let step = nv as u64 * threads;
    let whole = |v: u64| v + (nv as u64 - 1) * threads < nvec;
    let mut v = me;
    if whole(v) {
        let mut w = load(v);
        loop {
            let more = whole(v + step);
            let next = if more { load(v + step) } else { w };
            for k in 0..nv {
                count_vec(w[k]);
            }
            v += step;
            if !more {
                break;
            }
            w = next;
        }
    }
    while v < nvec {
        count_vec(vec_at(v));
        v += threads;
    }
    let mut i = nvec * per_vec + me;
    while i < n {
        count_bin(bin(unsafe { input.add(i as usize).read() }));
        i += threads;
    }
    if cur != NO_BIN {
        add(cur, len);
    }
}

/// A histogram kernel's simulator entry: the kernel as a host function.
pub type SimHistogramFn<T> = unsafe fn(HistogramParams<T>);

/// The histogram kernel of samples `T`, registered by [`histogram_kernels!`].
#[cfg(not(target_arch = "nvptx64"))]
pub trait HistogramInstance<T> {
    const KERNEL: crate::Kernel<SimHistogramFn<T>>;
    /// Its weighted histogram ([`weighted::weighted_device`]).
    const WEIGHTED: crate::Kernel<weighted::SimWeightedFn<T>>;
}

/// Export `histogram_device::<T>` as a kernel named `name` and `weighted::weighted_device::<T>`
/// as `weighted`, and register them with [`HistogramInstance`] (implemented for [`Counts`] over
/// `T`).
#[macro_export]
macro_rules! histogram_kernels {
    ($($name:ident, $weighted:ident : $t:ty;)*) => {$(
        $crate::histogram_kernels!(@emit stringify!($name), stringify!($weighted), $t);
    )*};
    (@emit $name:expr, $weighted:expr, $t:ty) => {
        const _: () = {
            use $crate::histogram::HistogramParams;
            use $crate::histogram::weighted::WeightedParams;
            type T = $t;
            // Histogram; see `histogram_device`.
            $crate::histogram_params!(entry #[export_name = $name] kernel =>
                ($crate::histogram::histogram_device::<$t>));
            // Weighted histogram; see `weighted_device`.
            $crate::histogram_weighted_params!(entry #[export_name = $weighted] weighted =>
                ($crate::histogram::weighted::weighted_device::<$t>));
            #[cfg(not(target_arch = "nvptx64"))]
            impl $crate::histogram::HistogramInstance<$t> for $crate::histogram::Counts {
                const KERNEL: $crate::Kernel<$crate::histogram::SimHistogramFn<$t>> =
                    $crate::Kernel { name: $name, sim: kernel };
                const WEIGHTED: $crate::Kernel<$crate::histogram::weighted::SimWeightedFn<$t>> =
                    $crate::Kernel { name: $weighted, sim: weighted };
            }
        };
        $crate::launch_bounds!(@named $name, $crate::histogram::BLOCK,
            $crate::histogram::BLOCKS_PER_SM);
    };
}

/// The type the built-in histogram kernels are registered on.
#[derive(Clone, Copy, Debug)]
pub struct Counts;

/// The built-in histogram kernels: `histogram_{t}` and `histogram_weighted_{t}` for every
/// element type of the table.
macro_rules! builtin_histogram {
    ($t:ident { $($ops:tt)* }) => {
        $crate::histogram_kernels!(@emit concat!("histogram_", stringify!($t)),
            concat!("histogram_weighted_", stringify!($t)), $crate::builtin_elem!($t));
    };
}

#[cfg(feature = "builtin")]
crate::builtin_table!(types builtin_histogram! {} int float half);
