//! Memory from anywhere (views, raw pointers, cudarc slices), user streams, non-blocking
//! reductions and CUDA graph capture. Bodies shared by the simulator and GPU tests.

use gpu_reduce::cudarc::driver::sys;
use gpu_reduce::{Context, DeviceView, DeviceViewMut, Error, Reduction, ScanKind, Segments};
use rand::{Rng, SeedableRng, rngs::SmallRng};

fn random_i64(n: usize, seed: u64) -> Vec<i64> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..n).map(|_| rng.random_range(-1000..1000)).collect()
}

fn inclusive(x: &[i64]) -> Vec<i64> {
    x.iter()
        .scan(0i64, |acc, &v| {
            *acc += v;
            Some(*acc)
        })
        .collect()
}

fn invalid(r: gpu_reduce::Result<impl std::fmt::Debug>, needle: &str) {
    match r {
        Err(e) if crate::is_argument_error(&e) => {
            let m = e.to_string();
            assert!(m.contains(needle), "message {m:?}")
        }
        other => panic!("expected an invalid-argument error naming {needle:?}, got {other:?}"),
    }
}

/// Sub-views, raw pointers (with their checks), and the memory operations on views.
pub fn check_views_and_raw(ctx: &Context) {
    let host = random_i64(5000, 1);
    let buf = ctx.htod(&host).unwrap();
    let part = buf.view(100..4100).unwrap().slice(7..).unwrap();
    assert_eq!(part.len(), 3993);
    let want: i64 = host[107..4100].iter().sum();
    assert_eq!(ctx.sum(part).unwrap(), want);
    invalid(part.slice(..4000), "outside");

    // A raw view of the same memory, as a pointer from another library would come.
    let addr = ctx.device_addr(&buf).unwrap();
    // SAFETY: `buf` outlives the view and nothing writes it meanwhile.
    let raw = unsafe { DeviceView::<i64>::from_raw(ctx, addr, host.len()) }.unwrap();
    assert_eq!(ctx.sum(raw).unwrap(), host.iter().sum::<i64>());
    assert_eq!(ctx.dtoh(raw.slice(10..20).unwrap()).unwrap(), host[10..20]);
    // SAFETY (all below): rejected before anything reads them.
    invalid(unsafe { DeviceView::<i64>::from_raw(ctx, 0, 4) }, "null");
    invalid(
        unsafe { DeviceView::<i64>::from_raw(ctx, addr + 4, 4) },
        "aligned",
    );
    invalid(
        unsafe { DeviceView::<i64>::from_raw(ctx, addr, usize::MAX / 4) },
        "overflow",
    );
    if ctx.backend_kind() == gpu_reduce::BackendKind::Cuda {
        invalid(
            unsafe { DeviceView::<i64>::from_raw(ctx, addr, host.len() + 1) },
            "past the end",
        );
        let on_host = host.as_ptr() as u64;
        invalid(
            unsafe { DeviceView::<i64>::from_raw(ctx, on_host, 4) },
            "not device memory",
        );
    }

    // A raw writable view as a scan's output, and the memory operations on views.
    let mut out = ctx.alloc_zeros::<i64>(host.len()).unwrap();
    let out_addr = ctx.device_addr(&out).unwrap();
    // SAFETY: `out` outlives the view; only this scan writes it.
    let dst = unsafe { DeviceViewMut::<i64>::from_raw(ctx, out_addr, host.len()) }.unwrap();
    ctx.scan(&buf, dst, Reduction::Sum, ScanKind::Inclusive)
        .unwrap();
    assert_eq!(ctx.dtoh(&out).unwrap(), inclusive(&host));
    ctx.memset_zeros(out.view_mut(10..20).unwrap()).unwrap();
    ctx.htod_into(&[7, 8, 9], out.view_mut(100..).unwrap())
        .unwrap();
    ctx.copy_into(buf.view(..5).unwrap(), &mut out, 200)
        .unwrap();
    let got = ctx.dtoh(&out).unwrap();
    let mut want = inclusive(&host);
    want[10..20].fill(0);
    want[100..103].copy_from_slice(&[7, 8, 9]);
    want[200..205].copy_from_slice(&host[..5]);
    assert_eq!(got, want);
    invalid(
        ctx.htod_into(&[1, 2, 3], out.view_mut(..2).unwrap()),
        "copying 3",
    );
}

