//! The CPU SIMT simulator: runs the kernels' unchanged source on the host.
//!
//! Each GPU thread of a block is a stackful coroutine (`corosensei`); a block's threads run on
//! one OS thread and switch only at barriers and warp collectives, so the semantics hold by
//! construction: no thread passes `sync_threads` before every live thread of its block reached
//! it, and a shuffle completes only when every lane of its mask has arrived. Blocks run in
//! parallel on a few OS threads (real atomics, real fences), taking block indices in increasing
//! order, as a GPU's block scheduler roughly does.
//!
//! Faults end the launch with a [`SimError`] naming the kernel, block and thread: a thread that
//! returns while others wait at a barrier, a shared-memory index out of bounds, a misaligned
//! vector load, a panic or `trap` in kernel code, a launch beyond the device limits, a deadlock.

use std::boxed::Box;
use std::cell::{Cell, RefCell};
use std::format;
use std::string::{String, ToString};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::vec::Vec;

use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};

pub mod prims;

/// Device limits the simulator enforces: sm_90's. A block may have 48 KiB of shared memory
/// (static + dynamic), the most a launch gets without raising the kernel's
/// `MAX_DYNAMIC_SHARED_SIZE_BYTES` (227 KiB on an H100/H200), which the host never does (a
/// larger launch fails on a GPU: `CUDA_ERROR_INVALID_VALUE`); static arrays alone stay within
/// 48 KiB, the most a module may declare.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_threads_per_block: u32,
    pub max_block_dim: (u32, u32, u32),
    pub max_grid_dim: (u32, u32, u32),
    /// Static + dynamic shared memory per block.
    pub max_shared_bytes: usize,
    /// Static shared memory per block.
    pub max_static_shared_bytes: usize,
}

pub const DEFAULT_LIMITS: Limits = Limits {
    max_threads_per_block: 1024,
    max_block_dim: (1024, 1024, 64),
    max_grid_dim: (i32::MAX as u32, 65535, 65535),
    max_shared_bytes: 48 * 1024,
    max_static_shared_bytes: 48 * 1024,
};

/// A launch's shape, as `cuLaunchKernel` takes it.
#[derive(Debug, Clone, Copy)]
pub struct LaunchConfig {
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
    pub dynamic_shared_bytes: u32,
}

/// What went wrong in a simulated launch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FaultKind {
    /// The launch exceeds a device limit (block size, grid size, shared memory).
    InvalidLaunch,
    /// A thread returned while others of its block wait at a barrier.
    BarrierDivergence,
    /// A shared-memory index out of bounds.
    SharedOutOfBounds,
    /// A misaligned vector or atomic access.
    Misaligned,
    /// No thread can make progress (e.g. a shuffle naming a lane that never arrives).
    Deadlock,
    /// A panic or `trap` in kernel code.
    Trap,
}

/// A simulated launch that failed, with where it failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimError {
    pub kernel: String,
    pub block: Option<(u32, u32, u32)>,
    pub thread: Option<(u32, u32, u32)>,
    pub kind: FaultKind,
    pub message: String,
}

