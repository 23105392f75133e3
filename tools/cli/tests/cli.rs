//! The CLI's behaviour on bad input, on any machine: clap errors exit 2; missing driver, missing
//! device or a bad ordinal print a message and exit 1, never panic.

use std::process::Command;

fn host(args: &[&str]) -> (i32, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_host"))
        .args(args)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    (o.status.code().unwrap_or(-1), text)
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
    let n = gpu_reduce::device_count().expect("a driver that is present starts");
    let (code, text, expect) = match gpu_reduce::Context::new(0).err() {
        Some(gpu_reduce::Error::NoDriver) => {
            let (c, t) = host(&["reduce", "--n", "10", "--backend", "cuda"]);
            (c, t, "no CUDA driver")
        }
        Some(gpu_reduce::Error::NoDevice) => {
            let (c, t) = host(&["reduce", "--n", "10", "--backend", "cuda"]);
            (c, t, "found no GPU")
        }
        _ if n > 0 => {
            let (c, t) = host(&["reduce", "--n", "10", "--device", &n.to_string()]);
            (c, t, "out of range")
        }
        e => panic!("unexpected driver state: {e:?}"),
    };
    assert_eq!(code, 1, "{text}");
    assert!(text.contains(expect), "{text}");
    assert!(!text.contains("panicked"), "{text}");
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
    let summary = format!("guard: {picked} cells, 0 slower, 0 missing -> PASS");
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
