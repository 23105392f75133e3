//! The launch paths of the segmented reductions (the general kernel over a work list, the
//! listed form, the long-rows kernel), their scratch and their grids.

use kernels::Kernel;
use kernels::reduce::policy::SEGMENTED;
use kernels::reduce::segmented::{
    BLOCK, CHUNK_VECS, CTL_WORDS, ENTRY_WORDS, LISTED_MAX, OWNER_WORDS, SEGMENTS_PER_BLOCK,
    STAGE_BYTES, SegmentedParams, SimSegmentedFn, WARP_MAX, listed_workspace_bytes,
    rows_chunks_per_row, rows_workspace_bytes, tiles_bounds_kernel, tiles_tile_elems,
};
use kernels::scan::policy::ACTIVE;

use crate::scan::ScanWorkspace;

use crate::error::{Error, Result, plural};
use crate::reduce::DeviceElement;
use crate::runtime::LaunchShape;
use crate::runtime::{Backend, Context, DeviceBuffer, DeviceView, DeviceViewMut, KernelLibrary};

use super::check::segment_fault;
use super::{SegmentedKernel, Segments, SegmentsKind};

/// Scratch of the segmented reductions: the device flag bad offsets are reported through.
#[derive(Default)]
struct SegmentedWorkspace {
    status: Option<DeviceBuffer<u64>>,
    /// The work list (control words, entries, owner records, chunk partials), laid out by
    /// (entry capacity, chunk-slot capacity).
    list: ClearedScratch<(u64, u64)>,
    /// The long-rows kernel's counters and chunk partials, laid out by the row count.
    rows: ClearedScratch<u64>,
    /// The listed form's control words, counters and partials, laid out by the segment count.
    listed: ClearedScratch<u64>,
    /// Test override of the physical grid (0: automatic).
    grid_override: u32,
    /// Test override: CSR offsets never go by tiles.
    tiles_off: bool,
    /// The tiles form's bounds (one word a tile and one more), laid out by nothing (fully
    /// written by every bounds pass).
    tile_bounds: ClearedScratch<()>,
}

/// A kernel's scratch whose leading words (counters, control words) are zero between launches:
/// the kernel clears what it used, a fresh buffer starts zeroed, and `layout` (the last
/// launch's) says where those words lay. Another layout can put them where partials were, so
/// it clears them first.
#[derive(Default)]
struct ClearedScratch<L> {
    buf: Option<DeviceBuffer<u64>>,
    layout: L,
}

/// Physical blocks on the simulator at most (any grid gives the same bits; more only costs
/// OS-thread switching).
const SIM_GRID: u32 = 64;

impl Context {
    /// Cap the physical grid of the segmented reductions (`None`: automatic). For tests that
    /// show the result does not depend on the grid.
    #[cfg(feature = "tuning")]
    pub fn set_segmented_grid_limit(&self, grid: Option<u32>) {
        let ws = self.workspace::<SegmentedWorkspace>();
        ws.lock().unwrap_or_else(|p| p.into_inner()).grid_override = grid.map_or(0, |g| g.max(1));
    }

    /// Let CSR offsets of short segments go by tiles (the default) or not (`false`: the work
    /// list's forms, whose float bits depend on a segment's length alone). For tests that
    /// compare the two forms.
    #[cfg(feature = "tuning")]
    pub fn set_segmented_tiles(&self, enabled: bool) {
        let ws = self.workspace::<SegmentedWorkspace>();
        ws.lock().unwrap_or_else(|p| p.into_inner()).tiles_off = !enabled;
    }

