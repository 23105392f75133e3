//! PTX that travels inside a packaged crate, so that its users build it without the nightly.
//!
//! `cargo xtask package` writes `<package>/prebuilt/<crate>.ptx` (the whole module the builder
//! made) and `<crate>.stamp`, which records the architecture and a digest of the kernel
//! crate's `src/`. A build script ([`build_script_embed`](crate::build_script_embed)) uses that
//! PTX only when the stamp matches the kernel source it is given and the architecture it is
//! asked for; otherwise (the kernels changed, another `KERNELS_ARCH`) it compiles them as
//! usual. A checkout has no `prebuilt/`, so a path or git dependency compiles the kernels.

use std::path::{Path, PathBuf};

use crate::{Error, PINNED_TOOLCHAIN, PtxArtifact};

/// The directory of a package that holds its prebuilt PTX.
pub const PREBUILT_DIR: &str = "prebuilt";

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// A digest of every file under `<crate_dir>/src` (paths and contents, in path order):
/// `fnv1a64:<hex> (<n> files)`. The same on every platform and toolchain (the kernel sources
/// of a packaged crate are byte-for-byte those that were packaged).
pub fn source_digest(crate_dir: &Path) -> Result<String, Error> {
    fn walk(dir: &Path, rel: &str, out: &mut Vec<(String, PathBuf)>) -> Result<(), Error> {
        for e in std::fs::read_dir(dir).map_err(io(dir))? {
            let e = e.map_err(io(dir))?;
            let name = e.file_name().to_string_lossy().into_owned();
            let rel = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            if e.file_type().map_err(io(dir))?.is_dir() {
                walk(&e.path(), &rel, out)?;
            } else {
                out.push((rel, e.path()));
            }
        }
        Ok(())
    }
    let mut files = Vec::new();
    walk(&crate_dir.join("src"), "", &mut files)?;
    files.sort();
    let mut h = crate::Fnv::new();
    for (rel, path) in &files {
        let bytes = std::fs::read(path).map_err(io(path))?;
        h.feed(rel.as_bytes());
        h.feed(&[0]);
        h.feed(&(bytes.len() as u64).to_le_bytes());
        h.feed(&bytes);
    }
    Ok(format!(
        "fnv1a64:{:016x} ({} files)",
        h.finish(),
        files.len()
    ))
}

fn stamp_text(crate_name: &str, arch: &str, digest: &str) -> String {
    format!(
        "# Written by `cargo xtask package`: {crate_name}.ptx beside this file was compiled from\n\
         # the kernel sources of this digest; a build uses it only when they still match.\n\
         crate {crate_name}\narch {arch}\ntoolchain {PINNED_TOOLCHAIN}\nsource {digest}\n"
    )
}

/// Copy the whole-module PTX of `artifact` (built from the kernel crate at `crate_dir`) into
/// `dir` with its stamp. Returns the PTX file written.
pub fn write_prebuilt(
    artifact: &PtxArtifact,
    crate_dir: &Path,
    dir: &Path,
) -> Result<PathBuf, Error> {
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let ptx = dir.join(format!("{}.ptx", artifact.crate_name));
    std::fs::copy(&artifact.ptx_path, &ptx).map_err(io(&ptx))?;
    let stamp = dir.join(format!("{}.stamp", artifact.crate_name));
    let text = stamp_text(
        &artifact.crate_name,
        &artifact.arch,
        &source_digest(crate_dir)?,
    );
    std::fs::write(&stamp, text).map_err(io(&stamp))?;
    Ok(ptx)
}

/// Whether `dir` holds prebuilt PTX of crate `crate_name` for `arch`, compiled from the sources
/// now at `crate_dir`.
pub fn check_prebuilt(
    dir: &Path,
    crate_name: &str,
    crate_dir: &Path,
    arch: &str,
) -> Result<Prebuilt, Error> {
    let stamp = dir.join(format!("{crate_name}.stamp"));
    if !stamp.is_file() || !dir.join(format!("{crate_name}.ptx")).is_file() {
        return Ok(Prebuilt::Absent);
    }
    let text = std::fs::read_to_string(&stamp).map_err(io(&stamp))?;
    let field = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(k)?.strip_prefix(' '))
            .unwrap_or("")
            .to_string()
    };
    if field("arch") != arch {
        return Ok(Prebuilt::Stale(format!(
            "it targets {}, not the requested {arch}",
            field("arch")
        )));
    }
    let digest = source_digest(crate_dir)?;
    if field("source") != digest {
        return Ok(Prebuilt::Stale(format!(
            "the kernel sources at {} differ from those it was compiled from",
            crate_dir.display()
        )));
    }
    Ok(Prebuilt::Matches)
}

/// What [`check_prebuilt`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Prebuilt {
    /// No prebuilt PTX (a checkout, or a crate packaged without it).
    Absent,
    /// Prebuilt PTX of the requested architecture, compiled from the sources given.
    Matches,
    /// Prebuilt PTX that cannot be used, and why.
    Stale(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prebuilt_is_used_only_for_the_same_sources_and_arch() {
        let root =
            std::env::temp_dir().join(format!("ptx-builder-prebuilt-{}", std::process::id()));
        let krate = root.join("k");
        std::fs::create_dir_all(krate.join("src/gpu")).unwrap();
        std::fs::write(krate.join("src/lib.rs"), "mod gpu;").unwrap();
        std::fs::write(krate.join("src/gpu/mod.rs"), "// a").unwrap();
        let whole = root.join("k.ptx");
        std::fs::write(&whole, ".version 8.0\n.target sm_80\n").unwrap();
        let art = PtxArtifact {
            ptx_path: whole,
            arch: "sm_80".into(),
            crate_name: "k".into(),
            entries: Vec::new(),
            modules: Vec::new(),
        };
        let dir = root.join("pkg/prebuilt");
        assert_eq!(
            check_prebuilt(&dir, "k", &krate, "sm_80").unwrap(),
            Prebuilt::Absent
        );
        write_prebuilt(&art, &krate, &dir).unwrap();
        assert_eq!(
            check_prebuilt(&dir, "k", &krate, "sm_80").unwrap(),
            Prebuilt::Matches
        );
        assert!(
            matches!(check_prebuilt(&dir, "k", &krate, "sm_90").unwrap(), Prebuilt::Stale(w) if w.contains("sm_90"))
        );
        std::fs::write(krate.join("src/gpu/mod.rs"), "// b").unwrap();
        assert!(
            matches!(check_prebuilt(&dir, "k", &krate, "sm_80").unwrap(), Prebuilt::Stale(w) if w.contains("differ"))
        );
        // A file renamed with the same bytes is another source too.
        std::fs::write(krate.join("src/gpu/mod.rs"), "// a").unwrap();
        assert_eq!(
            check_prebuilt(&dir, "k", &krate, "sm_80").unwrap(),
            Prebuilt::Matches
        );
        std::fs::rename(krate.join("src/gpu/mod.rs"), krate.join("src/gpu/other.rs")).unwrap();
        assert!(matches!(
            check_prebuilt(&dir, "k", &krate, "sm_80").unwrap(),
            Prebuilt::Stale(_)
        ));
        let _ = std::fs::remove_dir_all(&root);
    }
}
