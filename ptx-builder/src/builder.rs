//! [`PtxBuild`]: the wrapper package, the device build, llvm-link/llc, the split, SASS.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::ptxas::{assemble, find_ptxas};
use crate::split::split_modules;
use crate::toolchain::{self, program_name, rustup_run};
use crate::{Error, PINNED_TOOLCHAIN, PTX_DIR_ENV, TARGET, check_arch};

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
    fn build_from(&self, prebuilt: Option<&Path>) -> Result<PtxArtifact, Error> {
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
            write_if_changed(&path, module.as_bytes())?;
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

/// What a build needs from a kernel crate's manifest.
#[derive(Debug, PartialEq, Eq)]
struct Manifest {
    package: String,
    lib_name: Option<String>,
}

/// A minimal reading of `Cargo.toml`: `name` in `[package]` and in `[lib]`.
fn parse_manifest(text: &str) -> Option<Manifest> {
    let mut section = String::new();
    let mut package = None;
    let mut lib_name = None;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            section = line
                .trim_start_matches('[')
                .split(']')
                .next()
                .unwrap_or("")
                .trim()
                .to_string();
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        if key.trim() != "name" {
            continue;
        }
        let value = value.trim();
        let Some(quote) = value.chars().next().filter(|c| *c == '"' || *c == '\'') else {
            continue;
        };
        let Some(name) = value[1..].split(quote).next() else {
            continue;
        };
        match section.as_str() {
            "package" => package = Some(name.to_string()),
            "lib" => lib_name = Some(name.to_string()),
            _ => {}
        }
    }
    Some(Manifest {
        package: package.filter(|p| !p.is_empty())?,
        lib_name: lib_name.filter(|l| !l.is_empty()),
    })
}

/// A TOML basic string.
fn toml_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The wrapper's `Cargo.toml`.
fn wrapper_manifest(
    name: &str,
    package: &str,
    crate_dir: &Path,
    features: &[String],
    default_features: bool,
) -> String {
    let features = features
        .iter()
        .map(|f| toml_str(f))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "# Generated by ptx-builder: links `{package}` into a staticlib so that fat LTO leaves one
# bitcode module holding its kernels. Its own [workspace] keeps it out of any other one.
[package]
name = {name}
version = \"0.0.0\"
edition = \"2021\"
publish = false

[lib]
path = \"lib.rs\"
crate-type = [\"staticlib\"]

[dependencies]
{dep} = {{ path = {path}, default-features = {default_features}, features = [{features}] }}

[workspace]

[profile.release]
panic = \"abort\"

[profile.ptx]
inherits = \"release\"
panic = \"abort\"
lto = \"fat\"
codegen-units = 1
debug = false
incremental = false
",
        name = toml_str(name),
        dep = toml_str(package),
        path = toml_str(&crate_dir.to_string_lossy()),
    )
}

/// The wrapper's `lib.rs`.
fn wrapper_lib(crate_name: &str) -> String {
    format!(
        "//! Generated by ptx-builder. Linking `{crate_name}` is enough: its `#[no_mangle]`
//! kernels are exported by the staticlib.
#![no_std]
extern crate {crate_name} as _;
"
    )
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

/// Remove the `.ptx` and `.cubin` files of `dir` that are not in `keep`: kernels that are
/// gone, architectures no longer asked for.
fn remove_stale(dir: &Path, keep: &std::collections::HashSet<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let ours = p.extension().is_some_and(|x| x == "ptx" || x == "cubin");
        if ours && p.is_file() && !keep.contains(&p) {
            let _ = std::fs::remove_file(&p);
        }
    }
}

/// Length and modification time: enough to tell that cargo rewrote the bitcode.
fn file_identity(path: &Path) -> Result<String, Error> {
    let m = std::fs::metadata(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(format!("{} {:?}", m.len(), m.modified().ok()))
}

fn run(cmd: &mut Command, step: &str) -> Result<(), Error> {
    let out = cmd.output().map_err(|source| Error::Spawn {
        program: program_name(cmd),
        source,
    })?;
    if !out.status.success() {
        let mut stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        stderr.push_str(&String::from_utf8_lossy(&out.stdout));
        return Err(Error::Step {
            step: step.to_string(),
            status: out.status,
            stderr,
        });
    }
    Ok(())
}

fn read(path: &Path) -> Result<String, Error> {
    std::fs::read_to_string(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })
}

fn mkdir(dir: &Path) -> Result<(), Error> {
    std::fs::create_dir_all(dir).map_err(|source| Error::Io {
        path: dir.to_path_buf(),
        source,
    })
}

fn rename(from: &Path, to: &Path) -> Result<(), Error> {
    std::fs::rename(from, to).map_err(|source| Error::Io {
        path: to.to_path_buf(),
        source,
    })
}

