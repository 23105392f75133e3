//! NCCL as the [`Exchange`] of one process per GPU (the `nccl` feature): the same code path a
//! multi-host job takes. NCCL is loaded at run time like the driver (cudarc's bindings): the
//! library builds without it, and without `libnccl.so` on the loader's path the calls here
//! return [`Error::Collective`] naming it. The ranks share a [`NcclId`] made by one of them,
//! through a file or an environment variable, as `torch.distributed` does.

use std::sync::{Arc, Mutex};

use cudarc::driver::CudaStream;
use cudarc::nccl::{Comm, Id};

use super::Exchange;
use crate::error::{Error, Result};
use crate::runtime::Context;

/// The environment variable [`NcclId::from_env`] reads.
pub const ID_ENV: &str = "GPU_REDUCE_NCCL_ID";

fn loaded() -> Result<()> {
    // SAFETY: only tries to open the library under its usual names.
    if unsafe { cudarc::nccl::sys::is_culib_present() } {
        Ok(())
    } else {
        Err(Error::Collective(
            "NCCL could not be loaded (no libnccl.so on the loader's path; install NCCL, \
             e.g. the nvidia-nccl-cu12 wheel, and put its lib directory on \
             LD_LIBRARY_PATH with a libnccl.so link)"
                .into(),
        ))
    }
}

fn nccl_err(what: &str) -> impl FnOnce(cudarc::nccl::result::NcclError) -> Error + '_ {
    move |e| Error::Collective(format!("NCCL failed while {what}: {:?}", e.0))
}

/// A job's NCCL unique id: made by one rank ([`NcclId::new`]), handed to the others.
#[derive(Clone, Copy, Debug)]
pub struct NcclId(Id);

impl NcclId {
    /// A fresh id (`ncclGetUniqueId`).
    pub fn new() -> Result<Self> {
        loaded()?;
        Id::new()
            .map(NcclId)
            .map_err(nccl_err("making a unique id"))
    }
    /// The id as 256 hex digits (for a file or an environment variable).
    pub fn to_hex(&self) -> String {
        self.0
            .internal()
            .iter()
            .map(|&c| format!("{:02x}", c as u8))
            .collect()
    }
    /// The id from [`NcclId::to_hex`]'s text.
    pub fn from_hex(s: &str) -> Result<Self> {
        let s = s.trim();
        if s.len() != 256 || !s.is_ascii() {
            return Err(Error::MultiGpu(format!(
                "an NCCL id is 256 hex digits, not {} characters",
                s.len()
            )));
        }
        let mut internal = [0 as core::ffi::c_char; 128];
        for (i, c) in internal.iter_mut().enumerate() {
            let b = u8::from_str_radix(&s[2 * i..2 * i + 2], 16)
                .map_err(|_| Error::MultiGpu(format!("the NCCL id is not hex: {s:.16}…")))?;
            *c = b as core::ffi::c_char;
        }
        Ok(NcclId(Id::uninit(internal)))
    }
    /// The id in [`ID_ENV`].
    pub fn from_env() -> Result<Self> {
        let v = std::env::var(ID_ENV)
            .map_err(|_| Error::MultiGpu(format!("{ID_ENV} is not set (rank 0 makes the id)")))?;
        Self::from_hex(&v)
    }
}

/// An NCCL communicator as the exchange of one rank. Messages go through the device:
/// their lengths first, then the messages padded to the longest (`ncclAllGather` needs
/// equal counts).
pub struct NcclExchange {
    comm: Mutex<Comm>,
    stream: Arc<CudaStream>,
    world: usize,
}

// SAFETY: the communicator is used by one thread at a time (the mutex), as NCCL requires.
unsafe impl Send for NcclExchange {}
// SAFETY: as above.
unsafe impl Sync for NcclExchange {}

impl NcclExchange {
    /// Rank `rank` of `world`, on `ctx`'s GPU and stream (`ncclCommInitRank`: blocks until
    /// every rank has joined).
    pub fn new(ctx: &Context, rank: usize, world: usize, id: NcclId) -> Result<Self> {
        loaded()?;
        let Some((_, stream)) = ctx.cuda() else {
            return Err(Error::UnsupportedOnBackend {
                op: "NCCL (it needs a CUDA context)",
                backend: crate::BackendKind::Sim,
            });
        };
        let comm = Comm::from_rank(stream.clone(), rank, world, id.0)
            .map_err(nccl_err("joining the communicator"))?;
        Ok(Self {
            comm: Mutex::new(comm),
            stream: stream.clone(),
            world,
        })
    }

    fn gather(&self, comm: &Comm, mine: &[u32]) -> Result<Vec<u32>> {
        let d = |e| Error::driver("moving an NCCL message", 0)(e);
        let send = self.stream.clone_htod(mine).map_err(d)?;
        let mut recv = self
            .stream
            .alloc_zeros::<u32>(mine.len() * self.world)
            .map_err(d)?;
        comm.all_gather(&send, &mut recv)
            .map_err(nccl_err("gathering"))?;
        self.stream.clone_dtoh(&recv).map_err(d)
    }
}

impl Exchange for NcclExchange {
    fn world(&self) -> usize {
        self.world
    }
    fn all_gather(&self, mut local: Vec<Vec<u32>>) -> Result<Vec<Vec<u32>>> {
        if local.len() != 1 {
            return Err(Error::MultiGpu(format!(
                "an NCCL rank holds one rank, not {}",
                local.len()
            )));
        }
        let mine = local.pop().unwrap_or_default();
        let comm = self.comm.lock().unwrap_or_else(|p| p.into_inner());
        let lens = self.gather(&comm, &[mine.len() as u32])?;
        let longest = lens.iter().copied().max().unwrap_or(0) as usize;
        let mut padded = mine;
        padded.resize(longest.max(1), 0);
        let all = self.gather(&comm, &padded)?;
        Ok(lens
            .iter()
            .enumerate()
            .map(|(r, &l)| all[r * longest.max(1)..][..l as usize].to_vec())
            .collect())
    }
}
