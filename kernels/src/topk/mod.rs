//! Top-k (`torch.topk`, CUB's `DeviceTopK`): the k largest (or smallest) elements and their
//! indices, by a radix select on order-preserving keys, as NVIDIA's AIR top-k does, after a
//! sampled filter that leaves it a small buffer to select from.
//!
//! Each element maps to an unsigned key that orders as the values do ([`key`]: floats by their
//! sign-flipped bits, every NaN the largest key; the smallest asked for by complementing), so
//! the k largest keys are wanted.
//!
//! The filter (k up to [`SORT_MAX`]): [`sample_device`] finds a key of a strided sample of
//! 8192 elements low enough that at least k keys are at or above it (almost surely; the host
//! picks its rank in the sample), and [`filter_device`] copies every element at or above it to
//! the candidate buffer in one read of the input. When it kept at least k and the buffer held
//! them all, everything after reads only the buffer: one read of the input for any
//! distribution the sample represents. Otherwise (a misleading sample, too many equal keys)
//! the passes below run on the input, as without it.
//!
//! The digit passes: from the top, one 8-bit digit a pass, each counts the digits of the
//! elements whose higher digits match the threshold found so far ([`digits_device`]), and the
//! next launch picks the digit where the k-th largest lies (`threshold`, every block the same
//! way, one step a kernel: the one before stored the step before). Without the filter, the
//! first pass whose matching elements fit the buffer (`cap`) copies them there, each block at
//! its place from the previous pass's per-block counts, and lists the elements already known
//! to be in the result; later passes read only the buffer. Once the threshold `K` is found,
//! [`gather_device`] lists the candidates at or above it, and [`sort_device`] orders the list
//! (key down, index up; or in index order, ties last). The buffer's and the list's order of
//! arrival vary; the sort makes the result depend on the input alone.
//!
//! Otherwise (larger k, or too many equal keys), [`count_device`] counts a contiguous chunk's
//! keys above `K` and equal to it, and [`write_device`] writes the keys above `K` and then the
//! first ties (lower index first) in index order; [`sort_device`] sorts them when asked.
//!
//! Kernels are generic over the bits' width (`u16`, `u32`, `u64`), the element kind a launch
//! argument: 8 kernels a width serve every element type (with [`rows_device`], top-k of rows).

use crate::gpu::{self, SharedArray};
use crate::warp::warp_inclusive_scan;

/// Threads per block.
pub const BLOCK: u32 = 256;
/// Elements a thread of [`write_device`] holds (consecutive: a block scan gives index order).
pub const ITEMS: usize = 8;
/// Largest k [`sort_device`] sorts (one block, in shared memory).
pub const SORT_MAX: usize = 2048;
/// Counters of one digit pass.
pub const RADIX: usize = 256;
/// Digit passes of the widest keys (64 bits).
pub const MAX_PASSES: usize = 8;

/// Element kinds (how bits become keys).
pub const KIND_UINT: u32 = 0;
pub const KIND_INT: u32 = 1;
pub const KIND_FLOAT: u32 = 2;

/// The raw bits of an element of 2, 4 or 8 bytes.
pub trait Bits: Copy + 'static {
    /// Bits of the key.
    const BITS: u32;
    fn to_u64(self) -> u64;
    /// The low bits of `v`.
    fn from_u64(v: u64) -> Self;
    /// Elements in a 16-byte vector.
    const PER_VEC: usize = 16 / (Self::BITS as usize / 8);
    /// Element `j` (< `PER_VEC`) of a 16-byte vector, in memory order.
    #[inline(always)]
    fn lane(w: [u32; 4], j: usize) -> u64 {
        match Self::BITS {
            16 => ((w[j / 2] >> (16 * (j % 2))) & 0xffff) as u64,
            32 => w[j] as u64,
            _ => w[2 * j] as u64 | (w[2 * j + 1] as u64) << 32,
        }
    }
    /// The vector with element `j` set to `v` (the inverse of [`Bits::lane`]).
    #[inline(always)]
    fn set_lane(mut w: [u32; 4], j: usize, v: u64) -> [u32; 4] {
        match Self::BITS {
            16 => {
                let s = 16 * (j % 2);
                w[j / 2] = (w[j / 2] & !(0xffff << s)) | ((v as u32 & 0xffff) << s);
            }
            32 => w[j] = v as u32,
            _ => {
                w[2 * j] = v as u32;
                w[2 * j + 1] = (v >> 32) as u32;
            }
        }
        w
    }
}
impl Bits for u16 {
    const BITS: u32 = 16;
    #[inline(always)]
    fn to_u64(self) -> u64 {
        self as u64
    }
    #[inline(always)]
    fn from_u64(v: u64) -> Self {
        v as u16
    }
}
impl Bits for u32 {
    const BITS: u32 = 32;
    #[inline(always)]
    fn to_u64(self) -> u64 {
        self as u64
    }
    #[inline(always)]
    fn from_u64(v: u64) -> Self {
        v as u32
    }
}
impl Bits for u64 {
    const BITS: u32 = 64;
    #[inline(always)]
    fn to_u64(self) -> u64 {
        self
    }
    #[inline(always)]
    fn from_u64(v: u64) -> Self {
        v
    }
}

/// The kind of bf16: its 16 bits have an 8-bit exponent and a 7-bit mantissa (f16: 5 and 10).
pub const KIND_BF16: u32 = 3;

/// The key of `bits` (an element of `width` bits and `kind`): larger values have larger keys,
/// every NaN the largest; `smallest` complements it (so NaN comes last either way, as PyTorch
/// orders it). `-0.0` is below `+0.0`. Selects, not branches: it is inlined at every element.
#[inline(always)]
pub fn key(bits: u64, width: u32, kind: u32, smallest: bool) -> u64 {
    let all = u64::MAX >> (64 - width);
    let sign = 1u64 << (width - 1);
    let float = kind >= KIND_FLOAT;
    let mant = match width {
        16 if kind == KIND_BF16 => 7,
        16 => 10,
        32 => 23,
        _ => 52,
    };
    let exp_all = (all >> 1) & !((1u64 << mant) - 1);
    let negative = bits & sign != 0;
    // Floats: negative ones complemented, positive ones with the sign bit set; integers: the
    // sign bit flipped; unsigned: as they are.
    let flip = if float {
        if negative { all } else { sign }
    } else if kind == KIND_INT {
        sign
    } else {
        0
    };
    let nan = float && (bits & (all >> 1)) > exp_all;
    let k = if nan { all } else { bits ^ flip };
    if smallest { !k & all } else { k }
}

/// [`key`] of keys of up to 32 bits with the launch's kind and order folded into constants
/// once (the filter's: seven 32-bit operations an element instead of a chain of selects).
#[derive(Clone, Copy)]
struct Key32 {
    width: u32,
    /// The flip of a negative element xor that of a non-negative one, and the latter.
    neg_xor_pos: u32,
    pos: u32,
    /// Floats: a NaN is `bits & magnitude > inf` (never for integers), its key `nan`.
    magnitude: u32,
    inf: u32,
    nan: u32,
}

impl Key32 {
    #[inline(always)]
    fn new(width: u32, kind: u32, smallest: bool) -> Self {
        let all = u32::MAX >> (32 - width);
        let sign = 1u32 << (width - 1);
        let float = kind >= KIND_FLOAT;
        let mant = match width {
            16 if kind == KIND_BF16 => 7,
            16 => 10,
            _ => 23,
        };
        let (neg, pos) = if float {
            (all, sign)
        } else if kind == KIND_INT {
            (sign, sign)
        } else {
            (0, 0)
        };
        // The smallest: every key complemented.
        let c = if smallest { all } else { 0 };
        Key32 {
            width,
            neg_xor_pos: neg ^ pos,
            pos: pos ^ c,
            magnitude: all >> 1,
            inf: if float {
                (all >> 1) & !((1u32 << mant) - 1)
            } else {
                u32::MAX
            },
            nan: all ^ c,
        }
    }

    #[inline(always)]
    fn key(&self, bits: u32) -> u32 {
        let negative = (bits >> (self.width - 1)).wrapping_neg();
        let k = bits ^ ((negative & self.neg_xor_pos) ^ self.pos);
        if bits & self.magnitude > self.inf {
            self.nan
        } else {
            k
        }
    }
}

/// [`key`] (kept as a name of its own for the kernels' call sites).
#[inline(always)]
pub fn key_of(bits: u64, width: u32, kind: u32, smallest: bool) -> u64 {
    key(bits, width, kind, smallest)
}

/// The parameters of the top-k kernels, written once.
#[macro_export]
#[doc(hidden)]
macro_rules! topk_params {
    ($($mode:tt)*) => {
        $crate::kernel_params! { $($mode)* TopkParams<W> {
            /// The elements' bits, `n` of them.
            input: *const W,
            n: u64,
            /// How many are wanted (1 to n).
            k: u64,
            /// `KIND_*`.
            kind: u32,
            /// 1: the smallest.
            smallest: u32,
            /// Digit pass (from the top) of `digits_device`.
            pass: u32,
            /// 1: sorted output.
            sorted: u32,
            /// `MAX_PASSES * RADIX` digit counts, [`CTL_WORDS`] control words, then two counts
            /// a chunk (zeroed beforehand).
            counts: *mut u32,
            /// Two tables (by pass parity) of the digit passes' counts, `RADIX` a block.
            tables: *mut u32,
            /// Entries the candidate buffer holds.
            cap: u64,
            /// The candidate buffer: elements' bits and indices.
            cand_bits: *mut W,
            cand_idx: *mut u32,
            /// The result's list ([`SORT_MAX`] entries): keys' bits and indices.
            list_bits: *mut W,
            list_idx: *mut u32,
            /// Chunks of `count_device` / `write_device` (their grid).
            chunks: u32,
            /// `sample_device`'s rank: the threshold of `filter_device` is the sample's
            /// `sample`-th largest key.
            sample: u64,
            /// The `k` values and their indices.
            values: *mut W,
            indices: *mut u64,
        } }
    };
}

