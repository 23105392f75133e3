//! Loading the shim: resolving its symbols once, the calls every op shares.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::path::{Path, PathBuf};

use super::CubError;
use super::symbols::*;

/// `int cub_temp_bytes_NAME(unsigned long long n, size_t* bytes)`
pub(super) type TempFn = unsafe extern "C" fn(u64, *mut usize) -> c_int;
/// `int cub_NAME(void* temp, size_t temp_bytes, const T* in, T* out, unsigned long long n,
/// void* stream)`
type RunFn =
    unsafe extern "C" fn(*mut c_void, usize, *const c_void, *mut c_void, u64, *mut c_void) -> c_int;
type IntFn = unsafe extern "C" fn() -> c_int;
type ErrorStringFn = unsafe extern "C" fn(c_int) -> *const c_char;
/// `int cub_temp_bytes_segmented_sum_f32(int64_t num_segments, size_t* bytes)`
pub(super) type SegmentedTempFn = unsafe extern "C" fn(i64, *mut usize) -> c_int;
/// `int cub_segmented_sum_f32(void* temp, size_t temp_bytes, const float* in, float* out,
/// int64_t num_segments, const unsigned long long* begin_offsets, const unsigned long long*
/// end_offsets, void* stream)`
pub(super) type SegmentedFn = unsafe extern "C" fn(
    *mut c_void,
    usize,
    *const c_void,
    *mut c_void,
    i64,
    *const c_void,
    *const c_void,
    *mut c_void,
) -> c_int;
/// `int cub_temp_bytes_segmented_sum_fixed_f32(int64_t num_rows, int64_t row_len, size_t* bytes)`
pub(super) type FixedTempFn = unsafe extern "C" fn(i64, i64, *mut usize) -> c_int;
/// `int cub_segmented_sum_fixed_f32(void* temp, size_t temp_bytes, const float* in, float* out,
/// int64_t num_rows, int64_t row_len, void* stream)`
pub(super) type FixedFn = unsafe extern "C" fn(
    *mut c_void,
    usize,
    *const c_void,
    *mut c_void,
    i64,
    i64,
    *mut c_void,
) -> c_int;
/// `int cub_reduce_by_key_sum_u32_f32(void* temp, size_t temp_bytes, const unsigned int*
/// keys_in, unsigned int* unique_out, const float* values_in, float* aggregates_out, unsigned
/// long long* num_runs_out, unsigned long long n, void* stream)` (its query is a [`TempFn`])
pub(super) type ReduceByKeyFn = unsafe extern "C" fn(
    *mut c_void,
    usize,
    *const c_void,
    *mut c_void,
    *const c_void,
    *mut c_void,
    *mut c_void,
    u64,
    *mut c_void,
) -> c_int;
/// `int cub_scan_by_key_sum_u32_f32(void* temp, size_t temp_bytes, const unsigned int* keys_in,
/// const float* values_in, float* values_out, unsigned long long n, void* stream)` (its query
/// is a [`TempFn`])
pub(super) type ScanByKeyFn = unsafe extern "C" fn(
    *mut c_void,
    usize,
    *const c_void,
    *const c_void,
    *mut c_void,
    u64,
    *mut c_void,
) -> c_int;

