//! The teaching prefix scans of seed 003 on either backend: the Fenwick-tree (BIT) scan and
//! the GPU Gems 3 Blelloch scan with bank-conflict avoidance (BCAO). Kernels in
//! `tool_kernels::scan_ladder`; the production scan is `crate::scan`.
//!
//! Both take any `n` (no power-of-two or block-multiple assumption), inclusive or exclusive,
//! with the operators of [`Reduction`]. Each call allocates its own workspace (these are
//! teaching variants, not the fast path): the BIT a copy of the input, which its build turns
//! into the tree in place (the seed's `buffer1`); BCAO one buffer of tile totals per recursion
//! level. [`bit_plan`] and [`bcao_plan`] list the launches a call makes, in order: the calls
//! run exactly those.

use cudarc::driver::PushKernelArg;
use tool_kernels::scan_ladder::{ScanLadderElem, ScanLadderKernels, ScanLadderOp, bcao, bit};

use gpu_reduce::DeviceElement;
use gpu_reduce::{Context, DeviceBuffer, LaunchShape};
use gpu_reduce::{Error, Result};
use gpu_reduce::{Reduction, ScanKind};

use crate::TOOL_KERNELS;

/// An element type of the teaching scans (`i32`, `u32`, `i64`, `u64`, `f32`, `f64`): its
/// kernels, by operator, with their PTX names and simulator functions.
pub trait ScanLadderElement: DeviceElement + ScanLadderElem {
    /// The four kernels of `op` for this type; `None` for an operator the teaching scans lack
    /// (they offer [`Reduction::SCAN`]).
    fn kernels(op: Reduction) -> Option<ScanLadderKernels<Self>> {
        Some(Self::scan_ladder_kernels(match op {
            Reduction::Sum => ScanLadderOp::Sum,
            Reduction::Min => ScanLadderOp::Min,
            Reduction::Max => ScanLadderOp::Max,
            _ => return None,
        }))
    }

    /// [`ScanLadderElement::kernels`], or [`Error::Unsupported`].
    fn kernels_for(op: Reduction) -> Result<ScanLadderKernels<Self>> {
        Self::kernels(op).ok_or_else(|| Error::Unsupported {
            op: format!("the {} teaching scan", op.name()),
            dtype: Self::DTYPE,
            reason: "the teaching scans offer sum, min and max (Reduction::SCAN)",
        })
    }
}

impl ScanLadderElement for i32 {}
impl ScanLadderElement for u32 {}
impl ScanLadderElement for i64 {}
impl ScanLadderElement for u64 {}
impl ScanLadderElement for f32 {}
impl ScanLadderElement for f64 {}

/// Largest `n` the teaching scans take: the BIT query's grid, `ceil(n / 512)` blocks, must fit
/// CUDA's 1-D grid limit of `2^31 - 1` (BCAO's, with 1024 elements per block, fits then too).
pub const MAX_N: usize = ((1usize << 31) - 1) * bit::BLOCK as usize;

/// What one launch of a teaching scan runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanLadderStep {
    /// `scan_bit_build_*`: one level of the Fenwick tree, over the positions
    /// `(g + 1) * offset - 1` (`offset` = 512^level).
    BitBuild { offset: u64 },
    /// `scan_bit_query_*`: every element's prefix from the tree.
    BitQuery,
    /// `scan_bcao_block_*` on recursion level `level` (0: the input; then the tile totals of
    /// the level below), which holds `n` elements.
    BcaoBlock { level: usize, n: u64 },
    /// `scan_bcao_add_*`: the scanned tile totals of level `level + 1` combined into the
    /// `n` elements of level `level`.
    BcaoAdd { level: usize, n: u64 },
}

/// One launch: the step, its grid (blocks) and block (threads).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanLaunch {
    pub step: ScanLadderStep,
    pub grid: u32,
    pub block: u32,
}

