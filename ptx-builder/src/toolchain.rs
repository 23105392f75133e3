//! Finding rustup and checking the pinned toolchain before any cargo run.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::Error;

/// Variables of the outer build that must not reach the inner (device) build: cargo's and a
/// build script's environment, compiler wrappers and flags, toolchain overrides.
const OUTER_VARS: &[&str] = &[
    "RUSTC",
    "RUSTDOC",
    "RUSTC_WRAPPER",
    "RUSTC_WORKSPACE_WRAPPER",
    "RUSTFLAGS",
    "RUSTDOCFLAGS",
    "RUSTUP_TOOLCHAIN",
    "RUSTC_BOOTSTRAP",
    "OUT_DIR",
    "TARGET",
    "HOST",
    "NUM_JOBS",
    "OPT_LEVEL",
    "PROFILE",
    "DEBUG",
    "RUSTC_LINKER",
    "MAKEFLAGS",
    "MFLAGS",
];

/// `CARGO_*` variables that configure cargo itself (where it lives, how it reaches registries,
/// how it prints) rather than describe the outer build: these are kept.
const KEPT_CARGO_PREFIXES: &[&str] = &[
    "CARGO_NET_",
    "CARGO_HTTP_",
    "CARGO_REGISTRIES_",
    "CARGO_REGISTRY_",
    "CARGO_TERM_",
];

/// Whether the inner build must not inherit the variable `name` from the outer build.
pub(crate) fn is_outer_var(name: &str) -> bool {
    if OUTER_VARS.contains(&name) || name.starts_with("__CARGO") {
        return true;
    }
    if let Some(rest) = name.strip_prefix("CARGO") {
        if name == "CARGO_HOME" {
            return false;
        }
        // `CARGO` itself and every `CARGO_*` but the kept families.
        return (rest.is_empty() || rest.starts_with('_'))
            && !KEPT_CARGO_PREFIXES.iter().any(|p| name.starts_with(p));
    }
    false
}

/// A command for `rustup run <toolchain> <program>`, with the outer build's environment
/// removed and rustup told not to install anything on its own.
pub(crate) fn rustup_run(rustup: &Path, toolchain: &str, program: &str) -> Command {
    let mut cmd = Command::new(rustup);
    for (k, _) in std::env::vars_os() {
        if let Some(name) = k.to_str()
            && is_outer_var(name)
        {
            cmd.env_remove(&k);
        }
    }
    cmd.env("RUSTUP_AUTO_INSTALL", "0")
        .args(["run", toolchain, program]);
    cmd
}

/// The rustup binary: `$RUSTUP`, else `rustup` on `PATH`, else `$CARGO_HOME/bin/rustup`, else
/// `~/.cargo/bin/rustup`.
pub(crate) fn find_rustup() -> Option<PathBuf> {
    let exe = format!("rustup{}", std::env::consts::EXE_SUFFIX);
    if let Some(p) = std::env::var_os("RUSTUP").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join(&exe));
    let home = |var: &str, sub: &[&str]| {
        std::env::var_os(var).filter(|v| !v.is_empty()).map(|v| {
            sub.iter()
                .fold(PathBuf::from(v), |p, s| p.join(s))
                .join(&exe)
        })
    };
    on_path
        .chain(home("CARGO_HOME", &["bin"]))
        .chain(home("HOME", &[".cargo", "bin"]))
        .chain(home("USERPROFILE", &[".cargo", "bin"]))
        .find(|p| p.is_file())
}

/// What was observed about a toolchain, in the order it is checked.
#[derive(Debug)]
pub(crate) enum Observed {
    /// No rustup binary was found.
    NoRustup,
    /// `rustup run <toolchain> rustc -vV` failed, with this stderr.
    RunFailed(String),
    /// The toolchain runs; which of the needed components it has.
    Runs { has_rust_src: bool, has_llc: bool },
}

