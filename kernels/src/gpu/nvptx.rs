//! The hardware layer on nvptx64: each primitive and the PTX it becomes.
//!
//! Warp-synchronous operations go through `llvm.nvvm.*` intrinsics rather than `asm!`: LLVM
//! knows those are `convergent`, so it never moves them into divergent control flow. Memory
//! operations with explicit ordering or cache hints use `asm!`.

use super::{ShflValue, shfl_c};
use core::arch::{asm, global_asm, nvptx};

#[allow(improper_ctypes)]
unsafe extern "C" {
    #[link_name = "llvm.nvvm.shfl.sync.down.i32"]
    fn nvvm_shfl_down(mask: u32, v: u32, delta: u32, c: u32) -> u32;
    #[link_name = "llvm.nvvm.shfl.sync.up.i32"]
    fn nvvm_shfl_up(mask: u32, v: u32, delta: u32, c: u32) -> u32;
    #[link_name = "llvm.nvvm.shfl.sync.bfly.i32"]
    fn nvvm_shfl_bfly(mask: u32, v: u32, lane_mask: u32, c: u32) -> u32;
    #[link_name = "llvm.nvvm.shfl.sync.idx.i32"]
    fn nvvm_shfl_idx(mask: u32, v: u32, lane: u32, c: u32) -> u32;
    #[link_name = "llvm.nvvm.vote.ballot.sync"]
    fn nvvm_ballot(mask: u32, pred: bool) -> u32;
    #[link_name = "llvm.nvvm.vote.all.sync"]
    fn nvvm_all(mask: u32, pred: bool) -> bool;
    #[link_name = "llvm.nvvm.vote.any.sync"]
    fn nvvm_any(mask: u32, pred: bool) -> bool;
    #[link_name = "llvm.nvvm.bar.warp.sync"]
    fn nvvm_bar_warp_sync(mask: u32);
    #[link_name = "llvm.nvvm.read.ptx.sreg.laneid"]
    fn nvvm_laneid() -> u32;
}

// ---------------------------------------------------------------------------------------------
// Indices. Each is one `mov.u32 %r, %<sreg>;`.

/// `mov.u32 %r, %tid.x`
#[inline(always)]
pub fn thread_idx_x() -> u32 {
    unsafe { nvptx::_thread_idx_x() as u32 }
}
/// `mov.u32 %r, %tid.y`
#[inline(always)]
pub fn thread_idx_y() -> u32 {
    unsafe { nvptx::_thread_idx_y() as u32 }
}
/// `mov.u32 %r, %tid.z`
#[inline(always)]
pub fn thread_idx_z() -> u32 {
    unsafe { nvptx::_thread_idx_z() as u32 }
}
/// `mov.u32 %r, %ctaid.x`
#[inline(always)]
pub fn block_idx_x() -> u32 {
    unsafe { nvptx::_block_idx_x() as u32 }
}
/// `mov.u32 %r, %ctaid.y`
#[inline(always)]
pub fn block_idx_y() -> u32 {
    unsafe { nvptx::_block_idx_y() as u32 }
}
/// `mov.u32 %r, %ctaid.z`
#[inline(always)]
pub fn block_idx_z() -> u32 {
    unsafe { nvptx::_block_idx_z() as u32 }
}
/// `mov.u32 %r, %ntid.x`
#[inline(always)]
pub fn block_dim_x() -> u32 {
    unsafe { nvptx::_block_dim_x() as u32 }
}
/// `mov.u32 %r, %ntid.y`
#[inline(always)]
pub fn block_dim_y() -> u32 {
    unsafe { nvptx::_block_dim_y() as u32 }
}
/// `mov.u32 %r, %ntid.z`
#[inline(always)]
pub fn block_dim_z() -> u32 {
    unsafe { nvptx::_block_dim_z() as u32 }
}
/// `mov.u32 %r, %nctaid.x`
#[inline(always)]
pub fn grid_dim_x() -> u32 {
    unsafe { nvptx::_grid_dim_x() as u32 }
}
/// `mov.u32 %r, %nctaid.y`
#[inline(always)]
pub fn grid_dim_y() -> u32 {
    unsafe { nvptx::_grid_dim_y() as u32 }
}
/// `mov.u32 %r, %nctaid.z`
#[inline(always)]
pub fn grid_dim_z() -> u32 {
    unsafe { nvptx::_grid_dim_z() as u32 }
}
/// `mov.u32 %r, %laneid` (the lane within the warp, 0..32)
#[inline(always)]
pub fn lane_id() -> u32 {
    unsafe { nvvm_laneid() }
}
/// Warp index within a 1-D block: `%tid.x >> 5`.
#[inline(always)]
pub fn warp_id() -> u32 {
    thread_idx_x() / super::WARP_SIZE
}