/// Value-returning reductions in flight at once, waited in any order; dropped handles.
pub fn check_pending(ctx: &Context) {
    let inputs: Vec<Vec<i64>> = (0..24)
        .map(|i| random_i64(1000 + 777 * i, 10 + i as u64))
        .collect();
    let bufs: Vec<_> = inputs.iter().map(|h| ctx.htod(h).unwrap()).collect();
    let pending: Vec<_> = bufs
        .iter()
        .map(|b| ctx.reduce_async(b, Reduction::Sum).unwrap())
        .collect();
    // One dropped unwaited: its slot comes back and nothing breaks.
    let dropped = ctx.reduce_async(&bufs[0], Reduction::Max).unwrap();
    drop(dropped);
    for (p, h) in pending.into_iter().zip(&inputs).rev() {
        assert_eq!(p.wait().unwrap(), h.iter().sum::<i64>());
    }
    let p = ctx.reduce_async(&bufs[3], Reduction::Min).unwrap();
    // Polling never blocks; a flag that never comes fails here instead of hanging.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !p.is_ready() {
        assert!(
            std::time::Instant::now() < deadline,
            "the result never arrived"
        );
        std::hint::spin_loop();
    }
    assert_eq!(p.wait().unwrap(), *inputs[3].iter().min().unwrap());
    assert_eq!(ctx.sum(&bufs[5]).unwrap(), inputs[5].iter().sum::<i64>());
}

/// cudarc memory in and out, without copies: a context on the program's own stream, and one
/// on its own stream reading memory another stream wrote.
pub fn check_cudarc_memory(ctx_own: &Context) {
    let (cuda, _) = ctx_own.cuda().expect("a CUDA context");
    let cuda = cuda.clone();
    let user = cuda.new_stream().unwrap();
    let host = random_i64(1 << 20, 3);
    // The program's memory, written on its stream.
    let x = user.clone_htod(&host).unwrap();
    let mut y = user.alloc_zeros::<i64>(host.len()).unwrap();

    // A context on the program's stream: ordered with its work, no device-wide sync.
    let ctx = Context::from_stream(user.clone()).unwrap();
    assert_eq!(ctx.sum(&x).unwrap(), host.iter().sum::<i64>());
    assert_eq!(
        ctx.sum(&x.slice(10..1000)).unwrap(),
        host[10..1000].iter().sum::<i64>()
    );
    ctx.scan(&x, &mut y, Reduction::Sum, ScanKind::Inclusive)
        .unwrap();
    ctx.scan(
        &x.slice(..1000),
        &mut y.slice_mut(5000..6000),
        Reduction::Max,
        ScanKind::Exclusive,
    )
    .unwrap();
    let got = user.clone_dtoh(&y).unwrap(); // cudarc's own read, ordered by cudarc's events
    let mut want = inclusive(&host);
    let mut m = i64::MIN;
    for i in 0..1000 {
        want[5000 + i] = m;
        m = m.max(host[i]);
    }
    assert_eq!(got, want);
    let mut out = user.alloc_zeros::<i64>(1).unwrap();
    ctx.reduce_into(&x, &mut out, Reduction::Min).unwrap();
    assert_eq!(
        user.clone_dtoh(&out).unwrap()[0],
        *host.iter().min().unwrap()
    );

    // The library's own context on another stream reads memory the program's stream wrote
    // just before (cudarc's write event orders it), and writes cudarc memory.
    let host2 = random_i64(3 << 20, 4);
    let x2 = user.clone_htod(&host2).unwrap();
    assert_eq!(ctx_own.sum(&x2).unwrap(), host2.iter().sum::<i64>());
    let mut y2 = user.alloc_zeros::<i64>(host2.len()).unwrap();
    ctx_own.inclusive_sum(&x2, &mut y2).unwrap();
    assert_eq!(user.clone_dtoh(&y2).unwrap(), inclusive(&host2));

    // Library buffers handed to cudarc and back.
    let b = ctx_own.htod(&host).unwrap();
    let mut s = b.into_cuda().unwrap();
    assert_eq!(user.clone_dtoh(&s).unwrap(), host);
    user.memset_zeros(&mut s.slice_mut(..10)).unwrap();
    let back = gpu_reduce::DeviceBuffer::from(s);
    assert_eq!(ctx_own.sum(&back).unwrap(), host[10..].iter().sum::<i64>());

    // Memory of another backend is rejected with a message.
    let sim = Context::sim().unwrap();
    match sim.sum(&x) {
        Err(e @ Error::WrongBackend) => assert!(e.to_string().contains("backend"), "{e}"),
        other => panic!("expected a backend error, got {other:?}"),
    }
}