/// The one error that tells the user how to fix `observed`, or `None` when the toolchain is
/// usable.
pub(crate) fn diagnose(toolchain: &str, observed: &Observed) -> Option<Error> {
    match observed {
        Observed::NoRustup => Some(Error::NoRustup),
        Observed::RunFailed(stderr) => {
            let not_installed =
                stderr.contains("not installed") || stderr.contains("invalid toolchain name");
            Some(if not_installed {
                Error::ToolchainNotInstalled {
                    toolchain: toolchain.to_string(),
                }
            } else {
                Error::ToolchainUnusable {
                    toolchain: toolchain.to_string(),
                    stderr: stderr.trim().to_string(),
                }
            })
        }
        Observed::Runs {
            has_rust_src,
            has_llc,
        } => {
            let mut missing = Vec::new();
            if !has_rust_src {
                missing.push("rust-src");
            }
            if !has_llc {
                missing.push("llvm-tools");
            }
            let missing = match missing[..] {
                [] => return None,
                [one] => format!("the {one} component"),
                _ => format!("the {} components", missing.join(" and ")),
            };
            Some(Error::ComponentMissing {
                toolchain: toolchain.to_string(),
                missing,
            })
        }
    }
}

/// A checked toolchain: where rustup is, and the directory of its `llvm-link` and `llc`.
#[derive(Debug, Clone)]
pub(crate) struct Toolchain {
    pub rustup: PathBuf,
    pub name: String,
    pub tools_dir: PathBuf,
}

/// Check, before any cargo run, that rustup exists, that `toolchain` is installed and that it
/// has the `rust-src` and `llvm-tools` components.
pub(crate) fn probe(toolchain: &str) -> Result<Toolchain, Error> {
    let Some(rustup) = find_rustup() else {
        return Err(diagnose(toolchain, &Observed::NoRustup).expect("an error"));
    };
    let capture = |args: &[&str]| -> Result<Result<String, String>, Error> {
        let out = rustup_run(&rustup, toolchain, "rustc")
            .args(args)
            .output()
            .map_err(|source| {
                if source.kind() == std::io::ErrorKind::NotFound {
                    Error::NoRustup
                } else {
                    Error::Spawn {
                        program: rustup.display().to_string(),
                        source,
                    }
                }
            })?;
        Ok(if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        })
    };
    let version = match capture(&["-vV"])? {
        Ok(v) => v,
        Err(stderr) => {
            return Err(diagnose(toolchain, &Observed::RunFailed(stderr)).expect("an error"));
        }
    };
    let host = version
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .map(|h| h.trim().to_string())
        .ok_or_else(|| {
            Error::Missing(format!(
                "`rustup run {toolchain} rustc -vV` printed no host triple"
            ))
        })?;
    let sysroot = match capture(&["--print", "sysroot"])? {
        Ok(s) => PathBuf::from(s.trim()),
        Err(stderr) => {
            return Err(diagnose(toolchain, &Observed::RunFailed(stderr)).expect("an error"));
        }
    };
    let rustlib = sysroot.join("lib").join("rustlib");
    let tools_dir = rustlib.join(&host).join("bin");
    let llc = tools_dir.join(format!("llc{}", std::env::consts::EXE_SUFFIX));
    let observed = Observed::Runs {
        has_rust_src: rustlib.join("src").join("rust").join("library").is_dir(),
        has_llc: llc.is_file(),
    };
    if let Some(e) = diagnose(toolchain, &observed) {
        return Err(e);
    }
    Ok(Toolchain {
        rustup,
        name: toolchain.to_string(),
        tools_dir,
    })
}

/// `<sysroot>/lib/rustlib/<host>/bin` of `toolchain`, where rustup's `llvm-tools` component
/// puts `llvm-link` and `llc`. Checks first, through rustup, that the toolchain is installed
/// with the `rust-src` and `llvm-tools` components; the error names the command that fixes it.
pub fn llvm_tools_dir(toolchain: &str) -> Result<PathBuf, Error> {
    probe(toolchain).map(|t| t.tools_dir)
}

