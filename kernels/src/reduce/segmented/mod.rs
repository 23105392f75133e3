//! Segmented reduction in ONE launch: `out[s] = reduce(input[begin[s]..end[s]])` for every
//! segment `s`, with segments given by offsets (`begin`/`end`, CSR style) or by a fixed length
//! (the rows of a row-major matrix). Empty segments give the operator's identity; `lift` gets
//! the index *within* the segment (so argmin/argmax return positions inside their segment).
//!
//! Strategy per segment length `L` (CUB's small/medium/large segment policies are the model):
//! - Blocks of [`BLOCK`] threads take groups of [`SEGMENTS_PER_BLOCK`] consecutive segments
//!   (drawn in batches from a global counter): thread `t` of warp `w` holds segment
//!   `g * SEGMENTS_PER_BLOCK + w + 8t`.
//! - `L <= WARP_MAX` (short): reduced in the warp order, lane-strided then a shuffle butterfly.
//!   Offsets segments are read from a stage in shared memory that the block fills window by
//!   window (`staged.rs`). (Rows of a matrix take [`rows_device`].)
//! - Longer segments are cut into *chunks* of [`CHUNK_VECS`] 16-byte vectors, the last one up
//!   to 1.5 times that ([`chunks_of`]; after a scalar head up to the first 16-byte boundary; a
//!   scalar tail after the last whole vector).
//!   A chunk is reduced by a whole block ([`VEC_LOADS`] vector loads in flight per thread,
//!   then a block reduction). A one-chunk segment is reduced by its group's block. A segment
//!   of several chunks is published on a work list: every block with nothing else to do draws
//!   its chunks one at a time (a per-segment counter), writes the chunk's partial, and the
//!   block that finishes the last chunk combines the partials. So one huge segment is read by
//!   the whole GPU, and skewed lengths balance.
//! - A few long offsets segments (the host's choice: at most [`LISTED_MAX`], at least a chunk
//!   of input per segment) skip the groups and the work list: [`listed_device`], a kernel of
//!   its own (its registers allocated apart from the work list's staging), lists every chunk
//!   in shared memory from the offsets before any load.
//! - Fixed-size rows need no classification: [`rows_device`], a kernel of its own, gives them
//!   the same bits: rows up to [`WARP_MAX`] a warp each, the grid's warps striding over them
//!   from global memory with [`WARP_LOADS`] loads in flight per lane; longer ones a block per
//!   chunk (few registers).
//! - CSR offsets of short segments (the host's choice: a mean length of at most
//!   `SEGMENTED.tiles_max_average`; built-in sum, min and max) are read as tiles whatever the
//!   boundaries: [`tiles_device`], the reduce by key's walk with the offsets for heads. Its
//!   float sums follow the tile grid, not the length alone (its docs).
//!
//! Deterministic (the tiles form apart, whose order its docs give): a segment's combining
//! order is a function of its length and of its start's address modulo 16 bytes (which fixes the head/vector/tail cut), never of the grid, of which
//! block or warp runs a chunk, or of timing: chunk `c`'s partial is always the same block
//! reduction, and the partials are always combined as "thread `j` folds partials
//! `j, j + BLOCK, ...` in order, then a block reduction", whether one block did every chunk (the
//! fall-back when the work list is full) or many did. So the bits are the same for every grid,
//! every GPU and the simulator (same code).
//!
//! Bad offsets never read out of bounds: a segment with `end < begin` or `end > n` is reduced
//! as empty (identity) and reported through `status` (see [`segmented_device`]), which the host
//! turns into an error.

use crate::block::block_reduce;
use crate::gpu::{self, ShflValue};
use crate::ops::{ArgAcc, Element, ReduceOp};
use crate::reduce::fold_vec;
use crate::warp::warp_reduce;

use super::policy::SEGMENTED;

/// Threads per block of the segmented reduction ([`SEGMENTED`]).
pub const BLOCK: u32 = SEGMENTED.block;
/// Segments per group: one per thread of a block.
pub const SEGMENTS_PER_BLOCK: u32 = BLOCK;
/// Longest segment reduced by one warp alone ([`SEGMENTED`]).
pub const WARP_MAX: u64 = SEGMENTED.warp_max;
/// Scalar loads a lane of a warp-reduced segment keeps in flight ([`SEGMENTED`]).
pub const WARP_LOADS: u64 = SEGMENTED.warp_loads;
/// 16-byte loads a thread keeps in flight while reducing a chunk ([`SEGMENTED`]).
pub const VEC_LOADS: u64 = SEGMENTED.vec_loads;
/// 16-byte vectors per chunk ([`SegmentedPolicy::chunk_vecs`](super::policy::SegmentedPolicy::chunk_vecs)).
pub const CHUNK_VECS: u64 = SEGMENTED.chunk_vecs();