    /// Check the lengths, launch `k` of `lib` and, for device offsets, read back the kernel's
    /// report on them. `index_out` is the second output of kernels that write indices.
    #[allow(clippy::too_many_arguments)] // one private entry for every public form
    pub(super) fn launch_segmented<T: DeviceElement, Out: Copy>(
        &self,
        lib: &'static KernelLibrary,
        k: &SegmentedKernel<T, Out>,
        writes_index: bool,
        input: DeviceView<'_, T>,
        segments: Segments<'_>,
        mut out: DeviceViewMut<'_, Out>,
        index_out: Option<DeviceViewMut<'_, u64>>,
    ) -> Result<()> {
        let count = out.len();
        let n = input.len();
        let check = segments.check;
        let csr = matches!(segments.kind, SegmentsKind::Csr(_));
        let (begin, end, segment_len) = match segments.kind {
            SegmentsKind::Offsets { begin, end } => {
                if begin.len() != end.len() {
                    return Err(Error::LengthMismatch {
                        what: "segmented reduction: the end offsets (one per begin offset)".into(),
                        expected: begin.len() as u64,
                        got: end.len() as u64,
                    });
                }
                if begin.len() != count {
                    return Err(Error::LengthMismatch {
                        what: "segmented reduction: the segments (offsets, one per output element)"
                            .into(),
                        expected: count as u64,
                        got: begin.len() as u64,
                    });
                }
                (Some(begin), Some(end), 0)
            }
            SegmentsKind::Csr(offsets) => {
                if offsets.len() != count + 1 && !(count == 0 && offsets.is_empty()) {
                    return Err(Error::LengthMismatch {
                        what: format!(
                            "segmented reduction: the CSR offsets (one more entry than the \
                             output's {})",
                            plural(count as u64, "segment")
                        ),
                        expected: count as u64 + 1,
                        got: offsets.len() as u64,
                    });
                }
                if count == 0 {
                    (None, None, 0)
                } else {
                    (Some(offsets.slice(..count)?), Some(offsets.slice(1..)?), 0)
                }
            }
            SegmentsKind::Fixed(len) => {
                if (count as u64).checked_mul(len) != Some(n as u64) {
                    return Err(Error::LengthMismatch {
                        what: if len == 0 {
                            "segmented reduction: the input of segments of length 0 (must be \
                             empty)"
                                .into()
                        } else {
                            format!(
                                "segmented reduction: the input of {} of {} (exactly out.len() \
                                 x segment_len: no partial last row)",
                                plural(count as u64, "segment"),
                                plural(len, "element")
                            )
                        },
                        expected: (count as u64).saturating_mul(len),
                        got: n as u64,
                    });
                }
                (None, None, len)
            }
        };
        // Only a user operator's kernel can disagree (the built-in calls pick theirs): the
        // message names the call made and the one to make.
        if writes_index != index_out.is_some() {
            return Err(Error::Unsupported {
                op: format!(
                    "{} with this operator",
                    if index_out.is_some() {
                        "segmented_arg_custom"
                    } else {
                        "segmented_reduce_custom"
                    }
                ),
                dtype: T::DTYPE,
                reason: if writes_index {
                    "its kernel writes an index (exported with `arg`): call segmented_arg_custom"
                } else {
                    "its kernel writes no index (exported without `arg`): call \
                     segmented_reduce_custom"
                },
            });
        }
        let mut index_out = index_out;
        if let Some(ix) = &index_out
            && ix.len() != count
        {
            return Err(Error::LengthMismatch {
                what: "segmented argmin/argmax: the index output (one per value output)".into(),
                expected: count as u64,
                got: ix.len() as u64,
            });
        }
        if count == 0 {
            return Ok(());
        }
        if begin.is_none() {
            return self.launch_rows(lib, &k.rows, input, segment_len, out, index_out);
        }
        let (listed, tiles, k) = (&k.listed, k.tiles, &k.general);
        let offsets = begin.is_some();
        if let Some(c) = check {
            self.check_owner(DeviceView::from(&c.flag).owner())?;
        }
        if offsets && check.is_none() && self.capturing()? {
            return Err(Error::NotCapturable {
                call: "a segmented reduction over device offsets",
                hint: "it reads the kernel's check of the offsets back (the fixed-length form \
                       can be captured, and so can offsets checked later: \
                       `Segments::check_later`)",
            });
        }

        let ws = self.workspace::<SegmentedWorkspace>();
        // Held through the launch and the read-back: one status flag per context.
        let mut ws = ws.lock().unwrap_or_else(|p| p.into_inner());
        let status = if let Some(c) = check {
            // The caller's flag: not cleared (it keeps the lowest bad segment until taken).
            self.scratch_addr(&c.flag)
        } else if offsets {
            if ws.status.is_none() {
                ws.status = Some(self.alloc_zeros::<u64>(1)?);
            }
            let Some(buf) = &ws.status else {
                unreachable!("allocated just above")
            };
            let addr = self.scratch_addr(buf);
            self.memset_raw(addr, 8)?;
            addr
        } else {
            0
        };

        let chunk = CHUNK_VECS * (16 / std::mem::size_of::<T>() as u64);
        let (n64, count64) = (n as u64, count as u64);
        // A few long segments: the kernel's listed form (the same bits) knows where every
        // chunk lies after one round of loads, where the work list takes several round trips.
        let listed_fits = offsets && count64 <= LISTED_MAX && n64 >= count64 * chunk;
        // CSR offsets of short segments: the input read as tiles whatever the boundaries.
        // Not when segments outnumber elements: a tile walks all the offsets that fall in it,
        // and mostly empty segments would pile onto a few tiles.
        let by_tiles = tiles.filter(|_| {
            csr && !listed_fits
                && !ws.tiles_off
                && count64 <= n64
                && n64 <= count64.saturating_mul(SEGMENTED.tiles_max_average)
        });
        if let Some(tk) = by_tiles {
            self.launch_tiles(lib, &tk, &mut ws, input, (begin, end), out, status)?;
        } else if listed_fits {
            self.launch_listed(
                lib,
                listed,
                &mut ws,
                input,
                (begin, end),
                out,
                index_out,
                status,
            )?;
        } else {
            // The work list's room: multi-chunk segments of non-overlapping segments number at
            // most n / chunk and hold at most 2n / chunk chunks; when overlapping segments need
            // more, the kernel reduces the rest block by block (same bits, less parallel).
            let entry_cap = (count as u64).min(n as u64 / chunk + 1);
            // Even, so the partials after the owner words stay 16-byte aligned.
            let partial_cap = 2 * (n as u64 / chunk) + 2;
            // Cleared between launches: control words, entries and owner records.
            let cleared = CTL_WORDS + entry_cap * ENTRY_WORDS + OWNER_WORDS * partial_cap;
            let list_words = usize::try_from(cleared + 2 * partial_cap)
                .map_err(|_| Error::OutOfMemory { bytes: usize::MAX })?;
            // Control words, entries and owner records cleared.
            let list = self.cleared_scratch(
                &mut ws.list,
                (entry_cap, partial_cap),
                list_words * 8,
                8 * cleared as usize,
            )?;

            // Blocks: one per group, plus one per chunk a long segment could have, up to what the
            // device holds at once (more would only wait for the first ones to finish). Blocks
            // draw groups as they start and only ever wait for groups already drawn, so any grid
            // is deadlock-free.
            let groups = (count as u64).div_ceil(SEGMENTS_PER_BLOCK as u64);
            let limit = self.segmented_resident(lib, k.name, ws.grid_override)?;
            let grid = (groups + n as u64 / chunk).min(limit as u64) as u32;
            {
                // The ordering guards live until the kernel is queued.
                let (input_addr, _input_access) = self.read(&input)?;
                let begin_read = begin.as_ref().map(|b| self.read(b)).transpose()?;
                let end_read = end.as_ref().map(|e| self.read(e)).transpose()?;
                let (begin_addr, end_addr) = (
                    begin_read.as_ref().map_or(0, |r| r.0),
                    end_read.as_ref().map_or(0, |r| r.0),
                );
                let (out_addr, _out_access) = self.write(&mut out)?;
                let index_write = index_out.as_mut().map(|ix| self.write(ix)).transpose()?;
                let index_addr = index_write.as_ref().map_or(0, |r| r.0);
                let (n, count) = (n as u64, count as u64);
                // SAFETY: addresses of this context's memory. Offsets views hold
                // `count` entries each (checked above), the outputs `count` elements; fixed-length
                // segments cover exactly the input.
                unsafe {
                    self.launch_kernel(
                        lib,
                        k,
                        LaunchShape::linear(grid, BLOCK, STAGE_BYTES),
                        SegmentedParams {
                            begin: begin_addr as *const u64,
                            end: end_addr as *const u64,
                            segment_len,
                            index_out: index_addr as *mut u64,
                            status: status as *mut u64,
                            ws: list as *mut u64,
                            entry_cap,
                            partial_cap,
                            ..SegmentedParams::new(
                                input_addr as *const T,
                                n,
                                count,
                                out_addr as *mut Out,
                            )
                        },
                    )?;
                }
            }
        }
        if !offsets || check.is_some() {
            return Ok(());
        }
        let Some(buf) = &ws.status else {
            unreachable!("set for offsets above")
        };
        let code = self.dtoh(buf)?[0];
        drop(ws);
        if code == 0 {
            return Ok(());
        }
        let code = !code;
        let s = (code >> 1) as usize;
        let (b, e) = match (begin, end) {
            (Some(b), Some(e)) => (
                self.dtoh(b.slice(s..s + 1)?)?[0],
                self.dtoh(e.slice(s..s + 1)?)?[0],
            ),
            _ => unreachable!("offsets checked on the device only"),
        };
        Err(Error::BadSegment {
            segment: s as u64,
            fault: segment_fault(code),
            offsets: Some((b, e)),
            input_len: Some(n as u64),
        })
    }

