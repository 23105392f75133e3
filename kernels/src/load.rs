//! How a kernel reads an array: the one cut of its elements into a scalar head (up to the
//! first 16-byte boundary), a body of aligned 16-byte vectors, and a scalar tail.
//!
//! The cut depends only on the array's address modulo 16 and its length. It decides which
//! elements share a vector, hence the association order and the bits of a float result, so
//! every kernel that reads an array cuts it here.

use crate::gpu;
use crate::ops::Element;

/// `n` elements at `base`, cut into head, vectors and tail.
#[derive(Clone, Copy)]
pub struct Cut<T> {
    base: *const T,
    body: *const u32,
    /// Scalar elements before the first 16-byte boundary.
    pub head: u64,
    /// Whole 16-byte vectors after the head.
    pub vectors: u64,
    /// Elements.
    pub n: u64,
}

impl<T: Element> Cut<T> {
    /// Elements of `n` at `x` before the first 16-byte boundary.
    #[inline(always)]
    pub fn head_of(x: *const T, n: u64) -> u64 {
        let misalign = (x as u64 & 15) / core::mem::size_of::<T>() as u64;
        if misalign == 0 {
            0
        } else {
            (T::PER_VEC as u64 - misalign).min(n)
        }
    }

    /// The cut of `n` elements at `x`.
    #[inline(always)]
    pub fn new(x: *const T, n: u64) -> Self {
        Self::with_head(x, n, Self::head_of(x, n))
    }

    /// Two arrays read pair by pair: their common cut, or every pair in the head when they
    /// share no 16-byte boundary.
    #[inline(always)]
    pub fn pair(x: *const T, y: *const T, n: u64) -> (Self, Self) {
        let head = if (x as u64 & 15) != (y as u64 & 15) {
            n
        } else {
            Self::head_of(x, n)
        };
        (Self::with_head(x, n, head), Self::with_head(y, n, head))
    }

    #[inline(always)]
    fn with_head(x: *const T, n: u64, head: u64) -> Self {
        Self {
            base: x,
            // SAFETY (of the arithmetic): `head <= n`, inside or one past the array.
            body: x.wrapping_add(head as usize) as *const u32,
            head,
            vectors: (n - head) / T::PER_VEC as u64,
            n,
        }
    }

    /// The index of the tail's first element.
    #[inline(always)]
    pub fn tail_start(&self) -> u64 {
        self.head + self.vectors * T::PER_VEC as u64
    }

    /// The index of vector `v`'s first element.
    #[inline(always)]
    pub fn first(&self, v: u64) -> u64 {
        self.head + v * T::PER_VEC as u64
    }

    /// Vector `v` of the body (a 16-byte read-only load).
    ///
    /// # Safety
    /// `v < vectors`; the array is not written during the kernel.
    #[inline(always)]
    pub unsafe fn vector(&self, v: u64) -> [u32; 4] {
        unsafe { gpu::load_nc_v4_b32(self.body.add(4 * v as usize)) }
    }

    /// Element `i`.
    ///
    /// # Safety
    /// `i < n`.
    #[inline(always)]
    pub unsafe fn get(&self, i: u64) -> T {
        unsafe { self.base.add(i as usize).read() }
    }
}
