//! Runs the hardware-layer conformance kernels (`tool_kernels::testing`) on either backend, so the
//! same checks run on the simulator and on the GPU, and their answers can be compared.

use cudarc::driver::PushKernelArg;

use gpu_reduce::{Context, LaunchShape};

use crate::TOOL_KERNELS;
use gpu_reduce::{Error, Result};

/// Which shuffle `shfl` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shfl {
    Down = 0,
    Up = 1,
    Xor = 2,
    Idx = 3,
}

/// How `shfl64` moves the 64-bit value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum As64 {
    U64 = 0,
    F64 = 1,
    I64 = 2,
}

fn check_threads(threads: u32) -> Result<()> {
    if threads == 0 || !threads.is_multiple_of(32) || threads > 1024 {
        return Err(Error::external(format!(
            "conformance kernels take whole warps (32..=1024 threads), got {threads}"
        )));
    }
    Ok(())
}

/// The conformance kernels, run on a context's backend.
pub trait Conformance {
    /// One block of `threads`; thread `t` gets `shfl_<op>(lane, arg, width)`.
    fn conformance_shfl(&self, op: Shfl, arg: u32, width: u32, threads: u32) -> Result<Vec<u32>>;

    /// 64-bit `shfl_down(value, arg, 32)` of `input` (whole warps), moved as `kind`.
    fn conformance_shfl64(&self, input: &[u64], kind: As64, arg: u32) -> Result<Vec<u64>>;

    /// Ballot, any, all of `pred` (whole warps): three words per thread.
    fn conformance_vote(&self, pred: &[u32]) -> Result<Vec<u32>>;

    /// `rounds` of store / barrier / read-neighbour / barrier in dynamic shared memory, over
    /// `blocks` blocks of `threads` (any size up to 1024).
    fn conformance_barrier_rotate(
        &self,
        blocks: u32,
        threads: u32,
        rounds: u32,
    ) -> Result<Vec<u32>>;

    /// One warp's look-back for `tile` over prepared status words (`epoch << 2 | status`),
    /// aggregates and prefixes (`(head, value)` pairs under the segmented sum). Returns the
    /// exclusive prefix found. Every predecessor of `tile` must be published (else it spins).
    fn conformance_lookback(
        &self,
        flags: &[u32],
        aggregates: &[(u32, u32)],
        prefixes: &[(u32, u32)],
        tile: u64,
        epoch: u32,
    ) -> Result<(u32, u32)>;
}

impl Conformance for Context {
    fn conformance_shfl(&self, op: Shfl, arg: u32, width: u32, threads: u32) -> Result<Vec<u32>> {
        check_threads(threads)?;
        if !width.is_power_of_two() || width > 32 {
            return Err(Error::external(format!(
                "shuffle width {width} is not a power of two in 1..=32"
            )));
        }
        let out = self.alloc_zeros::<u32>(threads as usize)?;
        let p = self.device_addr(&out)?;
        let opc = op as u32;
        // SAFETY: test_shfl's parameters; `out` holds one word per thread.
        unsafe {
            self.launch(
                &TOOL_KERNELS,
                "test_shfl",
                LaunchShape::linear(1, threads, 0),
                |b| {
                    b.arg(&p).arg(&opc).arg(&arg).arg(&width);
                },
                || tool_kernels::testing::test_shfl(p as *mut u32, opc, arg, width),
            )
        }?;
        self.dtoh(&out)
    }

    fn conformance_shfl64(&self, input: &[u64], kind: As64, arg: u32) -> Result<Vec<u64>> {
        let threads = input.len() as u32;
        check_threads(threads)?;
        let inp = self.htod(input)?;
        let out = self.alloc_zeros::<u64>(input.len())?;
        let (pi, po) = (self.device_addr(&inp)?, self.device_addr(&out)?);
        let k = kind as u32;
        // SAFETY: test_shfl64's parameters; one word in and out per thread.
        unsafe {
            self.launch(
                &TOOL_KERNELS,
                "test_shfl64",
                LaunchShape::linear(1, threads, 0),
                |b| {
                    b.arg(&pi).arg(&po).arg(&k).arg(&arg);
                },
                || tool_kernels::testing::test_shfl64(pi as *const u64, po as *mut u64, k, arg),
            )
        }?;
        self.dtoh(&out)
    }

    fn conformance_vote(&self, pred: &[u32]) -> Result<Vec<u32>> {
        let threads = pred.len() as u32;
        check_threads(threads)?;
        let inp = self.htod(pred)?;
        let out = self.alloc_zeros::<u32>(3 * pred.len())?;
        let (pi, po) = (self.device_addr(&inp)?, self.device_addr(&out)?);
        // SAFETY: test_vote's parameters; one word in, three out per thread.
        unsafe {
            self.launch(
                &TOOL_KERNELS,
                "test_vote",
                LaunchShape::linear(1, threads, 0),
                |b| {
                    b.arg(&pi).arg(&po);
                },
                || tool_kernels::testing::test_vote(pi as *const u32, po as *mut u32),
            )
        }?;
        self.dtoh(&out)
    }

    fn conformance_barrier_rotate(
        &self,
        blocks: u32,
        threads: u32,
        rounds: u32,
    ) -> Result<Vec<u32>> {
        if threads == 0 || threads > 1024 || blocks == 0 {
            return Err(Error::external(format!(
                "bad shape: {blocks} blocks of {threads}"
            )));
        }
        let out = self.alloc_zeros::<u32>((blocks * threads) as usize)?;
        let po = self.device_addr(&out)?;
        // SAFETY: test_barrier_rotate's parameters; one word per thread.
        unsafe {
            self.launch(
                &TOOL_KERNELS,
                "test_barrier_rotate",
                LaunchShape::linear(blocks, threads, 4 * threads),
                |b| {
                    b.arg(&po).arg(&rounds);
                },
                || tool_kernels::testing::test_barrier_rotate(po as *mut u32, rounds),
            )
        }?;
        self.dtoh(&out)
    }

    fn conformance_lookback(
        &self,
        flags: &[u32],
        aggregates: &[(u32, u32)],
        prefixes: &[(u32, u32)],
        tile: u64,
        epoch: u32,
    ) -> Result<(u32, u32)> {
        if tile == 0 || tile as usize > flags.len() {
            return Err(Error::external(format!(
                "look-back of tile {tile} over {} tiles",
                flags.len()
            )));
        }
        let words =
            |v: &[(u32, u32)]| -> Vec<u32> { v.iter().flat_map(|&(h, x)| [h, x]).collect() };
        let f = self.htod(flags)?;
        let a = self.htod(&words(aggregates))?;
        let p = self.htod(&words(prefixes))?;
        let out = self.alloc_zeros::<u32>(2)?;
        let addr = |b| self.device_addr(b);
        let (pf, pa, pp, po) = (addr(&f)?, addr(&a)?, addr(&p)?, addr(&out)?);
        // SAFETY: test_lookback's parameters; every predecessor of `tile` is published.
        unsafe {
            self.launch(
                &TOOL_KERNELS,
                "test_lookback",
                LaunchShape::linear(1, 32, 0),
                |b| {
                    b.arg(&pf).arg(&pa).arg(&pp).arg(&tile).arg(&epoch).arg(&po);
                },
                || {
                    tool_kernels::testing::test_lookback(
                        pf as *mut u32,
                        pa as *mut _,
                        pp as *mut _,
                        tile,
                        epoch,
                        po as *mut _,
                    )
                },
            )
        }?;
        let o = self.dtoh(&out)?;
        Ok((o[0], o[1]))
    }
}