/// `status` code of a segment whose end lies before its begin.
pub const BAD_DECREASING: u64 = 0;
/// `status` code of a segment whose end lies past the input.
pub const BAD_OUT_OF_RANGE: u64 = 1;

/// u64 words of the workspace's control block: chunks allocated (entry count << 40 | chunk
/// count, one atomic so that entries' first chunks grow with their index), chunks claimed,
/// blocks exited, groups drawn, groups classified.
pub const CTL_WORDS: u64 = 8;
/// u64 words per work-list entry: segment, chunks done (the chunk slots carry the rest).
pub const ENTRY_WORDS: u64 = 2;
const ALLOC: usize = 0;
const CLAIMED: usize = 1;
const EXITED: usize = 2;
const GROUPS_DRAWN: usize = 3;
const CLASSIFIED: usize = 4;
const CHUNK_BITS: u64 = 40;
const CHUNK_MASK: u64 = (1 << CHUNK_BITS) - 1;
const E_SEG: usize = 0;
const E_DONE: usize = 1;
/// An owner word of a chunk slot whose segment is reduced by its own block (no room listed).
const SKIP: u64 = TAG - 1;
/// u64 words per chunk slot's owner record: entry + 1 (or [`SKIP`]), the segment's start,
/// length and first chunk slot, each word tagged with [`TAG`] (0 while unwritten).
pub const OWNER_WORDS: u64 = 4;
/// The bit every written owner-record word carries. Each word says on its own that it is
/// current (values are below 2^63: element counts and slot indices), so a claimer reads the
/// whole record in one round trip (two 16-byte relaxed loads) with no acquire order between
/// its words; the last block out clears every word for the next launch.
const TAG: u64 = 1 << 63;

/// How a block-reduced segment at `x` of `len` elements is cut: [`crate::load::Cut`]'s scalar
/// head, whole vectors and scalar tail, and the vectors' chunks.
#[derive(Clone, Copy)]
struct Cut {
    head: u64,
    vectors: u64,
    chunks: u64,
}

#[inline(always)]
fn cut<T: Element>(x: *const T, len: u64) -> Cut {
    let crate::load::Cut { head, vectors, .. } = crate::load::Cut::new(x, len);
    // (Chunks of equal sizes, the nearest whole number of them, were tried: the run-time
    // chunk size cost registers, two blocks per SM instead of three, and every case was
    // slower; CHANGELOG.md, issue 15.)
    Cut {
        head,
        vectors,
        chunks: chunks_of(vectors),
    }
}

/// Chunks of a segment of `vectors` whole vectors: [`CHUNK_VECS`] each, the last one taking
/// the remainder when it is at most half a chunk (so up to 1.5 chunks): a tail chunk of a few
/// vectors would cost a whole chunk's claim, partial and barriers (1000 segments of 90,000 to
/// 110,000 f32: 3.6 chunks each on average with whole chunks, 3 with this rounding).
#[inline(always)]
pub const fn chunks_of(vectors: u64) -> u64 {
    let c = vectors.saturating_sub(CHUNK_VECS / 2).div_ceil(CHUNK_VECS);
    if c == 0 { 1 } else { c }
}

/// Blocks an SM a segmented reduction kernel is built for, by its accumulator's size (one
/// word: three at 80 registers; wider: two).
pub const fn blocks_per_sm(acc_bytes: usize) -> u32 {
    if acc_bytes <= 4 { 3 } else { 2 }
}

/// Where a segmented reduction writes segment `s`'s accumulator.
pub trait SegmentSink<T: Element, A: ShflValue> {
    /// The element type of the main output array.
    type Out: Copy;
    /// Store `acc` as segment `s`'s result (`index_out` is the second array, or null).
    ///
    /// # Safety
    /// `out` (and `index_out` where used) valid for `s + 1` elements.
    unsafe fn store(out: *mut Self::Out, index_out: *mut u64, s: u64, acc: A);
}