/// The program name of a command, for error messages.
pub(crate) fn program_name(cmd: &Command) -> String {
    let program: OsString = cmd.get_program().to_owned();
    program.to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outer_environment_is_dropped_but_cargo_settings_kept() {
        for v in [
            "CARGO",
            "CARGO_MANIFEST_DIR",
            "CARGO_PKG_NAME",
            "CARGO_TARGET_DIR",
            "CARGO_ENCODED_RUSTFLAGS",
            "CARGO_BUILD_TARGET",
            "CARGO_PROFILE_RELEASE_LTO",
            "CARGO_MAKEFLAGS",
            "CARGO_CFG_TARGET_OS",
            "CARGO_FEATURE_STD",
            "__CARGO_FIX_PLZ",
            "RUSTC",
            "RUSTC_WRAPPER",
            "RUSTUP_TOOLCHAIN",
            "OUT_DIR",
            "TARGET",
            "MAKEFLAGS",
        ] {
            assert!(is_outer_var(v), "{v} should be removed");
        }
        for v in [
            "CARGO_HOME",
            "CARGO_NET_OFFLINE",
            "CARGO_HTTP_PROXY",
            "CARGO_REGISTRIES_MINE_INDEX",
            "CARGO_REGISTRY_TOKEN",
            "CARGO_TERM_COLOR",
            "CARGOX",
            "PATH",
            "HOME",
            "RUSTUP_HOME",
            "PTXAS",
            "GPU_REDUCE_SCAN_BLOCK",
        ] {
            assert!(!is_outer_var(v), "{v} should be kept");
        }
    }

    #[test]
    fn each_observation_maps_to_one_fixing_command() {
        let tc = crate::PINNED_TOOLCHAIN;
        let msg = |o: Observed| diagnose(tc, &o).map(|e| e.to_string());

        let no_rustup = msg(Observed::NoRustup).unwrap();
        assert!(no_rustup.contains("https://rustup.rs"), "{no_rustup}");
        assert!(no_rustup.contains("GPU_REDUCE_PTX_DIR"), "{no_rustup}");

        let not_installed = msg(Observed::RunFailed(format!(
            "error: toolchain '{tc}-x86_64-unknown-linux-gnu' is not installed\n"
        )))
        .unwrap();
        assert!(
            not_installed.contains(
                "rustup toolchain install nightly-2026-10-01 --profile minimal \
                 --component rust-src,llvm-tools"
            ),
            "{not_installed}"
        );

        let other = msg(Observed::RunFailed("error: something odd".into())).unwrap();
        assert!(other.contains("something odd"), "{other}");

        let add = "rustup component add rust-src llvm-tools --toolchain nightly-2026-10-01";
        for (src, llc, what) in [
            (false, true, "rust-src"),
            (true, false, "llvm-tools"),
            (false, false, "rust-src and llvm-tools"),
        ] {
            let m = msg(Observed::Runs {
                has_rust_src: src,
                has_llc: llc,
            })
            .unwrap();
            assert!(m.contains(add), "{m}");
            assert!(m.contains(what), "{m}");
        }
        assert!(
            msg(Observed::Runs {
                has_rust_src: true,
                has_llc: true
            })
            .is_none()
        );
    }

    #[test]
    fn a_bogus_toolchain_gives_the_install_command() {
        let bogus = "nightly-1999-01-01";
        match probe(bogus) {
            Err(Error::ToolchainNotInstalled { toolchain }) => {
                assert_eq!(toolchain, bogus);
                let e = Error::ToolchainNotInstalled { toolchain }.to_string();
                assert!(
                    e.contains(&format!("rustup toolchain install {bogus}")),
                    "{e}"
                );
            }
            Err(Error::NoRustup) => eprintln!("note: no rustup on this machine; test skipped"),
            other => panic!("expected ToolchainNotInstalled, got {other:?}"),
        }
    }

    #[test]
    fn rustup_is_found_where_the_environment_says() {
        // Only checks consistency: whatever is found exists (or was named by $RUSTUP).
        if let Some(p) = find_rustup()
            && std::env::var_os("RUSTUP").is_none()
        {
            assert!(p.is_file(), "{}", p.display());
        }
    }
}
