//! The CLI's behaviour on bad input, on any machine: clap errors exit 2; missing driver, missing
//! device or a bad ordinal print a message and exit 1, never panic. And what it prints on the
//! simulator: labelled, no bandwidth, warnings for options that do not apply.

use std::process::Command;

fn host(args: &[&str]) -> (i32, String) {
    let (code, out, err) = host_split(args);
    (code, out + &err)
}

/// Exit code, stdout and stderr apart.
fn host_split(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_host"))
        .args(args)
        // No CUB shim from the environment: what is given is what the test gives.
        .env_remove("GPU_REDUCE_CUB_LIB")
        .env_remove("GPU_REDUCE_CCCL")
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The `warning:` lines of `stderr`.
fn warnings(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.starts_with("warning:"))
        .collect()
}

/// Why no GPU is usable here (the library's error for device 0), or `None` with a GPU.
fn no_gpu() -> Option<gpu_reduce::Error> {
    match gpu_reduce::device_count().expect("a driver that is present starts") {
        0 => Some(
            gpu_reduce::Context::new(0)
                .err()
                .expect("no device to open"),
        ),
        _ => None,
    }
}

#[test]
fn malformed_arguments_exit_2() {
    for args in [
        &["reduce", "--n", "abc"][..],
        &["reduce", "--iters", "0"],
        &["reduce", "--bogus"],
        &["no-such-command"],
        &["bench", "--sizes", "2^12..2^10"],
        &["bench", "--sizes", "0"],
        &["bench", "--ops", "sort"],
        &["bench", "--dtypes", "f8"],
    ] {
        let (code, text) = host(args);
        assert_eq!(code, 2, "{args:?}: {text}");
        assert!(text.contains("error"), "{args:?}: {text}");
    }
}

#[test]
fn missing_gpu_or_bad_device_is_a_clean_error() {
    // What this machine has decides which error is due; each branch asserts its own message.
    // Without a GPU the count is 0 either way; opening device 0 says whether a driver is there.
    let no_gpu = no_gpu();
    let (code, text, expect) = match &no_gpu {
        Some(gpu_reduce::Error::NoDriver) => {
            let (c, t) = host(&["reduce", "--n", "10", "--backend", "cuda"]);
            (c, t, "no CUDA driver")
        }
        Some(gpu_reduce::Error::NoDevice) => {
            let (c, t) = host(&["reduce", "--n", "10", "--backend", "cuda"]);
            (c, t, "found no GPU")
        }
        None => {
            let n = gpu_reduce::device_count().unwrap();
            let (c, t) = host(&["reduce", "--n", "10", "--device", &n.to_string()]);
            (c, t, "out of range")
        }
        Some(e) => panic!("unexpected driver state: {e}"),
    };
    assert_eq!(code, 1, "{text}");
    assert!(text.contains(expect), "{text}");
    assert!(!text.contains("panicked"), "{text}");
    if no_gpu.is_some() {
        // And where to go instead.
        assert!(text.contains("`--backend sim`"), "{text}");
        // --gpus on CUDA without a GPU: the same error, not "more GPUs than the 0 present".
        let (code, text) = host(&["reduce", "--gpus", "2", "--n", "10", "--backend", "cuda"]);
        assert_eq!(code, 1, "{text}");
        assert!(text.contains(expect), "{text}");
    }
}