/// `int cub_select_if_lt_T(void* temp, size_t temp_bytes, const T* in, T* out, unsigned long
/// long* num_selected, unsigned long long n, T threshold, void* stream)`, and
/// `cub_partition_if_lt_T` with the same arguments (T: `unsigned int`, `float` or `unsigned long
/// long`, as `u32`, `f32`, `u64`; the compactions' queries are [`TempFn`]s)
pub(super) type SelectIfFn<T> = unsafe extern "C" fn(
    *mut c_void,
    usize,
    *const c_void,
    *mut c_void,
    *mut c_void,
    u64,
    T,
    *mut c_void,
) -> c_int;
/// `int cub_select_flagged_T(void* temp, size_t temp_bytes, const T* in, const unsigned char*
/// flags, T* out, unsigned long long* num_selected, unsigned long long n, void* stream)`
pub(super) type SelectFlaggedFn = unsafe extern "C" fn(
    *mut c_void,
    usize,
    *const c_void,
    *const c_void,
    *mut c_void,
    *mut c_void,
    u64,
    *mut c_void,
) -> c_int;
/// `int cub_partition_three_way_lt_T(void* temp, size_t temp_bytes, const T* in, T* first_out,
/// T* second_out, T* unselected_out, unsigned long long* num_selected, unsigned long long n, T
/// t1, T t2, void* stream)`
pub(super) type ThreeWayFn<T> = unsafe extern "C" fn(
    *mut c_void,
    usize,
    *const c_void,
    *mut c_void,
    *mut c_void,
    *mut c_void,
    *mut c_void,
    u64,
    T,
    T,
    *mut c_void,
) -> c_int;
/// `int cub_select_unique_T(void* temp, size_t temp_bytes, const T* in, T* out, unsigned long
/// long* num_selected, unsigned long long n, void* stream)`
pub(super) type SelectUniqueFn = unsafe extern "C" fn(
    *mut c_void,
    usize,
    *const c_void,
    *mut c_void,
    *mut c_void,
    u64,
    *mut c_void,
) -> c_int;
/// `int cub_run_length_encode_T(void* temp, size_t temp_bytes, const T* in, T* unique_out,
/// unsigned long long* counts_out, unsigned long long* num_runs_out, unsigned long long n, void*
/// stream)`, and `cub_non_trivial_runs_T` with `unsigned long long* offsets_out, unsigned long
/// long* lengths_out` for the two outputs
pub(super) type RunsFn = unsafe extern "C" fn(
    *mut c_void,
    usize,
    *const c_void,
    *mut c_void,
    *mut c_void,
    *mut c_void,
    u64,
    *mut c_void,
) -> c_int;
/// `int cub_select_unique_by_key_T_u32(void* temp, size_t temp_bytes, const T* keys_in, const
/// unsigned int* values_in, T* keys_out, unsigned int* values_out, unsigned long long*
/// num_selected, unsigned long long n, void* stream)`
pub(super) type UniqueByKeyFn = unsafe extern "C" fn(
    *mut c_void,
    usize,
    *const c_void,
    *const c_void,
    *mut c_void,
    *mut c_void,
    *mut c_void,
    u64,
    *mut c_void,
) -> c_int;

struct Op {
    run_name: &'static [u8],
    run: RunFn,
    temp: TempFn,
}

/// The functions of [`OTHER_OPS`] and [`OPTIONAL_OTHER_OPS`], each with its own signature.
pub(super) struct OtherOps {
    pub(super) segmented: SegmentedFn,
    pub(super) segmented_temp: SegmentedTempFn,
    pub(super) fixed: FixedFn,
    pub(super) fixed_temp: FixedTempFn,
    fixed_native: bool,
    pub(super) reduce_by_key: ReduceByKeyFn,
    pub(super) reduce_by_key_temp: TempFn,
    /// `None` in a shim built before it.
    pub(super) scan_by_key: Option<(ScanByKeyFn, TempFn)>,
    /// The compactions of each element type.
    pub(super) compact_u32: CompactFns<u32>,
    pub(super) compact_f32: CompactFns<f32>,
    pub(super) compact_u64: CompactFns<u64>,
}

/// The compactions ([`CompactOp`]) of element type `T`, each `None` in a shim built before it
/// (an op counts as there only with both its run and its query).
pub(super) struct CompactFns<T> {
    /// Each op's query, at [`CompactOp::index`].
    pub(super) temp: [Option<TempFn>; 8],
    pub(super) select_if: Option<SelectIfFn<T>>,
    pub(super) select_flagged: Option<SelectFlaggedFn>,
    pub(super) partition_if: Option<SelectIfFn<T>>,
    pub(super) partition_three_way: Option<ThreeWayFn<T>>,
    pub(super) select_unique: Option<SelectUniqueFn>,
    pub(super) run_length_encode: Option<RunsFn>,
    pub(super) non_trivial_runs: Option<RunsFn>,
    pub(super) unique_by_key: Option<UniqueByKeyFn>,
}

impl<T: CubCompact> CompactFns<T> {
    /// Resolve every compaction of `T` that `lib` has.
    ///
    /// # Safety
    /// `lib` is the shim: its `cub_*` symbols have the types above.
    unsafe fn resolve(lib: &libloading::Library) -> CompactFns<T> {
        let mut t = [None; 8];
        // SAFETY (each below): the caller's; every field's type is its symbol's.
        unsafe {
            CompactFns {
                select_if: both::<T, _>(lib, &mut t, CompactOp::SelectIfLt),
                select_flagged: both::<T, _>(lib, &mut t, CompactOp::SelectFlagged),
                partition_if: both::<T, _>(lib, &mut t, CompactOp::PartitionIfLt),
                partition_three_way: both::<T, _>(lib, &mut t, CompactOp::PartitionThreeWayLt),
                select_unique: both::<T, _>(lib, &mut t, CompactOp::SelectUnique),
                run_length_encode: both::<T, _>(lib, &mut t, CompactOp::RunLengthEncode),
                non_trivial_runs: both::<T, _>(lib, &mut t, CompactOp::NonTrivialRuns),
                unique_by_key: both::<T, _>(lib, &mut t, CompactOp::UniqueByKey),
                temp: t,
            }
        }
    }
}

