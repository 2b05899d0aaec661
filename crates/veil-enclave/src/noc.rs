//! What the caches' traffic contends for outside the caches: the mesh's links under X-Y routing
//! and the memory controllers.
//!
//! Graphite, the paper's simulator, models both as queues (its `emesh_hop_by_hop` network with a
//! link contention model, its DRAM controllers with a bandwidth and a queue model, both
//! `history_tree`). Here each directed link and each controller is a queue of a
//! [`SlotQueues`] bank (veil-core): a link serves one flit per cycle, a controller one 64-byte line per `line_bytes /
//! bandwidth`. A packet's wait at each link it crosses, and a DRAM access's wait at its
//! controller, is added to the fixed latencies the hierarchy already charges (hop, slice,
//! DRAM), so with contention off the model is exactly the latency-only one.

use veil_core::SlotQueues;

/// Flits of a control packet (request, invalidation, acknowledgement): one head flit.
pub const CTRL_FLITS: f64 = 1.0;

/// Bucket length of the queues, log2 cycles, and their history length.
const BUCKET_SHIFT: u32 = 10;
const BUCKETS: usize = 128;

/// Directions of a tile's four outgoing links.
const EAST: usize = 0;
const WEST: usize = 1;
const NORTH: usize = 2;
const SOUTH: usize = 3;

#[derive(Clone, Copy, Debug)]
pub struct FabricConfig {
    /// Tiles on the mesh (columns = ceil(tiles / floor(sqrt(tiles)))).
    pub tiles: u32,
    /// One hop, one way (router + link), cycles: where a packet reaches the next link.
    pub hop_cycles: f64,
    /// Link width in bytes (a flit per cycle); 0 turns link contention off.
    pub flit_bytes: u32,
    /// Memory controllers; `tiles` (or more) puts one on every tile, serving the lines whose L2
    /// home is that tile (Graphite's `num_controllers = ALL`).
    pub controllers: u32,
    /// Bytes per cycle each controller moves; 0 turns controller queueing off.
    pub controller_bytes_per_cycle: f64,
}

pub struct Fabric {
    cols: u32,
    coord: Vec<(u16, u16)>,
    /// Four outgoing links per tile (queue tile x 4 + direction); none with links off.
    links: Option<SlotQueues>,
    data_flits: f64,
    hop: f64,
    ctrl_tile: Vec<u32>,
    ctrls: Option<SlotQueues>,
    ctrl_service: f64,
    per_tile: bool,
    /// Flit-hops carried and the total wait of packets at links; the same for DRAM accesses.
    pub flit_hops: f64,
    pub link_wait: f64,
    pub dram_served: u64,
    pub dram_wait: f64,
    /// Lines read from and written to DRAM.
    dram_reads: u64,
    dram_writes: u64,
}

impl Fabric {
    pub fn new(c: FabricConfig) -> Self {
        let rows = (c.tiles as f64).sqrt().floor().max(1.0) as u32;
        let cols = c.tiles.div_ceil(rows);
        // Links for the whole rectangle: with a partial last row (tiles not rows x cols) an X-Y
        // route from that row runs along it past its last tile, through mesh positions that hold
        // a router but no core.
        let positions = cols * c.tiles.div_ceil(cols);
        let links = (c.flit_bytes > 0).then(|| SlotQueues::new(4 * positions as usize, BUCKET_SHIFT, BUCKETS));
        let n = c.controllers.clamp(1, c.tiles);
        // Fewer controllers than tiles: spread evenly over the tile ids (tile i * T / n).
        let ctrl_tile: Vec<u32> = (0..n).map(|i| (i as u64 * c.tiles as u64 / n as u64) as u32).collect();
        let ctrls = (c.controller_bytes_per_cycle > 0.0).then(|| SlotQueues::new(n as usize, BUCKET_SHIFT, BUCKETS));
        let flit = c.flit_bytes.max(1) as f64;
        Self {
            cols,
            coord: (0..c.tiles).map(|t| ((t % cols) as u16, (t / cols) as u16)).collect(),
            links,
            data_flits: (64.0 / flit).ceil() + CTRL_FLITS,
            hop: c.hop_cycles,
            ctrl_tile,
            ctrls,
            ctrl_service: if c.controller_bytes_per_cycle > 0.0 { 64.0 / c.controller_bytes_per_cycle } else { 0.0 },
            per_tile: n >= c.tiles,
            flit_hops: 0.0,
            link_wait: 0.0,
            dram_served: 0,
            dram_wait: 0.0,
            dram_reads: 0,
            dram_writes: 0,
        }
    }

