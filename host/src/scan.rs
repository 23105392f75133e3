//! Prefix scans on the device: the production single-pass decoupled look-back scan, and the
//! operator/kind vocabulary shared with the teaching variants (`scan_ladder`: BIT, BCAO).

use crate::reduce::DeviceElement;

/// Inclusive (`out[i] = x[0] ⊕ … ⊕ x[i]`) or exclusive (`out[i] = x[0] ⊕ … ⊕ x[i-1]`,
/// `out[0]` = the operator's identity).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScanKind {
    Inclusive,
    Exclusive,
}

impl ScanKind {
    pub const ALL: [ScanKind; 2] = [ScanKind::Inclusive, ScanKind::Exclusive];
    pub fn name(self) -> &'static str {
        match self {
            ScanKind::Inclusive => "inclusive",
            ScanKind::Exclusive => "exclusive",
        }
    }
}

/// The built-in scan operators (any other associative operator with an identity goes through
/// `kernels::ops::ReduceOp` and `kernels::scan_kernels!`). Integer sums wrap; float min/max
/// propagate NaN, as the reductions do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScanOperator {
    Sum,
    Min,
    Max,
}

impl ScanOperator {
    pub const ALL: [ScanOperator; 3] = [ScanOperator::Sum, ScanOperator::Min, ScanOperator::Max];
    pub fn name(self) -> &'static str {
        match self {
            ScanOperator::Sum => "sum",
            ScanOperator::Min => "min",
            ScanOperator::Max => "max",
        }
    }

    /// The operator's identity for `T`.
    pub fn identity<T: DeviceElement>(self) -> T {
        use kernels::ops::{Max, Min, ReduceOp, Sum};
        match self {
            ScanOperator::Sum => <Sum as ReduceOp<T>>::identity(),
            ScanOperator::Min => <Min as ReduceOp<T>>::identity(),
            ScanOperator::Max => <Max as ReduceOp<T>>::identity(),
        }
    }

    /// `a ⊕ b` with the same semantics as the device kernels.
    pub fn combine<T: DeviceElement>(self, a: T, b: T) -> T {
        use kernels::ops::{Max, Min, ReduceOp, Sum};
        match self {
            ScanOperator::Sum => <Sum as ReduceOp<T>>::combine(a, b),
            ScanOperator::Min => <Min as ReduceOp<T>>::combine(a, b),
            ScanOperator::Max => <Max as ReduceOp<T>>::combine(a, b),
        }
    }
}

