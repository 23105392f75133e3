//! Partials of contiguous tiles: the device half of the multi-GPU reduction (the host's
//! `multi` module). A logical array of `n` elements, sharded over GPUs at any boundaries, is
//! cut into tiles of `tile_elems` elements (a function of `n` alone); each tile's partial is
//! reduced by one block in an order that depends only on the tile's elements, and the host
//! combines the partials in tile order. So the result is the same bits for any number of GPUs
//! and any shard boundaries: a tile that straddles a boundary is first gathered whole onto
//! the GPU that holds its start (at most one per GPU), and shard memory is laid out so that an
//! element's address modulo 16 follows from its global index, which fixes which elements share
//! a 16-byte load.
//!
//! (The one-launch reduction's tiles interleave over the whole array, `reduce_device`, which is
//! why a shard cannot hold whole tiles of it.)

use super::fold_vec;
use super::policy::BLOCK as REDUCE_BLOCK;
use crate::block::block_reduce;
use crate::gpu;
use crate::load::Cut;
use crate::ops::{Element, ReduceOp};

/// The launch parameters of [`reduce_tiles_device`] (the kernel's one parameter, by value).
#[repr(C)]
pub struct TilesParams<T, A> {
    /// The shard's elements.
    pub input: *const T,
    /// Elements at `input`.
    pub n: u64,
    /// Elements per tile.
    pub tile_elems: u64,
    /// The global index of `input[0]`.
    pub index_base: u64,
    /// One accumulator per tile.
    pub partials: *mut A,
}
crate::params_copy!(TilesParams<T, A>);

/// Reduce the tiles `input[t·tile_elems .. min((t+1)·tile_elems, n)]`, `t = 0, 1, …`, one block
/// each (any grid; blocks stride over the tiles), into `partials[t]`. `tile_elems` is a
/// multiple of 16 bytes' worth of elements; `index_base` is the global index of `input[0]`
/// (the index an argmin/argmax reports). Within a tile, thread `j` folds the tile's 16-byte
/// vectors `j, j + 2·BLOCK, …` and `j + BLOCK, j + 3·BLOCK, …` into two accumulators (two
/// loads in flight), then its scalar head and tail elements; then the block reduction.
///
/// # Safety
/// `input` valid for `n` elements, `partials` for `ceil(n / tile_elems)` accumulators.
#[inline(always)]
pub unsafe fn reduce_tiles_device<T: Element, O: ReduceOp<T>>(p: TilesParams<T, O::Acc>) {
    let TilesParams {
        input,
        n,
        tile_elems,
        index_base,
        partials,
    } = p;
    let scratch = crate::static_shared!(TILES_SCRATCH: [u128; 32]);
    let scratch = unsafe { scratch.cast::<O::Acc>() };
    let tid = gpu::thread_idx_x() as u64;
    let grid = gpu::grid_dim_x() as u64;
    let block = REDUCE_BLOCK as u64;
    let tiles = n.div_ceil(tile_elems.max(1));

    let mut tile = gpu::block_idx_x() as u64;
    while tile < tiles {
        let start = tile * tile_elems;
        let len = tile_elems.min(n - start);
        // No head when the layout rule holds and tiles start at multiples of a vector.
        let cut = Cut::new(unsafe { input.add(start as usize) }, len);
        let (head, vectors, tail_start) = (cut.head, cut.vectors, cut.tail_start());
        let load = |v: u64| unsafe { cut.vector(v) };
        let at = |i: u64| index_base + start + i;

        let (mut acc0, mut acc1) = (O::identity(), O::identity());
        let mut v = tid;
        while v + block < vectors {
            let (a, b) = (load(v), load(v + block));
            acc0 = O::combine(acc0, fold_vec::<T, O>(a, at(cut.first(v))));
            acc1 = O::combine(acc1, fold_vec::<T, O>(b, at(cut.first(v + block))));
            v += 2 * block;
        }
        if v < vectors {
            acc0 = O::combine(acc0, fold_vec::<T, O>(load(v), at(cut.first(v))));
        }
        if tid < head {
            acc1 = O::combine(acc1, O::lift(unsafe { cut.get(tid) }, at(tid)));
        }
        if tid < len - tail_start {
            let i = tail_start + tid;
            acc1 = O::combine(acc1, O::lift(unsafe { cut.get(i) }, at(i)));
        }
        let total = block_reduce(O::combine(acc0, acc1), O::identity(), O::combine, scratch);
        if tid == 0 {
            unsafe { partials.add(tile as usize).write(total) };
        }
        tile += grid;
    }
}

/// The simulator's entry point of a tiles kernel.
#[cfg(not(target_arch = "nvptx64"))]
pub type SimTilesFn<T, A> = unsafe fn(TilesParams<T, A>);

/// An operator whose tile-partials kernel over `T` exists
/// ([`reduce_tiles_kernels!`](crate::reduce_tiles_kernels) implements it).
#[cfg(not(target_arch = "nvptx64"))]
pub trait TilesInstance<T: Element>: ReduceOp<T> {
    const TILES_KERNEL: crate::Kernel<SimTilesFn<T, Self::Acc>>;
}

/// Export `reduce_tiles_device::<T, Op>` as a kernel and register it with [`TilesInstance`]:
/// `reduce_tiles_kernels! { my_tiles_kernel: f32, MyOp; }`.
#[macro_export]
macro_rules! reduce_tiles_kernels {
    ($($name:ident : $t:ty, $op:ty;)*) => {$(
        $crate::reduce_tiles_kernels!(@emit stringify!($name), $t, $op);
    )*};
    (@emit $name:expr, $t:ty, $op:ty) => {
        const _: () = {
            $crate::kernel! {
                #[export_name = $name]
                /// Partials of contiguous tiles; see
                /// [`reduce_tiles_device`]($crate::reduce::tiles::reduce_tiles_device).
                pub unsafe fn kernel(
                    p: $crate::reduce::tiles::TilesParams<$t, <$op as $crate::ops::ReduceOp<$t>>::Acc>,
                ) {
                    unsafe { $crate::reduce::tiles::reduce_tiles_device::<$t, $op>(p) }
                }
            }
            #[cfg(not(target_arch = "nvptx64"))]
            impl $crate::reduce::tiles::TilesInstance<$t> for $op {
                const TILES_KERNEL: $crate::Kernel<
                    $crate::reduce::tiles::SimTilesFn<$t, <$op as $crate::ops::ReduceOp<$t>>::Acc>,
                > = $crate::Kernel { name: $name, sim: kernel };
            }
        };
    };
}

/// A built-in pair's tile reduction (the multi-GPU reduction's), `reduce_tiles_{op}_{type}`.
macro_rules! builtin_tiles {
    ($t:ident $op:ident $Op:path) => {
        $crate::reduce_tiles_kernels!(@emit
            concat!("reduce_tiles_", stringify!($op), "_", stringify!($t)),
            $crate::builtin_elem!($t), $Op);
    };
}

#[cfg(feature = "builtin")]
crate::builtin_table!(pairs builtin_tiles! {} int float);
