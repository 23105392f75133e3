//! Typed device memory: owned buffers and borrowed views, on either backend.

use cudarc::driver::CudaSlice;

use super::BackendKind;
use super::simbuf::SimBuf;
use crate::error::{Error, Result};

/// A device buffer of `T`, owned; freed when dropped. Made by a [`Context`](crate::Context)
/// (`htod`, `alloc_zeros`), on that context's backend.
#[derive(Debug)]
pub struct DeviceBuffer<T> {
    pub(crate) inner: Buf<T>,
}

#[derive(Debug)]
pub(crate) enum Buf<T> {
    Cuda(CudaSlice<T>),
    Sim(SimBuf<T>),
}

impl<T> DeviceBuffer<T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        match &self.inner {
            Buf::Cuda(s) => s.len(),
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
        match &self.inner {
            Buf::Cuda(_) => BackendKind::Cuda,
            Buf::Sim(_) => BackendKind::Sim,
        }
    }

    /// Elements `range` of the buffer; a range outside it is an error.
    pub fn view(&self, range: impl std::ops::RangeBounds<usize>) -> Result<DeviceView<'_, T>> {
        use std::ops::Bound::*;
        let start = match range.start_bound() {
            Included(&s) => s,
            Excluded(&s) => s.saturating_add(1),
            Unbounded => 0,
        };
        let end = match range.end_bound() {
            Included(&e) => e.saturating_add(1),
            Excluded(&e) => e,
            Unbounded => self.len(),
        };
        if start > end || end > self.len() {
            return Err(Error::InvalidArgument(format!(
                "range {start}..{end} is outside a buffer of {} elements",
                self.len()
            )));
        }
        Ok(DeviceView {
            buf: self,
            start,
            len: end - start,
        })
    }
}

/// A borrowed, contiguous part of a [`DeviceBuffer`] (any element offset: the kernels handle
/// starts that are not 16-byte aligned).
#[derive(Debug)]
pub struct DeviceView<'a, T> {
    pub(crate) buf: &'a DeviceBuffer<T>,
    pub(crate) start: usize,
    len: usize,
}

impl<T> Clone for DeviceView<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for DeviceView<'_, T> {}

impl<T> DeviceView<'_, T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the view holds no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The backend the viewed buffer lives on.
    pub fn backend(&self) -> BackendKind {
        self.buf.backend()
    }
}

impl<'a, T> From<&'a DeviceBuffer<T>> for DeviceView<'a, T> {
    fn from(buf: &'a DeviceBuffer<T>) -> Self {
        DeviceView {
            buf,
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