crate::topk_params!(struct
    /// The launch parameters of the top-k kernels.
);

/// u32 words of control after the digit counts: the list's length, the filter's count and
/// its threshold (two words), then the threshold after each pass.
pub const CTL_WORDS: usize = 4 + MAX_PASSES * STATE_WORDS;
/// Where the list's length is in `counts`.
pub const LIST: usize = MAX_PASSES * RADIX;
/// Where the filter's count (the slots it took) is in `counts`.
pub const FILTERED: usize = LIST + 1;
/// Where the filter's threshold key is in `counts` (low word, high word).
pub const THRESHOLD: usize = LIST + 2;
/// Where the thresholds after each pass are in `counts`.
const STATES: usize = LIST + 4;
/// Where the chunks' counts start in `counts`.
pub const CHUNK_COUNTS: usize = MAX_PASSES * RADIX + CTL_WORDS;
/// u64 words of a kernel's scratch.
const SCRATCH: usize = 36;
/// No candidate buffer.
const NONE: u64 = u64::MAX;

/// Candidates a thread of a digit pass over the buffer counts (at least): the blocks of the
/// fixed grid past them return at once.
const BUFFER_RUN: u64 = 16;
/// Candidates a thread of a digit pass over the buffer loads at once.
const BUFFER_BATCH: usize = 4;
/// Blocks of [`digits_device`] an SM at least (48 registers; the batch above would take the
/// 64-bit keys' to 58, a block an SM fewer for the passes over the input).
pub const DIGITS_PER_SM: u32 = 5;

/// Passes of `W`'s keys.
#[inline(always)]
pub const fn passes(bits: u32) -> u32 {
    bits / 8
}

/// The block's exclusive prefix of `v` (thread order) and the total; `scratch` 32 words.
#[inline(always)]
fn block_scan(v: u64, scratch: SharedArray<u64>) -> (u64, u64) {
    let (lane, warp) = (gpu::lane_id() as usize, gpu::thread_idx_x() as usize / 32);
    let warps = gpu::block_dim_x() as usize / 32;
    let inc = warp_inclusive_scan(v, |a: u64, b: u64| a + b);
    if lane == 31 {
        unsafe { scratch.write(warp, inc) };
    }
    gpu::sync_threads();
    let (mut before, mut total) = (0u64, 0u64);
    for w in 0..warps {
        let t = unsafe { scratch.read(w) };
        if w < warp {
            before += t;
        }
        total += t;
    }
    gpu::sync_threads();
    (before + inc - v, total)
}

/// With thread `t < RADIX` holding the count `c` of digit `RADIX - 1 - t` (a scan in thread
/// order counts from the top digit), the digit where the `need`-th largest key lies, how many
/// of its keys are still wanted and how many it has, in every thread; `scratch` [`SCRATCH`]
/// words. Every thread of the block calls it.
#[inline(always)]
fn pick_digit(c: u64, need: u64, scratch: SharedArray<u64>) -> (u64, u64, u64) {
    let t = gpu::thread_idx_x() as usize;
    let (before, _) = block_scan(c, scratch);
    if t < RADIX && before < need && need <= before + c {
        unsafe {
            scratch.write(32, (RADIX - 1 - t) as u64);
            scratch.write(33, need - before);
            scratch.write(34, c);
        }
    }
    gpu::sync_threads();
    let found = unsafe { (scratch.read(32), scratch.read(33), scratch.read(34)) };
    gpu::sync_threads();
    found
}

/// Where the digit passes stand after `done` of them (every thread of the block the same).
#[derive(Clone, Copy)]
struct Threshold {
    /// The digits found so far (in place, lower bits zero).
    prefix: u64,
    /// How many of the elements matching them are still wanted.
    need: u64,
    /// How many elements match them.
    count: u64,
    /// The candidate buffer's length, [`NONE`] if no pass before pass `done - 1` wrote it.
    cand: u64,
}

impl Threshold {
    /// Whether the result is the list: the buffer holds the candidates and the list all
    /// keys at or above the threshold (those above, and every tie).
    #[inline(always)]
    fn listed(&self, k: u64) -> bool {
        self.cand != NONE && k - self.need + self.count <= SORT_MAX as u64
    }
}

/// u32 words of a stored [`Threshold`] (each field as two).
const STATE_WORDS: usize = 8;

/// The threshold after `q + 1` passes, stored at [`STATES`] by the first kernel that found it.
#[inline(always)]
fn load_state<W: Bits>(p: &TopkParams<W>, q: u32) -> Threshold {
    let at = unsafe { p.counts.add(STATES + q as usize * STATE_WORDS) };
    let word =
        |i: usize| unsafe { at.add(2 * i).read() as u64 | (at.add(2 * i + 1).read() as u64) << 32 };
    Threshold {
        prefix: word(0),
        need: word(1),
        count: word(2),
        cand: word(3),
    }
}

#[inline(always)]
fn store_state<W: Bits>(p: &TopkParams<W>, q: u32, th: &Threshold) {
    let at = unsafe { p.counts.add(STATES + q as usize * STATE_WORDS) };
    for (i, v) in [th.prefix, th.need, th.count, th.cand]
        .into_iter()
        .enumerate()
    {
        unsafe {
            at.add(2 * i).write(v as u32);
            at.add(2 * i + 1).write((v >> 32) as u32);
        }
    }
}

/// The threshold after `done` digit passes, in every thread; `scratch` [`SCRATCH`] words. One
/// step a kernel: the threshold before the last pass was stored by the kernel before (the
/// pass that asked for it), and block 0 stores this one. `stored`: a kernel before this one
/// already stored it (every kernel after `count_device`). The buffer is written by the first
/// pass `j >= 1` whose matching elements fit `cap` (k up to [`SORT_MAX`]). `idle`: whether this
/// block has nothing to do, given the state before the step (the buffer's length is known
/// then; block-uniform, false for block 0, which stores): such a block returns `None` at once,
/// without the step's loads and barriers (most of a fixed grid when the buffer is small).
#[inline(always)]
fn threshold<W: Bits>(
    p: &TopkParams<W>,
    done: u32,
    scratch: SharedArray<u64>,
    stored: bool,
    idle: impl Fn(&Threshold) -> bool,
) -> Option<Threshold> {
    let t = gpu::thread_idx_x() as usize;
    if done > 0 && stored {
        return Some(load_state(p, done - 1));
    }
    let mut th = if done >= 2 {
        let mut th = load_state(p, done - 2);
        // Pass done - 1 wrote the buffer if it is the first to fit.
        if th.cand == NONE && th.count <= p.cap && p.k <= SORT_MAX as u64 {
            th.cand = th.count;
        }
        th
    } else {
        let mut th = Threshold {
            prefix: 0,
            need: p.k,
            count: p.n,
            cand: NONE,
        };
        // The filter kept every key at or above its threshold, at least k of them, in the
        // buffer: the passes read only the buffer.
        let kept = unsafe { p.counts.add(FILTERED).read() } as u64;
        if p.k <= kept && kept <= p.cap {
            (th.count, th.cand) = (kept, kept);
        }
        th
    };
    if done == 0 {
        return Some(th);
    }
    if idle(&th) {
        return None;
    }
    let q = done - 1;
    // Thread t holds digit 255 - t: a scan in thread order counts from the top digit.
    let c = if t < RADIX {
        unsafe { p.counts.add(q as usize * RADIX + RADIX - 1 - t).read() as u64 }
    } else {
        0
    };
    let (digit, need, count) = pick_digit(c, th.need, scratch);
    th.prefix |= digit << (W::BITS - 8 * (q + 1));
    (th.need, th.count) = (need, count);
    if gpu::block_idx_x() == 0 && t == 0 {
        store_state(p, q, &th);
    }
    Some(th)
}

/// What a digit pass does with one element (a method, not a closure: called from every
/// unrolled load, a closure was left out of line with its captures on the stack).
struct Visitor<'a, W: Bits> {
    p: &'a TopkParams<W>,
    ctr: SharedArray<u32>,
    slot: SharedArray<u32>,
    col: usize,
    shift: u32,
    high: u32,
    prefix: u64,
    writes: bool,
    base: u64,
}

