//! Device-wide reduction in ONE launch: every block reduces a grid-stride share of the input,
//! writes its partial, and the last block to finish (found with an atomic ticket) reduces the
//! partials in block order and writes the result. No second launch, no host round trip.
//!
//! Deterministic: the input is cut into a fixed set of *tiles* (virtual blocks) that depends on
//! `n` and the element size alone ([`ReducePolicy::tiles`](policy::ReducePolicy::tiles)); each
//! tile's partial is computed in a fixed order, whichever physical block runs it, and the
//! partials are combined in tile order. So the physical grid (chosen per device for speed) does
//! not change a single bit: a float result depends only on the input (and on its address modulo
//! 16 bytes, which decides the scalar head; device allocations are 256-byte aligned), the same
//! on any GPU and on the simulator.

pub mod by_key;
pub mod dot;
pub mod moments;
pub mod policy;
pub mod segmented;
pub mod tiles;
pub mod transform;

use crate::block::{block_reduce, block_reduce2};
use crate::gpu;
use crate::load::Cut;
#[cfg(feature = "builtin")]
use crate::ops::SumCompensated;
use crate::ops::{Element, ReduceOp};
use policy::BLOCK as REDUCE_BLOCK;

/// Combine the elements of one 16-byte vector whose first element has index `base`.
#[inline(always)]
pub(crate) fn fold_vec<T: Element, O: ReduceOp<T>>(w: [u32; 4], base: u64) -> O::Acc {
    if T::PER_VEC == 8 {
        // 2-byte types (f16, bf16): the same pairwise tree over eight elements.
        let e = T::unpack8(w);
        let l = |i: usize| O::lift(e[i], base + i as u64);
        return O::combine(
            O::combine(O::combine(l(0), l(1)), O::combine(l(2), l(3))),
            O::combine(O::combine(l(4), l(5)), O::combine(l(6), l(7))),
        );
    }
    let e = T::unpack(w);
    if T::PER_VEC == 4 {
        O::combine(
            O::combine(O::lift(e[0], base), O::lift(e[1], base + 1)),
            O::combine(O::lift(e[2], base + 2), O::lift(e[3], base + 3)),
        )
    } else {
        O::combine(O::lift(e[0], base), O::lift(e[1], base + 1))
    }
}

/// One thread's step of the two-tile path of [`reduce_device`] for global thread `g`, with its
/// two loads `l0` and `l1` (vectors `g` and `g + threads`). A function, not a closure: it is
/// used twice, and a closure that big (f16/bf16 argmin/argmax fold eight elements per vector)
/// was left out of line, a `.func` with a local-memory frame that every PTX module carried.
///
/// # Safety
/// As [`reduce_device`]; the arguments are its values.
#[inline(always)]
unsafe fn two_tile_step<T: Element, O: ReduceOp<T>>(
    cut: &Cut<T>,
    threads: u64,
    g: u64,
    l0: [u32; 4],
    l1: [u32; 4],
) -> O::Acc {
    let (mut acc0, mut acc1) = (O::identity(), O::identity());
    if g + threads < cut.vectors {
        acc0 = O::combine(acc0, fold_vec::<T, O>(l0, cut.first(g)));
        acc1 = O::combine(acc1, fold_vec::<T, O>(l1, cut.first(g + threads)));
    } else if g < cut.vectors {
        acc0 = O::combine(acc0, fold_vec::<T, O>(l0, cut.first(g)));
    }
    if g < cut.head {
        acc1 = O::combine(acc1, O::lift(unsafe { cut.get(g) }, g));
    }
    if g < cut.n - cut.tail_start() {
        let i = cut.tail_start() + g;
        acc1 = O::combine(acc1, O::lift(unsafe { cut.get(i) }, i));
    }
    O::combine(acc0, acc1)
}

/// The one-launch reductions' parameters ([`ReduceParams`]), written once: the struct and every
/// kernel entry's parameter list ([`kernel_params!`](crate::kernel_params)).
#[macro_export]
#[doc(hidden)]
macro_rules! reduce_params {
    ($($mode:tt)*) => {
        $crate::kernel_params! { $($mode)* ReduceParams<T, A> {
            /// The input, `n` elements.
            input: *const T,
            /// The second input of a pair reduction (`n` elements); unused by one-input reductions.
            input2: *const T,
            /// Elements (pairs) to reduce.
            n: u64,
            /// `tiles` accumulators of workspace.
            partials: *mut A,
            /// The retirement counter: 0 at launch, 0 again at the end.
            retire_count: *mut u32,
            /// Where the result goes.
            out: *mut A,
            /// A flag raised to `seq` (system-scope release) after `out` is written; null for none.
            done: *mut u32,
            /// Tiles the input is cut into ([`policy::ReducePolicy::tiles`]).
            tiles: u32,
            /// The value `done` is raised to.
            seq: u32,
        } }
    };
}