impl ScanLaunch {
    /// The PTX entry point this launch runs for element type `T` and operator `op` (`None`
    /// for an operator the teaching scans lack).
    pub fn kernel_name<T: ScanLadderElement>(&self, op: Reduction) -> Option<&'static str> {
        let k = T::kernels(op)?;
        Some(match self.step {
            ScanLadderStep::BitBuild { .. } => k.bit_build.name,
            ScanLadderStep::BitQuery => k.bit_query.name,
            ScanLadderStep::BcaoBlock { .. } => k.bcao_block.name,
            ScanLadderStep::BcaoAdd { .. } => k.bcao_add.name,
        })
    }
}

/// `ceil(items / per_block)` blocks; saturates for an `n` over [`MAX_N`], which no call
/// launches (rejected first).
fn blocks(items: u64, per_block: u32) -> u32 {
    u32::try_from(items.div_ceil(per_block as u64)).unwrap_or(u32::MAX)
}

/// The launches of [`Context::scan_bit`] over `n` elements: one tree build per level (while a
/// level has two positions to combine), then the query. None for `n = 0`.
pub fn bit_plan(n: usize) -> Vec<ScanLaunch> {
    let n = n as u64;
    if n == 0 {
        return Vec::new();
    }
    let mut plan: Vec<ScanLaunch> = bit::build_offsets(n)
        .map(|offset| ScanLaunch {
            step: ScanLadderStep::BitBuild { offset },
            grid: blocks(n / offset, bit::BLOCK),
            block: bit::BLOCK,
        })
        .collect();
    plan.push(ScanLaunch {
        step: ScanLadderStep::BitQuery,
        grid: blocks(n, bit::BLOCK),
        block: bit::BLOCK,
    });
    plan
}

/// The launches of [`Context::scan_bcao`] over `n` elements: a tile scan per recursion level,
/// bottom up (each writes its tile totals for the next), then an add-back per level but the
/// top, top down. None for `n = 0`.
pub fn bcao_plan(n: usize) -> Vec<ScanLaunch> {
    let levels: Vec<u64> = bcao::levels(n as u64).collect();
    let launch = |step, m| ScanLaunch {
        step,
        grid: blocks(m, bcao::TILE),
        block: bcao::BLOCK,
    };
    let scans = levels
        .iter()
        .enumerate()
        .map(|(level, &m)| launch(ScanLadderStep::BcaoBlock { level, n: m }, m));
    let adds = levels
        .iter()
        .enumerate()
        .rev()
        .skip(1)
        .map(|(level, &m)| launch(ScanLadderStep::BcaoAdd { level, n: m }, m));
    scans.chain(adds).collect()
}

/// Kernel launches of [`Context::scan_bit`] over `n` elements.
pub fn bit_launches(n: usize) -> usize {
    bit_plan(n).len()
}

/// Kernel launches of [`Context::scan_bcao`] over `n` elements.
pub fn bcao_launches(n: usize) -> usize {
    bcao_plan(n).len()
}

/// Checks shared by both scans; `n` on success.
fn scan_ladder_args<T>(
    ctx: &Context,
    input: &DeviceBuffer<T>,
    output: &DeviceBuffer<T>,
) -> Result<u64> {
    ctx.device_addr(input)?;
    ctx.device_addr(output)?;
    let n = input.len();
    if output.len() < n {
        return Err(Error::OutputTooSmall {
            what: "the scan's output (one element per input element)".into(),
            needed: n as u64,
            got: output.len() as u64,
        });
    }
    if n > MAX_N {
        return Err(Error::TooLarge {
            what: "the elements of a teaching scan (1-D grid limit)".into(),
            size: n as u64,
            limit: MAX_N as u64,
        });
    }
    Ok(n as u64)
}

