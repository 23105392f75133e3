//! Tuning of the single-pass scans, in one place (CUB's `tuning_scan.cuh` is the model): tile
//! shape, look-back width and delays, each with the reason for its value. The measurements
//! that chose them are in CHANGELOG.md (issues 5, 15, 16 and 32), the current figures in
//! BENCHMARKS.md (Scans; Reduce and scan by key). `for_arch` picks the policy of an
//! architecture; the kernels are compiled with the one of their `-C target-cpu`, and the host
//! launches them with the same.
//!
//! Every architecture uses the sm_90 numbers for now: they were measured on an H100 and an
//! H200; no other GPU was available to tune on. A tile's shape also fixes where tiles start,
//! so keeping one shape keeps integer (and, later, deterministic float) results alike on all.

/// The shape and look-back timing of the single-pass scan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScanPolicy {
    /// Threads per block (one tile per block). A multiple of 32, at most 1024.
    pub block: u32,
    /// 16-byte vectors each thread scans per tile: 16, i.e. 64 KiB tiles. A tile's block waits
    /// at a barrier while one warp looks back, so big tiles pay that wait over more bytes
    /// (fewer rows were slower; CHANGELOG.md, issue 5). 512 threads would not launch for the
    /// f64 kernel at its register count, so blocks stay at 256.
    pub rows: u32,
    /// Rows of the scan by key with 8-byte values: its (head flag, value) pairs and key loads
    /// take more registers per element; at 16 rows its kernels spilled and bloated the
    /// library's PTX (CHANGELOG.md, issue 13). 8 rows keeps them in registers (12 spill).
    pub by_key_rows: u32,
    /// Rows of the scan by key with values of 4 bytes or fewer (48 KiB of values a tile). With
    /// the head flags as bits (`tile::HeadBit`) u32 + f32 at 12 rows spills 16 B; 14 and 16
    /// put the tile's values on the stack. 12 rows were the fastest of 8, 10 and 12
    /// (CHANGELOG.md, issue 32, fourth session).
    pub by_key_rows_narrow: u32,
    /// Bytes of keys and values each thread of the reduce by key loads per tile
    /// ([`crate::reduce::by_key`]; [`ScanPolicy::reduce_by_key_items`] turns it into elements).
    /// Each thread folds its elements into one (head count, value) pair, so only the values
    /// and a head mask stay live. The reduce by key is bound by the bytes each SM has in
    /// flight, not by instructions: loaded straight into registers, 128 bytes a thread (16 u32
    /// keys + f32 values) left two blocks per SM and was no faster than its first layout, the
    /// scan by key's pair per element (CHANGELOG.md, issue 15).
    pub reduce_by_key_thread_bytes: u32,
    /// Blocks per SM the reduce by key's registers must allow (`.minnctapersm`, through
    /// [`crate::launch_bounds!`]): its tiles wait in the look-back with nothing in flight, so
    /// the SM needs other blocks loading meanwhile. Left to itself ptxas fits only three
    /// blocks of 256 threads; five (no spills) beat four, and six spill and lose
    /// (CHANGELOG.md, issue 15).
    pub reduce_by_key_min_blocks: u32,
    /// The reduce by key's first look-back wait ([`ScanPolicy::first_delay_ns`]). With the
    /// L2 prefetch a block's copies return sooner, and a longer first wait lets the look-back
    /// find its predecessor's inclusive prefix at once; much longer waits were slower (the
    /// sweep: CHANGELOG.md, issue 15).
    pub reduce_by_key_delay_ns: u32,
    /// Predecessors each lane reads per look-back round (a warp reads 32 x this). Wider
    /// windows are slower: more status lines polled per round (CHANGELOG.md, issue 5).
    pub lookback_per_lane: u32,
    /// Nanoseconds warp 0 sleeps after publishing its aggregate, before its first look-back
    /// read, in launches of [`ScanPolicy::delay_min_tiles`] tiles or more, for tiles from
    /// [`ScanPolicy::delay_from_tile`] on. Read at once, the nearest inclusive prefix is far
    /// back behind predecessors that have not published, and hundreds of warps polling the same
    /// few status lines load one L2 slice hard; after the sleep the prefix front has moved up
    /// and one round usually suffices. Shorter waits poll more, longer ones are no longer
    /// hidden (the sweep on an H100 and an H200: CHANGELOG.md, issue 5). (CUB's sm_90 tuning
    /// sleeps ~1.2 us first.)
    pub first_delay_ns: u32,
    /// Tiles below this id look back at once: the first wave's predecessors all started with it.
    pub delay_from_tile: u64,
    /// Launches of fewer tiles never sleep (2048 tiles = 128 MiB, more than the L2): short,
    /// L2-resident scans have little polling to spread out and pay the sleep in latency
    /// (CHANGELOG.md, issue 5).
    pub delay_min_tiles: u32,
    /// Nanoseconds between unsuccessful look-back rounds.
    pub poll_delay_ns: u32,
    /// How far ahead (bytes of the scanned values; 0: not at all) each block of a scan (plain,
    /// 16-bit, by key, with its keys) asks L2 for a later tile's input while its own loads are
    /// in flight, so that DRAM stays busy while blocks wait for their prefixes and store. 4 MiB
    /// was the best of the distances swept for the plain scans and the scan by key alike
    /// (CHANGELOG.md, issue 32); beyond it the lines are evicted before their block comes.
    pub scan_prefetch_bytes: u32,
}