/// A temporary name next to `path`, unique to this process and thread.
fn tmp_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(
        ".tmp{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    path.with_file_name(name.to_string_lossy().replace(['(', ')'], ""))
}

/// Write `bytes` to `path` unless it already holds them (keeping its modification time, which
/// cargo's fingerprints and the cubins' freshness check look at). Atomic: a temporary file is
/// renamed over it.
pub(crate) fn write_if_changed(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    if std::fs::read(path).is_ok_and(|old| old == bytes) {
        return Ok(());
    }
    let tmp = tmp_path(path);
    std::fs::write(&tmp, bytes).map_err(|source| Error::Io {
        path: tmp.clone(),
        source,
    })?;
    rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("ptx-builder-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn reads_package_and_lib_names() {
        let m = parse_manifest(
            "[package]\nname = \"my-kernels\" # the crate\nversion.workspace = true\n\
             [dependencies]\nname = \"not-this\"\n",
        )
        .unwrap();
        assert_eq!(
            m,
            Manifest {
                package: "my-kernels".into(),
                lib_name: None
            }
        );
        let m = parse_manifest("[lib]\nname = 'dev'\n[ package ]\nname='k'\n").unwrap();
        assert_eq!(m.package, "k");
        assert_eq!(m.lib_name.as_deref(), Some("dev"));
        assert!(parse_manifest("[workspace]\nmembers = []\n").is_none());
    }

    #[test]
    fn new_reads_the_crate_name_and_lays_out_paths() {
        let dir = scratch("new");
        std::fs::write(
            dir.join("Cargo.toml"),
            "[package]\nname = \"tool-kernels\"\n",
        )
        .unwrap();
        let b = PtxBuild::new(&dir, "sm_90")
            .unwrap()
            .target_dir("/t/ptx")
            .features(&["a", "b"])
            .no_default_features()
            .toolchain("nightly-x")
            .sass(&["sm_90a"]);
        assert_eq!(b.crate_name(), "tool_kernels");
        assert_eq!(b.arch(), "sm_90");
        assert_eq!(b.ptx_path(), Path::new("/t/ptx/sm_90/tool_kernels.ptx"));
        assert_eq!(
            b.modules_dir(),
            Path::new("/t/ptx/sm_90/tool_kernels/modules")
        );
        assert_eq!(b.wrapper_dir(), Path::new("/t/ptx/wrapper-tool_kernels"));
        assert_eq!(b.features, ["a", "b"]);
        assert!(!b.default_features);
        assert_eq!(b.toolchain, "nightly-x");
        assert!(matches!(
            PtxBuild::new(&dir, "compute_80"),
            Err(Error::BadArch(_))
        ));
        assert!(matches!(
            PtxBuild::new(dir.join("nope"), "sm_80"),
            Err(Error::Io { .. })
        ));
        std::fs::write(dir.join("Cargo.toml"), "[workspace]\n").unwrap();
        assert!(matches!(
            PtxBuild::new(&dir, "sm_80"),
            Err(Error::Manifest { .. })
        ));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn wrapper_package_depends_on_the_crate_with_its_features() {
        let m = wrapper_manifest(
            "ptx_wrapper_k",
            "my-k",
            Path::new("/a \"b\"/k"),
            &["x".into(), "y/z".into()],
            false,
        );
        assert!(m.contains("\n[workspace]\n"), "{m}");
        assert!(m.contains("crate-type = [\"staticlib\"]"), "{m}");
        assert!(m.contains("path = \"lib.rs\""), "{m}");
        assert!(
            m.contains(
                "\"my-k\" = { path = \"/a \\\"b\\\"/k\", default-features = false, \
                 features = [\"x\", \"y/z\"] }"
            ),
            "{m}"
        );
        let profile = "[profile.ptx]\ninherits = \"release\"\npanic = \"abort\"\nlto = \"fat\"\n\
                       codegen-units = 1\ndebug = false\n";
        assert!(m.contains(profile), "{m}");
        let lib = wrapper_lib("my_k");
        assert!(
            lib.contains("#![no_std]\nextern crate my_k as _;\n"),
            "{lib}"
        );
    }

    #[test]
    fn writes_the_wrapper_once_and_seeds_the_lock() {
        let dir = scratch("wrapper");
        let krate = dir.join("ws").join("k");
        std::fs::create_dir_all(&krate).unwrap();
        std::fs::write(krate.join("Cargo.toml"), "[package]\nname = \"k\"\n").unwrap();
        std::fs::write(dir.join("ws").join("Cargo.lock"), "# lock\n").unwrap();
        let b = PtxBuild::new(&krate, "sm_80")
            .unwrap()
            .target_dir(dir.join("t"));
        b.write_wrapper().unwrap();
        let w = dir.join("t").join("wrapper-k");
        assert_eq!(
            std::fs::read_to_string(w.join("Cargo.lock")).unwrap(),
            "# lock\n"
        );
        let toml = w.join("Cargo.toml");
        let before = std::fs::metadata(&toml).unwrap().modified().unwrap();
        // An existing lock is left alone (cargo keeps it up to date); unchanged files too.
        std::fs::write(w.join("Cargo.lock"), "# trimmed\n").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        b.write_wrapper().unwrap();
        assert_eq!(
            std::fs::read_to_string(w.join("Cargo.lock")).unwrap(),
            "# trimmed\n"
        );
        assert_eq!(
            std::fs::metadata(&toml).unwrap().modified().unwrap(),
            before
        );
        let b = b.features(&["f"]);
        b.write_wrapper().unwrap();
        assert!(std::fs::read_to_string(&toml).unwrap().contains("\"f\""));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn forgets_the_wrappers_fingerprints_only() {
        let dir = scratch("fingerprint");
        std::fs::write(dir.join("Cargo.toml"), "[package]\nname = \"k\"\n").unwrap();
        let b = PtxBuild::new(&dir, "sm_80")
            .unwrap()
            .target_dir(dir.join("t"));
        let cargo = dir.join("t").join("cargo").join(TARGET).join("ptx");
        let gone = [
            cargo.join("build/ptx_wrapper_k/0123abcd/fingerprint"),
            cargo.join(".fingerprint/ptx_wrapper_k-0123abcd"),
        ];
        let kept = [
            cargo.join("build/ptx_wrapper_k/0123abcd/out"),
            cargo.join("build/k/0123abcd/fingerprint"),
            cargo.join(".fingerprint/ptx_wrapper_k2-0123abcd"),
            cargo.join(".fingerprint/k-0123abcd"),
        ];
        for d in gone.iter().chain(&kept) {
            std::fs::create_dir_all(d).unwrap();
        }
        b.forget_fingerprint();
        for d in &gone {
            assert!(!d.exists(), "{}", d.display());
        }
        for d in &kept {
            assert!(d.exists(), "{}", d.display());
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn synthetic_crate(name: &str) -> (PathBuf, PtxBuild) {
        let dir = scratch(name);
        std::fs::write(dir.join("Cargo.toml"), "[package]\nname = \"syn-k\"\n").unwrap();
        let b = PtxBuild::new(&dir, "sm_80")
            .unwrap()
            .target_dir(dir.join("t"));
        std::fs::create_dir_all(dir.join("pre")).unwrap();
        (dir, b)
    }

    #[test]
    fn prebuilt_ptx_is_split_like_a_fresh_build() {
        let (dir, b) = synthetic_crate("prebuilt");
        let pre = dir.join("pre");
        match b.build_from(Some(&pre)) {
            Err(e @ Error::PrebuiltMissing { .. }) => {
                assert!(e.to_string().contains("syn_k.ptx"), "{e}")
            }
            other => panic!("expected PrebuiltMissing, got {other:?}"),
        }
        std::fs::write(pre.join("syn_k.ptx"), crate::split::tests::PTX).unwrap();
        let art = b.build_from(Some(&pre)).unwrap();
        assert_eq!(art.entries, ["first", "second"]);
        assert_eq!(art.crate_name, "syn_k");
        assert_eq!(art.ptx_path, dir.join("t/sm_80/syn_k.ptx"));
        assert_eq!(
            std::fs::read_to_string(&art.ptx_path).unwrap(),
            crate::split::tests::PTX
        );
        let modules = dir.join("t/sm_80/syn_k/modules");
        for (m, e) in art.modules.iter().zip(["first", "second"]) {
            assert_eq!(m.entry, e);
            assert_eq!(m.path, modules.join(format!("{e}.ptx")));
            let text = std::fs::read_to_string(&m.path).unwrap();
            assert_eq!(crate::entry_names(&text), [e]);
            assert!(m.cubins.is_empty());
        }
        // A module of a kernel that is gone is removed.
        std::fs::write(modules.join("gone.ptx"), "").unwrap();
        b.build_from(Some(&pre)).unwrap();
        assert!(!modules.join("gone.ptx").exists());

        let b90 = PtxBuild::new(&dir, "sm_90")
            .unwrap()
            .target_dir(dir.join("t"));
        match b90.build_from(Some(&pre)) {
            Err(e @ Error::PrebuiltArch { .. }) => {
                let m = e.to_string();
                assert!(m.contains("`sm_80`") && m.contains("`sm_90`"), "{m}");
            }
            other => panic!("expected PrebuiltArch, got {other:?}"),
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn sass_assembles_every_module() {
        let Ok(Some(_)) = find_ptxas() else {
            eprintln!("note: no ptxas (set PTXAS): SASS test skipped");
            return;
        };
        let (dir, b) = synthetic_crate("sass");
        std::fs::write(dir.join("pre/syn_k.ptx"), crate::split::tests::PTX).unwrap();
        let b = b.sass(&["sm_80", "sm_90"]);
        let art = b.build_from(Some(&dir.join("pre"))).unwrap();
        for m in &art.modules {
            let archs: Vec<&str> = m.cubins.iter().map(|(a, _)| a.as_str()).collect();
            assert_eq!(archs, ["sm_80", "sm_90"]);
            for (a, c) in &m.cubins {
                assert_eq!(c, &m.path.with_file_name(format!("{}.{a}.cubin", m.entry)));
                assert!(std::fs::metadata(c).unwrap().len() > 0, "{}", c.display());
            }
        }
        // Fresh cubins are kept, not reassembled.
        let c = &art.modules[0].cubins[0].1;
        let t = std::fs::metadata(c).unwrap().modified().unwrap();
        b.build_from(Some(&dir.join("pre"))).unwrap();
        assert_eq!(std::fs::metadata(c).unwrap().modified().unwrap(), t);
        // Cubins of an architecture no longer asked for are removed.
        let b = b.sass(&["sm_90"]);
        b.build_from(Some(&dir.join("pre"))).unwrap();
        assert!(!c.exists());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The kernels crate of this workspace, if this is a checkout of it.
    fn workspace_kernels() -> Option<PathBuf> {
        let k = Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels");
        k.join("Cargo.toml").is_file().then_some(k)
    }

    /// The real build, through the wrapper and the pinned nightly (minutes when cold), into
    /// `$PTX_BUILDER_TEST_TARGET` (default: the system's temp dir). Run with
    /// `cargo test -p ptx-builder -- --ignored`.
    fn build_workspace_kernels() -> Option<PtxArtifact> {
        let Some(k) = workspace_kernels() else {
            eprintln!("note: no ../kernels crate: test skipped");
            return None;
        };
        let target = std::env::var_os("PTX_BUILDER_TEST_TARGET")
            .map(PathBuf::from)
            .unwrap_or_else(|| std::env::temp_dir().join("ptx-builder-test-target"));
        let b = PtxBuild::new(k, crate::DEFAULT_ARCH)
            .unwrap()
            .target_dir(target);
        Some(b.build_from(None).unwrap())
    }

    #[test]
    #[ignore = "compiles the workspace's kernels crate with the pinned nightly (minutes)"]
    fn builds_the_workspace_kernels() {
        let Some(art) = build_workspace_kernels() else {
            return;
        };
        let whole = std::fs::read_to_string(&art.ptx_path).unwrap();
        assert!(!art.entries.is_empty());
        assert_eq!(art.entries, crate::entry_names(&whole));
        assert_eq!(art.modules.len(), art.entries.len());
        for (m, e) in art.modules.iter().zip(&art.entries) {
            assert_eq!(&m.entry, e);
            let text = std::fs::read_to_string(&m.path).unwrap();
            assert_eq!(crate::entry_names(&text), [e.as_str()]);
        }
    }

    #[test]
    #[ignore = "compiles the workspace's kernels crate (minutes) and runs ptxas on every module"]
    fn every_module_of_the_workspace_kernels_assembles() {
        let ptxas = match find_ptxas() {
            Ok(Some(p)) if std::env::var_os("PTXAS").is_some() => p,
            _ => {
                eprintln!("note: PTXAS is not set: test skipped");
                return;
            }
        };
        let Some(art) = build_workspace_kernels() else {
            return;
        };
        let modules: Vec<PtxModule> = art
            .modules
            .iter()
            .map(|m| PtxModule {
                cubins: vec![(
                    art.arch.clone(),
                    std::env::temp_dir()
                        .join(format!("ptx-builder-test-{}-cubins", std::process::id()))
                        .join(format!("{}.cubin", m.entry)),
                )],
                ..m.clone()
            })
            .collect();
        std::fs::create_dir_all(modules[0].cubins[0].1.parent().unwrap()).unwrap();
        assemble_all(&ptxas, &modules).unwrap();
        for m in &modules {
            assert!(m.cubins[0].1.is_file(), "{}", m.entry);
        }
        let _ = std::fs::remove_dir_all(modules[0].cubins[0].1.parent().unwrap());
    }

    #[test]
    fn reads_the_ptx_target() {
        assert_eq!(ptx_target(".version 7.0\n.target sm_80\n"), Some("sm_80"));
        assert_eq!(ptx_target(".target sm_90a, debug\n"), Some("sm_90a"));
        assert_eq!(ptx_target(".version 7.0\n"), None);
    }
}
