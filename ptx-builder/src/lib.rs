//! Builds a `no_std` kernel crate into PTX, one module per kernel, from any build: a build
//! script of a crate on the stable toolchain, `cargo xtask build-ptx`, a crate outside the
//! workspace.
//!
//! # Pipeline
//!
//! 1. **Toolchain check.** The device build needs nightly (`-Zbuild-std`, the `ptx-kernel` ABI)
//!    with the `rust-src` and `llvm-tools` components. [`PtxBuild::build`] checks, through
//!    rustup, that the toolchain ([`PINNED_TOOLCHAIN`] unless told otherwise) is installed with
//!    both, before running cargo, and fails with one error naming the command that fixes it.
//! 2. **Wrapper package.** In `<target_dir>/wrapper-<crate>/` a generated package with its own
//!    `[workspace]` depends on the kernel crate by path and is a `staticlib`: linking a
//!    staticlib makes fat LTO merge the kernels and the parts of `core` they use into one
//!    bitcode module that keeps every `#[no_mangle]` kernel. Its own workspace makes the build
//!    independent of whatever workspace the kernel crate (or the caller) lives in; its
//!    `Cargo.lock` is seeded from the nearest one above the kernel crate, so a build inside a
//!    workspace resolves the same versions and works offline.
//! 3. **Device build.** `rustup run <toolchain> cargo rustc` builds the wrapper for
//!    [`TARGET`] with `-Zbuild-std=core`, a `ptx` profile (fat LTO, one codegen unit,
//!    `panic = "abort"`) and `--emit=llvm-bc`. The outer build's environment (cargo's
//!    variables, `RUSTC`, `RUSTFLAGS`, wrappers, ...) is removed, so any outer toolchain works.
//!    `-Ctarget-cpu=<arch>` goes to every crate, `core` included (mixed CPUs break the LTO
//!    link), with a higher unroll threshold (kernels keep per-thread arrays in registers only
//!    when the loops over them unroll).
//! 4. **Code generation.** `llvm-link` and `llc` from the toolchain's `llvm-tools` turn the
//!    bitcode into one PTX module, `<target_dir>/<arch>/<crate>.ptx`.
//! 5. **Split.** [`split_modules`] cuts it into one standalone module per entry,
//!    `<target_dir>/<arch>/<crate>/modules/<entry>.ptx`: the driver JIT-compiles a whole module
//!    when it is loaded, so a host that loads kernels lazily, one module each, pays for the
//!    kernels it uses only (BENCHMARKS.md, Start-up (first call) and binary size).
//! 6. **SASS (optional).** With [`PtxBuild::sass`], `ptxas` assembles each module into a cubin
//!    per architecture, so the driver has nothing to JIT on those GPUs.
//!
//! With `GPU_REDUCE_PTX_DIR` set, steps 1-4 are skipped: the whole-module PTX is read from
//! `<dir>/<crate>.ptx`, for machines without rustup or the nightly. That file is what
//! `cargo xtask build-ptx` (or any build) writes as `<target_dir>/<arch>/<crate>.ptx`, so
//! `GPU_REDUCE_PTX_DIR=<workspace>/target/ptx/sm_80` reuses a workspace build.
//!
//! The kernel crate needs what any `no_std` staticlib for `nvptx64` needs: a `#[panic_handler]`
//! (on `target_arch = "nvptx64"`) and its kernels as `#[unsafe(no_mangle)] extern "ptx-kernel"`
//! functions.
//!
//! A build script uses it as
//!
//! ```no_run
//! # fn main() -> Result<(), ptx_builder::Error> {
//! let kernels = std::path::Path::new("../kernels");
//! ptx_builder::emit_rerun_if_changed(kernels);
//! let artifact = ptx_builder::PtxBuild::new(kernels, ptx_builder::DEFAULT_ARCH)?.build()?;
//! let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").unwrap());
//! ptx_builder::write_embed_index(&artifact, &out.join("kernels_index.rs"))?;
//! # Ok(())
//! # }
//! ```
//!
//! and the crate embeds the modules with
//! `static KERNELS: &[(&str, &str, &[(&str, &[u8])])] = include!(concat!(env!("OUT_DIR"), "/kernels_index.rs"));`.
//!
//! When `ptxas` is available ([`find_ptxas`]) [`ptxas_report`] assembles a PTX for an arch and
//! parses the per-kernel resource table.
#![warn(missing_docs)]

use std::path::PathBuf;

mod builder;
mod embed;
mod prebuilt;
mod ptxas;
mod split;
mod toolchain;

pub use builder::{PtxArtifact, PtxBuild, PtxModule};
pub use embed::{build_script_embed, emit_rerun_if_changed, write_embed_index};
pub use prebuilt::{PREBUILT_DIR, Prebuilt, check_prebuilt, source_digest, write_prebuilt};
pub use ptxas::{KernelResources, find_ptxas, format_table, parse_ptxas, ptxas_report};
pub use split::{compact_module, entry_names, split_modules};
pub use toolchain::llvm_tools_dir;

/// The toolchain that compiles the kernels; the workspace's `rust-toolchain.toml` pins the same.
pub const PINNED_TOOLCHAIN: &str = "nightly-2026-10-01";
/// Default GPU architecture: sm_80 PTX runs on A100, H100, H200 and newer through the driver's
/// JIT compiler.
pub const DEFAULT_ARCH: &str = "sm_80";
/// The LLVM target triple of the kernels.
pub const TARGET: &str = "nvptx64-nvidia-cuda";
/// When set, [`PtxBuild::build`] compiles nothing and reads `<dir>/<crate>.ptx` instead.
pub const PTX_DIR_ENV: &str = "GPU_REDUCE_PTX_DIR";

