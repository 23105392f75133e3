//! `cargo xtask <command>`: the project's automation, in Rust so it runs wherever cargo does.
//!
//! - `build-ptx [--arch sm_NN] [--out DIR]`: build the library's kernels, the tools' kernels
//!   and the user-operator example's (`examples/minmax/kernels`) to PTX (whole modules
//!   `target/ptx/<arch>/<crate>.ptx`, and one module per kernel beside them) and, when ptxas
//!   is found (`PTXAS` or PATH), assemble every per-kernel module (what the library loads) and
//!   print the resource table. `--out DIR` also copies the whole modules there: a directory
//!   for `GPU_REDUCE_PTX_DIR` on machines without the nightly.
//! - `test [--gpu]`: the PTX build and ptxas check, then every workspace test. GPU tests are
//!   `#[ignore]`d (listed as ignored); `--gpu` runs them when a CUDA device is present and
//!   reports them SKIPPED, never passed, when none is.
//! - `package`: the library's crates as published (`target/package/`), with their kernels' PTX
//!   inside so that users need no nightly, checked by building and running a user's crate
//!   against them with a rustup home holding only stable (see `package.rs`).
//! - `bundle [--arch sm_NN] [--out DIR]`: host binary + GPU test binaries (the integration
//!   tests' and the minmax example's) + the minmax example's binary + PTX + run.sh, for a GPU
//!   machine that has the driver but no Rust toolchain. `--cccl DIR` (or `$GPU_REDUCE_CCCL`)
//!   adds the CUB, Thrust and libcu++ headers of that CCCL checkout as `cccl/`, and run.sh's
//!   `host bench` then also times a CUB shim built from them (`CUB(cccl)`).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use clap::{Parser, Subcommand};

mod package;
use ptx_builder::{DEFAULT_ARCH, PtxArtifact, PtxBuild};

#[derive(Parser)]
#[command(name = "cargo xtask")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Build the kernels to PTX and, when ptxas is available, print its resource table.
    BuildPtx {
        #[arg(long, default_value = DEFAULT_ARCH)]
        arch: String,
        /// Also copy the whole-module PTX files here (for `GPU_REDUCE_PTX_DIR`).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Run the test suite (PTX build, ptxas check, unit and integration tests).
    Test {
        /// Also run the GPU tests (skipped, visibly, when no CUDA device is present).
        #[arg(long)]
        gpu: bool,
    },
    /// Package the library's crates with their kernels' PTX (`target/package/*.crate`), then
    /// build and run a user's crate against them with a rustup home that holds only stable.
    Package,
    /// Pack binaries, PTX and run.sh into a folder that runs on a GPU machine without Rust.
    Bundle {
        #[arg(long, default_value = "sm_90")]
        arch: String,
        #[arg(long, default_value = "bundle")]
        out: PathBuf,
        /// A CCCL checkout (github.com/NVIDIA/cccl) whose header trees (cub/cub, thrust/thrust,
        /// libcudacxx/include) go into the bundle as cccl/, for `host bench --cccl`.
        #[arg(long, env = "GPU_REDUCE_CCCL")]
        cccl: Option<PathBuf>,
    },
}

type Res<T> = Result<T, String>;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let root = workspace_root();
    let r = match cli.cmd {
        Cmd::BuildPtx { arch, out } => build_ptx(&root, &arch, out.as_deref()).map(|_| ()),
        Cmd::Test { gpu } => test(&root, gpu),
        Cmd::Package => package::package(&root),
        Cmd::Bundle { arch, out, cccl } => bundle(
            &root,
            &arch,
            &root.join(out),
            cccl.as_deref().filter(|d| !d.as_os_str().is_empty()),
        ),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask/ lives in the workspace")
        .to_path_buf()
}

/// The kernel crates, built to PTX: the library's, the tools' and the user-operator example's.
const KERNEL_CRATES: [&str; 3] = ["kernels", "tools/kernels", "examples/minmax/kernels"];

