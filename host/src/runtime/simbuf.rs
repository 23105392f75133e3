//! Device memory of the simulator backend: host allocations aligned like `cudaMalloc`'s (256
//! bytes), so the kernels' alignment logic takes the same paths as on the GPU.

use std::alloc::{Layout, alloc, alloc_zeroed, dealloc};
use std::ptr::NonNull;

use crate::error::{Error, Result};

const ALIGN: usize = 256;

pub(crate) struct SimBuf<T> {
    ptr: NonNull<T>,
    len: usize,
}

// SAFETY: a SimBuf owns its allocation like a Vec<T>; kernels reach it through raw pointers
// only during a launch, which the context serialises.
unsafe impl<T: Send> Send for SimBuf<T> {}
unsafe impl<T: Sync> Sync for SimBuf<T> {}

impl<T> SimBuf<T> {
    fn layout(len: usize) -> Result<Layout> {
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .ok_or(Error::OutOfMemory { bytes: usize::MAX })?;
        Layout::from_size_align(bytes.max(1), ALIGN.max(std::mem::align_of::<T>()))
            .map_err(|_| Error::OutOfMemory { bytes })
    }

    /// `len` elements, zeroed when `zeroed`, else uninitialised bytes.
    fn new(len: usize, zeroed: bool) -> Result<Self> {
        let layout = Self::layout(len)?;
        // SAFETY: non-zero size.
        let p = unsafe {
            if zeroed {
                alloc_zeroed(layout)
            } else {
                alloc(layout)
            }
        };
        let ptr = NonNull::new(p as *mut T).ok_or(Error::OutOfMemory {
            bytes: layout.size(),
        })?;
        Ok(Self { ptr, len })
    }

    pub fn zeroed(len: usize) -> Result<Self> {
        Self::new(len, true)
    }

    pub fn from_slice(data: &[T]) -> Result<Self>
    where
        T: Copy,
    {
        let b = Self::new(data.len(), false)?;
        // SAFETY: fresh allocation of data.len() elements.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), b.ptr.as_ptr(), data.len()) };
        Ok(b)
    }

    pub fn ptr(&self) -> *mut T {
        self.ptr.as_ptr()
    }

    pub fn len(&self) -> usize {
        self.len
    }
}

impl<T> Drop for SimBuf<T> {
    fn drop(&mut self) {
        if let Ok(layout) = Self::layout(self.len) {
            // SAFETY: allocated with this layout.
            unsafe { dealloc(self.ptr.as_ptr() as *mut u8, layout) };
        }
    }
}

impl<T> std::fmt::Debug for SimBuf<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SimBuf({:p}, len {})", self.ptr, self.len)
    }
}
