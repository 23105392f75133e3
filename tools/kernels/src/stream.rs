//! The memory limit, measured: a read-only streaming kernel. Every 16-byte vector of the input
//! is loaded once (two loads in flight per thread per step, as the production reduce does) and
//! folded with XOR, which costs nothing next to the loads; each warp writes one word, so the
//! kernel's traffic is the input alone. The XOR of the partials is checkable on the CPU, so
//! the benchmark knows every byte was really read.

use kernels::gpu;
use kernels::warp::warp_reduce;

kernels::kernel! {
    /// XOR of the `n_words` 32-bit words at `input` (16-byte aligned): warp `w` of the grid
    /// writes its share to `partials[w]` (the host XORs them). Launch with any grid of whole
    /// warps; `partials` holds `grid * block / 32` words.
    pub unsafe fn stream_read_u32(input: *const u32, n_words: u64, partials: *mut u32) {
        let threads = gpu::grid_dim_x() as u64 * gpu::block_dim_x() as u64;
        let tid = gpu::block_idx_x() as u64 * gpu::block_dim_x() as u64 + gpu::thread_idx_x() as u64;
        let vecs = n_words / 4;
        let fold = |v: [u32; 4]| v[0] ^ v[1] ^ v[2] ^ v[3];
        let mut acc = 0u32;
        let mut i = tid;
        while i + threads < vecs {
            let a = unsafe { gpu::load_v4_b32(input.add(4 * i as usize)) };
            let b = unsafe { gpu::load_v4_b32(input.add(4 * (i + threads) as usize)) };
            acc ^= fold(a) ^ fold(b);
            i += 2 * threads;
        }
        if i < vecs {
            acc ^= fold(unsafe { gpu::load_v4_b32(input.add(4 * i as usize)) });
        }
        // The last `n_words % 4` words.
        if tid < n_words % 4 {
            acc ^= unsafe { input.add((vecs * 4 + tid) as usize).read() };
        }
        let w = warp_reduce(acc, |a, b| a ^ b);
        if gpu::lane_id() == 0 {
            unsafe { partials.add((tid / 32) as usize).write(w) };
        }
    }
}

/// The kernels of this module, for the host's loader.
pub const KERNEL_NAMES: &[&str] = &["stream_read_u32"];
