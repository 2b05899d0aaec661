//! Set-associative LRU caches and the tile memory hierarchy: private L1Ds (one per enclave
//! core, one per SSE), one L2 slice per tile, an MSI-style directory for lines that more than one
//! private cache may hold, and DRAM behind it.
//!
//! The L2 is one shared cache made of per-tile slices, addresses interleaved over the slices
//! (static NUCA, as in Graphite): a line's home slice is a hash of its address, and an L1 miss
//! pays the mesh distance to that slice and back. Line addresses carry the tile that allocated
//! them in their top bits (`HOME_SHIFT`) only to keep them distinct. Lines in the shared space
//! (`SHARED_BIT`) index the directory by their low bits; private lines never reach the
//! directory because only one private cache can ever hold them.
//!
//! Every access carries a time: the hierarchy's cursor `t`, which the simulator sets when it
//! prices a phase and which each access's stall moves on. Packets on the mesh and DRAM accesses
//! wait at the links and memory controllers they use at that time (`noc.rs`).

use crate::noc::{Fabric, FabricConfig, CTRL_FLITS};

pub const HOME_SHIFT: u32 = 44;
pub const SHARED_BIT: u64 = 1 << 40;
pub const LOW_MASK: u64 = (1 << 40) - 1;

#[inline]
fn mix(x: u64) -> u64 {
    // Spreads region-aligned addresses over sets; any bijective mix works.
    let x = (x ^ (x >> 31)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x ^ (x >> 29)
}

/// A set-associative cache with true LRU.
///
/// Each way is one `u64`: a 32-bit fingerprint of the line (0 = empty), a dirty bit and a 31-bit
/// LRU stamp. A set is stored as its `ways` way words followed by the `ways` full line addresses
/// (needed only for victims), so a lookup touches one host cache line and a fill the one next
/// to it. Fingerprints are half of a bijective mix of the line address: two lines of one set
/// sharing a fingerprint has probability ~2^-29 per fill.
#[derive(Clone, Debug)]
pub struct SetAssoc {
    sets: u64,
    ways: usize,
    data: Vec<u64>,
    clock: u32,
}

/// A line pushed out by a fill.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Victim {
    pub line: u64,
    pub dirty: bool,
}

const DIRTY: u64 = 1 << 31;
const STAMP: u64 = DIRTY - 1;

impl SetAssoc {
    pub fn new(bytes: u64, ways: usize) -> Self {
        let lines = (bytes / 64).max(1) as usize;
        let ways = ways.clamp(1, lines);
        let sets = (lines / ways).max(1);
        Self { sets: sets as u64, ways, data: vec![0; 2 * sets * ways], clock: 0 }
    }

    pub fn capacity_lines(&self) -> usize {
        self.sets as usize * self.ways
    }

    /// Index of the set's first way word, and the fingerprint of `line`.
    #[inline]
    fn key(&self, line: u64) -> (usize, u64) {
        let m = mix(line);
        // Multiply-shift range reduction on the high half: any set count, no division.
        let set = ((m as u128 * self.sets as u128) >> 64) as usize;
        let fp = ((m as u32) | 1) as u64; // low half, never 0
        (set * 2 * self.ways, fp << 32)
    }

    #[inline]
    fn find(&self, line: u64) -> Option<usize> {
        let (b, fp) = self.key(line);
        self.data[b..b + self.ways].iter().position(|&x| x & !0xFFFF_FFFF == fp).map(|i| b + i)
    }

    #[inline]
    fn tick(&mut self) -> u64 {
        self.clock += 1;
        if self.clock as u64 > STAMP {
            // Stamps are about to overflow 31 bits: restart them in the same relative order.
            let ways = self.ways;
            let mut order: Vec<usize> = (0..self.data.len()).filter(|&i| (i / ways) % 2 == 0 && self.data[i] != 0).collect();
            order.sort_by_key(|&i| self.data[i] & STAMP);
            for (k, &i) in order.iter().enumerate() {
                self.data[i] = (self.data[i] & !STAMP) | (k as u64 + 1);
            }
            self.clock = order.len() as u32 + 1;
        }
        self.clock as u64
    }

    pub fn contains(&self, line: u64) -> bool {
        self.find(line).is_some()
    }

    /// Whether `line` is present, and if so whether it is dirty.
    #[inline]
    pub fn probe(&self, line: u64) -> Option<bool> {
        self.find(line).map(|i| self.data[i] & DIRTY != 0)
    }

