//! The one PTX builder, used by `cargo xtask build-ptx` and by `host/build.rs`.
//!
//! Pipeline: `cargo rustc` builds the `kernels` crate for `nvptx64-nvidia-cuda` with
//! `-Zbuild-std=core`, one `-C target-cpu=<arch>` for every crate (core included), fat LTO and
//! `--emit=llvm-bc`; `llvm-link` links the bitcode into one module; `llc` generates the PTX.
//! `llvm-link` and `llc` come from the pinned toolchain's `llvm-tools` component.
//!
//! When `ptxas` is available ([`find_ptxas`]) [`ptxas_report`] assembles the PTX for the arch
//! and parses the per-kernel resource table.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Default GPU architecture: sm_80 PTX runs on A100, H100, H200 and newer through the driver's
/// JIT compiler.
pub const DEFAULT_ARCH: &str = "sm_80";
/// The LLVM target triple of the kernels.
pub const TARGET: &str = "nvptx64-nvidia-cuda";

/// What can go wrong while building or checking PTX.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("invalid GPU architecture `{0}`: expected sm_NN, e.g. sm_80 or sm_90")]
    BadArch(String),
    #[error("could not run `{program}`: {source}")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    #[error("`{step}` failed ({status}):\n{stderr}")]
    Step {
        step: String,
        status: std::process::ExitStatus,
        stderr: String,
    },
    #[error("{0}")]
    Missing(String),
    #[error("I/O error on {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Options for one PTX build.
#[derive(Debug, Clone)]
pub struct PtxBuild {
    /// The workspace root (holds `kernels/`).
    pub workspace: PathBuf,
    /// Cargo target directory for the nvptx build, separate from the host's so a build script
    /// can run it while the outer cargo holds its own lock.
    pub target_dir: PathBuf,
    /// GPU architecture, `sm_NN`.
    pub arch: String,
}

/// Result of a successful build.
#[derive(Debug, Clone)]
pub struct PtxArtifact {
    pub ptx_path: PathBuf,
    pub arch: String,
    /// Names of the `.entry` functions in the PTX.
    pub entries: Vec<String>,
}

impl PtxBuild {
    pub fn new(workspace: impl Into<PathBuf>, arch: &str) -> Result<Self, Error> {
        let workspace = workspace.into();
        check_arch(arch)?;
        Ok(Self {
            target_dir: workspace.join("target").join("ptx"),
            workspace,
            arch: arch.to_string(),
        })
    }

    /// Where [`PtxBuild::build`] writes the PTX: `target/ptx/<arch>/kernels.ptx`.
    pub fn ptx_path(&self) -> PathBuf {
        self.target_dir.join(&self.arch).join("kernels.ptx")
    }

