//! The hardware layer on the simulator: the same names and signatures as `gpu/nvptx.rs`.

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering, fence};
use std::format;
use std::string::String;

use super::{Event, FaultKind, WarpOp, WarpReq, current, fault, suspend};
use crate::gpu::{SharedArray, ShflValue, shfl_c};

// Indices.
pub fn thread_idx_x() -> u32 {
    current().tid.0
}
pub fn thread_idx_y() -> u32 {
    current().tid.1
}
pub fn thread_idx_z() -> u32 {
    current().tid.2
}
pub fn block_idx_x() -> u32 {
    current().block_idx.0
}
pub fn block_idx_y() -> u32 {
    current().block_idx.1
}
pub fn block_idx_z() -> u32 {
    current().block_idx.2
}
pub fn block_dim_x() -> u32 {
    current().block_dim.0
}
pub fn block_dim_y() -> u32 {
    current().block_dim.1
}
pub fn block_dim_z() -> u32 {
    current().block_dim.2
}
pub fn grid_dim_x() -> u32 {
    current().grid_dim.0
}
pub fn grid_dim_y() -> u32 {
    current().grid_dim.1
}
pub fn grid_dim_z() -> u32 {
    current().grid_dim.2
}
/// Lane within the warp: warps are consecutive runs of 32 linear thread ids, as on the GPU.
pub fn lane_id() -> u32 {
    current().linear % 32
}
/// Warp index within the block (linear thread id / 32).
pub fn warp_id() -> u32 {
    current().linear / 32
}

// Barriers.
pub fn sync_threads() {
    suspend(Event::Barrier);
}
pub fn sync_warp(mask: u32) {
    warp(WarpOp::Sync, mask, 0, 0, 0);
}
pub fn trap() -> ! {
    fault(FaultKind::Trap, String::from("trap"))
}

// Shared memory.

/// The simulator's `static_shared!`: the block's array of that name, allocated in the block's
/// shared memory at first use (offset aligned by [`shared_align`](crate::gpu::shared_align), as
/// on the GPU) and the same for every thread of the block.
#[macro_export]
macro_rules! static_shared {
    ($name:ident : [$t:ty; $n:expr]) => {
        $crate::gpu::sim::prims::static_shared::<$t>(stringify!($name), $n)
    };
}

#[doc(hidden)]
pub fn static_shared<T: Copy>(name: &'static str, len: usize) -> SharedArray<T> {
    let b = unsafe { &*current().block };
    let bytes = len * core::mem::size_of::<T>();
    let mut statics = b.statics.borrow_mut();
    let off = match statics.iter().find(|(n, _)| *n == name) {
        Some(&(_, off)) => off,
        None => {
            let off = b
                .static_used
                .get()
                .next_multiple_of(crate::gpu::shared_align(bytes));
            if off + bytes + b.dynamic_bytes > b.limit || off + bytes > b.static_limit {
                fault(
                    FaultKind::InvalidLaunch,
                    format!(
                        "static shared array `{name}` ({bytes} bytes) brings the block to {} bytes of shared memory, over the limit of {}",
                        off + bytes + b.dynamic_bytes,
                        b.limit
                    ),
                );
            }
            b.static_used.set(off + bytes);
            statics.push((name, off));
            off
        }
    };
    let base = b.static_arena.as_ptr() as *mut u8;
    // SAFETY: off + bytes <= arena size (checked above).
    unsafe { SharedArray::from_raw(base.add(off) as *mut T, len) }
}

/// The block's dynamic shared memory as `T`s.
pub fn dynamic_shared<T: Copy>() -> SharedArray<T> {
    let b = unsafe { &*current().block };
    unsafe {
        SharedArray::from_raw(
            b.dynamic.as_ptr() as *mut T,
            b.dynamic_bytes / core::mem::size_of::<T>(),
        )
    }
}

// Warp collectives.

