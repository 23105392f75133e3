//! A page-locked, device-mapped host slot where a kernel writes a small result and then raises
//! a flag: the host reads the result as soon as it sees the flag, without a device-to-host copy
//! or waiting for the driver to report the kernel's end.

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaStream, sys};

use crate::error::{Error, Result};

/// A device-mapped pinned host buffer: two result words, then a completion flag, and their
/// device address.
pub(crate) struct MappedResult {
    pub host: cudarc::driver::PinnedHostSlice<u64>,
    pub device_addr: u64,
    seq: u32,
}

/// Polls of the flag between two `cuStreamQuery` calls (which report a faulted kernel, whose
/// flag would never come).
const POLLS_PER_QUERY: u32 = 512;

impl MappedResult {
    pub(crate) fn new(ctx: &Arc<CudaContext>) -> Result<Self> {
        let flags = sys::CU_MEMHOSTALLOC_DEVICEMAP | sys::CU_MEMHOSTALLOC_PORTABLE;
        // SAFETY: initialised right below, before any kernel can see it.
        let mut host = unsafe { ctx.alloc_pinned_with_flags::<u64>(3, flags) }
            .map_err(Error::driver("allocating pinned memory", 24))?;
        let p = host
            .as_mut_ptr()
            .map_err(Error::driver("allocating pinned memory", 24))?;
        // SAFETY: three words of a live allocation.
        unsafe { std::ptr::write_bytes(p, 0, 3) };
        let mut device_addr = 0;
        // SAFETY: `p` is a live DEVICEMAP allocation of this context.
        unsafe { sys::cuMemHostGetDevicePointer_v2(&mut device_addr, p as *mut _, 0) }
            .result()
            .map_err(Error::driver("mapping pinned memory", 24))?;
        Ok(Self {
            host,
            device_addr,
            seq: 0,
        })
    }

    /// Device address of the completion flag (a u32 in the third word).
    pub fn flag_device_addr(&self) -> u64 {
        self.device_addr + 16
    }

    /// A sequence number the flag does not hold yet (never 0, the initial value).
    pub fn next_seq(&mut self) -> u32 {
        self.seq = self.seq.wrapping_add(1).max(1);
        self.seq
    }

    /// Wait until the kernel launched with `seq` has raised the flag, then read the two result
    /// words. A kernel that faults never raises it: the stream query in the loop reports the
    /// error instead of spinning forever.
    pub fn wait(&mut self, seq: u32, stream: &CudaStream) -> Result<[u64; 2]> {
        let p = self
            .host
            .as_mut_ptr()
            .map_err(Error::driver("reading pinned memory", 24))?;
        // SAFETY: three live words; volatile because the device writes them behind our back.
        let flag = unsafe { p.add(2) } as *const u32;
        let raised = || unsafe { flag.read_volatile() } == seq;
        let words = || {
            // The device stored the words before the flag (st.release.sys); x86 and PCIe keep
            // that order, and the fence keeps the compiler and CPU from reading them early.
            std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
            // SAFETY: as above.
            unsafe { [p.read_volatile(), p.add(1).read_volatile()] }
        };
        loop {
            for _ in 0..POLLS_PER_QUERY {
                if raised() {
                    return Ok(words());
                }
                std::hint::spin_loop();
            }
            // SAFETY: a live stream of this context.
            match unsafe { sys::cuStreamQuery(stream.cu_stream()) } {
                sys::cudaError_enum::CUDA_ERROR_NOT_READY => {}
                sys::cudaError_enum::CUDA_SUCCESS => {
                    return if raised() {
                        Ok(words())
                    } else {
                        Err(Error::InvalidArgument(
                            "internal: the reduction kernel ended without raising its flag".into(),
                        ))
                    };
                }
                e => {
                    return Err(Error::Driver {
                        op: "waiting for a reduction",
                        source: cudarc::driver::DriverError(e),
                    });
                }
            }
        }
    }
}
