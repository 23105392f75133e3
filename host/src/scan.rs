//! Prefix scans on the device, plain and by key, for the built-in operators and user operators:
//! one pass, with the cross-tile prefixes combined in a fixed order (the same bits on every
//! run), where the decoupled look-back of Merrill & Garland 2016 takes whichever is out first.
//!
//! | call | what |
//! | --- | --- |
//! | [`Context::scan`]`(input, output, op, kind)` | `output[i]` = the scan of `input` with `op` ([`Reduction::SCAN`]) |
//! | [`Context::scan_in_place`]`(data, op, kind)` | the same, overwriting `data` |
//! | [`Context::inclusive_sum`]`(input, output)` | the inclusive sum |
//! | [`Context::scan_by_key`]`(keys, values, output, op, kind)` | restarting at every change of key |
//! | [`Context::scan_custom`]`::<T, O>(lib, input, output, kind)` | a user operator's scan |
//!
//! The scans offer sum, min and max ([`Reduction::SCAN`]); another [`Reduction`] is
//! [`crate::Error::Unsupported`]. They never block and can be captured into a CUDA graph.

use crate::reduce::{DeviceElement, Reduction};

/// Inclusive (`out[i] = x[0] ⊕ … ⊕ x[i]`) or exclusive (`out[i] = x[0] ⊕ … ⊕ x[i-1]`,
/// `out[0]` = the operator's identity).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScanKind {
    /// `out[i]` includes `x[i]`.
    Inclusive,
    /// `out[i]` stops before `x[i]`.
    Exclusive,
}

impl ScanKind {
    /// Both kinds.
    pub const ALL: [ScanKind; 2] = [ScanKind::Inclusive, ScanKind::Exclusive];
    /// Its name in messages.
    pub fn name(self) -> &'static str {
        match self {
            ScanKind::Inclusive => "inclusive",
            ScanKind::Exclusive => "exclusive",
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The production scan: single pass, prefixes in a fixed order.

use kernels::Kernel;
use kernels::scan::lookback::EPOCH_MASK;
use kernels::scan::policy::ACTIVE;
use kernels::scan::{
    Headed, ScanByKeyInstance, ScanByKeyParams, ScanInstance, ScanParams, SimScanByKeyFn, SimScanFn,
};

use crate::error::{Error, Result};
use crate::runtime::{
    Context, DeviceBuffer, DeviceView, DeviceViewMut, KernelLibrary, LaunchShape,
};

/// A scan kernel as the host calls it.
pub type ScanKernel<T> = Kernel<SimScanFn<T>>;

/// Element types of the device scans: i32, u32, i64, u64, f32, f64, and with the `f16` feature
/// `half::f16` and `half::bf16` (the sum scans in f32, each output its f32 prefix rounded to
/// the type; min and max in the type). The kernels come from the `kernels` crate's macro
/// invocations (its `ScanInstance` impls), one impl per type of its built-in table.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no built-in scan",
    note = "the scans take i32, u32, i64, u64, f32, f64 (and half::f16, half::bf16 with the `f16` feature)"
)]
pub trait ScanElement: DeviceElement {
    /// Elements per tile of this type's scan kernels (the grid is `ceil(n / SCAN_TILE_ELEMS)`).
    const SCAN_TILE_ELEMS: u64;
    /// The built-in scan kernel of `op` and `kind`; `None` for an operator the scans lack
    /// (they offer [`Reduction::SCAN`]: sum, min and max).
    fn scan_kernel(op: Reduction, kind: ScanKind) -> Option<ScanKernel<Self>>;
}

/// The inclusive or exclusive kernel of `O`.
fn pick<T: kernels::ops::Element, O: ScanInstance<T>>(kind: ScanKind) -> ScanKernel<T> {
    match kind {
        ScanKind::Inclusive => O::INCLUSIVE,
        ScanKind::Exclusive => O::EXCLUSIVE,
    }
}