    /// Build the kernels crate to PTX. Cargo's own fingerprinting makes a rebuild with no change
    /// cheap; llvm-link and llc always run (milliseconds).
    pub fn build(&self) -> Result<PtxArtifact, Error> {
        let out_dir = self.target_dir.join(&self.arch);
        std::fs::create_dir_all(&out_dir).map_err(|source| Error::Io {
            path: out_dir.clone(),
            source,
        })?;
        let bc = out_dir.join("kernels.bc");
        let linked = out_dir.join("kernels.linked.bc");
        let ptx = self.ptx_path();

        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"));
        let mut cmd = Command::new(cargo);
        cmd.current_dir(&self.workspace)
            .arg("rustc")
            .arg("--manifest-path")
            .arg(self.workspace.join("kernels").join("Cargo.toml"))
            .args(["--profile", "ptx", "--target", TARGET, "-Zbuild-std=core"])
            .args(["--crate-type", "staticlib", "--quiet"])
            .arg("--target-dir")
            .arg(self.target_dir.join("cargo"))
            .arg("--")
            .arg(format!("--emit=llvm-bc={}", bc.display()));
        // A build script inherits the outer build's flags and wrappers (clippy-driver, the host's
        // RUSTFLAGS); none of them belong to the device build.
        for var in [
            "RUSTFLAGS",
            "CARGO_ENCODED_RUSTFLAGS",
            "RUSTC_WRAPPER",
            "RUSTC_WORKSPACE_WRAPPER",
            "CARGO_TARGET_DIR",
            "CARGO_BUILD_TARGET",
            "CARGO_BUILD_RUSTFLAGS",
            "RUSTDOCFLAGS",
            "CARGO_PRIMARY_PACKAGE",
            "CARGO_MAKEFLAGS",
        ] {
            cmd.env_remove(var);
        }
        // One target-cpu for every crate, `core` included: mixing CPUs breaks the LTO link.
        // A higher full-unroll threshold: kernels keep per-thread arrays (a scan tile's rows)
        // in registers only when loops over them unroll; LLVM's default (300) leaves the larger
        // row loops rolled and the arrays in local memory.
        cmd.env(
            "CARGO_ENCODED_RUSTFLAGS",
            format!(
                "-Ctarget-cpu={}\x1f-Cllvm-args=-unroll-threshold=2000",
                self.arch
            ),
        );
        run(&mut cmd, "cargo rustc (kernels, nvptx64)")?;
        if !bc.exists() {
            // Cargo thought the crate fresh but the bitcode was deleted: forget the kernels'
            // fingerprint so rustc runs again.
            self.forget_fingerprint();
            run(&mut cmd, "cargo rustc (kernels, nvptx64)")?;
        }
        if !bc.exists() {
            return Err(Error::Missing(format!(
                "rustc did not write the bitcode {}",
                bc.display()
            )));
        }

        let tools = llvm_tools_dir()?;
        run(
            Command::new(tools.join("llvm-link"))
                .arg(&bc)
                .arg("-o")
                .arg(&linked),
            "llvm-link",
        )?;
        run(
            Command::new(tools.join("llc"))
                .args(["-O3", "-mtriple", TARGET])
                .arg(format!("-mcpu={}", self.arch))
                .arg(&linked)
                .arg("-o")
                .arg(&ptx),
            "llc",
        )?;
        let text = std::fs::read_to_string(&ptx).map_err(|source| Error::Io {
            path: ptx.clone(),
            source,
        })?;
        let min_blocks = scan_min_blocks();
        let text = if min_blocks > 0 {
            let hinted = scan_occupancy_hints(&text, min_blocks);
            std::fs::write(&ptx, &hinted).map_err(|source| Error::Io {
                path: ptx.clone(),
                source,
            })?;
            hinted
        } else {
            text
        };
        let entries = entry_names(&text);
        if entries.is_empty() {
            return Err(Error::Missing(format!(
                "{} has no .entry function: were the kernels compiled out?",
                ptx.display()
            )));
        }
        Ok(PtxArtifact {
            ptx_path: ptx,
            arch: self.arch.clone(),
            entries,
        })
    }
}

impl PtxBuild {
    /// Delete cargo's fingerprints of the `kernels` crate (both the `.fingerprint/kernels-*`
    /// layout and the newer `build/kernels/<hash>/fingerprint` one).
    fn forget_fingerprint(&self) {
        fn walk(dir: &Path) {
            let Ok(entries) = std::fs::read_dir(dir) else {
                return;
            };
            for e in entries.flatten() {
                let p = e.path();
                if !p.is_dir() {
                    continue;
                }
                let name = e.file_name().to_string_lossy().into_owned();
                let in_kernels = p
                    .parent()
                    .and_then(Path::parent)
                    .and_then(Path::file_name)
                    .is_some_and(|n| n == "kernels");
                if (name == "fingerprint" && in_kernels) || name.starts_with("kernels-") {
                    let _ = std::fs::remove_dir_all(&p);
                } else {
                    walk(&p);
                }
            }
        }
        walk(&self.target_dir.join("cargo"));
    }
}

/// `sm_NN` or `sm_NNa`, NN >= 50.
pub fn check_arch(arch: &str) -> Result<(), Error> {
    let digits = arch
        .strip_prefix("sm_")
        .map(|d| d.trim_end_matches('a'))
        .unwrap_or("");
    match digits.parse::<u32>() {
        Ok(v) if (50..=200).contains(&v) => Ok(()),
        _ => Err(Error::BadArch(arch.to_string())),
    }
}

