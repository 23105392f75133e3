//! Building the shim: finding nvcc and a CCCL checkout's headers, nvcc's arguments.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::{CubError, SHIM_SOURCE, library_file_name};

/// `nvcc` on `PATH`, else `$CUDA_HOME/bin/nvcc` (default `/usr/local/cuda`), if it exists.
pub fn find_nvcc() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("nvcc"))
            .find(|f| f.is_file())
    });
    on_path.or_else(|| {
        let home = std::env::var_os("CUDA_HOME").unwrap_or_else(|| "/usr/local/cuda".into());
        let f = Path::new(&home).join("bin/nvcc");
        f.is_file().then_some(f)
    })
}

/// The layouts of CCCL's headers [`cccl_include_dirs`] accepts: each is its include
/// directories (relative to the given root), with the headers each must hold.
type Layout = &'static [(&'static str, &'static [&'static str])];
const CCCL_LAYOUTS: &[Layout] = &[
    // A GitHub checkout of NVIDIA/cccl, or the bundle's copy of its three header trees. The
    // order is CCCL's README's (`nvcc -Icccl/thrust -Icccl/libcudacxx/include -Icccl/cub`).
    &[
        ("thrust", &["thrust/version.h"]),
        ("libcudacxx/include", &["cuda/std/version"]),
        ("cub", &["cub/version.cuh"]),
    ],
    // An installed CCCL (`cmake --install`, conda's `cccl`): all of it under include/.
    &[(
        "include",
        &["thrust/version.h", "cuda/std/version", "cub/version.cuh"],
    )],
    // An include directory holding cub/, thrust/ and cuda/ itself (as the toolkit's
    // include/cccl).
    &[(
        ".",
        &["thrust/version.h", "cuda/std/version", "cub/version.cuh"],
    )],
];

/// The `-I` directories (absolute) that put the CCCL headers under `root` ahead of the
/// toolkit's own: `root` is a CCCL checkout (`cub/cub/`, `thrust/thrust/`,
/// `libcudacxx/include/`), an installed CCCL (`include/`) or an include directory itself.
pub fn cccl_include_dirs(root: &Path) -> Result<Vec<PathBuf>, CubError> {
    let fail = |message: String| CubError::Build { message };
    let root = root
        .canonicalize()
        .map_err(|e| fail(format!("CCCL checkout {}: {e}", root.display())))?;
    let dir = |d: &str| {
        if d == "." { root.clone() } else { root.join(d) }
    };
    for layout in CCCL_LAYOUTS {
        if layout
            .iter()
            .all(|(d, headers)| headers.iter().all(|h| dir(d).join(h).is_file()))
        {
            return Ok(layout.iter().map(|(d, _)| dir(d)).collect());
        }
    }
    Err(fail(format!(
        "{} is not a CCCL checkout: expected cub/cub/version.cuh, thrust/thrust/version.h and \
         libcudacxx/include/cuda/std/version in it (or the same under include/, as an \
         installed CCCL has them)",
        root.display()
    )))
}

/// `CUB_VERSION` as `cub/version.cuh` under the include directories defines it (what a shim
/// built with them must report), if it can be read.
pub fn cccl_cub_version(include_dirs: &[PathBuf]) -> Option<i32> {
    include_dirs.iter().find_map(|d| {
        let text = std::fs::read_to_string(d.join("cub/version.cuh")).ok()?;
        text.lines().find_map(|l| {
            let rest = l.trim_start().strip_prefix("#")?.trim_start();
            let rest = rest.strip_prefix("define")?.trim_start();
            let value = rest.strip_prefix("CUB_VERSION")?;
            // `CUB_VERSION_...` is another macro: a value must follow after white space.
            if !value.starts_with([' ', '\t']) {
                return None;
            }
            value.split_whitespace().next()?.parse().ok()
        })
    })
}

/// `CUB_VERSION` (major * 100000 + minor * 100 + patch) as `major.minor.patch`.
pub fn version_string(v: i32) -> String {
    format!("{}.{}.{}", v / 100_000, v / 100 % 1000, v % 100)
}

/// nvcc's arguments for the shim (those of `tools/cli/cub/build.sh`): `includes` (a CCCL
/// checkout's, [`cccl_include_dirs`]) come before the toolkit's own include directories, which
/// nvcc searches after every `-I` of the command line, so the checkout's headers win; with
/// `expect_version` (the checkout's `CUB_VERSION`) the shim fails to compile if they did not.
pub fn shim_nvcc_args(
    arch: &str,
    includes: &[PathBuf],
    expect_version: Option<i32>,
    src: &Path,
    lib: &Path,
) -> Vec<OsString> {
    let mut args: Vec<OsString> = ["-O3", "-std=c++17", &format!("-arch={arch}")]
        .iter()
        .map(OsString::from)
        .collect();
    args.extend(["-Xcompiler", "-fPIC", "-shared"].map(OsString::from));
    if let Some(v) = expect_version {
        args.push(format!("-DCUB_SHIM_EXPECT_VERSION={v}").into());
    }
    for dir in includes {
        let mut a = OsString::from("-I");
        a.push(dir);
        args.push(a);
    }
    args.extend([OsString::from("-o"), lib.into(), src.into()]);
    args
}