impl<W: Bits> Visitor<'_, W> {
    /// Count element `i` (bits `x`) if its higher digits match; the writing pass also copies it
    /// to the candidates, or lists it when they are above.
    #[inline(always)]
    fn visit(&self, x: u64, i: u64) {
        let p = self.p;
        let kx = key_of(x, W::BITS, p.kind, p.smallest != 0);
        let (high, prefix) = (self.high, self.prefix);
        if high >= 64 || (kx >> high) == (prefix >> high) {
            let d = ((kx >> self.shift) & 0xff) as usize;
            unsafe { self.ctr.add(d * 32 + self.col, 1) };
            if self.writes {
                let at = (self.base + unsafe { self.slot.fetch_add(0, 1) } as u64) as usize;
                unsafe {
                    p.cand_bits.add(at).write(W::from_u64(x));
                    p.cand_idx.add(at).write(i as u32);
                }
            }
        } else if self.writes && (kx >> high) > (prefix >> high) {
            // In the result whatever the lower digits: fewer than k of them.
            let at = unsafe { gpu::atomic_add_u32(p.counts.add(LIST), 1) } as usize;
            if at < SORT_MAX {
                unsafe {
                    p.list_bits.add(at).write(W::from_u64(x));
                    p.list_idx.add(at).write(i as u32);
                }
            }
        }
    }
}

/// Digit pass `pass`: count the digit `pass` (from the top) of every element whose higher
/// digits equal the threshold's so far. Each lane of a warp counts into a column of its own
/// (no two lanes on one counter: a skewed digit, as the top byte of floats of one range,
/// does not serialize), 16-byte loads, two a step. The pass that writes the candidate buffer
/// (see the module) also copies the matching elements there and lists those above; passes
/// after it read the buffer only. Passes over the whole input leave their block's counts in
/// `tables`. A fixed grid for every pass, [`BLOCK`] threads, [`DIGITS_SHARED`] bytes of
/// dynamic shared memory.
///
/// # Safety
/// Pointers valid for `n` elements, the counts, the tables (`2 * grid * RADIX`), `cap`
/// candidates and [`SORT_MAX`] list entries; passes before `pass` done with this grid.
#[inline(always)]
pub unsafe fn digits_device<W: Bits>(p: TopkParams<W>) {
    let smem = gpu::dynamic_shared::<u64>();
    let (scratch, ctr, slot) = unsafe {
        (
            smem.part::<u64>(0, SCRATCH),
            smem.part::<u32>(SCRATCH * 8, RADIX * 32),
            smem.part::<u32>(SCRATCH * 8 + RADIX * 32 * 4, 1),
        )
    };
    let t = gpu::thread_idx_x() as usize;
    let counts = p.counts;
    // Reading the buffer: [`BUFFER_RUN`] candidates a thread, the blocks past them idle.
    let busy = |th: &Threshold| th.cand.div_ceil(BLOCK as u64 * BUFFER_RUN);
    let idle = |th: &Threshold| th.cand != NONE && gpu::block_idx_x() as u64 >= busy(th);
    let Some(th) = threshold::<W>(&p, p.pass, scratch, false, idle) else {
        return;
    };
    let prefix = th.prefix;
    let reads = th.cand != NONE;
    let busy = busy(&th);
    if idle(&th) {
        return;
    }
    let mut j = t;
    while j < RADIX * 32 {
        unsafe { ctr.write(j, 0) };
        j += BLOCK as usize;
    }
    if t == 0 {
        unsafe { slot.write(0, 0) };
    }
    let writes = !reads && p.pass >= 1 && th.count <= p.cap && p.k <= SORT_MAX as u64;
    let shift = W::BITS - 8 * (p.pass + 1);
    let high = shift + 8;
    let block = gpu::block_dim_x() as u64;
    let grid = gpu::grid_dim_x() as usize;
    let b = gpu::block_idx_x() as usize;
    // The writing pass: this block's candidates go after those of the blocks before it (the
    // previous pass counted each block's elements of the digit it chose).
    let mut base = 0u64;
    if writes {
        let d = ((prefix >> high) & 0xff) as usize;
        let prev = unsafe { p.tables.add(((p.pass - 1) & 1) as usize * grid * RADIX) };
        let mut sum = 0u64;
        let mut q = t;
        while q < b {
            sum += unsafe { prev.add(q * RADIX + d).read() } as u64;
            q += BLOCK as usize;
        }
        base = block_scan(sum, scratch).1;
    }
    // The zeroed counters before any add (pass 0 finds its threshold with no barrier).
    gpu::sync_threads();
    let visitor = Visitor {
        p: &p,
        ctr,
        slot,
        col: gpu::lane_id() as usize,
        shift,
        high,
        prefix,
        writes,
        base,
    };
    let threads = block * grid as u64;
    let me = b as u64 * block + t as u64;
    if reads {
        // A batch of loads issued together: the shared-memory atomics between them would
        // otherwise keep each load waiting for the one before (one latency a candidate).
        let stride = block * busy.min(grid as u64);
        let mut i = me;
        while i < th.cand {
            let mut xs = [W::from_u64(0); BUFFER_BATCH];
            for (u, xu) in xs.iter_mut().enumerate() {
                let j = i + u as u64 * stride;
                if j < th.cand {
                    *xu = unsafe { p.cand_bits.add(j as usize).read() };
                }
            }
            for (u, &xu) in xs.iter().enumerate() {
                if i + (u as u64) * stride < th.cand {
                    visitor.visit(xu.to_u64(), 0);
                }
            }
            i += BUFFER_BATCH as u64 * stride;
        }
    } else {
        let per = W::PER_VEC as u64;
        let nvec = if p.input as usize & 15 == 0 {
            p.n / per
        } else {
            0
        };
        let vec_at =
            |v: u64| unsafe { gpu::load_nc_v4_b32(p.input.add((v * per) as usize) as *const u32) };
        let mut v = me;
        while v + threads < nvec {
            let (va, vb) = (vec_at(v), vec_at(v + threads));
            // Two loops, not a loop over a tuple array (which would live in local memory).
            for j in 0..W::PER_VEC {
                visitor.visit(W::lane(va, j), v * per + j as u64);
            }
            for j in 0..W::PER_VEC {
                visitor.visit(W::lane(vb, j), (v + threads) * per + j as u64);
            }
            v += 2 * threads;
        }
        if v < nvec {
            let w = vec_at(v);
            for j in 0..W::PER_VEC {
                visitor.visit(W::lane(w, j), v * per + j as u64);
            }
        }
        let mut i = nvec * per + me;
        while i < p.n {
            visitor.visit(unsafe { p.input.add(i as usize).read() }.to_u64(), i);
            i += threads;
        }
    }
    gpu::sync_threads();
    if t < RADIX {
        // Row t's 32 columns, each thread starting at its own (no bank conflicts).
        let mut c = 0u32;
        for l in 0..32 {
            c += unsafe { ctr.read(t * 32 + ((l + t) & 31)) };
        }
        if c > 0 {
            unsafe { gpu::atomic_add_u32(counts.add(p.pass as usize * RADIX + t), c) };
        }
        if !reads {
            let table = unsafe { p.tables.add((p.pass & 1) as usize * grid * RADIX) };
            unsafe { table.add(b * RADIX + t).write(c) };
        }
    }
}

/// Elements [`sample_device`] reads: element `i n / SAMPLE` for each `i < SAMPLE`, or all of a
/// shorter input (a power of two).
pub const SAMPLE: u64 = 8192;
const _: () = assert!(SAMPLE.is_power_of_two());
/// Sampled elements a thread of [`sample_device`] holds (its block: [`ROWS_BLOCK`] threads).
const SAMPLE_ITEMS: usize = SAMPLE as usize / ROWS_BLOCK as usize;
/// Keys left after a pass of [`sample_device`] (keys of up to 32 bits) few enough to rank by
/// comparing each with all (a pass costs about as much as ranking this many).
const SAMPLE_FEW: u64 = 64;