/// The names of the `.entry` (kernel) functions in a PTX text.
pub fn entry_names(ptx: &str) -> Vec<String> {
    ptx.lines()
        .filter_map(|l| l.trim_start().strip_prefix(".visible .entry "))
        .map(|rest| rest.split(['(', ' ']).next().unwrap_or("").to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

fn run(cmd: &mut Command, step: &str) -> Result<(), Error> {
    let program = cmd.get_program().to_string_lossy().into_owned();
    let out = cmd
        .output()
        .map_err(|source| Error::Spawn { program, source })?;
    if !out.status.success() {
        return Err(Error::Step {
            step: step.to_string(),
            status: out.status,
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        });
    }
    Ok(())
}

/// `<sysroot>/lib/rustlib/<host>/bin`, where rustup's `llvm-tools` component puts llvm-link and
/// llc.
pub fn llvm_tools_dir() -> Result<PathBuf, Error> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| OsString::from("rustc"));
    let capture = |args: &[&str]| -> Result<String, Error> {
        let out = Command::new(&rustc)
            .args(args)
            .output()
            .map_err(|source| Error::Spawn {
                program: rustc.to_string_lossy().into_owned(),
                source,
            })?;
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let sysroot = capture(&["--print", "sysroot"])?.trim().to_string();
    let host = capture(&["-vV"])?
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .map(str::to_string)
        .ok_or_else(|| Error::Missing("`rustc -vV` printed no host triple".into()))?;
    let dir = Path::new(&sysroot)
        .join("lib/rustlib")
        .join(host)
        .join("bin");
    if !dir.join("llc").exists() {
        return Err(Error::Missing(format!(
            "llc not found in {}: install the toolchain's llvm-tools component \
             (`rustup component add llvm-tools`)",
            dir.display()
        )));
    }
    Ok(dir)
}

/// `ptxas` from `$PTXAS`, else from `PATH`; `Ok(None)` when neither has one. A `PTXAS` that
/// names no file is an error: CI sets it to demand the assembly check.
pub fn find_ptxas() -> Result<Option<PathBuf>, Error> {
    if let Some(p) = std::env::var_os("PTXAS") {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(Some(p))
        } else {
            Err(Error::Missing(format!(
                "PTXAS={} is not a file",
                p.display()
            )))
        };
    }
    let Some(path) = std::env::var_os("PATH") else {
        return Ok(None);
    };
    Ok(std::env::split_paths(&path)
        .map(|d| d.join("ptxas"))
        .find(|p| p.is_file()))
}

/// Per-kernel resources as ptxas reports them with `-v`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KernelResources {
    pub name: String,
    pub registers: u32,
    pub shared_bytes: u32,
    pub stack_bytes: u32,
    pub spill_store_bytes: u32,
    pub spill_load_bytes: u32,
}

/// Assemble `ptx` for `arch` with `ptxas -v`. A PTX that does not assemble is an error.
pub fn ptxas_report(ptxas: &Path, ptx: &Path, arch: &str) -> Result<Vec<KernelResources>, Error> {
    check_arch(arch)?;
    let out = Command::new(ptxas)
        .arg("-v")
        .arg(format!("-arch={arch}"))
        .arg(ptx)
        .arg("-o")
        .arg(ptx.with_extension("cubin"))
        .output()
        .map_err(|source| Error::Spawn {
            program: ptxas.display().to_string(),
            source,
        })?;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if !out.status.success() {
        return Err(Error::Step {
            step: format!("ptxas -arch={arch} {}", ptx.display()),
            status: out.status,
            stderr,
        });
    }
    Ok(parse_ptxas(&stderr))
}

/// Parse `ptxas -v` output into one row per entry function.
pub fn parse_ptxas(text: &str) -> Vec<KernelResources> {
    let mut rows: Vec<KernelResources> = Vec::new();
    let num_before = |line: &str, unit: &str| -> u32 {
        let i = match line.find(unit) {
            Some(i) => i,
            None => return 0,
        };
        line[..i]
            .split(|c: char| !c.is_ascii_digit())
            .rfind(|s| !s.is_empty())
            .and_then(|s| s.parse().ok())
            .unwrap_or(0)
    };
    for line in text.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            let name = rest.split('\'').next().unwrap_or("").to_string();
            rows.push(KernelResources {
                name,
                ..Default::default()
            });
        } else if let Some(row) = rows.last_mut() {
            if line.contains("bytes stack frame") {
                row.stack_bytes = num_before(line, "bytes stack frame");
                row.spill_store_bytes = num_before(line, "bytes spill stores");
                row.spill_load_bytes = num_before(line, "bytes spill loads");
            } else if line.contains("Used") && line.contains("registers") {
                row.registers = num_before(line, "registers");
                row.shared_bytes = num_before(line, "bytes smem");
            }
        }
    }
    rows
}

