//! The memory limits the sweep measures beside every method: a device copy and the read-only
//! streaming kernel.

use cudarc::driver::PushKernelArg;
use gpu_reduce::{BackendKind, Context, DeviceBuffer, Error, Result};

use super::measure::{Rotation, Rows};
use super::{Family, SweepConfig};

/// The read-only streaming kernel that measures the memory limit.
pub trait StreamExt {
    /// XOR of the 32-bit words of `input` (its byte length a multiple of 4), through the
    /// read-only streaming kernel; `partials` is the per-warp scratch ([`StreamExt::stream_shape`]
    /// gives how many). Exists to measure the read bandwidth limit.
    fn stream_read_xor<T: cudarc::driver::DeviceRepr>(
        &self,
        input: &DeviceBuffer<T>,
        partials: &mut DeviceBuffer<u32>,
    ) -> Result<()>;

    /// [`StreamExt::stream_read_xor`] of the first `n` elements of `input`.
    fn stream_read_xor_n<T: cudarc::driver::DeviceRepr>(
        &self,
        input: &DeviceBuffer<T>,
        n: usize,
        partials: &mut DeviceBuffer<u32>,
    ) -> Result<()>;

    /// Grid and block of the streaming kernel: enough warps to keep the memory busy.
    fn stream_shape(&self) -> (u32, u32);
}

impl StreamExt for Context {
    fn stream_read_xor<T: cudarc::driver::DeviceRepr>(
        &self,
        input: &DeviceBuffer<T>,
        partials: &mut DeviceBuffer<u32>,
    ) -> Result<()> {
        self.stream_read_xor_n(input, input.len(), partials)
    }

    fn stream_read_xor_n<T: cudarc::driver::DeviceRepr>(
        &self,
        input: &DeviceBuffer<T>,
        n: usize,
        partials: &mut DeviceBuffer<u32>,
    ) -> Result<()> {
        let n = n.min(input.len());
        let bytes = n * std::mem::size_of::<T>();
        if !bytes.is_multiple_of(4) {
            return Err(Error::external(format!(
                "stream_read_xor: {bytes} bytes is not a whole number of 32-bit words"
            )));
        }
        let (grid, block) = self.stream_shape();
        if partials.len() < (grid * block / 32) as usize {
            return Err(Error::OutputTooSmall {
                what: "stream_read_xor: the partials (one per warp)".into(),
                needed: (grid * block / 32) as u64,
                got: partials.len() as u64,
            });
        }
        let words = (bytes / 4) as u64;
        let (i, p) = (self.device_addr(input)?, self.device_addr(&*partials)?);
        // SAFETY: stream_read_u32's arguments; `partials` holds one word per warp.
        unsafe {
            self.launch(
                &crate::TOOL_KERNELS,
                "stream_read_u32",
                gpu_reduce::LaunchShape::linear(grid, block, 0),
                |b| {
                    b.arg(&i).arg(&words).arg(&p);
                },
                || tool_kernels::stream::stream_read_u32(i as *const u32, words, p as *mut u32),
            )
        }
    }

    fn stream_shape(&self) -> (u32, u32) {
        match self.backend_kind() {
            BackendKind::Cuda => (self.info().multiprocessors.max(1) * 8, 256),
            BackendKind::Sim => (2, 64),
        }
    }
}

/// The memory limits at one size and type, each checked, then timed over the rotation: a device
/// copy (read + write) and, where the input is whole 4-byte words, the read-only stream.
pub(crate) fn memory_limits<T: cudarc::driver::DeviceRepr + Copy + PartialEq>(
    ctx: &Context,
    (dt, n): (&str, u64),
    rot: &Rotation<T>,
    out: &mut DeviceBuffer<T>,
    cfg: &SweepConfig,
    rows: &mut Rows,
    progress: &mut impl FnMut(&str),
) -> Result<()> {
    let (it, wu) = (cfg.iters, cfg.warmup);
    let (inputs, hosts) = (&rot.inputs, &rot.hosts);
    let b = std::mem::size_of_val(hosts[0].as_slice()) as u64;
    progress(&format!("{dt} n={n}: device copy"));
    ctx.copy_into(&inputs[0], &mut *out, 0)?;
    let ok = ctx.dtoh(&*out)? == hosts[0];
    let t = ctx.time_ms(wu, it, || ctx.copy_into(&inputs[rot.next()], &mut *out, 0))?;
    let method = "device copy (read + write)";
    rows.record("memory", method, Family::Limit, 2 * b, &t, ok);
    if b.is_multiple_of(4) {
        progress(&format!("{dt} n={n}: read-only stream"));
        let (ok, t) = read_stream(ctx, inputs, &hosts[0], (wu, it), || rot.next())?;
        rows.record("memory", "read-only stream", Family::Limit, b, &t, ok);
    }
    Ok(())
}

/// The read-only stream over `inputs[0]` checked against `host` (its host copy, or the first
/// `host.len()` elements of it: the stream reads that many), then timed (`warmup`, `iters`)
/// over `inputs[next()]`: (checked, times).
pub(crate) fn read_stream<T: cudarc::driver::DeviceRepr + Copy>(
    ctx: &Context,
    inputs: &[DeviceBuffer<T>],
    host: &[T],
    (warmup, iters): (usize, usize),
    mut next: impl FnMut() -> usize,
) -> Result<(bool, Vec<f64>)> {
    let (g, bl) = ctx.stream_shape();
    let mut partials = ctx.alloc_zeros::<u32>((g * bl / 32) as usize)?;
    let n = host.len();
    ctx.stream_read_xor_n(&inputs[0], n, &mut partials)?;
    let ok = ctx.dtoh(&partials)?.iter().fold(0u32, |a, &x| a ^ x) == xor_words(host);
    let t = ctx.time_ms(warmup, iters, || {
        ctx.stream_read_xor_n(&inputs[next()], n, &mut partials)
    })?;
    Ok((ok, t))
}

/// XOR of the 32-bit words of `data` (as the streaming kernel folds them).
pub(crate) fn xor_words<T: Copy>(data: &[T]) -> u32 {
    let bytes = std::mem::size_of_val(data);
    // SAFETY: plain numeric elements; every byte is initialised.
    let raw = unsafe { std::slice::from_raw_parts(data.as_ptr() as *const u8, bytes) };
    raw.as_chunks::<4>()
        .0
        .iter()
        .fold(0u32, |a, w| a ^ u32::from_ne_bytes(*w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xor_of_words() {
        assert_eq!(xor_words(&[1u32, 2, 4]), 7);
        assert_eq!(xor_words(&[1.0f64]), 0x3ff0_0000);
    }
}