    /// Flits of a packet carrying one 64-byte line (payload plus a head flit).
    pub fn data_flits(&self) -> f64 {
        self.data_flits
    }

    /// Directed links of the mesh (the whole rectangle of positions, a partial last row included).
    pub fn link_count(&self) -> usize {
        let rows = (self.coord.len() as u32).div_ceil(self.cols.max(1));
        (2 * (self.cols.saturating_sub(1) * rows + rows.saturating_sub(1) * self.cols)) as usize
    }

    /// Requests (link crossings and DRAM accesses) that arrived before a queue's history.
    pub fn late(&self) -> u64 {
        self.links.iter().chain(&self.ctrls).map(|q| q.late).sum()
    }

    pub fn dram_lines(&self) -> u64 {
        self.dram_reads + self.dram_writes
    }

    pub fn links_on(&self) -> bool {
        self.links.is_some()
    }

    /// Sends a packet of `flits` from tile `a` to tile `b` (X first, then Y), leaving at `t`;
    /// returns its total wait at the links on the way.
    #[inline]
    pub fn send(&mut self, a: u32, b: u32, flits: f64, t: f64) -> f64 {
        let Some(links) = self.links.as_mut() else { return 0.0 };
        if a == b {
            return 0.0;
        }
        let route = XyRoute::new(self.cols, self.coord[a as usize], self.coord[b as usize]);
        let mut t = t;
        let mut wait = 0.0;
        route.each(|l| {
            let w = links.serve(l, t, flits);
            wait += w;
            t += w + self.hop;
            self.flit_hops += flits;
        });
        self.link_wait += wait;
        wait
    }

    /// The controller serving a line whose L2 home is `home`, and its tile.
    #[inline]
    pub fn controller(&self, line: u64, home: u32) -> (usize, u32) {
        if self.per_tile {
            return (home as usize, home);
        }
        let n = self.ctrl_tile.len() as u64;
        // Line-interleaved over the controllers (a hash, so strided streams spread too).
        let h = line.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
        let i = (h % n) as usize;
        (i, self.ctrl_tile[i])
    }

    /// An L2 miss at slice `home` at time `t`: the request to the controller, the controller's
    /// queue, the line back. Returns (wait at links and controller, hops to the controller).
    pub fn dram_read(&mut self, line: u64, home: u32, t: f64) -> (f64, u32) {
        self.dram_reads += 1;
        let (i, ct) = self.controller(line, home);
        let hops = self.hops(home, ct);
        let mut wait = self.send(home, ct, CTRL_FLITS, t);
        let at = t + wait + hops as f64 * self.hop;
        if let Some(ctrls) = self.ctrls.as_mut() {
            let w = ctrls.serve(i, at, self.ctrl_service);
            self.dram_served += 1;
            self.dram_wait += w;
            wait += w;
        }
        let df = self.data_flits;
        wait += self.send(ct, home, df, at + wait);
        (wait, hops)
    }

    /// A dirty line leaving the L2 for DRAM: it occupies links and the controller but nobody
    /// waits for it.
    pub fn dram_write(&mut self, line: u64, home: u32, t: f64) {
        self.dram_writes += 1;
        let (i, ct) = self.controller(line, home);
        let df = self.data_flits;
        let w = self.send(home, ct, df, t);
        if let Some(ctrls) = self.ctrls.as_mut() {
            ctrls.serve(i, t + w, self.ctrl_service);
        }
    }