/// `if $v is the scan operator of the table's token { return Some($e) }` (the 16-bit floats'
/// sum is the f32-accumulated `sum_f32`); operators without a scan (product, the bitwise ones,
/// argmin, argmax) expand to nothing. The by-key families offer the same three.
macro_rules! scan_arm {
    ($v:ident, sum_f32, $e:expr) => {
        $crate::reduce::reduction_arm!($v, sum, $e)
    };
    ($v:ident, sum, $e:expr) => {
        $crate::reduce::reduction_arm!($v, sum, $e)
    };
    ($v:ident, min, $e:expr) => {
        $crate::reduce::reduction_arm!($v, min, $e)
    };
    ($v:ident, max, $e:expr) => {
        $crate::reduce::reduction_arm!($v, max, $e)
    };
    ($v:ident, $other:ident, $e:expr) => {};
}
pub(crate) use scan_arm;

/// [`ScanElement`] of one element type of the kernels' built-in table; the 16-bit floats'
/// kernels (`kernels::scan::half`) read 8-byte vectors, so their tiles differ.
macro_rules! scan_element {
    ($t:ident $ops:tt) => { scan_element!(@impl $t $ops ACTIVE.tile_elems(std::mem::size_of::<Self>() as u64)); };
    (@impl $t:ident { $([$op:ident $Op:path])* } $tile:expr) => {
        impl ScanElement for kernels::builtin_elem!($t) {
            const SCAN_TILE_ELEMS: u64 = $tile;
            fn scan_kernel(op: Reduction, kind: ScanKind) -> Option<ScanKernel<Self>> {
                $( scan_arm!(op, $op, pick::<Self, $Op>(kind)); )*
                None
            }
        }
    };
}
kernels::builtin_table!(types scan_element! {} int float);

/// The 16-bit floats' [`ScanElement`]s, with their own tile size.
#[cfg(feature = "f16")]
macro_rules! half_scan_element {
    ($t:ident $ops:tt) => { scan_element!(@impl $t $ops ACTIVE.half_tile_elems()); };
}
#[cfg(feature = "f16")]
kernels::builtin_table!(types half_scan_element! {} half);

/// Value types of the built-in scan by key for keys `K`: keys u32 and u64 (compared bitwise),
/// values i32, u32, i64, u64, f32, f64; one impl per (key, value) pair of the kernels' built-in
/// table.
#[diagnostic::on_unimplemented(
    message = "no built-in scan by key of `{Self}` values with `{K}` keys",
    note = "the scan by key takes u32 or u64 keys and i32, u32, i64, u64, f32 or f64 values"
)]
pub trait ScanByKeyElement<K>: ScanElement {
    /// The built-in scan-by-key kernel of `op` (inclusive or exclusive by its argument);
    /// `None` for an operator the family lacks (it offers [`Reduction::SCAN`]).
    fn scan_by_key_kernel(op: Reduction) -> Option<Kernel<SimScanByKeyFn<K, Self>>>;
}

/// [`ScanByKeyElement`] of every (key, value) pair of the kernels' built-in table.
macro_rules! scan_by_key_element {
    ([$($k:ident)*]) => {
        $( kernels::builtin_table!(types scan_by_key_element! { @key $k } int float); )*
    };
    (@key $k:ident $t:ident { $([$op:ident $Op:path])* }) => {
        impl ScanByKeyElement<$k> for $t {
            fn scan_by_key_kernel(op: Reduction) -> Option<Kernel<SimScanByKeyFn<$k, $t>>> {
                $( scan_arm!(op, $op, <$Op as ScanByKeyInstance<$k, $t>>::KERNEL); )*
                None
            }
        }
    };
}
kernels::builtin_table!(keys scan_by_key_element! {});

/// The error of an operator that the scan-like family `family` lacks.
pub(crate) fn unsupported_scan(op: Reduction, dtype: &'static str, family: &str) -> Error {
    Error::Unsupported {
        op: format!("the {} {family}", op.name()),
        dtype,
        reason: "the scans and the by-key reductions offer sum, min and max (Reduction::SCAN)",
    }
}

/// The look-back's tile-status arrays and tile counter, grown on demand and reused by every
/// scan of a context (launches on its stream run one after the other).
#[derive(Default)]
pub(crate) struct ScanWorkspace {
    bufs: Option<ScanBuffers>,
    /// Tiles the buffers have room for.
    tiles: u64,
    epoch: u32,
}

struct ScanBuffers {
    counter: DeviceBuffer<u32>,
    /// [`STATUS_BYTES`] per tile: a status word, a status word and a 4-byte value packed in a
    /// u64, or a 16- or 32-byte slot of two or four such words (`TileStatus::tagged_slots`).
    flags: DeviceBuffer<u32>,
    /// Aggregates then prefixes (the look-back), or range slots (fixed-order prefixes):
    /// [`VALUE_BYTES`] per tile.
    values: DeviceBuffer<u64>,
}

