//! Moving small host-side messages between ranks: the [`Exchange`] trait, the all-local one
//! and [`ThreadExchange`] for ranks that are threads of one process.

use std::sync::{Arc, Barrier, Mutex};

use kernels::gpu::ShflValue;

use crate::error::{Error, Result, plural};

/// Moves small host-side messages between the ranks of a job.
pub trait Exchange: Send + Sync {
    /// The number of ranks of the job.
    fn world(&self) -> usize;
    /// Every rank passes one message per rank it holds (in rank order); every rank gets every
    /// rank's message, in rank order. Messages may differ in length.
    fn all_gather(&self, local: Vec<Vec<u32>>) -> Result<Vec<Vec<u32>>>;
}

/// The exchange of a process that holds every rank: nothing to move.
pub(super) struct AllLocal(pub(super) usize);

impl Exchange for AllLocal {
    fn world(&self) -> usize {
        self.0
    }
    fn all_gather(&self, local: Vec<Vec<u32>>) -> Result<Vec<Vec<u32>>> {
        Ok(local)
    }
}

/// Ranks that are threads of one process, one rank each: an all-gather through shared memory
/// and a barrier (the fake communicator of the tests; also usable with simulated devices).
pub struct ThreadExchange {
    rank: usize,
    world: usize,
    shared: Arc<ThreadShared>,
}

struct ThreadShared {
    slots: Mutex<Vec<Vec<u32>>>,
    barrier: Barrier,
}

impl ThreadExchange {
    /// `world` connected exchanges, the `r`-th for rank `r`.
    pub fn group(world: usize) -> Vec<ThreadExchange> {
        let shared = Arc::new(ThreadShared {
            slots: Mutex::new(vec![Vec::new(); world]),
            barrier: Barrier::new(world),
        });
        (0..world)
            .map(|rank| ThreadExchange {
                rank,
                world,
                shared: shared.clone(),
            })
            .collect()
    }
}

impl Exchange for ThreadExchange {
    fn world(&self) -> usize {
        self.world
    }
    fn all_gather(&self, mut local: Vec<Vec<u32>>) -> Result<Vec<Vec<u32>>> {
        if local.len() != 1 {
            return Err(Error::MultiGpu(format!(
                "a thread rank holds one rank, not {}",
                local.len()
            )));
        }
        self.shared.slots.lock().unwrap_or_else(|p| p.into_inner())[self.rank] =
            local.pop().unwrap_or_default();
        self.shared.barrier.wait();
        let all = self
            .shared
            .slots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        // Nobody overwrites a slot before everyone has read them all.
        self.shared.barrier.wait();
        Ok(all)
    }
}

/// A value as 32-bit words (its shuffle encoding: every bit kept).
pub(super) fn to_words<A: ShflValue>(values: &[A]) -> Vec<u32> {
    values
        .iter()
        .flat_map(|v| v.to_words().into_iter().take(A::WORDS))
        .collect()
}

pub(super) fn from_words<A: ShflValue>(words: &[u32]) -> Result<Vec<A>> {
    if !words.len().is_multiple_of(A::WORDS) {
        return Err(Error::Collective(format!(
            "a message of {} does not hold whole values of {}",
            plural(words.len() as u64, "word"),
            plural(A::WORDS as u64, "word")
        )));
    }
    Ok(words
        .chunks(A::WORDS)
        .map(|c| {
            let mut w = [0u32; 4];
            w[..c.len()].copy_from_slice(c);
            A::from_words(w)
        })
        .collect())
}