/// Build the PTX of the kernel crates; assemble every per-kernel module with ptxas when
/// available; copy the whole modules to `out` if given. Returns the library's artifact.
fn build_ptx(root: &Path, arch: &str, out: Option<&Path>) -> Res<PtxArtifact> {
    let mut library = None;
    for krate in KERNEL_CRATES {
        let art = PtxBuild::new(root.join(krate), arch)
            .map(|b| b.target_dir(root.join("target/ptx")))
            .and_then(|b| b.build())
            .map_err(|e| e.to_string())?;
        println!(
            "PTX ({}) of {krate}: {} — {} kernel(s), {} kB",
            art.arch,
            art.ptx_path.display(),
            art.entries.len(),
            std::fs::metadata(&art.ptx_path).map_or(0, |m| m.len() / 1000)
        );
        if let Some(dir) = out {
            std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
            let name = art
                .ptx_path
                .file_name()
                .ok_or("PTX path has no file name")?;
            copy(&art.ptx_path, &dir.join(name))?;
        }
        match ptx_builder::find_ptxas().map_err(|e| e.to_string())? {
            Some(ptxas) => {
                let rows = assemble_modules(&ptxas, &art, arch)?;
                println!(
                    "ptxas ({}) -arch={arch}: all {} per-kernel modules assembled\n{}",
                    ptxas.display(),
                    art.modules.len(),
                    ptx_builder::format_table(&rows)
                );
            }
            None => {
                println!("ptxas not found (set PTXAS or put it on PATH): assembly check SKIPPED")
            }
        }
        library.get_or_insert(art);
    }
    library.ok_or_else(|| "no kernel crate".into())
}

/// Assemble each per-kernel module (what the library loads), on every core.
fn assemble_modules(
    ptxas: &Path,
    art: &PtxArtifact,
    arch: &str,
) -> Res<Vec<ptx_builder::KernelResources>> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunks: Vec<_> = art
        .modules
        .chunks(art.modules.len().div_ceil(threads).max(1))
        .collect();
    let results: Vec<Res<Vec<_>>> = std::thread::scope(|s| {
        let handles: Vec<_> = chunks
            .iter()
            .map(|chunk| {
                s.spawn(move || {
                    let mut rows = Vec::new();
                    for m in *chunk {
                        rows.extend(ptx_builder::ptxas_report(ptxas, &m.path, arch).map_err(
                            |e| format!("the PTX module of {} does not assemble: {e}", m.entry),
                        )?);
                    }
                    Ok(rows)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("a ptxas thread panicked".into()))
            })
            .collect()
    });
    let mut rows = Vec::new();
    for r in results {
        rows.extend(r?);
    }
    Ok(rows)
}

fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

fn status(cmd: &mut Command, what: &str) -> Res<()> {
    let st = cmd.status().map_err(|e| format!("{what}: {e}"))?;
    if st.success() {
        Ok(())
    } else {
        Err(format!("{what} failed ({st})"))
    }
}

fn test(root: &Path, gpu: bool) -> Res<()> {
    println!("== PTX build and ptxas check");
    build_ptx(root, DEFAULT_ARCH, None)?;
    println!("== cargo test --workspace (GPU tests are listed as ignored)");
    let mut total = run_tests(
        cargo().current_dir(root).args(["test", "--workspace"]),
        "cargo test",
    )?;
    // Ignored tests are the GPU tests: skipped here, whether or not --gpu runs them below.
    total.skipped = total.ignored;
    if gpu {
        println!("== GPU tests");
        let gpus = gpu_count(root);
        if gpus > 0 {
            let mut args = vec![
                "test",
                "-p",
                "integration-tests",
                "-p",
                "minmax-example",
                "--",
                "--ignored",
                "--test-threads=1",
            ];
            if gpus < 2 {
                // Tests named *two_gpus need a second device.
                args.extend(["--skip", "two_gpus"]);
                println!(
                    "two-GPU tests: SKIPPED — {gpus} GPU on this machine (not run, not passed)"
                );
            }
            let gpu = run_tests(cargo().current_dir(root).args(args), "GPU tests")?;
            total.passed += gpu.passed;
            total.skipped = total.skipped.saturating_sub(gpu.passed);
        } else {
            println!(
                "GPU tests: SKIPPED — no CUDA driver or device on this machine (not run, not passed)"
            );
        }
    }
    println!(
        "summary: {} passed, 0 failed, {} skipped",
        total.passed, total.skipped
    );
    Ok(())
}