fn warp(op: WarpOp, mask: u32, value: u32, arg: u32, c: u32) -> u32 {
    if mask & (1 << lane_id()) == 0 {
        fault(
            FaultKind::Deadlock,
            format!(
                "lane {} calls a warp collective with mask {mask:#010x} that excludes it",
                lane_id()
            ),
        );
    }
    suspend(Event::Warp(WarpReq {
        op,
        mask,
        value,
        arg,
        c,
    }))
}

/// Compute lane `lane`'s result of a warp collective, with `shfl.sync`'s exact rule (PTX ISA):
/// `segmask = c[12:8]`, `minLane = lane & segmask`, `maxLane = minLane | (c[4:0] & !segmask)`;
/// down: `j = lane + b`, valid if `j <= maxLane`; up: `j = lane - b`, valid if `j >= maxLane`;
/// bfly: `j = lane ^ b`, valid if `j <= maxLane`; idx: `j = minLane | (b & !segmask)`, valid if
/// `j <= maxLane`; an invalid source gives the lane its own value. The hardware reads only bits
/// 4..0 of `b` (seen on an H200: `shfl.sync.down` by 33 moves by 1), so the simulator does too.
pub(crate) fn resolve_warp(
    reqs: &[Option<WarpReq>; 32],
    lane: u32,
    r: &WarpReq,
) -> Result<u32, String> {
    let bits = |f: fn(&WarpReq) -> bool| -> u32 {
        (0..32)
            .filter(|&l| reqs[l].as_ref().is_some_and(f))
            .fold(0, |m, l| m | (1 << l))
    };
    let shfl = |valid_src: &dyn Fn(i64, i64, i64) -> (i64, bool)| -> Result<u32, String> {
        let segmask = ((r.c >> 8) & 0x1f) as i64;
        let min_lane = lane as i64 & segmask;
        let max_lane = min_lane | ((r.c & 0x1f) as i64 & !segmask);
        let (j, ok) = valid_src(lane as i64, min_lane, max_lane);
        let src = if ok && (0..32).contains(&j) {
            j as usize
        } else {
            lane as usize
        };
        match &reqs[src] {
            Some(s) => Ok(s.value),
            None => Err(format!(
                "lane {lane} reads lane {src}, which is not in the shuffle's mask {:#010x}",
                r.mask
            )),
        }
    };
    let b = (r.arg & 0x1f) as i64;
    match r.op {
        WarpOp::ShflDown => shfl(&|l, _min, max| (l + b, l + b <= max)),
        WarpOp::ShflUp => shfl(&|l, _min, max| (l - b, l - b >= max)),
        WarpOp::ShflBfly => shfl(&|l, _min, max| (l ^ b, (l ^ b) <= max)),
        WarpOp::ShflIdx => {
            let segmask = ((r.c >> 8) & 0x1f) as i64;
            shfl(&|_l, min, max| {
                (
                    min | (b & 0x1f & !segmask),
                    (min | (b & 0x1f & !segmask)) <= max,
                )
            })
        }
        WarpOp::Ballot => Ok(bits(|q| q.value != 0)),
        WarpOp::All => Ok((bits(|q| q.value != 0) == r.mask) as u32),
        WarpOp::Any => Ok((bits(|q| q.value != 0) != 0) as u32),
        WarpOp::ReduxMin => Ok((0..32)
            .filter_map(|l| reqs[l].as_ref().map(|q| q.value))
            .min()
            .unwrap_or(r.value)),
        WarpOp::ReduxMax => Ok((0..32)
            .filter_map(|l| reqs[l].as_ref().map(|q| q.value))
            .max()
            .unwrap_or(r.value)),
        WarpOp::Sync => Ok(0),
    }
}