/// A fixed-width text table of [`KernelResources`].
pub fn format_table(rows: &[KernelResources]) -> String {
    let w = rows.iter().map(|r| r.name.len()).max().unwrap_or(6).max(6);
    let mut s = format!(
        "{:<w$}  {:>9}  {:>10}  {:>11}  {:>11}  {:>10}\n",
        "kernel", "registers", "smem bytes", "stack bytes", "spill st B", "spill ld B"
    );
    for r in rows {
        let _ = writeln!(
            s,
            "{:<w$}  {:>9}  {:>10}  {:>11}  {:>11}  {:>10}",
            r.name,
            r.registers,
            r.shared_bytes,
            r.stack_bytes,
            r.spill_store_bytes,
            r.spill_load_bytes
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arch_validation() {
        assert!(check_arch("sm_80").is_ok());
        assert!(check_arch("sm_90a").is_ok());
        assert!(check_arch("sm_8").is_err());
        assert!(check_arch("compute_80").is_err());
        assert!(check_arch("").is_err());
    }

    #[test]
    fn parses_ptxas_verbose_output() {
        let text = "ptxas info    : 0 bytes gmem\n\
ptxas info    : Compiling entry function 'reduce_sum_f32' for 'sm_80'\n\
ptxas info    : Function properties for reduce_sum_f32\n\
    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n\
ptxas info    : Used 24 registers, used 1 barriers, 132 bytes smem, 392 bytes cmem[0]\n\
ptxas info    : Compiling entry function 'other' for 'sm_80'\n\
ptxas info    : Function properties for other\n\
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n\
ptxas info    : Used 10 registers, used 0 barriers, 372 bytes cmem[0]\n";
        let rows = parse_ptxas(text);
        assert_eq!(rows.len(), 2);
        assert_eq!(
            rows[0],
            KernelResources {
                name: "reduce_sum_f32".into(),
                registers: 24,
                shared_bytes: 132,
                stack_bytes: 8,
                spill_store_bytes: 4,
                spill_load_bytes: 12
            }
        );
        assert_eq!(rows[1].registers, 10);
        assert_eq!(rows[1].shared_bytes, 0);
        assert!(format_table(&rows).contains("reduce_sum_f32"));
    }

    #[test]
    fn finds_entries() {
        let ptx =
            ".visible .entry reduce_sum_f32(\n.param .u64 a\n)\n.visible .entry k2()\n.func f()";
        assert_eq!(entry_names(ptx), vec!["reduce_sum_f32", "k2"]);
    }
}

/// Blocks per SM that ptxas must leave room for in the production scan kernels: the
/// build-time experiment knob `GPU_REDUCE_SCAN_MIN_BLOCKS` (unset or 0: no hint, the default).
pub fn scan_min_blocks() -> u32 {
    std::env::var("GPU_REDUCE_SCAN_MIN_BLOCKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// With `min_blocks > 0`, adds `.maxntid <SCAN_BLOCK>, 1, 1` and `.minnctapersm <min_blocks>`
/// to the production scans' entries (`scan_inclusive_*`, `scan_exclusive_*`): CUDA's
/// `__launch_bounds__`, which Rust has no attribute for. ptxas then caps the registers so that
/// many blocks fit on an SM (spilling if it must). `SCAN_BLOCK` comes from
/// `GPU_REDUCE_SCAN_BLOCK` (default 256), as in the kernels crate.
pub fn scan_occupancy_hints(ptx: &str, min_blocks: u32) -> String {
    if min_blocks == 0 {
        return ptx.to_string();
    }
    let threads: u32 = std::env::var("GPU_REDUCE_SCAN_BLOCK")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    let mut out = String::with_capacity(ptx.len() + 4096);
    let mut in_scan_entry = false;
    for line in ptx.lines() {
        if let Some(rest) = line.split(".entry ").nth(1) {
            in_scan_entry =
                rest.starts_with("scan_inclusive_") || rest.starts_with("scan_exclusive_");
        }
        out.push_str(line);
        out.push('\n');
        // The parameter list ends with a line that starts with ')'; the body follows.
        if in_scan_entry && line.starts_with(')') {
            out.push_str(&format!(
                ".maxntid {threads}, 1, 1\n.minnctapersm {min_blocks}\n"
            ));
            in_scan_entry = false;
        }
    }
    out
}

#[cfg(test)]
mod hint_tests {
    use super::*;

    #[test]
    fn hints_go_after_the_scan_entries_parameters_only() {
        let ptx = ".visible .entry scan_inclusive_sum_i32(\n\t.param .u64 a\n)\n{\n}\n\
                   .visible .entry reduce_sum_f32(\n\t.param .u64 a\n)\n{\n}\n";
        assert_eq!(scan_occupancy_hints(ptx, 0), ptx);
        let h = scan_occupancy_hints(ptx, 2);
        assert_eq!(h.matches(".minnctapersm 2").count(), 1, "{h}");
        let at = h.find(".minnctapersm").unwrap();
        assert!(h.find("scan_inclusive_sum_i32").unwrap() < at);
        assert!(at < h.find("reduce_sum_f32").unwrap());
        assert!(
            h.contains(")\n.maxntid 256, 1, 1\n.minnctapersm 2\n{"),
            "{h}"
        );
    }
}
