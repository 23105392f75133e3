//! [`PtxBuild`]: the wrapper package, the device build, llvm-link/llc, the split, SASS.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::ptxas::{assemble, find_ptxas};
use crate::split::{compact_module, split_modules};
use crate::toolchain::{self, rustup_run};
use crate::{Error, PINNED_TOOLCHAIN, PTX_DIR_ENV, TARGET, check_arch};

mod files;
#[cfg(test)]
mod tests;
mod wrapper;

pub(crate) use files::write_if_changed;
use files::{file_identity, mkdir, read, remove_stale, rename, run, tmp_path};
use wrapper::{parse_manifest, wrapper_lib, wrapper_manifest};

/// Options for the PTX build of one kernel crate; see the [crate] docs for the pipeline.
#[derive(Debug, Clone)]
pub struct PtxBuild {
    crate_dir: PathBuf,
    package: String,
    crate_name: String,
    arch: String,
    target_dir: PathBuf,
    features: Vec<String>,
    default_features: bool,
    toolchain: String,
    sass: Vec<String>,
}

/// One kernel's standalone PTX module (and cubins, when SASS was asked for).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PtxModule {
    /// The entry (kernel) name.
    pub entry: String,
    /// `<target_dir>/<arch>/<crate>/modules/<entry>.ptx`.
    pub path: PathBuf,
    /// `(arch, <entry>.<arch>.cubin)` for each architecture of [`PtxBuild::sass`].
    pub cubins: Vec<(String, PathBuf)>,
}

/// The result of a successful [`PtxBuild::build`].
#[derive(Debug, Clone)]
pub struct PtxArtifact {
    /// The whole module, every entry in one PTX: `<target_dir>/<arch>/<crate>.ptx`.
    pub ptx_path: PathBuf,
    /// The architecture it was generated for.
    pub arch: String,
    /// The kernel crate's library name (`-` replaced by `_`).
    pub crate_name: String,
    /// Names of the `.entry` functions, in PTX order.
    pub entries: Vec<String>,
    /// One module per entry, in PTX order.
    pub modules: Vec<PtxModule>,
}

impl PtxBuild {
    /// A build of the kernel crate in `crate_dir` (the directory of its `Cargo.toml`) for
    /// `arch` (`sm_NN`). Reads the crate's name from its manifest.
    ///
    /// The target directory defaults to `$OUT_DIR/ptx` when `OUT_DIR` is set (a build script),
    /// else to `target/ptx` under the current directory; see [`PtxBuild::target_dir`].
    pub fn new(crate_dir: impl Into<PathBuf>, arch: &str) -> Result<Self, Error> {
        check_arch(arch)?;
        let crate_dir = crate_dir.into();
        let crate_dir = crate_dir.canonicalize().map_err(|source| Error::Io {
            path: crate_dir.clone(),
            source,
        })?;
        let manifest_path = crate_dir.join("Cargo.toml");
        let text = read(&manifest_path)?;
        let manifest = parse_manifest(&text).ok_or_else(|| Error::Manifest {
            path: manifest_path.clone(),
            message: "no `name = \"...\"` in its [package] section".into(),
        })?;
        let crate_name = manifest
            .lib_name
            .unwrap_or_else(|| manifest.package.replace('-', "_"));
        let target_dir = match std::env::var_os("OUT_DIR") {
            Some(out) if !out.is_empty() => PathBuf::from(out).join("ptx"),
            _ => std::env::current_dir()
                .unwrap_or_default()
                .join("target")
                .join("ptx"),
        };
        Ok(Self {
            crate_dir,
            package: manifest.package,
            crate_name,
            arch: arch.to_string(),
            target_dir,
            features: Vec::new(),
            default_features: true,
            toolchain: PINNED_TOOLCHAIN.to_string(),
            sass: Vec::new(),
        })
    }