impl core::fmt::Display for SimError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "simulated kernel `{}`", self.kernel)?;
        if let Some((x, y, z)) = self.block {
            write!(f, ", block ({x},{y},{z})")?;
        }
        if let Some((x, y, z)) = self.thread {
            write!(f, ", thread ({x},{y},{z})")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for SimError {}

/// What a thread hands the scheduler when it suspends.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Event {
    Barrier,
    Warp(WarpReq),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WarpOp {
    ShflDown,
    ShflUp,
    ShflBfly,
    ShflIdx,
    Ballot,
    All,
    Any,
    ReduxMin,
    ReduxMax,
    Sync,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct WarpReq {
    pub op: WarpOp,
    pub mask: u32,
    pub value: u32,
    pub arg: u32,
    pub c: u32,
}

/// A fault raised inside kernel code; carried by a panic to the scheduler.
pub(crate) struct Fault {
    pub kind: FaultKind,
    pub message: String,
}

/// Raise a fault from inside a simulated thread.
pub(crate) fn fault(kind: FaultKind, message: String) -> ! {
    std::panic::panic_any(Fault { kind, message })
}

type Yld = Yielder<u32, Event>;

/// Per-thread state, read by the primitives through `CURRENT`.
pub(crate) struct ThreadState {
    pub tid: (u32, u32, u32),
    pub linear: u32,
    pub block_idx: (u32, u32, u32),
    pub block_dim: (u32, u32, u32),
    pub grid_dim: (u32, u32, u32),
    pub yielder: Cell<*const Yld>,
    pub block: *const BlockState,
    /// This thread's asynchronous copies (`cp_async_16`), applied when their group retires.
    pub cp_async: RefCell<CpAsync>,
}

/// One 16-byte asynchronous copy: destination in shared memory, and the bytes read at issue.
pub(crate) type PendingCopy = (*mut [u32; 4], [u32; 4]);

/// A thread's asynchronous copies: the open (uncommitted) group and the committed groups,
/// oldest first. Destinations are written only when their group retires, so a kernel that
/// reads shared memory before waiting sees the poison, as it could on the GPU.
#[derive(Default)]
pub(crate) struct CpAsync {
    pub open: Vec<PendingCopy>,
    pub groups: std::collections::VecDeque<Vec<PendingCopy>>,
}

/// Per-block state: its shared memory.
pub(crate) struct BlockState {
    /// Static shared arrays by name: (name, byte offset).
    pub statics: RefCell<Vec<(&'static str, usize)>>,
    pub static_used: Cell<usize>,
    pub static_arena: Box<[u128]>,
    pub dynamic: Box<[u128]>,
    pub dynamic_bytes: usize,
    pub limit: usize,
    pub static_limit: usize,
}

std::thread_local! {
    pub(crate) static CURRENT: Cell<*const ThreadState> = const { Cell::new(core::ptr::null()) };
    static IN_SIM: Cell<bool> = const { Cell::new(false) };
}

/// The running simulated thread's state. Calling a primitive outside a launch is a bug in the
/// caller, reported as such.
pub(crate) fn current() -> &'static ThreadState {
    let p = CURRENT.with(Cell::get);
    assert!(
        !p.is_null(),
        "a gpu:: primitive was called outside a simulated launch"
    );
    // SAFETY: set by the scheduler to a ThreadState that outlives the resume.
    unsafe { &*p }
}

/// Bounds check of [`SharedArray`](super::SharedArray) accesses.
#[inline]
pub fn check_shared_index(i: usize, len: usize) {
    if i >= len {
        fault(
            FaultKind::SharedOutOfBounds,
            format!("shared-memory access out of bounds: index {i} of an array of {len}"),
        );
    }
}

/// Suspend the current thread with `ev`; returns the scheduler's answer.
pub(crate) fn suspend(ev: Event) -> u32 {
    let t = current();
    let y = t.yielder.get();
    // SAFETY: the yielder of the coroutine we are running on, set at its start.
    unsafe { (*y).suspend(ev) }
}

/// Stack size of one simulated thread (debug builds of kernel code need room).
const STACK_BYTES: usize = 256 * 1024;

/// Stacks kept for later launches (enough for two full 1024-thread blocks).
const MAX_POOLED_STACKS: usize = 2048;

static STACK_POOL: Mutex<Vec<DefaultStack>> = Mutex::new(Vec::new());

/// Fill for fresh shared memory: uninitialised on a GPU, so never zeros here either.
const POISON: u128 = 0xCDCD_CDCD_CDCD_CDCD_CDCD_CDCD_CDCD_CDCD;

fn install_quiet_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            // Faults inside simulated threads become SimErrors; don't print them as panics.
            if !IN_SIM.with(Cell::get) {
                prev(info)
            }
        }));
    });
}