/// The accumulator itself goes to `out[s]` (every operator; `index_out` unused).
pub struct AccSink;
impl<T: Element, A: ShflValue> SegmentSink<T, A> for AccSink {
    type Out = A;
    #[inline(always)]
    unsafe fn store(out: *mut A, _: *mut u64, s: u64, acc: A) {
        unsafe { out.add(s as usize).write(acc.canonical()) }
    }
}

/// Argmin/argmax: the value goes to `out[s]`, the index within the segment to
/// `index_out[s]` (`u64::MAX` for an empty segment, whose value is the identity).
pub struct ArgSink;
impl<T: Element> SegmentSink<T, ArgAcc<T>> for ArgSink {
    type Out = T;
    #[inline(always)]
    unsafe fn store(out: *mut T, index_out: *mut u64, s: u64, acc: ArgAcc<T>) {
        unsafe {
            out.add(s as usize).write(acc.value);
            index_out.add(s as usize).write(acc.index);
        }
    }
}

mod blocks;
mod listed;
mod rows;
mod staged;
mod tiles;
mod work_list;

use blocks::*;
pub use listed::*;
pub use rows::*;
use staged::*;
pub use staged::{STAGE_BYTES, STAGE_VECS};
pub use tiles::*;
pub use work_list::*;

/// The parameters of [`SegmentedParams`]'s kernels, written once: the struct and every kernel entry's
/// parameter list ([`kernel_params!`](crate::kernel_params)).
#[macro_export]
#[doc(hidden)]
macro_rules! segmented_params {
    ($($mode:tt)*) => {
        $crate::kernel_params! { $($mode)* SegmentedParams<T, Out> {
            /// The input.
            input: *const T,
            /// Elements at `input`.
            n: u64,
            /// Segment `s` starts at `begin[s]`; null for fixed-length rows.
            begin: *const u64,
            /// Segment `s` ends at `end[s]` (unused for rows).
            end: *const u64,
            /// The rows' length (when `begin` is null).
            segment_len: u64,
            /// Segments.
            k: u64,
            /// One result per segment.
            out: *mut Out,
            /// One index per segment (argmin/argmax), or null.
            index_out: *mut u64,
            /// The offsets check's status word.
            status: *mut u64,
            /// The workspace.
            ws: *mut u64,
            /// Work-list entries the workspace holds (unused by the listed form).
            entry_cap: u64,
            /// Partials the workspace holds.
            partial_cap: u64,
            /// The tiles form's tile counter: 0 at launch, 0 again after (null elsewhere).
            counter: *mut u32,
            /// The tiles form's launch tag, new for every launch (0 elsewhere).
            epoch: u32,
            /// Tiles ahead whose values (and offsets) the tiles form asks L2 for (0: none).
            prefetch: u32,
            /// The tiles form's bounds: tile `t`'s offsets are `bounds[t]..bounds[t + 1]`,
            /// written by its bounds pass; null: each tile searches for its own.
            bounds: *mut u64,
        } }
    };
}

crate::segmented_params!(struct
    /// The launch parameters of the segmented reductions ([`segmented_device`], [`rows_device`]):
    /// the kernels' one parameter, by value.
);

impl<T, Out> SegmentedParams<T, Out> {
    /// `k` results at `out` of the `n` elements at `input`, every other field null or zero
    /// (what a kernel that does not read it is given); a launch sets its own by struct update.
    pub const fn new(input: *const T, n: u64, k: u64, out: *mut Out) -> Self {
        Self {
            input,
            n,
            begin: core::ptr::null(),
            end: core::ptr::null(),
            segment_len: 0,
            k,
            out,
            index_out: core::ptr::null_mut(),
            status: core::ptr::null_mut(),
            ws: core::ptr::null_mut(),
            entry_cap: 0,
            partial_cap: 0,
            counter: core::ptr::null_mut(),
            epoch: 0,
            prefetch: 0,
            bounds: core::ptr::null_mut(),
        }
    }
}

/// The simulator's entry point of a segmented reduction kernel.
#[cfg(not(target_arch = "nvptx64"))]
pub type SimSegmentedFn<T, Out> = unsafe fn(SegmentedParams<T, Out>);