/// Bytes per tile of a scan's value area: the fixed-order prefixes' range slots of up to
/// 16-byte accumulators (`fixed_order_bytes_per_tile`), which also hold the look-back's aggregates
/// and prefixes.
const VALUE_BYTES: usize = kernels::scan::fixed_order::fixed_order_bytes_per_tile(4) as usize;
/// Bytes per tile of a scan's status area.
const STATUS_BYTES: usize = kernels::scan::lookback::STATUS_BYTES_PER_TILE;

/// The addresses one scan launch needs.
pub(crate) struct ScanArgs {
    pub(crate) counter: u64,
    pub(crate) flags: u64,
    pub(crate) aggregates: u64,
    pub(crate) prefixes: u64,
    pub(crate) epoch: u32,
}

impl Context {
    /// Workspace for `tiles` tiles and a fresh epoch. Captured into a CUDA graph: scratch of
    /// the launch's own, its counter and status words cleared inside the graph (a replay must
    /// not meet the previous replay's statuses, and the epoch is fixed in the graph).
    pub(crate) fn scan_workspace(&self, ws: &mut ScanWorkspace, tiles: u64) -> Result<ScanArgs> {
        let too_many = || Error::TooLarge {
            what: "the tiles of a scan (its workspace in bytes overflows the address space)".into(),
            size: tiles,
            limit: ((usize::MAX - 16) / (STATUS_BYTES + VALUE_BYTES)) as u64,
        };
        let t = usize::try_from(tiles).map_err(|_| too_many())?;
        let graph_bytes = t
            .checked_mul(STATUS_BYTES + VALUE_BYTES)
            .and_then(|b| b.checked_add(16))
            .ok_or_else(too_many)?;
        if let Some(base) = self.graph_scratch(graph_bytes)? {
            // counter (16 bytes), flags (STATUS_BYTES per tile), values (VALUE_BYTES per tile). All is
            // cleared in the graph: the epoch is fixed there, and a replay must meet neither
            // the last replay's status words nor its range slots.
            self.memset_raw(base, graph_bytes)?;
            let values = base + 16 + STATUS_BYTES as u64 * tiles;
            return Ok(ScanArgs {
                counter: base,
                flags: base + 16,
                aggregates: values,
                prefixes: values + VALUE_BYTES as u64 / 2 * tiles,
                epoch: 1,
            });
        }
        // New, zeroed buffers when there are none, they are too small, or the epoch would wrap
        // (zeroed status words match no epoch).
        let fresh = ws.bufs.is_none() || tiles > ws.tiles || ws.epoch >= EPOCH_MASK;
        let cap = if fresh {
            tiles.max(ws.tiles).max(1024).next_power_of_two()
        } else {
            ws.tiles
        };
        let b = match &mut ws.bufs {
            Some(b) if !fresh => b,
            slot => {
                let len =
                    usize::try_from(cap).map_err(|_| Error::OutOfMemory { bytes: usize::MAX })?;
                *slot = None; // free the old ones first
                ws.epoch = 0;
                slot.insert(ScanBuffers {
                    counter: self.alloc_zeros::<u32>(1)?,
                    flags: self.alloc_zeros::<u32>(STATUS_BYTES / 4 * len)?,
                    values: self.alloc_zeros::<u64>(VALUE_BYTES / 8 * len)?,
                })
            }
        };
        ws.tiles = cap;
        ws.epoch += 1;
        let values = self.scratch_addr(&b.values);
        Ok(ScanArgs {
            counter: self.scratch_addr(&b.counter),
            flags: self.scratch_addr(&b.flags),
            aggregates: values,
            prefixes: values + VALUE_BYTES as u64 / 2 * ws.tiles,
            epoch: ws.epoch,
        })
    }

    /// The built-in scan kernel of `op` and `kind` for `T`, or [`Error::Unsupported`].
    pub(crate) fn scan_kernel_for<T: ScanElement>(
        op: Reduction,
        kind: ScanKind,
    ) -> Result<ScanKernel<T>> {
        T::scan_kernel(op, kind).ok_or_else(|| unsupported_scan(op, T::DTYPE, "scan"))
    }