#[test]
fn info_exits_0_and_names_the_simulator() {
    let (code, out, err) = host_split(&["info"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(warnings(&err).is_empty(), "{err}");
    assert!(out.contains("CPU simulator: available"), "{out}");
    assert!(out.contains("`--backend sim`"), "{out}");
    match no_gpu() {
        Some(why) => {
            // No device listed, and why none (no driver, or no GPU).
            assert!(out.contains("CUDA devices: 0\n"), "{out}");
            assert!(!out.contains("  [0]"), "{out}");
            assert!(out.contains(&format!("  none: {why}")), "{out}");
            // --verbose times nothing without a GPU, and still exits 0.
            let (code, out, err) = host_split(&["info", "--verbose"]);
            assert_eq!(code, 0, "{out}{err}");
            assert!(
                out.contains("first calls: not timed (no CUDA device)"),
                "{out}"
            );
        }
        None => {
            let n = gpu_reduce::device_count().unwrap();
            assert!(out.contains(&format!("CUDA devices: {n}\n")), "{out}");
            assert!(out.contains("  [0]"), "{out}");
        }
    }
    // --device is for --verbose.
    let (code, out, err) = host_split(&["info", "--device", "1"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        warnings(&err),
        ["warning: --device applies only with --verbose; ignored"],
        "{err}"
    );
}

#[test]
fn simulator_backend_runs_and_says_so() {
    let (code, text) = host(&["reduce", "--backend", "sim", "--n", "100000", "--seed", "1"]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("backend: sim"), "{text}");
    assert!(text.contains(": correct"), "{text}");
    assert!(
        text.contains("SIMULATED") && !text.contains("GB/s"),
        "{text}"
    );
}

#[test]
fn auto_backend_says_which_it_used() {
    let (code, text) = host(&["reduce", "--n", "5000", "--iters", "1"]);
    assert_eq!(code, 0, "{text}");
    let expect = match gpu_reduce::device_count() {
        Ok(n) if n > 0 => "backend: cuda",
        _ => "backend: sim",
    };
    assert!(text.contains(expect), "{text}");
}

#[test]
fn bench_on_the_simulator_writes_its_reports() {
    let dir = std::env::temp_dir().join(format!("gpu-reduce-cli-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = dir.to_str().unwrap();
    let (code, text) = host(&[
        "bench",
        "--backend",
        "sim",
        "--sizes",
        "2^10",
        "--dtypes",
        "i32",
        "--iters",
        "1",
        "--quiet",
        "--out",
        out,
    ]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("| scan | i32 | 2^10 |"), "{text}");
    let sweep = gpu_reduce_tools::bench::report::read_json(&dir.join("results.json")).unwrap();
    assert_eq!(sweep.machine.backend, "sim");
    assert!(sweep.all_checked() && !sweep.measurements.is_empty());
    for f in ["results.md", "reduce-i32-time.png", "scan-i32-time.svg"] {
        assert!(dir.join(f).metadata().unwrap().len() > 0, "{f}");
    }
    // The header names the simulator, not a compute capability or SM count of its own.
    let md = std::fs::read_to_string(dir.join("results.md")).unwrap();
    let header = md.lines().next().unwrap();
    assert!(
        header.starts_with("device: CPU SIMT simulator") && header.contains("· backend sim ·"),
        "{header}"
    );
    assert!(
        !header.contains("sm 0.0") && !header.contains("SMs") && !header.contains(" ,"),
        "{header}"
    );
    assert!(md.contains("1 timed run after"), "{md}");
    // Plot files are slugs of their titles: `reduce, back to back` (n <= 2^16 only).
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(
        names
            .iter()
            .any(|f| f == "reduce-back-to-back-i32-time.png"),
        "{names:?}"
    );
    for f in &names {
        assert!(
            f.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "-.".contains(c)),
            "{f}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bench_guard_saves_a_baseline_and_compares_on_the_simulator() {
    use gpu_reduce_tools::bench::guard::Baseline;
    let dir = std::env::temp_dir().join(format!("gpu-reduce-cli-guard-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (base, out) = (dir.join("base.json"), dir.join("out"));
    let (base, out) = (base.to_str().unwrap(), out.to_str().unwrap());
    let sim = ["bench", "--backend", "sim", "--quiet", "--out", out];
    let with = |extra: &[&str]| host(&[&sim[..], extra].concat());
    let (code, text) = with(&[
        "--sizes",
        "1000",
        "--dtypes",
        "i32",
        "--ops",
        "reduce",
        "--iters",
        "1",
        "--warmup",
        "0",
        "--repeat",
        "2",
        "--save-baseline",
        base,
    ]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("saved the baseline"), "{text}");
    let b = Baseline::read(base.as_ref()).unwrap();
    assert_eq!((b.repeat, b.config.sizes.as_slice()), (2, &[1000][..]));
    assert!(b.cells.iter().all(|c| c.runs == 2 && c.cell.n == 1000));
    assert!(b.cells.iter().any(|c| c.cell.op == "reduce"), "{b:?}");

    // The baseline's sweep again, twice as it was: every cell there and checked.
    let (code, text) = with(&["--compare", base]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("sweep 2 of 2") && text.contains("simulated"),
        "{text}"
    );
    let summary = format!(
        "guard: {} cells, 0 slower, 0 missing -> PASS",
        b.cells.len()
    );
    assert!(text.contains(&summary), "{text}");
    let md = std::fs::read_to_string(dir.join("out/guard.md")).unwrap();
    assert!(md.contains(&summary), "{md}");

    // A cell this sweep does not measure fails the guard.
    let mut b2 = b.clone();
    let mut extra = b.cells[0].clone();
    extra.cell.n = 999;
    b2.cells.push(extra);
    let base2 = dir.join("base2.json");
    b2.write(&base2).unwrap();
    let (code, text) = with(&["--compare", base2.to_str().unwrap(), "--repeat", "1"]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("1 missing -> FAIL"), "{text}");

    // The config is the baseline's: no sweep options beside --compare.
    let (code, text) = with(&["--compare", base, "--sizes", "2^10"]);
    assert_eq!(code, 2, "{text}");
    // Compare and save this run as the next baseline in one go; then compare two saved
    // baselines offline (no sweep).
    let base3 = dir.join("base3.json");
    let b3 = base3.to_str().unwrap();
    let (code, text) = with(&["--compare", base, "--save-baseline", b3]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("saved this run as the baseline"), "{text}");
    let (code, text) = with(&["--compare", base, "--against", b3]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("-> PASS"), "{text}");
    let (code, text) = with(&["--compare", base2.to_str().unwrap(), "--against", b3]);
    assert_eq!(code, 1, "{text}");
    // The guard on some cells alone: the baseline cut to those whose name has the pattern.
    let pattern = "reduce i32";
    let picked = b
        .cells
        .iter()
        .filter(|c| c.cell.to_string().contains(pattern))
        .count();
    assert!(picked > 0 && picked < b.cells.len(), "{b:?}");
    let (code, text) = with(&["--compare", base, "--cells", pattern]);
    assert_eq!(code, 0, "{text}");
    let summary = format!(
        "guard: {}, 0 slower, 0 missing -> PASS",
        gpu_reduce_tools::plural(picked as u64, "cell")
    );
    assert!(text.contains(&summary), "{text}");
    let (code, text) = with(&["--compare", base, "--cells", "histogram"]);
    assert_ne!(code, 0, "{text}");
    assert!(text.contains("no cell of the baseline matches"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn counts_take_every_form() {
    for n in ["4096", "4_096", "4e3", "2^12"] {
        let (code, text) = host(&[
            "reduce",
            "--backend",
            "sim",
            "--n",
            n,
            "--iters",
            "1",
            "--warmup",
            "0",
        ]);
        assert_eq!(code, 0, "--n {n}: {text}");
    }
    let (code, text) = host(&["reduce", "--n", "2^x"]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("not a count"), "{text}");
}

#[test]
fn empty_environment_variables_mean_unset() {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_host"))
        .args(["scan", "--backend", "sim", "--n", "100", "--iters", "1"])
        .env("GPU_REDUCE_CUB_LIB", "")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(!text.contains("a value is required"), "{text}");
}

#[test]
fn options_that_do_not_apply_to_the_backend_warn() {
    let dir = std::env::temp_dir().join(format!("gpu-reduce-cli-warn-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = dir.to_str().unwrap();
    let quick = ["--backend", "sim", "--iters", "1"];
    let cases: [(Vec<&str>, &[&str]); 6] = [
        (
            vec!["reduce", "--n", "1000", "--device", "5"],
            &["warning: --device does not apply to the CPU simulator (--backend sim); ignored"],
        ),
        (
            vec!["scan", "--n", "100", "--cub-lib", "/nonexistent.so"],
            &["warning: --cub-lib does not apply to the CPU simulator (--backend sim); ignored"],
        ),
        (
            vec![
                "bench",
                "--sizes",
                "2^10",
                "--ops",
                "reduce",
                "--dtypes",
                "i32",
                "--quiet",
                "--out",
                out,
                "--cub-lib",
                "/nonexistent.so",
                "--device",
                "3",
            ],
            &[
                "warning: --device does not apply to the CPU simulator (--backend sim); ignored",
                "warning: --cub-lib does not apply to the CPU simulator (--backend sim); ignored",
            ],
        ),
        (
            vec!["reduce", "--n", "1000", "--dtype", "f64"],
            &["warning: --dtype applies only with --ladder (the sum is of f32); ignored"],
        ),
        (
            vec!["reduce", "--n", "1000", "--gpus", "2", "--device", "1"],
            &[
                "warning: --device does not apply with --gpus (its ranks use devices 0 to N-1); ignored",
            ],
        ),
        // What applies draws no warning.
        (vec!["reduce", "--n", "1000", "--seed", "1"], &[]),
    ];
    for (args, expect) in cases {
        let args = [&args[..], &quick[..]].concat();
        let (code, stdout, stderr) = host_split(&args);
        assert_eq!(code, 0, "{args:?}: {stdout}{stderr}");
        assert_eq!(warnings(&stderr), expect, "{args:?}: {stderr}");
        // Warnings go to stderr alone.
        assert!(!stdout.contains("warning:"), "{args:?}: {stdout}");
    }
    // An option from the environment is a standing default, not a request: no warning.
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_host"))
        .args(["scan", "--backend", "sim", "--n", "100", "--iters", "1"])
        .env("GPU_REDUCE_CUB_LIB", "/nonexistent.so")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert!(warnings(&stderr).is_empty(), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn multi_gpu_on_the_simulator_is_labelled_without_bandwidth() {
    for op in ["reduce", "scan"] {
        let (code, out, err) = host_split(&[
            op,
            "--gpus",
            "2",
            "--backend",
            "sim",
            "--n",
            "5000",
            "--iters",
            "1",
            "--seed",
            "3",
        ]);
        assert_eq!(code, 0, "{op}: {out}{err}");
        assert!(
            out.contains("sharded over 2 simulated devices") && out.contains("1 timed run after"),
            "{op}: {out}"
        );
        assert!(out.contains("SIMULATED on the CPU"), "{op}: {out}");
        // Every row: "-" for both bandwidths, never a number (it was "0").
        let rows: Vec<&str> = out
            .lines()
            .filter(|l| l.starts_with("| 1 |") || l.starts_with("| 2 |"))
            .collect();
        // The scan: in place and deferred on each rank count.
        let want = if op == "scan" { 4 } else { 2 };
        assert_eq!(rows.len(), want, "{op}: {out}");
        for r in rows {
            let cells: Vec<&str> = r.split('|').map(str::trim).collect();
            assert_eq!((cells[3], cells[4]), ("-", "-"), "{op}: {r}");
        }
    }
    let (code, out, err) = host_split(&[
        "reduce",
        "--gpus",
        "2",
        "--ones",
        "--backend",
        "sim",
        "--n",
        "5000",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(out.matches("SIMULATED").count(), 2, "{out}");
    assert!(!out.contains("GB/s"), "{out}");
}
