//! A page-locked, device-mapped host slot where a kernel writes a small result and then raises
//! a flag: the host reads the result as soon as it sees the flag, without a device-to-host copy
//! or waiting for the driver to report the kernel's end.

use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::{CudaContext, CudaEvent, CudaStream, sys};

use crate::error::{Error, Result};

/// A device-mapped pinned host buffer: two result words, then a completion flag, and their
/// device address; plus an event a waiting thread can sleep on.
pub(crate) struct MappedResult {
    /// Owns the allocation.
    _host: cudarc::driver::PinnedHostSlice<u64>,
    /// Its host address (cudarc's accessor synchronises on an event: not for a poll loop).
    ptr: usize,
    pub device_addr: u64,
    seq: u32,
    /// `CU_EVENT_BLOCKING_SYNC`: synchronising on it puts the thread to sleep until the
    /// device signals, instead of spinning.
    event: CudaEvent,
    /// Whether `event` was recorded after the current launch.
    event_recorded: bool,
    /// How long the current wait may spin.
    spin: Duration,
}

/// Polls of the flag between two `cuStreamQuery` calls (which report a faulted kernel, whose
/// flag would never come).
const POLLS_PER_QUERY: u32 = 512;

/// How long a waiting thread spins before it sleeps: this, plus the time the kernel itself
/// needs at [`SLOW_BYTES_PER_S`]. A result that comes within that comes back with the poll's
/// latency; waiting longer (work queued before the kernel, a slow device) costs a wake-up but
/// leaves the core free. A fixed spin made large sums slower than CUB + copy (CHANGELOG.md,
/// issue 14).
const SPIN: Duration = Duration::from_micros(200);

/// A conservative read bandwidth (well below a current GPU's) for the expected kernel time.
const SLOW_BYTES_PER_S: f64 = 1e12;

/// Inputs from this size on get the sleeping event recorded after their kernel (its host time
/// is nothing next to a kernel that reads this much).
const EVENT_BYTES: usize = 512 << 20;

/// Sleep between polls once spinning has stopped and there is no event to sleep on.
const NAP: Duration = Duration::from_micros(50);

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
        let event = ctx
            .new_event(Some(sys::CUevent_flags::CU_EVENT_BLOCKING_SYNC))
            .map_err(Error::driver("creating an event", 0))?;
        Ok(Self {
            _host: host,
            ptr: p as usize,
            device_addr,
            seq: 0,
            event,
            event_recorded: false,
            spin: SPIN,
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

    /// After the kernel of the current `seq` is queued on `stream`: record the sleeping event
    /// behind it when the kernel reads `bytes` or more.
    pub fn mark_launched(&mut self, stream: &CudaStream, bytes: usize) -> Result<()> {
        self.spin = SPIN + Duration::from_secs_f64(bytes as f64 / SLOW_BYTES_PER_S);
        self.event_recorded = bytes >= EVENT_BYTES;
        if self.event_recorded {
            self.event
                .record(stream)
                .map_err(Error::driver("recording an event", 0))?;
        }
        Ok(())
    }

    fn flag_ptr(&self) -> *const u32 {
        (self.ptr + 16) as *const u32
    }

    /// Whether the kernel launched with `seq` has raised the flag (never blocks).
    pub fn raised(&self, seq: u32) -> bool {
        // SAFETY: a live word the device writes behind our back: volatile.
        unsafe { self.flag_ptr().read_volatile() == seq }
    }

    /// Wait until the kernel launched with `seq` has raised the flag, then read the two result
    /// words: spin for a while (see [`SPIN`]), then sleep — on the event when one was recorded, else in naps.
    /// A kernel that faults never raises it: the stream query reports the error instead of
    /// waiting forever.
    pub fn wait(&mut self, seq: u32, stream: &CudaStream) -> Result<[u64; 2]> {
        let words = |m: &Self| {
            // The device stored the words before the flag (st.release.sys); x86 and PCIe keep
            // that order, and the fence keeps the compiler and CPU from reading them early.
            std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
            let p = m.ptr as *const u64;
            // SAFETY: two live words, written by the device before the flag.
            unsafe { [p.read_volatile(), p.add(1).read_volatile()] }
        };
        let start = Instant::now();
        loop {
            for _ in 0..POLLS_PER_QUERY {
                if self.raised(seq) {
                    return Ok(words(self));
                }
                std::hint::spin_loop();
            }
            // SAFETY: a live stream of this context.
            match unsafe { sys::cuStreamQuery(stream.cu_stream()) } {
                sys::cudaError_enum::CUDA_ERROR_NOT_READY => {}
                sys::cudaError_enum::CUDA_SUCCESS => {
                    return if self.raised(seq) {
                        Ok(words(self))
                    } else {
                        Err(Error::Internal(
                            "the reduction kernel ended without raising its flag".into(),
                        ))
                    };
                }
                e => {
                    return Err(Error::driver("waiting for a reduction", 0)(
                        cudarc::driver::DriverError(e),
                    ));
                }
            }
            if start.elapsed() >= self.spin {
                if self.event_recorded {
                    // Sleeps in the driver until the kernel ends (or reports its fault).
                    self.event
                        .synchronize()
                        .map_err(Error::driver("waiting for a reduction", 0))?;
                    self.event_recorded = false;
                } else {
                    std::thread::sleep(NAP);
                }
            }
        }
    }
}