    /// Room for `n` results in `output`, or an error.
    fn check_scan_output<T>(n: usize, output: &DeviceViewMut<'_, T>) -> Result<()> {
        if output.len() < n {
            return Err(Error::OutputTooSmall {
                what: "the scan output (one element per input element)".into(),
                needed: n as u64,
                got: output.len() as u64,
            });
        }
        Ok(())
    }

    /// Scan `input` into `output` with kernel `k` of `lib`, after the checks.
    fn scan_view<T: ScanElement>(
        &self,
        lib: &'static KernelLibrary,
        k: ScanKernel<T>,
        input: DeviceView<'_, T>,
        mut output: DeviceViewMut<'_, T>,
    ) -> Result<()> {
        Self::check_scan_output(input.len(), &output)?;
        let (i, _read) = self.read(&input)?;
        let (o, _write) = self.write(&mut output)?;
        self.launch_scan(lib, k, i, o, input.len() as u64, 0, 0)
    }

    /// Grid of a scan over `n` elements in tiles of `tile_elems`, or an error when it exceeds
    /// the launch limit.
    pub(crate) fn scan_grid(n: u64, tile_elems: u64) -> Result<u32> {
        u32::try_from(n.div_ceil(tile_elems))
            .ok()
            .filter(|&t| t < i32::MAX as u32)
            .ok_or_else(|| Error::TooLarge {
                what: format!("the elements of a scan (in tiles of {tile_elems}, too many tiles)"),
                size: n,
                limit: (i32::MAX as u64 - 1).saturating_mul(tile_elems),
            })
    }

