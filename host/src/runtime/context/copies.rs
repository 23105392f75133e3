//! Copies between host and device, allocation and fills: the typed public calls and the raw
//! ones the algorithms clear and fill their scratch with.

use cudarc::driver::{DeviceRepr, ValidAsZeroBits, sys};

use crate::error::{Error, Result, plural};
use crate::runtime::buffer::{Buf, DeviceBuffer, DeviceView, DeviceViewMut};
use crate::runtime::simbuf::SimBuf;

use super::{Backend, Context};

impl Context {
    /// Copy host data to a new device buffer (queued on the context's stream; returns once the
    /// data has been staged, so `data` may be reused at once).
    pub fn htod<T: DeviceRepr + Copy>(&self, data: &[T]) -> Result<DeviceBuffer<T>> {
        let bytes = std::mem::size_of_val(data);
        Ok(match &self.backend {
            Backend::Cuda(c) => DeviceBuffer::from_slice(
                c.stream
                    .clone_htod(data)
                    .map_err(Error::driver("copying to the device", bytes))?,
            ),
            Backend::Sim => DeviceBuffer {
                inner: Buf::Sim(SimBuf::from_slice(data)?),
            },
        })
    }

    /// A new zero-filled device buffer of `len` elements (queued on the context's stream).
    pub fn alloc_zeros<T: DeviceRepr + ValidAsZeroBits>(
        &self,
        len: usize,
    ) -> Result<DeviceBuffer<T>> {
        let bytes = len.saturating_mul(std::mem::size_of::<T>());
        Ok(match &self.backend {
            Backend::Cuda(c) => DeviceBuffer::from_slice(
                c.stream
                    .alloc_zeros::<T>(len)
                    .map_err(Error::driver("allocating", bytes))?,
            ),
            Backend::Sim => DeviceBuffer {
                inner: Buf::Sim(SimBuf::zeroed(len)?),
            },
        })
    }

    /// Copy device memory (a buffer, a view, cudarc memory) back to the host. Blocks until the
    /// copy, and everything queued before it on the context's stream, is done.
    pub fn dtoh<'a, T: DeviceRepr + Copy + 'a>(
        &self,
        src: impl Into<DeviceView<'a, T>>,
    ) -> Result<Vec<T>> {
        let src = src.into();
        let n = src.len();
        let bytes = n * std::mem::size_of::<T>();
        let mut out = Vec::<T>::with_capacity(n);
        let (addr, access) = self.read(&src)?;
        match &self.backend {
            Backend::Cuda(c) => {
                // SAFETY: `addr` holds `n` elements (checked views); `out` has room for as many.
                unsafe {
                    sys::cuMemcpyDtoHAsync_v2(out.as_mut_ptr() as *mut _, addr, bytes, c.cu()?)
                }
                .result()
                .map_err(Error::driver("copying to the host", bytes))?;
                drop(access);
                self.synchronize()?;
            }
            Backend::Sim => {
                // SAFETY: as above, host memory of the simulator.
                unsafe { std::ptr::copy_nonoverlapping(addr as *const T, out.as_mut_ptr(), n) };
            }
        }
        // SAFETY: all `n` elements were written above (the stream was synchronised).
        unsafe { out.set_len(n) };
        Ok(out)
    }