macro_rules! shfl_fn {
    ($name:ident, $op:expr, $up:expr) => {
        pub fn $name<T: ShflValue>(mask: u32, value: T, arg: u32, width: u32) -> T {
            let c = shfl_c(width, $up);
            let mut w = value.to_words();
            for k in 0..T::WORDS {
                w[k] = warp($op, mask, w[k], arg, c);
            }
            T::from_words(w)
        }
    };
}
shfl_fn!(shfl_down_sync, WarpOp::ShflDown, false);
shfl_fn!(shfl_up_sync, WarpOp::ShflUp, true);
shfl_fn!(shfl_xor_sync, WarpOp::ShflBfly, false);
shfl_fn!(shfl_sync, WarpOp::ShflIdx, false);

pub fn ballot_sync(mask: u32, pred: bool) -> u32 {
    warp(WarpOp::Ballot, mask, pred as u32, 0, 0)
}
pub fn all_sync(mask: u32, pred: bool) -> bool {
    warp(WarpOp::All, mask, pred as u32, 0, 0) != 0
}
pub fn any_sync(mask: u32, pred: bool) -> bool {
    warp(WarpOp::Any, mask, pred as u32, 0, 0) != 0
}
pub fn redux_min_u32(mask: u32, value: u32) -> u32 {
    warp(WarpOp::ReduxMin, mask, value, 0, 0)
}
pub fn redux_max_u32(mask: u32, value: u32) -> u32 {
    warp(WarpOp::ReduxMax, mask, value, 0, 0)
}

// Atomics: real host atomics on the same memory (blocks run on several OS threads).

fn aligned<T>(addr: *const T, what: &str) {
    if !(addr as usize).is_multiple_of(core::mem::align_of::<T>()) {
        fault(
            FaultKind::Misaligned,
            format!("misaligned address {addr:p} for {what}"),
        );
    }
}

fn aligned16<T>(addr: *const T, what: &str) {
    if !(addr as usize).is_multiple_of(16) {
        fault(
            FaultKind::Misaligned,
            format!("misaligned address {addr:p} for {what} (16 bytes)"),
        );
    }
}

macro_rules! atomic_int {
    ($name:ident, $t:ty, $atomic:ty, $method:ident) => {
        /// # Safety
        /// `addr` must be valid and aligned.
        pub unsafe fn $name(addr: *mut $t, val: $t) -> $t {
            aligned(addr, stringify!($name));
            unsafe { <$atomic>::from_ptr(addr) }.$method(val, Ordering::AcqRel)
        }
    };
}
atomic_int!(atomic_add_u32, u32, AtomicU32, fetch_add);
atomic_int!(atomic_add_u64, u64, AtomicU64, fetch_add);
atomic_int!(atomic_max_u32, u32, AtomicU32, fetch_max);
atomic_int!(atomic_or_u32, u32, AtomicU32, fetch_or);
atomic_int!(atomic_exch_u32, u32, AtomicU32, swap);
atomic_int!(atomic_exch_u64, u64, AtomicU64, swap);

/// # Safety
/// `addr` must be valid and aligned.
pub unsafe fn atomic_add_f32(addr: *mut f32, val: f32) -> f32 {
    aligned(addr, "atomic_add_f32");
    let a = unsafe { AtomicU32::from_ptr(addr as *mut u32) };
    let mut old = a.load(Ordering::Relaxed);
    loop {
        let new = (f32::from_bits(old) + val).to_bits();
        match a.compare_exchange_weak(old, new, Ordering::AcqRel, Ordering::Relaxed) {
            Ok(_) => return f32::from_bits(old),
            Err(cur) => old = cur,
        }
    }
}
/// # Safety
/// `addr` must be valid and aligned.
pub unsafe fn atomic_add_f64(addr: *mut f64, val: f64) -> f64 {
    aligned(addr, "atomic_add_f64");
    let a = unsafe { AtomicU64::from_ptr(addr as *mut u64) };
    let mut old = a.load(Ordering::Relaxed);
    loop {
        let new = (f64::from_bits(old) + val).to_bits();
        match a.compare_exchange_weak(old, new, Ordering::AcqRel, Ordering::Relaxed) {
            Ok(_) => return f64::from_bits(old),
            Err(cur) => old = cur,
        }
    }
}
/// # Safety
/// `addr` must be valid and aligned.
pub unsafe fn atomic_cas_u32(addr: *mut u32, compare: u32, val: u32) -> u32 {
    aligned(addr, "atomic_cas_u32");
    match unsafe { AtomicU32::from_ptr(addr) }.compare_exchange(
        compare,
        val,
        Ordering::AcqRel,
        Ordering::Acquire,
    ) {
        Ok(v) | Err(v) => v,
    }
}
/// # Safety
/// `addr` must be valid and aligned.
pub unsafe fn atomic_cas_u64(addr: *mut u64, compare: u64, val: u64) -> u64 {
    aligned(addr, "atomic_cas_u64");
    match unsafe { AtomicU64::from_ptr(addr) }.compare_exchange(
        compare,
        val,
        Ordering::AcqRel,
        Ordering::Acquire,
    ) {
        Ok(v) | Err(v) => v,
    }
}

