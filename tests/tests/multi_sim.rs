//! Sharded reductions and scans over simulated devices (runs everywhere, CI included): the
//! sharding logic against one device, bit for bit, in both process models.

use integration_tests::multi::*;

#[test]
fn reductions_same_bits_for_every_layout() {
    check_reduce_every_type(&sims, 20_011);
}

#[test]
fn scans_match_the_cpu() {
    check_scans(&sims, 9_001);
}

/// Integer scans over several groups of tiles: one context's bits in every layout (the float
/// sums' check is stress_sim's `multi_float_sum_scan_bits_do_not_depend_on_the_shards`).
#[test]
fn integer_scans_same_bits_as_one_context() {
    check_int_scan_bits_match_one_context(&sims, 2);
}

#[test]
fn deferred_scans_match_the_cpu() {
    check_deferred_scans(&sims, 9_001);
}

#[test]
fn one_process_per_rank() {
    check_process_per_rank(&sims, 12_345);
}

#[test]
fn clear_errors() {
    check_errors(&sims);
}

#[test]
fn nccl_errors() {
    println!("{}", check_nccl_one_rank(integration_tests::sim));
}

#[test]
fn fill_and_get() {
    check_fill_and_get(&sims);
}

/// A float max scan over NaNs of different payloads keeps the one-context scan's NaN bits on
/// two ranks (float min/max go the group-cut way: a shard total's reduction may meet NaNs in
/// another order than the scan).
#[test]
fn float_max_scan_nan_payloads_same_bits_as_one_context() {
    use gpu_reduce::multi::MultiContext;
    use gpu_reduce::{Context, Reduction, ScanKind};
    let n = 20_000;
    let mut x: Vec<f32> = (0..n).map(|i| (i % 97) as f32).collect();
    // NaNs in a reduction tile's first and later rows, in both shards.
    let at = [1024usize, 4, 2048 + 1536, 2048 + 8, 3000, 7, 9000, 15000];
    for (k, &i) in at.iter().enumerate() {
        let k = k as u32 + 1;
        x[i] = f32::from_bits(0x7fc0_0000 | k);
    }
    let one = Context::sim().unwrap();
    let d = one.htod(&x).unwrap();
    let mut want = one.alloc_zeros::<f32>(n).unwrap();
    one.scan(&d, &mut want, Reduction::Max, ScanKind::Inclusive)
        .unwrap();
    let want: Vec<u32> = one
        .dtoh(&want)
        .unwrap()
        .iter()
        .map(|v| v.to_bits())
        .collect();
    let m = MultiContext::new(vec![Context::sim().unwrap(), Context::sim().unwrap()]).unwrap();
    let mut b = m.htod(&x, &[12_000, 8_000]).unwrap();
    m.scan_in_place(&mut b, Reduction::Max, ScanKind::Inclusive)
        .unwrap();
    let got: Vec<u32> = m.dtoh(&b).unwrap().iter().map(|v| v.to_bits()).collect();
    assert!(got == want, "NaN payloads differ from one context's scan");
}
