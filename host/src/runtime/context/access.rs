//! Which memory a launch may use and how it stays ordered: owner checks, device addresses and
//! the ordering guards held across a launch.

use std::sync::Arc;

use cudarc::driver::{CudaStream, sys};

use crate::error::{Error, Result, plural};
use crate::runtime::buffer::{DeviceBuffer, DeviceView, DeviceViewMut, Mem, MemMut, Owner};

use super::{Backend, Context};

impl Context {
    /// The device address of a view's first element (a host address on the simulator), for
    /// the kernel arguments of [`Context::launch`]. An error when the memory belongs to another
    /// backend or device. For cudarc memory used on another stream, prefer passing views to
    /// the library's calls, which hold cudarc's ordering guards across the launch.
    pub fn device_addr<'a, T>(&self, view: impl Into<DeviceView<'a, T>>) -> Result<u64>
    where
        T: 'a,
    {
        let v = view.into();
        let (addr, access) = self.read(&v)?;
        drop(access);
        Ok(addr)
    }

    /// The device address of one of the context's own buffers (the algorithms' scratch): no
    /// check and no ordering work, as the buffer is only ever used on this context's stream.
    pub(crate) fn scratch_addr<T>(&self, buf: &DeviceBuffer<T>) -> u64 {
        buf.base_addr()
    }

    fn owner(&self) -> Owner {
        match &self.backend {
            Backend::Cuda(c) => c.owner,
            Backend::Sim => Owner::Sim,
        }
    }

    /// Memory of `owner` may be used by this context, or an error that names both.
    pub(crate) fn check_owner(&self, owner: Owner) -> Result<()> {
        if owner.usable_by(self.owner()) {
            return Ok(());
        }
        if owner.backend() != self.info.backend {
            return Err(Error::WrongBackend);
        }
        Err(Error::WrongDevice {
            memory: format!(
                "memory of {} (or of another CUDA context)",
                owner.describe()
            ),
            context: self.owner().describe(),
        })
    }

    /// The address to read a view at, and what keeps it ordered until dropped (drop it after
    /// the kernel that reads it is queued).
    pub(crate) fn read<'v, T>(&'v self, v: &'v DeviceView<'_, T>) -> Result<(u64, Access<'v>)> {
        self.check_owner(v.owner())?;
        let off = (v.start * std::mem::size_of::<T>()) as u64;
        let (base, access) = match (v.mem, &self.backend) {
            (Mem::Ours(b), _) => (b.base_addr(), self.order_with(b.home())?),
            (Mem::Cuda(d), Backend::Cuda(c)) => {
                let (p, g) = d.device_ptr(&c.stream);
                (p, Access::Cuda(g))
            }
            (Mem::Raw { addr, .. }, _) => (addr, Access::Free),
            (Mem::Cuda(_), Backend::Sim) => return Err(Error::WrongBackend),
        };
        Ok((base + off, access))
    }

    /// The address to write a view at, and what keeps it ordered until dropped.
    pub(crate) fn write<'v, T>(
        &'v self,
        v: &'v mut DeviceViewMut<'_, T>,
    ) -> Result<(u64, Access<'v>)> {
        self.check_owner(v.owner())?;
        let off = (v.start * std::mem::size_of::<T>()) as u64;
        let (base, access) = match (&mut v.mem, &self.backend) {
            (MemMut::Ours(b), _) => (b.base_addr(), self.order_with(b.home())?),
            (MemMut::Cuda(d), Backend::Cuda(c)) => {
                let (p, g) = d.device_ptr_mut(&c.stream);
                (p, Access::Cuda(g))
            }
            (MemMut::Raw { addr, .. }, _) => (*addr, Access::Free),
            (MemMut::Cuda(_), Backend::Sim) => return Err(Error::WrongBackend),
        };
        Ok((base + off, access))
    }

    /// Ordering for a library buffer whose stream is `home`: nothing on its own stream;
    /// on another, our stream waits for `home` now and `home` for us when the access drops.
    fn order_with<'v>(&'v self, home: Option<&'v Arc<CudaStream>>) -> Result<Access<'v>> {
        match (home, &self.backend) {
            (Some(home), Backend::Cuda(c)) if !Arc::ptr_eq(home, &c.stream) => {
                c.stream
                    .join(home)
                    .map_err(Error::driver("ordering with another stream", 0))?;
                Ok(Access::Joined {
                    home,
                    ours: &c.stream,
                })
            }
            _ => Ok(Access::Free),
        }
    }

    /// Check a raw pointer handed in for `len` elements of `T`.
    pub(crate) fn check_raw<T>(&self, addr: u64, len: usize) -> Result<Owner> {
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .ok_or_else(|| Error::TooLarge {
                what: format!(
                    "the elements of a raw view ({}-byte elements overflow the address space)",
                    std::mem::size_of::<T>()
                ),
                size: len as u64,
                limit: (usize::MAX / std::mem::size_of::<T>().max(1)) as u64,
            })?;
        if len == 0 {
            return Ok(self.owner());
        }
        if addr == 0 {
            return Err(Error::BadPointer {
                addr,
                reason: format!(
                    "a null pointer was given for a non-empty view of {}",
                    plural(len as u64, "element")
                ),
            });
        }
        if !addr.is_multiple_of(std::mem::align_of::<T>() as u64) {
            return Err(Error::BadPointer {
                addr,
                reason: format!("not aligned to {} bytes", std::mem::align_of::<T>()),
            });
        }
        let Backend::Cuda(c) = &self.backend else {
            return Ok(Owner::Sim);
        };
        c.ctx
            .bind_to_thread()
            .map_err(Error::driver("binding the context", 0))?;
        let attr = |a: sys::CUpointer_attribute| -> Result<u64> {
            let mut v = 0u64;
            // SAFETY: every attribute asked below writes at most 8 bytes.
            unsafe { sys::cuPointerGetAttribute(&mut v as *mut u64 as *mut _, a, addr) }
                .result()
                .map_err(|_| Error::BadPointer {
                    addr,
                    reason: "not device memory known to the CUDA driver".into(),
                })?;
            Ok(v)
        };
        use sys::CUpointer_attribute as P;
        // DEVICE_ORDINAL is an int: read it into a zeroed u64 and keep the low half.
        let ordinal = attr(P::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)? as u32 as usize;
        if ordinal != self.info.ordinal {
            return Err(Error::WrongDevice {
                memory: format!("address {addr:#x}, memory of CUDA device {ordinal},"),
                context: format!("CUDA device {}", self.info.ordinal),
            });
        }
        let start = attr(P::CU_POINTER_ATTRIBUTE_RANGE_START_ADDR)?;
        let size = attr(P::CU_POINTER_ATTRIBUTE_RANGE_SIZE)?;
        if addr + bytes as u64 > start + size {
            return Err(Error::BadPointer {
                addr,
                reason: format!(
                    "a view of {} runs past the end of its allocation ({size} bytes at \
                     {start:#x})",
                    plural(len as u64, "element")
                ),
            });
        }
        Ok(Owner::Cuda { ordinal, ctx: None })
    }
}

/// What keeps one use of device memory ordered with other streams; dropped after the launch
/// that uses the memory has been queued.
pub(crate) enum Access<'a> {
    /// Nothing to do: the memory is ordered on this stream, or the caller orders it.
    Free,
    /// cudarc's guard: records the slice's read/write event on our stream when dropped.
    #[allow(dead_code)] // held for its Drop
    Cuda(cudarc::driver::SyncOnDrop<'a>),
    /// A library buffer of another stream: that stream waits for ours when this drops.
    Joined {
        home: &'a Arc<CudaStream>,
        ours: &'a Arc<CudaStream>,
    },
}

impl Drop for Access<'_> {
    fn drop(&mut self) {
        if let Access::Joined { home, ours } = self {
            // Only fails on a broken context, which the next call reports; nothing to do here.
            let _ = home.join(ours);
        }
    }
}
