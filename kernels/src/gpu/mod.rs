//! The hardware layer: every primitive a kernel may use, and the only place that touches
//! `core::arch::nvptx`, `asm!` or `llvm.nvvm.*` intrinsics. Names follow Rust-CUDA's
//! `cuda_std` where it has one (`thread_idx_x`, `sync_threads`, ...) so a later port stays easy.
//!
//! Each function's doc says the PTX it becomes.

/// Full-warp participation mask for the `*.sync` warp instructions.
pub const FULL_MASK: u32 = 0xffff_ffff;
/// Threads per warp on every NVIDIA GPU this library targets.
pub const WARP_SIZE: u32 = 32;

/// Alignment of a static shared array of `bytes` bytes: a whole shared-memory row (32 banks ×
/// 4 bytes) from 128 bytes on, so that a tile's 128-byte groups (the swizzles, the quarter-warp
/// phases of 16-byte accesses and of `cp.async`) each fill one row; 16 below. Off a row, an
/// H100 splits each `cp.async` of a warp into more shared wavefronts and L2 requests
/// (CHANGELOG.md, issue 32: the reduce by key's lost speed).
pub const fn shared_align(bytes: usize) -> usize {
    if bytes >= 128 { 128 } else { 16 }
}

pub mod convert;

#[cfg(target_arch = "nvptx64")]
mod nvptx;
#[cfg(target_arch = "nvptx64")]
pub use nvptx::*;

/// On the host the same API runs on the CPU SIMT simulator.
#[cfg(not(target_arch = "nvptx64"))]
pub mod sim;
#[cfg(not(target_arch = "nvptx64"))]
pub use sim::prims::*;

/// A block's view of a shared-memory array (from [`static_shared!`](crate::static_shared) or
/// `dynamic_shared`). On the GPU `read`/`write` are plain `ld.shared`/`st.shared` through a
/// generic pointer; on the simulator every access is bounds-checked and an out-of-bounds index
/// ends the launch with an error naming the kernel, block and thread.
#[derive(Clone, Copy)]
pub struct SharedArray<T> {
    ptr: *mut T,
    len: usize,
}

impl<T: Copy> SharedArray<T> {
    /// The same bytes as an array of `U` (for scratch shared by several element types).
    /// # Safety
    /// The array must be aligned for `U` (static arrays are 16-byte aligned).
    #[inline(always)]
    pub unsafe fn cast<U: Copy>(self) -> SharedArray<U> {
        SharedArray {
            ptr: self.ptr as *mut U,
            len: self.len * core::mem::size_of::<T>() / core::mem::size_of::<U>(),
        }
    }

    /// # Safety
    /// `ptr` must point to `len` elements of the block's shared memory.
    #[inline(always)]
    pub unsafe fn from_raw(ptr: *mut T, len: usize) -> Self {
        Self { ptr, len }
    }

    /// `len` elements of `U` from byte `offset` on (one dynamic allocation cut in parts).
    /// # Safety
    /// The part lies inside this array and is aligned for `U`.
    #[inline(always)]
    pub unsafe fn part<U: Copy>(self, offset: usize, len: usize) -> SharedArray<U> {
        #[cfg(not(target_arch = "nvptx64"))]
        if len > 0 {
            sim::check_shared_index(
                offset + len * core::mem::size_of::<U>() - 1,
                self.len * core::mem::size_of::<T>(),
            );
        }
        SharedArray {
            ptr: unsafe { (self.ptr as *mut u8).add(offset) } as *mut U,
            len,
        }
    }

    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Element `i`.
    /// # Safety
    /// `i < len()`, and no other thread writes element `i` between the same two barriers.
    #[inline(always)]
    pub unsafe fn read(&self, i: usize) -> T {
        #[cfg(not(target_arch = "nvptx64"))]
        sim::check_shared_index(i, self.len);
        unsafe { self.ptr.add(i).read() }
    }

    /// Store `v` at element `i`.
    /// # Safety
    /// `i < len()`, and no other thread accesses element `i` between the same two barriers.
    #[inline(always)]
    pub unsafe fn write(&self, i: usize, v: T) {
        #[cfg(not(target_arch = "nvptx64"))]
        sim::check_shared_index(i, self.len);
        unsafe { self.ptr.add(i).write(v) }
    }
}

