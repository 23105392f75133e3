//! The seeds' reduction ladder: teaching and benchmark variants, kept apart from the
//! production path (`kernels::reduce`).
//!
//! Each step is one generic kernel body over [`Elem`] (`i32`, `f32`, `f64`), exported once per
//! type as `ladder_<step>_<type>` (e.g. `ladder_reduce0_f32`) by [`ladder_kernels!`]:
//!
//! | module | seed | steps |
//! |---|---|---|
//! | [`samples`] | 000, CUDA samples `reduction` | reduce0 .. reduce6 |
//! | [`pmpp`] | 001, PMPP ch. 5 | divergent and convergent block sums |
//! | [`book`] | 004, *Professional CUDA C* | reduceGmem, reduceSmem, reduceSmemUnroll, dynamic smem |
//! | [`kepler`] | 002 + "Faster Parallel Reductions on Kepler" | shuffle warp sum, block sum, one atomic per block |
//!
//! Every kernel but the Kepler one writes one partial per block (`out[blockIdx.x]`); the host
//! finishes as the CUDA samples do, by running the same kernel again on the partials until one
//! value is left ([`Ladder::grid`] gives each launch's grid). The Kepler kernel adds each
//! block's sum to `out[0]` with one atomic, so one launch does the whole sum. The host
//! (`gpu_reduce_tools::ladder`) times exactly those launches (all passes), nothing else.
//!
//! All kernels take `n: u32` (the seeds' `unsigned int n`); the host keeps `n < 2^31`, so no
//! index computation overflows. Loads past `n` read the identity (zero) instead, so every `n`
//! works, where several seeds assume a multiple of the block size.

use kernels::gpu::{self, FULL_MASK, SharedArray, ShflValue};

pub mod book;
pub mod kepler;
pub mod pmpp;
pub mod samples;

/// An element type of the ladder: a sum with an identity, shuffles, an atomic add, and the
/// statically sized shared arrays some seeds declare (`__shared__ T a[N]`). A static shared
/// array needs a concrete type, so each type names its own arrays.
pub trait Elem: ShflValue + 'static {
    /// The identity of the sum (`0`), loaded for indices past `n`.
    const ZERO: Self;
    /// `self + other`; wrapping for integers (two's complement, as on the GPU).
    fn add(self, other: Self) -> Self;
    /// `atomicAdd(addr, v)` on global memory.
    /// # Safety
    /// `addr` must be a valid, aligned pointer to global memory.
    unsafe fn atomic_add(addr: *mut Self, v: Self);
    /// PMPP's `__shared__ T partialSum[SIZE]` ([`pmpp::BLOCK`] elements).
    fn pmpp_shared() -> SharedArray<Self>;
    /// Seed 004's `__shared__ T smem[DIM]` ([`book::DIM`] elements).
    fn dim_shared() -> SharedArray<Self>;
    /// The Kepler block sum's `__shared__ T shared[32]`, one slot per warp.
    fn warp_shared() -> SharedArray<Self>;
    /// The host's handle on this type's exported kernel for `step` (simulator builds only).
    #[cfg(not(target_arch = "nvptx64"))]
    fn entry(step: Ladder) -> Entry<Self>;
}

macro_rules! impl_elem {
    ($t:ty, $add:expr, $atomic:expr, $entry:ident, [$pmpp:ident, $dim:ident, $warps:ident]) => {
        impl Elem for $t {
            const ZERO: Self = 0 as $t;
            #[inline(always)]
            fn add(self, other: Self) -> Self {
                $add(self, other)
            }
            #[inline(always)]
            unsafe fn atomic_add(addr: *mut Self, v: Self) {
                unsafe { $atomic(addr, v) };
            }
            #[inline(always)]
            fn pmpp_shared() -> SharedArray<Self> {
                kernels::static_shared!($pmpp: [$t; crate::ladder::pmpp::BLOCK as usize])
            }
            #[inline(always)]
            fn dim_shared() -> SharedArray<Self> {
                kernels::static_shared!($dim: [$t; crate::ladder::book::DIM as usize])
            }
            #[inline(always)]
            fn warp_shared() -> SharedArray<Self> {
                kernels::static_shared!($warps: [$t; 32])
            }
            #[cfg(not(target_arch = "nvptx64"))]
            fn entry(step: Ladder) -> Entry<Self> {
                entries::$entry(step)
            }
        }
    };
}