/// The filter's threshold, before the digit passes (k up to [`SORT_MAX`]): the `p.sample`-th
/// largest key of `min(n, SAMPLE)` elements spread evenly over the input (all of them when `n
/// <= SAMPLE`), by the digit passes of [`rows_device`] over keys held in registers, into the
/// control words. The host picks the rank so that fewer than k keys at or above it are
/// unlikely, and more than the buffer holds too ([`filter_device`] checks both). One block of
/// [`ROWS_BLOCK`] threads, [`DIGITS_SHARED`] bytes.
///
/// # Safety
/// As [`digits_device`]; `1 <= p.sample <= min(n, SAMPLE)`.
#[inline(always)]
pub unsafe fn sample_device<W: Bits>(p: TopkParams<W>) {
    let smem = gpu::dynamic_shared::<u64>();
    let (scratch, ctr) = unsafe {
        (
            smem.part::<u64>(0, SCRATCH),
            smem.part::<u32>(SCRATCH * 8, RADIX * 32),
        )
    };
    let (t, block) = (gpu::thread_idx_x() as usize, gpu::block_dim_x() as usize);
    let (kind, smallest, width) = (p.kind, p.smallest != 0, W::BITS);
    let s = p.n.min(SAMPLE);
    // Element `i n / s` of the sampled `i`: the sample spans the whole input (s is n or SAMPLE,
    // a power of two: a shift, not a 64-bit division; n < 2^32: no overflow).
    let element = |i: u64| {
        if s == p.n {
            i
        } else {
            (i * p.n) >> SAMPLE.trailing_zeros()
        }
    };
    if width <= 32 {
        // Keys of up to 32 bits as 32-bit words, their kind folded once ([`Key32`]): the same
        // steps as below at half the instructions (this block is on the call's critical path).
        let key32 = Key32::new(width, kind, smallest);
        // Every load unconditional (past s: the last sampled element again, not counted), so
        // the sixteen are in flight together, not one latency each.
        let mut keys = [0u32; SAMPLE_ITEMS];
        for (j, kj) in keys.iter_mut().enumerate() {
            let i = ((t + j * block) as u64).min(s - 1);
            let x = unsafe { p.input.add(element(i) as usize).read() }.to_u64();
            *kj = key32.key(x as u32);
        }
        let (mut prefix, mut need) = (0u32, p.sample);
        let col = gpu::lane_id() as usize;
        let slots = unsafe { gpu::shared_slots(ctr, 0) };
        // Zeroed once: each pass's column sums zero what they read.
        let mut j = t;
        while j < RADIX * 32 {
            unsafe { gpu::store_slot(slots, j as u32, 0u32) };
            j += block;
        }
        gpu::sync_threads();
        let threshold = |key: u32| unsafe {
            p.counts.add(THRESHOLD).write(key);
            p.counts.add(THRESHOLD + 1).write(0);
        };
        for pass in 0..passes(width) {
            let shift = width - 8 * (pass + 1);
            // The digits found so far: the bits above this pass's digit.
            let found = if pass == 0 {
                0
            } else {
                u32::MAX << (shift + 8)
            };
            for (j, &kj) in keys.iter().enumerate() {
                if ((t + j * block) as u64) < s && kj & found == prefix & found {
                    unsafe { ctr.add(((kj >> shift) & 0xff) as usize * 32 + col, 1) };
                }
            }
            gpu::sync_threads();
            // Thread t holds digit 255 - t: a scan in thread order counts from the top digit.
            let mut c = 0u64;
            if t < RADIX {
                let d = RADIX - 1 - t;
                for l in 0..32 {
                    let at = (d * 32 + ((l + t) & 31)) as u32;
                    c += unsafe { gpu::load_slot::<u32>(slots, at) } as u64;
                    unsafe { gpu::store_slot(slots, at, 0u32) };
                }
            }
            let (digit, nd, left) = pick_digit(c, need, scratch);
            prefix |= (digit as u32) << shift;
            need = nd;
            if shift > 0 && left <= SAMPLE_FEW {
                // Few keys left with these digits (most inputs after two passes): each finds
                // its rank among them by comparing with all, not two more passes.
                let digits = u32::MAX << shift;
                for (j, &kj) in keys.iter().enumerate() {
                    if ((t + j * block) as u64) < s && kj & digits == prefix {
                        let at = unsafe { ctr.fetch_add(0, 1) };
                        unsafe { ctr.write(1 + at as usize, kj) };
                    }
                }
                gpu::sync_threads();
                if (t as u64) < left {
                    let x = unsafe { ctr.read(1 + t) };
                    // Rank among the left keys, ties by list position (one thread has each).
                    let mut rank = 1u64;
                    for j in 0..left as usize {
                        let y = unsafe { ctr.read(1 + j) };
                        rank += (y > x || (y == x && j < t)) as u64;
                    }
                    if rank == need {
                        threshold(x);
                    }
                }
                return;
            }
        }
        if t == 0 {
            threshold(prefix);
        }
        return;
    }
    let mut keys = [0u64; SAMPLE_ITEMS];
    for (j, kj) in keys.iter_mut().enumerate() {
        let i = ((t + j * block) as u64).min(s - 1);
        let x = unsafe { p.input.add(element(i) as usize).read() }.to_u64();
        *kj = key_of(x, width, kind, smallest);
    }
    let mut st = RowState {
        prefix: 0,
        high: 64,
        need: p.sample,
        count: s,
    };
    let col = gpu::lane_id() as usize;
    for pass in 0..passes(width) {
        let mut j = t;
        while j < RADIX * 32 {
            unsafe { ctr.write(j, 0) };
            j += block;
        }
        gpu::sync_threads();
        let shift = width - 8 * (pass + 1);
        for (j, &kj) in keys.iter().enumerate() {
            if ((t + j * block) as u64) < s {
                st.count(ctr, col, kj, shift);
            }
        }
        gpu::sync_threads();
        st.next(ctr, scratch, shift);
    }
    if t == 0 {
        unsafe {
            p.counts.add(THRESHOLD).write(st.prefix as u32);
            p.counts.add(THRESHOLD + 1).write((st.prefix >> 32) as u32);
        }
    }
}

/// Entries of [`filter_device`]'s staging in shared memory, a warp's share each (a warp's keys
/// kept between two flushes, so the buffer's counter takes an atomic a hundred keys, not one a
/// key).
pub const STAGE: usize = 1024;
/// 16-byte vectors a thread of [`filter_device`] reads a tile (issued together).
const FILTER_VECS: usize = 4;
/// Blocks of [`filter_device`] an SM (its registers allow: 80, two tiles in flight): its grid.
pub const FILTER_PER_SM: u32 = 3;

/// The filter: every element whose key is at or above [`sample_device`]'s threshold into the
/// candidate buffer (bits and index, in no particular order: what reads the buffer does not
/// depend on it), its count at [`FILTERED`]. Each warp on its own (no block barrier): it marks
/// the keys it keeps, stages them in its share of shared memory and takes their slots in the
/// buffer a flush at a time (a tile with more than the share at once); once the slots pass
/// `cap` it stops (the digit passes then read the input). Tiles of [`FILTER_VECS`] 16-byte
/// vectors a thread, each thread's a block apart; any grid of [`BLOCK`] threads,
/// [`FILTER_SHARED`] bytes.
///
/// # Safety
/// As [`digits_device`], after [`sample_device`].
#[inline(always)]
#[allow(clippy::needless_range_loop)] // (j, m) name an element's bit as well as its vector
pub unsafe fn filter_device<W: Bits>(p: TopkParams<W>) {
    const SHARE: u64 = (STAGE / (BLOCK as usize / 32)) as u64;
    let smem = gpu::dynamic_shared::<u64>();
    let (t, lane) = (gpu::thread_idx_x() as usize, gpu::lane_id());
    let mine = (t / 32) * SHARE as usize;
    let (stage_bits, stage_idx) = unsafe {
        (
            smem.part::<W>(mine * 8, SHARE as usize),
            smem.part::<u32>(STAGE * 8 + mine * 4, SHARE as usize),
        )
    };
    let (kind, smallest, width) = (p.kind, p.smallest != 0, W::BITS);
    let low = unsafe { p.counts.add(THRESHOLD).read() } as u64;
    let high = unsafe { p.counts.add(THRESHOLD + 1).read() } as u64;
    let kth = low | high << 32;
    let key32 = Key32::new(width.min(32), kind, smallest);
    let (per, vecs) = (W::PER_VEC, FILTER_VECS);
    let tile = (BLOCK as usize * vecs * per) as u64;
    let aligned = p.input as usize & 15 == 0;
    let n = p.n;
    let full_mask = gpu::FULL_MASK;
    // Takes `len` slots of the buffer (lane 0 for the warp): the first's place, in every lane.
    let take = |len: u64| {
        let mut at = 0u32;
        if lane == 0 {
            at = unsafe { gpu::atomic_add_u32(p.counts.add(FILTERED), len as u32) };
        }
        gpu::shfl_sync(full_mask, at, 0, 32) as u64
    };
    // The warp's staged keys to the buffer; whether the buffer is full.
    let flush = |staged: u64| {
        let at = take(staged);
        let full = at + staged > p.cap;
        let mut i = lane as u64;
        while i < staged && !full {
            unsafe {
                p.cand_bits
                    .add((at + i) as usize)
                    .write(stage_bits.read(i as usize));
                p.cand_idx
                    .add((at + i) as usize)
                    .write(stage_idx.read(i as usize));
            }
            i += 32;
        }
        gpu::sync_warp(full_mask);
        full
    };
    // Tile `first`'s vectors: element m of vector j is `first + (j * BLOCK + t) * per + m`.
    let load = |first: u64| {
        let mut w = [[0u32; 4]; FILTER_VECS];
        if first >= n {
            return w;
        }
        // A whole tile of an aligned input: no element checked against `n`.
        let whole = aligned && first + tile <= n;
        for (j, wj) in w.iter_mut().enumerate() {
            let e = first + ((j * BLOCK as usize + t) * per) as u64;
            if whole || (aligned && e + per as u64 <= n) {
                *wj = unsafe { gpu::load_nc_v4_b32(p.input.add(e as usize) as *const u32) };
            } else {
                for m in 0..per {
                    if e + (m as u64) < n {
                        let b = unsafe { p.input.add(e as usize + m).read() }.to_u64();
                        *wj = W::set_lane(*wj, m, b);
                    }
                }
            }
        }
        w
    };
    let (mut staged, mut full) = (0u64, false);
    let mut first = gpu::block_idx_x() as u64 * tile;
    let step = gpu::grid_dim_x() as u64 * tile;
    let mut next = load(first);
    while first < n && !full {
        // The next tile's loads in flight while this one is counted.
        let w = next;
        next = load(first + step);
        let index = |j: usize, m: usize| first + ((j * BLOCK as usize + t) * per + m) as u64;
        let whole = aligned && first + tile <= n;
        // Bit `j * per + m`: element m of vector j is kept (at most 32 a thread).
        let mut mask = 0u32;
        for j in 0..vecs {
            for m in 0..per {
                let x = W::lane(w[j], m);
                // 32-bit keys and compares for keys of up to 32 bits.
                let above = if width <= 32 {
                    key32.key(x as u32) >= kth as u32
                } else {
                    key_of(x, width, kind, smallest) >= kth
                };
                mask |= (above as u32) << (j * per + m);
            }
        }
        // The elements past the end (a last, partial tile only: no branch an element).
        if !whole {
            for j in 0..vecs {
                for m in 0..per {
                    if index(j, m) >= n {
                        mask &= !(1u32 << (j * per + m));
                    }
                }
            }
        }
        if gpu::any_sync(full_mask, mask != 0) {
            let kept = mask.count_ones() as u64;
            let inc = warp_inclusive_scan(kept, |a: u64, b: u64| a + b);
            let total = gpu::shfl_sync(full_mask, inc, 31, 32);
            if staged + total > SHARE {
                full = flush(staged);
                staged = 0;
            }
            // A tile of more than the share at once goes straight to the buffer.
            let direct = total > SHARE;
            let at = if direct { take(total) } else { 0 };
            full |= direct && at + total > p.cap;
            let mut r = inc - kept;
            // Static indices (the vectors stay in registers).
            for j in 0..vecs {
                for m in 0..per {
                    if mask >> (j * per + m) & 1 != 0 && !full {
                        let (b, e) = (W::from_u64(W::lane(w[j], m)), index(j, m) as u32);
                        unsafe {
                            if direct {
                                p.cand_bits.add((at + r) as usize).write(b);
                                p.cand_idx.add((at + r) as usize).write(e);
                            } else {
                                stage_bits.write((staged + r) as usize, b);
                                stage_idx.write((staged + r) as usize, e);
                            }
                        }
                        r += 1;
                    }
                }
            }
            if !direct {
                staged += total;
            }
            gpu::sync_warp(full_mask);
        }
        first += step;
    }
    if staged > 0 && !full {
        flush(staged);
    }
}