    /// The tiles form (`tiles_device`) over the CSR offsets `begin` (`out.len()` + 1 of them
    /// from there; `end` is `begin` one on), reporting bad offsets to `status`. Never blocks.
    #[allow(clippy::too_many_arguments)] // the general path's state, passed on
    fn launch_tiles<T: DeviceElement, Out: Copy>(
        &self,
        lib: &'static KernelLibrary,
        k: &Kernel<SimSegmentedFn<T, Out>>,
        sw: &mut SegmentedWorkspace,
        input: DeviceView<'_, T>,
        (begin, end): (Option<DeviceView<'_, u64>>, Option<DeviceView<'_, u64>>),
        mut out: DeviceViewMut<'_, Out>,
        status: u64,
    ) -> Result<()> {
        let (Some(begin), Some(end)) = (begin, end) else {
            unreachable!("the tiles form takes CSR offsets")
        };
        let (n, count) = (input.len() as u64, out.len() as u64);
        let tile_elems = tiles_tile_elems(std::mem::size_of::<T>() as u64);
        let grid = Self::scan_grid(n, tile_elems)?;
        let (prefetch, resident) = match &self.backend {
            Backend::Cuda(_) => {
                let blocks = self.kernel(lib, k.name)?.blocks_per_sm(ACTIVE.block)?;
                let resident = self.info().multiprocessors * blocks;
                (ACTIVE.reduce_by_key_prefetch_tiles(resident), resident)
            }
            // The tests' inputs of more tiles than this meet the bounds pass, the others the search.
            _ => (0, SIM_GRID),
        };
        let (input_addr, _input_access) = self.read(&input)?;
        let (begin_addr, _begin_access) = self.read(&begin)?;
        let (_, _end_access) = self.read(&end)?;
        let (out_addr, _out_access) = self.write(&mut out)?;
        // More tiles than run at once: a pass finds every tile's offsets first, off the tiles'
        // critical path (a tile's own search is several dependent round trips to memory).
        let bounds = match tiles_bounds_kernel(std::mem::size_of::<T>()) {
            Some(bk) if grid > resident => {
                let words = grid as usize + 1;
                let addr = self.cleared_scratch(&mut sw.tile_bounds, (), 8 * words, 0)?;
                // SAFETY: the offsets as below; the bounds scratch holds a word per tile and
                // one more; the pass reads the offsets and writes the bounds only.
                unsafe {
                    self.launch_kernel(
                        lib,
                        &bk,
                        LaunchShape::linear((grid + 1).div_ceil(ACTIVE.block), ACTIVE.block, 0),
                        SegmentedParams::<u8, u8> {
                            begin: begin_addr as *const u64,
                            bounds: addr as *mut u64,
                            ..SegmentedParams::new(std::ptr::null(), n, count, std::ptr::null_mut())
                        },
                    )?
                };
                addr
            }
            _ => 0,
        };
        let ws = self.workspace::<ScanWorkspace>();
        let mut ws = ws.lock().unwrap_or_else(|p| p.into_inner());
        let a = self.scan_workspace(&mut ws, grid as u64)?;
        // SAFETY: addresses of this context's memory: `begin` starts `out.len() + 1` CSR
        // offsets (`end` is the same buffer one on), the output holds `out.len()` elements, the
        // scan workspace a counter and a fixed slot per tile, the bounds (if any) a word per
        // tile and one more, written by the pass before in stream order.
        unsafe {
            self.launch_kernel(
                lib,
                k,
                LaunchShape::linear(grid, ACTIVE.block, 0),
                SegmentedParams {
                    begin: begin_addr as *const u64,
                    status: status as *mut u64,
                    ws: a.aggregates as *mut u64,
                    counter: a.counter as *mut u32,
                    epoch: a.epoch,
                    prefetch,
                    bounds: bounds as *mut u64,
                    ..SegmentedParams::new(input_addr as *const T, n, count, out_addr as *mut Out)
                },
            )
        }
    }

