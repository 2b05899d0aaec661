//! The timing model: an interval model of an out-of-order core (Genbrugge, Eyerman and
//! Eeckhout, HPCA 2010; the model behind Sniper) driven by the L2 miss trace, over the SDRAM
//! model, the crypto engines, the frequent value table and the bitmap cache.
//!
//! **Core.** Between misses the core dispatches at min(width, ilp) instructions per cycle. A
//! load miss is issued when its instruction dispatches (after the L2 lookup) and the core keeps
//! dispatching younger instructions, so independent misses inside one ROB window overlap
//! (memory-level parallelism), until the instruction `rob` places behind the oldest outstanding
//! load miss; there it stalls until that miss's data is usable. At most `mshrs` load misses are
//! outstanding. Store misses and writebacks use the memory and the engines and stall the core
//! only when `write_buffer` of them are outstanding (the L2 cannot take another eviction or
//! store miss until the oldest has gone to memory). IPC = instructions / cycles.
//!
//! **A fill's data is usable** (secure policy) when every chunk is both decrypted and
//! authenticated; a chunk is decrypted either by the demand path (block decryption after the
//! line arrives; counter mode: the pad XOR) or, when its plaintext is a frequent value the
//! speculation guessed, by matching its ciphertext against the speculated one in the CAM,
//! whichever is first; authenticated either by the demand MAC computation after arrival or by
//! matching the fetched MAC against the speculated MAC. The relaxed policy waits for decryption
//! only. Under re-ordering nothing is usable before the line's bitmap is known (bitmap cache
//! hit, or fetched and decrypted).
//!
//! Which chunks the speculation hits is decided here from the plaintext (is each word in the
//! FVT); that this equals what the real cryptography finds is tested on whole traces against
//! [`crate::secure::SecureMemory`].

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::bitmap::BitmapCache;
use crate::config::{BitmapFetch, Config, MacStore};
use crate::deps::PointerDeps;
use crate::dram::Dram;
use crate::engines::{Arbitration, Engines};
use crate::error::{Error, Result};
use crate::fvt::{self, Fvt};
use crate::layout;
use crate::mode::CipherKind;
use crate::prefetch::Prefetcher;
use crate::record::{Kind, Record};
use crate::secure::{Mode, Scheme, BITMAP_REGION, LINES_PER_BITMAP};
use crate::tlb::Tlb;


