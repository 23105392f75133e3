//! The general kernel's listed form: a few long offsets segments, every chunk listed up front.

use super::*;

/// 16-byte loads a thread keeps in flight in [`listed_device`]'s chunks ([`SEGMENTED`]; the
/// bits do not depend on it).
pub const LISTED_LOADS: usize = SEGMENTED.listed_loads;

/// Most segments [`listed_device`] takes ([`SEGMENTED`]): its table holds a `u64` per segment
/// in dynamic shared memory.
pub const LISTED_MAX: u64 = SEGMENTED.listed_max;

// [`listed_device`]'s shared words: the unit being read (segment, its first unit, the chunk,
// start and length), whether its block counted the segment's last chunk, the scan's warp totals.
const U_SEG: usize = 2;
const U_FIRST: usize = 3;
const U_CHUNK: usize = 4;
const U_BEGIN: usize = 5;
const U_LEN: usize = 6;
const U_LAST: usize = 7;
const U_TOTALS: usize = 8;

/// Bytes of [`listed_device`]'s workspace for `k` segments and room for `cap` partials of
/// `acc_bytes` each: two control words, a `u32` counter per segment (padded to 16 bytes), then
/// the partials.
pub const fn listed_workspace_bytes(k: u64, cap: u64, acc_bytes: u64) -> u64 {
    16 + (4 * k).div_ceil(16) * 16 + cap * acc_bytes
}