/// The policy measured on sm_90 (H100, H200).
pub const SM90: ScanPolicy = ScanPolicy {
    block: 256,
    rows: 16,
    by_key_rows: 8,
    by_key_rows_narrow: 12,
    reduce_by_key_thread_bytes: 128,
    reduce_by_key_min_blocks: 5,
    reduce_by_key_delay_ns: 2500,
    lookback_per_lane: 1,
    first_delay_ns: 3000,
    delay_from_tile: 256,
    delay_min_tiles: 2048,
    poll_delay_ns: 100,
    scan_prefetch_bytes: 4 << 20,
};

// Tried and dropped, all slower (CHANGELOG.md, issue 5): persistent blocks with cp.async
// prefetch, a whole-block look-back, `.minnctapersm` register caps for 3 or 4 blocks per SM;
// (issue 38) checkpoints rebuilt over two groups, a shorter chain with the same bits.

/// The policy of architecture `sm` (e.g. 80 for sm_80).
pub const fn for_arch(_sm: u32) -> ScanPolicy {
    SM90
}

/// The policy the kernels of this build are compiled with: that of the `-C target-cpu` on
/// nvptx64; the simulator uses sm_90's.
pub const ACTIVE: ScanPolicy = for_arch(compiled_arch());

const fn compiled_arch() -> u32 {
    if cfg!(target_feature = "sm_90") {
        90
    } else if cfg!(target_feature = "sm_80") {
        80
    } else {
        90
    }
}

const _: () = assert!(
    ACTIVE.block.is_multiple_of(32)
        && ACTIVE.block <= 1024
        && ACTIVE.rows >= 1
        && ACTIVE.by_key_rows >= 1
        && ACTIVE.by_key_rows_narrow >= 1
        && ACTIVE.lookback_per_lane >= 1
);

impl ScanPolicy {
    /// Elements per tile of the scan for elements of `elem_bytes` bytes.
    pub const fn tile_elems(&self, elem_bytes: u64) -> u64 {
        self.block as u64 * self.rows as u64 * 16 / elem_bytes
    }

    /// Tiles of `tile_bytes` (of values) a scan's block prefetches ahead of its own
    /// ([`ScanPolicy::scan_prefetch_bytes`]).
    pub const fn prefetch_tiles(&self, tile_bytes: u64) -> u64 {
        self.scan_prefetch_bytes as u64 / tile_bytes
    }

    /// Elements per tile of the 16-bit scans (`scan::half`): their threads load 8 bytes (four
    /// elements) per row, so a thread holds as many values (in f32 for the sum) as the 32-bit
    /// scan's and a tile is half its bytes.
    pub const fn half_tile_elems(&self) -> u64 {
        self.block as u64 * self.rows as u64 * 4
    }

    /// Tiles ahead the reduce by key asks L2 for, on a device holding `resident_blocks` of its
    /// blocks at once: a quarter of them, so a tile about a quarter of a block lifetime ahead is
    /// still in L2 when its block claims it; much further ahead it is evicted first
    /// (CHANGELOG.md, issue 15).
    pub const fn reduce_by_key_prefetch_tiles(&self, resident_blocks: u32) -> u32 {
        resident_blocks / 4
    }

    /// Elements per thread of the reduce by key with keys of `key_bytes` and values of
    /// `value_bytes` bytes: [`ScanPolicy::reduce_by_key_thread_bytes`] worth, rounded down to
    /// a multiple of 8 (whole 16-byte loads), 8 to 32 (the head mask is 32 bits).
    pub const fn reduce_by_key_items(&self, key_bytes: u64, value_bytes: u64) -> u64 {
        let items = self.reduce_by_key_thread_bytes as u64 / (key_bytes + value_bytes) / 8 * 8;
        if items < 8 {
            8
        } else if items > 32 {
            32
        } else {
            items
        }
    }

    /// Elements per tile of the reduce by key (see [`ScanPolicy::reduce_by_key_items`]).
    pub const fn reduce_by_key_tile_elems(&self, key_bytes: u64, value_bytes: u64) -> u64 {
        self.block as u64 * self.reduce_by_key_items(key_bytes, value_bytes)
    }

    /// Rows of the scan by key for values of `elem_bytes` bytes.
    pub const fn by_key_rows_for(&self, elem_bytes: u64) -> u32 {
        if elem_bytes >= 8 {
            self.by_key_rows
        } else {
            self.by_key_rows_narrow
        }
    }

    /// Elements per tile of the scan by key for values of `elem_bytes` bytes.
    pub const fn by_key_tile_elems(&self, elem_bytes: u64) -> u64 {
        self.block as u64 * self.by_key_rows_for(elem_bytes) as u64 * 16 / elem_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tile_sizes() {
        assert_eq!(ACTIVE.tile_elems(4) * 4, 64 * 1024);
        assert_eq!(ACTIVE.by_key_tile_elems(8) * 8, 32 * 1024);
        assert_eq!(ACTIVE.by_key_tile_elems(4) * 4, 48 * 1024);
        // Reduce by key: 16 u32 keys + f32 values a thread (32 KiB tiles); 8 of 12 or 16 bytes.
        assert_eq!(ACTIVE.reduce_by_key_items(4, 4), 16);
        assert_eq!(ACTIVE.reduce_by_key_items(4, 8), 8);
        assert_eq!(ACTIVE.reduce_by_key_items(8, 8), 8);
        assert_eq!(ACTIVE.half_tile_elems() * 2, 32 * 1024);
        assert_eq!(for_arch(80), for_arch(90));
    }
}