// ---------------------------------------------------------------------------------------------
// Barriers.

/// Block-wide barrier: `barrier.sync 0` (`bar.sync 0`), CUDA's `__syncthreads()`.
#[inline(always)]
pub fn sync_threads() {
    unsafe { nvptx::_syncthreads() }
}

/// Warp barrier over `mask`: `bar.warp.sync mask`, CUDA's `__syncwarp(mask)`.
#[inline(always)]
pub fn sync_warp(mask: u32) {
    unsafe { nvvm_bar_warp_sync(mask) }
}

/// Abort the kernel: `trap;`. The host sees a launch failure.
#[inline(always)]
pub fn trap() -> ! {
    unsafe { nvptx::trap() }
}

/// Generic → global address, `cvta.to.global.u64`: the `.global` instructions below take global
/// addresses; the conversion is free after ptxas (the windows coincide) but keeps the PTX by the book.
#[inline(always)]
fn to_global<T>(p: *const T) -> u64 {
    let g: u64;
    unsafe {
        asm!("cvta.to.global.u64 {g}, {p};", g = out(reg64) g, p = in(reg64) p, options(pure, nomem, nostack))
    }
    g
}

// ---------------------------------------------------------------------------------------------
// Shared memory.

/// Declare a block-shared array at module scope and get a generic pointer to it.
///
/// `static_shared!(NAME: [T; N])` emits `.shared .align A .b8 NAME[N * size_of::<T>()];` once in
/// the module (`global_asm!`) and evaluates to a [`SharedArray`](super::SharedArray) over
/// `cvta.shared.u64 %rd, NAME;` (`A`: [`shared_align`](super::shared_align)).
/// `NAME` must be unique in the crate; `T` and `N` must not depend on generic parameters (use a
/// byte array sized for the largest type).
#[macro_export]
macro_rules! static_shared {
    ($name:ident : [$t:ty; $n:expr]) => {{
        #[allow(non_snake_case)]
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            ::core::arch::global_asm!(
                concat!(".shared .align {align} .b8 ", stringify!($name), "[{bytes}];"),
                align = const $crate::gpu::shared_align(($n) * ::core::mem::size_of::<$t>()),
                bytes = const ($n) * ::core::mem::size_of::<$t>(),
            );
        }
        let p: u64;
        // SAFETY: takes the address of a symbol declared just above; reads no memory.
        unsafe {
            ::core::arch::asm!(
                concat!("cvta.shared.u64 {p}, ", stringify!($name), ";"),
                p = out(reg64) p,
                options(pure, nomem, nostack),
            );
        }
        // SAFETY: NAME holds N elements of T.
        unsafe { $crate::gpu::SharedArray::<$t>::from_raw(p as *mut $t, $n) }
    }};
}

global_asm!(".extern .shared .align 128 .b8 __dynamic_smem[];");

/// The block's dynamic shared memory (the launch's `sharedMemBytes`) as `T`s, CUDA's
/// `extern __shared__ T smem[]`: `cvta.shared.u64 %rd, __dynamic_smem;` and
/// `mov.u32 %r, %dynamic_smem_size;` for its length.
#[inline(always)]
pub fn dynamic_shared<T: Copy>() -> super::SharedArray<T> {
    let p: u64;
    let bytes: u32;
    unsafe {
        asm!("cvta.shared.u64 {p}, __dynamic_smem;", p = out(reg64) p, options(pure, nomem, nostack));
        asm!("mov.u32 {b}, %dynamic_smem_size;", b = out(reg32) bytes, options(pure, nomem, nostack));
        super::SharedArray::from_raw(p as *mut T, bytes as usize / core::mem::size_of::<T>())
    }
}

// ---------------------------------------------------------------------------------------------
// Warp shuffles. `width` (a power of two, 1..=32) splits the warp into segments as CUDA's
// `width` argument does; a lane whose source lies outside its segment gets its own value.
// 32-bit values: one `shfl.sync.{down,up,bfly,idx}.b32`; 64-bit values: two.

