//! [`Pending`]: a value-returning reduction in flight, and its waits.

use super::ACC_WORDS;
use crate::error::{Error, Result};
use crate::runtime::mapped::MappedResult;
use crate::runtime::{Backend, Context, DeviceBuffer};

/// A value-returning reduction in flight ([`Context::reduce_async`] and friends): the kernel
/// is queued; [`Pending::wait`] returns its value. Dropping it without waiting is fine.
#[must_use = "a pending reduction does nothing until waited on"]
pub struct Pending<'c, R> {
    pub(super) ctx: &'c Context,
    pub(super) state: PendingState,
    pub(super) kernel: &'static str,
    pub(super) finish: Box<dyn FnOnce([u64; ACC_WORDS]) -> Result<R> + Send + 'c>,
}

pub(super) enum PendingState {
    /// On a GPU: the mapped slot the kernel writes, and the flag value it raises.
    Cuda(Option<MappedResult>, u32),
    /// The simulator ran the kernel synchronously.
    Done([u64; ACC_WORDS]),
    /// Queued on the stream with its result in this device buffer, read back at the wait; on
    /// a GPU an event recorded after the kernel says whether it has run.
    Device(DeviceBuffer<u64>, Option<cudarc::driver::CudaEvent>),
}

impl<R> std::fmt::Debug for Pending<'_, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Pending({})", self.kernel)
    }
}

impl<R> Pending<'_, R> {
    /// Whether the result has arrived (never blocks).
    pub fn is_ready(&self) -> bool {
        match &self.state {
            PendingState::Cuda(Some(slot), seq) => slot.raised(*seq),
            PendingState::Device(_, Some(event)) => event.is_complete(),
            _ => true,
        }
    }

    /// Wait for the result: spins briefly, then sleeps (in the driver for large inputs), so a
    /// long wait does not keep a CPU core busy. A kernel fault is reported here.
    pub fn wait(mut self) -> Result<R> {
        let kernel = self.kernel;
        // An asynchronous kernel fault surfaces at the next synchronising call.
        let launch_error = |e| match e {
            Error::Driver { source, .. } => Error::Launch {
                kernel: kernel.into(),
                source,
            },
            e => e,
        };
        let words = match &mut self.state {
            PendingState::Done(w) => *w,
            PendingState::Device(buf, _) => {
                let v = self.ctx.dtoh(&*buf).map_err(launch_error)?;
                [v[0], v[1]]
            }
            PendingState::Cuda(slot, seq) => {
                let Backend::Cuda(c) = &self.ctx.backend else {
                    unreachable!("a CUDA pending value belongs to a CUDA context")
                };
                let r = slot
                    .as_mut()
                    .expect("taken only by wait and drop")
                    .wait(*seq, &c.stream);
                r.map_err(launch_error)?
            }
        };
        let finish = std::mem::replace(&mut self.finish, Box::new(|_| unreachable!()));
        finish(words)
    }
}

impl<R> Drop for Pending<'_, R> {
    fn drop(&mut self) {
        // The slot goes back to the pool: a later reduction on the same stream runs after this
        // one, and waits for a new flag value, so the late write cannot be mistaken for its own.
        if let (PendingState::Cuda(slot, _), Backend::Cuda(c)) =
            (&mut self.state, &self.ctx.backend)
            && let Some(slot) = slot.take()
        {
            c.results
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(slot);
        }
    }
}

impl Context {
    /// A pending value whose kernel (`kernel`, already queued on this context's stream) writes
    /// its result to `buf` (at least [`ACC_WORDS`] words), converted by `finish` at the wait.
    /// For the families whose kernels raise no host flag (reduce by key's run count).
    pub(crate) fn pending_on_device<'c, R>(
        &'c self,
        buf: DeviceBuffer<u64>,
        kernel: &'static str,
        finish: impl FnOnce([u64; ACC_WORDS]) -> Result<R> + Send + 'c,
    ) -> Result<Pending<'c, R>> {
        let event = match &self.backend {
            Backend::Cuda(c) => {
                let e = c
                    .ctx
                    .new_event(None)
                    .map_err(Error::driver("creating an event", 0))?;
                e.record(&c.stream)
                    .map_err(Error::driver("recording an event", 0))?;
                Some(e)
            }
            Backend::Sim => None,
        };
        Ok(Pending {
            ctx: self,
            state: PendingState::Device(buf, event),
            kernel,
            finish: Box::new(finish),
        })
    }

    /// A pending value known without a launch (an empty input's).
    pub(crate) fn pending_ready<'c, R>(
        &'c self,
        kernel: &'static str,
        value: Result<R>,
    ) -> Pending<'c, R>
    where
        R: Send + 'c,
    {
        Pending {
            ctx: self,
            state: PendingState::Done([0; ACC_WORDS]),
            kernel,
            finish: Box::new(move |_| value),
        }
    }
}