    /// Where the wrapper package, cargo's device build and the PTX go. Use a directory of
    /// its own, not the outer build's target directory: a build script runs while the outer
    /// cargo holds that one's lock.
    pub fn target_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.target_dir = dir.into();
        self
    }

    /// Cargo features of the kernel crate to enable.
    pub fn features(mut self, features: &[&str]) -> Self {
        self.features = features.iter().map(|f| f.to_string()).collect();
        self
    }

    /// Build the kernel crate without its default features.
    pub fn no_default_features(mut self) -> Self {
        self.default_features = false;
        self
    }

    /// The rustup toolchain that compiles the kernels (default [`PINNED_TOOLCHAIN`]).
    pub fn toolchain(mut self, toolchain: &str) -> Self {
        self.toolchain = toolchain.to_string();
        self
    }

    /// Also assemble each module to SASS with `ptxas` for these architectures
    /// (`<entry>.<arch>.cubin` next to the module). `ptxas` comes from [`find_ptxas`]; none
    /// found is an error. Cubins newer than their module and than `ptxas` are kept.
    pub fn sass(mut self, archs: &[&str]) -> Self {
        self.sass = archs.iter().map(|a| a.to_string()).collect();
        self
    }

    /// The kernel crate's library name (`-` replaced by `_`).
    pub fn crate_name(&self) -> &str {
        &self.crate_name
    }

    /// The architecture the PTX is generated for.
    pub fn arch(&self) -> &str {
        &self.arch
    }

    /// Where [`PtxBuild::build`] writes the whole module: `<target_dir>/<arch>/<crate>.ptx`.
    pub fn ptx_path(&self) -> PathBuf {
        self.arch_dir().join(format!("{}.ptx", self.crate_name))
    }

    /// Where [`PtxBuild::build`] writes the per-entry modules:
    /// `<target_dir>/<arch>/<crate>/modules`.
    pub fn modules_dir(&self) -> PathBuf {
        self.arch_dir().join(&self.crate_name).join("modules")
    }

    fn arch_dir(&self) -> PathBuf {
        self.target_dir.join(&self.arch)
    }

    fn wrapper_dir(&self) -> PathBuf {
        self.target_dir.join(format!("wrapper-{}", self.crate_name))
    }

    /// The wrapper's package and library name.
    fn wrapper_name(&self) -> String {
        format!("ptx_wrapper_{}", self.crate_name)
    }

    /// Build the kernel crate to PTX, split it per entry and, if asked, assemble SASS.
    ///
    /// Cargo's fingerprints make a rebuild with no change cheap; llvm-link and llc run again
    /// only when the bitcode changed. With `GPU_REDUCE_PTX_DIR` set nothing is compiled: the
    /// whole module comes from `<dir>/<crate>.ptx` (an error if it is missing or was generated
    /// for another architecture).
    pub fn build(&self) -> Result<PtxArtifact, Error> {
        let prebuilt = std::env::var_os(PTX_DIR_ENV).filter(|d| !d.is_empty());
        self.build_from(prebuilt.as_deref().map(Path::new))
    }

    /// [`PtxBuild::build`], with the prebuilt PTX directory given rather than read from the
    /// environment.
    pub(crate) fn build_from(&self, prebuilt: Option<&Path>) -> Result<PtxArtifact, Error> {
        for a in &self.sass {
            check_arch(a)?;
        }
        let ptxas = if self.sass.is_empty() {
            None
        } else {
            Some(find_ptxas()?.ok_or_else(|| {
                Error::Missing(
                    "SASS was asked for but ptxas was not found: set PTXAS or put ptxas on PATH"
                        .into(),
                )
            })?)
        };
        mkdir(&self.arch_dir())?;
        let ptx_path = self.ptx_path();
        let text = match prebuilt {
            Some(dir) => {
                let text = self.read_prebuilt(dir)?;
                let _ = std::fs::remove_file(self.stamp_path());
                write_if_changed(&ptx_path, text.as_bytes())?;
                text
            }
            None => {
                self.compile()?;
                read(&ptx_path)?
            }
        };

        let split = split_modules(&text)?;
        if split.is_empty() {
            return Err(Error::Missing(format!(
                "{} has no .entry function: were the kernels compiled out (features)?",
                ptx_path.display()
            )));
        }
        let dir = self.modules_dir();
        mkdir(&dir)?;
        let mut keep = std::collections::HashSet::new();
        let mut modules = Vec::with_capacity(split.len());
        for (entry, module) in &split {
            let path = dir.join(format!("{entry}.ptx"));
            write_if_changed(&path, compact_module(module).as_bytes())?;
            keep.insert(path.clone());
            let cubins: Vec<(String, PathBuf)> = self
                .sass
                .iter()
                .map(|a| (a.clone(), dir.join(format!("{entry}.{a}.cubin"))))
                .collect();
            keep.extend(cubins.iter().map(|(_, p)| p.clone()));
            modules.push(PtxModule {
                entry: entry.clone(),
                path,
                cubins,
            });
        }
        remove_stale(&dir, &keep);
        if let Some(ptxas) = ptxas {
            assemble_all(&ptxas, &modules)?;
        }
        Ok(PtxArtifact {
            ptx_path,
            arch: self.arch.clone(),
            crate_name: self.crate_name.clone(),
            entries: split.into_iter().map(|(e, _)| e).collect(),
            modules,
        })
    }

    fn read_prebuilt(&self, dir: &Path) -> Result<String, Error> {
        let path = dir.join(format!("{}.ptx", self.crate_name));
        if !path.is_file() {
            return Err(Error::PrebuiltMissing { path });
        }
        let text = read(&path)?;
        let found = ptx_target(&text).unwrap_or("none").to_string();
        if found != self.arch {
            return Err(Error::PrebuiltArch {
                path,
                found,
                wanted: self.arch.clone(),
            });
        }
        Ok(text)
    }

    fn stamp_path(&self) -> PathBuf {
        self.arch_dir().join(format!("{}.stamp", self.crate_name))
    }

    /// Steps 1-4 of the pipeline: toolchain check, wrapper, cargo, llvm-link and llc.
    fn compile(&self) -> Result<(), Error> {
        let tc = toolchain::probe(&self.toolchain)?;
        self.write_wrapper()?;
        let arch_dir = self.arch_dir();
        let bc = arch_dir.join(format!("{}.bc", self.crate_name));
        let linked = arch_dir.join(format!("{}.linked.bc", self.crate_name));
        let ptx = self.ptx_path();

        let mut cmd = rustup_run(&tc.rustup, &tc.name, "cargo");
        cmd.current_dir(self.wrapper_dir())
            .arg("rustc")
            .arg("--manifest-path")
            .arg(self.wrapper_dir().join("Cargo.toml"))
            .args(["--lib", "--profile", "ptx", "--target", TARGET])
            .args(["-Zbuild-std=core", "--quiet", "--target-dir"])
            .arg(self.cargo_dir())
            .arg("--")
            .arg(format!("--emit=llvm-bc={}", bc.display()))
            // One target-cpu for every crate, `core` included: mixing CPUs breaks the LTO
            // link. A higher full-unroll threshold: kernels keep per-thread arrays (a scan
            // tile's rows) in registers only when the loops over them unroll; LLVM's default
            // (300) leaves the larger row loops rolled and the arrays in local memory.
            .env(
                "CARGO_ENCODED_RUSTFLAGS",
                format!(
                    "-Ctarget-cpu={}\x1f-Cllvm-args=-unroll-threshold=2000",
                    self.arch
                ),
            );
        let step = format!(
            "cargo rustc ({}, {TARGET}, toolchain {})",
            self.crate_name, tc.name
        );
        run(&mut cmd, &step)?;
        if !bc.exists() {
            // Cargo thought the wrapper fresh but the bitcode was deleted: forget its
            // fingerprint so rustc runs again.
            self.forget_fingerprint();
            run(&mut cmd, &step)?;
        }
        if !bc.exists() {
            return Err(Error::Missing(format!(
                "rustc did not write the bitcode {}",
                bc.display()
            )));
        }

        // llc takes seconds on a large crate: skip it when the bitcode is the one the PTX was
        // made from.
        let stamp = format!(
            "{}\n{}\n{}\n",
            file_identity(&bc)?,
            self.arch,
            tc.tools_dir.display()
        );
        if ptx.is_file() && std::fs::read_to_string(self.stamp_path()).ok() == Some(stamp.clone()) {
            return Ok(());
        }
        let _ = std::fs::remove_file(self.stamp_path());
        run(
            Command::new(tc.tools_dir.join("llvm-link"))
                .arg(&bc)
                .arg("-o")
                .arg(&linked),
            "llvm-link",
        )?;
        let tmp = tmp_path(&ptx);
        run(
            Command::new(tc.tools_dir.join("llc"))
                .args(["-O3", "-mtriple", TARGET])
                .arg(format!("-mcpu={}", self.arch))
                .arg(&linked)
                .arg("-o")
                .arg(&tmp),
            "llc",
        )?;
        rename(&tmp, &ptx)?;
        write_if_changed(&self.stamp_path(), stamp.as_bytes())?;
        Ok(())
    }

    fn cargo_dir(&self) -> PathBuf {
        self.target_dir.join("cargo")
    }

    /// Write the wrapper package (rewriting a file only when its content changes, which keeps
    /// cargo's fingerprints) and seed its `Cargo.lock`.
    fn write_wrapper(&self) -> Result<(), Error> {
        let dir = self.wrapper_dir();
        mkdir(&dir)?;
        let manifest = wrapper_manifest(
            &self.wrapper_name(),
            &self.package,
            &self.crate_dir,
            &self.features,
            self.default_features,
        );
        write_if_changed(&dir.join("Cargo.toml"), manifest.as_bytes())?;
        write_if_changed(
            &dir.join("lib.rs"),
            wrapper_lib(&self.crate_name).as_bytes(),
        )?;
        let lock = dir.join("Cargo.lock");
        if !lock.exists()
            && let Some(seed) = self
                .crate_dir
                .ancestors()
                .map(|d| d.join("Cargo.lock"))
                .find(|p| p.is_file())
        {
            std::fs::copy(&seed, &lock).map_err(|source| Error::Io { path: lock, source })?;
        }
        Ok(())
    }

    /// Delete cargo's fingerprints of the wrapper (both the `.fingerprint/<name>-<hash>`
    /// layout and the newer `build/<name>/<hash>/fingerprint` one).
    fn forget_fingerprint(&self) {
        fn walk(dir: &Path, name: &str) {
            let Ok(entries) = std::fs::read_dir(dir) else {
                return;
            };
            for e in entries.flatten() {
                let p = e.path();
                if !p.is_dir() {
                    continue;
                }
                let file = e.file_name().to_string_lossy().into_owned();
                let in_wrapper = p
                    .parent()
                    .and_then(Path::parent)
                    .and_then(Path::file_name)
                    .is_some_and(|n| n == name);
                let old_layout = file
                    .strip_prefix(name)
                    .and_then(|r| r.strip_prefix('-'))
                    .is_some_and(|h| !h.is_empty() && h.bytes().all(|b| b.is_ascii_hexdigit()));
                if (file == "fingerprint" && in_wrapper) || old_layout {
                    let _ = std::fs::remove_dir_all(&p);
                } else {
                    walk(&p, name);
                }
            }
        }
        walk(&self.cargo_dir(), &self.wrapper_name());
    }
}