    /// Looks `line` up; on a hit refreshes LRU and marks it dirty on a write.
    #[inline]
    pub fn touch(&mut self, line: u64, write: bool) -> bool {
        match self.find(line) {
            Some(i) => {
                let c = self.tick();
                let d = if write { DIRTY } else { 0 };
                self.data[i] = (self.data[i] & !STAMP) | c | d;
                true
            }
            None => false,
        }
    }

    /// Inserts `line` (known absent) and returns what it displaced.
    pub fn fill(&mut self, line: u64, dirty: bool) -> Option<Victim> {
        let (b, fp) = self.key(line);
        let mut v = b;
        for i in b..b + self.ways {
            if self.data[i] == 0 {
                v = i;
                break;
            }
            if self.data[i] & STAMP < self.data[v] & STAMP {
                v = i;
            }
        }
        let old = self.data[v];
        let out = (old != 0).then(|| Victim { line: self.data[v + self.ways], dirty: old & DIRTY != 0 });
        let c = self.tick();
        self.data[v] = fp | c | if dirty { DIRTY } else { 0 };
        self.data[v + self.ways] = line;
        out
    }

    /// Hit-or-fill in one call (L2 use): returns (hit, victim).
    pub fn access(&mut self, line: u64, write: bool) -> (bool, Option<Victim>) {
        if self.touch(line, write) {
            (true, None)
        } else {
            (false, self.fill(line, write))
        }
    }

    /// Removes `line`; returns whether it was dirty, or None if absent.
    pub fn invalidate(&mut self, line: u64) -> Option<bool> {
        let i = self.find(line)?;
        let d = self.data[i] & DIRTY != 0;
        self.data[i] = 0;
        Some(d)
    }

    /// Marks a present line clean (after its owner supplied it to a reader).
    pub fn clean(&mut self, line: u64) {
        if let Some(i) = self.find(line) {
            self.data[i] &= !DIRTY;
        }
    }
}

/// Latencies (cycles) the hierarchy charges per access.
#[derive(Clone, Copy, Debug)]
pub struct Latency {
    pub l2_hit: f64,
    pub hop: f64,
    pub remote_l1: f64,
    pub dram: f64,
    /// Memory encryption and integrity, added to each DRAM access when the model is secure.
    pub crypto: f64,
}

/// Miss counters of one private cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct L1Stats {
    pub accesses: u64,
    pub misses: u64,
    /// Misses (or write upgrades) that another private cache had to serve or give up a copy for.
    pub sharing: u64,
}

#[derive(Clone, Debug, Default)]
struct DirEntry {
    /// Private caches holding a copy.
    sharers: Vec<u16>,
    /// The one holding it modified, if any.
    owner: Option<u16>,
}

/// Every cache of the chip. L1 ids: enclave cores 0..cores, then SSEs.
pub struct Hierarchy {
    pub l1: Vec<SetAssoc>,
    l1_tile: Vec<u32>,
    /// Private caches that do not allocate lines they write (the SSE evicts system-call data to
    /// the L2 instead of keeping it, so the core can take it back without a sharing miss).
    l1_no_write_alloc: Vec<bool>,
    pub l2: Vec<SetAssoc>,
    dir: Vec<DirEntry>,
    /// (x, y) of each tile on the mesh.
    coord: Vec<(u16, u16)>,
    tiles: u64,
    lat: Latency,
    pub l1_stats: Vec<L1Stats>,
    pub l2_accesses: Vec<u64>,
    pub l2_misses: Vec<u64>,
    pub dram_accesses: u64,
    /// Links and memory controllers (waits on top of the fixed latencies).
    pub fabric: Fabric,
    /// Time of the next access (cycles): set per phase, advanced by each access's stall.
    pub t: f64,
}


