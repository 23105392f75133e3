//! Reduce by key (CUB's `DeviceReduce::ReduceByKey`): runs of equal consecutive keys become
//! one unique key and one aggregate each, in one pass (run counts through the scan's decoupled
//! look-back, the values carried between tiles in a fixed order: `kernels::reduce::by_key`).
//!
//! | call | the run count |
//! | --- | --- |
//! | [`Context::reduce_by_key`]`(keys, values, unique_out, aggregates_out, op)` | returned (`u64`; blocks) |
//! | [`Context::reduce_by_key_into`]`(keys, values, unique_out, aggregates_out, num_runs, op)` | left in `num_runs[0]` (never blocks) |
//! | [`Context::reduce_by_key_async`]`(keys, values, unique_out, aggregates_out, op)` | a [`Pending`] |
//! | [`Context::reduce_by_key_custom`]`::<K, T, O>(lib, keys, values, unique_out, aggregates_out)` | returned, for a user operator |
//!
//! Operators: [`Reduction::SCAN`] (sum, min, max); keys u32 or u64, values i32, u32, i64, u64,
//! f32, f64 ([`ReduceByKeyElement`]). The scan by key is [`Context::scan_by_key`].

use kernels::Kernel;
use kernels::reduce::by_key::{ReduceByKeyInstance, ReduceByKeyParams, SimReduceByKeyFn};
use kernels::scan::Headed;
use kernels::scan::policy::ACTIVE;

use crate::error::{Error, Result, plural};
use crate::reduce::{ACC_WORDS, DeviceElement, Pending, Reduction};
use crate::runtime::{
    Backend, Context, DeviceBuffer, DeviceView, DeviceViewMut, KernelLibrary, LaunchShape,
};
use crate::scan::{ScanElement, ScanWorkspace, scan_arm, unsupported_scan};

/// A reduce-by-key kernel as the host calls it.
pub type ReduceByKeyKernel<K, T> = Kernel<SimReduceByKeyFn<K, T>>;

/// Value types of the built-in reduce by key for keys `K`: keys u32 and u64 (compared
/// bitwise), values i32, u32, i64, u64, f32, f64; one impl per (key, value) pair of the
/// kernels' built-in table.
#[diagnostic::on_unimplemented(
    message = "no built-in reduce by key of `{Self}` values with `{K}` keys",
    note = "reduce by key takes u32 or u64 keys and i32, u32, i64, u64, f32 or f64 values"
)]
pub trait ReduceByKeyElement<K>: ScanElement {
    /// The built-in kernel of `op`; `None` for an operator the family lacks (it offers
    /// [`Reduction::SCAN`]: sum, min and max).
    fn reduce_by_key_kernel(op: Reduction) -> Option<ReduceByKeyKernel<K, Self>>;
}

/// [`ReduceByKeyElement`] of every (key, value) pair of the kernels' built-in table.
macro_rules! reduce_by_key_element {
    ([$($k:ident)*]) => {
        $( kernels::builtin_table!(types reduce_by_key_element! { @key $k } int float); )*
    };
    (@key $k:ident $t:ident { $([$op:ident $Op:path])* }) => {
        impl ReduceByKeyElement<$k> for $t {
            fn reduce_by_key_kernel(op: Reduction) -> Option<ReduceByKeyKernel<$k, $t>> {
                $( scan_arm!(op, $op, <$Op as ReduceByKeyInstance<$k, $t>>::KERNEL); )*
                None
            }
        }
    };
}
kernels::builtin_table!(keys reduce_by_key_element! {});

/// The built-in kernel of `op`, or [`Error::Unsupported`].
fn kernel_for<K, T: ReduceByKeyElement<K>>(op: Reduction) -> Result<ReduceByKeyKernel<K, T>> {
    T::reduce_by_key_kernel(op).ok_or_else(|| unsupported_scan(op, T::DTYPE, "reduce by key"))
}