/// The `.target` architecture of a PTX text.
fn ptx_target(ptx: &str) -> Option<&str> {
    ptx.lines()
        .find_map(|l| l.trim_start().strip_prefix(".target"))
        .and_then(|rest| rest.split([',', ' ', '\t']).find(|s| !s.is_empty()))
}

/// `(entry, arch)` jobs over `available_parallelism` threads; the first error wins.
fn assemble_all(ptxas: &Path, modules: &[PtxModule]) -> Result<(), Error> {
    let ptxas_time = std::fs::metadata(ptxas).and_then(|m| m.modified()).ok();
    let jobs: Vec<(&Path, &str, &Path)> = modules
        .iter()
        .flat_map(|m| {
            m.cubins
                .iter()
                .map(move |(a, c)| (m.path.as_path(), a.as_str(), c.as_path()))
        })
        .filter(|(ptx, _, cubin)| {
            // Up to date: newer than both its module and ptxas.
            let time = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
            let fresh = match (time(cubin), time(ptx)) {
                (Some(c), Some(p)) => c >= p && ptxas_time.is_none_or(|t| c >= t),
                _ => false,
            };
            !fresh
        })
        .collect();
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(jobs.len().max(1));
    let next = AtomicUsize::new(0);
    let first_error: Mutex<Option<Error>> = Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&(ptx, arch, cubin)) = jobs.get(i) else {
                        break;
                    };
                    let tmp = tmp_path(cubin);
                    let r =
                        assemble(ptxas, ptx, arch, &tmp, false).and_then(|_| rename(&tmp, cubin));
                    if let Err(e) = r {
                        let _ = std::fs::remove_file(&tmp);
                        first_error.lock().unwrap().get_or_insert(e);
                        next.store(jobs.len(), Ordering::Relaxed);
                        break;
                    }
                }
            });
        }
    });
    match first_error.into_inner().unwrap() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
