//! Device-wide reductions (one launch).

use cudarc::driver::{LaunchConfig, PushKernelArg};

use crate::context::{Context, DeviceBuffer};
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
        let n = input.len() as u64;
        let grid = reduce_grid(n);
        let f = self.kernel(SUM_F32)?;
        // A poisoned lock only means another thread panicked mid-call; the workspace itself is
        // still consistent (the kernel resets its counter), so keep going.
        let mut ws = self.reduce_ws.lock().unwrap_or_else(|p| p.into_inner());
        let ws = &mut *ws;
        let cfg = LaunchConfig {
            grid_dim: (grid, 1, 1),
            block_dim: (REDUCE_BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut launch = self.stream().launch_builder(f);
        launch
            .arg(&input.slice)
            .arg(&n)
            .arg(&mut ws.partials)
            .arg(&mut ws.retire_count)
            .arg(&mut out.slice);
        // SAFETY: argument types and order match `kernels::reduce::reduce_sum_f32`; the
        // workspace holds REDUCE_MAX_GRID >= grid partials.
        unsafe { launch.launch(cfg) }.map_err(Error::launch(SUM_F32))?;
        Ok(())
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