/// Compile the shim with `nvcc` for `arch` (e.g. `sm_90`) into `dir`, against the CUB of
/// nvcc's toolkit (`dir/libcub_shim.so`) or, given `cccl`, against that CCCL checkout's
/// headers (`dir/libcub_shim_cccl.so`); returns the library's path.
pub fn build_shim(
    nvcc: &Path,
    dir: &Path,
    arch: &str,
    cccl: Option<&Path>,
) -> Result<PathBuf, CubError> {
    let fail = |message: String| CubError::Build { message };
    let includes = match cccl {
        Some(root) => cccl_include_dirs(root)?,
        None => Vec::new(),
    };
    std::fs::create_dir_all(dir).map_err(|e| fail(format!("{}: {e}", dir.display())))?;
    let src = dir.join("cub_shim.cu");
    let lib = dir.join(library_file_name(cccl.is_some()));
    std::fs::write(&src, SHIM_SOURCE).map_err(|e| fail(format!("{}: {e}", src.display())))?;
    let expect = cccl_cub_version(&includes);
    let out = std::process::Command::new(nvcc)
        .args(shim_nvcc_args(arch, &includes, expect, &src, &lib))
        .output()
        .map_err(|e| fail(format!("running {}: {e}", nvcc.display())))?;
    if !out.status.success() {
        return Err(fail(format!(
            "{} failed: {}",
            nvcc.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(lib)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cub::CCCL_ENV;

    #[test]
    fn shim_build_failure_is_an_error_naming_the_compiler() {
        assert!(SHIM_SOURCE.contains("DeviceReduce") && SHIM_SOURCE.contains("DeviceScan"));
        let dir = std::env::temp_dir().join(format!("cub-build-test-{}", std::process::id()));
        let e = build_shim(Path::new("/nonexistent/nvcc"), &dir, "sm_90", None).unwrap_err();
        assert!(matches!(e, CubError::Build { .. }), "{e}");
        assert!(e.to_string().contains("/nonexistent/nvcc"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A fake CCCL tree under a fresh temp directory: `files` (relative paths) created, each
    /// `version.cuh` defining CUB_VERSION 300600.
    fn fake_tree(tag: &str, files: &[impl AsRef<str>]) -> PathBuf {
        let root = std::env::temp_dir().join(format!("cccl-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for f in files.iter().map(|f| f.as_ref()) {
            let p = root.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            let text = if f.ends_with("version.cuh") {
                "#pragma once\n#define CUB_VERSION 300600 // one value\n\
                 #define CUB_VERSION_MAJOR (CUB_VERSION / 100000)\n"
            } else {
                "// header\n"
            };
            std::fs::write(p, text).unwrap();
        }
        root
    }

    #[test]
    fn a_cccl_checkout_gives_its_three_include_dirs_in_readme_order() {
        let root = fake_tree(
            "checkout",
            &[
                "cub/cub/version.cuh",
                "thrust/thrust/version.h",
                "libcudacxx/include/cuda/std/version",
            ],
        );
        let dirs = cccl_include_dirs(&root).unwrap();
        let canon = root.canonicalize().unwrap();
        assert_eq!(
            dirs,
            vec![
                canon.join("thrust"),
                canon.join("libcudacxx/include"),
                canon.join("cub")
            ]
        );
        assert_eq!(cccl_cub_version(&dirs), Some(300600));
        assert_eq!(version_string(300600), "3.6.0");
        assert_eq!(version_string(300001), "3.0.1");
        assert_eq!(version_string(200800), "2.8.0");

        // The -I flags come after the compile flags and before the output and the source, in
        // the order given; without a checkout there is none.
        let (src, lib) = (
            Path::new("/b/cub_shim.cu"),
            Path::new("/b/libcub_shim_cccl.so"),
        );
        let args: Vec<String> = shim_nvcc_args("sm_90", &dirs, Some(300600), src, lib)
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect();
        let inc: Vec<String> = dirs.iter().map(|d| format!("-I{}", d.display())).collect();
        let mut want: Vec<String> = [
            "-O3",
            "-std=c++17",
            "-arch=sm_90",
            "-Xcompiler",
            "-fPIC",
            "-shared",
            "-DCUB_SHIM_EXPECT_VERSION=300600",
        ]
        .map(String::from)
        .to_vec();
        want.extend(inc);
        want.extend(["-o", "/b/libcub_shim_cccl.so", "/b/cub_shim.cu"].map(String::from));
        assert_eq!(args, want);
        assert!(
            !shim_nvcc_args("sm_90", &[], None, src, lib)
                .iter()
                .any(|a| a.to_string_lossy().starts_with("-I")
                    || a.to_string_lossy().starts_with("-D"))
        );
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn installed_and_bare_cccl_layouts_and_non_checkouts() {
        let headers = ["cub/version.cuh", "thrust/version.h", "cuda/std/version"];
        let installed = fake_tree("installed", &headers.map(|h| format!("include/{h}")));
        let dirs = cccl_include_dirs(&installed).unwrap();
        assert_eq!(
            dirs,
            vec![installed.canonicalize().unwrap().join("include")]
        );
        assert_eq!(cccl_cub_version(&dirs), Some(300600));
        let bare = fake_tree("bare", &headers);
        assert_eq!(
            cccl_include_dirs(&bare).unwrap(),
            vec![bare.canonicalize().unwrap()]
        );
        // cub alone is not enough: it includes thrust and libcu++.
        let partial = fake_tree("partial", &["cub/cub/version.cuh"]);
        let e = cccl_include_dirs(&partial).unwrap_err();
        assert!(e.to_string().contains("not a CCCL checkout"), "{e}");
        let e = cccl_include_dirs(Path::new("/nonexistent/cccl")).unwrap_err();
        assert!(e.to_string().contains("/nonexistent/cccl"), "{e}");
        // A missing checkout fails before nvcc runs.
        let dir = std::env::temp_dir().join(format!("cub-build-cccl-{}", std::process::id()));
        let e = build_shim(
            Path::new("/nonexistent/nvcc"),
            &dir,
            "sm_90",
            Some(&partial),
        )
        .unwrap_err();
        assert!(e.to_string().contains("not a CCCL checkout"), "{e}");
        for d in [installed, bare, partial, dir] {
            let _ = std::fs::remove_dir_all(d);
        }
    }

    /// build_shim end to end with a stand-in nvcc that records its arguments: both shims get
    /// their own file, and the CCCL build passes the checkout's -I paths and CUB_VERSION.
    #[cfg(unix)]
    #[test]
    fn build_shim_runs_nvcc_with_the_checkouts_headers() {
        use std::os::unix::fs::PermissionsExt;
        let root = fake_tree(
            "build",
            &[
                "cccl/cub/cub/version.cuh",
                "cccl/thrust/thrust/version.h",
                "cccl/libcudacxx/include/cuda/std/version",
            ],
        );
        let nvcc = root.join("nvcc");
        let log = root.join("args.txt");
        std::fs::write(
            &nvcc,
            format!(
                "#!/bin/sh\nprintf '%s\\n' \"$@\" > '{}'\nwhile [ \"$1\" != -o ]; do shift; done\n: > \"$2\"\n",
                log.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&nvcc, std::fs::Permissions::from_mode(0o755)).unwrap();
        let out = root.join("out");
        // A test thread forking while the script was open for writing can make exec fail
        // with ETXTBSY for a moment: retry then.
        let build = |cccl: Option<&Path>| {
            for _ in 0..50 {
                match build_shim(&nvcc, &out, "sm_90", cccl) {
                    Err(e) if e.to_string().contains("Text file busy") => {
                        std::thread::sleep(std::time::Duration::from_millis(20))
                    }
                    r => return r,
                }
            }
            build_shim(&nvcc, &out, "sm_90", cccl)
        };
        let lib = build(None).unwrap();
        assert_eq!(lib, out.join("libcub_shim.so"));
        let args = std::fs::read_to_string(&log).unwrap();
        assert!(!args.contains("-I") && !args.contains("-D"), "{args}");
        let lib = build(Some(&root.join("cccl"))).unwrap();
        assert_eq!(lib, out.join("libcub_shim_cccl.so"));
        assert!(lib.is_file() && out.join("libcub_shim.so").is_file());
        let args = std::fs::read_to_string(&log).unwrap();
        let cccl = root.canonicalize().unwrap().join("cccl");
        let want = format!(
            "-DCUB_SHIM_EXPECT_VERSION=300600\n-I{0}/thrust\n-I{0}/libcudacxx/include\n-I{0}/cub\n-o\n",
            cccl.display()
        );
        assert!(args.contains(&want), "{args}");
        assert_eq!(
            std::fs::read_to_string(out.join("cub_shim.cu")).unwrap(),
            SHIM_SOURCE
        );
        let _ = std::fs::remove_dir_all(&root);
    }

    /// With `$GPU_REDUCE_CCCL` set, the checkout it names is one `host bench` can use.
    #[test]
    fn the_cccl_checkout_in_the_environment_is_usable() {
        let Some(root) = std::env::var_os(CCCL_ENV).filter(|r| !r.is_empty()) else {
            return;
        };
        let dirs = cccl_include_dirs(Path::new(&root)).unwrap();
        let v = cccl_cub_version(&dirs).expect("CUB_VERSION in cub/version.cuh");
        assert!(v >= 200000, "CUB {}", version_string(v));
    }
}