    /// The rows kernel over `out.len()` rows of `segment_len` elements; the
    /// lengths are checked by the caller. Never blocks (no read-back); capturable.
    fn launch_rows<T: DeviceElement, Out: Copy>(
        &self,
        lib: &'static KernelLibrary,
        k: &Kernel<SimSegmentedFn<T, Out>>,
        input: DeviceView<'_, T>,
        segment_len: u64,
        mut out: DeviceViewMut<'_, Out>,
        mut index_out: Option<DeviceViewMut<'_, u64>>,
    ) -> Result<()> {
        let rows = out.len() as u64;
        let elem = std::mem::size_of::<T>() as u64;
        // Accumulators are at most 16 bytes (what a shuffle moves).
        let bytes = usize::try_from(rows_workspace_bytes(rows, segment_len, elem, 16))
            .map_err(|_| Error::OutOfMemory { bytes: usize::MAX })?;
        let counter_bytes = (4 * rows as usize).div_ceil(16) * 16;
        let ws = self.workspace::<SegmentedWorkspace>();
        let mut ws = ws.lock().unwrap_or_else(|p| p.into_inner());
        // Each row's last block clears its counter.
        let scratch = if bytes == 0 {
            0
        } else {
            self.cleared_scratch(&mut ws.rows, rows, bytes, counter_bytes)?
        };
        // Short rows go a warp each, longer ones a block a chunk.
        let units = if segment_len <= WARP_MAX {
            rows.div_ceil(BLOCK as u64 / 32)
        } else {
            rows * rows_chunks_per_row(segment_len, elem)
        };
        let cap = match (ws.grid_override, &self.backend) {
            (0, Backend::Cuda(_)) => 1 << 30,
            (0, Backend::Sim) => SIM_GRID,
            (g, _) => g,
        };
        let grid = units.min(cap as u64) as u32;
        let (input_addr, _input_access) = self.read(&input)?;
        let (out_addr, _out_access) = self.write(&mut out)?;
        let index_write = index_out.as_mut().map(|ix| self.write(ix)).transpose()?;
        let index_addr = index_write.as_ref().map_or(0, |r| r.0);
        let n = input.len() as u64;
        // SAFETY: `rows_device` reads input, segment_len, k, out, index_out and ws; the input holds exactly rows x segment_len
        // elements, the outputs `rows` each, the scratch `rows_workspace_bytes`.
        unsafe {
            self.launch_kernel(
                lib,
                k,
                LaunchShape::linear(grid, BLOCK, 0),
                SegmentedParams {
                    segment_len,
                    index_out: index_addr as *mut u64,
                    ws: scratch as *mut u64,
                    ..SegmentedParams::new(input_addr as *const T, n, rows, out_addr as *mut Out)
                },
            )
        }
    }

