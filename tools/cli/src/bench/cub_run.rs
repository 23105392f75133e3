//! CUB's calls as the sweep times them: scratch allocated once, one call per input buffer.

use std::ffi::c_void;

use gpu_reduce::{Context, DeviceBuffer, Error, Result};

use super::SweepElement;
use crate::cub::{Cub, CubError};
use crate::scan_table::TableElement;

/// A CUB call over input `i` of `inputs`, its scratch (of `temp_bytes(n)` bytes) allocated
/// once: `call(temp, temp_bytes, input, n, stream)` makes the shim's call.
pub(crate) fn cub_runner<'a, T>(
    ctx: &'a Context,
    inputs: &'a [DeviceBuffer<T>],
    temp_bytes: impl FnOnce(u64) -> std::result::Result<usize, CubError>,
    call: impl Fn(u64, usize, u64, u64, *mut c_void) -> std::result::Result<(), CubError> + 'a,
) -> Result<impl Fn(usize) -> Result<()> + 'a> {
    // Bound first: the size query asks the current device about itself.
    let stream = crate::cub::stream_of(ctx)? as usize;
    let n = inputs[0].len() as u64;
    let temp_bytes = temp_bytes(n)?;
    let temp = ctx.alloc_zeros::<u8>(temp_bytes.max(1))?;
    let temp_addr = ctx.device_addr(&temp)?;
    Ok(move |i: usize| -> Result<()> {
        let _keep = &temp;
        let input = ctx.device_addr(&inputs[i])?;
        Ok(call(
            temp_addr,
            temp_bytes,
            input,
            n,
            stream as *mut c_void,
        )?)
    })
}

/// CUB's sum over input `i` into `res[0]`, scratch allocated once.
pub(crate) fn cub_sum_runner<'a, T: SweepElement>(
    cub: &'a Cub,
    ctx: &'a Context,
    inputs: &'a [DeviceBuffer<T>],
    res: &DeviceBuffer<T>,
) -> Result<impl Fn(usize) -> Result<()> + 'a> {
    let out = ctx.device_addr(res)?;
    cub_runner(
        ctx,
        inputs,
        |n| cub.temp_bytes_sum::<T>(n),
        move |temp, temp_bytes, input, n, stream| {
            // SAFETY: device buffers of this context, alive for the whole benchmark.
            unsafe { cub.sum::<T>(temp, temp_bytes, input, out, n, stream) }
        },
    )
}

/// Does `cub` work on `ctx`: an i32 sum and an i32 inclusive scan of a few thousand elements,
/// checked? (A shim that builds but fails at run time is left out before the sweep, rather
/// than failing it midway.)
pub fn cub_works(ctx: &Context, cub: &Cub) -> Result<()> {
    let data: Vec<i32> = (0..5000).map(|i| i % 7 - 3).collect();
    let inputs = [ctx.htod(&data)?];
    let res = ctx.alloc_zeros::<i32>(1)?;
    cub_sum_runner::<i32>(cub, ctx, &inputs, &res)?(0)?;
    let got = ctx.dtoh(&res)?[0];
    if !i32::sum_ok(got, &data) {
        return Err(Error::external(format!(
            "CUB's sum of the probe is {got}, not {}",
            data.iter().sum::<i32>()
        )));
    }
    let mut out = ctx.alloc_zeros::<i32>(data.len())?;
    if let Some(runner) = i32::cub_inclusive_sum(cub, ctx, &inputs[0], &mut out) {
        runner?.run()?;
        if !i32::check(&ctx.dtoh(&out)?, &data) {
            return Err(Error::external("CUB's inclusive sum of the probe is wrong"));
        }
    }
    Ok(())
}