impl SharedArray<u32> {
    /// Add `v` to element `i`, atomically among the block's threads (`red.shared.add.u32`).
    /// # Safety
    /// `i < len()`.
    #[inline(always)]
    pub unsafe fn add(&self, i: usize, v: u32) {
        #[cfg(not(target_arch = "nvptx64"))]
        {
            sim::check_shared_index(i, self.len);
            // SAFETY: in bounds (checked), aligned (a u32 array); threads may run on OS threads.
            unsafe { core::sync::atomic::AtomicU32::from_ptr(self.ptr.add(i)) }
                .fetch_add(v, core::sync::atomic::Ordering::Relaxed);
        }
        #[cfg(target_arch = "nvptx64")]
        unsafe {
            nvptx::shared_red_add_u32(self.ptr.add(i), v)
        }
    }

    /// Add `v` to element `i` atomically among the block's threads and return the value before
    /// (`atom.shared.add.u32`): a slot of a block's list.
    /// # Safety
    /// `i < len()`.
    #[inline(always)]
    pub unsafe fn fetch_add(&self, i: usize, v: u32) -> u32 {
        #[cfg(not(target_arch = "nvptx64"))]
        {
            sim::check_shared_index(i, self.len);
            // SAFETY: in bounds (checked), aligned (a u32 array); threads may run on OS threads.
            unsafe { core::sync::atomic::AtomicU32::from_ptr(self.ptr.add(i)) }
                .fetch_add(v, core::sync::atomic::Ordering::Relaxed)
        }
        #[cfg(target_arch = "nvptx64")]
        unsafe {
            nvptx::shared_atom_add_u32(self.ptr.add(i), v)
        }
    }

    /// Raise element `i` to `v` if below, atomically among the block's threads
    /// (`red.shared.max.u32`).
    /// # Safety
    /// `i < len()`.
    #[inline(always)]
    pub unsafe fn max(&self, i: usize, v: u32) {
        #[cfg(not(target_arch = "nvptx64"))]
        {
            sim::check_shared_index(i, self.len);
            // SAFETY: in bounds (checked), aligned (a u32 array); threads may run on OS threads.
            unsafe { core::sync::atomic::AtomicU32::from_ptr(self.ptr.add(i)) }
                .fetch_max(v, core::sync::atomic::Ordering::Relaxed);
        }
        #[cfg(target_arch = "nvptx64")]
        unsafe {
            nvptx::shared_red_max_u32(self.ptr.add(i), v)
        }
    }

    /// Set the bits of `v` in element `i`, atomically among the block's threads
    /// (`red.shared.or.b32`).
    /// # Safety
    /// `i < len()`.
    #[inline(always)]
    pub unsafe fn or(&self, i: usize, v: u32) {
        #[cfg(not(target_arch = "nvptx64"))]
        {
            sim::check_shared_index(i, self.len);
            // SAFETY: in bounds (checked), aligned (a u32 array); threads may run on OS threads.
            unsafe { core::sync::atomic::AtomicU32::from_ptr(self.ptr.add(i)) }
                .fetch_or(v, core::sync::atomic::Ordering::Relaxed);
        }
        #[cfg(target_arch = "nvptx64")]
        unsafe {
            nvptx::shared_red_or_u32(self.ptr.add(i), v)
        }
    }
}

impl SharedArray<u64> {
    /// Add `v` to element `i`, atomically among the block's threads (`red.shared.add.u64`).
    /// # Safety
    /// `i < len()`.
    #[inline(always)]
    pub unsafe fn add(&self, i: usize, v: u64) {
        #[cfg(not(target_arch = "nvptx64"))]
        {
            sim::check_shared_index(i, self.len);
            // SAFETY: in bounds (checked), aligned (a u64 array); threads may run on OS threads.
            unsafe { core::sync::atomic::AtomicU64::from_ptr(self.ptr.add(i)) }
                .fetch_add(v, core::sync::atomic::Ordering::Relaxed);
        }
        #[cfg(target_arch = "nvptx64")]
        unsafe {
            nvptx::shared_red_add_u64(self.ptr.add(i), v)
        }
    }
}