/// The segmented reduction of a few (at most [`LISTED_MAX`]) offsets segments by chunks listed
/// up front: the same bits as [`segmented_device`] (the same [`warp_segment`]s and
/// [`chunk_partial`]s, combined in the same order), without its work list. Each block first
/// reads all `k` offsets and writes every segment's unit count (1 for a segment of at most
/// [`WARP_MAX`] elements, else its chunks) to a table in dynamic shared memory, then scans it:
/// unit `u` is then chunk `u - table[s - 1]` of the segment `s` whose range holds `u`, found by
/// a binary search, so a block knows where its first chunk lies after one round of loads (the
/// work list's classification, allocation and owner records take several). A block's first
/// unit is its index; thread 0 claims the next one from a counter as each unit starts, so the
/// claim's round trip passes while the other warps load; a segment's partials go to
/// the workspace at its table position, and the block that counts the segment's last chunk
/// combines them in order. Bad offsets give the identity and are reported by block 0.
///
/// `ws` ([`listed_workspace_bytes`]): two `u64` control words (units claimed past the grid,
/// blocks exited), `k` `u32` counters, all zero at launch and again at the end, then room for
/// `cap` partials; a segment whose partials would reach past `cap` (only overlapping segments
/// can) is reduced by the block that draws its first chunk alone ([`block_segment`]'s order:
/// the same bits). Launch with `8 * k` bytes of dynamic shared memory.
///
/// # Safety
/// As [`segmented_device`] with `begin`/`end` valid for `k <= LISTED_MAX` offsets each.
#[inline(always)]
pub unsafe fn listed_device<T: Element, O: ReduceOp<T>, S: SegmentSink<T, O::Acc>>(
    p: SegmentedParams<T, S::Out>,
) {
    let SegmentedParams {
        input,
        n,
        begin,
        end,
        k,
        out,
        index_out,
        status,
        ws,
        ..
    } = p;
    let cap = p.partial_cap;
    let scratch = crate::static_shared!(LISTED_SCRATCH: [u128; 32]);
    let scratch = unsafe { scratch.cast::<O::Acc>() };
    let slot = crate::static_shared!(LISTED_SLOT: [u128; 1]);
    let slot = unsafe { slot.cast::<O::Acc>() };
    // [0..2]: the next unit (two, alternating, so a write never meets a late read); then the
    // unit's state; then the scan's warp totals.
    let sh = crate::static_shared!(LISTED_WORDS: [u64; 16]);
    let table = gpu::dynamic_shared::<u64>();
    let tid = gpu::thread_idx_x() as u64;
    let grid = gpu::grid_dim_x() as u64;
    let b = BLOCK as u64;
    let counters = unsafe { ws.add(2) } as *mut u32;
    let partials =
        unsafe { (ws as *mut u8).add(16 + (4 * k).div_ceil(16) as usize * 16) } as *mut O::Acc;
    let report = if gpu::block_idx_x() == 0 {
        status
    } else {
        core::ptr::null_mut()
    };
    let checked = |s: u64, (bg, e): (u64, u64), report: *mut u64| -> (u64, u64) {
        if e < bg || e > n {
            if !report.is_null() {
                let kind = if e < bg {
                    BAD_DECREASING
                } else {
                    BAD_OUT_OF_RANGE
                };
                unsafe { report_bad(report, s, kind) };
            }
            (0, 0)
        } else {
            (bg, e - bg)
        }
    };
    let load = |s: u64| unsafe { (begin.add(s as usize).read(), end.add(s as usize).read()) };
    let bounds = |s: u64, report: *mut u64| checked(s, load(s), report);
    let units_of = |bg: u64, len: u64| -> u64 {
        if len <= WARP_MAX {
            1
        } else {
            cut(unsafe { input.add(bg as usize) }, len).chunks
        }
    };

    // Every segment's units, then an inclusive scan in place: thread j owns the `m`
    // consecutive entries from `j * m`.
    // Four segments' offsets a thread in flight at once: every block reads them all before its
    // first chunk, so their round trips are the launch's start (up to 2048 offsets: two). Bad
    // ones are reported after, one segment at a time (one copy of the report's code: the PTX
    // of every listed kernel is embedded in the library).
    let mut s = tid;
    let mut bad = false;
    while s < k {
        let get = |j: u64| {
            if s + j * b < k {
                load(s + j * b)
            } else {
                (0, 0)
            }
        };
        let mut put = |j: u64, (bg, e): (u64, u64)| {
            if s + j * b < k {
                bad |= e < bg || e > n;
                let (bg, len) = checked(s + j * b, (bg, e), core::ptr::null_mut());
                unsafe { table.write((s + j * b) as usize, units_of(bg, len)) };
            }
        };
        let (g0, g1, g2, g3) = (get(0), get(1), get(2), get(3));
        put(0, g0);
        put(1, g1);
        put(2, g2);
        put(3, g3);
        s += 4 * b;
    }
    if bad && !report.is_null() {
        let mut s = tid;
        while s < k {
            bounds(s, report);
            s += b;
        }
    }
    gpu::sync_threads();
    let m = k.div_ceil(b);
    let lo = (tid * m).min(k);
    let hi = (lo + m).min(k);
    let mut own = 0u64;
    for i in lo..hi {
        own += unsafe { table.read(i as usize) };
    }
    let incl = crate::warp::warp_inclusive_scan(own, |x, y| x + y);
    let warp = tid / gpu::WARP_SIZE as u64;
    if gpu::lane_id() == gpu::WARP_SIZE - 1 {
        unsafe { sh.write(U_TOTALS + warp as usize, incl) };
    }
    gpu::sync_threads();
    let mut run = incl - own;
    for w in 0..warp {
        run += unsafe { sh.read(U_TOTALS + w as usize) };
    }
    for i in lo..hi {
        run += unsafe { table.read(i as usize) };
        unsafe { table.write(i as usize, run) };
    }
    gpu::sync_threads();

    // The unit's state lives in shared memory (thread 0 decides, every thread reads it back
    // after the chunk), not in registers through the chunk loop: this path shares the general
    // kernel's register budget (80 for three blocks per SM).
    let mut u = gpu::block_idx_x() as u64;
    let mut parity = 0usize;
    while u < unsafe { table.read(k as usize - 1) } {
        if tid == 0 {
            // The next claim (read after this unit's last barrier; the slot read two units
            // ago was read before this unit's first barrier), stored last: its round trip
            // overlaps the search and the bounds' loads.
            let claim = unsafe { gpu::atomic_add_u64(ws, 1) };
            // The segment whose units hold u: the first table entry above u.
            let (mut a, mut z) = (0u64, k);
            while a < z {
                let mid = (a + z) / 2;
                if unsafe { table.read(mid as usize) } > u {
                    z = mid;
                } else {
                    a = mid + 1;
                }
            }
            let first = if a == 0 {
                0
            } else {
                unsafe { table.read(a as usize - 1) }
            };
            let (bg, len) = bounds(a, core::ptr::null_mut());
            unsafe {
                sh.write(U_SEG, a);
                sh.write(U_FIRST, first);
                sh.write(U_CHUNK, u - first);
                sh.write(U_BEGIN, bg);
                sh.write(U_LEN, len);
                sh.write(parity, grid + claim);
            }
        }
        gpu::sync_threads();
        let len = unsafe { sh.read(U_LEN) };
        let x = unsafe { input.add(sh.read(U_BEGIN) as usize) };
        if len <= WARP_MAX {
            if warp == 0 {
                let acc = unsafe { warp_segment::<T, O, { WARP_LOADS as usize }>(x, len) };
                if tid == 0 {
                    unsafe { S::store(out, index_out, sh.read(U_SEG), acc) };
                }
            }
        } else {
            let kc = cut(x, len);
            let c = unsafe { sh.read(U_CHUNK) };
            if unsafe { sh.read(U_FIRST) } + kc.chunks > cap {
                // No room for its partials: the block drawing chunk 0 reduces it alone.
                if c == 0 {
                    let total =
                        unsafe { block_segment::<T, O, LISTED_LOADS>(x, len, scratch, slot) };
                    if tid == 0 {
                        unsafe { S::store(out, index_out, sh.read(U_SEG), total) };
                    }
                }
            } else {
                let p = unsafe { chunk_partial::<T, O, LISTED_LOADS>(x, len, kc, c, scratch) };
                // Read back after the chunk's barriers (not kept in registers through it).
                let (s, len) = unsafe { (sh.read(U_SEG), sh.read(U_LEN)) };
                let kc = cut(unsafe { input.add(sh.read(U_BEGIN) as usize) }, len);
                if kc.chunks == 1 {
                    if tid == 0 {
                        unsafe { S::store(out, index_out, s, p) };
                    }
                } else {
                    let mine = unsafe { partials.add(sh.read(U_FIRST) as usize) };
                    if tid == 0 {
                        unsafe {
                            let c = sh.read(U_CHUNK);
                            core::ptr::write_volatile(mine.add(c as usize), p);
                            // Release the partial before counting the chunk.
                            gpu::fence_acq_rel_gpu();
                            let d = gpu::atomic_add_u32(counters.add(s as usize), 1);
                            sh.write(U_LAST, (d as u64 + 1 == kc.chunks) as u64);
                        }
                    }
                    gpu::sync_threads();
                    if unsafe { sh.read(U_LAST) } == 1 {
                        // The segment's last chunk: every partial is visible (acquire).
                        gpu::fence_acq_rel_gpu();
                        let total =
                            unsafe { combine_partials::<T, O>(tid, mine, kc.chunks, scratch) };
                        if tid == 0 {
                            unsafe {
                                S::store(out, index_out, s, total);
                                // Every chunk has counted: clear for the next launch.
                                core::ptr::write_volatile(counters.add(s as usize), 0);
                            }
                        }
                    }
                }
            }
        }
        gpu::sync_threads();
        u = unsafe { sh.read(parity) };
        parity ^= 1;
    }
    if tid == 0 {
        // The last block out clears the control words for the next launch (every claim made).
        let e = unsafe { gpu::atomic_add_u64(ws.add(1), 1) };
        if e + 1 == grid {
            unsafe {
                core::ptr::write_volatile(ws, 0);
                core::ptr::write_volatile(ws.add(1), 0);
            }
        }
    }
}