/// The CPU scan the device scans are checked against: sequential, same operator semantics
/// (floats are summed in `T`; tests compare float sums against an f64 scan with a bound).
pub fn cpu_scan<T: DeviceElement>(data: &[T], op: ScanOperator, kind: ScanKind) -> Vec<T> {
    let mut acc = op.identity::<T>();
    data.iter()
        .map(|&x| {
            let before = acc;
            acc = op.combine(acc, x);
            match kind {
                ScanKind::Inclusive => acc,
                ScanKind::Exclusive => before,
            }
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The production scan: single pass, decoupled look-back.

use cudarc::driver::PushKernelArg;
use kernels::launch::{SCAN_BLOCK, scan_tiles};
use kernels::scan::Headed;
use kernels::scan::lookback::EPOCH_MASK;

use crate::context::{Context, DeviceBuffer, DeviceView, LaunchShape};
use crate::error::{Error, Result};

/// The simulator's entry point of a scan kernel: input, output, n, counter, flags,
/// aggregates, prefixes, epoch.
pub type SimScanFn<T> = unsafe fn(*const T, *mut T, u64, *mut u32, *mut u32, *mut T, *mut T, u32);
/// The simulator's entry point of a scan-by-key kernel.
pub type SimScanByKeyFn<K, T> = unsafe fn(
    *const K,
    *const T,
    *mut T,
    u64,
    *mut u32,
    *mut u32,
    *mut Headed<T>,
    *mut Headed<T>,
    u32,
);

/// A scan kernel: its PTX name and its simulator function.
#[derive(Clone, Copy)]
pub struct ScanKernel<F> {
    pub name: &'static str,
    pub sim: F,
}

/// Element types of the device scans: i32, u32, i64, u64, f32, f64.
pub trait ScanElement: DeviceElement {
    fn scan_kernel(op: ScanOperator, kind: ScanKind) -> ScanKernel<SimScanFn<Self>>;
}

macro_rules! scan_element {
    ($t:ty, $($o:ident, $k:ident => $name:ident;)*) => {
        impl ScanElement for $t {
            fn scan_kernel(op: ScanOperator, kind: ScanKind) -> ScanKernel<SimScanFn<Self>> {
                match (op, kind) {
                    $((ScanOperator::$o, ScanKind::$k) => ScanKernel {
                        name: stringify!($name),
                        sim: kernels::scan::$name,
                    },)*
                }
            }
        }
    };
}

#[rustfmt::skip]
scan_element!(i32,
    Sum, Inclusive => scan_inclusive_sum_i32;
    Sum, Exclusive => scan_exclusive_sum_i32;
    Min, Inclusive => scan_inclusive_min_i32;
    Min, Exclusive => scan_exclusive_min_i32;
    Max, Inclusive => scan_inclusive_max_i32;
    Max, Exclusive => scan_exclusive_max_i32;
);
#[rustfmt::skip]
scan_element!(u32,
    Sum, Inclusive => scan_inclusive_sum_u32;
    Sum, Exclusive => scan_exclusive_sum_u32;
    Min, Inclusive => scan_inclusive_min_u32;
    Min, Exclusive => scan_exclusive_min_u32;
    Max, Inclusive => scan_inclusive_max_u32;
    Max, Exclusive => scan_exclusive_max_u32;
);
#[rustfmt::skip]
scan_element!(i64,
    Sum, Inclusive => scan_inclusive_sum_i64;
    Sum, Exclusive => scan_exclusive_sum_i64;
    Min, Inclusive => scan_inclusive_min_i64;
    Min, Exclusive => scan_exclusive_min_i64;
    Max, Inclusive => scan_inclusive_max_i64;
    Max, Exclusive => scan_exclusive_max_i64;
);
#[rustfmt::skip]
scan_element!(u64,
    Sum, Inclusive => scan_inclusive_sum_u64;
    Sum, Exclusive => scan_exclusive_sum_u64;
    Min, Inclusive => scan_inclusive_min_u64;
    Min, Exclusive => scan_exclusive_min_u64;
    Max, Inclusive => scan_inclusive_max_u64;
    Max, Exclusive => scan_exclusive_max_u64;
);
#[rustfmt::skip]
scan_element!(f32,
    Sum, Inclusive => scan_inclusive_sum_f32;
    Sum, Exclusive => scan_exclusive_sum_f32;
    Min, Inclusive => scan_inclusive_min_f32;
    Min, Exclusive => scan_exclusive_min_f32;
    Max, Inclusive => scan_inclusive_max_f32;
    Max, Exclusive => scan_exclusive_max_f32;
);
#[rustfmt::skip]
scan_element!(f64,
    Sum, Inclusive => scan_inclusive_sum_f64;
    Sum, Exclusive => scan_exclusive_sum_f64;
    Min, Inclusive => scan_inclusive_min_f64;
    Min, Exclusive => scan_exclusive_min_f64;
    Max, Inclusive => scan_inclusive_max_f64;
    Max, Exclusive => scan_exclusive_max_f64;
);

/// The scan-by-key kernel of key type `K` for value type `T`, per (operator, kind).
pub trait ByKeyKernel<K>: ScanElement {
    fn by_key_kernel(op: ScanOperator, kind: ScanKind) -> ScanKernel<SimScanByKeyFn<K, Self>>;
}

macro_rules! by_key {
    ($key:ty, $t:ty, $($o:ident, $k:ident => $name:ident;)*) => {
        impl ByKeyKernel<$key> for $t {
            fn by_key_kernel(op: ScanOperator, kind: ScanKind) -> ScanKernel<SimScanByKeyFn<$key, Self>> {
                match (op, kind) {
                    $((ScanOperator::$o, ScanKind::$k) => ScanKernel {
                        name: stringify!($name),
                        sim: kernels::scan::$name,
                    },)*
                }
            }
        }
    };
}

#[rustfmt::skip]
by_key!(u32, i32,
    Sum, Inclusive => scan_by_key_inclusive_sum_u32_i32;
    Sum, Exclusive => scan_by_key_exclusive_sum_u32_i32;
    Min, Inclusive => scan_by_key_inclusive_min_u32_i32;
    Min, Exclusive => scan_by_key_exclusive_min_u32_i32;
    Max, Inclusive => scan_by_key_inclusive_max_u32_i32;
    Max, Exclusive => scan_by_key_exclusive_max_u32_i32;
);
#[rustfmt::skip]
by_key!(u32, u32,
    Sum, Inclusive => scan_by_key_inclusive_sum_u32_u32;
    Sum, Exclusive => scan_by_key_exclusive_sum_u32_u32;
    Min, Inclusive => scan_by_key_inclusive_min_u32_u32;
    Min, Exclusive => scan_by_key_exclusive_min_u32_u32;
    Max, Inclusive => scan_by_key_inclusive_max_u32_u32;
    Max, Exclusive => scan_by_key_exclusive_max_u32_u32;
);
#[rustfmt::skip]
by_key!(u32, i64,
    Sum, Inclusive => scan_by_key_inclusive_sum_u32_i64;
    Sum, Exclusive => scan_by_key_exclusive_sum_u32_i64;
    Min, Inclusive => scan_by_key_inclusive_min_u32_i64;
    Min, Exclusive => scan_by_key_exclusive_min_u32_i64;
    Max, Inclusive => scan_by_key_inclusive_max_u32_i64;
    Max, Exclusive => scan_by_key_exclusive_max_u32_i64;
);
#[rustfmt::skip]
by_key!(u32, u64,
    Sum, Inclusive => scan_by_key_inclusive_sum_u32_u64;
    Sum, Exclusive => scan_by_key_exclusive_sum_u32_u64;
    Min, Inclusive => scan_by_key_inclusive_min_u32_u64;
    Min, Exclusive => scan_by_key_exclusive_min_u32_u64;
    Max, Inclusive => scan_by_key_inclusive_max_u32_u64;
    Max, Exclusive => scan_by_key_exclusive_max_u32_u64;
);
#[rustfmt::skip]
by_key!(u32, f32,
    Sum, Inclusive => scan_by_key_inclusive_sum_u32_f32;
    Sum, Exclusive => scan_by_key_exclusive_sum_u32_f32;
    Min, Inclusive => scan_by_key_inclusive_min_u32_f32;
    Min, Exclusive => scan_by_key_exclusive_min_u32_f32;
    Max, Inclusive => scan_by_key_inclusive_max_u32_f32;
    Max, Exclusive => scan_by_key_exclusive_max_u32_f32;
);
#[rustfmt::skip]
by_key!(u32, f64,
    Sum, Inclusive => scan_by_key_inclusive_sum_u32_f64;
    Sum, Exclusive => scan_by_key_exclusive_sum_u32_f64;
    Min, Inclusive => scan_by_key_inclusive_min_u32_f64;
    Min, Exclusive => scan_by_key_exclusive_min_u32_f64;
    Max, Inclusive => scan_by_key_inclusive_max_u32_f64;
    Max, Exclusive => scan_by_key_exclusive_max_u32_f64;
);
#[rustfmt::skip]
by_key!(u64, i32,
    Sum, Inclusive => scan_by_key_inclusive_sum_u64_i32;
    Sum, Exclusive => scan_by_key_exclusive_sum_u64_i32;
    Min, Inclusive => scan_by_key_inclusive_min_u64_i32;
    Min, Exclusive => scan_by_key_exclusive_min_u64_i32;
    Max, Inclusive => scan_by_key_inclusive_max_u64_i32;
    Max, Exclusive => scan_by_key_exclusive_max_u64_i32;
);
#[rustfmt::skip]
by_key!(u64, u32,
    Sum, Inclusive => scan_by_key_inclusive_sum_u64_u32;
    Sum, Exclusive => scan_by_key_exclusive_sum_u64_u32;
    Min, Inclusive => scan_by_key_inclusive_min_u64_u32;
    Min, Exclusive => scan_by_key_exclusive_min_u64_u32;
    Max, Inclusive => scan_by_key_inclusive_max_u64_u32;
    Max, Exclusive => scan_by_key_exclusive_max_u64_u32;
);
#[rustfmt::skip]
by_key!(u64, i64,
    Sum, Inclusive => scan_by_key_inclusive_sum_u64_i64;
    Sum, Exclusive => scan_by_key_exclusive_sum_u64_i64;
    Min, Inclusive => scan_by_key_inclusive_min_u64_i64;
    Min, Exclusive => scan_by_key_exclusive_min_u64_i64;
    Max, Inclusive => scan_by_key_inclusive_max_u64_i64;
    Max, Exclusive => scan_by_key_exclusive_max_u64_i64;
);
#[rustfmt::skip]
by_key!(u64, u64,
    Sum, Inclusive => scan_by_key_inclusive_sum_u64_u64;
    Sum, Exclusive => scan_by_key_exclusive_sum_u64_u64;
    Min, Inclusive => scan_by_key_inclusive_min_u64_u64;
    Min, Exclusive => scan_by_key_exclusive_min_u64_u64;
    Max, Inclusive => scan_by_key_inclusive_max_u64_u64;
    Max, Exclusive => scan_by_key_exclusive_max_u64_u64;
);
#[rustfmt::skip]
by_key!(u64, f32,
    Sum, Inclusive => scan_by_key_inclusive_sum_u64_f32;
    Sum, Exclusive => scan_by_key_exclusive_sum_u64_f32;
    Min, Inclusive => scan_by_key_inclusive_min_u64_f32;
    Min, Exclusive => scan_by_key_exclusive_min_u64_f32;
    Max, Inclusive => scan_by_key_inclusive_max_u64_f32;
    Max, Exclusive => scan_by_key_exclusive_max_u64_f32;
);
#[rustfmt::skip]
by_key!(u64, f64,
    Sum, Inclusive => scan_by_key_inclusive_sum_u64_f64;
    Sum, Exclusive => scan_by_key_exclusive_sum_u64_f64;
    Min, Inclusive => scan_by_key_inclusive_min_u64_f64;
    Min, Exclusive => scan_by_key_exclusive_min_u64_f64;
    Max, Inclusive => scan_by_key_inclusive_max_u64_f64;
    Max, Exclusive => scan_by_key_exclusive_max_u64_f64;
);

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
    /// One u64 per tile: a status word, or a status word and a 4-byte value packed.
    flags: DeviceBuffer<u32>,
    /// Aggregates then prefixes: 16 bytes per tile each.
    values: DeviceBuffer<u64>,
}

/// The addresses one scan launch needs.
struct ScanArgs {
    counter: u64,
    flags: u64,
    aggregates: u64,
    prefixes: u64,
    epoch: u32,
}

impl Context {
    /// Workspace for `tiles` tiles and a fresh epoch.
    fn scan_workspace(&self, ws: &mut ScanWorkspace, tiles: u64) -> Result<ScanArgs> {
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
                    flags: self.alloc_zeros::<u32>(2 * len)?,
                    values: self.alloc_zeros::<u64>(4 * len)?,
                })
            }
        };
        ws.tiles = cap;
        ws.epoch += 1;
        let values = self.addr(&b.values);
        Ok(ScanArgs {
            counter: self.addr(&b.counter),
            flags: self.addr(&b.flags),
            aggregates: values,
            prefixes: values + 16 * ws.tiles,
            epoch: ws.epoch,
        })
    }

    /// The checks every scan makes: one backend, and room for `n` results.
    fn check_scan_output<T>(
        &self,
        backends: &[crate::BackendKind],
        n: usize,
        output: &DeviceBuffer<T>,
    ) -> Result<()> {
        self.check(backends)?;
        if output.len() < n {
            return Err(Error::InvalidArgument(format!(
                "scan output holds {} elements, the input {n}",
                output.len()
            )));
        }
        Ok(())
    }

    /// Scan `input` into `output` with kernel `k`, after the checks.
    fn scan_view<T: ScanElement>(
        &self,
        k: ScanKernel<SimScanFn<T>>,
        input: DeviceView<'_, T>,
        output: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        self.check_scan_output(&[input.backend(), output.backend()], input.len(), output)?;
        let (i, o) = (self.view_addr(&input), self.addr(output));
        self.launch_scan(k, i, o, input.len() as u64)
    }

    /// Grid of a scan over `n` elements of `T`, or an error when it exceeds the launch limit.
    fn scan_grid<T>(n: u64) -> Result<u32> {
        let tiles = scan_tiles(n, std::mem::size_of::<T>() as u64);
        u32::try_from(tiles)
            .ok()
            .filter(|&t| t < i32::MAX as u32)
            .ok_or_else(|| {
                Error::InvalidArgument(format!("a scan of {n} elements needs too many tiles"))
            })
    }

    fn launch_scan<T: ScanElement>(
        &self,
        k: ScanKernel<SimScanFn<T>>,
        input: u64,
        output: u64,
        n: u64,
    ) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        let grid = Self::scan_grid::<T>(n)?;
        let mut ws = self.scan_ws.lock().unwrap_or_else(|p| p.into_inner());
        let a = self.scan_workspace(&mut ws, grid as u64)?;
        let sim = k.sim;
        self.launch(
            k.name,
            LaunchShape::linear(grid, SCAN_BLOCK, 0),
            |b| {
                b.arg(&input)
                    .arg(&output)
                    .arg(&n)
                    .arg(&a.counter)
                    .arg(&a.flags)
                    .arg(&a.aggregates)
                    .arg(&a.prefixes)
                    .arg(&a.epoch);
            },
            // SAFETY: the same arguments, as addresses of this context's (host) memory.
            || unsafe {
                sim(
                    input as *const T,
                    output as *mut T,
                    n,
                    a.counter as *mut u32,
                    a.flags as *mut u32,
                    a.aggregates as *mut T,
                    a.prefixes as *mut T,
                    a.epoch,
                )
            },
        )
    }

    /// Scan `input` with `op` into `output[..input.len()]`, in one pass (decoupled look-back).
    /// Inclusive: `output[i] = input[0] ⊕ … ⊕ input[i]`; exclusive: `input[0] ⊕ … ⊕ input[i-1]`
    /// (the identity at 0). Empty input is a no-op. Integer results are exact (sums wrap);
    /// float results may differ in the last bits from run to run (the association order
    /// depends on timing).
    pub fn scan<'a, T: ScanElement>(
        &self,
        input: impl Into<DeviceView<'a, T>>,
        output: &mut DeviceBuffer<T>,
        op: ScanOperator,
        kind: ScanKind,
    ) -> Result<()> {
        self.scan_view(T::scan_kernel(op, kind), input.into(), output)
    }

    /// [`Context::scan`] in place: `data` is overwritten with its scan.
    pub fn scan_in_place<T: ScanElement>(
        &self,
        data: &mut DeviceBuffer<T>,
        op: ScanOperator,
        kind: ScanKind,
    ) -> Result<()> {
        self.check(&[data.backend()])?;
        let a = self.addr(data);
        self.launch_scan(T::scan_kernel(op, kind), a, a, data.len() as u64)
    }

    /// Inclusive sum, the most common scan.
    pub fn inclusive_sum<'a, T: ScanElement>(
        &self,
        input: impl Into<DeviceView<'a, T>>,
        output: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        self.scan(input, output, ScanOperator::Sum, ScanKind::Inclusive)
    }

    /// A user operator's scan: `kernel` is a kernel exported with `kernels::scan_kernels!` and
    /// listed in the PTX registry, `sim` the same function for the simulator.
    ///
    /// # Safety
    /// `kernel` and `sim` must be the same `scan_device::<T, O, _>` instance.
    pub unsafe fn scan_custom<'a, T: ScanElement>(
        &self,
        kernel: &'static str,
        sim: SimScanFn<T>,
        input: impl Into<DeviceView<'a, T>>,
        output: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        self.scan_view(ScanKernel { name: kernel, sim }, input.into(), output)
    }

    /// Scan by key: segments are runs of equal consecutive `keys`; `output[i]` is the scan of
    /// `values` within `i`'s segment (exclusive: the identity at each segment's first element).
    /// `keys` and `values` must have the same length. One pass, like [`Context::scan`].
    pub fn scan_by_key<'a, 'b, K: DeviceElement, T: ByKeyKernel<K>>(
        &self,
        keys: impl Into<DeviceView<'a, K>>,
        values: impl Into<DeviceView<'b, T>>,
        output: &mut DeviceBuffer<T>,
        op: ScanOperator,
        kind: ScanKind,
    ) -> Result<()> {
        let (keys, values) = (keys.into(), values.into());
        let backends = [keys.backend(), values.backend(), output.backend()];
        self.check_scan_output(&backends, values.len(), output)?;
        if keys.len() != values.len() {
            return Err(Error::InvalidArgument(format!(
                "scan by key: {} keys for {} values",
                keys.len(),
                values.len()
            )));
        }
        let n = values.len() as u64;
        if n == 0 {
            return Ok(());
        }
        let k = T::by_key_kernel(op, kind);
        let (kp, vp, op_) = (
            self.view_addr(&keys),
            self.view_addr(&values),
            self.addr(output),
        );
        let grid = Self::scan_grid::<T>(n)?;
        let mut ws = self.scan_ws.lock().unwrap_or_else(|p| p.into_inner());
        let a = self.scan_workspace(&mut ws, grid as u64)?;
        let sim = k.sim;
        self.launch(
            k.name,
            LaunchShape::linear(grid, SCAN_BLOCK, 0),
            |b| {
                b.arg(&kp)
                    .arg(&vp)
                    .arg(&op_)
                    .arg(&n)
                    .arg(&a.counter)
                    .arg(&a.flags)
                    .arg(&a.aggregates)
                    .arg(&a.prefixes)
                    .arg(&a.epoch);
            },
            // SAFETY: the same arguments, as addresses of this context's (host) memory.
            || unsafe {
                sim(
                    kp as *const K,
                    vp as *const T,
                    op_ as *mut T,
                    n,
                    a.counter as *mut u32,
                    a.flags as *mut u32,
                    a.aggregates as *mut Headed<T>,
                    a.prefixes as *mut Headed<T>,
                    a.epoch,
                )
            },
        )
    }
}

/// The CPU scan by key the device is checked against.
pub fn cpu_scan_by_key<K: PartialEq + Copy, T: DeviceElement>(
    keys: &[K],
    values: &[T],
    op: ScanOperator,
    kind: ScanKind,
) -> Vec<T> {
    let mut out = Vec::with_capacity(values.len());
    let mut acc = op.identity::<T>();
    for (i, &v) in values.iter().enumerate() {
        if i == 0 || keys[i] != keys[i - 1] {
            acc = op.identity::<T>();
        }
        let before = acc;
        acc = op.combine(acc, v);
        out.push(match kind {
            ScanKind::Inclusive => acc,
            ScanKind::Exclusive => before,
        });
    }
    out
}