impl Hierarchy {
    /// `l1s`: (bytes, ways, tile, no_write_allocate) per private cache; `l2_bytes` per tile.
    pub fn new(l1s: &[(u64, usize, u32, bool)], tiles: u32, l2_bytes: u64, l2_ways: usize, dir_lines: usize, lat: Latency) -> Self {
        let rows = (tiles as f64).sqrt().floor().max(1.0) as u32;
        let cols = tiles.div_ceil(rows);
        Self {
            l1: l1s.iter().map(|&(b, w, _, _)| SetAssoc::new(b, w)).collect(),
            l1_tile: l1s.iter().map(|&(_, _, t, _)| t).collect(),
            l1_no_write_alloc: l1s.iter().map(|&(_, _, _, n)| n).collect(),
            l2: (0..tiles).map(|_| SetAssoc::new(l2_bytes, l2_ways)).collect(),
            dir: vec![DirEntry::default(); dir_lines],
            coord: (0..tiles).map(|t| ((t % cols) as u16, (t / cols) as u16)).collect(),
            tiles: tiles as u64,
            lat,
            l1_stats: vec![L1Stats::default(); l1s.len()],
            l2_accesses: vec![0; tiles as usize],
            l2_misses: vec![0; tiles as usize],
            dram_accesses: 0,
            fabric: Fabric::new(FabricConfig { tiles, hop_cycles: lat.hop, flit_bytes: 0, controllers: tiles, controller_bytes_per_cycle: 0.0 }),
            t: 0.0,
        }
    }

    /// Replaces the (contention-free) links and controllers `new` builds.
    pub fn with_fabric(mut self, f: FabricConfig) -> Self {
        self.fabric = Fabric::new(f);
        self
    }

    /// The L2 slice that holds `line`.
    #[inline]
    pub fn home_of(&self, line: u64) -> u32 {
        let h = mix(line ^ 0x5851_F42D_4C95_7F2D).rotate_left(17);
        ((h as u128 * self.tiles as u128) >> 64) as u32
    }

    /// Manhattan distance between two tiles on the mesh (X-Y routing).
    #[inline]
    pub fn hops(&self, a: u32, b: u32) -> u32 {
        if a == b {
            return 0;
        }
        let (ax, ay) = self.coord[a as usize];
        let (bx, by) = self.coord[b as usize];
        (ax.abs_diff(bx) + ay.abs_diff(by)) as u32
    }

    #[inline]
    fn l2_round_trip(&self, from_tile: u32, home: u32) -> f64 {
        self.lat.l2_hit + 2.0 * self.hops(from_tile, home) as f64 * self.lat.hop
    }

    /// Reads or writes `line` in the home L2 slice at time `t`; returns the stall beyond the
    /// slice latency (on a miss: DRAM, the way to its controller and back, the waits there).
    fn l2_access(&mut self, line: u64, write: bool, t: f64) -> f64 {
        let h = self.home_of(line);
        self.l2_accesses[h as usize] += 1;
        let (hit, victim) = self.l2[h as usize].access(line, write);
        if let Some(v) = victim.filter(|v| v.dirty) {
            self.fabric.dram_write(v.line, h, t);
        }
        if hit {
            0.0
        } else {
            self.l2_misses[h as usize] += 1;
            self.dram_accesses += 1;
            let (wait, hops) = self.fabric.dram_read(line, h, t);
            self.lat.dram + self.lat.crypto + wait + 2.0 * hops as f64 * self.lat.hop
        }
    }

    /// A request from `tile` to the home slice and the reply back (`reply_flits`), around an
    /// L2 access: the link waits of both packets plus the access's own stall.
    fn via_home(&mut self, tile: u32, home: u32, line: u64, write: bool, reply_flits: f64) -> f64 {
        let t = self.t;
        let one_way = self.lat.hop * self.hops(tile, home) as f64;
        let w1 = self.fabric.send(tile, home, CTRL_FLITS, t);
        let at = t + w1 + one_way + self.lat.l2_hit;
        let l2 = self.l2_access(line, write, at);
        let w2 = self.fabric.send(home, tile, reply_flits, at + l2);
        w1 + l2 + w2
    }

    /// A dirty line leaving a private cache goes back to its home slice (off the critical path).
    fn writeback(&mut self, line: u64) {
        let h = self.home_of(line) as usize;
        self.l2[h].access(line, true);
    }

    fn evicted_from(&mut self, id: usize, v: Victim) {
        if v.dirty && self.fabric.links_on() {
            // The written-back line crosses the mesh to its home slice (nobody waits for it).
            let (tile, home) = (self.l1_tile[id], self.home_of(v.line));
            let df = self.fabric.data_flits();
            self.fabric.send(tile, home, df, self.t);
        }
        if v.line & SHARED_BIT != 0 {
            let e = &mut self.dir[(v.line & LOW_MASK) as usize];
            e.sharers.retain(|&s| s as usize != id);
            if e.owner == Some(id as u16) {
                e.owner = None;
            }
            if v.dirty {
                self.writeback(v.line);
            }
        }
        // A dirty private line goes back to the slice it was filled from, which still holds
        // it unless it aged out; skipping that update saves a host cache miss per eviction and
        // changes no hit or miss on the paths the model measures.
    }