    /// Launch `k` over addresses whose ordering guards the caller holds. `seed` is 0 or the
    /// address of a value of this context: the fixed order's checkpoint before the first
    /// element (`kernels::scan::ScanParams::seed`). `totals` is 0 or room for one value per
    /// tile: the tiles' aggregates, and nothing written to `output` (the multi-GPU scan).
    #[allow(clippy::too_many_arguments)] // the kernel's arguments, passed straight through
    pub(crate) fn launch_scan<T: ScanElement>(
        &self,
        lib: &'static KernelLibrary,
        k: ScanKernel<T>,
        input: u64,
        output: u64,
        n: u64,
        seed: u64,
        totals: u64,
    ) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        let grid = Self::scan_grid(n, T::SCAN_TILE_ELEMS)?;
        let ws = self.workspace::<ScanWorkspace>();
        let mut ws = ws.lock().unwrap_or_else(|p| p.into_inner());
        let a = self.scan_workspace(&mut ws, grid as u64)?;
        let params = ScanParams {
            input: input as *const T,
            output: output as *mut T,
            n,
            counter: a.counter as *mut u32,
            flags: a.flags as *mut u32,
            aggregates: a.aggregates as *mut T,
            prefixes: a.prefixes as *mut T,
            seed: seed as *const T,
            totals: totals as *mut T,
            epoch: a.epoch,
        };
        // SAFETY: addresses of this context's memory with the room the scan needs.
        unsafe { self.launch_kernel(lib, &k, LaunchShape::linear(grid, ACTIVE.block, 0), params) }
    }

    /// Scan `input` with `op` into `output[..input.len()]`, in one pass.
    /// Inclusive: `output[i] = input[0] ⊕ … ⊕ input[i]`; exclusive: `input[0] ⊕ … ⊕ input[i-1]`
    /// (the identity at 0). Empty input is a no-op. Integer results are exact (sums wrap);
    /// float results are the same bits on every run, grid and GPU model, and on the simulator
    /// (the cross-tile prefixes combine in a fixed order, `kernels::scan::fixed_order`).
    /// Queued on the context's stream: never blocks the host, and can be
    /// captured into a CUDA graph. `input` and `output` are any device memory of this context
    /// (the library's buffers, cudarc slices and views, raw pointers: see [`DeviceView`]).
    ///
    /// `half::f16` and `half::bf16` (the `f16` feature): the sum scans in f32 (each element
    /// converts exactly) and each output is its f32 prefix rounded once to the element type,
    /// to nearest, ties to even; a prefix beyond the type's range gives ±inf, as an IEEE
    /// conversion does (f16: from 65520 on), and NaN stays NaN (its payload is not kept).
    /// Min and max run in the type, with the reductions' rules.
    ///
    /// ```
    /// # fn main() -> gpu_reduce::Result<()> {
    /// use gpu_reduce::{Context, Reduction, ScanKind};
    /// let ctx = Context::sim()?;
    /// let x = ctx.htod(&[1i32, 2, 3, 4])?;
    /// let mut out = ctx.alloc_zeros::<i32>(4)?;
    /// ctx.scan(&x, &mut out, Reduction::Sum, ScanKind::Exclusive)?;
    /// assert_eq!(ctx.dtoh(&out)?, [0, 1, 3, 6]);
    /// # #[cfg(feature = "f16")] {
    /// use half::f16;
    /// // 2048 + 1 is not an f16, but the f32 prefix carries on: 2048 + 1 + 1 is.
    /// let h = ctx.htod(&[f16::from_f32(2048.0), f16::ONE, f16::ONE])?;
    /// let mut hout = ctx.alloc_zeros::<f16>(3)?;
    /// ctx.scan(&h, &mut hout, Reduction::Sum, ScanKind::Inclusive)?;
    /// assert_eq!(ctx.dtoh(&hout)?, [2048.0, 2048.0, 2050.0].map(f16::from_f32));
    /// # }
    /// # Ok(()) }
    /// ```
    pub fn scan<'a, 'b, T: ScanElement>(
        &self,
        input: impl Into<DeviceView<'a, T>>,
        output: impl Into<DeviceViewMut<'b, T>>,
        op: Reduction,
        kind: ScanKind,
    ) -> Result<()> {
        let k = Self::scan_kernel_for::<T>(op, kind)?;
        self.scan_view(&crate::BUILTIN, k, input.into(), output.into())
    }

    /// [`Context::scan`] in place: `data` is overwritten with its scan.
    pub fn scan_in_place<'a, T: ScanElement>(
        &self,
        data: impl Into<DeviceViewMut<'a, T>>,
        op: Reduction,
        kind: ScanKind,
    ) -> Result<()> {
        let mut data = data.into();
        let n = data.len() as u64;
        let (a, _write) = self.write(&mut data)?;
        let k = Self::scan_kernel_for::<T>(op, kind)?;
        self.launch_scan(&crate::BUILTIN, k, a, a, n, 0, 0)
    }

    /// Inclusive sum, the most common scan.
    ///
    /// ```
    /// # fn main() -> gpu_reduce::Result<()> {
    /// let ctx = gpu_reduce::Context::sim()?;
    /// let x = ctx.htod(&[1.0f64, 2.0, 3.0])?;
    /// let mut out = ctx.alloc_zeros::<f64>(3)?;
    /// ctx.inclusive_sum(&x, &mut out)?;
    /// assert_eq!(ctx.dtoh(&out)?, [1.0, 3.0, 6.0]);
    /// # Ok(()) }
    /// ```
    pub fn inclusive_sum<'a, 'b, T: ScanElement>(
        &self,
        input: impl Into<DeviceView<'a, T>>,
        output: impl Into<DeviceViewMut<'b, T>>,
    ) -> Result<()> {
        self.scan(input, output, Reduction::Sum, ScanKind::Inclusive)
    }

    /// A user operator's scan: `O`'s kernels over `T`, exported by `kernels::scan_kernels!` in a
    /// kernel crate whose PTX `lib` embeds.
    pub fn scan_custom<'a, 'b, T: ScanElement, O: ScanInstance<T>>(
        &self,
        lib: &'static KernelLibrary,
        input: impl Into<DeviceView<'a, T>>,
        output: impl Into<DeviceViewMut<'b, T>>,
        kind: ScanKind,
    ) -> Result<()> {
        self.scan_view(lib, pick::<T, O>(kind), input.into(), output.into())
    }

    /// Scan by key: segments are runs of equal consecutive `keys`; `output[i]` is the scan of
    /// `values` within `i`'s segment (exclusive: the identity at each segment's first element).
    /// `keys` and `values` must have the same length. One pass, like [`Context::scan`]; never
    /// blocks the host.
    ///
    /// ```
    /// # fn main() -> gpu_reduce::Result<()> {
    /// use gpu_reduce::{Context, Reduction, ScanKind};
    /// let ctx = Context::sim()?;
    /// let keys = ctx.htod(&[7u32, 7, 2, 2, 2])?;
    /// let x = ctx.htod(&[1i64, 1, 1, 1, 1])?;
    /// let mut out = ctx.alloc_zeros::<i64>(5)?;
    /// ctx.scan_by_key(&keys, &x, &mut out, Reduction::Sum, ScanKind::Inclusive)?;
    /// assert_eq!(ctx.dtoh(&out)?, [1, 2, 1, 2, 3]);
    /// # Ok(()) }
    /// ```
    pub fn scan_by_key<'a, 'b, 'c, K: DeviceElement, T: ScanByKeyElement<K>>(
        &self,
        keys: impl Into<DeviceView<'a, K>>,
        values: impl Into<DeviceView<'b, T>>,
        output: impl Into<DeviceViewMut<'c, T>>,
        op: Reduction,
        kind: ScanKind,
    ) -> Result<()> {
        let k = T::scan_by_key_kernel(op)
            .ok_or_else(|| unsupported_scan(op, T::DTYPE, "scan by key"))?;
        let (keys, values, mut output) = (keys.into(), values.into(), output.into());
        Self::check_scan_output(values.len(), &output)?;
        if keys.len() != values.len() {
            return Err(Error::LengthMismatch {
                what: "scan by key: the keys (one per value)".into(),
                expected: values.len() as u64,
                got: keys.len() as u64,
            });
        }
        let n = values.len() as u64;
        if n == 0 {
            return Ok(());
        }
        let exclusive = (kind == ScanKind::Exclusive) as u32;
        let (kp, _keys_read) = self.read(&keys)?;
        let (vp, _values_read) = self.read(&values)?;
        let (op_, _write) = self.write(&mut output)?;
        let grid = Self::scan_grid(n, ACTIVE.by_key_tile_elems(std::mem::size_of::<T>() as u64))?;
        let ws = self.workspace::<ScanWorkspace>();
        let mut ws = ws.lock().unwrap_or_else(|p| p.into_inner());
        let a = self.scan_workspace(&mut ws, grid as u64)?;
        let params = ScanByKeyParams {
            keys: kp as *const K,
            values: vp as *const T,
            output: op_ as *mut T,
            n,
            counter: a.counter as *mut u32,
            flags: a.flags as *mut u32,
            aggregates: a.aggregates as *mut Headed<T>,
            prefixes: a.prefixes as *mut Headed<T>,
            exclusive,
            epoch: a.epoch,
        };
        let shape = LaunchShape::linear(grid, ACTIVE.block, 0);
        // SAFETY: addresses of this context's memory with the room the scan needs.
        unsafe { self.launch_kernel(&crate::BUILTIN, &k, shape, params) }
    }
}

