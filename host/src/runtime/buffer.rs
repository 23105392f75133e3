//! Typed device memory: buffers the library owns, and borrowed views of any device memory a
//! call may read or write — the library's own buffers, cudarc's `CudaSlice`/`CudaView`/
//! `CudaViewMut` (no copy), and raw device pointers (through an `unsafe` constructor).
//!
//! Ordering. A [`DeviceBuffer`] remembers the stream it was made on (its context's): used on
//! that stream it needs no synchronisation at all; used by a context on another stream, that
//! stream first waits for the buffer's stream and the buffer's stream then waits for the use.
//! cudarc memory keeps cudarc's own rules: its stream-ordering guard (`device_ptr`) is held
//! until the kernel that uses the pointer has been queued, so the read/write events it records
//! cover that kernel. Raw pointers are the caller's to order.

use std::marker::PhantomData;
use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, CudaView, CudaViewMut, DevicePtr, DevicePtrMut};

use super::BackendKind;
use super::simbuf::SimBuf;
use crate::error::{Error, Result};

/// Who a piece of memory belongs to: the simulator, or a CUDA device (and, when known, the
/// driver context it was allocated in).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Owner {
    Sim,
    Cuda {
        ordinal: usize,
        /// The `CUcontext` as an address; `None` for raw pointers (checked by device).
        ctx: Option<usize>,
    },
}

impl Owner {
    pub(crate) fn of_stream(s: &CudaStream) -> Owner {
        Owner::Cuda {
            ordinal: s.context().ordinal(),
            ctx: Some(s.context().cu_ctx() as usize),
        }
    }

    pub(crate) fn backend(self) -> BackendKind {
        match self {
            Owner::Sim => BackendKind::Sim,
            Owner::Cuda { .. } => BackendKind::Cuda,
        }
    }

    /// Whether memory of `self` may be used by a context of `ctx`.
    pub(crate) fn usable_by(self, ctx: Owner) -> bool {
        match (self, ctx) {
            (Owner::Sim, Owner::Sim) => true,
            (
                Owner::Cuda { ordinal, ctx: mine },
                Owner::Cuda {
                    ordinal: o,
                    ctx: theirs,
                },
            ) => ordinal == o && (mine.is_none() || theirs.is_none() || mine == theirs),
            _ => false,
        }
    }

    pub(crate) fn describe(self) -> String {
        match self {
            Owner::Sim => "the simulator".into(),
            Owner::Cuda { ordinal, .. } => format!("CUDA device {ordinal}"),
        }
    }
}

/// A device buffer of `T`, owned; freed when dropped. Made by a [`Context`](crate::Context)
/// (`htod`, `alloc_zeros`) on that context's stream, or taken over from cudarc
/// (`DeviceBuffer::from(cuda_slice)`), and handed back with [`DeviceBuffer::into_cuda`].
#[derive(Debug)]
pub struct DeviceBuffer<T> {
    pub(crate) inner: Buf<T>,
}

#[derive(Debug)]
pub(crate) enum Buf<T> {
    Cuda {
        slice: CudaSlice<T>,
        /// The device address (read once: the per-use path asks cudarc for nothing).
        addr: u64,
    },
    Sim(SimBuf<T>),
}

impl<T> DeviceBuffer<T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        match &self.inner {
            Buf::Cuda { slice, .. } => slice.len(),
            Buf::Sim(s) => s.len(),
        }
    }

    /// Whether the buffer holds no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes held on the device.
    pub fn num_bytes(&self) -> usize {
        self.len() * std::mem::size_of::<T>()
    }

    /// The backend the buffer lives on.
    pub fn backend(&self) -> BackendKind {
        self.owner().backend()
    }

    pub(crate) fn owner(&self) -> Owner {
        match &self.inner {
            Buf::Cuda { slice, .. } => Owner::of_stream(slice.stream()),
            Buf::Sim(_) => Owner::Sim,
        }
    }

    /// The stream the buffer is ordered on (its context's), `None` on the simulator.
    pub(crate) fn home(&self) -> Option<&Arc<CudaStream>> {
        match &self.inner {
            Buf::Cuda { slice, .. } => Some(slice.stream()),
            Buf::Sim(_) => None,
        }
    }

    /// The address of element 0 (a host address on the simulator).
    pub(crate) fn base_addr(&self) -> u64 {
        match &self.inner {
            Buf::Cuda { addr, .. } => *addr,
            Buf::Sim(s) => s.ptr() as u64,
        }
    }

    /// A buffer over cudarc memory allocated on (or already ordered with) its own stream.
    pub(crate) fn from_slice(mut slice: CudaSlice<T>) -> Self {
        // Take the address once, through cudarc's write guard on the slice's own stream: that
        // stream waits for every use cudarc recorded, and the guard records a write, so from
        // here on the slice's stream alone orders the buffer.
        let stream = slice.stream().clone();
        let (addr, guard) = slice.device_ptr_mut(&stream);
        drop(guard);
        DeviceBuffer {
            inner: Buf::Cuda { slice, addr },
        }
    }

    /// Hand the memory back to cudarc (the inverse of `DeviceBuffer::from(slice)`). cudarc's
    /// write event is recorded on the buffer's stream first, so cudarc's own stream-ordering
    /// sees all the work the library queued on it. An error on the simulator.
    pub fn into_cuda(self) -> Result<CudaSlice<T>> {
        match self.inner {
            Buf::Cuda { mut slice, .. } => {
                let stream = slice.stream().clone();
                let (_, guard) = slice.device_ptr_mut(&stream);
                drop(guard);
                Ok(slice)
            }
            Buf::Sim(_) => Err(Error::UnsupportedOnBackend {
                op: "handing a buffer to cudarc (a simulator buffer has no CUDA memory)",
                backend: crate::BackendKind::Sim,
            }),
        }
    }

    /// Elements `range` of the buffer; a range outside it is an error.
    pub fn view(&self, range: impl std::ops::RangeBounds<usize>) -> Result<DeviceView<'_, T>> {
        DeviceView::from(self).slice(range)
    }

    /// Elements `range` of the buffer, writable; a range outside it is an error.
    pub fn view_mut(
        &mut self,
        range: impl std::ops::RangeBounds<usize>,
    ) -> Result<DeviceViewMut<'_, T>> {
        DeviceViewMut::from(self).slice(range)
    }
}

