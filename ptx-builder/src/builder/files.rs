//! File and process helpers of the build: errors that name the path or step, atomic and
//! change-only writes, stale-file removal.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::Error;
use crate::toolchain::program_name;

/// Remove the `.ptx` and `.cubin` files of `dir` that are not in `keep`: kernels that are
/// gone, architectures no longer asked for.
pub(super) fn remove_stale(dir: &Path, keep: &std::collections::HashSet<PathBuf>) {
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
pub(super) fn file_identity(path: &Path) -> Result<String, Error> {
    let m = std::fs::metadata(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(format!("{} {:?}", m.len(), m.modified().ok()))
}

pub(super) fn run(cmd: &mut Command, step: &str) -> Result<(), Error> {
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

pub(super) fn read(path: &Path) -> Result<String, Error> {
    std::fs::read_to_string(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })
}

pub(super) fn mkdir(dir: &Path) -> Result<(), Error> {
    std::fs::create_dir_all(dir).map_err(|source| Error::Io {
        path: dir.to_path_buf(),
        source,
    })
}

pub(super) fn rename(from: &Path, to: &Path) -> Result<(), Error> {
    std::fs::rename(from, to).map_err(|source| Error::Io {
        path: to.to_path_buf(),
        source,
    })
}

/// A temporary name next to `path`, unique to this process and thread.
pub(super) fn tmp_path(path: &Path) -> PathBuf {
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