/// What can go wrong while building or checking PTX.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An architecture that is not `sm_NN`.
    #[error("invalid GPU architecture `{0}`: expected sm_NN, e.g. sm_80 or sm_90")]
    BadArch(String),
    /// A program could not be started.
    #[error("could not run `{program}`: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// Why.
        source: std::io::Error,
    },
    /// A step of the build ran and failed.
    #[error("`{step}` failed ({status}):\n{stderr}")]
    Step {
        /// The step, as a command line or a description.
        step: String,
        /// Its exit status.
        status: std::process::ExitStatus,
        /// What it wrote on stderr.
        stderr: String,
    },
    /// Something expected is missing.
    #[error("{0}")]
    Missing(String),
    /// A file system operation failed.
    #[error("I/O error on {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The kernel crate's `Cargo.toml` could not be understood.
    #[error("{path}: {message}")]
    Manifest {
        /// The manifest.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// No rustup binary was found.
    #[error(
        "rustup was not found ($RUSTUP, PATH, $CARGO_HOME/bin, ~/.cargo/bin): compiling the \
         kernels to PTX needs rustup and the toolchain {PINNED_TOOLCHAIN}. Install rustup from \
         https://rustup.rs, or set {PTX_DIR_ENV} to a directory holding prebuilt PTX (the \
         `<crate>.ptx` files that `cargo xtask build-ptx` writes) to compile nothing"
    )]
    NoRustup,
    /// The toolchain that compiles the kernels is not installed.
    #[error(
        "the Rust toolchain `{toolchain}` that compiles the kernels to PTX is not installed; \
         install it with `rustup toolchain install {toolchain} --profile minimal --component \
         rust-src,llvm-tools`"
    )]
    ToolchainNotInstalled {
        /// The toolchain.
        toolchain: String,
    },
    /// `rustup run <toolchain> rustc` failed for another reason than a missing toolchain.
    #[error(
        "`rustup run {toolchain} rustc` failed:\n{stderr}\n(if the toolchain is missing: \
         `rustup toolchain install {toolchain} --profile minimal --component rust-src,llvm-tools`)"
    )]
    ToolchainUnusable {
        /// The toolchain.
        toolchain: String,
        /// What rustup wrote on stderr.
        stderr: String,
    },
    /// The toolchain lacks `rust-src` (for `-Zbuild-std`) or `llvm-tools` (`llvm-link`, `llc`).
    #[error(
        "the Rust toolchain `{toolchain}` lacks {missing} (needed to compile the kernels to \
         PTX); add it with `rustup component add rust-src llvm-tools --toolchain {toolchain}`"
    )]
    ComponentMissing {
        /// The toolchain.
        toolchain: String,
        /// What is missing: "the rust-src component", "the llvm-tools component" or both.
        missing: String,
    },
    /// The PTX text does not have llc's shape, so it cannot be split per entry.
    #[error("unexpected PTX shape: {0}")]
    PtxShape(String),
    /// `GPU_REDUCE_PTX_DIR` is set but holds no PTX for the crate.
    #[error(
        "{PTX_DIR_ENV} is set but {} does not exist: put the whole-module PTX that `cargo \
         xtask build-ptx` writes there, or unset {PTX_DIR_ENV} to compile the kernels",
        path.display()
    )]
    PrebuiltMissing {
        /// The file that was looked for.
        path: PathBuf,
    },
    /// The prebuilt PTX targets another architecture than the requested one.
    #[error(
        "{} targets `{found}`, not the requested `{wanted}`: build it with `cargo xtask \
         build-ptx --arch {wanted}`",
        path.display()
    )]
    PrebuiltArch {
        /// The prebuilt PTX.
        path: PathBuf,
        /// Its `.target`.
        found: String,
        /// The requested architecture.
        wanted: String,
    },
}

/// `sm_NN` or `sm_NNa`, NN >= 50.
pub fn check_arch(arch: &str) -> Result<(), Error> {
    let digits = arch
        .strip_prefix("sm_")
        .map(|d| d.strip_suffix('a').unwrap_or(d))
        .unwrap_or("");
    match digits.parse::<u32>() {
        Ok(v) if (50..=200).contains(&v) && digits.bytes().all(|b| b.is_ascii_digit()) => Ok(()),
        _ => Err(Error::BadArch(arch.to_string())),
    }
}

/// FNV-1a, 64 bits: stable by definition (std's hashers may change between releases), enough to
/// tell an edited kernel source or module from another.
pub(crate) struct Fnv(u64);

impl Fnv {
    pub(crate) fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    pub(crate) fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x0100_0000_01b3);
        }
    }

    pub(crate) fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arch_validation() {
        assert!(check_arch("sm_80").is_ok());
        assert!(check_arch("sm_90a").is_ok());
        assert!(check_arch("sm_8").is_err());
        assert!(check_arch("sm_+80").is_err());
        assert!(check_arch("compute_80").is_err());
        assert!(check_arch("").is_err());
    }

    #[test]
    fn pinned_toolchain_matches_rust_toolchain_toml() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../rust-toolchain.toml");
        let Ok(text) = std::fs::read_to_string(&path) else {
            eprintln!(
                "note: {} is absent (packaged crate?): check skipped",
                path.display()
            );
            return;
        };
        let channel = text
            .lines()
            .filter_map(|l| l.split('#').next())
            .filter_map(|l| l.split_once('='))
            .find(|(k, _)| k.trim() == "channel")
            .map(|(_, v)| v.trim().trim_matches('"').to_string())
            .expect("rust-toolchain.toml has a channel");
        assert_eq!(channel, PINNED_TOOLCHAIN, "{}", path.display());
    }
}