// Fences and ordered accesses.
pub fn thread_fence() {
    fence(Ordering::SeqCst)
}
pub fn fence_acq_rel_gpu() {
    fence(Ordering::AcqRel)
}
pub fn thread_fence_block() {
    fence(Ordering::SeqCst)
}

/// # Safety
/// `addr` must be valid and aligned.
pub unsafe fn load_acquire_u32(addr: *const u32) -> u32 {
    aligned(addr, "load_acquire_u32");
    unsafe { AtomicU32::from_ptr(addr as *mut u32) }.load(Ordering::Acquire)
}
/// # Safety
/// `addr` must be valid and aligned.
pub unsafe fn load_acquire_u64(addr: *const u64) -> u64 {
    aligned(addr, "load_acquire_u64");
    unsafe { AtomicU64::from_ptr(addr as *mut u64) }.load(Ordering::Acquire)
}
/// # Safety
/// `addr` must be valid and aligned.
pub unsafe fn load_relaxed_u64(addr: *const u64) -> u64 {
    aligned(addr, "load_relaxed_u64");
    unsafe { AtomicU64::from_ptr(addr as *mut u64) }.load(Ordering::Relaxed)
}
/// Two words, each read whole (what the GPU guarantees of a 16-byte load, and no more).
/// # Safety
/// `addr` must be valid and 16-byte aligned.
pub unsafe fn load_relaxed_v2_u64(addr: *const u64) -> [u64; 2] {
    aligned16(addr, "load_relaxed_v2_u64");
    unsafe {
        [
            AtomicU64::from_ptr(addr as *mut u64).load(Ordering::Relaxed),
            AtomicU64::from_ptr(addr.add(1) as *mut u64).load(Ordering::Relaxed),
        ]
    }
}
/// Two words, each written whole, the first first.
/// # Safety
/// `addr` must be valid and 16-byte aligned.
pub unsafe fn store_relaxed_v2_u64(addr: *mut u64, v: [u64; 2]) {
    aligned16(addr, "store_relaxed_v2_u64");
    unsafe {
        AtomicU64::from_ptr(addr).store(v[0], Ordering::Relaxed);
        AtomicU64::from_ptr(addr.add(1)).store(v[1], Ordering::Relaxed);
    }
}
/// # Safety
/// `addr` must be valid and aligned.
pub unsafe fn store_release_u32(addr: *mut u32, v: u32) {
    aligned(addr, "store_release_u32");
    unsafe { AtomicU32::from_ptr(addr) }.store(v, Ordering::Release)
}
/// # Safety
/// `addr` must be valid and aligned.
pub unsafe fn store_release_sys_u32(addr: *mut u32, v: u32) {
    aligned(addr, "store_release_sys_u32");
    unsafe { AtomicU32::from_ptr(addr) }.store(v, Ordering::Release)
}
/// # Safety
/// `addr` must be valid and aligned.
pub unsafe fn store_release_u64(addr: *mut u64, v: u64) {
    aligned(addr, "store_release_u64");
    unsafe { AtomicU64::from_ptr(addr) }.store(v, Ordering::Release)
}
/// # Safety
/// `addr` must be valid and aligned.
pub unsafe fn load_volatile_u32(addr: *const u32) -> u32 {
    aligned(addr, "load_volatile_u32");
    unsafe { AtomicU32::from_ptr(addr as *mut u32) }.load(Ordering::Relaxed)
}