/// Define a kernel once; it is exported twice: as a PTX entry point (`extern "ptx-kernel"`,
/// unmangled) on nvptx64, and as a plain `unsafe fn` on the host that the simulator launches.
#[macro_export]
macro_rules! kernel {
    ($(#[$m:meta])* pub unsafe fn $name:ident($($arg:ident : $ty:ty),* $(,)?) $body:block) => {
        $(#[$m])*
        #[cfg(target_arch = "nvptx64")]
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name($($arg: $ty),*) $body

        $(#[$m])*
        #[cfg(not(target_arch = "nvptx64"))]
        // A kernel's parameters are its launch ABI, as many as the algorithm needs.
        #[allow(clippy::missing_safety_doc, clippy::too_many_arguments)]
        pub unsafe fn $name($($arg: $ty),*) $body
    };
}

/// A kernel's parameters as the host passes them: each field's address and size, in order
/// (the PTX entry takes them as separate parameters).
pub trait KernelArgs {
    /// Calls `f` with each field's address and size, in declaration order.
    fn each_arg(&self, f: &mut dyn FnMut(*const u8, usize));
}

/// A family's kernel parameters, declared once, in a list of `field: Type,` (with docs):
/// - `kernel_params!(struct #[doc...] Name<G, ..> { fields })` defines the `#[repr(C)]` struct
///   that the host builds and the simulator passes, and its [`KernelArgs`];
/// - `kernel_params!(entry #[export_name = NAME] k => (device::<..>) Name<G, ..> { fields })`
///   writes kernel `k`: on nvptx64 a PTX entry taking the fields as separate parameters (so
///   LLVM knows its pointers are global, which it cannot for pointers read from a by-value
///   struct) that hands `device` the struct; on the host a function of the struct, for the
///   simulator. `Name` and the type parameters `G` must name types where it expands.
///
/// Each family writes its list once in a macro of its own (`reduce_params!`, ...) that calls
/// this with `struct` in its module and with `entry` in each instance.
#[macro_export]
#[doc(hidden)]
macro_rules! kernel_params {
    (struct $(#[$m:meta])* $name:ident<$($g:ident),*> {
        $($(#[$fm:meta])* $f:ident : $ty:ty,)*
    }) => {
        $(#[$m])*
        #[repr(C)]
        pub struct $name<$($g),*> { $($(#[$fm])* pub $f: $ty,)* }
        $crate::params_copy!($name<$($g),*>);
        impl<$($g),*> $crate::gpu::KernelArgs for $name<$($g),*> {
            fn each_arg(&self, f: &mut dyn FnMut(*const u8, usize)) {
                $( f(&raw const self.$f as *const u8, ::core::mem::size_of::<$ty>()); )*
            }
        }
    };
    (entry #[export_name = $export:expr] $k:ident => ($($device:tt)*) $name:ident<$($g:ident),*> {
        $($(#[$fm:meta])* $f:ident : $ty:ty,)*
    }) => {
        #[cfg(target_arch = "nvptx64")]
        #[unsafe(export_name = $export)]
        pub unsafe extern "ptx-kernel" fn $k($($f: $ty),*) {
            unsafe { $($device)*($name { $($f),* }) }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        pub unsafe fn $k(p: $name<$($g),*>) {
            unsafe { $($device)*(p) }
        }
    };
}

/// `Clone` and `Copy` for a kernel's parameter struct of pointers and integers, whatever its
/// type parameters (`derive` would ask them to be `Copy`).
#[macro_export]
#[doc(hidden)]
macro_rules! params_copy {
    ($name:ident<$($p:ident),*>) => {
        impl<$($p),*> Clone for $name<$($p),*> {
            #[inline(always)]
            fn clone(&self) -> Self {
                *self
            }
        }
        impl<$($p),*> Copy for $name<$($p),*> {}
    };
}

/// CUDA C++'s `__launch_bounds__(THREADS, MIN_BLOCKS)` for the kernel `NAME`:
/// `launch_bounds!(NAME, THREADS, MIN_BLOCKS);` leaves a marker comment in the PTX, which the
/// PTX builder (`ptx-builder`) turns into the entry's `.maxntid THREADS, 1, 1` and
/// `.minnctapersm MIN_BLOCKS`, so that ptxas caps its registers for MIN_BLOCKS blocks per SM
/// (rustc has no attribute for these directives). Nothing on the simulator.
#[macro_export]
macro_rules! launch_bounds {
    ($name:ident, $threads:expr, $min_blocks:expr) => {
        $crate::launch_bounds!(@named stringify!($name), $threads, $min_blocks);
    };
    // The kernel's exported name as a string expression (`concat!`, as the table makes them).
    (@named $name:expr, $threads:expr, $min_blocks:expr) => {
        #[cfg(target_arch = "nvptx64")]
        ::core::arch::global_asm!(
            concat!("// ptx-builder launch-bounds ", $name, " {t} {b}"),
            t = const $threads,
            b = const $min_blocks,
        );
    };
}

/// A value that a warp shuffle can move: 32-bit values take one `shfl.sync`, 64-bit values are
/// split into two 32-bit halves and take two (seed 002's `int2` trick), so every bit survives
/// (NaN payloads, negative zero); composite values (a value and its index, a compensated sum)
/// take up to four.
pub trait ShflValue: Copy {
    /// Number of 32-bit words (1 to 4).
    const WORDS: usize;
    /// The value as 32-bit words, low word first; words past `WORDS` are ignored.
    fn to_words(self) -> [u32; 4];
    /// Rebuild the value from words produced by [`ShflValue::to_words`].
    fn from_words(w: [u32; 4]) -> Self;
    /// The value as a kernel writes it out: a float NaN becomes its type's one quiet NaN
    /// (f32: CUDA's canonical NaN `0x7fffffff`; f64: `f64::NAN`'s bits; f16 `0x7e00`, bf16
    /// `0x7fc0`), anything else is unchanged. Which NaN an addition returns depends
    /// on the hardware and on its operand order, which compilers may swap; whether the result
    /// is a NaN does not, so with a fixed combining order this makes every output the same bits
    /// on every GPU, the simulator and any CPU.
    #[inline(always)]
    fn canonical(self) -> Self {
        self
    }
    /// [`ShflValue::canonical`] of four outputs of one store (f64 tests the four at once and
    /// takes the per-element path only when one is NaN).
    #[inline(always)]
    fn canonical4(v: [Self; 4]) -> [Self; 4] {
        v.map(Self::canonical)
    }
}

macro_rules! shfl32 {
    ($($t:ty),*) => {$( shfl32!(@one $t, |x| x, |_| false); )*};
    (@one $t:ty, $canonical:expr, $any_nan:expr) => {
        impl ShflValue for $t {
            const WORDS: usize = 1;
            #[inline(always)]
            fn to_words(self) -> [u32; 4] { [self.to_bits_u32(), 0, 0, 0] }
            #[inline(always)]
            fn from_words(w: [u32; 4]) -> Self { <$t>::from_bits_u32(w[0]) }
            #[inline(always)]
            fn canonical(self) -> Self { ($canonical)(self) }
            #[inline(always)]
            fn canonical4(v: [Self; 4]) -> [Self; 4] {
                if ($any_nan)(v) { v.map(|x| ($canonical)(x)) } else { v }
            }
        }
    };
}
macro_rules! shfl64 {
    ($($t:ty),*) => {$( shfl64!(@one $t, |x| x, |_| false); )*};
    (@one $t:ty, $canonical:expr, $any_nan:expr) => {
        impl ShflValue for $t {
            const WORDS: usize = 2;
            #[inline(always)]
            fn to_words(self) -> [u32; 4] {
                let b = self.to_bits_u64();
                [b as u32, (b >> 32) as u32, 0, 0]
            }
            #[inline(always)]
            fn from_words(w: [u32; 4]) -> Self {
                <$t>::from_bits_u64((w[0] as u64) | ((w[1] as u64) << 32))
            }
            #[inline(always)]
            fn canonical(self) -> Self { ($canonical)(self) }
            #[inline(always)]
            fn canonical4(v: [Self; 4]) -> [Self; 4] {
                if ($any_nan)(v) { v.map(|x| ($canonical)(x)) } else { v }
            }
        }
    };
}

/// Bit casts used by [`ShflValue`]; kept private so the trait stays small.
trait Bits32 {
    fn to_bits_u32(self) -> u32;
    fn from_bits_u32(b: u32) -> Self;
}
trait Bits64 {
    fn to_bits_u64(self) -> u64;
    fn from_bits_u64(b: u64) -> Self;
}
impl Bits32 for u32 {
    fn to_bits_u32(self) -> u32 {
        self
    }
    fn from_bits_u32(b: u32) -> Self {
        b
    }
}
impl Bits32 for i32 {
    fn to_bits_u32(self) -> u32 {
        self as u32
    }
    fn from_bits_u32(b: u32) -> Self {
        b as i32
    }
}
impl Bits32 for f32 {
    fn to_bits_u32(self) -> u32 {
        self.to_bits()
    }
    fn from_bits_u32(b: u32) -> Self {
        f32::from_bits(b)
    }
}
impl Bits64 for u64 {
    fn to_bits_u64(self) -> u64 {
        self
    }
    fn from_bits_u64(b: u64) -> Self {
        b
    }
}
impl Bits64 for i64 {
    fn to_bits_u64(self) -> u64 {
        self as u64
    }
    fn from_bits_u64(b: u64) -> Self {
        b as i64
    }
}
impl Bits64 for f64 {
    fn to_bits_u64(self) -> u64 {
        self.to_bits()
    }
    fn from_bits_u64(b: u64) -> Self {
        f64::from_bits(b)
    }
}
shfl32!(u32, i32);
shfl64!(u64, i64);
// f32: one `max.NaN` an element (CUDA's canonical NaN, 0x7fffffff), no test and no branch: a
// test of four with its rare path made the f32 scan by key 1.5% slower (ptxas predicates that
// path into every store), the path out of line (a call) the f32 scans 2x slower.
shfl32!(@one f32, canonical_nan_f32, |_: [f32; 4]| true);
// f64 (no `max.NaN.f64`): pairs, `a.is_nan() | b.is_nan()` being one unordered compare.
shfl64!(@one f64, |x: f64| if x.is_nan() { f64::NAN } else { x },
    |v: [f64; 4]| (v[0].is_nan() | v[1].is_nan()) | (v[2].is_nan() | v[3].is_nan()));

/// The `c` operand of `shfl.sync` for CUDA's `width` argument: bits 12..8 hold the segment
/// mask (`32 - width`), bits 4..0 the clamp lane. `up` clamps at lane 0 of the segment, the
/// others at its last lane. `width` must be a power of two in 1..=32.
#[inline(always)]
pub const fn shfl_c(width: u32, up: bool) -> u32 {
    let seg = (WARP_SIZE - width) << 8;
    if up { seg } else { seg | 0x1f }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_arrays_of_a_row_or_more_start_on_a_row() {
        assert_eq!(shared_align(4), 16);
        assert_eq!(shared_align(127), 16);
        assert_eq!(shared_align(128), 128);
        assert_eq!(shared_align(32768), 128);
    }

    #[test]
    fn words_round_trip_every_bit() {
        for b in [
            0u64,
            1,
            0x8000_0000_0000_0000,
            0x7ff8_0000_dead_beef,
            u64::MAX,
        ] {
            assert_eq!(f64::from_words(f64::from_bits(b).to_words()).to_bits(), b);
            assert_eq!(i64::from_words((b as i64).to_words()) as u64, b);
        }
        assert_eq!(
            f32::from_words((-0.0f32).to_words()).to_bits(),
            (-0.0f32).to_bits()
        );
    }

    #[test]
    fn c_operand_matches_cuda() {
        // CUDA: __shfl_down_sync(m, v, d, 8) passes c = ((32 - 8) << 8) | 0x1f = 0x181f.
        assert_eq!(shfl_c(8, false), 0x181f);
        assert_eq!(shfl_c(32, false), 0x1f);
        assert_eq!(shfl_c(32, true), 0);
        assert_eq!(shfl_c(16, true), 0x1000);
    }
}