/// The scans (plain and by key) the host can ask for, per type of the kernels' built-in table
/// (for the library's index test; with the `f16` feature the 16-bit floats' too).
#[cfg(test)]
pub(crate) fn kernel_names() -> Vec<&'static str> {
    fn of<T: ScanElement>(names: &mut Vec<&'static str>) {
        for op in Reduction::ALL {
            names.extend(
                ScanKind::ALL
                    .iter()
                    .filter_map(|&kind| T::scan_kernel(op, kind))
                    .map(|k| k.name),
            );
        }
    }
    fn by_key<T: ScanByKeyElement<u32> + ScanByKeyElement<u64>>(names: &mut Vec<&'static str>) {
        for op in Reduction::ALL {
            names.extend(<T as ScanByKeyElement<u32>>::scan_by_key_kernel(op).map(|k| k.name));
            names.extend(<T as ScanByKeyElement<u64>>::scan_by_key_kernel(op).map(|k| k.name));
        }
    }
    let mut names = vec![];
    macro_rules! each {
        ($t:ident $ops:tt) => {{
            of::<kernels::builtin_elem!($t)>(&mut names);
            by_key::<kernels::builtin_elem!($t)>(&mut names);
        }};
    }
    kernels::builtin_table!(types each! {} int float);
    #[cfg(feature = "f16")]
    {
        macro_rules! each {
            ($t:ident $ops:tt) => {
                of::<kernels::builtin_elem!($t)>(&mut names)
            };
        }
        kernels::builtin_table!(types each! {} half);
    }
    names
}
