//! Running `ptxas`: resource reports and cubins.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{Error, check_arch};

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
    let exe = format!("ptxas{}", std::env::consts::EXE_SUFFIX);
    Ok(std::env::split_paths(&path)
        .map(|d| d.join(&exe))
        .find(|p| p.is_file()))
}

/// Per-kernel resources as ptxas reports them with `-v`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KernelResources {
    /// The entry function.
    pub name: String,
    /// Registers per thread.
    pub registers: u32,
    /// Static shared memory per block, in bytes.
    pub shared_bytes: u32,
    /// Stack frame per thread, in bytes.
    pub stack_bytes: u32,
    /// Bytes of register spill stores.
    pub spill_store_bytes: u32,
    /// Bytes of register spill loads.
    pub spill_load_bytes: u32,
}

/// Assemble `ptx` for `arch` with `ptxas -v` (the cubin goes next to it, `.cubin`) and parse
/// the per-kernel resource table. A PTX that does not assemble is an error.
pub fn ptxas_report(ptxas: &Path, ptx: &Path, arch: &str) -> Result<Vec<KernelResources>, Error> {
    let stderr = assemble(ptxas, ptx, arch, &ptx.with_extension("cubin"), true)?;
    Ok(parse_ptxas(&stderr))
}

/// `ptxas [-v] -arch=<arch> <ptx> -o <cubin>`; returns ptxas's stderr.
pub(crate) fn assemble(
    ptxas: &Path,
    ptx: &Path,
    arch: &str,
    cubin: &Path,
    verbose: bool,
) -> Result<String, Error> {
    check_arch(arch)?;
    let mut cmd = Command::new(ptxas);
    if verbose {
        cmd.arg("-v");
    }
    let out = cmd
        .arg(format!("-arch={arch}"))
        .arg(ptx)
        .arg("-o")
        .arg(cubin)
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
    Ok(stderr)
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
}