impl_elem!(
    i32,
    i32::wrapping_add,
    // Two's complement: a u32 add wraps to the same bits as an i32 add.
    |p: *mut i32, v: i32| gpu::atomic_add_u32(p as *mut u32, v as u32),
    for_i32,
    [LADDER_PMPP_I32, LADDER_DIM_I32, LADDER_WARPS_I32]
);
impl_elem!(
    f32,
    |a: f32, b: f32| a + b,
    |p: *mut f32, v: f32| gpu::atomic_add_f32(p, v),
    for_f32,
    [LADDER_PMPP_F32, LADDER_DIM_F32, LADDER_WARPS_F32]
);
impl_elem!(
    f64,
    |a: f64, b: f64| a + b,
    |p: *mut f64, v: f64| gpu::atomic_add_f64(p, v),
    for_f64,
    [LADDER_PMPP_F64, LADDER_DIM_F64, LADDER_WARPS_F64]
);

/// Element `i` of shared memory, or `s[i] = v`, with `u32` indices as the seeds write them.
trait Smem<T> {
    /// # Safety
    /// As [`SharedArray::read`].
    unsafe fn at(&self, i: u32) -> T;
    /// # Safety
    /// As [`SharedArray::write`].
    unsafe fn set(&self, i: u32, v: T);
}

impl<T: Copy> Smem<T> for SharedArray<T> {
    #[inline(always)]
    unsafe fn at(&self, i: u32) -> T {
        unsafe { self.read(i as usize) }
    }
    #[inline(always)]
    unsafe fn set(&self, i: u32, v: T) {
        unsafe { self.write(i as usize, v) }
    }
}

/// `input[i]` if `i < n`, else zero: the seeds' `(i < n) ? g_idata[i] : 0`.
/// # Safety
/// `input` must hold `n` elements.
#[inline(always)]
unsafe fn load<T: Elem>(input: *const T, i: u32, n: u32) -> T {
    if i < n {
        unsafe { input.add(i as usize).read() }
    } else {
        T::ZERO
    }
}

/// The sum of a full warp's `v` by `shfl.sync.down` with offsets 16, 8, 4, 2, 1; lane 0 gets
/// it (the Kepler post's `warpReduceSum`, reduce4..6's last warp). 64-bit values take two
/// 32-bit shuffles (seed 002's `int2` trick, in [`ShflValue`]).
#[inline(always)]
fn warp_sum_down<T: Elem>(mut v: T) -> T {
    let mut offset = 16;
    while offset > 0 {
        v = v.add(gpu::shfl_down_sync(FULL_MASK, v, offset, 32));
        offset /= 2;
    }
    v
}

/// The last warp of a shared-memory tree, `s[0..64]` → the sum in thread 0, for seed 004.
///
/// Seed 004 unrolls this with a `volatile` pointer and no synchronisation ("warp-synchronous
/// programming"). That is a data race since Volta's independent thread scheduling: a lane may
/// read `s[tid + offset]` before or after its owner updated it. It is also wrong on the
/// simulator, whose threads switch only at barriers and warp collectives. So each step reads,
/// waits for the warp (`__syncwarp`), writes, and waits again, as the current CUDA samples do.
/// Called by all 32 lanes of warp 0; `s` holds at least 64 elements.
///
/// # Safety
/// Every element of `s[0..64]` was written before the last block barrier.
#[inline(always)]
unsafe fn warp_tail_shared<T: Elem>(s: SharedArray<T>, tid: u32) -> T {
    let mut v = unsafe { s.at(tid) };
    let mut offset = 32;
    while offset > 0 {
        v = v.add(unsafe { s.at(tid + offset) });
        gpu::sync_warp(FULL_MASK);
        unsafe { s.set(tid, v) };
        gpu::sync_warp(FULL_MASK);
        offset /= 2;
    }
    v
}

/// How the host calls a ladder kernel on the simulator (simulator builds only).
#[cfg(not(target_arch = "nvptx64"))]
#[derive(Clone, Copy, Debug)]
pub enum KernelFn<T> {
    /// `(input, out, n)`: reads `input`, writes `out`.
    Read(unsafe fn(*const T, *mut T, u32)),
    /// `(data, out, n)`: reduces `data` in place (destroying it), writes `out`.
    InPlace(unsafe fn(*mut T, *mut T, u32)),
}

/// One exported kernel: its PTX entry name and its host function (simulator builds only).
#[cfg(not(target_arch = "nvptx64"))]
#[derive(Clone, Copy, Debug)]
pub struct Entry<T> {
    pub name: &'static str,
    pub kernel: KernelFn<T>,
}