impl<T> From<CudaSlice<T>> for DeviceBuffer<T> {
    /// Take over a cudarc allocation (no copy). The buffer is ordered on the slice's stream
    /// from then on; use it with a context on that stream
    /// ([`Context::from_stream`](crate::Context::from_stream)) for no synchronisation at all.
    fn from(slice: CudaSlice<T>) -> Self {
        DeviceBuffer::from_slice(slice)
    }
}

/// `start..end` of a range over `len` elements, or an error naming it.
fn bounds(range: impl std::ops::RangeBounds<usize>, len: usize) -> Result<(usize, usize)> {
    use std::ops::Bound::*;
    let start = match range.start_bound() {
        Included(&s) => s,
        Excluded(&s) => s.saturating_add(1),
        Unbounded => 0,
    };
    let end = match range.end_bound() {
        Included(&e) => e.saturating_add(1),
        Excluded(&e) => e,
        Unbounded => len,
    };
    if start > end || end > len {
        return Err(Error::OutOfRange {
            what: "a view".into(),
            start: start as u64,
            end: end as u64,
            len: len as u64,
        });
    }
    Ok((start, end))
}

/// Where a read-only view's memory comes from.
pub(crate) enum Mem<'a, T> {
    Ours(&'a DeviceBuffer<T>),
    Cuda(&'a (dyn DevicePtr<T> + Sync + 'a)),
    Raw { addr: u64, owner: Owner },
}

impl<T> Clone for Mem<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Mem<'_, T> {}

/// Where a writable view's memory comes from.
pub(crate) enum MemMut<'a, T> {
    Ours(&'a mut DeviceBuffer<T>),
    Cuda(&'a mut (dyn DevicePtrMut<T> + Sync + 'a)),
    Raw {
        addr: u64,
        owner: Owner,
        _writes: PhantomData<&'a mut [T]>,
    },
}

/// A borrowed, contiguous, read-only piece of device memory: of a [`DeviceBuffer`], of cudarc
/// memory (`&CudaSlice<T>`, `&CudaView<T>`, `&CudaViewMut<T>` convert with `.into()`, no copy),
/// or a raw device pointer ([`DeviceView::from_raw`]). Any element offset works: the kernels
/// handle starts that are not 16-byte aligned.
pub struct DeviceView<'a, T> {
    pub(crate) mem: Mem<'a, T>,
    pub(crate) start: usize,
    len: usize,
}

impl<T> Clone for DeviceView<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for DeviceView<'_, T> {}

impl<T> std::fmt::Debug for DeviceView<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.mem {
            Mem::Ours(_) => "buffer",
            Mem::Cuda(_) => "cudarc",
            Mem::Raw { .. } => "raw",
        };
        write!(
            f,
            "DeviceView({kind}, {}..{})",
            self.start,
            self.start + self.len
        )
    }
}

impl<'a, T> DeviceView<'a, T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the view holds no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The backend the viewed memory lives on.
    pub fn backend(&self) -> BackendKind {
        self.owner().backend()
    }

    pub(crate) fn owner(&self) -> Owner {
        match self.mem {
            Mem::Ours(b) => b.owner(),
            Mem::Cuda(d) => Owner::of_stream(d.stream()),
            Mem::Raw { owner, .. } => owner,
        }
    }

    /// Elements `range` of this view; a range outside it is an error.
    pub fn slice(self, range: impl std::ops::RangeBounds<usize>) -> Result<DeviceView<'a, T>> {
        let (s, e) = bounds(range, self.len)?;
        Ok(DeviceView {
            mem: self.mem,
            start: self.start + s,
            len: e - s,
        })
    }

    /// A view of `len` elements of `T` at device address `addr` on `ctx`'s device (on the
    /// simulator, a host address). Checked: `addr` is aligned for `T`, not null when `len > 0`,
    /// and on a GPU the driver knows it as memory of `ctx`'s device with `len` elements inside
    /// one allocation.
    ///
    /// # Safety
    /// For the view's whole lifetime `'a` the memory must stay allocated, hold initialised
    /// `T`s, and not be written by anything else while a call of this library that reads it may
    /// run; ordering with other streams is the caller's (the library queues on `ctx`'s stream).
    pub unsafe fn from_raw(ctx: &crate::Context, addr: u64, len: usize) -> Result<Self> {
        let owner = ctx.check_raw::<T>(addr, len)?;
        Ok(DeviceView {
            mem: Mem::Raw { addr, owner },
            start: 0,
            len,
        })
    }
}