/// One launch of a plan, on the buffers at `bufs`.
fn run_step<T: ScanLadderElement>(
    ctx: &Context,
    k: &ScanLadderKernels<T>,
    l: ScanLaunch,
    bufs: &PlanBuffers,
) -> Result<()> {
    let shape = LaunchShape::linear(l.grid, l.block, 0);
    // The plan and the buffers come from the same `bcao::levels`; a level without its
    // buffer would be a bug here, reported rather than launched.
    let level = |i: usize| {
        bufs.levels.get(i).copied().ok_or_else(|| {
            Error::Internal(format!(
                "the scan ladder has no buffer for level {i} of {l:?}"
            ))
        })
    };
    match l.step {
        ScanLadderStep::BitBuild { offset } => {
            let (tree, n) = (bufs.tree, bufs.n);
            let f = k.bit_build.sim;
            // SAFETY: the kernel's parameters in order, the same for the simulator.
            unsafe {
                ctx.launch(
                    &TOOL_KERNELS,
                    k.bit_build.name,
                    shape,
                    |b| {
                        b.arg(&tree).arg(&n).arg(&offset);
                    },
                    // SAFETY: the tree holds n elements of this context's memory.
                    move || f(tree as *mut T, n, offset),
                )
            }
        }
        ScanLadderStep::BitQuery => {
            let (tree, out, n, inclusive) = (bufs.tree, level(0)?, bufs.n, bufs.inclusive);
            let f = k.bit_query.sim;
            // SAFETY: the kernel's parameters in order, the same for the simulator.
            unsafe {
                ctx.launch(
                    &TOOL_KERNELS,
                    k.bit_query.name,
                    shape,
                    |b| {
                        b.arg(&tree).arg(&out).arg(&n).arg(&inclusive);
                    },
                    // SAFETY: the tree and the output hold n elements (checked by the caller).
                    move || f(tree as *const T, out as *mut T, n, inclusive),
                )
            }
        }
        ScanLadderStep::BcaoBlock { level: lv, n } => {
            // Level 0 is scanned from the input into the output; level l >= 1 (the tile
            // totals of level l - 1) in place in its own buffer.
            let dst = level(lv)?;
            let src = if lv == 0 { bufs.input } else { dst };
            // The top level's total is not needed: null.
            let totals = bufs.levels.get(lv + 1).copied().unwrap_or(0);
            // Only the caller's scan may be inclusive; the scans of the tile totals give
            // each tile the combination of the tiles before it: exclusive.
            let inclusive = if lv == 0 { bufs.inclusive } else { 0 };
            let f = k.bcao_block.sim;
            // SAFETY: the kernel's parameters in order, the same for the simulator.
            unsafe {
                ctx.launch(
                    &TOOL_KERNELS,
                    k.bcao_block.name,
                    shape,
                    |b| {
                        b.arg(&src).arg(&dst).arg(&totals).arg(&n).arg(&inclusive);
                    },
                    // SAFETY: src and dst hold n elements, totals one per block (or null).
                    move || {
                        f(
                            src as *const T,
                            dst as *mut T,
                            totals as *mut T,
                            n,
                            inclusive,
                        )
                    },
                )
            }
        }
        ScanLadderStep::BcaoAdd { level: lv, n } => {
            let (data, offsets) = (level(lv)?, level(lv + 1)?);
            let f = k.bcao_add.sim;
            // SAFETY: the kernel's parameters in order, the same for the simulator.
            unsafe {
                ctx.launch(
                    &TOOL_KERNELS,
                    k.bcao_add.name,
                    shape,
                    |b| {
                        b.arg(&data).arg(&offsets).arg(&n);
                    },
                    // SAFETY: data holds n elements, offsets one per tile of data.
                    move || f(data as *mut T, offsets as *const T, n),
                )
            }
        }
    }
}

/// The seed-003 teaching scans on a context.
pub trait ScanLadderExt {
    /// Prefix scan of `input` into `output[..input.len()]` on a Fenwick tree (seed 003).
    fn scan_bit<T: ScanLadderElement>(
        &self,
        input: &DeviceBuffer<T>,
        output: &mut DeviceBuffer<T>,
        op: Reduction,
        kind: ScanKind,
    ) -> Result<()>;