/// A reduction, a scan, a segmented reduction over long rows (its own kernel), three over CSR
/// offsets checked later (no read-back; a few segments take the listed form, many the general
/// kernel's work list, short ones the tiles form and its bounds pass) and a reduce by key
/// captured into a CUDA graph on the context's stream, replayed with new input data each time.
pub fn check_graph_capture(ctx: &Context) {
    let (_, stream) = ctx.cuda().expect("a CUDA context");
    let stream = stream.clone();
    let n = 3_000_000;
    let mut x = ctx.alloc_zeros::<i64>(n).unwrap();
    let mut sum = ctx.alloc_zeros::<i64>(1).unwrap();
    let mut scanned = ctx.alloc_zeros::<i64>(n).unwrap();
    // Rows of 1e6 (several chunks each: the long-rows kernel, whose per-row counters live in
    // graph scratch cleared inside the graph) and runs of 7 equal keys.
    let (rows, row_len) = (3, 1_000_000);
    let mut row_sums = ctx.alloc_zeros::<i64>(rows).unwrap();
    let host_keys: Vec<u32> = (0..n as u32).map(|i| i / 7).collect();
    let keys = ctx.htod(&host_keys).unwrap();
    let runs = n.div_ceil(7);
    let (mut unique, mut by_key) = (
        ctx.alloc_zeros::<u32>(runs).unwrap(),
        ctx.alloc_zeros::<i64>(runs).unwrap(),
    );
    let mut run_count = ctx.alloc_zeros::<u64>(1).unwrap();
    // CSR segments short, long (several chunks) and empty.
    let csr_host = [0u64, 5, 1_000_000, 1_000_000, 1_000_100, n as u64];
    let csr = ctx.htod(&csr_host).unwrap();
    let check = ctx.offset_check().unwrap();
    let mut csr_sums = ctx.alloc_zeros::<i64>(csr_host.len() - 1).unwrap();
    // More segments than the listed form takes (short ones, then one long): the work list.
    let many_host: Vec<u64> = (0..3000u64).map(|s| s * 100).chain([n as u64]).collect();
    let many = ctx.htod(&many_host).unwrap();
    let mut many_sums = ctx.alloc_zeros::<i64>(many_host.len() - 1).unwrap();
    // Short segments of 6 and 1 (the tiles form: 1,465 tiles, more than a GPU of up to 292 SMs
    // runs at once, so its bounds pass too, writing the graph's own scratch).
    let short_host: Vec<u64> = (0..n as u64 / 5)
        .map(|s| s * 5 + s % 5)
        .chain([n as u64])
        .collect();
    let short = ctx.htod(&short_host).unwrap();
    let mut short_sums = ctx.alloc_zeros::<i64>(short_host.len() - 1).unwrap();
    // Warm: kernels loaded, the context's own scratch made (none of this is captured).
    ctx.htod_into(&random_i64(n, 99), &mut x).unwrap();
    ctx.reduce_into(&x, &mut sum, Reduction::Sum).unwrap();
    ctx.inclusive_sum(&x, &mut scanned).unwrap();
    ctx.segmented_reduce(
        &x,
        Segments::fixed(row_len as u64),
        &mut row_sums,
        Reduction::Sum,
    )
    .unwrap();
    ctx.segmented_reduce(&x, Segments::csr(&csr), &mut csr_sums, Reduction::Sum)
        .unwrap();
    ctx.segmented_reduce(&x, Segments::csr(&many), &mut many_sums, Reduction::Sum)
        .unwrap();
    ctx.segmented_reduce(&x, Segments::csr(&short), &mut short_sums, Reduction::Sum)
        .unwrap();
    ctx.reduce_by_key_into(
        &keys,
        &x,
        &mut unique,
        &mut by_key,
        &mut run_count,
        Reduction::Sum,
    )
    .unwrap();

    // Thread-local: the capturing thread (where the library's calls run) may make no unsafe
    // call, as in global mode, while the test harness's other threads, running other tests,
    // may (global mode failed their copies and invalidated this capture).
    stream
        .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        .unwrap();
    let captured = (|| -> gpu_reduce::Result<()> {
        ctx.reduce_into(&x, &mut sum, Reduction::Sum)?;
        ctx.inclusive_sum(&x, &mut scanned)?;
        ctx.segmented_reduce(
            &x,
            Segments::fixed(row_len as u64),
            &mut row_sums,
            Reduction::Sum,
        )?;
        ctx.segmented_reduce(
            &x,
            Segments::csr(&csr).check_later(&check),
            &mut csr_sums,
            Reduction::Sum,
        )?;
        ctx.segmented_reduce(
            &x,
            Segments::csr(&many).check_later(&check),
            &mut many_sums,
            Reduction::Sum,
        )?;
        ctx.segmented_reduce(
            &x,
            Segments::csr(&short).check_later(&check),
            &mut short_sums,
            Reduction::Sum,
        )?;
        // Its checked form reads back: a clear error under capture.
        match ctx.segmented_reduce(&x, Segments::csr(&csr), &mut csr_sums, Reduction::Sum) {
            Err(e @ Error::NotCapturable { .. }) => {
                assert!(e.to_string().contains("captured"), "{e}")
            }
            other => panic!("expected a capture error, got {other:?}"),
        }
        ctx.reduce_by_key_into(
            &keys,
            &x,
            &mut unique,
            &mut by_key,
            &mut run_count,
            Reduction::Sum,
        )?;
        // A value-returning call cannot be captured: a clear error, not a hang.
        match ctx.sum(&x) {
            Err(e @ Error::NotCapturable { .. }) => {
                assert!(e.to_string().contains("graph"), "{e}")
            }
            other => panic!("expected a capture error, got {other:?}"),
        }
        Ok(())
    })();
    let graph = stream
        .end_capture(sys::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH)
        .unwrap()
        .expect("a graph");
    captured.unwrap();
    for round in 0..5u64 {
        let host = random_i64(n, 1000 + round);
        ctx.htod_into(&host, &mut x).unwrap();
        graph.launch().unwrap();
        // Plain calls between replays share nothing with the graph's launches.
        let mut other = ctx.alloc_zeros::<i64>(n).unwrap();
        ctx.inclusive_sum(&x, &mut other).unwrap();
        assert_eq!(
            ctx.dtoh(&sum).unwrap()[0],
            host.iter().sum::<i64>(),
            "round {round}"
        );
        assert_eq!(
            ctx.dtoh(&scanned).unwrap(),
            inclusive(&host),
            "round {round}"
        );
        assert_eq!(ctx.dtoh(&other).unwrap(), inclusive(&host), "round {round}");
        let want_rows: Vec<i64> = host.chunks(row_len).map(|r| r.iter().sum()).collect();
        assert_eq!(ctx.dtoh(&row_sums).unwrap(), want_rows, "round {round}");
        let csr_want = |offsets: &[u64]| -> Vec<i64> {
            offsets
                .windows(2)
                .map(|w| host[w[0] as usize..w[1] as usize].iter().sum())
                .collect()
        };
        assert_eq!(
            ctx.dtoh(&csr_sums).unwrap(),
            csr_want(&csr_host),
            "round {round}"
        );
        assert_eq!(
            ctx.dtoh(&many_sums).unwrap(),
            csr_want(&many_host),
            "round {round}"
        );
        assert_eq!(
            ctx.dtoh(&short_sums).unwrap(),
            csr_want(&short_host),
            "round {round}"
        );
        ctx.take_offset_check(&check).unwrap();
        let want_runs: Vec<i64> = host.chunks(7).map(|r| r.iter().sum()).collect();
        assert_eq!(
            ctx.dtoh(&run_count).unwrap()[0] as usize,
            runs,
            "round {round}"
        );
        assert_eq!(ctx.dtoh(&by_key).unwrap(), want_runs, "round {round}");
        assert_eq!(
            ctx.dtoh(&unique).unwrap(),
            (0..runs as u32).collect::<Vec<_>>()
        );
    }
}