    /// Copy `data` into device memory `dst` (as many elements as `data` holds; an error if
    /// `dst` is shorter). Queued on the context's stream; returns once `data` is staged.
    pub fn htod_into<'a, T: DeviceRepr + Copy + 'a>(
        &self,
        data: &[T],
        dst: impl Into<DeviceViewMut<'a, T>>,
    ) -> Result<()> {
        let mut dst = dst.into();
        if dst.len() < data.len() {
            return Err(Error::OutputTooSmall {
                what: format!(
                    "copying {}: the device memory copied into",
                    plural(data.len() as u64, "element")
                ),
                needed: data.len() as u64,
                got: dst.len() as u64,
            });
        }
        let bytes = std::mem::size_of_val(data);
        let (addr, _access) = self.write(&mut dst)?;
        match &self.backend {
            // SAFETY: room for `data.len()` elements at `addr` (checked above).
            Backend::Cuda(c) => {
                unsafe { cudarc::driver::result::memcpy_htod_async(addr, data, c.cu()?) }
                    .map_err(Error::driver("copying to the device", bytes))
            }
            Backend::Sim => {
                // SAFETY: as above, host memory of the simulator.
                unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), addr as *mut T, data.len()) };
                Ok(())
            }
        }
    }

    /// Set every byte of `dst` to zero (`cuMemsetD8Async` on a GPU, queued on the stream).
    pub fn memset_zeros<'a, T: ValidAsZeroBits + 'a>(
        &self,
        dst: impl Into<DeviceViewMut<'a, T>>,
    ) -> Result<()> {
        let mut dst = dst.into();
        let bytes = dst.len() * std::mem::size_of::<T>();
        let (addr, _access) = self.write(&mut dst)?;
        // All-zero is a valid T; `bytes` bytes of the view.
        self.memset_raw(addr, bytes)
    }

    /// Copy all of `src` into `dst` starting at element `at` (device to device, queued).
    pub fn copy_into<'a, 'b, T: DeviceRepr + Copy + 'a + 'b>(
        &self,
        src: impl Into<DeviceView<'a, T>>,
        dst: impl Into<DeviceViewMut<'b, T>>,
        at: usize,
    ) -> Result<()> {
        let (src, dst) = (src.into(), dst.into());
        let end = at
            .checked_add(src.len())
            .filter(|&e| e <= dst.len())
            .ok_or_else(|| Error::OutOfRange {
                what: format!("copying {} at {at}", plural(src.len() as u64, "element")),
                start: at as u64,
                end: (at as u64).saturating_add(src.len() as u64),
                len: dst.len() as u64,
            })?;
        let mut dst = dst.slice(at..end)?;
        let bytes = src.len() * std::mem::size_of::<T>();
        let (s, _read) = self.read(&src)?;
        let (d, _write) = self.write(&mut dst)?;
        match &self.backend {
            // SAFETY: both views hold `src.len()` elements.
            Backend::Cuda(c) => {
                unsafe { cudarc::driver::result::memcpy_dtod_async(d, s, bytes, c.cu()?) }
                    .map_err(Error::driver("copying on the device", bytes))
            }
            Backend::Sim => {
                // SAFETY: as above (`copy`: the two may overlap).
                unsafe { std::ptr::copy(s as *const T, d as *mut T, src.len()) };
                Ok(())
            }
        }
    }

    /// Zero `bytes` at device address `addr`, queued on the stream (a memset node when
    /// captured into a graph); on the simulator at once.
    pub(crate) fn memset_raw(&self, addr: u64, bytes: usize) -> Result<()> {
        match &self.backend {
            // SAFETY: the caller's scratch of at least `bytes`.
            Backend::Cuda(c) => {
                unsafe { cudarc::driver::result::memset_d8_async(addr, 0, bytes, c.cu()?) }
                    .map_err(Error::driver("clearing device memory", bytes))
            }
            Backend::Sim => {
                // SAFETY: as above, host memory.
                unsafe { std::ptr::write_bytes(addr as *mut u8, 0, bytes) };
                Ok(())
            }
        }
    }

    /// Set `count` elements of 4 or 8 bytes at device address `addr` to `bits` (the low
    /// `8 * size` bits), queued on the stream: `cuMemsetD32Async`, and for 8-byte elements two
    /// strided `cuMemsetD2D32Async` (low and high words). On the simulator at once.
    pub(crate) fn fill_raw(&self, addr: u64, bits: u64, size: usize, count: usize) -> Result<()> {
        if count == 0 {
            return Ok(());
        }
        match (&self.backend, size) {
            (Backend::Cuda(c), 4) => {
                let s = c.cu()?;
                // SAFETY: the caller's memory of `count` 4-byte elements.
                let r = unsafe { sys::cuMemsetD32Async(addr, bits as u32, count, s) };
                r.result()
                    .map_err(Error::driver("filling device memory", 0))
            }
            (Backend::Cuda(c), 8) => {
                let s = c.cu()?;
                for (off, word) in [(0, bits as u32), (4, (bits >> 32) as u32)] {
                    // SAFETY: as above, `count` 8-byte elements: one 4-byte word per row of 8.
                    let r = unsafe { sys::cuMemsetD2D32Async(addr + off, 8, word, 1, count, s) };
                    r.result()
                        .map_err(Error::driver("filling device memory", 0))?;
                }
                Ok(())
            }
            (Backend::Sim, 4 | 8) => {
                for i in 0..count {
                    // SAFETY: as above, host memory.
                    unsafe {
                        if size == 4 {
                            (addr as *mut u32).add(i).write(bits as u32);
                        } else {
                            (addr as *mut u64).add(i).write(bits);
                        }
                    }
                }
                Ok(())
            }
            _ => Err(Error::Internal(format!(
                "a device fill of {size}-byte elements (4 or 8 only)"
            ))),
        }
    }
}
