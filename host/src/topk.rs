//! Top-k (`torch.topk`, CUB's `DeviceTopK`): the k largest or smallest elements of an array
//! and their indices.
//!
//! | call | result |
//! | --- | --- |
//! | [`Context::topk`]`(x, values, indices, TopK::LARGEST)` | the `k = values.len()` largest of `x` and their indices |
//! | [`Context::topk_rows`]`(x, cols, values, indices, how)` | per row of a row-major matrix: its k largest (or smallest) and their indices within the row |
//!
//! Deterministic: ties are broken by the lower index; NaN orders above every number (so it is
//! among the largest and last among the smallest, as in PyTorch), `-0.0` below `+0.0`. Unsorted,
//! the result lists the elements above the k-th in index order, then the ties; sorted (by value,
//! then index), up to `k = 2048`. Up to k = 2048 a sampled threshold and one filtering read
//! copy the candidates to a buffer, and a radix select (a launch a byte of the keys) over the
//! buffer lists the result, sorted in one block; past k = 2048, or where the sample misleads,
//! the radix select reads the input, and two launches write the result in index order
//! (`kernels::topk`).

use cudarc::driver::{DeviceRepr, ValidAsZeroBits};
use kernels::Kernel;
use kernels::topk::{
    BLOCK, Bits, CHUNK_COUNTS, DIGITS_SHARED, FILTER_PER_SM, FILTER_SHARED, KIND_FLOAT, KIND_INT,
    KIND_UINT, RADIX, ROWS_BLOCK, ROWS_SHARED, SAMPLE, SCAN_SHARED, SORT_BLOCK, SORT_MAX,
    SORT_SHARED, SimTopkFn, TopkInstance, TopkParams, passes,
};

use crate::error::{Error, Result};
use crate::reduce::DeviceElement;
use crate::runtime::{Context, DeviceBuffer, DeviceView, DeviceViewMut, LaunchShape};

/// Which k: the largest or the smallest, sorted or in index order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopK {
    /// The largest (else the smallest).
    pub largest: bool,
    /// Sorted: by value (down for the largest, up for the smallest), ties by index. Else the
    /// elements past the k-th in index order, then the ties in index order.
    pub sorted: bool,
}

impl TopK {
    /// The k largest, in index order.
    pub const LARGEST: TopK = TopK {
        largest: true,
        sorted: false,
    };
    /// The k smallest, in index order.
    pub const SMALLEST: TopK = TopK {
        largest: false,
        sorted: false,
    };
    /// The same k, sorted.
    pub const fn sorted(self) -> TopK {
        TopK {
            sorted: true,
            ..self
        }
    }
}

/// Element types of the top-k: every type of the kernels' built-in table.
#[diagnostic::on_unimplemented(
    message = "no built-in top-k of `{Self}`",
    note = "top-k takes i32, u32, i64, u64, f32, f64 (and half::f16, half::bf16 with the `f16` feature)"
)]
pub trait TopkElement: DeviceElement + DeviceRepr + ValidAsZeroBits {
    /// The bits' type (the kernels' width).
    #[doc(hidden)]
    type Bits: Bits + TopkInstance + DeviceRepr;
    /// `kernels::topk::KIND_*`.
    #[doc(hidden)]
    const KIND: u32;
}

macro_rules! topk_element {
    ($($t:ty => $b:ty, $kind:expr;)*) => {$(
        impl TopkElement for $t {
            type Bits = $b;
            const KIND: u32 = $kind;
        }
    )*};
}
topk_element! {
    u32 => u32, KIND_UINT;
    i32 => u32, KIND_INT;
    u64 => u64, KIND_UINT;
    i64 => u64, KIND_INT;
    f32 => u32, KIND_FLOAT;
    f64 => u64, KIND_FLOAT;
}
#[cfg(feature = "f16")]
topk_element! {
    half::f16 => u16, KIND_FLOAT;
    half::bf16 => u16, kernels::topk::KIND_BF16;
}

/// The top-k's counts, tables, list and candidate buffer, grown on demand and reused by every
/// call of a context.
#[derive(Default)]
struct TopkWorkspace {
    bytes: Option<DeviceBuffer<u128>>,
}