/// After every pass, when the result is the list: list the candidates at or above the
/// threshold (those above it were listed by the writing pass). Any grid of [`BLOCK`] threads,
/// [`SCAN_SHARED`] bytes.
///
/// # Safety
/// As [`digits_device`], every pass done.
#[inline(always)]
pub unsafe fn gather_device<W: Bits>(p: TopkParams<W>) {
    let smem = gpu::dynamic_shared::<u64>();
    let scratch = unsafe { smem.part::<u64>(0, SCRATCH) };
    // Blocks past the buffer's candidates idle; block 0 always takes the step and stores it,
    // which `count_device` then loads (it follows this launch whenever the host makes it).
    let first = gpu::block_idx_x() as u64 * gpu::block_dim_x() as u64;
    let idle = |th: &Threshold| first > 0 && (th.cand == NONE || first >= th.cand);
    let Some(th) = threshold::<W>(&p, passes(W::BITS), scratch, false, idle) else {
        return;
    };
    if !th.listed(p.k) {
        return;
    }
    let (kind, smallest, width) = (p.kind, p.smallest != 0, W::BITS);
    let block = gpu::block_dim_x() as u64;
    let threads = block * gpu::grid_dim_x() as u64;
    let mut i = gpu::block_idx_x() as u64 * block + gpu::thread_idx_x() as u64;
    while i < th.cand {
        let x = unsafe { p.cand_bits.add(i as usize).read() };
        if key_of(x.to_u64(), width, kind, smallest) >= th.prefix {
            let at = unsafe { gpu::atomic_add_u32(p.counts.add(LIST), 1) } as usize;
            if at < SORT_MAX {
                unsafe {
                    p.list_bits.add(at).write(x);
                    p.list_idx.add(at).write(p.cand_idx.add(i as usize).read());
                }
            }
        }
        i += threads;
    }
}

/// Chunk `c` of `chunks` over `n` elements: `[start, end)`, whole tiles of the write kernel.
#[inline(always)]
pub fn chunk(c: u64, chunks: u64, n: u64) -> (u64, u64) {
    let tile = BLOCK as u64 * ITEMS as u64;
    let len = n.div_ceil(chunks).div_ceil(tile) * tile;
    ((c * len).min(n), ((c + 1) * len).min(n))
}

/// The `ITEMS` elements from `first` (those before `end`) as bits: 16-byte loads when the input
/// is aligned and all are in range (a chunk's tiles start on a multiple of `BLOCK * ITEMS`), else
/// one by one.
#[inline(always)]
fn load_items<W: Bits>(input: *const W, first: u64, end: u64) -> [u64; ITEMS] {
    let mut b = [0u64; ITEMS];
    if input as usize & 15 == 0 && first + ITEMS as u64 <= end {
        let base = unsafe { input.add(first as usize) } as *const u32;
        for v in 0..ITEMS / W::PER_VEC {
            let w = unsafe { gpu::load_nc_v4_b32(base.add(4 * v)) };
            for j in 0..W::PER_VEC {
                b[v * W::PER_VEC + j] = W::lane(w, j);
            }
        }
    } else {
        for (m, bm) in b.iter_mut().enumerate() {
            let i = first + m as u64;
            if i < end {
                *bm = unsafe { input.add(i as usize).read() }.to_u64();
            }
        }
    }
    b
}

/// After every pass, unless the result is the list: chunk `block` counts its keys above the
/// threshold and equal to it (into the two counts of its chunk). `chunks` blocks of [`BLOCK`]
/// threads.
///
/// # Safety
/// As [`digits_device`], every pass done.
#[inline(always)]
pub unsafe fn count_device<W: Bits>(p: TopkParams<W>) {
    let smem = gpu::dynamic_shared::<u64>();
    let scratch = unsafe { smem.part::<u64>(0, SCRATCH) };
    // k up to SORT_MAX: `gather_device` ran before and stored the last step.
    let stored = p.k <= SORT_MAX as u64;
    let Some(th) = threshold::<W>(&p, passes(W::BITS), scratch, stored, |_| false) else {
        return;
    };
    if th.listed(p.k) {
        return;
    }
    let kth = th.prefix;
    let (kind, smallest, width) = (p.kind, p.smallest != 0, W::BITS);
    let c = gpu::block_idx_x() as u64;
    let (start, end) = chunk(c, p.chunks as u64, p.n);
    let (mut gt, mut eq) = (0u64, 0u64);
    let mut tile = start;
    while tile < end {
        let first = tile + gpu::thread_idx_x() as u64 * ITEMS as u64;
        let b = load_items::<W>(p.input, first, end);
        for (m, &bm) in b.iter().enumerate() {
            if first + (m as u64) < end {
                let kx = key_of(bm, width, kind, smallest);
                gt += (kx > kth) as u64;
                eq += (kx == kth) as u64;
            }
        }
        tile += BLOCK as u64 * ITEMS as u64;
    }
    let (_, gt) = block_scan(gt, scratch);
    let (_, eq) = block_scan(eq, scratch);
    if gpu::thread_idx_x() == 0 {
        let at = CHUNK_COUNTS + 2 * c as usize;
        unsafe {
            p.counts.add(at).write(gt as u32);
            p.counts.add(at + 1).write(eq as u32);
        }
    }
}

/// Writes `[start, end)` of `input` (an element's index: its offset from `input`): the keys
/// whose bits above `high` (all bits when `high >= 64` is false, none otherwise) exceed `kth`'s
/// at `gt_base + rank` (while below `above`), the ties at `above + eq_base + rank` (the first
/// `need`), in index order; tiles of `block * ITEMS`, thread `t` holding `ITEMS` consecutive
/// elements; `scratch` as [`block_scan`]'s. Every thread of the block calls it.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn write_ranks<W: Bits>(
    p: &TopkParams<W>,
    input: *const W,
    (start, end): (u64, u64),
    (kth, high): (u64, u32),
    (above, need): (u64, u64),
    (mut gt_base, mut eq_base): (u64, u64),
    (values, indices): (*mut W, *mut u64),
    block: u64,
    scratch: SharedArray<u64>,
) {
    let (kind, smallest, width) = (p.kind, p.smallest != 0, W::BITS);
    let t = gpu::thread_idx_x() as u64;
    // The resolved bits of a key (none before the first pass).
    let top = |kx: u64| if high >= 64 { 0 } else { kx >> high };
    let kth = top(kth);
    let mut tile = start;
    while tile < end && (gt_base < above || eq_base < need) {
        let first = tile + t * ITEMS as u64;
        let bits = load_items::<W>(input, first, end);
        let mut keys = [0u64; ITEMS];
        let (mut g, mut e) = (0u64, 0u64);
        for m in 0..ITEMS {
            if first + (m as u64) < end {
                keys[m] = top(key_of(bits[m], width, kind, smallest));
                g += (keys[m] > kth) as u64;
                e += (keys[m] == kth) as u64;
            }
        }
        // Both ranks in one scan: above in the high half, ties in the low.
        let (before, total) = block_scan(g << 32 | e, scratch);
        let (mut rg, mut re) = (gt_base + (before >> 32), eq_base + (before & 0xffff_ffff));
        for m in 0..ITEMS {
            let i = first + m as u64;
            if i >= end {
                break;
            }
            let at = if keys[m] > kth {
                rg += 1;
                rg - 1
            } else if keys[m] == kth {
                re += 1;
                if re - 1 < need {
                    above + re - 1
                } else {
                    u64::MAX
                }
            } else {
                u64::MAX
            };
            if at != u64::MAX {
                unsafe {
                    values.add(at as usize).write(W::from_u64(bits[m]));
                    indices.add(at as usize).write(i);
                }
            }
        }
        gt_base += total >> 32;
        eq_base += total & 0xffff_ffff;
        tile += block * ITEMS as u64;
    }
}

