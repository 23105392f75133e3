//! The simulator's fault reporting: each fault ends the launch with an error naming the
//! kernel, block and thread, instead of hanging or corrupting memory.

use std::string::ToString;
use std::vec;

use super::*;
use crate::gpu;

fn cfg(grid: u32, block: u32, dynamic: u32) -> LaunchConfig {
    LaunchConfig {
        grid: (grid, 1, 1),
        block: (block, 1, 1),
        dynamic_shared_bytes: dynamic,
    }
}

#[test]
fn out_of_bounds_shared_access_names_the_thread() {
    let e = launch("oob", &cfg(2, 64, 0), || {
        let s = crate::static_shared!(OOB_TEST: [u32; 40]);
        let t = gpu::thread_idx_x();
        unsafe { s.write(t as usize, t) };
    })
    .unwrap_err();
    assert_eq!(e.kind, FaultKind::SharedOutOfBounds);
    assert_eq!(e.kernel, "oob");
    assert_eq!(e.block, Some((0, 0, 0)));
    assert_eq!(e.thread, Some((40, 0, 0)));
    let msg = e.to_string();
    assert!(
        msg.contains("`oob`") && msg.contains("block (0,0,0)") && msg.contains("thread (40,0,0)"),
        "{msg}"
    );
    assert!(msg.contains("index 40 of an array of 40"), "{msg}");
}

#[test]
fn dynamic_shared_is_sized_by_the_launch() {
    let ok = launch("dyn", &cfg(1, 32, 128), || {
        let s = gpu::dynamic_shared::<u32>();
        assert_eq!(s.len(), 32);
        unsafe { s.write(gpu::thread_idx_x() as usize, 1) };
    });
    assert!(ok.is_ok(), "{ok:?}");
    let e = launch("dyn", &cfg(1, 32, 64), || {
        let s = gpu::dynamic_shared::<u32>();
        unsafe { s.write(gpu::thread_idx_x() as usize, 1) };
    })
    .unwrap_err();
    assert_eq!(
        (e.kind, e.thread),
        (FaultKind::SharedOutOfBounds, Some((16, 0, 0)))
    );
}

#[test]
fn return_while_others_wait_at_a_barrier() {
    let e = launch("early_return", &cfg(1, 64, 0), || {
        if gpu::thread_idx_x() == 5 {
            return;
        }
        gpu::sync_threads();
    })
    .unwrap_err();
    assert_eq!(e.kind, FaultKind::BarrierDivergence);
    assert_eq!(e.thread, Some((5, 0, 0)));
    assert!(e.to_string().contains("barrier"), "{e}");
}

#[test]
fn launch_limits() {
    let e = launch("big_block", &cfg(1, 2048, 0), || {}).unwrap_err();
    assert_eq!(e.kind, FaultKind::InvalidLaunch);
    assert!(
        e.to_string()
            .contains("2048 threads exceeds the device limit of 1024"),
        "{e}"
    );
    // 48 KiB a block: the host never raises a kernel's limit (a GPU refuses more).
    launch("fits_sm90", &cfg(1, 32, 48 * 1024), || {}).unwrap();
    let e = launch("big_smem", &cfg(1, 32, 48 * 1024 + 16), || {}).unwrap_err();
    assert_eq!(e.kind, FaultKind::InvalidLaunch);
    // Static + dynamic over the limit is caught when the static array is first used.
    let e = launch("static_plus_dynamic", &cfg(1, 32, 40 * 1024), || {
        let s = crate::static_shared!(BIG_STATIC: [u8; 16384]);
        unsafe { s.write(0, 1) };
    })
    .unwrap_err();
    assert_eq!(e.kind, FaultKind::InvalidLaunch);
    assert!(e.to_string().contains("BIG_STATIC"), "{e}");
    let e = launch("empty", &cfg(0, 32, 0), || {}).unwrap_err();
    assert_eq!(e.kind, FaultKind::InvalidLaunch);
}