    /// One access by private cache `id` at the cursor `t`; returns the stall in cycles (0 for an
    /// L1 hit) and moves the cursor on by it.
    pub fn access(&mut self, id: usize, line: u64, write: bool) -> f64 {
        let s = self.access_at(id, line, write);
        self.t += s;
        s
    }

    fn access_at(&mut self, id: usize, line: u64, write: bool) -> f64 {
        self.l1_stats[id].accesses += 1;
        let shared = line & SHARED_BIT != 0;
        if !shared && self.l1[id].touch(line, write) {
            return 0.0;
        }
        let tile = self.l1_tile[id];
        let home = self.home_of(line);
        if !shared {
            self.l1_stats[id].misses += 1;
            let df = self.fabric.data_flits();
            let stall = self.l2_round_trip(tile, home) + self.via_home(tile, home, line, false, df);
            if let Some(v) = self.l1[id].fill(line, write) {
                self.evicted_from(id, v);
            }
            return stall;
        }
        let di = (line & LOW_MASK) as usize;
        let me = id as u16;
        // A dirty copy in this L1 means this L1 is the directory's owner (M state), so hits
        // never need the directory.
        let probe = self.l1[id].probe(line);
        let present = probe.is_some();
        if probe == Some(true) || (present && !write) {
            self.l1[id].touch(line, write);
            return 0.0;
        }
        let owner = self.dir[di].owner;
        // A miss, or a write upgrade of a shared copy: the directory at the home tile acts.
        let mut stall = self.l2_round_trip(tile, home);
        let mut sharing = false;
        let mut from_l2 = !present;
        let t0 = self.t;
        let df = self.fabric.data_flits();
        if let Some(o) = owner.filter(|&o| o != me) {
            // The modified copy is fetched from its holder; it writes the line back to L2.
            sharing = true;
            from_l2 = false;
            let ot = self.l1_tile[o as usize];
            stall += self.lat.remote_l1 + 2.0 * self.hops(home, ot) as f64 * self.lat.hop;
            let w = self.fabric.send(tile, home, CTRL_FLITS, t0);
            let w = w + self.fabric.send(home, ot, CTRL_FLITS, t0 + w);
            let w = w + self.fabric.send(ot, home, df, t0 + w);
            stall += w + self.fabric.send(home, tile, df, t0 + w);
            self.writeback(line);
            if write {
                self.l1[o as usize].invalidate(line);
                self.dir[di].sharers.retain(|&s| s != o);
            } else {
                self.l1[o as usize].clean(line);
            }
            self.dir[di].owner = None;
        }
        if write {
            let mut any = false;
            for k in 0..self.dir[di].sharers.len() {
                let s = self.dir[di].sharers[k];
                if s != me {
                    any = true;
                    self.l1[s as usize].invalidate(line);
                    let st = self.l1_tile[s as usize];
                    self.fabric.send(home, st, CTRL_FLITS, t0);
                }
            }
            if any {
                sharing = true;
                stall += self.lat.remote_l1;
            }
            self.dir[di].sharers.retain(|&s| s == me);
        }
        if from_l2 {
            stall += self.via_home(tile, home, line, write && self.l1_no_write_alloc[id], df);
        } else if !sharing {
            // A write upgrade of a copy already held: request and grant, no data.
            let w = self.fabric.send(tile, home, CTRL_FLITS, t0);
            stall += w + self.fabric.send(home, tile, CTRL_FLITS, t0 + w);
        }
        if !present || sharing {
            self.l1_stats[id].misses += 1;
        }
        if sharing {
            self.l1_stats[id].sharing += 1;
        }
        if write && self.l1_no_write_alloc[id] {
            // Write-through without allocation: the line ends up only in the L2.
            if present {
                self.l1[id].invalidate(line);
            }
            self.dir[di].sharers.retain(|&s| s != me);
            self.dir[di].owner = None;
            if !from_l2 {
                let h = self.home_of(line) as usize;
                self.l2[h].access(line, true);
            }
            return stall;
        }
        if present {
            self.l1[id].touch(line, write);
        } else if let Some(v) = self.l1[id].fill(line, write) {
            self.evicted_from(id, v);
        }
        let e = &mut self.dir[di];
        if !e.sharers.contains(&me) {
            e.sharers.push(me);
        }
        if write {
            e.owner = Some(me);
        }
        stall
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lat() -> Latency {
        Latency { l2_hit: 10.0, hop: 1.0, remote_l1: 5.0, dram: 100.0, crypto: 0.0 }
    }

    #[test]
    fn lru_keeps_the_most_recent_lines() {
        // 4 lines, fully associative: touching 0..4 then 4 evicts 0 (least recent).
        let mut c = SetAssoc::new(4 * 64, 4);
        for l in 0..4 {
            assert!(c.fill(l, false).is_none());
        }
        assert!(c.touch(0, false));
        let v = c.fill(4, false).unwrap();
        assert_eq!(v.line, 1, "line 1 was least recently used");
        assert!(c.contains(0) && !c.contains(1));
    }

    #[test]
    fn working_set_within_capacity_hits_after_warmup() {
        let mut c = SetAssoc::new(32 * 1024, 8);
        let lines: Vec<u64> = (0..256).map(|i| i * 7919).collect(); // 16 KB
        for &l in &lines {
            c.access(l, false);
        }
        let hits = lines.iter().filter(|&&l| c.access(l, false).0).count();
        // Hashed set index: a few sets can overflow, but nearly everything must hit.
        assert!(hits >= 240, "hits {hits}");
        // Four times the capacity streamed cyclically under LRU never hits.
        let big: Vec<u64> = (0..2048).collect();
        for _ in 0..2 {
            for &l in &big {
                c.access(l, false);
            }
        }
        assert_eq!(big.iter().filter(|&&l| c.access(l, false).0).count(), 0);
    }

    #[test]
    fn private_miss_costs_l2_then_dram() {
        let mut h = Hierarchy::new(&[(1024, 2, 0, false)], 4, 64 * 1024, 8, 0, lat());
        // 2x2 mesh: tile 3 is two hops from tile 0.
        assert_eq!((h.hops(0, 3), h.hops(0, 1), h.hops(1, 2)), (2, 1, 2));
        let mut homes = [0u32; 4];
        for line in 0..400u64 {
            let home = h.home_of(line);
            homes[home as usize] += 1;
            let trip = 10.0 + 2.0 * h.hops(0, home) as f64;
            assert_eq!(h.access(0, line, false), trip + 100.0, "cold line {line}");
            if line < 8 {
                assert_eq!(h.access(0, line, false), 0.0);
            }
        }
        // Interleaving spreads lines evenly over the slices.
        assert!(homes.iter().all(|&c| (70..=130).contains(&c)), "{homes:?}");
        assert_eq!(h.l2_misses.iter().sum::<u64>(), 400);
        // Line 0 left the 16-line L1 long ago but stays in the L2: one round trip, no DRAM.
        let trip = 10.0 + 2.0 * h.hops(0, h.home_of(0)) as f64;
        assert_eq!(h.access(0, 0, false), trip);
    }

    #[test]
    fn producer_consumer_line_counts_sharing_misses() {
        // Two cores on tile 0 share one line: each handoff is a sharing miss.
        let mut h = Hierarchy::new(&[(1024, 2, 0, false), (1024, 2, 0, false)], 1, 64 * 1024, 8, 4, lat());
        let line = SHARED_BIT | 2;
        h.access(0, line, true); // cold write
        assert_eq!(h.l1_stats[0].sharing, 0);
        let s = h.access(1, line, false); // read of a modified remote copy
        assert_eq!(h.l1_stats[1].sharing, 1);
        assert!(s >= 15.0);
        h.access(0, line, true); // upgrade: invalidates core 1
        assert_eq!(h.l1_stats[0].sharing, 1);
        assert!(!h.l1[1].contains(line));
        assert_eq!(h.access(0, line, false), 0.0);
    }

    #[test]
    fn no_write_allocate_cache_leaves_data_in_l2() {
        // Cache 1 (an SSE) writes; cache 0 then reads it from L2: no sharing miss.
        let mut h = Hierarchy::new(&[(1024, 2, 0, false), (1024, 2, 0, true)], 1, 64 * 1024, 8, 4, lat());
        let line = SHARED_BIT | 1;
        h.access(1, line, true);
        assert!(!h.l1[1].contains(line));
        let s = h.access(0, line, false);
        assert_eq!(s, 10.0, "L2 hit, no DRAM and no remote L1 (one tile: no hops)");
        assert_eq!(h.l1_stats[0].sharing, 0);
    }
}