/// Chunk `block` writes its keys above the threshold, then the first ties, at their places in
/// index order (unless the result is the list). `chunks` blocks of [`BLOCK`] threads, after
/// [`count_device`].
///
/// # Safety
/// As [`count_device`]; `values` and `indices` hold `k`.
#[inline(always)]
pub unsafe fn write_device<W: Bits>(p: TopkParams<W>) {
    let smem = gpu::dynamic_shared::<u64>();
    let scratch = unsafe { smem.part::<u64>(0, SCRATCH) };
    let Some(th) = threshold::<W>(&p, passes(W::BITS), scratch, true, |_| false) else {
        return;
    };
    if th.listed(p.k) {
        return;
    }
    let (kth, need) = (th.prefix, th.need);
    let above = p.k - need;
    let c = gpu::block_idx_x() as u64;
    let t = gpu::thread_idx_x() as u64;
    // The chunks before this one: where its keys above and its ties start.
    let (mut gt0, mut eq0) = (0u64, 0u64);
    let mut j = t;
    while j < c {
        let at = CHUNK_COUNTS + 2 * j as usize;
        gt0 += unsafe { p.counts.add(at).read() } as u64;
        eq0 += unsafe { p.counts.add(at + 1).read() } as u64;
        j += BLOCK as u64;
    }
    let (_, gt_base) = block_scan(gt0, scratch);
    let (_, eq_base) = block_scan(eq0, scratch);
    let range = chunk(c, p.chunks as u64, p.n);
    write_ranks(
        &p,
        p.input,
        range,
        (kth, 0),
        (above, need),
        (gt_base, eq_base),
        (p.values, p.indices),
        BLOCK as u64,
        scratch,
    );
}

/// Sorts the `m` (a power of two) entries of `keys` and `idx` in shared memory: the larger key
/// first, then the lower index (a bitonic sort; `step` threads, every one calling it).
#[inline(always)]
fn bitonic(keys: SharedArray<u64>, idx: SharedArray<u64>, m: usize, step: usize) {
    let t = gpu::thread_idx_x() as usize;
    // a before b: the larger key, then the lower index.
    let first = |ka: u64, ia: u64, kb: u64, ib: u64| ka > kb || (ka == kb && ia < ib);
    let mut size = 2;
    while size <= m {
        let mut stride = size / 2;
        while stride > 0 {
            let mut i = t;
            while i < m {
                let j = i ^ stride;
                if j > i {
                    let (ka, ia, kb, ib) =
                        unsafe { (keys.read(i), idx.read(i), keys.read(j), idx.read(j)) };
                    let down = i & size == 0;
                    if first(kb, ib, ka, ia) == down {
                        unsafe {
                            keys.write(i, kb);
                            idx.write(i, ib);
                            keys.write(j, ka);
                            idx.write(j, ia);
                        }
                    }
                }
                i += step;
            }
            gpu::sync_threads();
            stride /= 2;
        }
        size *= 2;
    }
}

/// [`bitonic`]'s network over `m` (a power of two) single-word entries of `ent`, the largest
/// first, with the entries in registers, `R` a thread (entry `r * SORT_BLOCK + t` in thread
/// `t`): partners within a warp swap by shuffles, those a thread apart in registers, and only
/// the strides from 32 to half the block go through shared memory (`ld.shared`, two barriers a
/// stage: 20 of the 66 stages of 2048). Every stage is written out with constant size and
/// stride (the loops had cost three times the network's instructions: 64-bit counters, the
/// stage kind picked at run time). Every thread of a block of [`SORT_BLOCK`] calls it; `m <= R *
/// SORT_BLOCK`.
#[inline(always)]
fn bitonic_desc<const R: usize>(ent: SharedArray<u64>, m: usize) {
    const BLOCK: u32 = SORT_BLOCK;
    let t = gpu::thread_idx_x();
    let m = m as u32;
    let slots = unsafe { gpu::shared_slots(ent, 0) };
    let at = |r: usize| r as u32 * BLOCK + t;
    // Past m: 0, the last (it meets only others past m).
    let mut v = [0u64; R];
    for (r, vr) in v.iter_mut().enumerate() {
        if at(r) < m {
            *vr = unsafe { gpu::load_slot(slots, at(r)) };
        }
    }
    // Entry e's new value from its partner's: the larger where e is the lower of the pair in
    // a descending run (or the upper in an ascending one), else the smaller.
    let pick = |e: u32, size: u32, stride: u32, a: u64, b: u64| {
        if (a > b) == ((e & stride == 0) == (e & size == 0)) {
            a
        } else {
            b
        }
    };
    let mut stage = |size: u32, stride: u32| {
        if stride >= BLOCK {
            // Partners in this thread's registers (static indices: no local memory).
            let v0 = v;
            for r in 0..R {
                for q in 0..R {
                    if q as u32 == r as u32 ^ (stride / BLOCK) {
                        v[r] = pick(at(r), size, stride, v0[r], v0[q]);
                    }
                }
            }
        } else if stride >= 32 {
            for (r, &vr) in v.iter().enumerate() {
                if at(r) < m {
                    unsafe { gpu::store_slot(slots, at(r), vr) };
                }
            }
            gpu::sync_threads();
            for (r, vr) in v.iter_mut().enumerate() {
                let e = at(r);
                if e < m {
                    let b = unsafe { gpu::load_slot(slots, e ^ stride) };
                    *vr = pick(e, size, stride, *vr, b);
                }
            }
            gpu::sync_threads();
        } else {
            for (r, vr) in v.iter_mut().enumerate() {
                let b = gpu::shfl_xor_sync(gpu::FULL_MASK, *vr, stride, 32);
                *vr = pick(at(r), size, stride, *vr, b);
            }
        }
    };
    // Sizes past R * BLOCK are left out at compile time, those past m skipped (block-uniform).
    macro_rules! merges {
        ($($size:literal: $($stride:literal)*;)*) => {$(
            if $size <= R as u32 * BLOCK && $size <= m {
                $(stage($size, $stride);)*
            }
        )*};
    }
    merges! {
        2: 1;
        4: 2 1;
        8: 4 2 1;
        16: 8 4 2 1;
        32: 16 8 4 2 1;
        64: 32 16 8 4 2 1;
        128: 64 32 16 8 4 2 1;
        256: 128 64 32 16 8 4 2 1;
        512: 256 128 64 32 16 8 4 2 1;
        1024: 512 256 128 64 32 16 8 4 2 1;
        2048: 1024 512 256 128 64 32 16 8 4 2 1;
    }
    const _: () = assert!(SORT_MAX <= 2048);
    for (r, &vr) in v.iter().enumerate() {
        if at(r) < m {
            unsafe { gpu::store_slot(slots, at(r), vr) };
        }
    }
    gpu::sync_threads();
}

/// The result in its order, in one block of [`SORT_BLOCK`] threads (a bitonic sort: keys of up
/// to 32 bits one word an entry in registers, [`bitonic_desc`]; wider keys in shared memory,
/// [`bitonic`]): the list's entries when the result is the list (sorted: key down, index up; else
/// the keys above the threshold, then the ties, each in index order; the first `k`), else,
/// when sorted output is asked, the `k` written results (at most [`SORT_MAX`]). Values are
/// read back by index.
///
/// # Safety
/// As [`write_device`], after it and [`gather_device`].
#[inline(always)]
pub unsafe fn sort_device<W: Bits>(p: TopkParams<W>) {
    let smem = gpu::dynamic_shared::<u64>();
    let (keys, idx, scratch) = unsafe {
        (
            smem.part::<u64>(0, SORT_MAX),
            smem.part::<u64>(SORT_MAX * 8, SORT_MAX),
            smem.part::<u64>(SORT_MAX * 16, SCRATCH),
        )
    };
    let Some(th) = threshold::<W>(&p, passes(W::BITS), scratch, true, |_| false) else {
        return;
    };
    let listed = th.listed(p.k);
    let sorted = p.sorted != 0;
    if !listed && !sorted {
        return;
    }
    let (kind, smallest, width) = (p.kind, p.smallest != 0, W::BITS);
    let k = p.k as usize;
    let len = if listed {
        (p.k - th.need + th.count) as usize
    } else {
        k
    };
    let m = len.next_power_of_two();
    let (t, block) = (gpu::thread_idx_x() as usize, gpu::block_dim_x() as usize);
    let mut i = t;
    while i < m {
        let (kk, at) = if i < len {
            let (b, at) = if listed {
                unsafe {
                    (
                        p.list_bits.add(i).read().to_u64(),
                        p.list_idx.add(i).read() as u64,
                    )
                }
            } else {
                let at = unsafe { p.indices.add(i).read() };
                (unsafe { p.input.add(at as usize).read() }.to_u64(), at)
            };
            let kk = key_of(b, width, kind, smallest);
            // Index order: every key above the threshold before every tie.
            (if sorted { kk } else { (kk != th.prefix) as u64 }, at)
        } else {
            (0, u64::MAX)
        };
        if W::BITS <= 32 {
            // One word an entry: the key above the index's complement (n < 2^32), the sort's
            // order in one compare; past the list 0, below every entry.
            unsafe { keys.write(i, kk << 32 | (u32::MAX - at as u32) as u64) };
        } else {
            unsafe {
                keys.write(i, kk);
                idx.write(i, at);
            }
        }
        i += block;
    }
    gpu::sync_threads();
    if W::BITS > 32 {
        bitonic(keys, idx, m, block);
    } else if m <= block {
        bitonic_desc::<1>(keys, m);
    } else {
        bitonic_desc::<{ SORT_MAX / SORT_BLOCK as usize }>(keys, m);
    }
    let mut i = t;
    while i < k {
        let at = if W::BITS <= 32 {
            (u32::MAX - unsafe { keys.read(i) } as u32) as u64
        } else {
            unsafe { idx.read(i) }
        };
        unsafe {
            p.indices.add(i).write(at);
            p.values.add(i).write(p.input.add(at as usize).read());
        }
        i += block;
    }
}

