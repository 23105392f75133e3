// Probe: per-block timeline of the segmented kernel (exp only, not part of the project).
use cudarc::driver::*;
use std::sync::Arc;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn main() -> Result<(), DriverError> {
    let args: Vec<String> = std::env::args().collect();
    let ptx = &args[1];
    let equal = args.get(2).map(|s| s == "equal").unwrap_or(false);
    let grid_arg: u32 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(396);
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let module = ctx.load_module(cudarc::nvrtc::Ptx::from_file(ptx))?;
    let f = module.load_function("reduce_segmented_sum_f32")?;
    let mut rng = Rng(0x9e3779b97f4a7c15);
    let k = 1000u64;
    let lens: Vec<u64> = (0..k)
        .map(|_| if equal { 100_000 } else { 90_000 + rng.next() % 20_001 })
        .collect();
    let mut offs = vec![0u64];
    for l in &lens {
        offs.push(offs.last().unwrap() + l);
    }
    let n = *offs.last().unwrap();
    let host: Vec<f32> = (0..n).map(|i| ((i * 2654435761) % 1000) as f32 * 1e-3).collect();
    let x = stream.memcpy_stod(&host)?;
    let dbegin = stream.memcpy_stod(&offs[..k as usize])?;
    let dend = stream.memcpy_stod(&offs[1..])?;
    let mut out = stream.alloc_zeros::<f32>(k as usize)?;
    let mut status = stream.alloc_zeros::<u64>(1)?;
    let chunk_vecs_: u64 = args.get(5).and_then(|s| s.parse().ok()).unwrap_or(8192);
    let chunk = chunk_vecs_ * 4;
    let entry_cap = k.min(n / chunk + 1);
    let partial_cap = 2 * (n / chunk) + 2;
    let words = 8 + entry_cap * 2 + 4 * partial_cap + 2 * partial_cap;
    let mut ws = stream.alloc_zeros::<u64>(words as usize)?;
    let idx: u64 = 0;
    let seglen: u64 = 0;
    let grid = grid_arg;
    let threads: u32 = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(256);
    let chunk_vecs: u64 = args.get(5).and_then(|s| s.parse().ok()).unwrap_or(8192);
    let cfg = LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (threads, 1, 1), shared_mem_bytes: 0 };
    let launch = |out: &mut CudaSlice<f32>, status: &mut CudaSlice<u64>, ws: &mut CudaSlice<u64>| -> Result<(), DriverError> {
        let mut b = stream.launch_builder(&f);
        b.arg(&x).arg(&n).arg(&dbegin).arg(&dend).arg(&seglen).arg(&k).arg(out).arg(&idx).arg(status).arg(ws).arg(&entry_cap).arg(&partial_cap);
        unsafe { b.launch(cfg) }?;
        Ok(())
    };
    // timing
    for _ in 0..5 {
        launch(&mut out, &mut status, &mut ws)?;
    }
    let mut times = vec![];
    for _ in 0..30 {
        let e0 = ctx.new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))?;
        let e1 = ctx.new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))?;
        e0.record(&stream)?;
        launch(&mut out, &mut status, &mut ws)?;
        e1.record(&stream)?;
        e1.synchronize()?;
        times.push(e0.elapsed_ms(&e1)?);
    }
    times.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let med = times[times.len() / 2];
    println!("ptx {ptx} equal={equal} grid={grid} threads={threads} n={n} median {:.4} ms = {:.1} GB/s", med, n as f64 * 4.0 / med as f64 / 1e6);
    // check
    let got = stream.memcpy_dtov(&out)?;
    let mut bad = 0;
    for s in 0..k as usize {
        let exact: f64 = host[offs[s] as usize..offs[s + 1] as usize].iter().map(|&v| v as f64).sum();
        if (got[s] as f64 - exact).abs() > 1e-3 * exact.abs().max(1.0) {
            bad += 1;
        }
    }
    println!("bad segments: {bad}");
    // trace of one launch
    if let Ok(sym) = module.get_global("SEG_TRACE", &stream) {
        let _ = sym;
        for rep in 0..3 {
            launch(&mut out, &mut status, &mut ws)?;
            stream.synchronize()?;
            let sym = module.get_global("SEG_TRACE", &stream)?;
            let mut tr = vec![0u8; sym.len()];
            stream.memcpy_dtoh(&sym, &mut tr)?;
            stream.synchronize()?;
            let w: Vec<u64> = tr.chunks(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect();
            let g = grid as usize;
            let t0 = (0..g).map(|b| w[8 * b]).min().unwrap();
            let tend = (0..g).map(|b| w[8 * b + 3]).max().unwrap();
            let mut entry: Vec<f64> = (0..g).map(|b| (w[8 * b] - t0) as f64 / 1e3).collect();
            let mut first: Vec<f64> = (0..g).filter(|&b| w[8 * b + 1] > 0).map(|b| (w[8 * b + 1] - t0) as f64 / 1e3).collect();
            let mut lastend: Vec<f64> = (0..g).filter(|&b| w[8 * b + 2] > 0).map(|b| (w[8 * b + 2] - t0) as f64 / 1e3).collect();
            let mut exit: Vec<f64> = (0..g).map(|b| (w[8 * b + 3] - t0) as f64 / 1e3).collect();
            let nwork: Vec<u64> = (0..g).map(|b| w[8 * b + 4]).collect();
            let wait: f64 = (0..g).map(|b| w[8 * b + 5] as f64 / 1e3).sum::<f64>();
            let q = |v: &mut Vec<f64>| {
                v.sort_by(|a, b| a.partial_cmp(b).unwrap());
                let p = |f: f64| v[((v.len() - 1) as f64 * f) as usize];
                format!("min {:.2} p10 {:.2} p50 {:.2} p90 {:.2} max {:.2}", p(0.0), p(0.1), p(0.5), p(0.9), p(1.0))
            };
            let total_work: u64 = nwork.iter().sum();
            // SM idle: per SM last exit
            let mut sm_last = std::collections::HashMap::new();
            for b in 0..g {
                let e = sm_last.entry(w[8 * b + 6]).or_insert(0u64);
                *e = (*e).max(w[8 * b + 3]);
            }
            let sm_idle: f64 = sm_last.values().map(|&t| (tend - t) as f64 / 1e3).sum::<f64>() / sm_last.len() as f64;
            // block idle after exit (avg)
            let blk_idle: f64 = (0..g).map(|b| (tend - w[8 * b + 3]) as f64 / 1e3).sum::<f64>() / g as f64;
            println!("rep {rep}: span {:.2} us, chunks worked {total_work}, per block min {} max {}", (tend - t0) as f64 / 1e3, nwork.iter().min().unwrap(), nwork.iter().max().unwrap());
            println!("  entry    {}", q(&mut entry));
            println!("  1st work {}", q(&mut first));
            println!("  last end {}", q(&mut lastend));
            println!("  exit     {}", q(&mut exit));
            println!("  decision wait per chunk avg {:.3} us (sum over blocks {:.1} us)", wait / total_work.max(1) as f64, wait);
            println!("  avg block idle after exit {:.2} us, avg SM idle at end {:.2} us, SMs {}", blk_idle, sm_idle, sm_last.len());
        }
    }
    Ok(())
}