    /// Prefix scan of `input` into `output[..input.len()]` by the Blelloch scan with
    /// bank-conflict avoidance (GPU Gems 3).
    fn scan_bcao<T: ScanLadderElement>(
        &self,
        input: &DeviceBuffer<T>,
        output: &mut DeviceBuffer<T>,
        op: Reduction,
        kind: ScanKind,
    ) -> Result<()>;
}

impl ScanLadderExt for Context {
    /// Prefix scan of `input` into `output[..input.len()]` on a Fenwick tree (seed 003): the
    /// tree is built level by level in a copy of the input, then every element queries its
    /// prefix (`O(n log n)` work). `output` must hold at least `input.len()` elements (the
    /// rest is left alone); `n = 0` does nothing. The launches are [`bit_plan`]'s.
    fn scan_bit<T: ScanLadderElement>(
        &self,
        input: &DeviceBuffer<T>,
        output: &mut DeviceBuffer<T>,
        op: Reduction,
        kind: ScanKind,
    ) -> Result<()> {
        let k = T::kernels_for(op)?;
        let n = scan_ladder_args(self, input, output)?;
        if n == 0 {
            return Ok(());
        }
        let mut tree = self.alloc_zeros::<T>(input.len())?;
        self.copy_into(input, &mut tree, 0)?;
        let bufs = PlanBuffers {
            n,
            input: self.device_addr(input)?,
            tree: self.device_addr(&tree)?,
            levels: vec![self.device_addr(&*output)?],
            inclusive: (kind == ScanKind::Inclusive) as u32,
        };
        for l in bit_plan(input.len()) {
            run_step(self, &k, l, &bufs)?;
        }
        Ok(())
    }

    /// Prefix scan of `input` into `output[..input.len()]` by GPU Gems 3's work-efficient
    /// Blelloch scan with bank-conflict avoidance: tiles of 1024 elements scanned in shared
    /// memory, their totals scanned recursively by the same kernel, then added back. `output`
    /// must hold at least `input.len()` elements (the rest is left alone); `n = 0` does
    /// nothing. The launches are [`bcao_plan`]'s.
    fn scan_bcao<T: ScanLadderElement>(
        &self,
        input: &DeviceBuffer<T>,
        output: &mut DeviceBuffer<T>,
        op: Reduction,
        kind: ScanKind,
    ) -> Result<()> {
        let k = T::kernels_for(op)?;
        let n = scan_ladder_args(self, input, output)?;
        if n == 0 {
            return Ok(());
        }
        // One buffer of tile totals per level above the first.
        let totals = bcao::levels(n)
            .skip(1)
            .map(|m| self.alloc_zeros::<T>(m as usize))
            .collect::<Result<Vec<_>>>()?;
        let mut levels = vec![self.device_addr(&*output)?];
        for b in &totals {
            levels.push(self.device_addr(b)?);
        }
        let bufs = PlanBuffers {
            n,
            input: self.device_addr(input)?,
            tree: 0,
            levels,
            inclusive: (kind == ScanKind::Inclusive) as u32,
        };
        for l in bcao_plan(input.len()) {
            run_step(self, &k, l, &bufs)?;
        }
        Ok(())
    }
}

/// Device addresses the launches of a plan work on (all of this context's memory, alive for
/// the call).
struct PlanBuffers {
    /// Elements scanned.
    n: u64,
    /// The caller's input (BCAO's level 0 reads it).
    input: u64,
    /// BIT: the tree, built in a copy of the input.
    tree: u64,
    /// `[0]`: the caller's output; BCAO: `[l]` for `l >= 1`, the tile totals of level `l - 1`.
    levels: Vec<u64>,
    /// 1 for an inclusive scan.
    inclusive: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_ptx_has_every_scan_ladder_kernel() {
        for name in tool_kernels::scan_ladder::KERNEL_NAMES {
            assert!(
                crate::TOOL_KERNELS.contains(name),
                "PTX lacks .entry {name}"
            );
        }
    }