/// Counts summed over cargo's `test result:` lines.
#[derive(Default, Debug, Clone, Copy, PartialEq)]
struct Counts {
    passed: u64,
    failed: u64,
    ignored: u64,
    skipped: u64,
}

/// Add up one `test result: ok. 3 passed; 0 failed; 1 ignored; ...` line.
fn add_result_line(c: &mut Counts, line: &str) {
    let Some(rest) = line.trim().strip_prefix("test result: ") else {
        return;
    };
    for part in rest.split(['.', ';']) {
        let mut it = part.split_whitespace();
        if let (Some(num), Some(word)) = (it.next(), it.next()) {
            let Ok(num) = num.parse::<u64>() else {
                continue;
            };
            match word {
                "passed" => c.passed += num,
                "failed" => c.failed += num,
                "ignored" => c.ignored += num,
                _ => {}
            }
        }
    }
}

/// Run a `cargo test` command, echoing its output, and add up its results. Fails when the
/// command fails or any test failed.
fn run_tests(cmd: &mut Command, what: &str) -> Res<Counts> {
    use std::io::{BufRead, BufReader};
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("{what}: {e}"))?;
    let mut c = Counts::default();
    if let Some(out) = child.stdout.take() {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            println!("{line}");
            add_result_line(&mut c, &line);
        }
    }
    let st = child.wait().map_err(|e| format!("{what}: {e}"))?;
    if !st.success() || c.failed > 0 {
        return Err(format!("{what} failed ({st}, {} test(s) failed)", c.failed));
    }
    Ok(c)
}

/// A CUDA device is usable: `host info` succeeds and lists at least one.
/// CUDA devices on this machine, as `host info` reports them (0 without a driver).
fn gpu_count(root: &Path) -> usize {
    let out = cargo()
        .current_dir(root)
        .args(["run", "--quiet", "-p", "host", "--", "info"])
        .output();
    match out {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout)
            .lines()
            .find_map(|l| l.strip_prefix("CUDA devices: "))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0),
        _ => 0,
    }
}