/// An operator whose segmented reduction kernel over `T` exists
/// ([`segmented_reduce_kernels!`](crate::segmented_reduce_kernels) implements it).
#[cfg(not(target_arch = "nvptx64"))]
pub trait SegmentedReduceInstance<T: Element>: ReduceOp<T> {
    /// What `out` holds per segment: the accumulator, or for argmin/argmax the value (the
    /// index going to the second output).
    type Out: Copy;
    /// Whether the kernel writes an index per segment to its second output (argmin/argmax).
    const WRITES_INDEX: bool;
    /// The kernel: `segmented_device::<T, Self, _>` under its exported name.
    const KERNEL: crate::Kernel<SimSegmentedFn<T, Self::Out>>;
    /// The fixed-size rows kernel: `rows_device::<T, Self, _>` (the same arguments and the
    /// same bits as [`Self::KERNEL`] for those rows).
    const ROWS_KERNEL: crate::Kernel<SimSegmentedFn<T, Self::Out>>;
    /// The listed form for a few long offsets segments: `listed_device::<T, Self, _>`, named
    /// after [`Self::KERNEL`] with `_listed` added (the same bits; a kernel of its own, so its
    /// registers are not the work-list form's).
    const LISTED_KERNEL: crate::Kernel<SimSegmentedFn<T, Self::Out>>;
    /// The tiles form for CSR offsets of short segments: `tiles_device::<T, Self, _>`, where
    /// the operator has one (built-in sums, minima and maxima: their bits over tiles are the
    /// tiles form's, see [`tiles_device`]); `None` for the others.
    const TILES_KERNEL: Option<crate::Kernel<SimSegmentedFn<T, Self::Out>>>;
}

/// Export `segmented_device::<T, Op, _>` and `rows_device::<T, Op, _>` as named kernels (PTX
/// entries / simulator functions) and register them with [`SegmentedReduceInstance`].
/// `name, rows_name: T, Op;` writes the accumulator per segment; `name, rows_name: T, Op, arg;`
/// (for [`ArgAcc`] accumulators) writes the value and the index within the segment to two
/// arrays. A user operator: `segmented_reduce_kernels! { my_seg, my_seg_rows: f32, MyOp; }`.
#[macro_export]
macro_rules! segmented_reduce_kernels {
    ($($name:ident, $rows:ident : $t:ty, $op:ty $(, $arg:ident)?;)*) => {$(
        $crate::segmented_reduce_kernels!(@one stringify!($name), stringify!($rows), $t, $op $(, $arg)?);
    )*};
    (@one $name:expr, $rows:expr, $t:ty, $op:ty $(, tiles $tiles:expr)?) => {
        $crate::segmented_reduce_kernels!(
            @emit $name, $rows, $t, $op, $crate::reduce::segmented::AccSink,
            <$op as $crate::ops::ReduceOp<$t>>::Acc, false $(, $tiles)?
        );
    };
    (@one $name:expr, $rows:expr, $t:ty, $op:ty, arg) => {
        $crate::segmented_reduce_kernels!(
            @emit $name, $rows, $t, $op, $crate::reduce::segmented::ArgSink, $t, true
        );
    };
    (@tiles_entry) => {};
    (@tiles_entry $tiles:expr) => {
        // CSR offsets of short segments read as tiles; see `tiles_device`.
        $crate::segmented_params!(entry #[export_name = $tiles] tiles =>
            ($crate::reduce::segmented::tiles_device::<T, Op, {
                $crate::reduce::segmented::tiles_items(::core::mem::size_of::<T>() as u64) as usize
            }>));
    };
    (@tiles_bounds) => {};
    (@tiles_bounds $tiles:expr) => {
        // The reduce by key's blocks per SM: the same tile, the same waits.
        $crate::launch_bounds!(@named $tiles, $crate::scan::policy::ACTIVE.block,
            $crate::scan::policy::ACTIVE.reduce_by_key_min_blocks);
    };
    (@tiles_kernel) => { None };
    (@tiles_kernel $tiles:expr) => { Some($crate::Kernel { name: $tiles, sim: tiles }) };
    (@emit $name:expr, $rows:expr, $t:ty, $op:ty, $sink:ty, $out:ty, $writes_index:expr $(, $tiles:expr)?) => {
        $crate::segmented_reduce_kernels!(@tiles_bounds $($tiles)?);
        // Three blocks an SM (80 registers) where the accumulator is one word: a block of the
        // work list waits on others' chunks, and short segments stage a block's bytes in
        // flight. Two (128) for wider accumulators, whose combines need the registers.
        $crate::launch_bounds!(@named $name, $crate::reduce::segmented::BLOCK,
            $crate::reduce::segmented::blocks_per_sm(
                core::mem::size_of::<<$op as $crate::ops::ReduceOp<$t>>::Acc>()));
        $crate::launch_bounds!(@named concat!($name, "_listed"), $crate::reduce::segmented::BLOCK,
            $crate::reduce::segmented::blocks_per_sm(
                core::mem::size_of::<<$op as $crate::ops::ReduceOp<$t>>::Acc>()));
        const _: () = {
            use $crate::reduce::segmented::SegmentedParams;
            type T = $t;
            type Out = $out;
            #[allow(dead_code)]
            type Op = $op;
            $crate::segmented_reduce_kernels!(@tiles_entry $($tiles)?);
            // One-launch segmented reduction; see `segmented_device`.
            $crate::segmented_params!(entry #[export_name = $name] kernel =>
                ($crate::reduce::segmented::segmented_device::<$t, $op, $sink>));
            // A few long offsets segments, every chunk listed up front; see `listed_device`.
            $crate::segmented_params!(entry #[export_name = concat!($name, "_listed")] listed =>
                ($crate::reduce::segmented::listed_device::<$t, $op, $sink>));
            // Segmented reduction of fixed-size long rows; see `rows_device`.
            $crate::segmented_params!(entry #[export_name = $rows] rows =>
                ($crate::reduce::segmented::rows_device::<$t, $op, $sink>));
            #[cfg(not(target_arch = "nvptx64"))]
            impl $crate::reduce::segmented::SegmentedReduceInstance<$t> for $op {
                type Out = $out;
                const WRITES_INDEX: bool = $writes_index;
                const KERNEL: $crate::Kernel<$crate::reduce::segmented::SimSegmentedFn<$t, $out>> =
                    $crate::Kernel { name: $name, sim: kernel };
                const ROWS_KERNEL: $crate::Kernel<$crate::reduce::segmented::SimSegmentedFn<$t, $out>> =
                    $crate::Kernel { name: $rows, sim: rows };
                const LISTED_KERNEL: $crate::Kernel<$crate::reduce::segmented::SimSegmentedFn<$t, $out>> =
                    $crate::Kernel { name: concat!($name, "_listed"), sim: listed };
                const TILES_KERNEL: Option<$crate::Kernel<$crate::reduce::segmented::SimSegmentedFn<$t, $out>>> =
                    $crate::segmented_reduce_kernels!(@tiles_kernel $($tiles)?);
            }
        };
    };
}

