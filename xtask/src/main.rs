//! `cargo xtask <command>`: the project's automation, in Rust so it runs wherever cargo does.
//!
//! - `build-ptx [--arch sm_NN]`: build the kernels to PTX (target/ptx/<arch>/kernels.ptx) and,
//!   when ptxas is found (`PTXAS` or PATH), assemble it and print the per-kernel resource table.
//! - `test [--gpu]`: the PTX build and ptxas check, then every workspace test. GPU tests are
//!   `#[ignore]`d (listed as ignored); `--gpu` runs them when a CUDA device is present and
//!   reports them SKIPPED, never passed, when none is.
//! - `bundle [--arch sm_NN] [--out DIR]`: host binary + GPU test binaries + PTX + run.sh, for a
//!   GPU machine that has the driver but no Rust toolchain.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use clap::{Parser, Subcommand};
use ptx_builder::{DEFAULT_ARCH, PtxBuild};

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
    },
    /// Run the test suite (PTX build, ptxas check, unit and integration tests).
    Test {
        /// Also run the GPU tests (skipped, visibly, when no CUDA device is present).
        #[arg(long)]
        gpu: bool,
    },
    /// Pack binaries, PTX and run.sh into a folder that runs on a GPU machine without Rust.
    Bundle {
        #[arg(long, default_value = "sm_90")]
        arch: String,
        #[arg(long, default_value = "bundle")]
        out: PathBuf,
    },
}

type Res<T> = Result<T, String>;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let root = workspace_root();
    let r = match cli.cmd {
        Cmd::BuildPtx { arch } => build_ptx(&root, &arch).map(|_| ()),
        Cmd::Test { gpu } => test(&root, gpu),
        Cmd::Bundle { arch, out } => bundle(&root, &arch, &root.join(out)),
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

/// Build the PTX; assemble it with ptxas when available. Returns the PTX path.
fn build_ptx(root: &Path, arch: &str) -> Res<PathBuf> {
    let art = PtxBuild::new(root, arch)
        .and_then(|b| b.build())
        .map_err(|e| e.to_string())?;
    println!(
        "PTX ({}): {} — {} kernel(s): {}",
        art.arch,
        art.ptx_path.display(),
        art.entries.len(),
        art.entries.join(", ")
    );
    match ptx_builder::find_ptxas().map_err(|e| e.to_string())? {
        Some(ptxas) => {
            let rows = ptx_builder::ptxas_report(&ptxas, &art.ptx_path, arch)
                .map_err(|e| format!("the PTX does not assemble: {e}"))?;
            println!(
                "ptxas ({}) -arch={arch}: assembled\n{}",
                ptxas.display(),
                ptx_builder::format_table(&rows)
            );
        }
        None => println!("ptxas not found (set PTXAS or put it on PATH): assembly check SKIPPED"),
    }
    Ok(art.ptx_path)
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
    build_ptx(root, DEFAULT_ARCH)?;
    println!("== cargo test --workspace (GPU tests are listed as ignored)");
    status(
        cargo().current_dir(root).args(["test", "--workspace"]),
        "cargo test",
    )?;
    if gpu {
        println!("== GPU tests");
        if gpu_present(root) {
            status(
                cargo().current_dir(root).args([
                    "test",
                    "-p",
                    "integration-tests",
                    "--",
                    "--ignored",
                    "--test-threads=1",
                ]),
                "GPU tests",
            )?;
        } else {
            println!(
                "GPU tests: SKIPPED — no CUDA driver or device on this machine (not run, not passed)"
            );
        }
    }
    Ok(())
}

/// A CUDA device is usable: `host info` succeeds and lists at least one.
fn gpu_present(root: &Path) -> bool {
    let out = cargo()
        .current_dir(root)
        .args(["run", "--quiet", "-p", "host", "--", "info"])
        .output();
    match out {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout)
            .lines()
            .any(|l| l.starts_with("CUDA devices: ") && l.trim_end() != "CUDA devices: 0"),
        _ => false,
    }
}

fn bundle(root: &Path, arch: &str, out: &Path) -> Res<()> {
    ptx_builder::check_arch(arch).map_err(|e| e.to_string())?;
    let ptx = build_ptx(root, arch)?;
    let bin = out.join("bin");
    if out.exists() {
        std::fs::remove_dir_all(out).map_err(|e| format!("cleaning {}: {e}", out.display()))?;
    }
    std::fs::create_dir_all(&bin).map_err(|e| e.to_string())?;

    status(
        cargo().current_dir(root).env("KERNELS_ARCH", arch).args([
            "build",
            "--release",
            "-p",
            "host",
            "--bin",
            "host",
        ]),
        "cargo build host",
    )?;
    copy(&root.join("target/release/host"), &bin.join("host"))?;

    // GPU test binaries: ask cargo where it put them.
    let o = cargo()
        .current_dir(root)
        .env("KERNELS_ARCH", arch)
        .args([
            "test",
            "--release",
            "-p",
            "integration-tests",
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
        // Integration-test binaries only (kind "test"); the library's unit tests need no GPU.
        let is_test_target = v["target"]["kind"]
            .as_array()
            .is_some_and(|k| k.iter().any(|x| x == "test"));
        if v["reason"] == "compiler-artifact"
            && is_test_target
            && let Some(exe) = v["executable"].as_str()
        {
            let name = v["target"]["name"].as_str().unwrap_or("tests").to_string();
            let dst = bin.join(format!("test-{name}"));
            copy(Path::new(exe), &dst)?;
            tests.push(dst);
        }
    }
    if tests.is_empty() {
        return Err("cargo built no GPU test binary".into());
    }
    copy(&ptx, &out.join("kernels.ptx"))?;
    let run_sh = out.join("run.sh");
    std::fs::write(&run_sh, RUN_SH).map_err(|e| e.to_string())?;
    set_executable(&run_sh)?;
    println!(
        "bundle: {} ({} test binaries, PTX {arch}); run it with `bash {}/run.sh`",
        out.display(),
        tests.len(),
        out.display()
    );
    Ok(())
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