fn bundle(root: &Path, arch: &str, out: &Path, cccl: Option<&Path>) -> Res<()> {
    ptx_builder::check_arch(arch).map_err(|e| e.to_string())?;
    // Checked before the long build, copied after it.
    let cccl_trees = cccl.map(cccl_header_trees).transpose()?;
    let bin = out.join("bin");
    if out.exists() {
        std::fs::remove_dir_all(out).map_err(|e| format!("cleaning {}: {e}", out.display()))?;
    }
    std::fs::create_dir_all(&bin).map_err(|e| e.to_string())?;
    build_ptx(root, arch, Some(&out.join("ptx")))?;

    status(
        cargo().current_dir(root).env("KERNELS_ARCH", arch).args([
            "build",
            "--release",
            "-p",
            "host",
            "--bin",
            "host",
            "-p",
            "minmax-example",
            "--bin",
            "minmax-example",
        ]),
        "cargo build host",
    )?;
    copy(&root.join("target/release/host"), &bin.join("host"))?;
    copy(
        &root.join("target/release/minmax-example"),
        &bin.join("minmax-example"),
    )?;

    // GPU test binaries: ask cargo where it put them.
    let o = cargo()
        .current_dir(root)
        .env("KERNELS_ARCH", arch)
        .args([
            "test",
            "--release",
            "-p",
            "integration-tests",
            "-p",
            "minmax-example",
            "--no-run",
            "--message-format=json",
        ])
        .output()
        .map_err(|e| e.to_string())?;
    if !o.status.success() {
        return Err(format!(
            "building the GPU tests failed:\n{}",
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    let mut tests = Vec::new();
    for line in String::from_utf8_lossy(&o.stdout).lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        // GPU integration-test binaries only (kind "test", named `gpu` or `*_gpu`): the
        // library's unit tests and the simulator's tests need no GPU (CI runs them), and each
        // binary adds ~6 MB to the archive.
        let is_test_target = v["target"]["kind"]
            .as_array()
            .is_some_and(|k| k.iter().any(|x| x == "test"));
        let name = v["target"]["name"].as_str().unwrap_or("tests").to_string();
        if v["reason"] == "compiler-artifact"
            && is_test_target
            && (name == "gpu" || name.ends_with("_gpu"))
            && let Some(exe) = v["executable"].as_str()
        {
            let dst = bin.join(format!("test-{name}"));
            copy(Path::new(exe), &dst)?;
            tests.push(dst);
        }
    }
    if tests.is_empty() {
        return Err("cargo built no GPU test binary".into());
    }
    // The CUB baseline is compiled on the GPU machine (nvcc is there, not here).
    std::fs::create_dir_all(out.join("cub")).map_err(|e| e.to_string())?;
    for f in ["cub_shim.cu", "build.sh"] {
        copy(
            &root.join("tools/cli/cub").join(f),
            &out.join("cub").join(f),
        )?;
    }
    let cccl_note = match (cccl, &cccl_trees) {
        (Some(src), Some(trees)) => format!(", {}", copy_cccl(src, trees, &out.join("cccl"))?),
        _ => String::new(),
    };
    // The speed guard's committed baselines (`STEPS=guard`).
    copy_tree(&root.join("docs/baseline"), &out.join("baseline"))?;
    let run_sh = out.join("run.sh");
    std::fs::write(&run_sh, RUN_SH).map_err(|e| e.to_string())?;
    set_executable(&run_sh)?;
    // The binaries' symbol tables are a tenth of their size and nothing on the GPU machine
    // reads them (a panic's message still names the test); skipped where `strip` is missing.
    let mut binaries = vec![bin.join("host"), bin.join("minmax-example")];
    binaries.extend(tests.iter().cloned());
    let stripped = Command::new("strip")
        .args(&binaries)
        .status()
        .is_ok_and(|s| s.success());
    // One compressed archive beside the folder. Every binary embeds the same ~6 MB of deflated
    // PTX, which no compressor shrinks; xz with a window wider than a binary stores it once
    // (gzip's 32 KB window stored it once a binary: ~100 MB), so the archive fits what a
    // device run can carry (64 MiB).
    let name = out
        .file_name()
        .ok_or_else(|| format!("{} has no file name", out.display()))?;
    let parent = out.parent().unwrap_or(Path::new("."));
    let archive = parent.join(format!("{}.tar.xz", name.to_string_lossy()));
    let status = Command::new("tar")
        .env("XZ_OPT", "-6 -T2 --lzma2=preset=6,dict=128MiB")
        .arg("-cJf")
        .arg(&archive)
        .arg("-C")
        .arg(parent)
        .arg(name)
        .status()
        .map_err(|e| format!("running tar: {e}"))?;
    if !status.success() {
        return Err(format!("tar failed to write {}", archive.display()));
    }
    println!(
        "bundle: {} ({} test binaries, PTX {arch}{cccl_note}{}); run it with `bash {}/run.sh`; \
         packed as {} ({} MB; `tar xJf` it on the GPU machine)",
        out.display(),
        tests.len(),
        if stripped { ", symbols stripped" } else { "" },
        out.display(),
        archive.display(),
        std::fs::metadata(&archive).map_or(0, |m| m.len()) / 1_000_000
    );
    Ok(())
}

/// The header trees of a CCCL source tree that nvcc needs for CUB (relative paths): a
/// GitHub checkout's `cub/cub`, `thrust/thrust` and `libcudacxx/include` (what
/// `host bench --cccl` finds first), or an installed CCCL's `include/{cub,thrust,cuda,nv}`.
fn cccl_header_trees(src: &Path) -> Res<Vec<&'static str>> {
    let has = |p: &str| src.join(p).is_file();
    if has("cub/cub/version.cuh")
        && has("thrust/thrust/version.h")
        && has("libcudacxx/include/cuda/std/version")
    {
        Ok(vec!["cub/cub", "thrust/thrust", "libcudacxx/include"])
    } else if has("include/cub/version.cuh")
        && has("include/thrust/version.h")
        && has("include/cuda/std/version")
    {
        Ok(vec![
            "include/cub",
            "include/thrust",
            "include/cuda",
            "include/nv",
        ])
    } else {
        Err(format!(
            "--cccl {}: not a CCCL checkout (no cub/cub/version.cuh, thrust/thrust/version.h \
             and libcudacxx/include/cuda/std/version, nor the same under include/)",
            src.display()
        ))
    }
}

/// Copy `trees` of the CCCL checkout `src` to `dst`, with its LICENSE, cccl-version.json and
/// the commit (a COMMIT file, else `git rev-parse HEAD`) when there are; returns a note for
/// the summary (CUB version, size).
fn copy_cccl(src: &Path, trees: &[&str], dst: &Path) -> Res<String> {
    let mut bytes = 0u64;
    for t in trees {
        bytes += copy_tree(&src.join(t), &dst.join(t))?;
    }
    for f in ["LICENSE", "cccl-version.json", "COMMIT"] {
        if src.join(f).is_file() {
            copy(&src.join(f), &dst.join(f))?;
        }
    }
    if !src.join("COMMIT").is_file() {
        let head = Command::new("git")
            .arg("-C")
            .arg(src)
            .args(["rev-parse", "HEAD"])
            .output();
        if let Ok(o) = head
            && o.status.success()
        {
            let text = format!("NVIDIA/cccl {}", String::from_utf8_lossy(&o.stdout));
            std::fs::write(dst.join("COMMIT"), text).map_err(|e| e.to_string())?;
        }
    }
    let version_h = ["cub/cub/version.cuh", "include/cub/version.cuh"]
        .map(|p| dst.join(p))
        .into_iter()
        .find(|p| p.is_file());
    let version = version_h
        .and_then(|p| std::fs::read_to_string(p).ok())
        .and_then(|text| {
            text.lines().find_map(|l| {
                let v = l.trim().strip_prefix("#define CUB_VERSION ")?;
                v.split_whitespace().next()?.parse::<u32>().ok()
            })
        })
        .map_or("CUB of unknown version".into(), |v| {
            format!("CUB {}.{}.{}", v / 100_000, v / 100 % 1000, v % 100)
        });
    Ok(format!(
        "CCCL headers from {} ({version}, {:.1} MB) as {}",
        src.display(),
        bytes as f64 / 1e6,
        dst.display()
    ))
}

/// Copy the directory `from` to `to` recursively; returns the bytes copied.
fn copy_tree(from: &Path, to: &Path) -> Res<u64> {
    std::fs::create_dir_all(to).map_err(|e| format!("creating {}: {e}", to.display()))?;
    let mut bytes = 0;
    let entries =
        std::fs::read_dir(from).map_err(|e| format!("reading {}: {e}", from.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("reading {}: {e}", from.display()))?;
        let path = entry.path();
        let dst = to.join(entry.file_name());
        if path.is_dir() {
            bytes += copy_tree(&path, &dst)?;
        } else {
            copy(&path, &dst)?;
            bytes += std::fs::metadata(&dst).map_or(0, |m| m.len());
        }
    }
    Ok(bytes)
}

fn copy(from: &Path, to: &Path) -> Res<()> {
    std::fs::copy(from, to)
        .map(|_| ())
        .map_err(|e| format!("copying {} to {}: {e}", from.display(), to.display()))
}

fn set_executable(p: &Path) -> Res<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).map_err(|e| e.to_string())
}

const RUN_SH: &str = include_str!("run.sh");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_cargo_result_lines() {
        let mut c = Counts::default();
        add_result_line(
            &mut c,
            "test result: ok. 6 passed; 0 failed; 2 ignored; 0 measured; 0 filtered out; finished in 0.00s",
        );
        add_result_line(
            &mut c,
            "test result: FAILED. 1 passed; 3 failed; 0 ignored; 0 measured",
        );
        add_result_line(&mut c, "running 5 tests");
        assert_eq!((c.passed, c.failed, c.ignored), (7, 3, 2));
    }
}
