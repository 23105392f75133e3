//! Scans of 16-bit floats ([`F16`], [`Bf16`]): the single-pass scan of [`super::scan_device`]
//! (the same tile code and look-back), with a different value in the registers and different
//! loads and stores.
//!
//! - Sum ([`SumF32`]): each element converts exactly to f32 and the scan runs in f32; every
//!   output is its f32 prefix rounded once to the element type (to nearest, ties to even;
//!   beyond the type's range it is ±inf, as an IEEE conversion gives; a NaN is the canonical
//!   NaN). An
//!   inclusive sum's last output is therefore the rounded f32 sum, not a running 16-bit sum
//!   that would stall once the prefix outgrows the type's precision.
//! - Min and max run in the element type (`kernels::ops` rules: NaN wins, `-0.0 < +0.0`); the
//!   outputs are input elements (or the identity, ±inf, at an exclusive scan's start), a NaN
//!   among them the canonical NaN (as every float output: `ShflValue::canonical`).
//!
//! Layout: four elements per thread per row, loaded with one 8-byte `ld.global.v2.b32` and
//! stored with one `st.global.v2.b32`, so a thread holds 16 rows x 4 values in registers, as
//! the 32-bit scan does, and a tile is `ACTIVE.half_tile_elems()` elements (32 KiB). Tiles that
//! are not whole or whose input or output is not 8-byte aligned (a view starting at an element
//! offset that is not a multiple of 4) take scalar 2-byte loads and stores. Tile starts depend
//! on `n` only.

use super::lookback::TileStatus;
use super::next_tile;
use super::policy::ACTIVE;
use super::tile::{TileIo, Whole, prefetch_stretch, scan_tile};
use crate::gpu;
use crate::half::HalfFloat;
use crate::half::SumF32;
use crate::ops::{Max, Min, ReduceOp};

/// Rows per thread ([`policy`](super::policy)).
const ROWS: usize = ACTIVE.rows as usize;
/// Elements per thread per row: one 8-byte vector.
const VEC: usize = 4;

/// An operator of the 16-bit scans: [`ReduceOp`] over the element type, how an element enters
/// the scan and how a prefix (its accumulator) becomes an output element.
pub trait HalfScanOp<H: HalfFloat>: ReduceOp<H> {
    /// The accumulator of one element (the operators here have no use for its index).
    fn input(x: H) -> Self::Acc;
    /// The output element of a prefix.
    fn output(acc: Self::Acc) -> H;
}

/// The conversions take the cheap route ([`HalfFloat::widen`], [`HalfFloat::narrow`]: one
/// `cvt` each for f16 on the GPU): with the integer ones the f16 tile loops grew past LLVM's
/// unrolling limit and the tile went to local memory. Same values; NaN stays NaN.
impl<H: HalfFloat> HalfScanOp<H> for SumF32 {
    #[inline(always)]
    fn input(x: H) -> f32 {
        x.widen()
    }
    /// The f32 prefix rounded once to nearest even (overflow to ±inf).
    #[inline(always)]
    fn output(acc: f32) -> H {
        H::narrow(acc)
    }
}

impl<H: HalfFloat> HalfScanOp<H> for Min {
    #[inline(always)]
    fn input(x: H) -> H {
        x
    }
    #[inline(always)]
    fn output(acc: H) -> H {
        acc
    }
}

impl<H: HalfFloat> HalfScanOp<H> for Max {
    #[inline(always)]
    fn input(x: H) -> H {
        x
    }
    #[inline(always)]
    fn output(acc: H) -> H {
        acc
    }
}