fn validate(kernel: &str, cfg: &LaunchConfig, lim: &Limits) -> Result<(), SimError> {
    let err = |m: String| SimError {
        kernel: kernel.to_string(),
        block: None,
        thread: None,
        kind: FaultKind::InvalidLaunch,
        message: m,
    };
    let (bx, by, bz) = cfg.block;
    let (gx, gy, gz) = cfg.grid;
    let threads = bx as u64 * by as u64 * bz as u64;
    if threads == 0 || gx == 0 || gy == 0 || gz == 0 {
        return Err(err(format!(
            "empty launch: grid {:?}, block {:?}",
            cfg.grid, cfg.block
        )));
    }
    if threads > lim.max_threads_per_block as u64 {
        return Err(err(format!(
            "block of {threads} threads exceeds the device limit of {}",
            lim.max_threads_per_block
        )));
    }
    let (mx, my, mz) = lim.max_block_dim;
    if bx > mx || by > my || bz > mz {
        return Err(err(format!(
            "block {:?} exceeds the limits {:?}",
            cfg.block, lim.max_block_dim
        )));
    }
    let (mx, my, mz) = lim.max_grid_dim;
    if gx > mx || gy > my || gz > mz {
        return Err(err(format!(
            "grid {:?} exceeds the limits {:?}",
            cfg.grid, lim.max_grid_dim
        )));
    }
    if cfg.dynamic_shared_bytes as usize > lim.max_shared_bytes {
        return Err(err(format!(
            "{} bytes of dynamic shared memory exceed the {} bytes a block may have",
            cfg.dynamic_shared_bytes, lim.max_shared_bytes
        )));
    }
    Ok(())
}

/// Run `kernel_fn` (a kernel call with its arguments bound) on every thread of every block of
/// the launch, with the default device limits.
pub fn launch<F: Fn() + Sync>(
    kernel: &str,
    cfg: &LaunchConfig,
    kernel_fn: F,
) -> Result<(), SimError> {
    launch_with_limits(kernel, cfg, &DEFAULT_LIMITS, kernel_fn)
}

/// [`launch`] with explicit limits.
pub fn launch_with_limits<F: Fn() + Sync>(
    kernel: &str,
    cfg: &LaunchConfig,
    lim: &Limits,
    kernel_fn: F,
) -> Result<(), SimError> {
    validate(kernel, cfg, lim)?;
    install_quiet_panic_hook();
    let (gx, gy, gz) = cfg.grid;
    let blocks = gx as u64 * gy as u64 * gz as u64;
    let workers = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(blocks as usize)
        .max(1);
    let next = AtomicU64::new(0);
    let abort = AtomicBool::new(false);
    let first_error: Mutex<Option<(u64, SimError)>> = Mutex::new(None);

    let work = || {
        // Thread stacks are mmapped; reuse them across blocks and launches.
        let threads = (cfg.block.0 * cfg.block.1 * cfg.block.2) as usize;
        let mut stacks: Vec<DefaultStack> = {
            let mut pool = STACK_POOL.lock().unwrap_or_else(|p| p.into_inner());
            let keep = pool.len().saturating_sub(threads);
            pool.split_off(keep)
        };
        loop {
            if abort.load(Ordering::Relaxed) {
                break;
            }
            let b = next.fetch_add(1, Ordering::Relaxed);
            if b >= blocks {
                break;
            }
            let idx = (
                (b % gx as u64) as u32,
                ((b / gx as u64) % gy as u64) as u32,
                (b / (gx as u64 * gy as u64)) as u32,
            );
            if let Err(e) = run_block(kernel, idx, cfg, lim, &kernel_fn, &mut stacks) {
                abort.store(true, Ordering::Relaxed);
                let mut slot = first_error.lock().unwrap_or_else(|p| p.into_inner());
                // Report the lowest failing block, so the message does not depend on timing.
                if slot.as_ref().is_none_or(|(ob, _)| b < *ob) {
                    *slot = Some((b, e));
                }
            }
        }
        let mut pool = STACK_POOL.lock().unwrap_or_else(|p| p.into_inner());
        let room = MAX_POOLED_STACKS.saturating_sub(pool.len());
        pool.extend(stacks.into_iter().take(room));
    };
    if workers == 1 {
        work();
    } else {
        std::thread::scope(|s| {
            for _ in 0..workers {
                s.spawn(work);
            }
        });
    }
    match first_error.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some((_, e)) => Err(e),
        None => Ok(()),
    }
}

#[derive(Clone, Copy)]
enum State {
    Ready(u32),
    AtBarrier,
    AtWarp(WarpReq),
    Done,
}