/// `T`'s `op` as a run of type `R`, if `lib` has both it and its query (the query then put at
/// `temps[op.index()]`).
///
/// # Safety
/// `R` is the type of the run symbol in `lib`.
unsafe fn both<T: CubCompact, R: Copy>(
    lib: &libloading::Library,
    temps: &mut [Option<TempFn>; 8],
    op: CompactOp,
) -> Option<R> {
    let (run, query) = T::SYMBOLS[op.index()];
    // SAFETY: the caller's; a query is a TempFn.
    let (r, q) = unsafe { (resolve::<R>(lib, run), resolve::<TempFn>(lib, query)) };
    let (r, q) = (r.ok()?, q.ok()?);
    temps[op.index()] = Some(q);
    Some(r)
}

/// The loaded shim. Function pointers are resolved once, at load, and stay valid as long as
/// `lib` (held here) is loaded.
pub struct Cub {
    ops: Vec<Op>,
    pub(super) other: OtherOps,
    version: i32,
    wide: bool,
    error_string: ErrorStringFn,
    path: PathBuf,
    /// Held so that the function pointers above stay valid; families resolve more from it.
    lib: libloading::Library,
}

impl std::fmt::Debug for Cub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cub")
            .field("path", &self.path)
            .field("version", &self.version)
            .field("wide_num_items", &self.wide)
            .field("segmented_fixed_native", &self.other.fixed_native)
            .finish_non_exhaustive()
    }
}

/// The symbol's name without its trailing NUL, for messages.
pub(super) fn symbol_name(sym: &[u8]) -> String {
    String::from_utf8_lossy(sym.strip_suffix(b"\0").unwrap_or(sym)).into_owned()
}

/// Resolve `name` to a value of type `T` (a function pointer type).
///
/// # Safety
/// `T` must be the type of the symbol in the library.
unsafe fn resolve<T: Copy>(lib: &libloading::Library, name: &[u8]) -> Result<T, CubError> {
    // SAFETY: the caller promises T matches the symbol; the value is copied out and used only
    // while `lib` is loaded (Cub keeps both together).
    unsafe { lib.get::<T>(name) }
        .map(|sym| *sym)
        .map_err(|e| CubError::MissingSymbol {
            name: symbol_name(name),
            message: e.to_string(),
        })
}