// Vector loads.

/// # Safety
/// `addr` must point to 16 readable bytes; misalignment is a fault, as on the GPU.
pub unsafe fn load_nc_v4_b32(addr: *const u32) -> [u32; 4] {
    if !(addr as usize).is_multiple_of(16) {
        fault(
            FaultKind::Misaligned,
            format!("misaligned 128-bit load at {addr:p}"),
        );
    }
    unsafe { (addr as *const [u32; 4]).read() }
}
/// # Safety
/// As [`load_nc_v4_b32`].
pub unsafe fn load_nc_v4_f32(addr: *const f32) -> [f32; 4] {
    let w = unsafe { load_nc_v4_b32(addr as *const u32) };
    w.map(f32::from_bits)
}
/// # Safety
/// As on the GPU: 16 readable bytes, 16-byte aligned (a misaligned address faults).
pub unsafe fn load_v4_b32(addr: *const u32) -> [u32; 4] {
    if !(addr as usize).is_multiple_of(16) {
        fault(
            FaultKind::Misaligned,
            format!("misaligned 128-bit load at {addr:p}"),
        );
    }
    unsafe { (addr as *const [u32; 4]).read_volatile() }
}
/// # Safety
/// As on the GPU: 16 writable bytes, 16-byte aligned (a misaligned address faults).
pub unsafe fn store_v4_b32(addr: *mut u32, w: [u32; 4]) {
    if !(addr as usize).is_multiple_of(16) {
        fault(
            FaultKind::Misaligned,
            format!("misaligned 128-bit store at {addr:p}"),
        );
    }
    unsafe { (addr as *mut [u32; 4]).write_volatile(w) }
}
/// # Safety
/// As on the GPU: 8 readable bytes, 8-byte aligned (a misaligned address faults).
pub unsafe fn load_v2_b32(addr: *const u32) -> [u32; 2] {
    if !(addr as usize).is_multiple_of(8) {
        fault(
            FaultKind::Misaligned,
            format!("misaligned 64-bit load at {addr:p}"),
        );
    }
    unsafe { (addr as *const [u32; 2]).read_volatile() }
}
/// # Safety
/// As on the GPU: 8 writable bytes, 8-byte aligned (a misaligned address faults).
pub unsafe fn store_v2_b32(addr: *mut u32, w: [u32; 2]) {
    if !(addr as usize).is_multiple_of(8) {
        fault(
            FaultKind::Misaligned,
            format!("misaligned 64-bit store at {addr:p}"),
        );
    }
    unsafe { (addr as *mut [u32; 2]).write_volatile(w) }
}
// Conversions: the exact integer ones of `crate::gpu::convert` (IEEE's results).

pub fn cvt_f32_f16(h: u16) -> f32 {
    crate::gpu::convert::f16_bits_to_f32(h)
}
pub fn cvt_rn_f16_f32(x: f32) -> u16 {
    crate::gpu::convert::f32_to_f16_bits(x)
}

/// The simulator's back-off: let the OS run the threads being waited for.
pub fn nanosleep(_ns: u32) {
    std::thread::yield_now();
}
/// A hint with no effect on the simulator (no cache to fill).
/// # Safety
/// As on the GPU: `addr` points into an allocation.
pub unsafe fn prefetch_l2<T>(_addr: *const T) {}
/// # Safety
/// `addr` must point to an aligned readable f32.
pub unsafe fn load_nc_f32(addr: *const f32) -> f32 {
    aligned(addr, "load_nc_f32");
    unsafe { addr.read() }
}