/// `runs` if the outputs (`keys` and `aggregates` long) had room for every run, else the error
/// naming both numbers.
fn check_runs(runs: u64, keys: usize, aggregates: usize) -> Result<u64> {
    let room = keys.min(aggregates) as u64;
    if runs > room {
        return Err(Error::OutputTooSmall {
            what: format!(
                "reduce by key: the outputs ({} and {}; what fits was written, the first {})",
                plural(keys as u64, "key"),
                plural(aggregates as u64, "aggregate"),
                plural(room, "run")
            ),
            needed: runs,
            got: room,
        });
    }
    Ok(runs)
}

/// The device word the blocking calls read the run count from (one per context).
#[derive(Default)]
struct ByKeyWorkspace {
    num_runs: Option<DeviceBuffer<u64>>,
    /// Tuning override of the look-back's first wait (None: the policy's).
    delay_ns: Option<u32>,
    /// Tuning override of the L2 prefetch distance in tiles (None: the default).
    prefetch: Option<u32>,
}

impl Context {
    /// Override the reduce by key's first look-back wait in nanoseconds (`None`: the policy's
    /// `reduce_by_key_delay_ns`). For tuning runs; results do not depend on it.
    #[cfg(feature = "tuning")]
    pub fn set_reduce_by_key_delay(&self, ns: Option<u32>) {
        let ws = self.workspace::<ByKeyWorkspace>();
        ws.lock().unwrap_or_else(|p| p.into_inner()).delay_ns = ns;
    }

    /// Override how many tiles ahead each reduce-by-key block asks L2 for (`None`: the
    /// default; 0: none). For tuning runs; results do not depend on it.
    #[cfg(feature = "tuning")]
    pub fn set_reduce_by_key_prefetch(&self, tiles: Option<u32>) {
        let ws = self.workspace::<ByKeyWorkspace>();
        ws.lock().unwrap_or_else(|p| p.into_inner()).prefetch = tiles;
    }

    /// Reduce by key: every maximal run of equal consecutive `keys` becomes one entry,
    /// `unique_keys[r]` = the run's key and `aggregates[r]` = the reduction of its `values`
    /// with `op`, in order; returns the number of runs. `keys` and `values` must have the same
    /// length (any length, more than 2^32 included); each output must have room for every run
    /// (the input length always suffices), else the call fails naming both numbers, after
    /// writing the runs that fit. One pass over the data (one launch); blocks until the count is
    /// known (see [`Context::reduce_by_key_into`] for the stream-ordered form). Integer
    /// aggregates are exact (sums wrap); float aggregates are the same bits on every run, grid
    /// and GPU model, and on the simulator: a run's values are combined in an order fixed by
    /// the keys and the tiling alone (`kernels::reduce::by_key`), unlike CUB's.
    ///
    /// ```
    /// # fn main() -> gpu_reduce::Result<()> {
    /// use gpu_reduce::{Context, Reduction};
    /// let ctx = Context::sim()?;
    /// let keys = ctx.htod(&[7u32, 7, 2, 2, 2, 7])?;
    /// let x = ctx.htod(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0])?;
    /// let (mut uk, mut agg) = (ctx.alloc_zeros::<u32>(6)?, ctx.alloc_zeros::<f32>(6)?);
    /// let runs = ctx.reduce_by_key(&keys, &x, &mut uk, &mut agg, Reduction::Sum)?;
    /// assert_eq!(runs, 3);
    /// assert_eq!(ctx.dtoh(&uk)?[..runs as usize], [7, 2, 7]);
    /// assert_eq!(ctx.dtoh(&agg)?[..runs as usize], [3.0, 12.0, 6.0]);
    /// # Ok(()) }
    /// ```
    pub fn reduce_by_key<'a, 'b, 'c, 'd, K: DeviceElement, T: ReduceByKeyElement<K>>(
        &self,
        keys: impl Into<DeviceView<'a, K>>,
        values: impl Into<DeviceView<'b, T>>,
        unique_keys: impl Into<DeviceViewMut<'c, K>>,
        aggregates: impl Into<DeviceViewMut<'d, T>>,
        op: Reduction,
    ) -> Result<u64> {
        let k = kernel_for::<K, T>(op)?;
        self.reduce_by_key_to_host(
            &crate::BUILTIN,
            k,
            keys.into(),
            values.into(),
            unique_keys.into(),
            aggregates.into(),
        )
    }