impl Cub {
    /// Load the shim from `path` and resolve all of its functions ([`OPTIONAL_OPS`] and
    /// [`OPTIONAL_OTHER_OPS`] those it has).
    pub fn load(path: &Path) -> Result<Cub, CubError> {
        // SAFETY: loading runs the library's initializers; the shim's are the CUDA runtime's
        // and CUB's static constructors, which do not touch the device.
        let lib = unsafe { libloading::Library::new(path) }.map_err(|e| CubError::NotLoadable {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        // SAFETY: the types below are those of cub_shim.cu's exports.
        unsafe {
            let version = resolve::<IntFn>(&lib, VERSION_SYMBOL)?;
            let wide = resolve::<IntFn>(&lib, WIDE_SYMBOL)?;
            let error_string = resolve::<ErrorStringFn>(&lib, ERROR_STRING_SYMBOL)?;
            let mut ops = Vec::with_capacity(OPS.len());
            for &(run_name, temp_name) in OPS {
                ops.push(Op {
                    run_name,
                    run: resolve::<RunFn>(&lib, run_name)?,
                    temp: resolve::<TempFn>(&lib, temp_name)?,
                });
            }
            for &(run_name, temp_name) in OPTIONAL_OPS {
                if let (Ok(run), Ok(temp)) = (
                    resolve::<RunFn>(&lib, run_name),
                    resolve::<TempFn>(&lib, temp_name),
                ) {
                    ops.push(Op {
                        run_name,
                        run,
                        temp,
                    });
                }
            }
            let fixed_native = resolve::<IntFn>(&lib, SEGMENTED_SUM_FIXED_NATIVE_SYMBOL)?;
            let other = OtherOps {
                segmented: resolve::<SegmentedFn>(&lib, SEGMENTED_SUM_SYMBOL)?,
                segmented_temp: resolve::<SegmentedTempFn>(&lib, SEGMENTED_SUM_TEMP_SYMBOL)?,
                fixed: resolve::<FixedFn>(&lib, SEGMENTED_SUM_FIXED_SYMBOL)?,
                fixed_temp: resolve::<FixedTempFn>(&lib, SEGMENTED_SUM_FIXED_TEMP_SYMBOL)?,
                fixed_native: fixed_native() != 0,
                reduce_by_key: resolve::<ReduceByKeyFn>(&lib, REDUCE_BY_KEY_SYMBOL)?,
                reduce_by_key_temp: resolve::<TempFn>(&lib, REDUCE_BY_KEY_TEMP_SYMBOL)?,
                scan_by_key: resolve::<ScanByKeyFn>(&lib, SCAN_BY_KEY_SYMBOL)
                    .ok()
                    .zip(resolve::<TempFn>(&lib, SCAN_BY_KEY_TEMP_SYMBOL).ok()),
                compact_u32: CompactFns::resolve(&lib),
                compact_f32: CompactFns::resolve(&lib),
                compact_u64: CompactFns::resolve(&lib),
            };
            Ok(Cub {
                ops,
                other,
                version: version(),
                wide: wide() != 0,
                error_string,
                path: path.to_path_buf(),
                lib,
            })
        }
    }

    /// `CUB_VERSION` the shim was compiled against: major * 100000 + minor * 100 + patch.
    pub fn version(&self) -> i32 {
        self.version
    }

    /// Whether the shim accepts more than `i32::MAX` elements (CUB >= 2.7); if not, such
    /// calls fail with cudaErrorInvalidValue (1).
    pub fn wide_num_items(&self) -> bool {
        self.wide
    }

    /// Whether [`Cub::segmented_sum_fixed_f32`] runs CUB's fixed-segment-size
    /// `DeviceSegmentedReduce::Sum` (CUB >= 3.1) rather than the offset one over offsets
    /// computed from a counting iterator (older CUBs).
    pub fn segmented_fixed_native(&self) -> bool {
        self.other.fixed_native
    }

    /// The path the shim was loaded from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The CUDA runtime's message for an error code.
    pub fn error_string(&self, code: i32) -> String {
        // SAFETY: cudaGetErrorString accepts any code and returns a static C string.
        let p = unsafe { (self.error_string)(code) };
        if p.is_null() {
            return format!("CUDA error {code}");
        }
        // SAFETY: non-null, NUL-terminated, static.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }

    /// The shim's symbol `name` (NUL-terminated) as a `F`, for a family that resolves its own
    /// calls (`super::histogram`): no central list to extend, and a shim built before the
    /// family simply lacks the symbol.
    ///
    /// # Safety
    /// `F` is the type of the symbol in the shim; the value is used only while `self` lives.
    pub(super) unsafe fn symbol<F: Copy>(&self, name: &[u8]) -> Result<F, CubError> {
        // SAFETY: the caller's.
        unsafe { resolve::<F>(&self.lib, name) }
    }

    fn op(&self, run_name: &'static [u8]) -> Result<&Op, CubError> {
        self.ops
            .iter()
            .find(|o| o.run_name == run_name)
            .ok_or_else(|| not_in_shim(run_name))
    }

    /// Whether the shim has [`Cub::inclusive_sum`] for `T`: always, except for an op of
    /// [`OPTIONAL_OPS`] (f64) in a shim built before it.
    pub fn has_inclusive_sum<T: CubInclusiveSum>(&self) -> bool {
        self.op(T::INCLUSIVE_SUM).is_ok()
    }

    pub(super) fn check(&self, function: &[u8], code: c_int) -> Result<(), CubError> {
        if code == 0 {
            Ok(())
        } else {
            Err(CubError::Cuda {
                function: symbol_name(function),
                code,
                message: self.error_string(code),
            })
        }
    }

    pub(super) fn temp_bytes(
        &self,
        run_name: &'static [u8],
        temp_name: &[u8],
        n: u64,
    ) -> Result<usize, CubError> {
        let op = self.op(run_name)?;
        // SAFETY: the query only writes `bytes`; no device memory is touched.
        self.query(temp_name, |bytes| unsafe { (op.temp)(n, bytes) })
    }

    /// Run a temp-size query (which writes only its `size_t*`) and check its code.
    pub(super) fn query(
        &self,
        temp_name: &[u8],
        q: impl FnOnce(&mut usize) -> c_int,
    ) -> Result<usize, CubError> {
        let mut bytes = 0usize;
        let code = q(&mut bytes);
        self.check(temp_name, code)?;
        Ok(bytes)
    }

    /// # Safety
    /// See the public op methods.
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn run(
        &self,
        run_name: &'static [u8],
        temp: u64,
        temp_bytes: usize,
        input: u64,
        out: u64,
        n: u64,
        stream: *mut c_void,
    ) -> Result<(), CubError> {
        let op = self.op(run_name)?;
        // SAFETY: forwarded from the caller.
        let code = unsafe {
            (op.run)(
                mut_ptr(temp),
                temp_bytes,
                ptr(input),
                mut_ptr(out),
                n,
                stream,
            )
        };
        self.check(run_name, code)
    }
}

/// The error for an op the loaded shim lacks.
pub(super) fn not_in_shim(run_name: &[u8]) -> CubError {
    CubError::MissingSymbol {
        name: symbol_name(run_name),
        message: "not in this shim (built before the op was added?)".into(),
    }
}

/// A device address as the shim's input pointer.
pub(super) fn ptr(addr: u64) -> *const c_void {
    addr as usize as *const c_void
}

/// A device address as the shim's output pointer.
pub(super) fn mut_ptr(addr: u64) -> *mut c_void {
    addr as usize as *mut c_void
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loading_a_missing_library_names_the_path() {
        let path = Path::new("/nonexistent/dir/libcub_shim_missing.so");
        let err = Cub::load(path).unwrap_err();
        match &err {
            CubError::NotLoadable { path: p, message } => {
                assert_eq!(p, path);
                assert!(!message.is_empty());
            }
            other => panic!("expected NotLoadable, got {other:?}"),
        }
        let text = err.to_string();
        assert!(
            text.contains("/nonexistent/dir/libcub_shim_missing.so"),
            "{text}"
        );
        assert!(text.contains("could not be loaded"), "{text}");
    }

    /// A stand-in shim compiled with `cc` (`None` without one): every symbol the loader needs,
    /// [`OPTIONAL_OPS`]' and [`OPTIONAL_OTHER_OPS`]' only when `optional`; each query `int q(unsigned long long n, size_t*
    /// bytes)` says `n` bytes (only those of [`OPS`]' shape may be called), the rest return
    /// constants.
    #[cfg(unix)]
    fn stand_in_shim(tag: &str, optional: bool) -> Option<PathBuf> {
        let dir = std::env::temp_dir().join(format!("cub-stand-in-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut c = String::from(
            "#include <stddef.h>\n\
             const char* cub_error_string(int c) { (void)c; return \"stand-in\"; }\n\
             int cub_version(void) { return 300001; }\n",
        );
        let mut ops: Vec<_> = OPS.iter().chain(OTHER_OPS).collect();
        if optional {
            ops.extend(OPTIONAL_OPS.iter().chain(OPTIONAL_OTHER_OPS));
            ops.extend(COMPACTION_OPS.iter());
        }
        for &&(run, temp) in &ops {
            c.push_str(&format!(
                "int {}(unsigned long long n, size_t* b) {{ *b = n; return 0; }}\n",
                symbol_name(temp)
            ));
            c.push_str(&format!("int {}(void) {{ return 0; }}\n", symbol_name(run)));
        }
        for sym in [WIDE_SYMBOL, SEGMENTED_SUM_FIXED_NATIVE_SYMBOL] {
            c.push_str(&format!("int {}(void) {{ return 1; }}\n", symbol_name(sym)));
        }
        let (src, lib) = (dir.join("stand_in.c"), dir.join("libstand_in.so"));
        std::fs::write(&src, c).unwrap();
        let built = std::process::Command::new("cc")
            .args(["-shared", "-fPIC", "-o"])
            .args([&lib, &src])
            .status();
        match built {
            Ok(s) if s.success() => Some(lib),
            Ok(s) => panic!("cc failed ({s}) on {}", src.display()),
            Err(_) => None, // no cc here
        }
    }

    /// A shim built before the ops of [`OPTIONAL_OPS`] and [`OPTIONAL_OTHER_OPS`] existed still
    /// loads, without them; one with them has them.
    #[cfg(unix)]
    #[test]
    fn a_shim_without_the_optional_ops_loads_without_them() {
        let (Some(old), Some(new)) = (stand_in_shim("old", false), stand_in_shim("new", true))
        else {
            return;
        };
        let cub = Cub::load(&old).unwrap();
        assert_eq!(cub.version(), 300001);
        assert!(cub.has_inclusive_sum::<f32>() && cub.has_inclusive_sum::<i32>());
        assert!(!cub.has_inclusive_sum::<f64>());
        assert_eq!(cub.temp_bytes_inclusive_sum::<f32>(12).unwrap(), 12);
        match cub.temp_bytes_inclusive_sum::<f64>(12) {
            Err(CubError::MissingSymbol { name, .. }) => {
                assert_eq!(name, "cub_inclusive_sum_f64")
            }
            other => panic!("expected MissingSymbol, got {other:?}"),
        }
        assert!(!cub.has_scan_by_key_sum_u32_f32());
        match cub.temp_bytes_scan_by_key_sum_u32_f32(12) {
            Err(CubError::MissingSymbol { name, .. }) => {
                assert_eq!(name, "cub_scan_by_key_sum_u32_f32")
            }
            other => panic!("expected MissingSymbol, got {other:?}"),
        }
        assert!(
            !cub.has_select_if_lt_u32()
                && !cub.has_partition_if_lt_u32()
                && !cub.has_select_unique_u32()
        );
        match cub.temp_bytes_select_unique_u32(12) {
            Err(CubError::MissingSymbol { name, .. }) => {
                assert_eq!(name, "cub_select_unique_u32")
            }
            other => panic!("expected MissingSymbol, got {other:?}"),
        }
        for op in CompactOp::ALL {
            assert!(!cub.has_compaction::<u32>(op) && !cub.has_compaction::<u64>(op));
        }
        match cub.temp_bytes_compaction::<f32>(CompactOp::UniqueByKey, 12) {
            Err(CubError::MissingSymbol { name, .. }) => {
                assert_eq!(name, "cub_select_unique_by_key_f32_u32")
            }
            other => panic!("expected MissingSymbol, got {other:?}"),
        }
        // SAFETY: never reaches the shim (the op is missing): no device memory is touched.
        let r = unsafe { cub.non_trivial_runs::<u64>(1, 1, 0, 0, 0, 0, 4, std::ptr::null_mut()) };
        assert!(matches!(r, Err(CubError::MissingSymbol { .. })), "{r:?}");
        let cub = Cub::load(&new).unwrap();
        assert!(
            cub.has_select_if_lt_u32()
                && cub.has_partition_if_lt_u32()
                && cub.has_select_unique_u32()
        );
        assert_eq!(cub.temp_bytes_select_if_lt_u32(12).unwrap(), 12);
        assert_eq!(cub.temp_bytes_partition_if_lt_u32(13).unwrap(), 13);
        assert_eq!(cub.temp_bytes_select_unique_u32(14).unwrap(), 14);
        assert!(cub.has_inclusive_sum::<f64>());
        assert_eq!(cub.temp_bytes_inclusive_sum::<f64>(12).unwrap(), 12);
        assert!(cub.has_scan_by_key_sum_u32_f32());
        assert_eq!(cub.temp_bytes_scan_by_key_sum_u32_f32(12).unwrap(), 12);
        for op in CompactOp::ALL {
            assert!(cub.has_compaction::<u32>(op));
            assert!(cub.has_compaction::<f32>(op));
            assert!(cub.has_compaction::<u64>(op));
        }
        let (rle, three) = (CompactOp::RunLengthEncode, CompactOp::PartitionThreeWayLt);
        assert_eq!(cub.temp_bytes_compaction::<f32>(rle, 15).unwrap(), 15);
        assert_eq!(cub.temp_bytes_compaction::<u64>(three, 16).unwrap(), 16);
        for lib in [old, new] {
            let _ = std::fs::remove_dir_all(lib.parent().unwrap());
        }
    }

    /// A real library without the shim's symbols (glibc) gives MissingSymbol, not a crash.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn a_library_without_the_symbols_is_rejected() {
        match Cub::load(Path::new("libc.so.6")) {
            Err(CubError::MissingSymbol { name, .. }) => assert_eq!(name, "cub_version"),
            other => panic!("expected MissingSymbol, got {other:?}"),
        }
    }
}