/// CPU time of the calling thread in seconds (Linux: /proc/thread-self/stat, clock ticks of
/// 10 ms). The thread's own, not the process's: the test harness runs other tests on other
/// threads at the same time unless told `--test-threads=1`.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = after.split_whitespace().collect();
    // Fields 14 and 15 of the file (utime, stime) are 12 and 13 after the command name.
    let ticks: f64 = f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap();
    ticks / 100.0
}

/// Waiting for a long reduction does not keep a core busy: queue ~0.5 s of kernels, then a
/// value-returning sum, and compare the waiting thread's CPU time with the wall time.
pub fn check_wait_does_not_spin(ctx: &Context) {
    let n = 1 << 28; // 1 GiB of f32: ~0.3-0.4 ms per pass
    let x = ctx.alloc_zeros::<f32>(n).unwrap();
    let mut out = ctx.alloc_zeros::<f32>(1).unwrap();
    ctx.sum(&x).unwrap();
    let (mut wall, mut cpu) = (0.0, 0.0);
    for _ in 0..4 {
        for _ in 0..400 {
            ctx.reduce_into(&x, &mut out, Reduction::Sum).unwrap();
        }
        let (t, c) = (std::time::Instant::now(), cpu_seconds());
        assert_eq!(ctx.sum(&x).unwrap(), 0.0);
        wall += t.elapsed().as_secs_f64();
        cpu += cpu_seconds() - c;
    }
    println!("waited {wall:.3} s of wall time with {cpu:.3} s of CPU");
    assert!(
        wall > 0.2,
        "the queued work was too short to tell ({wall} s)"
    );
    assert!(cpu < 0.25 * wall, "waiting used {cpu} s of CPU in {wall} s");
}