/// Candidates the buffer holds for `n` elements: a 64th of them (at least 2^16, at most n),
/// which the matches of uniform f32 fit after two bytes.
fn candidate_cap(n: u64) -> u64 {
    (n / 64).max(1 << 16).min(n)
}

/// Launch parameters holding the input and the call's choices only, every buffer null and
/// every size 0: the launches that read no workspace (the rows, the sample's test) set what they
/// use on top.
fn bare_params<W>(
    input: *const W,
    n: u64,
    k: u64,
    kind: u32,
    smallest: bool,
    sorted: bool,
) -> TopkParams<W> {
    TopkParams {
        input,
        n,
        k,
        kind,
        smallest: smallest as u32,
        pass: 0,
        sorted: sorted as u32,
        counts: std::ptr::null_mut(),
        tables: std::ptr::null_mut(),
        cap: 0,
        cand_bits: std::ptr::null_mut(),
        cand_idx: std::ptr::null_mut(),
        list_bits: std::ptr::null_mut(),
        list_idx: std::ptr::null_mut(),
        chunks: 0,
        sample: 0,
        values: std::ptr::null_mut(),
        indices: std::ptr::null_mut(),
    }
}

/// The sample's rank whose key is the filter's threshold (`kernels::topk::sample_device`): the
/// k-th of a whole input; else, with `mu = k * s / n` of the `s` sampled keys expected among
/// the k largest, `mu + 5 sqrt(mu) + 5`: more of them (so fewer than k keys at or above the
/// threshold, and a fourth read) is a tail of about 1e-7 or less, while the buffer takes about
/// `(rank + 1) n / s` keys.
fn sample_rank(n: u64, k: u64) -> u64 {
    let s = n.min(SAMPLE);
    if s == n {
        return k;
    }
    let mu = k as f64 * s as f64 / n as f64;
    ((mu + 5.0 * mu.sqrt() + 5.0).ceil() as u64).clamp(1, s)
}

/// Bytes of a filter tile (`kernels::topk::filter_device`: four 16-byte vectors a thread).
const FILTER_TILE: u64 = BLOCK as u64 * 64;

/// Rows fewer than this, each of at least [`LONG_ROW`] elements, take the whole-GPU passes
/// one row after another (one block a row would leave most SMs idle).
const FEW_ROWS: u64 = 16;
const LONG_ROW: u64 = 1 << 18;

/// As many indices as values.
fn one_index_a_value(call: &str, values: u64, indices: usize) -> Result<()> {
    if indices as u64 != values {
        return Err(Error::LengthMismatch {
            what: format!("{call}: the indices (one a value)"),
            expected: values,
            got: indices as u64,
        });
    }
    Ok(())
}

/// Sorted output is for k up to [`SORT_MAX`] (one block sorts it).
fn sorted_k<T: TopkElement>(call: &str, how: TopK, k: u64) -> Result<()> {
    if how.sorted && k > SORT_MAX as u64 {
        return Err(Error::Unsupported {
            op: format!("{call} sorted, k = {k}"),
            dtype: T::DTYPE,
            reason: "sorted output up to k = 2048 (unsorted: any k)",
        });
    }
    Ok(())
}

/// Chunks (blocks) of the writing launches per SM.
const CHUNKS_PER_SM: u64 = 4;