reduce_params!(struct
    /// The launch parameters of the one-launch reductions ([`reduce_device`], and the pair
    /// reductions of [`dot`]), the same struct on the GPU, on the simulator and in the host's
    /// launch.
);

/// The one-launch reduction of `n` elements at `input` (naturally aligned; a misaligned start
/// for 16-byte loads is handled by a scalar head) with operator `O`, cut into `tiles` tiles
/// (any physical grid <= `tiles` gives the same bits). `partials` holds `tiles` accumulators
/// of workspace; `retire_count` must be 0 at launch and is 0 again at the end. The result lands
/// in `out[0]`; then, if `done` is not null, `seq` is stored there with system-scope release
/// (a flag in mapped host memory: the host reads the result as soon as it sees `seq`, without
/// waiting for the driver to report the kernel's end). Block size [`REDUCE_BLOCK`].
///
/// # Safety
/// Pointers valid for the sizes above.
#[inline(always)]
pub unsafe fn reduce_device<T: Element, O: ReduceOp<T>>(p: ReduceParams<T, O::Acc>) {
    let ReduceParams {
        input,
        n,
        tiles,
        partials,
        retire_count,
        out,
        done,
        seq,
        ..
    } = p;
    // 32 slots of up to 16 bytes: one per warp, for any accumulator type.
    let scratch = crate::static_shared!(REDUCE_SCRATCH: [u128; 32]);
    let scratch = unsafe { scratch.cast::<O::Acc>() };
    let tid = gpu::thread_idx_x() as u64;
    let grid = gpu::grid_dim_x() as u64;
    let tiles = tiles as u64;
    let threads = tiles * REDUCE_BLOCK as u64;
    let cut = Cut::new(input, n);
    let (head, vectors, tail_start) = (cut.head, cut.vectors, cut.tail_start());
    let load = |v: u64| unsafe { cut.vector(v) };

    if tiles == 2 && grid == 1 {
        // Two tiles on one block (the host's choice for inputs this small): both tiles' loads
        // go out before either is reduced, one memory latency instead of two. Each tile is a
        // single step per thread here (a tile is one step of the block), and the code below is
        // the general loop's exact arithmetic for that case, so the bits are the same.
        let maybe = |v: u64| if v < vectors { load(v) } else { [0u32; 4] };
        let (g0, g1) = (tid, REDUCE_BLOCK as u64 + tid);
        let (a0, a1, b0, b1) = (
            maybe(g0),
            maybe(g0 + threads),
            maybe(g1),
            maybe(g1 + threads),
        );
        let (p0, p1) = unsafe {
            (
                two_tile_step::<T, O>(&cut, threads, g0, a0, a1),
                two_tile_step::<T, O>(&cut, threads, g1, b0, b1),
            )
        };
        // Both tiles' block reductions share their barriers (each as `block_reduce` alone);
        // scratch has 32 slots of 16 bytes, two per warp of the 8 needed.
        let (t0, t1) = block_reduce2(p0, p1, O::identity(), O::combine, scratch);
        if tid == 0 {
            // What the general path's last block computes from these two partials: its block
            // reduction combines identity ⊕ p0 and identity ⊕ p1 (lanes 0 and 1, lower lane on
            // the left) with identities only.
            let total = O::combine(O::combine(O::identity(), t0), O::combine(O::identity(), t1));
            unsafe {
                out.write(gpu::ShflValue::canonical(total));
                if !done.is_null() {
                    gpu::store_release_sys_u32(done, seq);
                }
            }
        }
        return;
    }

    let thread_acc = |tile: u64| {
        let gtid = tile * REDUCE_BLOCK as u64 + tid;
        let mut acc0 = O::identity();
        let mut acc1 = O::identity();
        // Two independent 16-byte loads per step keep more bytes in flight per thread (four
        // were slower: CHANGELOG.md, issue 4).
        let mut v = gtid;
        while v + threads < vectors {
            let (a, b) = (load(v), load(v + threads));
            acc0 = O::combine(acc0, fold_vec::<T, O>(a, cut.first(v)));
            acc1 = O::combine(acc1, fold_vec::<T, O>(b, cut.first(v + threads)));
            v += 2 * threads;
        }
        if v < vectors {
            acc0 = O::combine(acc0, fold_vec::<T, O>(load(v), cut.first(v)));
        }
        if gtid < head {
            acc1 = O::combine(acc1, O::lift(unsafe { cut.get(gtid) }, gtid));
        }
        if gtid < n - tail_start {
            let i = tail_start + gtid;
            acc1 = O::combine(acc1, O::lift(unsafe { cut.get(i) }, i));
        }
        O::combine(acc0, acc1)
    };
    unsafe {
        reduce_tiles::<1, _, _, _, _, _>(
            tiles,
            partials,
            retire_count,
            out,
            done,
            seq,
            O::identity(),
            O::combine,
            scratch,
            |a| a,
            thread_acc,
        )
    };
}