/// Inclusive (`EXCLUSIVE = false`) or exclusive scan of `n` 16-bit elements from `input` to
/// `output` (the same address for in place) with `O`. Launch as [`super::scan_device`], with
/// `grid = ceil(n / ACTIVE.half_tile_elems())`. `aggregates` and `prefixes` are the look-back's
/// per-tile scratch (16 bytes per tile each), typed as the element only so that every scan
/// kernel has one signature; they hold `O::Acc`s (a 4-byte or smaller accumulator travels in
/// the status word, so with these operators they are not touched).
///
/// # Safety
/// Pointers valid for the sizes above; `input` and `output` 2-byte aligned.
#[inline(always)]
pub unsafe fn scan_half_device<H: HalfFloat, O: HalfScanOp<H>, const EXCLUSIVE: bool>(
    p: super::ScanParams<H>,
) {
    let super::ScanParams {
        input,
        output,
        n,
        counter,
        flags,
        aggregates,
        prefixes,
        seed,
        totals,
        epoch,
    } = p;
    let warp_aggs = crate::static_shared!(SCAN_HALF_WARP_AGGS: [u128; 32]);
    // The seed is an accumulator (f32 for the sum), passed as the kernels' one pointer type.
    // SAFETY: valid when not null (the caller's contract).
    let seed = || (!seed.is_null()).then(|| unsafe { seed.cast::<O::Acc>().read() });
    let tile_prefix = crate::static_shared!(SCAN_HALF_TILE_PREFIX: [u128; 1]);
    let tile = unsafe { next_tile(counter) };
    let aligned = (input as usize | output as usize) & 7 == 0;
    let identity = O::identity();
    let lift = O::input;
    let io = TileIo {
        per_vec: VEC,
        n,
        identity,
        load: |first: u64, fast: bool| -> [O::Acc; 4] {
            if fast {
                let w = unsafe { gpu::load_v2_b32(input.add(first as usize) as *const u32) };
                // Little-endian: the low half of each word is the earlier element.
                let e = |x: u32| lift(H::from_bits_(x as u16));
                [e(w[0]), e(w[0] >> 16), e(w[1]), e(w[1] >> 16)]
            } else {
                // Constant indices only (an indexed local array would go to local memory).
                let one = |j: usize| {
                    let i = first + j as u64;
                    if i < n {
                        lift(unsafe { input.add(i as usize).read() })
                    } else {
                        identity
                    }
                };
                [one(0), one(1), one(2), one(3)]
            }
        },
        store: |first: u64, fast: bool, excl: [O::Acc; 4], incl: [O::Acc; 4]| {
            let r = if EXCLUSIVE { excl } else { incl };
            if fast {
                let b = |j: usize| O::output(r[j]).bits() as u32;
                let mut w = [b(0) | (b(1) << 16), b(2) | (b(3) << 16)];
                // The canonical NaN (`ShflValue::canonical`), tested once: these operators
                // propagate NaN, so a NaN among the four prefixes makes the last one NaN (a
                // test per element made the common path 4-6% slower).
                if (w[1] >> 16) & 0x7fff > H::INF_BITS as u32 {
                    w = w.map(|p| {
                        let c = |h: u32| H::from_bits_(h as u16).canonical().bits() as u32;
                        c(p & 0xffff) | (c(p >> 16) << 16)
                    });
                }
                unsafe { gpu::store_v2_b32(output.add(first as usize) as *mut u32, w) };
            } else {
                for (j, &acc) in r.iter().enumerate() {
                    let i = first + j as u64;
                    if i < n {
                        unsafe { output.add(i as usize).write(O::output(acc).canonical()) };
                    }
                }
            }
        },
        prefetch: |first: u64, elems: u64| prefetch_stretch(input, first, elems),
        prefetch_tiles: ACTIVE.prefetch_tiles(ACTIVE.half_tile_elems() * 2),
    };
    let status = TileStatus::fixed_order(
        flags,
        aggregates.cast::<O::Acc>(),
        prefixes.cast::<O::Acc>(),
        epoch,
    );
    unsafe {
        scan_tile::<ROWS, Whole, _, _, _, _, _, _, _>(
            tile,
            aligned,
            io,
            status,
            seed,
            // Accumulators too (as the seed).
            totals.cast::<O::Acc>(),
            (O::combine, false, |_| false),
            warp_aggs.cast::<O::Acc>(),
            tile_prefix.cast::<O::Acc>(),
            false,
        )
    };
}