    #[test]
    fn bit_plans() {
        assert!(bit_plan(0).is_empty());
        assert_eq!(
            bit_plan(1),
            [ScanLaunch {
                step: ScanLadderStep::BitQuery,
                grid: 1,
                block: 512
            }]
        );
        let steps = |n| {
            bit_plan(n)
                .iter()
                .map(|l| (l.step, l.grid))
                .collect::<Vec<_>>()
        };
        use ScanLadderStep::*;
        assert_eq!(steps(513), [(BitBuild { offset: 1 }, 2), (BitQuery, 2)]);
        assert_eq!(
            steps(1024),
            [
                (BitBuild { offset: 1 }, 2),
                (BitBuild { offset: 512 }, 1),
                (BitQuery, 2)
            ]
        );
        // The seed's 10^9: four levels (512^3 * 2 <= 10^9), then the query.
        let p = bit_plan(1_000_000_000);
        assert_eq!(p.len(), 5);
        assert_eq!(p[0].grid, 1_953_125);
        assert_eq!(p[3].step, BitBuild { offset: 1 << 27 });
        assert_eq!(p[3].grid, 1);
        assert_eq!(bit_launches(1_000_000_000), 5);
        assert_eq!(blocks(MAX_N as u64, bit::BLOCK), i32::MAX as u32);
    }

    #[test]
    fn bcao_plans() {
        use ScanLadderStep::*;
        assert_eq!(bcao_launches(0), 0);
        let steps = |n| {
            bcao_plan(n)
                .iter()
                .map(|l| (l.step, l.grid))
                .collect::<Vec<_>>()
        };
        assert_eq!(steps(1024), [(BcaoBlock { level: 0, n: 1024 }, 1)]);
        assert_eq!(
            steps(1025),
            [
                (BcaoBlock { level: 0, n: 1025 }, 2),
                (BcaoBlock { level: 1, n: 2 }, 1),
                (BcaoAdd { level: 0, n: 1025 }, 2),
            ]
        );
        assert_eq!(bcao_launches(1_000_000_000), 5);
        let p = bcao_plan(1_000_000_000);
        assert_eq!(p[2].step, BcaoBlock { level: 2, n: 954 });
        assert_eq!(
            p[3].step,
            BcaoAdd {
                level: 1,
                n: 976_563
            }
        );
        assert!(p.iter().all(|l| l.block == 512));
    }

    #[test]
    fn short_output_is_an_error_and_small_scans_work() {
        let ctx = Context::sim().unwrap();
        let input = ctx.htod(&[1i32, 2, 3]).unwrap();
        let mut out = ctx.alloc_zeros::<i32>(2).unwrap();
        for r in [
            ctx.scan_bit(&input, &mut out, Reduction::Sum, ScanKind::Inclusive),
            ctx.scan_bcao(&input, &mut out, Reduction::Max, ScanKind::Exclusive),
        ] {
            match r {
                Err(
                    e @ Error::OutputTooSmall {
                        needed: 3, got: 2, ..
                    },
                ) => {
                    assert!(e.to_string().contains("scan's output"), "{e}")
                }
                other => panic!("expected OutputTooSmall (3 needed, room for 2), got {other:?}"),
            }
        }
        let mut out = ctx.alloc_zeros::<i32>(4).unwrap();
        ctx.scan_bcao(&input, &mut out, Reduction::Sum, ScanKind::Inclusive)
            .unwrap();
        assert_eq!(ctx.dtoh(&out).unwrap(), [1, 3, 6, 0]);
        ctx.scan_bit(&input, &mut out, Reduction::Sum, ScanKind::Exclusive)
            .unwrap();
        assert_eq!(ctx.dtoh(&out).unwrap(), [0, 1, 3, 0]);
    }
}