/// The tiles of a one-launch reduction and its end. Physical block `b` runs tiles `b, b + grid,
/// ...`; tile `t` is what block `t` of a grid of `tiles` blocks would do (its threads'
/// accumulators `thread_acc(t)`, block-reduced), so its partial does not depend on the physical
/// grid. One tile is the result at once; otherwise each tile's partial goes to `partials`, and
/// the last block to take a ticket (or the only block) combines them in tile order, writes `out`,
/// resets `retire_count`, and raises `done` with `seq`.
///
/// The result goes through `map` on its way to `out` (the identity for most kernels; the
/// variance's partials are plain sums, divided once here). The last block reads `LOADS`
/// partials a thread before combining them: four are faster for the variance but left the
/// f32 sum slightly slower at 2^28 (its code scheduled differently), so the other reductions
/// read one at a time (CHANGELOG.md, issue 15).
///
/// # Safety
/// As [`reduce_device`]; called by every thread of every block.
#[inline(always)]
#[allow(clippy::too_many_arguments)] // the reduction's workspace, passed straight through
pub(crate) unsafe fn reduce_tiles<
    const LOADS: usize,
    A: crate::gpu::ShflValue,
    B: crate::gpu::ShflValue,
    F: Fn(A, A) -> A + Copy,
    M: FnOnce(A) -> B,
    P: FnMut(u64) -> A,
>(
    tiles: u64,
    partials: *mut A,
    retire_count: *mut u32,
    out: *mut B,
    done: *mut u32,
    seq: u32,
    identity: A,
    combine: F,
    scratch: crate::gpu::SharedArray<A>,
    map: M,
    mut thread_acc: P,
) {
    let mut tile = gpu::block_idx_x() as u64;
    let mut tile_acc = identity;
    while tile < tiles {
        tile_acc = block_reduce(thread_acc(tile), identity, combine, scratch);
        if gpu::thread_idx_x() == 0 && tiles > 1 {
            unsafe { partials.add(tile as usize).write(tile_acc) };
        }
        tile += gpu::grid_dim_x() as u64;
    }

    let is_last = crate::static_shared!(REDUCE_IS_LAST: [u32; 1]);
    let tid = gpu::thread_idx_x() as u64;
    let grid = gpu::grid_dim_x() as u64;
    if tiles == 1 {
        // One tile (the host then launches one block): its accumulator is the result, with no
        // partial, ticket or second block reduction (BENCHMARKS.md, Small inputs and the call
        // path). The same bits as the general path below: that path computes identity ⊕
        // partial and combines it with identities only.
        if tid == 0 {
            unsafe {
                out.write(map(combine(identity, tile_acc)).canonical());
                if !done.is_null() {
                    gpu::store_release_sys_u32(done, seq);
                }
            }
        }
        return;
    }

    if grid > 1 {
        if tid == 0 {
            // Release: the partials are visible GPU-wide before the ticket (the
            // threadFenceReduction pattern of the CUDA samples, with an acq_rel fence rather
            // than a full SC fence).
            gpu::fence_acq_rel_gpu();
            let ticket = unsafe { gpu::atomic_add_u32(retire_count, 1) };
            unsafe { is_last.write(0, (ticket as u64 == grid - 1) as u32) };
        }
        gpu::sync_threads();
        if unsafe { is_last.read(0) } == 0 {
            return;
        }
        // Last block, acquire: every other block's partials are visible (their fence came
        // before their ticket).
        gpu::fence_acq_rel_gpu();
    } else {
        // One block ran every tile: the barrier makes thread 0's partials visible to the
        // block; no ticket needed.
        gpu::sync_threads();
    }
    // Combine the partials in tile order, `LOADS` of a thread's loads in flight before its
    // first combine (one L2 round trip per `LOADS` partials; the same combines in the same
    // order, so the same bits for any `LOADS`).
    let mut acc = identity;
    let mut i = tid;
    let step = REDUCE_BLOCK as u64;
    while i < tiles {
        let mut p = [identity; LOADS];
        for (k, p) in p.iter_mut().enumerate() {
            let j = i + k as u64 * step;
            if j < tiles {
                *p = unsafe { core::ptr::read_volatile(partials.add(j as usize)) };
            }
        }
        for (k, p) in p.into_iter().enumerate() {
            if i + k as u64 * step < tiles {
                acc = combine(acc, p);
            }
        }
        i += LOADS as u64 * step;
    }
    let total = block_reduce(acc, identity, combine, scratch);
    if tid == 0 {
        unsafe {
            out.write(map(total).canonical());
            // Ready for the next launch without a memset.
            retire_count.write(0);
            if !done.is_null() {
                gpu::store_release_sys_u32(done, seq);
            }
        }
    }
}