macro_rules! shfl_fn {
    ($(#[$doc:meta])* $name:ident, $intr:ident, $up:expr) => {
        $(#[$doc])*
        #[inline(always)]
        pub fn $name<T: ShflValue>(mask: u32, value: T, arg: u32, width: u32) -> T {
            let c = shfl_c(width, $up);
            let mut w = value.to_words();
            // WORDS is a constant: the loop unrolls to exactly WORDS shuffles.
            for k in 0..T::WORDS {
                w[k] = unsafe { $intr(mask, w[k], arg, c) };
            }
            T::from_words(w)
        }
    };
}
shfl_fn!(
    /// `shfl.sync.down.b32 d, v, delta, ((32-width)<<8)|31, mask`: lane `i` reads lane `i+delta`.
    shfl_down_sync,
    nvvm_shfl_down,
    false
);
shfl_fn!(
    /// `shfl.sync.up.b32 d, v, delta, (32-width)<<8, mask`: lane `i` reads lane `i-delta`.
    shfl_up_sync,
    nvvm_shfl_up,
    true
);
shfl_fn!(
    /// `shfl.sync.bfly.b32 d, v, lane_mask, ((32-width)<<8)|31, mask`: lane `i` reads `i^lane_mask`.
    shfl_xor_sync,
    nvvm_shfl_bfly,
    false
);
shfl_fn!(
    /// `shfl.sync.idx.b32 d, v, lane, ((32-width)<<8)|31, mask`: every lane reads `lane`
    /// (relative to its segment).
    shfl_sync,
    nvvm_shfl_idx,
    false
);

// ---------------------------------------------------------------------------------------------
// Votes.

/// `vote.sync.ballot.b32 d, p, mask`: bit `i` set when lane `i` passed `true`.
#[inline(always)]
pub fn ballot_sync(mask: u32, pred: bool) -> u32 {
    unsafe { nvvm_ballot(mask, pred) }
}
/// `redux.sync.<op>.u32 d, a, mask` (sm_80+) as a function of `(mask, value)`.
macro_rules! redux_u32 {
    ($(#[$doc:meta] $name:ident $op:literal)*) => {$(
        #[$doc]
        #[inline(always)]
        pub fn $name(mask: u32, value: u32) -> u32 {
            let d: u32;
            unsafe {
                asm!(concat!("redux.sync.", $op, ".u32 {d}, {a}, {m};"), d = out(reg32) d,
                    a = in(reg32) value, m = in(reg32) mask, options(nostack))
            };
            d
        }
    )*};
}
redux_u32! {
    /// `redux.sync.min.u32`: the least `value` of the lanes in `mask`, in each.
    redux_min_u32 "min"
    /// `redux.sync.max.u32`: the greatest `value` of the lanes in `mask`, in each.
    redux_max_u32 "max"
}
/// `vote.sync.all.pred d, p, mask`
#[inline(always)]
pub fn all_sync(mask: u32, pred: bool) -> bool {
    unsafe { nvvm_all(mask, pred) }
}
/// `vote.sync.any.pred d, p, mask`
#[inline(always)]
pub fn any_sync(mask: u32, pred: bool) -> bool {
    unsafe { nvvm_any(mask, pred) }
}

// ---------------------------------------------------------------------------------------------
// Atomics on global memory (relaxed, GPU scope: PTX's default for `atom`). Each returns the old
// value.

macro_rules! atomic_fn {
    ($(#[$doc:meta])* $name:ident, $t:ty, $ptx:literal, $cls:ident) => {
        $(#[$doc])*
        /// # Safety
        /// `addr` must be a valid, aligned pointer to global memory.
        #[inline(always)]
        pub unsafe fn $name(addr: *mut $t, val: $t) -> $t {
            let old: $t;
            unsafe {
                asm!(concat!($ptx, " {o}, [{a}], {v};"), o = out($cls) old, a = in(reg64) to_global(addr),
                     v = in($cls) val, options(nostack));
            }
            old
        }
    };
}
atomic_fn!(
    /// `atom.global.add.u32`
    atomic_add_u32,
    u32,
    "atom.global.add.u32",
    reg32
);
atomic_fn!(
    /// `atom.global.add.u64`
    atomic_add_u64,
    u64,
    "atom.global.add.u64",
    reg64
);
atomic_fn!(
    /// `atom.global.add.f32`
    atomic_add_f32,
    f32,
    "atom.global.add.f32",
    reg32
);
atomic_fn!(
    /// `atom.global.add.f64` (sm_60+)
    atomic_add_f64,
    f64,
    "atom.global.add.f64",
    reg64
);
atomic_fn!(
    /// `atom.global.max.u32`
    atomic_max_u32,
    u32,
    "atom.global.max.u32",
    reg32
);
atomic_fn!(
    /// `atom.global.or.b32`
    atomic_or_u32,
    u32,
    "atom.global.or.b32",
    reg32
);
atomic_fn!(
    /// `atom.global.exch.b32`
    atomic_exch_u32,
    u32,
    "atom.global.exch.b32",
    reg32
);
atomic_fn!(
    /// `atom.global.exch.b64`
    atomic_exch_u64,
    u64,
    "atom.global.exch.b64",
    reg64
);

/// `red.shared.add.u32 [addr], v` (no old value: the reduction form).
/// # Safety
/// `addr` must point to an aligned `u32` of the block's shared memory.
#[inline(always)]
pub(crate) unsafe fn shared_red_add_u32(addr: *mut u32, v: u32) {
    let p = to_shared_u32(addr);
    unsafe {
        asm!("red.shared.add.u32 [{p}], {v};", p = in(reg32) p, v = in(reg32) v, options(nostack))
    }
}

/// `red.shared.max.u32 [addr], v`.
/// # Safety
/// `addr` must point to an aligned `u32` of the block's shared memory.
#[inline(always)]
pub(crate) unsafe fn shared_red_max_u32(addr: *mut u32, v: u32) {
    let p = to_shared_u32(addr);
    unsafe {
        asm!("red.shared.max.u32 [{p}], {v};", p = in(reg32) p, v = in(reg32) v, options(nostack))
    }
}

/// `red.shared.or.b32 [addr], v`.
/// # Safety
/// `addr` must point to an aligned `u32` of the block's shared memory.
#[inline(always)]
pub(crate) unsafe fn shared_red_or_u32(addr: *mut u32, v: u32) {
    let p = to_shared_u32(addr);
    unsafe {
        asm!("red.shared.or.b32 [{p}], {v};", p = in(reg32) p, v = in(reg32) v, options(nostack))
    }
}

/// `atom.shared.add.u32 old, [addr], v`: the value before the add.
/// # Safety
/// `addr` must point to an aligned `u32` of the block's shared memory.
#[inline(always)]
pub(crate) unsafe fn shared_atom_add_u32(addr: *mut u32, v: u32) -> u32 {
    let p = to_shared_u32(addr);
    let old: u32;
    unsafe {
        asm!("atom.shared.add.u32 {o}, [{p}], {v};", o = out(reg32) old, p = in(reg32) p, v = in(reg32) v, options(nostack))
    }
    old
}

/// `red.shared.add.u64 [addr], v`.
/// # Safety
/// `addr` must point to an aligned `u64` of the block's shared memory.
#[inline(always)]
pub(crate) unsafe fn shared_red_add_u64(addr: *mut u64, v: u64) {
    let p = to_shared_u32(addr);
    unsafe {
        asm!("red.shared.add.u64 [{p}], {v};", p = in(reg32) p, v = in(reg64) v, options(nostack))
    }
}

/// `atom.global.cas.b32 old, [addr], compare, val`: stores `val` if `*addr == compare`.
/// # Safety
/// `addr` must be a valid, aligned pointer to global memory.
#[inline(always)]
pub unsafe fn atomic_cas_u32(addr: *mut u32, compare: u32, val: u32) -> u32 {
    let old: u32;
    unsafe {
        asm!("atom.global.cas.b32 {o}, [{a}], {c}, {v};", o = out(reg32) old, a = in(reg64) to_global(addr),
             c = in(reg32) compare, v = in(reg32) val, options(nostack));
    }
    old
}

/// `atom.global.cas.b64 old, [addr], compare, val`.
/// # Safety
/// `addr` must be a valid, aligned pointer to global memory.
#[inline(always)]
pub unsafe fn atomic_cas_u64(addr: *mut u64, compare: u64, val: u64) -> u64 {
    let old: u64;
    unsafe {
        asm!("atom.global.cas.b64 {o}, [{a}], {c}, {v};", o = out(reg64) old, a = in(reg64) to_global(addr),
             c = in(reg64) compare, v = in(reg64) val, options(nostack));
    }
    old
}

// ---------------------------------------------------------------------------------------------
// Fences and ordered accesses. The asm blocks omit `nomem`, so they are also compiler barriers.

/// `fence.sc.gpu` (what `membar.gl` means on sm_70+), CUDA's `__threadfence()`.
#[inline(always)]
pub fn thread_fence() {
    unsafe { asm!("fence.sc.gpu;", options(nostack)) }
}
/// `fence.acq_rel.gpu`: orders this thread's earlier and later accesses at GPU scope.
#[inline(always)]
pub fn fence_acq_rel_gpu() {
    unsafe { asm!("fence.acq_rel.gpu;", options(nostack)) }
}
/// `fence.sc.cta`, CUDA's `__threadfence_block()`.
#[inline(always)]
pub fn thread_fence_block() {
    unsafe { asm!("fence.sc.cta;", options(nostack)) }
}

/// `ld.acquire.gpu.global.u32`: later accesses of this thread are not performed before it.
/// # Safety
/// `addr` must be a valid, aligned pointer to global memory.
#[inline(always)]
pub unsafe fn load_acquire_u32(addr: *const u32) -> u32 {
    let v: u32;
    unsafe {
        asm!("ld.acquire.gpu.global.u32 {v}, [{a}];", v = out(reg32) v, a = in(reg64) to_global(addr), options(nostack))
    }
    v
}
/// `ld.acquire.gpu.global.u64`.
/// # Safety
/// `addr` must be a valid, aligned pointer to global memory.
#[inline(always)]
pub unsafe fn load_acquire_u64(addr: *const u64) -> u64 {
    let v: u64;
    unsafe {
        asm!("ld.acquire.gpu.global.u64 {v}, [{a}];", v = out(reg64) v, a = in(reg64) to_global(addr), options(nostack))
    }
    v
}
/// `ld.relaxed.gpu.global.u64`: a coherent 64-bit load with no ordering (for a word that
/// carries its own payload, like a packed look-back status).
/// # Safety
/// `addr` must be a valid, aligned pointer to global memory.
#[inline(always)]
pub unsafe fn load_relaxed_u64(addr: *const u64) -> u64 {
    let v: u64;
    unsafe {
        asm!("ld.relaxed.gpu.global.u64 {v}, [{a}];", v = out(reg64) v, a = in(reg64) to_global(addr), options(nostack))
    }
    v
}
/// `ld.relaxed.gpu.global.v2.u64`: two coherent 64-bit words in one 16-byte load, no ordering.
/// Each word is read whole; the two together need not be (a writer's 16-byte store may be
/// seen half done), so each word must say on its own whether it is current.
/// # Safety
/// `addr` must be a valid, 16-byte aligned pointer to global memory.
#[inline(always)]
pub unsafe fn load_relaxed_v2_u64(addr: *const u64) -> [u64; 2] {
    let (a, b): (u64, u64);
    unsafe {
        asm!("ld.relaxed.gpu.global.v2.u64 {{{a}, {b}}}, [{p}];", a = out(reg64) a, b = out(reg64) b, p = in(reg64) to_global(addr), options(nostack))
    }
    [a, b]
}
/// `st.relaxed.gpu.global.v2.u64`: two 64-bit words in one 16-byte store, no ordering (see
/// [`load_relaxed_v2_u64`]).
/// # Safety
/// `addr` must be a valid, 16-byte aligned pointer to global memory.
#[inline(always)]
pub unsafe fn store_relaxed_v2_u64(addr: *mut u64, v: [u64; 2]) {
    unsafe {
        asm!("st.relaxed.gpu.global.v2.u64 [{p}], {{{a}, {b}}};", p = in(reg64) to_global(addr), a = in(reg64) v[0], b = in(reg64) v[1], options(nostack))
    }
}
/// `st.release.gpu.global.u32`: earlier accesses of this thread are performed before it.
/// # Safety
/// `addr` must be a valid, aligned pointer to global memory.
#[inline(always)]
pub unsafe fn store_release_u32(addr: *mut u32, v: u32) {
    unsafe {
        asm!("st.release.gpu.global.u32 [{a}], {v};", a = in(reg64) to_global(addr), v = in(reg32) v, options(nostack))
    }
}
/// `st.release.sys.global.u32`: earlier accesses of this thread are performed, at system scope
/// (the host included), before it. For a flag in mapped host memory the CPU polls.
/// # Safety
/// `addr` must be a valid, aligned pointer to global (or device-mapped host) memory.
#[inline(always)]
pub unsafe fn store_release_sys_u32(addr: *mut u32, v: u32) {
    unsafe {
        asm!("st.release.sys.global.u32 [{a}], {v};", a = in(reg64) to_global(addr), v = in(reg32) v, options(nostack))
    }
}
/// `st.release.gpu.global.u64`.
/// # Safety
/// `addr` must be a valid, aligned pointer to global memory.
#[inline(always)]
pub unsafe fn store_release_u64(addr: *mut u64, v: u64) {
    unsafe {
        asm!("st.release.gpu.global.u64 [{a}], {v};", a = in(reg64) to_global(addr), v = in(reg64) v, options(nostack))
    }
}
/// `ld.volatile.global.u32`: always re-reads memory (for polling a flag another block writes).
/// # Safety
/// `addr` must be a valid, aligned pointer to global memory.
#[inline(always)]
pub unsafe fn load_volatile_u32(addr: *const u32) -> u32 {
    let v: u32;
    unsafe {
        asm!("ld.volatile.global.u32 {v}, [{a}];", v = out(reg32) v, a = in(reg64) to_global(addr), options(nostack))
    }
    v
}

// ---------------------------------------------------------------------------------------------
// Vector loads.

/// One 128-bit load through the read-only (non-coherent) path: `ld.global.nc.v4.b32`.
/// # Safety
/// `addr` must point to 16 readable bytes of global memory, 16-byte aligned, that no thread
/// writes during the kernel.
#[inline(always)]
pub unsafe fn load_nc_v4_b32(addr: *const u32) -> [u32; 4] {
    let (a, b, c, d): (u32, u32, u32, u32);
    unsafe {
        asm!("ld.global.nc.v4.b32 {{{a}, {b}, {c}, {d}}}, [{p}];",
             a = out(reg32) a, b = out(reg32) b, c = out(reg32) c, d = out(reg32) d,
             p = in(reg64) to_global(addr), options(pure, readonly, nostack));
    }
    [a, b, c, d]
}

/// [`load_nc_v4_b32`] for four `f32`: `ld.global.nc.v4.b32`, bit-cast.
/// # Safety
/// As [`load_nc_v4_b32`].
#[inline(always)]
pub unsafe fn load_nc_v4_f32(addr: *const f32) -> [f32; 4] {
    let w = unsafe { load_nc_v4_b32(addr as *const u32) };
    [
        f32::from_bits(w[0]),
        f32::from_bits(w[1]),
        f32::from_bits(w[2]),
        f32::from_bits(w[3]),
    ]
}

/// One coherent 128-bit load: `ld.global.v4.b32`. For data the kernel also writes (an in-place
/// scan reads its tile before overwriting it), where the `.nc` path is not allowed.
/// # Safety
/// `addr` must point to 16 readable bytes of global memory, 16-byte aligned.
#[inline(always)]
pub unsafe fn load_v4_b32(addr: *const u32) -> [u32; 4] {
    let (a, b, c, d): (u32, u32, u32, u32);
    unsafe {
        asm!("ld.global.v4.b32 {{{a}, {b}, {c}, {d}}}, [{p}];",
             a = out(reg32) a, b = out(reg32) b, c = out(reg32) c, d = out(reg32) d,
             p = in(reg64) to_global(addr), options(readonly, nostack));
    }
    [a, b, c, d]
}

/// One 128-bit store: `st.global.v4.b32`.
/// # Safety
/// `addr` must point to 16 writable bytes of global memory, 16-byte aligned.
#[inline(always)]
pub unsafe fn store_v4_b32(addr: *mut u32, w: [u32; 4]) {
    unsafe {
        asm!("st.global.v4.b32 [{p}], {{{a}, {b}, {c}, {d}}};",
             p = in(reg64) to_global(addr),
             a = in(reg32) w[0], b = in(reg32) w[1], c = in(reg32) w[2], d = in(reg32) w[3],
             options(nostack));
    }
}

/// One coherent 64-bit load: `ld.global.v2.b32`. The 16-bit scans' vector (four elements); not
/// `.nc`, as an in-place scan reads what it later overwrites.
/// # Safety
/// `addr` must point to 8 readable bytes of global memory, 8-byte aligned.
#[inline(always)]
pub unsafe fn load_v2_b32(addr: *const u32) -> [u32; 2] {
    let (a, b): (u32, u32);
    unsafe {
        asm!("ld.global.v2.b32 {{{a}, {b}}}, [{p}];",
             a = out(reg32) a, b = out(reg32) b,
             p = in(reg64) to_global(addr), options(readonly, nostack));
    }
    [a, b]
}

/// One 64-bit store: `st.global.v2.b32`.
/// # Safety
/// `addr` must point to 8 writable bytes of global memory, 8-byte aligned.
#[inline(always)]
pub unsafe fn store_v2_b32(addr: *mut u32, w: [u32; 2]) {
    unsafe {
        asm!("st.global.v2.b32 [{p}], {{{a}, {b}}};",
             p = in(reg64) to_global(addr), a = in(reg32) w[0], b = in(reg32) w[1],
             options(nostack));
    }
}

// ---------------------------------------------------------------------------------------------
// Conversions.

/// binary16 bits to the f32 of the same value: `cvt.f32.f16 %f, %h;` (exact, subnormals
/// included; a NaN comes out a NaN, its payload the hardware's choice).
#[inline(always)]
pub fn cvt_f32_f16(h: u16) -> f32 {
    let f: f32;
    unsafe {
        asm!("cvt.f32.f16 {f}, {h};", f = out(reg32) f, h = in(reg16) h, options(pure, nomem, nostack))
    }
    f
}

/// f32 to binary16 bits, to nearest, ties to even: `cvt.rn.f16.f32 %h, %f;` (no `.ftz`:
/// subnormal results kept; overflow gives ±inf; a NaN comes out a NaN).
#[inline(always)]
pub fn cvt_rn_f16_f32(x: f32) -> u16 {
    let h: u16;
    unsafe {
        asm!("cvt.rn.f16.f32 {h}, {f};", h = out(reg16) h, f = in(reg32) x, options(pure, nomem, nostack))
    }
    h
}

/// Suspend the thread for about `ns` nanoseconds: `nanosleep.u32` (sm_70+). Back-off for spin
/// loops, so waiting warps leave issue slots to the warps they wait for.
#[inline(always)]
pub fn nanosleep(ns: u32) {
    unsafe { asm!("nanosleep.u32 {t};", t = in(reg32) ns, options(nomem, nostack)) }
}

/// Ask L2 for the 128-byte line holding `addr`, without waiting or holding a register:
/// `prefetch.global.L2 [a];`. Keeps DRAM busy for data a later load will want (a tile that a
/// block will start soon) while the SM does something else. Never changes a result.
/// # Safety
/// `addr` points into an allocation of global memory.
#[inline(always)]
pub unsafe fn prefetch_l2<T>(addr: *const T) {
    unsafe {
        asm!("prefetch.global.L2 [{p}];", p = in(reg64) to_global(addr), options(nostack, readonly))
    }
}

/// One 32-bit load through the read-only path: `ld.global.nc.b32`.
/// # Safety
/// `addr` must point to 4 readable, aligned bytes of global memory no thread writes during the
/// kernel.
#[inline(always)]
pub unsafe fn load_nc_f32(addr: *const f32) -> f32 {
    let v: u32;
    unsafe {
        asm!("ld.global.nc.b32 {v}, [{p}];", v = out(reg32) v, p = in(reg64) to_global(addr), options(pure, readonly, nostack))
    }
    f32::from_bits(v)
}

// ---------------------------------------------------------------------------------------------
// Asynchronous global -> shared copies (sm_80+). They keep loads in flight without holding
// registers: a block can fetch its next tiles while it waits on something else.

/// The 32-bit shared-state-space address of a generic pointer into shared memory:
/// `cvta.to.shared.u64` then `cvt.u32.u64`.
#[inline(always)]
fn to_shared_u32<T>(p: *const T) -> u32 {
    let s: u64;
    unsafe {
        asm!("cvta.to.shared.u64 {s}, {p};", s = out(reg64) s, p = in(reg64) p, options(pure, nomem, nostack))
    }
    s as u32
}

/// Start copying 16 bytes from global `src` to element `i` of `dst`:
/// `cp.async.cg.shared.global [dst], [src], 16;` (through L2 only, no L1 allocation). The data
/// is there after the `cp_async_wait_group` that retires the group it was committed with.
/// # Safety
/// `i < dst.len()`; `src` points to 16 readable bytes of global memory, 16-byte aligned.
#[inline(always)]
pub unsafe fn cp_async_16(dst: super::SharedArray<[u32; 4]>, i: usize, src: *const u32) {
    unsafe {
        let d = to_shared_u32(dst.ptr.add(i));
        asm!("cp.async.cg.shared.global [{d}], [{s}], 16;", d = in(reg32) d, s = in(reg64) to_global(src), options(nostack));
    }
}

/// Close the thread's current group of [`cp_async_16`] copies: `cp.async.commit_group;`
/// (an empty group is allowed and completes at once).
#[inline(always)]
pub fn cp_async_commit() {
    unsafe { asm!("cp.async.commit_group;", options(nostack)) }
}

/// Wait until at most `N` of the thread's committed copy groups are still in flight:
/// `cp.async.wait_group N;`. Makes the retired copies visible to this thread only (other
/// threads need a barrier too).
#[inline(always)]
pub fn cp_async_wait_group<const N: u32>() {
    unsafe { asm!("cp.async.wait_group {n};", n = const N, options(nostack)) }
}

/// `x`, or CUDA's canonical NaN (`0x7fffffff`) when `x` is a NaN: `max.NaN.f32 d, x, -inf`
/// (sm_80+), one instruction.
#[inline(always)]
pub fn canonical_nan_f32(x: f32) -> f32 {
    let d: f32;
    unsafe {
        asm!("max.NaN.f32 {d}, {x}, 0fFF800000;", d = out(reg32) d, x = in(reg32) x, options(pure, nomem, nostack))
    }
    d
}

/// Elements `i..` of a shared array as a 32-bit shared-space address, computed once: a store
/// through it ([`store_slot`]) is one `st.shared` and one address op (a generic store's
/// 64-bit address costs more per element where a block stages data).
#[derive(Clone, Copy)]
pub struct SharedSlots<T> {
    addr: u32,
    _t: core::marker::PhantomData<T>,
}

/// Elements `i..` of `a` (see [`SharedSlots`]).
/// # Safety
/// `i <= a.len()`.
#[inline(always)]
pub unsafe fn shared_slots<T>(a: super::SharedArray<T>, i: usize) -> SharedSlots<T> {
    SharedSlots {
        addr: to_shared_u32(a.ptr) + (i * core::mem::size_of::<T>()) as u32,
        _t: core::marker::PhantomData,
    }
}

/// Load slot `k` of `s`: `ld.shared` (a generic load of shared memory pays the address
/// space check and a 64-bit address each).
/// # Safety
/// Slot `k` lies inside the array, and no other thread writes it between the same two barriers.
#[inline(always)]
pub unsafe fn load_slot<T: ShflValue>(s: SharedSlots<T>, k: u32) -> T {
    let p = s.addr + k * core::mem::size_of::<T>() as u32;
    let mut w = [0u32; 4];
    unsafe {
        match core::mem::size_of::<T>() {
            2 => {
                let v: u16;
                asm!("ld.shared.b16 {v}, [{p}];", v = out(reg16) v, p = in(reg32) p, options(pure, readonly, nostack));
                w[0] = v as u32;
            }
            4 => {
                asm!("ld.shared.b32 {v}, [{p}];", v = out(reg32) w[0], p = in(reg32) p, options(pure, readonly, nostack))
            }
            _ => {
                asm!("ld.shared.v2.b32 {{{a}, {b}}}, [{p}];", a = out(reg32) w[0], b = out(reg32) w[1], p = in(reg32) p, options(pure, readonly, nostack))
            }
        }
    }
    T::from_words(w)
}

/// Store `v` at slot `k` of `s`: `st.shared`.
/// # Safety
/// Slot `k` lies inside the array, and no other thread accesses it between the same two
/// barriers.
#[inline(always)]
pub unsafe fn store_slot<T: ShflValue>(s: SharedSlots<T>, k: u32, v: T) {
    let p = s.addr + k * core::mem::size_of::<T>() as u32;
    let w = v.to_words();
    unsafe {
        match core::mem::size_of::<T>() {
            2 => {
                asm!("st.shared.b16 [{p}], {v};", p = in(reg32) p, v = in(reg16) w[0] as u16, options(nostack))
            }
            4 => {
                asm!("st.shared.b32 [{p}], {v};", p = in(reg32) p, v = in(reg32) w[0], options(nostack))
            }
            _ => {
                asm!("st.shared.v2.b32 [{p}], {{{a}, {b}}};", p = in(reg32) p, a = in(reg32) w[0], b = in(reg32) w[1], options(nostack))
            }
        }
    }
}

/// Add `v` to slot `k` of `s` atomically among the block's threads: `red.shared.add.u32`, its
/// address one multiply-add from the slots' (a counter a sample: the generic address's 64-bit
/// add and conversion cost as much as the add).
/// # Safety
/// Slot `k` lies inside the array.
#[inline(always)]
pub unsafe fn red_add_slot(s: SharedSlots<u32>, k: u32, v: u32) {
    let p = s.addr + k * 4;
    unsafe {
        asm!("red.shared.add.u32 [{p}], {v};", p = in(reg32) p, v = in(reg32) v, options(nostack))
    }
}

/// Element `i` of a 16-byte shared array: `ld.shared.v4.b32`.
/// # Safety
/// `i < src.len()`, and no other thread writes element `i` between the same two barriers.
#[inline(always)]
pub unsafe fn load_shared_v4(src: super::SharedArray<[u32; 4]>, i: usize) -> [u32; 4] {
    let (a, b, c, d): (u32, u32, u32, u32);
    unsafe {
        let p = to_shared_u32(src.ptr.add(i));
        asm!("ld.shared.v4.b32 {{{a}, {b}, {c}, {d}}}, [{p}];",
             a = out(reg32) a, b = out(reg32) b, c = out(reg32) c, d = out(reg32) d,
             p = in(reg32) p, options(readonly, nostack));
    }
    [a, b, c, d]
}

/// Store `v` at element `i` of a 16-byte shared array: `st.shared.v4.b32`.
/// # Safety
/// `i < dst.len()`, and no other thread accesses element `i` between the same two barriers.
#[inline(always)]
pub unsafe fn store_shared_v4(dst: super::SharedArray<[u32; 4]>, i: usize, v: [u32; 4]) {
    unsafe {
        let p = to_shared_u32(dst.ptr.add(i));
        asm!("st.shared.v4.b32 [{p}], {{{a}, {b}, {c}, {d}}};",
             a = in(reg32) v[0], b = in(reg32) v[1], c = in(reg32) v[2], d = in(reg32) v[3],
             p = in(reg32) p, options(nostack));
    }
}