/// `x`, or CUDA's canonical NaN (`0x7fffffff`) when `x` is a NaN (`max.NaN.f32` on the GPU).
pub fn canonical_nan_f32(x: f32) -> f32 {
    if x.is_nan() {
        f32::from_bits(0x7fff_ffff)
    } else {
        x
    }
}

/// Elements `i..` of a shared array (a 32-bit shared address on the GPU).
#[derive(Clone, Copy)]
pub struct SharedSlots<T> {
    arr: SharedArray<T>,
    first: usize,
}

/// Elements `i..` of `a`.
/// # Safety
/// `i <= a.len()`.
pub unsafe fn shared_slots<T>(a: SharedArray<T>, i: usize) -> SharedSlots<T> {
    SharedSlots { arr: a, first: i }
}

/// Store `v` at slot `k` of `s` (`st.shared` on the GPU); bounds-checked.
/// # Safety
/// Slot `k` lies inside the array, and no other thread accesses it between the same two
/// barriers.
pub unsafe fn store_slot<T: Copy>(s: SharedSlots<T>, k: u32, v: T) {
    unsafe { s.arr.write(s.first + k as usize, v) }
}

/// Load slot `k` of `s` (`ld.shared` on the GPU); bounds-checked.
/// # Safety
/// Slot `k` lies inside the array, and no other thread writes it between the same two barriers.
pub unsafe fn load_slot<T: Copy>(s: SharedSlots<T>, k: u32) -> T {
    unsafe { s.arr.read(s.first + k as usize) }
}

/// Add `v` to slot `k` of `s` atomically among the block's threads (`red.shared.add.u32` on
/// the GPU); bounds-checked.
/// # Safety
/// Slot `k` lies inside the array.
pub unsafe fn red_add_slot(s: SharedSlots<u32>, k: u32, v: u32) {
    unsafe { s.arr.add(s.first + k as usize, v) }
}

// Asynchronous copies: the source is read at issue, the shared destination written when the
// copy's group retires (`cp_async_wait_group`).

/// # Safety
/// As on the GPU: `i < dst.len()`; `src` 16 readable bytes, 16-byte aligned (else a fault).
pub unsafe fn cp_async_16(dst: SharedArray<[u32; 4]>, i: usize, src: *const u32) {
    super::check_shared_index(i, dst.len);
    if !(src as usize).is_multiple_of(16) {
        fault(
            FaultKind::Misaligned,
            format!("misaligned 16-byte cp.async source at {src:p}"),
        );
    }
    let data = unsafe { (src as *const [u32; 4]).read_volatile() };
    let d = unsafe { dst.ptr.add(i) };
    current().cp_async.borrow_mut().open.push((d, data));
}
pub fn cp_async_commit() {
    let mut c = current().cp_async.borrow_mut();
    let group = core::mem::take(&mut c.open);
    c.groups.push_back(group);
}
pub fn cp_async_wait_group<const N: u32>() {
    let mut c = current().cp_async.borrow_mut();
    while c.groups.len() > N as usize {
        for (d, data) in c.groups.pop_front().unwrap_or_default() {
            // SAFETY: `d` was bounds-checked at issue and the block's shared memory lives for
            // the whole launch.
            unsafe { d.write(data) };
        }
    }
}
/// # Safety
/// `i < src.len()`.
pub unsafe fn load_shared_v4(src: SharedArray<[u32; 4]>, i: usize) -> [u32; 4] {
    unsafe { src.read(i) }
}

/// Store `v` at element `i` of a 16-byte shared array (`st.shared.v4.b32` on the GPU).
/// # Safety
/// `i < dst.len()`.
pub unsafe fn store_shared_v4(dst: SharedArray<[u32; 4]>, i: usize, v: [u32; 4]) {
    unsafe { dst.write(i, v) }
}