/// Threads of [`sort_device`]'s one block (a thread a pair of a bitonic stage of 2048).
pub const SORT_BLOCK: u32 = 1024;

/// Threads of [`rows_device`]'s blocks (one a row).
pub const ROWS_BLOCK: u32 = 512;
/// Entries of [`rows_device`]'s candidate list (shared memory).
pub const ROWS_LIST: usize = 1024;

/// Where a row's digit passes stand: the digits found (`prefix`, the bits above `high`; none
/// while `high >= 64`), how many keys matching them are still wanted and how many match.
#[derive(Clone, Copy)]
struct RowState {
    prefix: u64,
    high: u32,
    need: u64,
    count: u64,
}

impl RowState {
    /// The found digits of key `kx` (0 before the first pass).
    #[inline(always)]
    fn top(&self, kx: u64) -> u64 {
        if self.high >= 64 { 0 } else { kx >> self.high }
    }

    /// Counts digit `shift` of `kx` into lane `col`'s column of `ctr` if it matches.
    #[inline(always)]
    fn count(&self, ctr: SharedArray<u32>, col: usize, kx: u64, shift: u32) {
        if self.top(kx) == self.top(self.prefix) {
            unsafe { ctr.add(((kx >> shift) & 0xff) as usize * 32 + col, 1) };
        }
    }

    /// After a pass counted digit `shift` into `ctr` (and a barrier): the digit where the
    /// key still wanted lies, in every thread; `scratch` [`SCRATCH`] words.
    #[inline(always)]
    fn next(&mut self, ctr: SharedArray<u32>, scratch: SharedArray<u64>, shift: u32) {
        let t = gpu::thread_idx_x() as usize;
        // Thread t holds digit 255 - t: a scan in thread order counts from the top digit.
        let mut c = 0u64;
        if t < RADIX {
            let d = RADIX - 1 - t;
            for l in 0..32 {
                c += unsafe { ctr.read(d * 32 + ((l + t) & 31)) } as u64;
            }
        }
        let (digit, need, count) = pick_digit(c, self.need, scratch);
        self.prefix |= digit << shift;
        (self.need, self.count, self.high) = (need, count, shift);
    }
}

/// The candidate list of a row (keys and indices in shared memory, its length a counter).
#[derive(Clone, Copy)]
struct RowList {
    keys: SharedArray<u64>,
    idx: SharedArray<u32>,
    len: SharedArray<u32>,
}

impl RowList {
    /// Lists key `kx` of element `i` if its found digits are at or above the threshold's.
    #[inline(always)]
    fn offer(&self, st: &RowState, kx: u64, i: u64) {
        if st.top(kx) >= st.top(st.prefix) {
            let at = unsafe { self.len.fetch_add(0, 1) } as usize;
            unsafe {
                self.keys.write(at, kx);
                self.idx.write(at, i as u32);
            }
        }
    }
}

/// Top-k of each row of a row-major matrix, one block of [`ROWS_BLOCK`] threads a row (grid:
/// the rows), [`ROWS_SHARED`] bytes: `n` is the columns, `values` and `indices` hold `k` a row
/// (indices within the row). The digit passes of [`digits_device`] within the block; the first
/// pass after which the keys at or above the digits found fit [`ROWS_LIST`] also lists them in
/// shared memory (the row's last read: later passes count the list, and the result is sorted
/// from it: key down, or above the k-th then its ties, index up). Otherwise every pass reads
/// the row, and the block writes the keys above the k-th and its first ties in index order
/// ([`write_ranks`]), sorted in shared memory when asked (k up to [`SORT_MAX`]). The other
/// fields are not read.
///
/// # Safety
/// `input` holds `grid * n` elements, `values` and `indices` `grid * k`; `k <= n`, and `k <=
/// SORT_MAX` when sorted.
#[inline(always)]
pub unsafe fn rows_device<W: Bits>(p: TopkParams<W>) {
    let smem = gpu::dynamic_shared::<u64>();
    let at_list = SCRATCH * 8 + RADIX * 32 * 4;
    let (scratch, ctr, list) = unsafe {
        (
            smem.part::<u64>(0, SCRATCH),
            smem.part::<u32>(SCRATCH * 8, RADIX * 32),
            RowList {
                keys: smem.part::<u64>(at_list, ROWS_LIST),
                idx: smem.part::<u32>(at_list + ROWS_LIST * 8, ROWS_LIST),
                len: smem.part::<u32>(at_list + ROWS_LIST * 12, 1),
            },
        )
    };
    let (t, block) = (gpu::thread_idx_x() as usize, gpu::block_dim_x() as usize);
    let row = gpu::block_idx_x() as u64;
    let (cols, k) = (p.n, p.k);
    let x = unsafe { p.input.add((row * cols) as usize) };
    let (values, indices) = unsafe {
        (
            p.values.add((row * k) as usize),
            p.indices.add((row * k) as usize),
        )
    };
    let (kind, smallest, width) = (p.kind, p.smallest != 0, W::BITS);
    let key_at = |i: u64| {
        key_of(
            unsafe { x.add(i as usize).read() }.to_u64(),
            width,
            kind,
            smallest,
        )
    };
    let col = gpu::lane_id() as usize;
    let mut st = RowState {
        prefix: 0,
        high: 64,
        need: k,
        count: cols,
    };
    // The list's length once written (NONE before).
    let mut listed = NONE;
    let mut pass = 0;
    while pass < passes(width) {
        let mut j = t;
        while j < RADIX * 32 {
            unsafe { ctr.write(j, 0) };
            j += block;
        }
        if t == 0 {
            unsafe { list.len.write(0, 0) };
        }
        gpu::sync_threads();
        let shift = width - 8 * (pass + 1);
        let lists =
            listed == NONE && k - st.need + st.count <= ROWS_LIST as u64 && cols <= u32::MAX as u64;
        if listed != NONE {
            let mut i = t;
            while (i as u64) < listed {
                st.count(ctr, col, unsafe { list.keys.read(i) }, shift);
                i += block;
            }
        } else {
            let b = block as u64;
            let mut i = t as u64;
            // Four loads in flight a thread.
            while i + 3 * b < cols {
                let ks = (
                    key_at(i),
                    key_at(i + b),
                    key_at(i + 2 * b),
                    key_at(i + 3 * b),
                );
                st.count(ctr, col, ks.0, shift);
                st.count(ctr, col, ks.1, shift);
                st.count(ctr, col, ks.2, shift);
                st.count(ctr, col, ks.3, shift);
                if lists {
                    list.offer(&st, ks.0, i);
                    list.offer(&st, ks.1, i + b);
                    list.offer(&st, ks.2, i + 2 * b);
                    list.offer(&st, ks.3, i + 3 * b);
                }
                i += 4 * b;
            }
            while i < cols {
                let kx = key_at(i);
                st.count(ctr, col, kx, shift);
                if lists {
                    list.offer(&st, kx, i);
                }
                i += b;
            }
        }
        gpu::sync_threads();
        if lists {
            listed = unsafe { list.len.read(0) } as u64;
        }
        st.next(ctr, scratch, shift);
        pass += 1;
    }
    let sorted = p.sorted != 0;
    if listed == NONE {
        write_ranks(
            &p,
            x,
            (0, cols),
            (st.prefix, st.high),
            (k - st.need, st.need),
            (0, 0),
            (values, indices),
            block as u64,
            scratch,
        );
        if !sorted {
            return;
        }
        // The block's own writes, read back after the barrier.
        gpu::sync_threads();
    }
    // The counters' memory holds the sort: the list (every key at or above the k-th), or the
    // k written.
    let (keys, idx) = unsafe {
        (
            smem.part::<u64>(SCRATCH * 8, SORT_MAX),
            smem.part::<u64>(SCRATCH * 8 + SORT_MAX * 8, SORT_MAX),
        )
    };
    let len = if listed == NONE {
        k as usize
    } else {
        listed as usize
    };
    let kth = st.prefix;
    let m = len.next_power_of_two();
    let mut i = t;
    while i < m {
        let (kk, ii) = if i >= len {
            (0, u64::MAX)
        } else if listed == NONE {
            let b = unsafe { values.add(i).read() }.to_u64();
            (key_of(b, width, kind, smallest), unsafe {
                indices.add(i).read()
            })
        } else {
            let kk = unsafe { list.keys.read(i) };
            // Index order: above the k-th, then its ties, then the rest.
            let kk = if sorted {
                kk
            } else {
                (kk >= kth) as u64 + (kk > kth) as u64
            };
            (kk, unsafe { list.idx.read(i) } as u64)
        };
        unsafe {
            keys.write(i, kk);
            idx.write(i, ii);
        }
        i += block;
    }
    gpu::sync_threads();
    bitonic(keys, idx, m, block);
    let mut i = t;
    while i < k as usize {
        let at = unsafe { idx.read(i) };
        unsafe {
            indices.add(i).write(at);
            values.add(i).write(x.add(at as usize).read());
        }
        i += block;
    }
}