#[test]
fn shuffle_with_a_lane_that_never_arrives_is_a_deadlock_not_a_hang() {
    let e = launch("divergent_shfl", &cfg(1, 32, 0), || {
        if gpu::lane_id() < 16 {
            let _ = gpu::shfl_down_sync(gpu::FULL_MASK, 1u32, 1, 32);
        } else {
            gpu::sync_threads();
        }
    })
    .unwrap_err();
    assert_eq!(e.kind, FaultKind::Deadlock);
}

#[test]
fn panics_and_traps_in_kernel_code_are_faults() {
    let e = launch("trap", &cfg(3, 32, 0), || {
        if gpu::block_idx_x() == 2 && gpu::thread_idx_x() == 7 {
            gpu::trap();
        }
    })
    .unwrap_err();
    assert_eq!(
        (e.kind.clone(), e.block, e.thread),
        (FaultKind::Trap, Some((2, 0, 0)), Some((7, 0, 0)))
    );
    let e = launch("misaligned", &cfg(1, 32, 0), || {
        let v = vec![0u32; 64];
        let _ = unsafe { gpu::load_nc_v4_b32(v.as_ptr().wrapping_byte_add(4)) };
    })
    .unwrap_err();
    assert_eq!(e.kind, FaultKind::Misaligned);
    // The 8-byte accesses of the 16-bit scans: aligned to 8, not 4.
    let mut v = vec![0u32; 66];
    let base = v.as_mut_ptr() as usize;
    let p = base.next_multiple_of(8); // one 8-byte slot per thread from here
    launch("v2", &cfg(1, 32, 0), || unsafe {
        let q = (p + 8 * gpu::thread_idx_x() as usize) as *mut u32;
        let w = gpu::load_v2_b32(q);
        gpu::store_v2_b32(q, [w[0] | 1, w[1] + gpu::thread_idx_x()]);
    })
    .unwrap();
    let off = (p - base) / 4;
    assert!((0..32).all(|t| v[off + 2 * t] == 1 && v[off + 2 * t + 1] == t as u32));
    let e = launch("misaligned v2", &cfg(1, 32, 0), || {
        let _ = unsafe { gpu::load_v2_b32((p + 4) as *const u32) };
    })
    .unwrap_err();
    assert_eq!(e.kind, FaultKind::Misaligned);
    let e = launch("misaligned v2 store", &cfg(1, 32, 0), || unsafe {
        gpu::store_v2_b32((p + 4) as *mut u32, [0, 0]);
    })
    .unwrap_err();
    assert_eq!(e.kind, FaultKind::Misaligned);
}

#[test]
fn a_failed_launch_leaves_the_simulator_usable() {
    assert!(launch("trap", &cfg(1, 32, 0), || gpu::trap()).is_err());
    let hits = core::sync::atomic::AtomicU32::new(0);
    launch("ok", &cfg(4, 96, 0), || {
        gpu::sync_threads();
        hits.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
    })
    .unwrap();
    assert_eq!(hits.into_inner(), 4 * 96);
}

#[test]
fn multi_dimensional_indices() {
    let seen = std::sync::Mutex::new(std::vec::Vec::new());
    let c = LaunchConfig {
        grid: (2, 3, 1),
        block: (4, 2, 2),
        dynamic_shared_bytes: 0,
    };
    launch("dims", &c, || {
        let v = (
            gpu::block_idx_x(),
            gpu::block_idx_y(),
            gpu::thread_idx_x(),
            gpu::thread_idx_y(),
            gpu::thread_idx_z(),
        );
        assert_eq!((gpu::grid_dim_y(), gpu::block_dim_z()), (3, 2));
        seen.lock().unwrap().push(v);
    })
    .unwrap();
    let mut s = seen.into_inner().unwrap();
    s.sort_unstable();
    s.dedup();
    assert_eq!(s.len(), 6 * 16);
}