/// The simulator's entry point of a reduction kernel.
#[cfg(not(target_arch = "nvptx64"))]
pub type SimReduceFn<T, A> = unsafe fn(ReduceParams<T, A>);

/// An operator whose reduction kernel over `T` exists ([`reduce_kernels!`](crate::reduce_kernels)
/// implements it): the host finds the kernel through it, by type, with no name lists.
#[cfg(not(target_arch = "nvptx64"))]
pub trait ReduceInstance<T: Element>: ReduceOp<T> {
    /// The kernel: `reduce_device::<T, Self>` under its exported name.
    const KERNEL: crate::Kernel<SimReduceFn<T, Self::Acc>>;
}

/// Export `reduce_device::<T, Op>` as named kernels (PTX entries / simulator functions) and
/// register each with [`ReduceInstance`]. A user operator gets its own kernel the same way:
/// `reduce_kernels! { my_kernel: f32, MyOp; }`.
#[macro_export]
macro_rules! reduce_kernels {
    ($($name:ident : $t:ty, $op:ty;)*) => {$(
        $crate::reduce_kernels!(@emit stringify!($name), $t, $op);
    )*};
    (@emit $name:expr, $t:ty, $op:ty) => {
        const _: () = {
            use $crate::reduce::ReduceParams;
            type T = $t;
            type A = <$op as $crate::ops::ReduceOp<$t>>::Acc;
            // One-launch reduction; see `reduce_device`.
            $crate::reduce_params!(entry #[export_name = $name] kernel =>
                ($crate::reduce::reduce_device::<$t, $op>));
            #[cfg(not(target_arch = "nvptx64"))]
            impl $crate::reduce::ReduceInstance<$t> for $op {
                const KERNEL: $crate::Kernel<
                    $crate::reduce::SimReduceFn<$t, <$op as $crate::ops::ReduceOp<$t>>::Acc>,
                > = $crate::Kernel { name: $name, sim: kernel };
            }
        };
    };
}

/// A built-in pair's one-launch reduction, `reduce_{op}_{type}` (every operator of the table).
macro_rules! builtin_reduce {
    ($t:ident $op:ident $Op:path) => {
        $crate::reduce_kernels!(@emit concat!("reduce_", stringify!($op), "_", stringify!($t)),
            $crate::builtin_elem!($t), $Op);
    };
}

// The library's built-in reductions (the `builtin` feature; a user's kernel crate turns it off
// so its PTX holds its own kernels only). 16-bit floats: the sum accumulates in f32.
#[cfg(feature = "builtin")]
crate::builtin_table!(pairs builtin_reduce! {} int float half);

#[cfg(feature = "builtin")]
reduce_kernels! {
    reduce_sum_compensated_f32: f32, SumCompensated;
}

// Maps applied on load (transform.rs): sum of squares, the scaled sum of squares of the f64
// norm, min and max together (mean and variance have their own kernel, moments.rs).
#[cfg(feature = "builtin")]
reduce_kernels! {
    reduce_sum_squares_f32: f32, transform::SumSquares;
    reduce_sum_squares_f64: f64, transform::SumSquares;
    reduce_scaled_ssq_f64: f64, transform::ScaledSsq;
}

/// Min and max together, `reduce_min_max_{type}`, for every type of the built-in table's
/// `int` and `float` classes.
macro_rules! builtin_min_max {
    ($t:ident $ops:tt) => {
        $crate::reduce_kernels!(@emit concat!("reduce_min_max_", stringify!($t)), $t,
            transform::MinMax);
    };
}

#[cfg(feature = "builtin")]
crate::builtin_table!(types builtin_min_max! {} int float);