impl Context {
    /// The `k = values.len()` largest (or smallest, `how`) elements of `x` into `values`, and
    /// their indices into `indices` (`k` of them): ties broken by the lower index, NaN above
    /// every number, `-0.0` below `+0.0`, so the result is the same on every run. `how.sorted`:
    /// sorted by value, then index (k up to 2048); else the elements beyond the k-th in index
    /// order, then the k-th's ties in index order. Stream-ordered; at most `u32::MAX` elements.
    ///
    /// ```
    /// # fn main() -> gpu_reduce::Result<()> {
    /// use gpu_reduce::TopK;
    /// let ctx = gpu_reduce::Context::sim()?;
    /// let x = ctx.htod(&[3.0f32, 9.0, 1.0, 9.0, f32::NAN, 4.0])?;
    /// let (mut v, mut i) = (ctx.alloc_zeros::<f32>(3)?, ctx.alloc_zeros::<u64>(3)?);
    /// ctx.topk(&x, &mut v, &mut i, TopK::LARGEST.sorted())?;
    /// assert_eq!(ctx.dtoh(&i)?, [4, 1, 3]);
    /// ctx.topk(&x, &mut v, &mut i, TopK::SMALLEST)?;
    /// assert_eq!((ctx.dtoh(&v)?, ctx.dtoh(&i)?), (vec![3.0, 1.0, 4.0], vec![0, 2, 5]));
    /// # Ok(()) }
    /// ```
    pub fn topk<'a, 'v, 'i, T: TopkElement>(
        &self,
        x: impl Into<DeviceView<'a, T>>,
        values: impl Into<DeviceViewMut<'v, T>>,
        indices: impl Into<DeviceViewMut<'i, u64>>,
        how: TopK,
    ) -> Result<()> {
        const CALL: &str = "topk";
        let (x, mut values, mut indices) = (x.into(), values.into(), indices.into());
        let (n, k) = (x.len() as u64, values.len() as u64);
        one_index_a_value(CALL, k, indices.len())?;
        if k > n {
            return Err(Error::LengthMismatch {
                what: format!("{CALL}: k (the values' length) of {n} elements: at most n"),
                expected: n,
                got: k,
            });
        }
        if n > u32::MAX as u64 {
            return Err(Error::TooLarge {
                what: format!("{CALL}: the elements"),
                size: n,
                limit: u32::MAX as u64,
            });
        }
        sorted_k::<T>(CALL, how, k)?;
        if k == 0 {
            return Ok(());
        }
        let (xp, _x_read) = self.read(&x)?;
        let (vp, _v_write) = self.write(&mut values)?;
        let (ip, _i_write) = self.write(&mut indices)?;
        self.topk_at::<T>(xp, n, vp, ip, k, how)
    }

    /// Top-k of every row of a row-major matrix with `cols` columns (`x.len() / cols` rows):
    /// the `k = values.len() / rows` largest (or smallest) of row `r` into `values[r * k..][..k]`
    /// and their indices *within the row* into `indices` (as many as `values`); ties, NaN and
    /// order as in [`Context::topk`] (sorted: k up to 2048). One block a row in one launch
    /// (rows read from L2 after the first digit pass); a few long rows take
    /// [`Context::topk`]'s whole-GPU passes one row after another. `x.len()` must be a multiple
    /// of `cols`, and `values.len()` of the rows, with `k <= cols`.
    ///
    /// ```
    /// # fn main() -> gpu_reduce::Result<()> {
    /// use gpu_reduce::TopK;
    /// let ctx = gpu_reduce::Context::sim()?;
    /// let m = ctx.htod(&[3.0f32, 9.0, 1.0, 7.0, /* row 1 */ 2.0, 2.0, 8.0, 0.5])?;
    /// let (mut v, mut i) = (ctx.alloc_zeros::<f32>(4)?, ctx.alloc_zeros::<u64>(4)?);
    /// ctx.topk_rows(&m, 4, &mut v, &mut i, TopK::LARGEST.sorted())?; // k = 2 a row
    /// assert_eq!(ctx.dtoh(&v)?, [9.0, 7.0, 8.0, 2.0]);
    /// assert_eq!(ctx.dtoh(&i)?, [1, 3, 2, 0]);
    /// # Ok(()) }
    /// ```
    pub fn topk_rows<'a, 'v, 'i, T: TopkElement>(
        &self,
        x: impl Into<DeviceView<'a, T>>,
        cols: u64,
        values: impl Into<DeviceViewMut<'v, T>>,
        indices: impl Into<DeviceViewMut<'i, u64>>,
        how: TopK,
    ) -> Result<()> {
        const CALL: &str = "topk_rows";
        let (x, mut values, mut indices) = (x.into(), values.into(), indices.into());
        let (n, out) = (x.len() as u64, values.len() as u64);
        one_index_a_value(CALL, out, indices.len())?;
        if n == 0 && out == 0 {
            return Ok(());
        }
        if n == 0 {
            return Err(Error::LengthMismatch {
                what: format!("{CALL}: the values of an empty matrix (no rows)"),
                expected: 0,
                got: out,
            });
        }
        if cols == 0 || n % cols != 0 {
            return Err(Error::LengthMismatch {
                what: format!("{CALL}: the elements (whole rows of {cols} columns)"),
                expected: if cols == 0 {
                    0
                } else {
                    n.div_ceil(cols) * cols
                },
                got: n,
            });
        }
        let rows = n / cols;
        let k = out / rows;
        if out % rows != 0 || k > cols {
            return Err(Error::LengthMismatch {
                what: format!(
                    "{CALL}: the values (k a row for each of {rows} rows, k at most {cols})"
                ),
                expected: k.min(cols) * rows,
                got: out,
            });
        }
        if rows > i32::MAX as u64 {
            return Err(Error::TooLarge {
                what: format!("{CALL}: the rows"),
                size: rows,
                limit: i32::MAX as u64,
            });
        }
        sorted_k::<T>(CALL, how, k)?;
        if k == 0 {
            return Ok(());
        }
        let (xp, _x_read) = self.read(&x)?;
        let (vp, _v_write) = self.write(&mut values)?;
        let (ip, _i_write) = self.write(&mut indices)?;
        let size = std::mem::size_of::<T>() as u64;
        if rows < FEW_ROWS && cols >= LONG_ROW && cols <= u32::MAX as u64 {
            for r in 0..rows {
                let (x, v, i) = (xp + r * cols * size, vp + r * k * size, ip + r * k * 8);
                self.topk_at::<T>(x, cols, v, i, k, how)?;
            }
            return Ok(());
        }
        let params = TopkParams {
            values: vp as *mut T::Bits,
            indices: ip as *mut u64,
            ..bare_params(
                xp as *const T::Bits,
                cols,
                k,
                T::KIND,
                !how.largest,
                how.sorted,
            )
        };
        let shape = LaunchShape::linear(rows as u32, ROWS_BLOCK, ROWS_SHARED);
        // SAFETY: addresses of this context's memory: `rows * cols` elements, `rows * k`
        // values and indices, `k <= cols` (and <= SORT_MAX sorted); the other fields unread.
        unsafe { self.launch_kernel(&crate::BUILTIN, &T::Bits::ROWS, shape, params) }
    }

    /// [`Context::topk`] of `n` elements at `xp` into `k` values at `vp` and indices at `ip`
    /// (checked by the caller; `0 < k <= n`).
    fn topk_at<T: TopkElement>(
        &self,
        xp: u64,
        n: u64,
        vp: u64,
        ip: u64,
        k: u64,
        how: TopK,
    ) -> Result<()> {
        let sms = self.info().multiprocessors as u64;
        let chunks = (sms * CHUNKS_PER_SM)
            .min(n.div_ceil((BLOCK as usize * kernels::topk::ITEMS) as u64))
            .max(1) as u32;
        let grid = n.div_ceil(BLOCK as u64 * 4).min(sms * 8).max(1) as u32;
        let cap = candidate_cap(n);
        let wb = std::mem::size_of::<T::Bits>();
        // Counts (zeroed), two tables of per-block digit counts, the list, the candidates:
        // each on a 16-byte boundary.
        let at16 = |b: usize| b.div_ceil(16) * 16;
        let count_bytes = at16(4 * (CHUNK_COUNTS + 2 * chunks as usize));
        let table_at = count_bytes;
        let list_bits_at = table_at + at16(4 * 2 * grid as usize * RADIX);
        let list_idx_at = list_bits_at + at16(wb * SORT_MAX);
        let cand_bits_at = list_idx_at + at16(4 * SORT_MAX);
        let cand_idx_at = cand_bits_at + at16(wb * cap as usize);
        let bytes = cand_idx_at + at16(4 * cap as usize);
        let ws = self.workspace::<TopkWorkspace>();
        let mut ws = ws.lock().unwrap_or_else(|p| p.into_inner());
        let base = match self.graph_scratch(bytes)? {
            Some(a) => a,
            None => {
                let words = bytes / 16;
                if ws.bytes.as_ref().is_none_or(|b| b.len() < words) {
                    ws.bytes = None; // free the old one first
                    ws.bytes = Some(self.alloc_zeros::<u128>(words.next_power_of_two())?);
                }
                let Some(b) = ws.bytes.as_ref() else {
                    unreachable!("allocated just above")
                };
                self.scratch_addr(b)
            }
        };
        self.memset_raw(base, count_bytes)?;
        let at = |off: usize| base + off as u64;
        let params = |pass: u32| TopkParams::<T::Bits> {
            input: xp as *const T::Bits,
            n,
            k,
            kind: T::KIND,
            smallest: (!how.largest) as u32,
            pass,
            sorted: how.sorted as u32,
            counts: base as *mut u32,
            tables: at(table_at) as *mut u32,
            cap,
            cand_bits: at(cand_bits_at) as *mut T::Bits,
            cand_idx: at(cand_idx_at) as *mut u32,
            list_bits: at(list_bits_at) as *mut T::Bits,
            list_idx: at(list_idx_at) as *mut u32,
            chunks,
            sample: sample_rank(n, k),
            values: vp as *mut T::Bits,
            indices: ip as *mut u64,
        };
        let lib = &crate::BUILTIN;
        let k_of = |k: Kernel<SimTopkFn<T::Bits>>| k;
        let listable = k <= SORT_MAX as u64;
        // SAFETY (every launch): addresses of this context's memory: `n` elements, `k` values
        // and indices, the workspace above (its counts zeroed in stream order); the digit
        // passes on one grid (the tables are per block).
        unsafe {
            if listable {
                let one = LaunchShape::linear(1, ROWS_BLOCK, DIGITS_SHARED);
                self.launch_kernel(lib, &k_of(T::Bits::SAMPLE), one, params(0))?;
                let g = (n * wb as u64)
                    .div_ceil(FILTER_TILE)
                    .min(sms * FILTER_PER_SM as u64)
                    .max(1) as u32;
                let shape = LaunchShape::linear(g, BLOCK, FILTER_SHARED);
                self.launch_kernel(lib, &k_of(T::Bits::FILTER), shape, params(0))?;
            }
            for pass in 0..passes(<T::Bits as Bits>::BITS) {
                let shape = LaunchShape::linear(grid, BLOCK, DIGITS_SHARED);
                self.launch_kernel(lib, &k_of(T::Bits::DIGITS), shape, params(pass))?;
            }
            if listable {
                let g = cap.div_ceil(BLOCK as u64).min(sms * 4).max(1) as u32;
                let shape = LaunchShape::linear(g, BLOCK, SCAN_SHARED);
                self.launch_kernel(lib, &k_of(T::Bits::GATHER), shape, params(0))?;
            }
            let shape = LaunchShape::linear(chunks, BLOCK, SCAN_SHARED);
            self.launch_kernel(lib, &k_of(T::Bits::COUNT), shape, params(0))?;
            self.launch_kernel(lib, &k_of(T::Bits::WRITE), shape, params(0))?;
            if listable {
                let one = LaunchShape::linear(1, SORT_BLOCK, SORT_SHARED);
                self.launch_kernel(lib, &k_of(T::Bits::SORT), one, params(0))?;
            }
        }
        Ok(())
    }
}

