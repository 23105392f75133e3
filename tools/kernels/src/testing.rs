//! Small kernels that exercise the hardware layer, for conformance tests that run unchanged on
//! the simulator and on the GPU (and must agree).

use kernels::gpu;

kernels::kernel! {
/// Every thread shuffles its lane id: `out[t] = shfl_<op>(lane, arg, width)` with op 0 = down,
/// 1 = up, 2 = xor, 3 = idx. Seed 002's example is op 0, arg 2, width 8.
pub unsafe fn test_shfl(out: *mut u32, op: u32, arg: u32, width: u32) {
    let t = gpu::block_idx_x() * gpu::block_dim_x() + gpu::thread_idx_x();
    let i = gpu::lane_id();
    let j = match op {
        0 => gpu::shfl_down_sync(gpu::FULL_MASK, i, arg, width),
        1 => gpu::shfl_up_sync(gpu::FULL_MASK, i, arg, width),
        2 => gpu::shfl_xor_sync(gpu::FULL_MASK, i, arg, width),
        _ => gpu::shfl_sync(gpu::FULL_MASK, i, arg, width),
    };
    unsafe { out.add(t as usize).write(j) };
}
}

kernels::kernel! {
/// 64-bit shuffles: `out[t]` = the bits of `input[src]` after `shfl_down(value, arg, 32)` where
/// the value is shuffled as u64 (`kind` 0), f64 (1) or i64 (2). Both halves must survive.
pub unsafe fn test_shfl64(input: *const u64, out: *mut u64, kind: u32, arg: u32) {
    let t = (gpu::block_idx_x() * gpu::block_dim_x() + gpu::thread_idx_x()) as usize;
    let bits = unsafe { input.add(t).read() };
    let r = match kind {
        0 => gpu::shfl_down_sync(gpu::FULL_MASK, bits, arg, 32),
        1 => gpu::shfl_down_sync(gpu::FULL_MASK, f64::from_bits(bits), arg, 32).to_bits(),
        _ => gpu::shfl_down_sync(gpu::FULL_MASK, bits as i64, arg, 32) as u64,
    };
    unsafe { out.add(t).write(r) };
}
}

kernels::kernel! {
/// Votes: `out[3t..3t+3]` = ballot, any, all of `pred[t] != 0` over the full warp.
pub unsafe fn test_vote(pred: *const u32, out: *mut u32) {
    let t = (gpu::block_idx_x() * gpu::block_dim_x() + gpu::thread_idx_x()) as usize;
    let p = unsafe { pred.add(t).read() } != 0;
    let b = gpu::ballot_sync(gpu::FULL_MASK, p);
    let any = gpu::any_sync(gpu::FULL_MASK, p) as u32;
    let all = gpu::all_sync(gpu::FULL_MASK, p) as u32;
    unsafe {
        out.add(3 * t).write(b);
        out.add(3 * t + 1).write(any);
        out.add(3 * t + 2).write(all);
    }
}
}

kernels::kernel! {
/// Barrier and shared memory: in each of `rounds` rounds every thread stores its value in
/// dynamic shared memory, waits at a barrier, and takes its right neighbour's value
/// (`v = s[(t+1) % n] * 3 + round`), then waits again. A simulator (or GPU) that let a thread
/// pass a barrier early would read a slot not yet written. Needs `4 * blockDim.x` bytes of
/// dynamic shared memory. `out[global t] = v`.
pub unsafe fn test_barrier_rotate(out: *mut u32, rounds: u32) {
    let s = gpu::dynamic_shared::<u32>();
    let t = gpu::thread_idx_x();
    let n = gpu::block_dim_x();
    let mut v = t + 1000 * gpu::block_idx_x();
    for r in 0..rounds {
        unsafe { s.write(t as usize, v) };
        gpu::sync_threads();
        v = unsafe { s.read(((t + 1) % n) as usize) }.wrapping_mul(3).wrapping_add(r);
        gpu::sync_threads();
    }
    unsafe { out.add((gpu::block_idx_x() * n + t) as usize).write(v) };
}
}

kernels::kernel! {
/// One warp runs the decoupled look-back of `tile` over prepared status arrays (values are
/// `Headed<u32>` under the segmented sum, a non-commutative operator, so the combining order
/// shows) and writes the exclusive prefix it finds to `out`.
pub unsafe fn test_lookback(
    flags: *mut u32,
    aggregates: *mut kernels::scan::Headed<u32>,
    prefixes: *mut kernels::scan::Headed<u32>,
    tile: u64,
    epoch: u32,
    out: *mut kernels::scan::Headed<u32>,
) {
    let status = kernels::scan::lookback::TileStatus {
        flags,
        aggregates,
        prefixes,
        epoch,
        first_delay_ns: kernels::scan::policy::ACTIVE.first_delay_ns,
        tagged_slots: false,
        fixed_order: false,
    };
    let identity = kernels::scan::Headed { head: 0, value: 0u32 };
    let p = unsafe {
        status.exclusive_prefix(tile, identity, kernels::scan::segmented::<u32, kernels::ops::Sum>)
    };
    if gpu::lane_id() == 0 {
        unsafe { out.write(p) };
    }
}
}