    /// The listed kernel (`listed_device`) over `out.len()` (at
    /// most `LISTED_MAX`) offsets segments, reporting bad offsets to `status`. Never blocks.
    #[allow(clippy::too_many_arguments)] // the general path's state, passed on
    fn launch_listed<T: DeviceElement, Out: Copy>(
        &self,
        lib: &'static KernelLibrary,
        k: &Kernel<SimSegmentedFn<T, Out>>,
        ws: &mut SegmentedWorkspace,
        input: DeviceView<'_, T>,
        (begin, end): (Option<DeviceView<'_, u64>>, Option<DeviceView<'_, u64>>),
        mut out: DeviceViewMut<'_, Out>,
        mut index_out: Option<DeviceViewMut<'_, u64>>,
        status: u64,
    ) -> Result<()> {
        let (Some(begin), Some(end)) = (begin, end) else {
            unreachable!("the listed kernel takes offsets")
        };
        let count = out.len() as u64;
        let n = input.len() as u64;
        let elem = std::mem::size_of::<T>() as u64;
        let chunk = CHUNK_VECS * (16 / elem);
        // Non-overlapping segments have at most n / chunk + 1 chunks each beyond the first
        // (`chunks_of`); overlapping ones past that are reduced block by block (same bits).
        let cap = n / chunk + count + 1;
        // Accumulators are at most 16 bytes (what a shuffle moves).
        let bytes = usize::try_from(listed_workspace_bytes(count, cap, 16))
            .map_err(|_| Error::OutOfMemory { bytes: usize::MAX })?;
        let cleared = 16 + (4 * count as usize).div_ceil(16) * 16;
        // Control words and counters cleared (the last block out and each segment's last
        // chunk clear them).
        let scratch = self.cleared_scratch(&mut ws.listed, count, bytes, cleared)?;
        let limit = self.segmented_resident(lib, k.name, ws.grid_override)?;
        let grid = (n / chunk + count).min(limit as u64).max(1) as u32;
        let (input_addr, _input_access) = self.read(&input)?;
        let (begin_addr, _begin_access) = self.read(&begin)?;
        let (end_addr, _end_access) = self.read(&end)?;
        let (out_addr, _out_access) = self.write(&mut out)?;
        let index_write = index_out.as_mut().map(|ix| self.write(ix)).transpose()?;
        let index_addr = index_write.as_ref().map_or(0, |r| r.0);
        // SAFETY: `listed_device` reads all but segment_len and entry_cap; the offsets hold `count` entries
        // each (checked by the caller), the outputs `count` elements, the scratch
        // `listed_workspace_bytes`; the table takes 8 bytes per segment of dynamic shared
        // memory.
        unsafe {
            self.launch_kernel(
                lib,
                k,
                LaunchShape::linear(grid, BLOCK, 8 * count as u32),
                SegmentedParams {
                    begin: begin_addr as *const u64,
                    end: end_addr as *const u64,
                    index_out: index_addr as *mut u64,
                    status: status as *mut u64,
                    ws: scratch as *mut u64,
                    partial_cap: cap,
                    ..SegmentedParams::new(input_addr as *const T, n, count, out_addr as *mut Out)
                },
            )
        }
    }

