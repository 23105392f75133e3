use super::wrapper::Manifest;
use super::*;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ptx-builder-test-{}-{name}", std::process::id()));
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