/// Defines `fn $name(&mut self, args)` calling `self.$with(args)`, compiled with POPCNT,
/// BMI1/2, LZCNT and AVX2 (x86-64-v3) where the CPU has them (`Sim::x86_v3`, checked once):
/// the baseline x86-64 target has no population count or trailing-zero count instructions,
/// and the fill path counts and scans bitmaps many times per record (a bit-trick POPCNT is a
/// dozen instructions). Everything `$with` inlines (mark it `#[inline(always)]`) is compiled
/// again with these features; floating-point results are the same (no fused multiply-add:
/// Rust never contracts). The one dispatch of the timed step and of functional warm-up.
macro_rules! on_x86_v3 {
    ($(#[$doc:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),*) => $with:ident) => {
        $(#[$doc])*
        #[inline]
        $vis fn $name(&mut self, $($arg: $ty),*) {
            #[cfg(target_arch = "x86_64")]
            if self.x86_v3 {
                #[target_feature(enable = "popcnt,bmi1,bmi2,lzcnt,avx,avx2")]
                unsafe fn v3(sim: &mut Sim, $($arg: $ty),*) {
                    sim.$with($($arg),*)
                }
                // SAFETY: `x86_v3` is set only where the CPU has every feature `v3` enables.
                return unsafe { v3(self, $($arg),*) };
            }
            self.$with($($arg),*)
        }
    };
}

mod adaptive;
mod bitmaps;
mod counters;
mod functional;
mod results;
pub use functional::Spare;
pub use results::Results;

/// Data line indices stay below the bitmap region.
const LINE_LIMIT: u64 = BITMAP_REGION;
/// MAC lines (`mac_store = "separate"`) sit above data and bitmap lines.
const MAC_REGION: u64 = 1 << 59;

/// Multiply-shift hasher for line indices (the std SipHash costs more than the rest of a step).
#[derive(Default)]
pub struct LineHasher(u64);

impl Hasher for LineHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = (x ^ (x >> 29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type LineMap<V> = HashMap<u64, V, BuildHasherDefault<LineHasher>>;

/// One timing run over a record stream. All of the machine's state (core, caches of bitmaps and
/// translations, FVT, SDRAM reservations, engine calendar, counters) lives here, so a run can
/// be cloned at a record boundary (e.g. to warm one copy per sampled window).
#[derive(Clone)]
pub struct Sim {
    scheme: Scheme,
    encryption: bool,
    ct_spec: bool,
    mac_spec: bool,
    secure: bool,
    pad_precompute: bool,
    cmp: f64,
    l2: f64,
    cpi: f64,
    rob: u64,
    mshrs: usize,
    write_buffer: usize,
    /// When each outstanding store miss or writeback is done with memory.
    writes: std::collections::VecDeque<f64>,
    fvt: Fvt,
    dram: Dram,
    eng: Engines,
    bitmaps: BitmapCache,
    prefetcher: Prefetcher,
    pf_buf: Vec<u64>,
    /// Per page: the stored bitmaps of its 64 lines and which of them were set.
    line_bm: LineMap<([u8; 64], u64)>,
    track_bm: bool,
    bitmap_fetch: BitmapFetch,
    mac_store: MacStore,
    /// MAC bytes of a line: 8 per cipher-size chunk.
    mac_bytes: u32,
    tlb: Tlb,
    walk: f64,
    /// Counters in memory under a counter tree (None: counters on chip).
    ctr: Option<counters::CounterOrg>,
    bitmap_write_if_changed: bool,
    /// `reorder_policy = "adaptive"`: each page's re-ordering mode (None: every page re-orders).
    adaptive: Option<adaptive::Adaptive>,
    deps: Option<PointerDeps>,
    /// Warm-up records still to come.
    warm_left: u64,
    // core state
    t: f64,
    q: u64,
    window: std::collections::VecDeque<(u64, f64)>,
    r: Results,
    mem_sum: f64,
    crypto_sum: f64,
    /// The last load fill's latency as the program sees it (issue to usable data), cycles.
    last_load: f64,
    /// The CPU has x86-64-v3's integer extensions (POPCNT, BMI1/2, LZCNT) and AVX2 (checked
    /// once): `step` runs a copy of the hot path compiled with them.
    x86_v3: bool,
}

impl Sim {
    pub fn new(cfg: &Config) -> Result<Self> {
        Self::new_with(cfg, None)
    }

    /// [`Self::new`], taking the engine calendars, pointer table and stored-bitmap map from
    /// `spare` (cleared, from a machine of the same config) instead of allocating them.
    pub(crate) fn new_with(cfg: &Config, spare: Option<functional::Spare>) -> Result<Self> {
        let scheme = cfg.validate()?;
        let (lat_ns, stages) = match scheme.cipher {
            CipherKind::Tdes => (cfg.tdes_latency_ns, cfg.tdes_stages),
            _ => (cfg.aes_latency_ns, cfg.aes_stages),
        };
        let (eng, deps, line_bm) = match spare {
            Some(sp) => (sp.eng, sp.deps, sp.line_bm),
            None => (
                Engines::with_arbitration(lat_ns * cfg.freq_ghz, stages, cfg.engines, Arbitration::parse(&cfg.arbitration)?),
                cfg.pointer_dependences.then(|| PointerDeps::new(1 << 12)),
                LineMap::default(),
            ),
        };
        Ok(Sim {
            scheme,
            encryption: cfg.encryption,
            ct_spec: cfg.ct_speculation,
            mac_spec: cfg.mac_speculation,
            secure: cfg.policy == "secure",
            pad_precompute: cfg.pad_precompute,
            cmp: cfg.compare_cycles,
            l2: cfg.l2_latency,
            cpi: 1.0 / (cfg.width as f64).min(cfg.ilp),
            rob: cfg.rob,
            mshrs: cfg.mshrs,
            write_buffer: cfg.write_buffer,
            writes: Default::default(),
            fvt: Fvt::new(cfg.fvt_size, cfg.fvt_candidates, cfg.fvt_promote),
            dram: Dram::new(
                cfg.dram_banks,
                cfg.dram_row_bytes,
                cfg.bus_bytes,
                cfg.cpu_mem_ratio,
                cfg.t_cas,
                cfg.t_rcd,
                cfg.t_rp,
                cfg.dram_pipelined_cas,
            ),
            eng,
            bitmaps: BitmapCache::new(cfg.bitmap_cache_entries, cfg.bitmap_cache_ways),
            prefetcher: Prefetcher::new(&cfg.bitmap_prefetch, cfg.bitmap_prefetch_degree, cfg.bitmap_prefetch_streams)?,
            pf_buf: Vec::new(),
            line_bm,
            track_bm: cfg.encryption && scheme.chunk_bytes() == 16,
            bitmap_fetch: BitmapFetch::parse(&cfg.bitmap_fetch)?,
            mac_store: MacStore::parse(&cfg.mac_store)?,
            mac_bytes: 8 * scheme.chunks() as u32,
            tlb: Tlb::new(cfg.tlb_entries, cfg.tlb_ways),
            walk: cfg.walk_latency,
            ctr: counters::CounterOrg::new(cfg)?,
            bitmap_write_if_changed: cfg.bitmap_write_if_changed,
            adaptive: adaptive::Adaptive::new(cfg, scheme.reorders()),
            deps,
            warm_left: cfg.warmup_records,
            t: 0.0,
            q: 0,
            window: Default::default(),
            r: Results::default(),
            mem_sum: 0.0,
            crypto_sum: 0.0,
            last_load: 0.0,
            x86_v3: has_x86_v3(),
        })
    }

    /// Dispatches up to `n` more instructions, stalling behind full ROB windows.
    #[inline(always)]
    fn advance(&mut self, n: u64) {
        let target = self.q + n;
        while let Some(&(p, ready)) = self.window.front() {
            let block = p + self.rob;
            if block > target {
                break;
            }
            if block > self.q {
                self.t += (block - self.q) as f64 * self.cpi;
                self.q = block;
            }
            if ready > self.t {
                self.r.stall_cycles += ready - self.t;
                self.t = ready;
            }
            self.window.pop_front();
        }
        self.t += (target - self.q) as f64 * self.cpi;
        self.q = target;
        while matches!(self.window.front(), Some(&(_, r)) if r <= self.t) {
            self.window.pop_front();
        }
    }

    /// A fill of `line` requested at `t`: returns when its data arrives, when it is usable and
    /// by how much waiting for the bitmap delayed that.
    #[inline(always)]
    fn fill(&mut self, t: f64, line: u64, w: &[u64; 8], walk_at: Option<f64>) -> (f64, f64, f64) {
        let t_miss = t + self.l2;
        // Adaptive re-ordering: the page's mode, and the FVT's view of the line before it trains.
        let freq = if self.adaptive.is_some() { fvt::frequent_mask(&self.fvt.positions(w)) } else { 0 };
        let reorders = self.scheme.reorders() && self.page_reorders(line, freq, true);
        if let (Some(tw), true) = (walk_at, self.encryption && reorders && self.bitmap_fetch == BitmapFetch::WithWalk) {
            // Booked before the data line: it is requested earlier, at the walk's start.
            self.bitmap_walk_fetch(tw, line);
        }
        let t_data = if self.encryption { self.mem(t_miss, line) } else { self.dram.access(t_miss, line) };
        let cb = self.scheme.chunk_bytes();
        let n = self.scheme.chunks();
        // Candidates per position: the FVT's values before it trains on this line.
        let nf = self.fvt.capacity().min(self.fvt.values().len()) as u64;
        let (pred, pairs) = self.predict(line, w, reorders);
        if !self.encryption {
            return (t_data, t_data, 0.0);
        }

        let mut ready = t_data;
        let mut bm_cached = true;
        if reorders && (self.bitmap_fetch == BitmapFetch::Inline) {
            // The bitmap travels with the line's MACs, encrypted with a pad computed at miss
            // issue: known when the line arrives, not before (speculation covers every chunk).
            self.eng.demand(t_miss, 1);
            bm_cached = false;
        } else if reorders {
            let t_bm = self.bitmap_access(t_miss, line, false);
            bm_cached = t_bm <= t_miss;
            ready = ready.max(t_bm);
        }
        // Offsets (direct) or pads (counter) from the line's counter: on chip, or once its
        // block arrives from memory (verified later, before the data may be used).
        let (t_ctr, ctr_ok) = self.counter_fetch(t_miss, line, false);
        ready = ready.max(ctr_ok);
        let t_key = match self.scheme.mode {
            Mode::Direct => self.eng.demand(t_ctr, 1),
            Mode::Counter if self.pad_precompute => self.eng.demand(t_ctr, 4),
            Mode::Counter => self.eng.demand(t_data.max(t_ctr), 4),
        };
        let mut dem_dec = [0.0f64; 8];
        let mut dem_mac = [0.0f64; 8];
        let dem_ready = self.demand_path(t_data, t_key, n, &mut dem_dec, &mut dem_mac);
        let (positions, cands) = match (cb, reorders) {
            (8, _) => (n, nf),
            (_, true) => (if bm_cached { pairs } else { n }, nf * nf),
            (_, false) => (n, nf * nf),
        };
        let mut ct_done = [f64::INFINITY; 8];
        let mut mac_done = [f64::INFINITY; 8];
        self.speculate(positions, cands, t_key, t_ctr, dem_ready, &mut ct_done, &mut mac_done);

        // The load waits for its critical chunk (OCB and counter mode decrypt and authenticate
        // chunks independently, critical chunk first). The trace does not say which word the
        // load wanted, so its expected wait is taken: the mean over the line's chunks.
        let mut sum = 0.0;
        let mut sum_free = 0.0;
        for j in 0..n {
            let mut d = dem_dec[j];
            let mut m = dem_mac[j];
            if pred[j] {
                if self.ct_spec {
                    d = d.min(t_data.max(ct_done[j]) + self.cmp);
                }
                if self.mac_spec {
                    m = m.min(t_data.max(mac_done[j]) + self.cmp);
                }
            }
            let r = if self.secure { d.max(m) } else { d };
            sum += r.max(ready);
            sum_free += r;
        }
        // The line enters its page's window (adaptive): a switch applies from the next access.
        self.adapt(t_miss, line, freq, true);
        (t_data, sum / n as f64, (sum - sum_free) / n as f64)
    }

    /// Which chunks of the fetched line the FVT predicts (before training on it), with the
    /// predictability counts, then the FVT trained on the line; returns the predicted chunks
    /// and the frequent pairs of the line's stored bitmap.
    #[inline(always)]
    fn predict(&mut self, line: u64, w: &[u64; 8], reorders: bool) -> ([bool; 8], usize) {
        let cb = self.scheme.chunk_bytes();
        let n = self.scheme.chunks();
        let pos = self.fvt.positions(w);
        let freq = fvt::frequent_mask(&pos);
        self.r.fetched_words += 8;
        self.r.frequent_words += freq.count_ones() as u64;
        self.r.frequent_words_paired_natural += 2 * layout::predicted_mask(16, false, freq, 0).count_ones() as u64;
        // The stored bitmap; a line never written back during the trace was laid down by the
        // loader with the FVT of now (see docs/memcrypt-model.md).
        let stored_bm = if self.track_bm {
            let loader = self.loader_bitmap(line, freq);
            self.bitmap_or_insert(line, loader)
        } else {
            0
        };
        if self.track_bm {
            let paired = 2 * layout::predicted_mask(16, true, freq, stored_bm).count_ones() as u64;
            self.r.frequent_words_paired_reordered += paired;
            self.r.frequent_words_paired_at_fetch += (freq.count_ones() & !1) as u64;
            // Why the others are lost: the odd one out of the stored bitmap, when it is still
            // frequent, has no frequent partner; every other loss is a word whose FVT status
            // changed since the writeback (frequent now but not then, or its partner no longer).
            let odd = if stored_bm.count_ones() % 2 == 1 {
                let last = 7 - stored_bm.leading_zeros();
                (freq >> last & 1) as u64
            } else {
                0
            };
            self.r.frequent_words_lost_odd += odd;
            self.r.frequent_words_lost_changed += freq.count_ones() as u64 - paired - odd;
        }
        // Adaptive re-ordering: a line whose bitmap is zero is in natural order (converted by a
        // stop, laid out so by the loader, or written with no frequent word), so speculation
        // tries natural pairs at every position, as on a page that does not re-order.
        let natural = reorders && stored_bm == 0 && self.adaptive.is_some();
        let pairs = if natural { n } else { (stored_bm.count_ones() / 2) as usize };
        let pm = layout::predicted_mask(cb, reorders && !natural, freq, stored_bm);
        let mut pred = [false; 8];
        for (j, p) in pred.iter_mut().enumerate() {
            *p = pm >> j & 1 == 1;
        }
        self.r.chunks += n as u64;
        self.r.chunks_predicted += pm.count_ones() as u64;
        self.fvt.observe_line(w, &pos);
        (pred, pairs)
    }

    /// Demand path, always run: decryption (direct: a cipher pass; counter: the pad XOR), then
    /// the MAC of the decrypted chunk (MACs cover the plaintext, as OCB's tag does), once the
    /// line is in. Booked before the speculation of this miss. Sets each chunk's decryption and
    /// MAC times (out-parameters: the fill's own arrays, no copies on the hot path) and returns
    /// when the whole line is usable.
    #[inline(always)]
    fn demand_path(&mut self, t_data: f64, t_key: f64, n: usize, dem_dec: &mut [f64; 8], dem_mac: &mut [f64; 8]) -> f64 {
        let mut dem_ready = t_data;
        if self.scheme.mode == Mode::Direct {
            self.eng.demand_ops += n as u64;
            let mut slots = [0u64; 8];
            self.eng.book_demand(t_data, n as u64, u64::MAX, &[0, 1, 2, 3, 4, 5, 6, 7][..n], &mut slots);
            for j in 0..n {
                dem_dec[j] = self.eng.done(slots[j], t_data);
            }
        } else {
            dem_dec[..n].fill(t_data.max(t_key));
        }
        for j in 0..n {
            dem_mac[j] = self.eng.demand(dem_dec[j], 1);
            dem_ready = dem_ready.max(if self.secure { dem_mac[j] } else { dem_dec[j] });
        }
        dem_ready
    }

    /// Speculation at `positions` chunk positions, `cands` candidates each: per position the
    /// candidate ciphertexts (direct mode; counter mode XORs candidates with the pad for free)
    /// and, with MAC speculation, the candidates' MACs (computed from the candidate plaintexts, in parallel).
    /// Only slots from which an operation would finish before the demand path has made the line
    /// usable (`dem_ready`) are taken: later ones would be useless, so that speculation is
    /// cancelled. Sets when each position's last ciphertext and last MAC are done (left as they
    /// are, infinite, where none was issued).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn speculate(
        &mut self,
        positions: usize,
        cands: u64,
        t_key: f64,
        t_ctr: f64,
        dem_ready: f64,
        ct_done: &mut [f64; 8],
        mac_done: &mut [f64; 8],
    ) {
        let (iv, lat) = (self.eng.iv, self.eng.lat);
        if (self.ct_spec || self.mac_spec) && positions > 0 && cands > 0 {
            let ct_ops = if self.scheme.mode == Mode::Direct { cands } else { 0 };
            let mac_ops = if self.mac_spec { cands } else { 0 };
            let per_pos = ct_ops + mac_ops;
            let want = positions as u64 * per_pos;
            let from = if ct_ops > 0 { t_key } else { t_ctr };
            // `as u64` truncates and saturates negatives to 0: floor().max(0.0) without libm.
            let deadline = if iv > 0.0 { ((dem_ready - lat) / iv) as u64 } else { u64::MAX };
            // The last ciphertext and the last MAC of each position: their issue slots.
            let mut targets = [0u64; 16];
            let mut nt = 0;
            for j in 0..positions as u64 {
                if ct_ops > 0 {
                    targets[nt] = j * per_pos + ct_ops - 1;
                    nt += 1;
                }
                if mac_ops > 0 {
                    targets[nt] = (j + 1) * per_pos - 1;
                    nt += 1;
                }
            }
            let mut slots = [0u64; 16];
            let issued = self.eng.book(from, want, deadline, &targets[..nt], &mut slots);
            let per_t = (ct_ops > 0) as usize + (mac_ops > 0) as usize;
            let mut ct_last = [0u64; 8];
            let mut mac_last = [0u64; 8];
            for j in 0..positions.min(nt / per_t.max(1)) {
                ct_last[j] = slots[j * per_t];
                mac_last[j] = slots[j * per_t + per_t - 1];
            }
            self.eng.spec_ops += issued;
            for j in 0..positions {
                if (j as u64 + 1) * per_pos > issued {
                    break;
                }
                ct_done[j] = if ct_ops > 0 { self.eng.done(ct_last[j], from) } else { t_key };
                if mac_ops > 0 {
                    mac_done[j] = self.eng.done(mac_last[j], from);
                }
            }
        }
    }

    /// A dirty line written back at `t`: returns when it has crossed the bus.
    #[inline(always)]
    fn writeback(&mut self, t: f64, line: u64, w: &[u64; 8]) -> f64 {
        if !self.encryption {
            return self.dram.access(t, line);
        }
        let n = self.scheme.chunks() as u64;
        let ops = match self.scheme.mode {
            Mode::Direct => 1 + 2 * n,
            Mode::Counter => 4 + n,
        };
        self.eng.writeback_ops += ops;
        // The line goes to memory once it is encrypted and its MACs computed (its last
        // operation), with its new nonce or counter.
        // The bumped counter: its block must be in the counter cache (counters in memory).
        let (t_ctr, _) = self.counter_fetch(t, line, true);
        self.counter_bumped(t_ctr, line);
        let mut last = [0u64];
        self.eng.book_demand(t_ctr, ops, u64::MAX, &[ops - 1], &mut last);
        let sealed = self.eng.done(last[0], t_ctr);
        let done = self.mem(sealed, line);
        if self.track_bm {
            let freq = fvt::frequent_mask(&self.fvt.positions(w));
            // A page not re-ordering (adaptive) writes its lines in natural order, bitmap zero.
            let on = self.page_reorders(line, freq, true);
            if self.store_written_bitmap(line, if on { freq } else { 0 }) && on {
                self.bitmap_access(t, line, true);
            }
        }
        done
    }

    /// Books the crypto engines as before the speed work (the benchmark's baseline; same
    /// results).
    pub fn use_reference_booking(&mut self) {
        self.eng.use_reference_booking();
    }

    /// A warm-up record: the state a fast-forward keeps (the paper simulates caches and frequent
    /// value tracking while fast-forwarding) is trained as a timed record would train it: the
    /// FVT, each line's stored bitmap, the bitmap cache's contents and LRU order and its
    /// prefetcher. Nothing is timed and nothing counted; memory, engines and the pointer table
    /// start idle at the first measured record.
    fn warm(&mut self, rec: &Record) {
        self.warm_body(rec)
    }

    /// [`Self::warm`]'s body, inlined where a copy is compiled with more CPU features.
    #[inline(always)]
    fn warm_body(&mut self, rec: &Record) {
        let line = rec.addr >> 6;
        let w = layout::words(&rec.data);
        let pos = self.fvt.positions(&w);
        let freq = fvt::frequent_mask(&pos);
        self.warm_counter(line, rec.kind == Kind::Writeback);
        let on = !self.track_bm || self.page_reorders(line, freq, false);
        if rec.kind == Kind::Writeback {
            if self.track_bm && self.store_written_bitmap(line, if on { freq } else { 0 }) && on {
                self.warm_bitmap_cache(line, true);
            }
            return;
        }
        self.tlb.translate(line / LINES_PER_BITMAP);
        if self.track_bm {
            let loader = self.loader_bitmap(line, freq);
            self.bitmap_or_insert(line, loader);
            if self.scheme.reorders() && on && !(self.bitmap_fetch == BitmapFetch::Inline) {
                self.warm_bitmap_cache(line, false);
            }
        }
        self.adapt(0.0, line, freq, false);
        self.fvt.observe_line(&w, &pos);
    }

    /// A data or bitmap line of the protected machine to or from memory at `t`, with its MACs
    /// (`mac_store`); returns when the last of it has crossed the bus. Nonces stay on chip (see
    /// docs/memcrypt-model.md, replay) and move no bytes.
    #[inline(always)]
    fn mem(&mut self, t: f64, line: u64) -> f64 {
        match self.mac_store {
            MacStore::BesideLine => self.dram.access_extra(t, line, self.mac_bytes),
            MacStore::Separate => {
                // The MAC region holds 64 / mac_bytes lines' MACs per 64-byte line.
                let m = self.dram.access(t, MAC_REGION + line * self.mac_bytes as u64 / 64);
                self.dram.access(t, line).max(m)
            }
            MacStore::Untimed => self.dram.access(t, line),
        }
    }

    /// The data TLB for a fill whose instruction issues at `t`: returns when the access can go
    /// to the caches and, on a miss, when the page walk started. Writebacks carry physical
    /// addresses and need no translation.
    #[inline(always)]
    fn translate(&mut self, t: f64, line: u64) -> (f64, Option<f64>) {
        if self.tlb.translate(line / LINES_PER_BITMAP) {
            (t, None)
        } else {
            self.r.tlb_misses += 1;
            (t + self.walk, Some(t))
        }
    }

    /// Waits, if the write buffer is full, until its oldest entry has gone to memory; returns
    /// the core's time. Entries are taken in order (memory may finish them out of order).
    #[inline]
    fn write_slot(&mut self) -> f64 {
        let t = self.t;
        while self.writes.front().is_some_and(|&d| d <= t) {
            self.writes.pop_front();
        }
        if self.writes.len() >= self.write_buffer {
            let oldest = self.writes.pop_front().unwrap_or(t);
            if oldest > self.t {
                self.r.stall_cycles += oldest - self.t;
                self.t = oldest;
            }
        }
        self.t
    }

    /// Runs the hot path and the engine bookings compiled for the baseline CPU only, as on a
    /// CPU without POPCNT/BMI/AVX2 (the test of the fast copies' results compares against it).
    pub fn use_portable_code(&mut self) {
        self.x86_v3 = false;
        self.eng.use_portable_code();
    }

    /// Keep every SDRAM access from now on (the bus observer's view, [`Self::bus_accesses`]).
    pub fn log_bus(&mut self) {
        self.dram.log_accesses();
    }

    /// The SDRAM accesses since [`Self::log_bus`]: (command time, line, last beat), cycles.
    pub fn bus_accesses(&self) -> &[(f64, u64, f64)] {
        self.dram.accesses()
    }

    /// The latency of the last load fill as the program that issued it measures it, cycles.
    pub fn last_load_latency(&self) -> f64 {
        self.last_load
    }

    /// Processes one record.
    #[inline]
    pub fn step(&mut self, rec: &Record) {
        if self.warm_left > 0 {
            self.warm_left -= 1;
            self.r.warmup_records += 1;
            self.warm(rec);
            return;
        }
        self.timed_step(rec)
    }

    on_x86_v3! {
        /// A timed record ([`Self::step_with`]), on x86-64-v3 where the CPU has it.
        fn timed_step(rec: &Record) => step_with
    }

    #[inline(always)]
    fn step_with(&mut self, rec: &Record) {
        self.r.records += 1;
        self.r.insts += rec.insts;
        self.r.llc_hits += rec.llc_hits;
        self.advance(rec.insts);
        if self.r.records & 255 == 0 {
            // No request is made before the core's time, so older SDRAM reservations can no
            // longer delay one; dropping them only bounds memory (the searches stop before them).
            self.dram.retire(self.t);
        }
        let line = rec.addr >> 6;
        let w = layout::words(&rec.data);
        match rec.kind {
            Kind::LoadFill => {
                self.r.load_fills += 1;
                if self.window.len() >= self.mshrs {
                    // Out of MSHRs: wait for the oldest outstanding miss.
                    let earliest = self.window.iter().map(|x| x.1).fold(f64::INFINITY, f64::min);
                    if earliest > self.t {
                        self.r.stall_cycles += earliest - self.t;
                        self.t = earliest;
                    }
                    let t = self.t;
                    self.window.retain(|x| x.1 > t);
                }
                let mut t0 = self.t;
                if let Some(d) = &self.deps {
                    let p = d.producer_ready(line);
                    if p > t0 {
                        self.r.dependent_misses += 1;
                        t0 = p;
                    }
                }
                let (t_req, walk_at) = self.translate(t0, line);
                let (data, ready, bm_wait) = self.fill(t_req, line, &w, walk_at);
                if let Some(d) = &mut self.deps {
                    d.record(&w, ready, LINE_LIMIT);
                }
                self.r.bitmap_wait_cycles += bm_wait;
                self.mem_sum += data - t0;
                self.crypto_sum += ready - data;
                self.last_load = ready - t0;
                self.window.push_back((self.q, ready));
            }
            Kind::StoreFill => {
                self.r.store_fills += 1;
                let t0 = self.write_slot();
                let (t_req, walk_at) = self.translate(t0, line);
                let (data, _, _) = self.fill(t_req, line, &w, walk_at);
                self.writes.push_back(data);
            }
            Kind::Writeback => {
                self.r.writebacks += 1;
                let t0 = self.write_slot();
                let done = self.writeback(t0, line, &w);
                self.writes.push_back(done);
            }
        }
    }

    /// Drains outstanding misses and returns the results.
    pub fn finish(mut self) -> Results {
        for &(_, r) in &self.window {
            self.t = self.t.max(r);
        }
        let mut r = self.r;
        r.cycles = self.t;
        r.ipc = if self.t > 0.0 { r.insts as f64 / self.t } else { 0.0 };
        r.spec_ops = self.eng.spec_ops;
        r.writeback_ops = self.eng.writeback_ops;
        r.demand_ops = self.eng.demand_ops;
        r.spec_displaced = self.eng.displaced;
        let d = self.dram.stats();
        r.dram_row_hits = d.row_hits;
        r.dram_row_closed = d.row_closed;
        r.dram_row_conflicts = d.row_conflicts;
        r.dram_accesses = d.row_hits + d.row_closed + d.row_conflicts;
        r.mean_memory_cycles = if r.load_fills > 0 { self.mem_sum / r.load_fills as f64 } else { 0.0 };
        r.mean_crypto_cycles = if r.load_fills > 0 { self.crypto_sum / r.load_fills as f64 } else { 0.0 };
        r.dram_unloaded = self.dram.unloaded();
        r
    }
}

#[cfg(target_arch = "x86_64")]
fn has_x86_v3() -> bool {
    use std::arch::is_x86_feature_detected as has;
    has!("popcnt") && has!("bmi1") && has!("bmi2") && has!("lzcnt") && has!("avx") && has!("avx2")
}

#[cfg(not(target_arch = "x86_64"))]
fn has_x86_v3() -> bool {
    false
}

/// Runs the timing model over a record stream, polling `interrupted` every 64 Ki records.
pub fn simulate(
    cfg: &Config,
    records: impl Iterator<Item = Result<Record>>,
    interrupted: &dyn Fn() -> bool,
) -> Result<Results> {
    let mut sim = Sim::new(cfg)?;
    for (i, rec) in records.enumerate() {
        if i & 0xFFFF == 0 && interrupted() {
            return Err(Error::Interrupted);
        }
        sim.step(&rec?);
    }
    Ok(sim.finish())
}