    /// The address of `s`'s buffer (at least `bytes`) with its first `cleared` bytes zero for
    /// a launch of `layout`; under graph capture, scratch of the graph's own, cleared inside the
    /// graph (a replay must not meet the last replay's words).
    fn cleared_scratch<L: PartialEq + Copy>(
        &self,
        s: &mut ClearedScratch<L>,
        layout: L,
        bytes: usize,
        cleared: usize,
    ) -> Result<u64> {
        if let Some(base) = self.graph_scratch(bytes)? {
            if cleared > 0 {
                self.memset_raw(base, cleared)?;
            }
            return Ok(base);
        }
        let words = bytes.div_ceil(8);
        if s.buf.as_ref().is_none_or(|b| b.len() < words) {
            s.buf = None; // free the old one first
            s.buf = Some(self.alloc_zeros::<u64>(words.max(1024))?);
            s.layout = layout;
        }
        let Some(b) = &s.buf else {
            unreachable!("allocated just above")
        };
        let addr = self.scratch_addr(b);
        if s.layout != layout {
            if cleared > 0 {
                self.memset_raw(addr, cleared)?;
            }
            s.layout = layout;
        }
        Ok(addr)
    }

    /// Blocks of the segmented kernel `name` the device holds at once (more would only wait
    /// for the first ones to finish), or the test override; at least 1.
    fn segmented_resident(
        &self,
        lib: &'static KernelLibrary,
        name: &'static str,
        grid_override: u32,
    ) -> Result<u32> {
        Ok(match (grid_override, &self.backend) {
            (0, Backend::Cuda(_)) => {
                let sms = self.info().multiprocessors.max(1);
                sms * self.kernel(lib, name)?.blocks_per_sm(BLOCK)?
            }
            (0, Backend::Sim) => SIM_GRID,
            (g, _) => g,
        }
        .max(1))
    }
}