fn panic_message(payload: Box<dyn core::any::Any + Send>) -> (FaultKind, String) {
    if let Some(f) = payload.downcast_ref::<Fault>() {
        return (f.kind.clone(), f.message.clone());
    }
    let msg = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic".to_string());
    (FaultKind::Trap, format!("kernel code panicked: {msg}"))
}

fn run_block<F: Fn() + Sync>(
    kernel: &str,
    block_idx: (u32, u32, u32),
    cfg: &LaunchConfig,
    lim: &Limits,
    kernel_fn: &F,
    stacks: &mut Vec<DefaultStack>,
) -> Result<(), SimError> {
    let (bx, by, bz) = cfg.block;
    let n = (bx * by * bz) as usize;
    let words = |bytes: usize| bytes.div_ceil(16);
    let block = BlockState {
        statics: RefCell::new(Vec::new()),
        static_used: Cell::new(0),
        static_arena: std::vec![POISON; words(lim.max_static_shared_bytes)].into_boxed_slice(),
        dynamic: std::vec![POISON; words(cfg.dynamic_shared_bytes as usize)].into_boxed_slice(),
        dynamic_bytes: cfg.dynamic_shared_bytes as usize,
        limit: lim.max_shared_bytes,
        static_limit: lim.max_static_shared_bytes,
    };
    let threads: Vec<ThreadState> = (0..n as u32)
        .map(|i| ThreadState {
            tid: (i % bx, (i / bx) % by, i / (bx * by)),
            linear: i,
            block_idx,
            block_dim: cfg.block,
            grid_dim: cfg.grid,
            yielder: Cell::new(core::ptr::null()),
            block: &block,
            cp_async: RefCell::new(CpAsync::default()),
        })
        .collect();
    let err = |t: Option<usize>, kind: FaultKind, message: String| SimError {
        kernel: kernel.to_string(),
        block: Some(block_idx),
        thread: t.map(|i| threads[i].tid),
        kind,
        message,
    };

    let mut coros: Vec<Coroutine<u32, Event, (), DefaultStack>> = Vec::with_capacity(n);
    for t in &threads {
        let stack = match stacks.pop() {
            Some(s) => s,
            None => DefaultStack::new(STACK_BYTES).map_err(|e| {
                err(
                    None,
                    FaultKind::InvalidLaunch,
                    format!("cannot allocate a thread stack: {e}"),
                )
            })?,
        };
        let ts: *const ThreadState = t;
        let f: *const F = kernel_fn;
        // SAFETY: `threads` and `kernel_fn` outlive every coroutine: all are finished or
        // dropped (force-unwound) before this function returns.
        let co = unsafe {
            Coroutine::with_stack_unchecked(stack, move |y: &Yld, _first: u32| {
                (*ts).yielder.set(y);
                (*f)();
            })
        };
        coros.push(co);
    }

    let mut state = std::vec![State::Ready(0); n];
    let result = (|| {
        IN_SIM.with(|c| c.set(true));
        loop {
            let mut progressed = false;
            for i in 0..n {
                let State::Ready(v) = state[i] else { continue };
                progressed = true;
                CURRENT.with(|c| c.set(&threads[i]));
                let r =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| coros[i].resume(v)));
                CURRENT.with(|c| c.set(core::ptr::null()));
                state[i] = match r {
                    Ok(CoroutineResult::Yield(Event::Barrier)) => State::AtBarrier,
                    Ok(CoroutineResult::Yield(Event::Warp(w))) => State::AtWarp(w),
                    Ok(CoroutineResult::Return(())) => {
                        if let Some(w) = state.iter().position(|s| matches!(s, State::AtBarrier)) {
                            return Err(err(
                                Some(i),
                                FaultKind::BarrierDivergence,
                                format!(
                                    "thread returned while thread {:?} (and maybe others) waits at a barrier",
                                    threads[w].tid
                                ),
                            ));
                        }
                        State::Done
                    }
                    Err(payload) => {
                        let (kind, msg) = panic_message(payload);
                        return Err(err(Some(i), kind, msg));
                    }
                };
            }
            // Warp collectives whose lanes have all arrived.
            for w0 in (0..n).step_by(32) {
                let lanes = (n - w0).min(32);
                let Some(first) = (w0..w0 + lanes).find_map(|i| match state[i] {
                    State::AtWarp(r) => Some(r),
                    _ => None,
                }) else {
                    continue;
                };
                let mask = first.mask;
                let mut ready = true;
                for l in 0..32 {
                    if mask & (1 << l) == 0 {
                        continue;
                    }
                    if l >= lanes {
                        return Err(err(
                            Some(w0),
                            FaultKind::Deadlock,
                            format!(
                                "warp collective with mask {mask:#010x} names lane {l}, which does not exist in a block of {n} threads"
                            ),
                        ));
                    }
                    match state[w0 + l] {
                        State::AtWarp(r) if r.op == first.op && r.mask == mask => {}
                        State::AtWarp(r) => {
                            return Err(err(
                                Some(w0 + l),
                                FaultKind::Deadlock,
                                format!(
                                    "lanes of one warp met different collectives ({:?} mask {:#x} vs {:?} mask {mask:#x})",
                                    r.op, r.mask, first.op
                                ),
                            ));
                        }
                        State::Done => {
                            return Err(err(
                                Some(w0 + l),
                                FaultKind::BarrierDivergence,
                                format!(
                                    "lane {l} named in a warp collective's mask {mask:#010x} has returned"
                                ),
                            ));
                        }
                        _ => ready = false,
                    }
                }
                if ready {
                    let reqs: [Option<WarpReq>; 32] = core::array::from_fn(|l| {
                        if l < lanes && mask & (1 << l) != 0 {
                            if let State::AtWarp(r) = state[w0 + l] {
                                Some(r)
                            } else {
                                None
                            }
                        } else {
                            None
                        }
                    });
                    for l in 0..lanes {
                        if let Some(r) = reqs[l] {
                            let out = prims::resolve_warp(&reqs, l as u32, &r)
                                .map_err(|m| err(Some(w0 + l), FaultKind::Deadlock, m))?;
                            state[w0 + l] = State::Ready(out);
                        }
                    }
                    progressed = true;
                }
            }
            let live = state.iter().filter(|s| !matches!(s, State::Done)).count();
            if live == 0 {
                return Ok(());
            }
            let at_barrier = state
                .iter()
                .filter(|s| matches!(s, State::AtBarrier))
                .count();
            if at_barrier == live {
                if live < n {
                    let gone = state
                        .iter()
                        .position(|s| matches!(s, State::Done))
                        .unwrap_or(0);
                    return Err(err(
                        Some(gone),
                        FaultKind::BarrierDivergence,
                        format!(
                            "thread returned while {at_barrier} thread(s) of its block wait at a barrier"
                        ),
                    ));
                }
                for s in state.iter_mut() {
                    *s = State::Ready(0);
                }
                progressed = true;
            }
            if !progressed {
                let stuck = state
                    .iter()
                    .position(|s| !matches!(s, State::Done))
                    .unwrap_or(0);
                return Err(err(
                    Some(stuck),
                    FaultKind::Deadlock,
                    format!(
                        "no thread can make progress ({at_barrier} at a barrier, {} in warp collectives)",
                        state
                            .iter()
                            .filter(|s| matches!(s, State::AtWarp(_)))
                            .count()
                    ),
                ));
            }
        }
    })();
    IN_SIM.with(|c| c.set(false));
    CURRENT.with(|c| c.set(core::ptr::null()));
    if result.is_ok() {
        stacks.extend(coros.into_iter().map(|c| c.into_stack()));
    } else {
        // Unwind the suspended threads (their frames run their destructors), quietly.
        IN_SIM.with(|c| c.set(true));
        for (i, mut c) in coros.into_iter().enumerate() {
            if c.started() && !c.done() {
                CURRENT.with(|cur| cur.set(&threads[i]));
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| c.force_unwind()));
            }
            drop(c);
        }
        CURRENT.with(|c| c.set(core::ptr::null()));
        IN_SIM.with(|c| c.set(false));
    }
    result
}

#[cfg(test)]
mod tests;