impl<'a, T> From<&'a DeviceBuffer<T>> for DeviceView<'a, T> {
    fn from(buf: &'a DeviceBuffer<T>) -> Self {
        DeviceView {
            mem: Mem::Ours(buf),
            start: 0,
            len: buf.len(),
        }
    }
}

impl<'a, T> From<&'a mut DeviceBuffer<T>> for DeviceView<'a, T> {
    fn from(buf: &'a mut DeviceBuffer<T>) -> Self {
        DeviceView::from(&*buf)
    }
}

macro_rules! from_cudarc {
    ($($src:ty),*) => {$(
        impl<'a, 'b: 'a, T: Sync + 'a> From<&'a $src> for DeviceView<'a, T> {
            fn from(s: &'a $src) -> Self {
                DeviceView { mem: Mem::Cuda(s), start: 0, len: s.len() }
            }
        }
    )*};
}
from_cudarc!(CudaSlice<T>, CudaView<'b, T>, CudaViewMut<'b, T>);

/// A borrowed, contiguous, writable piece of device memory: of a [`DeviceBuffer`] (`&mut buf`),
/// of cudarc memory (`&mut CudaSlice<T>`, `&mut CudaViewMut<T>`), or a raw device pointer
/// ([`DeviceViewMut::from_raw`]).
pub struct DeviceViewMut<'a, T> {
    pub(crate) mem: MemMut<'a, T>,
    pub(crate) start: usize,
    len: usize,
}

impl<T> std::fmt::Debug for DeviceViewMut<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.mem {
            MemMut::Ours(_) => "buffer",
            MemMut::Cuda(_) => "cudarc",
            MemMut::Raw { .. } => "raw",
        };
        write!(
            f,
            "DeviceViewMut({kind}, {}..{})",
            self.start,
            self.start + self.len
        )
    }
}

impl<'a, T> DeviceViewMut<'a, T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the view holds no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The backend the viewed memory lives on.
    pub fn backend(&self) -> BackendKind {
        self.owner().backend()
    }

    pub(crate) fn owner(&self) -> Owner {
        match &self.mem {
            MemMut::Ours(b) => b.owner(),
            MemMut::Cuda(d) => Owner::of_stream(d.stream()),
            MemMut::Raw { owner, .. } => *owner,
        }
    }

    /// Elements `range` of this view; a range outside it is an error.
    pub fn slice(self, range: impl std::ops::RangeBounds<usize>) -> Result<DeviceViewMut<'a, T>> {
        let (s, e) = bounds(range, self.len)?;
        Ok(DeviceViewMut {
            mem: self.mem,
            start: self.start + s,
            len: e - s,
        })
    }

    /// The writable twin of [`DeviceView::from_raw`], with the same checks.
    ///
    /// # Safety
    /// As [`DeviceView::from_raw`], and nothing else reads or writes the memory while a call
    /// of this library that writes it may run.
    pub unsafe fn from_raw(ctx: &crate::Context, addr: u64, len: usize) -> Result<Self> {
        let owner = ctx.check_raw::<T>(addr, len)?;
        Ok(DeviceViewMut {
            mem: MemMut::Raw {
                addr,
                owner,
                _writes: PhantomData,
            },
            start: 0,
            len,
        })
    }
}

impl<'a, T> From<&'a mut DeviceBuffer<T>> for DeviceViewMut<'a, T> {
    fn from(buf: &'a mut DeviceBuffer<T>) -> Self {
        let len = buf.len();
        DeviceViewMut {
            mem: MemMut::Ours(buf),
            start: 0,
            len,
        }
    }
}

impl<'a, T: Sync + 'a> From<&'a mut CudaSlice<T>> for DeviceViewMut<'a, T> {
    fn from(s: &'a mut CudaSlice<T>) -> Self {
        let len = s.len();
        DeviceViewMut {
            mem: MemMut::Cuda(s),
            start: 0,
            len,
        }
    }
}

impl<'a, 'b: 'a, T: Sync + 'a> From<&'a mut CudaViewMut<'b, T>> for DeviceViewMut<'a, T> {
    fn from(s: &'a mut CudaViewMut<'b, T>) -> Self {
        let len = s.len();
        DeviceViewMut {
            mem: MemMut::Cuda(s),
            start: 0,
            len,
        }
    }
}