    /// A user operator's reduce by key: `O`'s kernel over keys `K` and values `T`, exported by
    /// `kernels::reduce_by_key_kernels!` in a kernel crate whose PTX `lib` embeds. As
    /// [`Context::reduce_by_key`] otherwise.
    pub fn reduce_by_key_custom<'a, 'b, 'c, 'd, K, T, O>(
        &self,
        lib: &'static KernelLibrary,
        keys: impl Into<DeviceView<'a, K>>,
        values: impl Into<DeviceView<'b, T>>,
        unique_keys: impl Into<DeviceViewMut<'c, K>>,
        aggregates: impl Into<DeviceViewMut<'d, T>>,
    ) -> Result<u64>
    where
        K: DeviceElement,
        T: DeviceElement,
        O: ReduceByKeyInstance<K, T>,
    {
        self.reduce_by_key_to_host(
            lib,
            O::KERNEL,
            keys.into(),
            values.into(),
            unique_keys.into(),
            aggregates.into(),
        )
    }

    /// [`Context::reduce_by_key`] in stream order: the run count goes to `num_runs[0]` on the
    /// device instead of coming back, so the call never blocks the host and can be captured
    /// into a CUDA graph. Runs past the outputs' room are counted but not written (compare
    /// `num_runs[0]` with the outputs' length).
    #[allow(clippy::too_many_arguments)] // the inputs, the three outputs and the operator
    pub fn reduce_by_key_into<'a, 'b, 'c, 'd, 'e, K: DeviceElement, T: ReduceByKeyElement<K>>(
        &self,
        keys: impl Into<DeviceView<'a, K>>,
        values: impl Into<DeviceView<'b, T>>,
        unique_keys: impl Into<DeviceViewMut<'c, K>>,
        aggregates: impl Into<DeviceViewMut<'d, T>>,
        num_runs: impl Into<DeviceViewMut<'e, u64>>,
        op: Reduction,
    ) -> Result<()> {
        let k = kernel_for::<K, T>(op)?;
        let (keys, values) = (keys.into(), values.into());
        self.by_key_into(
            k,
            keys,
            values,
            unique_keys.into(),
            aggregates.into(),
            num_runs.into(),
        )
    }

    /// The `_into` form of a built-in by-key kernel `k`.
    fn by_key_into<K: DeviceElement, T: DeviceElement>(
        &self,
        k: ReduceByKeyKernel<K, T>,
        keys: DeviceView<'_, K>,
        values: DeviceView<'_, T>,
        mut unique_keys: DeviceViewMut<'_, K>,
        mut aggregates: DeviceViewMut<'_, T>,
        mut num_runs: DeviceViewMut<'_, u64>,
    ) -> Result<()> {
        if num_runs.is_empty() {
            return Err(Error::OutputTooSmall {
                what: "reduce by key: the run-count output (one u64)".into(),
                needed: 1,
                got: 0,
            });
        }
        Self::check_by_key(&keys, &values)?;
        if values.is_empty() {
            return self.memset_zeros(num_runs.slice(0..1)?);
        }
        let (count_addr, _count_write) = self.write(&mut num_runs)?;
        let tuning = {
            let ws = self.workspace::<ByKeyWorkspace>();
            let ws = ws.lock().unwrap_or_else(|p| p.into_inner());
            (ws.delay_ns, ws.prefetch)
        };
        self.launch_reduce_by_key(
            &crate::BUILTIN,
            k,
            &keys,
            &values,
            &mut unique_keys,
            &mut aggregates,
            count_addr,
            tuning,
        )
    }

    /// [`Context::reduce_by_key`] without blocking: the kernel is queued and the handle's
    /// [`Pending::wait`] returns the run count (or the error of outputs too small, after the
    /// runs that fit were written). The outputs must not be read before the wait.
    ///
    /// ```
    /// # fn main() -> gpu_reduce::Result<()> {
    /// use gpu_reduce::{Context, Reduction};
    /// let ctx = Context::sim()?;
    /// let keys = ctx.htod(&[1u64, 1, 5])?;
    /// let x = ctx.htod(&[2i32, 3, 4])?;
    /// let (mut uk, mut agg) = (ctx.alloc_zeros::<u64>(3)?, ctx.alloc_zeros::<i32>(3)?);
    /// let pending = ctx.reduce_by_key_async(&keys, &x, &mut uk, &mut agg, Reduction::Max)?;
    /// assert_eq!(pending.wait()?, 2);
    /// assert_eq!(ctx.dtoh(&agg)?[..2], [3, 4]);
    /// # Ok(()) }
    /// ```
    pub fn reduce_by_key_async<'a, 'b, 'c, 'd, K: DeviceElement, T: ReduceByKeyElement<K>>(
        &self,
        keys: impl Into<DeviceView<'a, K>>,
        values: impl Into<DeviceView<'b, T>>,
        unique_keys: impl Into<DeviceViewMut<'c, K>>,
        aggregates: impl Into<DeviceViewMut<'d, T>>,
        op: Reduction,
    ) -> Result<Pending<'_, u64>> {
        let k = kernel_for::<K, T>(op)?;
        let (keys, values) = (keys.into(), values.into());
        self.by_key_async(k, keys, values, unique_keys.into(), aggregates.into())
    }

    /// The `_async` form of a built-in by-key kernel `k`.
    fn by_key_async<K: DeviceElement, T: DeviceElement>(
        &self,
        k: ReduceByKeyKernel<K, T>,
        keys: DeviceView<'_, K>,
        values: DeviceView<'_, T>,
        mut unique_keys: DeviceViewMut<'_, K>,
        mut aggregates: DeviceViewMut<'_, T>,
    ) -> Result<Pending<'_, u64>> {
        Self::check_by_key(&keys, &values)?;
        let (kl, al) = (unique_keys.len(), aggregates.len());
        let finish = move |w: [u64; ACC_WORDS]| check_runs(w[0], kl, al);
        if values.is_empty() {
            return Ok(self.pending_ready(k.name, Ok(0)));
        }
        if self.capturing()? {
            return Err(Error::NotCapturable {
                call: "reduce_by_key_async",
                hint: "it returns the run count to the host; use reduce_by_key_into",
            });
        }
        let count = self.alloc_zeros::<u64>(ACC_WORDS)?;
        let tuning = {
            let ws = self.workspace::<ByKeyWorkspace>();
            let ws = ws.lock().unwrap_or_else(|p| p.into_inner());
            (ws.delay_ns, ws.prefetch)
        };
        self.launch_reduce_by_key(
            &crate::BUILTIN,
            k,
            &keys,
            &values,
            &mut unique_keys,
            &mut aggregates,
            self.scratch_addr(&count),
            tuning,
        )?;
        self.pending_on_device(count, k.name, finish)
    }

    fn check_by_key<K, T>(keys: &DeviceView<'_, K>, values: &DeviceView<'_, T>) -> Result<()> {
        if keys.len() != values.len() {
            return Err(Error::LengthMismatch {
                what: "reduce by key: the keys (one per value)".into(),
                expected: values.len() as u64,
                got: keys.len() as u64,
            });
        }
        Ok(())
    }

    fn reduce_by_key_to_host<K: DeviceElement, T: DeviceElement>(
        &self,
        lib: &'static KernelLibrary,
        k: ReduceByKeyKernel<K, T>,
        keys: DeviceView<'_, K>,
        values: DeviceView<'_, T>,
        mut unique_keys: DeviceViewMut<'_, K>,
        mut aggregates: DeviceViewMut<'_, T>,
    ) -> Result<u64> {
        Self::check_by_key(&keys, &values)?;
        if values.is_empty() {
            return Ok(0);
        }
        if self.capturing()? {
            return Err(Error::NotCapturable {
                call: "reduce_by_key",
                hint: "it returns the run count to the host; use reduce_by_key_into",
            });
        }
        let ws = self.workspace::<ByKeyWorkspace>();
        // Held through the launch and the read-back: one count word per context.
        let mut ws = ws.lock().unwrap_or_else(|p| p.into_inner());
        if ws.num_runs.is_none() {
            ws.num_runs = Some(self.alloc_zeros::<u64>(1)?);
        }
        let Some(buf) = &ws.num_runs else {
            unreachable!("allocated just above")
        };
        let count_addr = self.scratch_addr(buf);
        self.launch_reduce_by_key(
            lib,
            k,
            &keys,
            &values,
            &mut unique_keys,
            &mut aggregates,
            count_addr,
            (ws.delay_ns, ws.prefetch),
        )?;
        let runs = self.dtoh(buf)?[0];
        check_runs(runs, unique_keys.len(), aggregates.len())
    }

    /// Launch `k` after the checks; `count_addr` is a device u64 the caller orders; `tuning`
    /// overrides the policy's first look-back wait and the prefetch distance.
    #[allow(clippy::too_many_arguments)] // the inputs, the outputs, where the count goes, tuning
    fn launch_reduce_by_key<K: DeviceElement, T: DeviceElement>(
        &self,
        lib: &'static KernelLibrary,
        k: ReduceByKeyKernel<K, T>,
        keys: &DeviceView<'_, K>,
        values: &DeviceView<'_, T>,
        unique_keys: &mut DeviceViewMut<'_, K>,
        aggregates: &mut DeviceViewMut<'_, T>,
        count_addr: u64,
        tuning: (Option<u32>, Option<u32>),
    ) -> Result<()> {
        let delay_ns = tuning.0.unwrap_or(ACTIVE.reduce_by_key_delay_ns);
        let prefetch = match (tuning.1, &self.backend) {
            (Some(p), _) => p,
            (None, Backend::Cuda(_)) => {
                let blocks = self.kernel(lib, k.name)?.blocks_per_sm(ACTIVE.block)?;
                ACTIVE.reduce_by_key_prefetch_tiles(self.info().multiprocessors * blocks)
            }
            (None, _) => 0,
        };
        let n = values.len() as u64;
        let capacity = unique_keys.len().min(aggregates.len()) as u64;

        let (kp, _keys_read) = self.read(keys)?;
        let (vp, _values_read) = self.read(values)?;
        let (up, _unique_write) = self.write(unique_keys)?;
        let (ap, _agg_write) = self.write(aggregates)?;
        let tile_elems = ACTIVE.reduce_by_key_tile_elems(
            std::mem::size_of::<K>() as u64,
            std::mem::size_of::<T>() as u64,
        );
        let grid = Self::scan_grid(n, tile_elems)?;
        let ws = self.workspace::<ScanWorkspace>();
        let mut ws = ws.lock().unwrap_or_else(|p| p.into_inner());
        let a = self.scan_workspace(&mut ws, grid as u64)?;
        let params = ReduceByKeyParams {
            keys: kp as *const K,
            values: vp as *const T,
            unique: up as *mut K,
            aggregates_out: ap as *mut T,
            capacity,
            num_runs: count_addr as *mut u64,
            n,
            counter: a.counter as *mut u32,
            flags: a.flags as *mut u32,
            aggregates: a.aggregates as *mut Headed<T>,
            epoch: a.epoch,
            delay_ns,
            prefetch,
        };
        // SAFETY: addresses of this context's memory: the inputs hold `n` elements, the
        // outputs `capacity` each.
        unsafe { self.launch_kernel(lib, &k, LaunchShape::linear(grid, ACTIVE.block, 0), params) }
    }
}

/// Every built-in reduce-by-key kernel's name (the embedded-index test).
#[cfg(test)]
pub(crate) fn kernel_names() -> Vec<&'static str> {
    fn of<T: ReduceByKeyElement<u32> + ReduceByKeyElement<u64>>(names: &mut Vec<&'static str>) {
        for op in Reduction::ALL {
            names.extend(<T as ReduceByKeyElement<u32>>::reduce_by_key_kernel(op).map(|k| k.name));
            names.extend(<T as ReduceByKeyElement<u64>>::reduce_by_key_kernel(op).map(|k| k.name));
        }
    }
    let mut names = Vec::new();
    macro_rules! each {
        ($t:ident $ops:tt) => {
            of::<$t>(&mut names)
        };
    }
    kernels::builtin_table!(types each! {} int float);
    names
}