    /// Manhattan distance between two tiles (X-Y routing).
    #[inline]
    pub fn hops(&self, a: u32, b: u32) -> u32 {
        let (ax, ay) = self.coord[a as usize];
        let (bx, by) = self.coord[b as usize];
        (ax.abs_diff(bx) + ay.abs_diff(by)) as u32
    }
}

/// The directed links an X-Y routed packet crosses, in order: link `tile x 4 + direction`
/// leaves `tile`.
#[derive(Clone, Copy)]
struct XyRoute {
    cols: usize,
    from: usize,
    /// Hops east (positive) or west, then south (positive) or north.
    dx: i32,
    dy: i32,
}

impl XyRoute {
    #[inline]
    fn new(cols: u32, (ax, ay): (u16, u16), (bx, by): (u16, u16)) -> Self {
        let cols = cols as usize;
        Self { cols, from: ay as usize * cols + ax as usize, dx: bx as i32 - ax as i32, dy: by as i32 - ay as i32 }
    }

    #[inline]
    fn each(&self, mut f: impl FnMut(usize)) {
        let mut tile = self.from;
        if self.dx > 0 {
            for _ in 0..self.dx {
                f(tile * 4 + EAST);
                tile += 1;
            }
        } else {
            for _ in 0..-self.dx {
                f(tile * 4 + WEST);
                tile -= 1;
            }
        }
        if self.dy < 0 {
            for _ in 0..-self.dy {
                f(tile * 4 + NORTH);
                tile -= self.cols;
            }
        } else {
            for _ in 0..self.dy {
                f(tile * 4 + SOUTH);
                tile += self.cols;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fabric(tiles: u32, flit: u32, ctrls: u32, bw: f64) -> Fabric {
        Fabric::new(FabricConfig { tiles, hop_cycles: 2.0, flit_bytes: flit, controllers: ctrls, controller_bytes_per_cycle: bw })
    }

    #[test]
    fn every_pair_routes_on_a_mesh_with_a_partial_last_row() {
        // 7 tiles: 2 rows of 4 columns, the last row holding 3; 32 tiles: 5 rows of 7, the last
        // holding 4. X-Y routes from the last row run past its last tile (they used to index a
        // link beyond the table and panic).
        for tiles in [7u32, 32, 64] {
            let mut f = fabric(tiles, 8, 0, 0.0);
            for a in 0..tiles {
                for b in 0..tiles {
                    assert!(f.send(a, b, 9.0, 100.0) >= 0.0);
                }
            }
            let rows = (tiles as f64).sqrt().floor() as usize;
            let cols = (tiles as usize).div_ceil(rows);
            let full = tiles as usize / cols;
            let rows_all = (tiles as usize).div_ceil(cols);
            assert!(f.link_count() >= 2 * ((cols - 1) * full + (rows_all - 1) * cols), "{tiles}");
        }
    }

    #[test]
    fn controller_saturates_at_its_bandwidth() {
        // One controller at 5 bytes/cycle (5 GB/s at 1 GHz) serves a 64-byte line per 12.8
        // cycles. Offer a line every 6.4 cycles (twice its rate) from its own tile: the last
        // line comes back no sooner than n x 12.8 cycles.
        let mut f = fabric(4, 0, 1, 5.0);
        let n = 4000;
        let mut end = 0.0f64;
        for k in 0..n {
            let t = k as f64 * 6.4;
            let (w, _) = f.dram_read(k as u64, 0, t);
            end = end.max(t + w + 12.8);
        }
        // The queue is a fluid model over 1024-cycle buckets: the rate holds within 5%.
        let rate = n as f64 * 64.0 / end;
        assert!((5.0 * 0.95..=5.0 * 1.05).contains(&rate), "served {rate:.3} bytes/cycle against 5");
        // At a tenth of its rate the same controller barely queues.
        let mut g = fabric(4, 0, 1, 5.0);
        let waits: f64 = (0..n).map(|k| g.dram_read(k as u64, 0, k as f64 * 128.0).0).sum();
        assert!(waits / (n as f64) < 1.0, "mean wait {}", waits / n as f64);
    }

    #[test]
    fn link_queue_grows_with_offered_load() {
        // Data packets (9 flits of 8 bytes) from tile 0 to tile 1 over the one link between
        // them, at 10% to 120% of the link's capacity.
        let mut waits = Vec::new();
        for load in [0.1, 0.3, 0.6, 0.9, 1.2] {
            let mut f = fabric(4, 8, 4, 0.0);
            let gap = f.data_flits() / load;
            let n = 3000;
            let w: f64 = (0..n).map(|k| f.send(0, 1, 9.0, k as f64 * gap)).sum();
            waits.push(w / n as f64);
        }
        assert!(waits[0] < 1.0, "{waits:?}");
        assert!(waits.windows(2).all(|p| p[1] > p[0]), "wait must grow with load: {waits:?}");
        assert!(waits[4] > 100.0, "past saturation the queue keeps growing: {waits:?}");
    }

    #[test]
    fn xy_route_crosses_manhattan_links_and_all_tiles_controller_is_the_home() {
        let mut f = fabric(16, 8, 16, 5.0);
        f.send(0, 15, 1.0, 0.0);
        assert_eq!(f.flit_hops, 6.0);
        assert_eq!(f.controller(12345, 7), (7, 7));
        let g = fabric(16, 8, 4, 5.0);
        let tiles: Vec<u32> = (0..400u64).map(|l| g.controller(l, 0).1).collect();
        for t in [0, 4, 8, 12] {
            let c = tiles.iter().filter(|&&x| x == t).count();
            assert!((70..=130).contains(&c), "controller at tile {t} serves {c} of 400 lines");
        }
    }

    #[test]
    fn contention_off_adds_nothing() {
        let mut f = fabric(64, 0, 64, 0.0);
        for k in 0..1000 {
            assert_eq!(f.send(0, 63, 9.0, 0.0), 0.0);
            assert_eq!(f.dram_read(k, 5, 0.0).0, 0.0);
        }
    }

    #[test]
    fn xy_route_books_exactly_as_hop_by_hop() {
        // The plain walk: one link at a time, each booked when the packet reaches it.
        fn reference(q: &mut SlotQueues, cols: u32, a: u32, b: u32, flits: f64, mut t: f64, hop: f64) -> f64 {
            let (mut x, mut y, bx, by) = (a % cols, a / cols, b % cols, b / cols);
            let mut wait = 0.0;
            while (x, y) != (bx, by) {
                let dir = if x < bx { EAST } else if x > bx { WEST } else if y > by { NORTH } else { SOUTH };
                let w = q.serve(((y * cols + x) * 4) as usize + dir, t, flits);
                wait += w;
                t += w + hop;
                match dir {
                    EAST => x += 1,
                    WEST => x -= 1,
                    NORTH => y -= 1,
                    _ => y += 1,
                }
            }
            wait
        }
        use rand::{Rng, SeedableRng};
        let mut r = veil_core::StreamRng::seed_from_u64(3);
        let mut f = fabric(64, 8, 64, 0.0);
        let mut q = SlotQueues::new(4 * 64, BUCKET_SHIFT, BUCKETS);
        let mut t = 0.0;
        for k in 0..100_000 {
            t += r.gen::<f64>() * 3.0;
            let (a, b) = (r.gen_range(0..64), r.gen_range(0..64));
            let flits = if r.gen::<bool>() { CTRL_FLITS } else { 9.0 };
            let at = (t - r.gen::<f64>() * 2000.0).max(0.0);
            let want = reference(&mut q, 8, a, b, flits, at, 2.0);
            assert_eq!(f.send(a, b, flits, at).to_bits(), want.to_bits(), "packet {k}");
        }
    }
}