/// Dynamic shared memory of each kernel.
pub const DIGITS_SHARED: u32 = (SCRATCH * 8 + RADIX * 32 * 4 + 16) as u32;
pub const SCAN_SHARED: u32 = (SCRATCH * 8) as u32;
/// The staged keys' bits (8 bytes each, whatever the width) and indices.
pub const FILTER_SHARED: u32 = (STAGE * 12) as u32;
pub const SORT_SHARED: u32 = (SORT_MAX * 16 + SCRATCH * 8) as u32;
/// Scratch, the counters (which hold the sort's entries after the passes: the same bytes), the
/// candidate list and its length.
pub const ROWS_SHARED: u32 = (SCRATCH * 8 + RADIX * 32 * 4 + ROWS_LIST * 12 + 16) as u32;
const _: () = assert!(RADIX * 32 * 4 >= SORT_MAX * 16);

/// A top-k kernel's simulator entry.
pub type SimTopkFn<W> = unsafe fn(TopkParams<W>);

/// The five top-k kernels of one width.
#[cfg(not(target_arch = "nvptx64"))]
pub trait TopkInstance: Sized {
    const DIGITS: crate::Kernel<SimTopkFn<Self>>;
    const GATHER: crate::Kernel<SimTopkFn<Self>>;
    const COUNT: crate::Kernel<SimTopkFn<Self>>;
    const WRITE: crate::Kernel<SimTopkFn<Self>>;
    const SORT: crate::Kernel<SimTopkFn<Self>>;
    const ROWS: crate::Kernel<SimTopkFn<Self>>;
    const SAMPLE: crate::Kernel<SimTopkFn<Self>>;
    const FILTER: crate::Kernel<SimTopkFn<Self>>;
}

macro_rules! topk_width {
    ($w:ty, $digits:literal, $gather:literal, $count:literal, $write:literal, $sort:literal, $rows:literal, $sample:literal, $filter:literal) => {
        crate::launch_bounds!(@named $rows, ROWS_BLOCK, 1);
        crate::launch_bounds!(@named $sample, ROWS_BLOCK, 1);
        crate::launch_bounds!(@named $sort, SORT_BLOCK, 1);
        crate::launch_bounds!(@named $filter, BLOCK, FILTER_PER_SM);
        crate::launch_bounds!(@named $digits, BLOCK, DIGITS_PER_SM);
        const _: () = {
            type W = $w;
    crate::topk_params!(entry #[export_name = $digits] digits => (digits_device::<$w>));
    crate::topk_params!(entry #[export_name = $gather] gather => (gather_device::<$w>));
    crate::topk_params!(entry #[export_name = $count] count => (count_device::<$w>));
    crate::topk_params!(entry #[export_name = $write] write => (write_device::<$w>));
    crate::topk_params!(entry #[export_name = $sort] sort => (sort_device::<$w>));
    crate::topk_params!(entry #[export_name = $rows] rows => (rows_device::<$w>));
    crate::topk_params!(entry #[export_name = $sample] sample => (sample_device::<$w>));
    crate::topk_params!(entry #[export_name = $filter] filter => (filter_device::<$w>));
            #[cfg(not(target_arch = "nvptx64"))]
            impl TopkInstance for $w {
                const DIGITS: crate::Kernel<SimTopkFn<$w>> = crate::Kernel {
                    name: $digits,
                    sim: digits,
                };
                const GATHER: crate::Kernel<SimTopkFn<$w>> = crate::Kernel {
                    name: $gather,
                    sim: gather,
                };
                const COUNT: crate::Kernel<SimTopkFn<$w>> = crate::Kernel {
                    name: $count,
                    sim: count,
                };
                const WRITE: crate::Kernel<SimTopkFn<$w>> = crate::Kernel {
                    name: $write,
                    sim: write,
                };
                const SORT: crate::Kernel<SimTopkFn<$w>> = crate::Kernel {
                    name: $sort,
                    sim: sort,
                };
                const ROWS: crate::Kernel<SimTopkFn<$w>> = crate::Kernel {
                    name: $rows,
                    sim: rows,
                };
                const SAMPLE: crate::Kernel<SimTopkFn<$w>> = crate::Kernel {
                    name: $sample,
                    sim: sample,
                };
                const FILTER: crate::Kernel<SimTopkFn<$w>> = crate::Kernel {
                    name: $filter,
                    sim: filter,
                };
            }
        };
    };
}

#[cfg(feature = "builtin")]
topk_width!(
    u16,
    "topk_digits_b16",
    "topk_gather_b16",
    "topk_count_b16",
    "topk_write_b16",
    "topk_sort_b16",
    "topk_rows_b16",
    "topk_sample_b16",
    "topk_filter_b16"
);
#[cfg(feature = "builtin")]
topk_width!(
    u32,
    "topk_digits_b32",
    "topk_gather_b32",
    "topk_count_b32",
    "topk_write_b32",
    "topk_sort_b32",
    "topk_rows_b32",
    "topk_sample_b32",
    "topk_filter_b32"
);
#[cfg(feature = "builtin")]
topk_width!(
    u64,
    "topk_digits_b64",
    "topk_gather_b64",
    "topk_count_b64",
    "topk_write_b64",
    "topk_sort_b64",
    "topk_rows_b64",
    "topk_sample_b64",
    "topk_filter_b64"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrow_keys_are_the_keys() {
        let mut x = 0x9e37_79b9u32;
        let mut bits = std::vec![0u32, 0x8000_0000, 0x7f80_0000, 0x7fc0_0000, 0xffff_ffff];
        bits.extend([0x7c00, 0xfc00, 0x7e00, 0x7f80, 0xff81, 0x8000, 0x7fff]);
        for _ in 0..5000 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            bits.push(x);
        }
        for &b in &bits {
            for kind in [KIND_UINT, KIND_INT, KIND_FLOAT, KIND_BF16] {
                for smallest in [false, true] {
                    let h = b & 0xffff;
                    let k16 = Key32::new(16, kind, smallest).key(h);
                    assert_eq!(k16 as u64, key(h as u64, 16, kind, smallest), "{h:#x}");
                    if kind != KIND_BF16 {
                        let k32 = Key32::new(32, kind, smallest).key(b);
                        assert_eq!(k32 as u64, key(b as u64, 32, kind, smallest), "{b:#x}");
                    }
                }
            }
        }
    }

    #[test]
    fn keys_order_as_values() {
        let f: [f32; 9] = [
            f32::NEG_INFINITY,
            -1e30,
            -1.0,
            -0.0,
            0.0,
            1e-45,
            1.0,
            3e38,
            f32::INFINITY,
        ];
        for w in f.windows(2) {
            let (a, b) = (w[0].to_bits() as u64, w[1].to_bits() as u64);
            assert!(
                key(a, 32, KIND_FLOAT, false) < key(b, 32, KIND_FLOAT, false),
                "{w:?}"
            );
            assert!(
                key(a, 32, KIND_FLOAT, true) > key(b, 32, KIND_FLOAT, true),
                "{w:?}"
            );
        }
        for nan in [f32::NAN, -f32::NAN, f32::from_bits(0x7f80_0001)] {
            assert_eq!(
                key(nan.to_bits() as u64, 32, KIND_FLOAT, false),
                u32::MAX as u64
            );
            assert_eq!(key(nan.to_bits() as u64, 32, KIND_FLOAT, true), 0);
        }
        let d: [f64; 4] = [-2.0, -0.0, 1.0, f64::INFINITY];
        for w in d.windows(2) {
            assert!(
                key(w[0].to_bits(), 64, KIND_FLOAT, false)
                    < key(w[1].to_bits(), 64, KIND_FLOAT, false)
            );
        }
        assert_eq!(key(f64::NAN.to_bits(), 64, KIND_FLOAT, false), u64::MAX);
        let i: [i32; 4] = [i32::MIN, -1, 0, i32::MAX];
        for w in i.windows(2) {
            assert!(
                key(w[0] as u32 as u64, 32, KIND_INT, false)
                    < key(w[1] as u32 as u64, 32, KIND_INT, false)
            );
        }
        // f16: 0x7c00 inf, 0x7e00 NaN, 0xbc00 -1; bf16: 0x7f80 inf, 0x7fc0 NaN.
        assert_eq!(key(0x7e00, 16, KIND_FLOAT, false), 0xffff);
        assert!(key(0xbc00, 16, KIND_FLOAT, false) < key(0x3c00, 16, KIND_FLOAT, false));
        assert!(key(0x7c00, 16, KIND_FLOAT, false) < 0xffff);
        assert_eq!(key_of(0x7fc0, 16, KIND_BF16, false), 0xffff);
        assert!(key_of(0xbf80, 16, KIND_BF16, false) < key_of(0x3f80, 16, KIND_BF16, false));
        assert!(key_of(0x7f80, 16, KIND_BF16, false) < 0xffff);
    }
}
