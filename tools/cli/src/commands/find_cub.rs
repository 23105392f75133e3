//! The CUB shims `host bench` times: the one given or built against the toolkit's CUB, and
//! the one built against a CCCL checkout (`--cccl`).

use gpu_reduce::{BackendKind, Context};

/// CUB for `bench`: the shim given (`--cub-lib` / `GPU_REDUCE_CUB_LIB`), else the one
/// `tools/cli/cub/build.sh` leaves in the repository, else one built now with nvcc into `out` when
/// nvcc is found; `None` (the report then says "not available") on the simulator or without
/// any of them.
pub(super) fn find_cub(
    ctx: &Context,
    given: Option<&std::path::Path>,
    out: &std::path::Path,
) -> Option<gpu_reduce_tools::cub::Cub> {
    use gpu_reduce_tools::cub;
    if ctx.backend_kind() != BackendKind::Cuda {
        eprintln!("CUB not available on the simulator: CUB rows left out");
        return None;
    }
    let load = |p: &std::path::Path| match cub::Cub::load(p) {
        Ok(c) => Some(c),
        Err(e) => {
            eprintln!("CUB not available ({e}): CUB rows left out");
            None
        }
    };
    if let Some(p) = given {
        return load(p);
    }
    let repo = cub::default_library_path();
    if repo.is_file() {
        return load(&repo);
    }
    let Some(nvcc) = cub::find_nvcc() else {
        eprintln!("CUB not available (no --cub-lib, no built shim, no nvcc): CUB rows left out");
        return None;
    };
    let (major, minor) = ctx.info().compute_capability;
    let arch = format!("sm_{major}{minor}");
    eprintln!(
        "building the CUB shim with {} for {arch} ...",
        nvcc.display()
    );
    match cub::build_shim(&nvcc, &out.join("cub"), &arch, None) {
        Ok(p) => load(&p),
        Err(e) => {
            eprintln!("CUB not available ({e}): CUB rows left out");
            None
        }
    }
}

/// The second CUB of `bench --cccl DIR`: a shim built now with nvcc against the CCCL checkout
/// `dir` into `out/cub-cccl/`, and checked to hold the checkout's CUB_VERSION; `None`, with
/// the reason on stderr, when it cannot be had (the other columns are unaffected).
pub(super) fn find_cub_cccl(
    ctx: &Context,
    dir: &std::path::Path,
    out: &std::path::Path,
) -> Option<gpu_reduce_tools::cub::Cub> {
    use gpu_reduce_tools::cub;
    let unavailable = |why: &dyn std::fmt::Display| {
        eprintln!("CUB(cccl) not available ({why}): CUB(cccl) rows left out");
    };
    if ctx.backend_kind() != BackendKind::Cuda {
        unavailable(&"simulator");
        return None;
    }
    let includes = match cub::cccl_include_dirs(dir) {
        Ok(i) => i,
        Err(e) => {
            unavailable(&e);
            return None;
        }
    };
    let want = cub::cccl_cub_version(&includes);
    let Some(nvcc) = cub::find_nvcc() else {
        unavailable(&"no nvcc on PATH or in $CUDA_HOME/bin");
        return None;
    };
    let (major, minor) = ctx.info().compute_capability;
    let arch = format!("sm_{major}{minor}");
    eprintln!(
        "building the CUB shim against the CCCL checkout {} (CUB {}) with {} for {arch} ...",
        dir.display(),
        want.map_or("of unknown version".into(), cub::version_string),
        nvcc.display()
    );
    let started = std::time::Instant::now();
    let lib = match cub::build_shim(&nvcc, &out.join("cub-cccl"), &arch, Some(dir)) {
        Ok(p) => p,
        Err(e) => {
            unavailable(&e);
            return None;
        }
    };
    eprintln!("built {} in {:.0?}", lib.display(), started.elapsed());
    match cub::Cub::load(&lib) {
        Ok(c) if want.is_some_and(|w| w != c.version()) => {
            unavailable(&format!(
                "{} holds CUB_VERSION {}, the checkout {}: the toolkit's headers were used",
                lib.display(),
                c.version(),
                want.unwrap_or_default()
            ));
            None
        }
        Ok(c) => match gpu_reduce_tools::bench::cub_works(ctx, &c) {
            Ok(()) => Some(c),
            Err(e) => {
                unavailable(&format!(
                    "{} fails a first sum and scan: {e}",
                    lib.display()
                ));
                None
            }
        },
        Err(e) => {
            unavailable(&e);
            None
        }
    }
}