/// Memory of GPU 1 handed to a context of GPU 0 (a library buffer, a cudarc slice, a raw
/// pointer) is rejected with a message naming the devices; GPU 1's own context uses it.
pub fn check_other_device_rejected() {
    let (ctx0, ctx1) = (Context::new(0).unwrap(), Context::new(1).unwrap());
    let host = random_i64(10_000, 7);
    let buf1 = ctx1.htod(&host).unwrap();
    let want: i64 = host.iter().sum();
    assert_eq!(ctx1.sum(&buf1).unwrap(), want);
    invalid(ctx0.sum(&buf1), "device 1");
    let mut out0 = ctx0.alloc_zeros::<i64>(host.len()).unwrap();
    invalid(ctx0.inclusive_sum(&buf1, &mut out0), "device 1");
    let mut out1 = ctx1.alloc_zeros::<i64>(host.len()).unwrap();
    invalid(ctx1.inclusive_sum(&buf1, &mut out0), "device 0");
    ctx1.inclusive_sum(&buf1, &mut out1).unwrap();
    assert_eq!(ctx1.dtoh(&out1).unwrap(), inclusive(&host));
    // cudarc memory of GPU 1.
    let (_, s1) = ctx1.cuda().unwrap();
    let slice1 = s1.clone_htod(&host).unwrap();
    invalid(ctx0.sum(&slice1), "device 1");
    assert_eq!(ctx1.sum(&slice1).unwrap(), want);
    // A raw pointer into GPU 1's memory.
    let addr1 = ctx1.device_addr(&buf1).unwrap();
    // SAFETY: rejected before anything reads it.
    invalid(
        unsafe { DeviceView::<i64>::from_raw(&ctx0, addr1, host.len()) },
        "device 1",
    );
}
