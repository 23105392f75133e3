//! Device-wide reductions (one launch).

use cudarc::driver::PushKernelArg;

use crate::context::{Context, DeviceBuffer, LaunchShape};
use crate::error::{Error, Result};
use kernels::launch::{REDUCE_BLOCK, reduce_grid};

const SUM_F32: &str = "reduce_sum_f32";

impl Context {
    /// Sum of an f32 buffer, computed in one kernel launch; the result stays on the device in
    /// `out[0]`. Empty input gives 0.0.
    pub fn sum_f32_into(
        &self,
        input: &DeviceBuffer<f32>,
        out: &mut DeviceBuffer<f32>,
    ) -> Result<()> {
        if out.is_empty() {
            return Err(Error::InvalidArgument(
                "the output buffer of a reduction must hold at least 1 element".into(),
            ));
        }
        self.check(&[input.backend(), out.backend()])?;
        let n = input.len() as u64;
        // A poisoned lock only means another thread panicked mid-call; the workspace itself is
        // still consistent (the kernel resets its counter), so keep going.
        let ws = self.reduce_ws.lock().unwrap_or_else(|p| p.into_inner());
        let (pin, ppart, pcount, pout) = (
            input.sim_ptr(),
            ws.partials.sim_ptr(),
            ws.retire_count.sim_ptr(),
            out.sim_ptr(),
        );
        self.launch(
            SUM_F32,
            LaunchShape::linear(reduce_grid(n), REDUCE_BLOCK, 0),
            |b| {
                input.push(b);
                b.arg(&n);
                ws.partials.push(b);
                ws.retire_count.push(b);
                out.push(b);
            },
            // SAFETY: the same arguments, as raw addresses of this context's buffers.
            || unsafe {
                kernels::reduce::reduce_sum_f32(pin.get(), n, ppart.get(), pcount.get(), pout.get())
            },
        )
    }

    /// Sum of an f32 buffer, read back to the host.
    pub fn sum_f32(&self, input: &DeviceBuffer<f32>) -> Result<f32> {
        let mut out = self.alloc_zeros::<f32>(1)?;
        self.sum_f32_into(input, &mut out)?;
        let v = self.dtoh(&out).map_err(|e| match e {
            // An asynchronous kernel fault surfaces at the next synchronising call.
            Error::Driver { source, .. } => Error::Launch {
                kernel: SUM_F32.into(),
                source,
            },
            e => e,
        })?;
        Ok(v[0])
    }
}