/// Every built-in top-k kernel's name (the embedded-index test).
#[cfg(test)]
pub(crate) fn kernel_names() -> Vec<&'static str> {
    fn of<W: TopkInstance>(names: &mut Vec<&'static str>) {
        names.extend([
            W::DIGITS.name,
            W::GATHER.name,
            W::COUNT.name,
            W::WRITE.name,
            W::SORT.name,
            W::ROWS.name,
            W::SAMPLE.name,
            W::FILTER.name,
        ]);
    }
    let mut names = Vec::new();
    of::<u16>(&mut names);
    of::<u32>(&mut names);
    of::<u64>(&mut names);
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernels::topk::{THRESHOLD, key};

    /// `sample_device`'s threshold (simulator) against the CPU's `rank`-th largest key of the
    /// sampled elements. Only the call's speed rests on it (a wrong threshold is caught later
    /// and costs another read), so the results' tests cannot see it.
    fn check_sample<T: TopkElement>(ctx: &Context, x: &[T], kind: u32, ranks: &[u64]) {
        let n = x.len() as u64;
        let s = n.min(SAMPLE);
        let width = 8 * std::mem::size_of::<T>() as u32;
        let bits = |v: &T| {
            let mut b = [0u8; 8];
            // SAFETY: T is a plain number of `width` bits.
            let raw = unsafe {
                std::slice::from_raw_parts(v as *const T as *const u8, std::mem::size_of::<T>())
            };
            b[..raw.len()].copy_from_slice(raw);
            u64::from_le_bytes(b)
        };
        let buf = ctx.htod(x).unwrap();
        for smallest in [false, true] {
            let mut keys: Vec<u64> = (0..s)
                .map(|i| {
                    if s == n {
                        i
                    } else {
                        (i * n) >> SAMPLE.trailing_zeros()
                    }
                })
                .map(|e| key(bits(&x[e as usize]), width, kind, smallest))
                .collect();
            keys.sort_unstable_by(|a, b| b.cmp(a));
            for &rank in ranks {
                // Poisoned before each launch: a launch that wrote nothing cannot pass on the
                // threshold left by the one before.
                let mut counts = ctx.htod(&vec![0xdead_beefu32; CHUNK_COUNTS]).unwrap();
                let view = buf.view(..).unwrap();
                let (xp, _r) = ctx.read(&view).unwrap();
                let mut out = counts.view_mut(..).unwrap();
                let (cp, _w) = ctx.write(&mut out).unwrap();
                let params = TopkParams {
                    counts: cp as *mut u32,
                    sample: rank,
                    ..bare_params(xp as *const T::Bits, n, 1, kind, smallest, false)
                };
                let one = LaunchShape::linear(1, ROWS_BLOCK, DIGITS_SHARED);
                // SAFETY: `n` elements at `xp`, the control words at `cp`; 1 <= rank <= s.
                unsafe {
                    ctx.launch_kernel(&crate::BUILTIN, &T::Bits::SAMPLE, one, params)
                        .unwrap()
                };
                drop((_r, _w));
                let c = ctx.dtoh(&counts).unwrap();
                let got = c[THRESHOLD] as u64 | (c[THRESHOLD + 1] as u64) << 32;
                assert_eq!(
                    got,
                    keys[rank as usize - 1],
                    "{n} {}, rank {rank}, smallest {smallest}",
                    T::DTYPE
                );
            }
        }
    }

    #[test]
    fn sample_threshold_is_the_ranked_key() {
        let ctx = Context::sim().unwrap();
        let mut r = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            r ^= r << 13;
            r ^= r >> 7;
            r ^= r << 17;
            r
        };
        // Uniform [0, 1): a few keys left after two passes (ranked by comparing), or many.
        let uniform: Vec<f32> = (0..40_000)
            .map(|_| (next() >> 40) as f32 / 16_777_216.0)
            .collect();
        check_sample(&ctx, &uniform, KIND_FLOAT, &[1, 9, 64, 300, 8192]);
        // Shorter than the sample: every element; ties of the top value across the ranks.
        let mut short: Vec<f32> = uniform[..3000].to_vec();
        for j in 0..40 {
            short[j * 71] = 2.0;
        }
        check_sample(&ctx, &short, KIND_FLOAT, &[1, 39, 40, 41, 65, 3000]);
        // Five values: every pass with thousands of keys left.
        let few: Vec<u32> = (0..50_000).map(|_| (next() % 5) as u32).collect();
        check_sample(&ctx, &few, kernels::topk::KIND_UINT, &[1, 2000, 8192]);
        let wide: Vec<f64> = (0..20_000).map(|_| (next() >> 11) as f64).collect();
        check_sample(&ctx, &wide, KIND_FLOAT, &[1, 17, 8192]);
        // 16-bit keys: two passes, a few keys left after the first.
        #[cfg(feature = "f16")]
        {
            let h: Vec<half::f16> = uniform.iter().map(|&v| half::f16::from_f32(v)).collect();
            check_sample(&ctx, &h, KIND_FLOAT, &[1, 5, 64, 8192]);
            // 40 ties of the top value: at most 64 keys left after the first pass.
            let h: Vec<half::f16> = short.iter().map(|&v| half::f16::from_f32(v)).collect();
            check_sample(&ctx, &h, KIND_FLOAT, &[1, 39, 40, 41, 3000]);
        }
    }
}