/// A built-in pair's segmented reductions, `reduce_segmented_{op}_{type}` and
/// `reduce_segmented_rows_{op}_{type}`; argmin and argmax write the index too.
macro_rules! builtin_segmented {
    ($t:ident argmin $Op:path) => { builtin_segmented!(@emit $t argmin $Op, arg); };
    ($t:ident argmax $Op:path) => { builtin_segmented!(@emit $t argmax $Op, arg); };
    ($t:ident sum $Op:path) => { builtin_segmented!(@tiles $t sum $Op); };
    ($t:ident min $Op:path) => { builtin_segmented!(@tiles $t min $Op); };
    ($t:ident max $Op:path) => { builtin_segmented!(@tiles $t max $Op); };
    ($t:ident $op:ident $Op:path) => { builtin_segmented!(@emit $t $op $Op,); };
    (@emit $t:ident $op:ident $Op:path, $($arg:ident)?) => {
        $crate::segmented_reduce_kernels!(@one
            concat!("reduce_segmented_", stringify!($op), "_", stringify!($t)),
            concat!("reduce_segmented_rows_", stringify!($op), "_", stringify!($t)),
            $crate::builtin_elem!($t), $Op $(, $arg)?);
    };
    (@tiles $t:ident $op:ident $Op:path) => {
        $crate::segmented_reduce_kernels!(@one
            concat!("reduce_segmented_", stringify!($op), "_", stringify!($t)),
            concat!("reduce_segmented_rows_", stringify!($op), "_", stringify!($t)),
            $crate::builtin_elem!($t), $Op,
            tiles concat!("reduce_segmented_tiles_", stringify!($op), "_", stringify!($t)));
    };
}

// The library's built-in segmented reductions: per (operator, type), one kernel for offsets and
// one for fixed-length rows (and the listed and tiles forms of offsets).
#[cfg(feature = "builtin")]
crate::builtin_table!(pairs builtin_segmented! {} int float);