/// Declares [`Ladder`] and exports each step for `i32`, `f32`, `f64`: one line per step gives
/// its doc, its variant, whether it reads its input or reduces it in place, the generic body
/// and the three exported names. Also builds [`KERNEL_NAMES`] and the host's entry tables.
macro_rules! ladder_kernels {
    ($($(#[$doc:meta])* $step:ident: $mode:ident $body:expr => $i:ident, $s:ident, $d:ident;)*) => {
        /// A step of the ladder. Each is exported for `i32`, `f32` and `f64`.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Ladder {
            $($(#[$doc])* $step,)*
        }

        $(ladder_kernels!(@export $mode $body => $i: i32, $s: f32, $d: f64);)*

        /// PTX entry points of the ladder, for the host's kernel registry.
        pub const KERNEL_NAMES: &[&str] = &[$(stringify!($i), stringify!($s), stringify!($d)),*];

        #[cfg(not(target_arch = "nvptx64"))]
        mod entries {
            use super::*;
            pub fn for_i32(step: Ladder) -> Entry<i32> {
                match step { $(Ladder::$step => ladder_kernels!(@entry $mode $i),)* }
            }
            pub fn for_f32(step: Ladder) -> Entry<f32> {
                match step { $(Ladder::$step => ladder_kernels!(@entry $mode $s),)* }
            }
            pub fn for_f64(step: Ladder) -> Entry<f64> {
                match step { $(Ladder::$step => ladder_kernels!(@entry $mode $d),)* }
            }
        }
    };
    (@export read $body:expr => $($name:ident: $t:ty),*) => {$(
        kernels::kernel! {
            #[doc = concat!("`", stringify!($body), "` for `", stringify!($t), "`: sums `input[0..n]`.")]
            pub unsafe fn $name(input: *const $t, out: *mut $t, n: u32) {
                unsafe { $body(input, out, n) }
            }
        }
    )*};
    (@export inplace $body:expr => $($name:ident: $t:ty),*) => {$(
        kernels::kernel! {
            #[doc = concat!("`", stringify!($body), "` for `", stringify!($t), "`: sums `data[0..n]` in place.")]
            pub unsafe fn $name(data: *mut $t, out: *mut $t, n: u32) {
                unsafe { $body(data, out, n) }
            }
        }
    )*};
    (@entry read $name:ident) => {
        Entry { name: stringify!($name), kernel: KernelFn::Read($name) }
    };
    (@entry inplace $name:ident) => {
        Entry { name: stringify!($name), kernel: KernelFn::InPlace($name) }
    };
}

ladder_kernels! {
    /// Seed 000 reduce0: interleaved addressing, `tid % (2*s)`.
    Reduce0: read samples::reduce0 => ladder_reduce0_i32, ladder_reduce0_f32, ladder_reduce0_f64;
    /// Seed 000 reduce1: strided index, shared-memory bank conflicts.
    Reduce1: read samples::reduce1 => ladder_reduce1_i32, ladder_reduce1_f32, ladder_reduce1_f64;
    /// Seed 000 reduce2: sequential addressing.
    Reduce2: read samples::reduce2 => ladder_reduce2_i32, ladder_reduce2_f32, ladder_reduce2_f64;
    /// Seed 000 reduce3: first add during the global load.
    Reduce3: read samples::reduce3 => ladder_reduce3_i32, ladder_reduce3_f32, ladder_reduce3_f64;
    /// Seed 000 reduce4: the last warp by shuffles.
    Reduce4: read samples::reduce4 => ladder_reduce4_i32, ladder_reduce4_f32, ladder_reduce4_f64;
    /// Seed 000 reduce5: completely unrolled for a compile-time block size.
    Reduce5: read samples::reduce5::<_, { samples::BLOCK }>
        => ladder_reduce5_i32, ladder_reduce5_f32, ladder_reduce5_f64;
    /// Seed 000 reduce6: many elements per thread (grid-stride), bounds-checked second load.
    Reduce6: read samples::reduce6::<_, { samples::BLOCK }, false>
        => ladder_reduce6_i32, ladder_reduce6_f32, ladder_reduce6_f64;
    /// Seed 000 reduce6 with `nIsPow2`: the second load unchecked (`n` a power of two, at least
    /// `2 * BLOCK`). [`Ladder::for_n`] picks it for [`Ladder::Reduce6`].
    Reduce6Pow2: read samples::reduce6::<_, { samples::BLOCK }, true>
        => ladder_reduce6_pow2_i32, ladder_reduce6_pow2_f32, ladder_reduce6_pow2_f64;
    /// Seed 001 (PMPP): divergent block sum, `t % (2*stride)`.
    PmppDivergent: read pmpp::divergent
        => ladder_pmpp_divergent_i32, ladder_pmpp_divergent_f32, ladder_pmpp_divergent_f64;
    /// Seed 001 (PMPP): convergent block sum, `t < stride`.
    PmppConvergent: read pmpp::convergent
        => ladder_pmpp_convergent_i32, ladder_pmpp_convergent_f32, ladder_pmpp_convergent_f64;
    /// Seed 004 reduceGmem: in place in global memory (the host reduces a copy of the input).
    Gmem: inplace book::reduce_gmem => ladder_gmem_i32, ladder_gmem_f32, ladder_gmem_f64;
    /// Seed 004 reduceSmem: the same tree in a static shared array.
    Smem: read book::reduce_smem => ladder_smem_i32, ladder_smem_f32, ladder_smem_f64;
    /// Seed 004 reduceSmemUnroll: four blocks of data per thread.
    SmemUnroll: read book::reduce_smem_unroll
        => ladder_smem_unroll_i32, ladder_smem_unroll_f32, ladder_smem_unroll_f64;
    /// Seed 004 reduceSmemUnrollDyn: the same with dynamic shared memory.
    SmemUnrollDyn: read book::reduce_smem_unroll_dyn
        => ladder_smem_unroll_dyn_i32, ladder_smem_unroll_dyn_f32, ladder_smem_unroll_dyn_f64;
    /// Seed 002 + Kepler post: shuffle warp sums, block sum, one atomic add per block.
    ShflAtomic: read kepler::device_reduce_block_atomic
        => ladder_shfl_atomic_i32, ladder_shfl_atomic_f32, ladder_shfl_atomic_f64;
}

impl Ladder {
    /// The rows of the ladder table, in order ([`Ladder::Reduce6Pow2`] is reduce6's fast path,
    /// chosen by [`Ladder::for_n`], not a row of its own).
    pub const ROWS: [Ladder; 14] = [
        Ladder::Reduce0,
        Ladder::Reduce1,
        Ladder::Reduce2,
        Ladder::Reduce3,
        Ladder::Reduce4,
        Ladder::Reduce5,
        Ladder::Reduce6,
        Ladder::PmppDivergent,
        Ladder::PmppConvergent,
        Ladder::Gmem,
        Ladder::Smem,
        Ladder::SmemUnroll,
        Ladder::SmemUnrollDyn,
        Ladder::ShflAtomic,
    ];

    /// Short name for tables and messages.
    pub const fn label(self) -> &'static str {
        match self {
            Ladder::Reduce0 => "reduce0",
            Ladder::Reduce1 => "reduce1",
            Ladder::Reduce2 => "reduce2",
            Ladder::Reduce3 => "reduce3",
            Ladder::Reduce4 => "reduce4",
            Ladder::Reduce5 => "reduce5",
            Ladder::Reduce6 => "reduce6",
            Ladder::Reduce6Pow2 => "reduce6 (nIsPow2)",
            Ladder::PmppDivergent => "pmpp divergent",
            Ladder::PmppConvergent => "pmpp convergent",
            Ladder::Gmem => "reduceGmem",
            Ladder::Smem => "reduceSmem",
            Ladder::SmemUnroll => "reduceSmemUnroll",
            Ladder::SmemUnrollDyn => "reduceSmemUnrollDyn",
            Ladder::ShflAtomic => "shfl + atomic",
        }
    }

    /// The seed the step comes from.
    pub const fn seed(self) -> &'static str {
        match self {
            Ladder::PmppDivergent | Ladder::PmppConvergent => "001",
            Ladder::Gmem | Ladder::Smem | Ladder::SmemUnroll | Ladder::SmemUnrollDyn => "004",
            Ladder::ShflAtomic => "002+Kepler",
            _ => "000",
        }
    }

    /// Threads per block.
    pub const fn block(self) -> u32 {
        match self {
            Ladder::PmppDivergent | Ladder::PmppConvergent => pmpp::BLOCK,
            Ladder::Gmem | Ladder::Smem | Ladder::SmemUnroll | Ladder::SmemUnrollDyn => book::DIM,
            Ladder::ShflAtomic => kepler::BLOCK,
            _ => samples::BLOCK,
        }
    }

    /// Elements each thread loads per block-sized tile (the grid covers `n` once with
    /// `block * items_per_thread` elements per block, up to [`Ladder::max_grid`]).
    pub const fn items_per_thread(self) -> u32 {
        match self {
            Ladder::Reduce3 | Ladder::Reduce4 | Ladder::Reduce5 => 2,
            Ladder::Reduce6 | Ladder::Reduce6Pow2 => 2,
            Ladder::SmemUnroll | Ladder::SmemUnrollDyn => 4,
            _ => 1,
        }
    }

    /// Most blocks in a launch: the grid-stride kernels take a fixed grid (reduce6: 1024, the
    /// sample's `--maxblocks` set to fill a 132-SM GPU; Kepler: the post's 1024); the others one block per tile.
    pub const fn max_grid(self) -> u32 {
        match self {
            Ladder::Reduce6 | Ladder::Reduce6Pow2 => samples::REDUCE6_MAX_GRID,
            Ladder::ShflAtomic => kepler::MAX_GRID,
            _ => u32::MAX,
        }
    }

    /// Grid of a launch over `n` elements (at least one block, so `n = 0` gives a zero).
    pub const fn grid(self, n: u32) -> u32 {
        let per_block = self.block() * self.items_per_thread();
        let g = n.div_ceil(per_block);
        if g == 0 {
            1
        } else if g > self.max_grid() {
            self.max_grid()
        } else {
            g
        }
    }

    /// Dynamic shared memory of a launch, in elements: one per thread for the CUDA samples'
    /// `SharedMemory<T>()` and seed 004's `extern __shared__`; none for static arrays.
    pub const fn dynamic_shared_elems(self) -> u32 {
        match self {
            Ladder::PmppDivergent
            | Ladder::PmppConvergent
            | Ladder::Gmem
            | Ladder::Smem
            | Ladder::SmemUnroll
            | Ladder::ShflAtomic => 0,
            _ => self.block(),
        }
    }

    /// Whether the kernel reduces its input in place (the host gives it a copy).
    pub const fn in_place(self) -> bool {
        matches!(self, Ladder::Gmem)
    }

    /// Whether one launch finishes the sum by atomically adding into `out[0]`, which must be
    /// zero at launch. The others write one partial per block.
    pub const fn atomic(self) -> bool {
        matches!(self, Ladder::ShflAtomic)
    }

    /// The kernel to launch over `n` elements: reduce6's `nIsPow2` instance when `n` is a power
    /// of two of at least `2 * BLOCK` (then every second load `i + BLOCK` is in range, which
    /// the fast path no longer checks); the step itself otherwise.
    pub const fn for_n(self, n: u32) -> Ladder {
        match self {
            Ladder::Reduce6 | Ladder::Reduce6Pow2
                if n.is_power_of_two() && n >= 2 * samples::BLOCK =>
            {
                Ladder::Reduce6Pow2
            }
            Ladder::Reduce6Pow2 => Ladder::Reduce6,
            s => s,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_step_exported_for_every_type() {
        assert_eq!(KERNEL_NAMES.len(), 3 * 15);
        for step in Ladder::ROWS.into_iter().chain([Ladder::Reduce6Pow2]) {
            let names = [
                i32::entry(step).name,
                f32::entry(step).name,
                f64::entry(step).name,
            ];
            for (name, t) in names.into_iter().zip(["i32", "f32", "f64"]) {
                assert!(name.starts_with("ladder_") && name.ends_with(t), "{name}");
                assert!(KERNEL_NAMES.contains(&name), "{name}");
            }
        }
    }

    #[test]
    fn grids_cover_n() {
        for step in Ladder::ROWS {
            assert_eq!(step.grid(0), 1);
            assert_eq!(step.grid(1), 1);
            let g = step.grid(1 << 20);
            let covered = g as u64 * step.block() as u64 * step.items_per_thread() as u64;
            assert!(g == step.max_grid() || covered >= 1 << 20, "{step:?}");
            assert!(step.block().is_power_of_two() && step.block() >= 64);
        }
        assert_eq!(Ladder::Reduce6.for_n(256), Ladder::Reduce6);
        assert_eq!(Ladder::Reduce6.for_n(512), Ladder::Reduce6Pow2);
        assert_eq!(Ladder::Reduce6Pow2.for_n(513), Ladder::Reduce6);
        assert_eq!(Ladder::Reduce0.for_n(512), Ladder::Reduce0);
    }
}
