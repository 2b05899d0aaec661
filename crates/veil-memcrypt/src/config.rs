//! The timing model's configuration. Every default is the paper's Table 2 machine where the
//! paper gives a value; the others are documented choices (docs/memcrypt-model.md lists each with its
//! source).

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::mode::CipherKind;
use crate::secure::{Mode, Scheme};

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// false: the unprotected machine (no decryption or authentication at all).
    pub encryption: bool,
    /// "direct" (OCB-like) or "counter".
    pub mode: String,
    /// "aes128", "aes256" or "tdes" (direct mode only).
    pub cipher: String,
    /// Frequent value ciphertext speculation.
    pub ct_speculation: bool,
    /// Frequent value MAC speculation.
    pub mac_speculation: bool,
    /// Re-order frequent 64-bit words into pairs (128-bit ciphers), with the bitmap.
    pub reorder: bool,
    /// Which pages re-order (with `reorder`): "always" (every page, the paper) or "adaptive"
    /// (beyond the paper: a page whose recent fills hold no frequent values stops re-ordering
    /// and fetching its bitmap line, and resumes when they return; sim/adaptive.rs).
    pub reorder_policy: String,
    /// Adaptive: which fills count for re-ordering: "unpaired" (a fill with frequent words the
    /// natural order leaves unpaired: what re-ordering can gain) or "frequent" (a fill with at
    /// least two frequent words).
    pub adaptive_signal: String,
    /// Adaptive: the fills of a page its decision looks back over (1..32).
    pub adaptive_window: u32,
    /// Adaptive: a re-ordering page stops once its last `adaptive_window` fills (since its last
    /// switch) hold at most this many fills with frequent values.
    pub adaptive_off_max: u32,
    /// Adaptive: a page that stopped resumes once this many of its last `adaptive_window`
    /// fills hold frequent values.
    pub adaptive_on_min: u32,
    /// "secure": data is used only after decryption and authentication; "relaxed": after
    /// decryption (authentication finishes off the critical path).
    pub policy: String,
    /// Counter mode: pads are computed when the miss is issued (counters on chip); false:
    /// after the line arrives.
    pub pad_precompute: bool,
    /// Frequent values N.
    pub fvt_size: usize,
    /// Candidate filter entries (power of two).
    pub fvt_candidates: usize,
    /// Sightings a candidate needs to enter the FVT.
    pub fvt_promote: u32,
    /// Core clock, GHz (Table 2: 1).
    pub freq_ghz: f64,
    /// Dispatch/issue width (Table 2: 8).
    pub width: u32,
    /// Sustained IPC between L2 misses (dependences, branches, L1 misses); dispatch runs at
    /// min(width, ilp).
    pub ilp: f64,
    /// Reorder buffer entries.
    pub rob: u64,
    /// Outstanding L2 load misses (MSHRs).
    pub mshrs: usize,
    /// Store misses and dirty writebacks the L2 can have outstanding (its write buffer): a
    /// full buffer stalls the core until the oldest one has gone to memory.
    pub write_buffer: usize,
    /// L2 hit latency, cycles (Table 2: 4 at 256 KB, 8 at 1 MB); a miss is known after it.
    pub l2_latency: f64,
    /// A load miss whose line address a recent load miss's line held as a word waits for that
    /// line to be usable (pointer chasing; see deps.rs).
    pub pointer_dependences: bool,
    /// Cache line bytes (Table 2: 64); a trace with another line size is refused.
    pub line_bytes: u32,
    /// Core clocks per memory-bus clock (Table 2: 200 MHz bus at 1 GHz = 5; Fig. 9: 4 and 6).
    pub cpu_mem_ratio: f64,
    /// Memory bus width, bytes (Table 2: 8).
    pub bus_bytes: u32,
    /// SDRAM banks.
    pub dram_banks: u32,
    /// SDRAM row (page) bytes.
    pub dram_row_bytes: u64,
    /// CAS latency, bus clocks (Table 2: 20).
    pub t_cas: f64,
    /// RAS-to-CAS, bus clocks (Table 2: 7).
    pub t_rcd: f64,
    /// Precharge, bus clocks (Table 2: 7).
    pub t_rp: f64,
    /// A bank takes its next command once a read's burst is out of the array, while the read's
    /// CAS latency runs (PC SDRAM); false: the bank is held until the burst starts.
    pub dram_pipelined_cas: bool,
    /// AES latency, ns (Table 2: 65).
    pub aes_latency_ns: f64,
    /// AES pipeline stages (paper §4: each of 14 rounds pipelined into 4-7 stages).
    pub aes_stages: u32,
    /// TDES latency, ns (Table 2: 96).
    pub tdes_latency_ns: f64,
    /// TDES pipeline stages (Table 2: 48).
    pub tdes_stages: u32,
    /// Replicated pipelined engines, shared by demand, MAC and speculative work.
    pub engines: u32,
    /// How engine slots are shared: "demand_first" (speculation only in slots no demand work
    /// needs, the paper's "idle cycles") or "fcfs" (one calendar, first come first served).
    pub arbitration: String,
    /// CAM compare of a speculated ciphertext or MAC, cycles.
    pub compare_cycles: f64,
    /// Bitmap cache entries (one 64-byte bitmap line = one 4 KB page each; 128 = 8 KB, §3.2.2).
    pub bitmap_cache_entries: usize,
    /// Bitmap cache ways.
    pub bitmap_cache_ways: usize,
    /// Bitmap prefetcher (paper §3.2.2: "bitmaps can be prefetched using simple hardware
    /// prefetch technique"): "none", "next_line" (tagged) or "stream" (see prefetch.rs).
    pub bitmap_prefetch: String,
    /// Bitmap lines a prefetch trigger fetches ahead.
    pub bitmap_prefetch_degree: u32,
    /// Streams the "stream" prefetcher tracks.
    pub bitmap_prefetch_streams: usize,
    /// A writeback updates its page's bitmap line only when the line's bitmap changed (the
    /// bitmap it was fetched with is kept beside it in the L2); false: every writeback does.
    pub bitmap_write_if_changed: bool,
    /// When a page's bitmap line is fetched: "with_walk" (alongside the page walk of a data-TLB
    /// miss, the paper's sizing of the bitmap cache against the TLB), "on_miss" (on a
    /// bitmap-cache miss when the L2 miss is known), "inline" (beyond the paper: each line's
    /// bitmap travels with its MACs, no bitmap lines, but speculation cannot know the pairs
    /// before the line arrives).
    pub bitmap_fetch: String,
    /// Where each line's MACs are stored: "beside_line" (one longer burst: 64 B of MACs under
    /// TDES, 32 B under AES), "separate" (a second access to a MAC line), "untimed" (no MAC
    /// traffic). Nonces are on chip.
    pub mac_store: String,
    /// Where the trusted per-line counters (nonces) live, in both models: "tree" (in memory
    /// under a Bonsai-Merkle counter tree, root on chip: the functional model verifies every
    /// counter against the root, the timing model charges the counter cache's misses, tree
    /// fetches and dirty evictions; sim/counters.rs) or "on_chip" (unbounded trusted storage,
    /// charged nothing: the paper's implicit machine).
    pub counters: String,
    /// Digests per tree node (8-byte digests in a 64-byte line: 8).
    pub tree_arity: u32,
    /// Counter block layout in both models (counters in a tree), "split" (a 64-bit major and 64
    /// minor counters of `minor_counter_bits` per block, one block per 4 KB page, Yan et al. ISCA
    /// 2006) or "monolithic" (eight 64-bit counters per block).
    pub counter_block: String,
    /// Split counter blocks: bits of each minor counter (7 in Yan et al.; at most 7, so 64 of
    /// them and the 64-bit major fill 64 bytes). A line's 2^bits-th write since its block's
    /// last overflow overflows it.
    pub minor_counter_bits: u32,
    /// Timing model: memory the counter tree covers, MB (sets the tree's height).
    pub protected_mb: u64,
    /// Timing model: counter cache lines (counter blocks and tree nodes, 64 B each) and ways.
    pub counter_cache_entries: usize,
    pub counter_cache_ways: usize,
    /// Data TLB entries (4 KB pages; §3.2.2: 128) and ways.
    pub tlb_entries: usize,
    pub tlb_ways: usize,
    /// Page walk of a data-TLB miss, core cycles (SimpleScalar sim-outorder's default: 30).
    pub walk_latency: f64,
    /// Fast-forward (paper §5: "During fast-forwarding, L1 cache, L2 cache, and frequent value
    /// tracking are simulated"): the first this-many records only train the FVT, the lines'
    /// bitmaps, the bitmap cache and its prefetcher; timing and every count start after them.
    pub warmup_records: u64,
    /// Key seed for the functional model.
    pub seed: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            encryption: true,
            mode: "direct".into(),
            cipher: "aes256".into(),
            ct_speculation: true,
            mac_speculation: true,
            reorder: true,
            reorder_policy: "always".into(),
            adaptive_signal: "unpaired".into(),
            adaptive_window: 32,
            adaptive_off_max: 0,
            adaptive_on_min: 2,
            policy: "secure".into(),
            pad_precompute: true,
            fvt_size: 8,
            fvt_candidates: 256,
            fvt_promote: 4,
            freq_ghz: 1.0,
            width: 8,
            ilp: 2.0,
            rob: 128,
            mshrs: 16,
            write_buffer: 16,
            l2_latency: 4.0,
            pointer_dependences: true,
            line_bytes: 64,
            cpu_mem_ratio: 5.0,
            bus_bytes: 8,
            dram_banks: 4,
            dram_row_bytes: 4096,
            t_cas: 20.0,
            t_rcd: 7.0,
            t_rp: 7.0,
            dram_pipelined_cas: true,
            aes_latency_ns: 65.0,
            aes_stages: 65,
            tdes_latency_ns: 96.0,
            tdes_stages: 48,
            engines: 4,
            arbitration: "demand_first".into(),
            compare_cycles: 1.0,
            bitmap_cache_entries: 128,
            bitmap_cache_ways: 4,
            bitmap_prefetch: "stream".into(),
            bitmap_prefetch_degree: 1,
            bitmap_prefetch_streams: 8,
            bitmap_write_if_changed: true,
            bitmap_fetch: "with_walk".into(),
            mac_store: "beside_line".into(),
            counters: "tree".into(),
            tree_arity: 8,
            counter_block: "split".into(),
            minor_counter_bits: 7,
            protected_mb: 4096,
            counter_cache_entries: 512,
            counter_cache_ways: 8,
            tlb_entries: 128,
            tlb_ways: 4,
            walk_latency: 30.0,
            warmup_records: 0,
            seed: 1,
        }
    }
}

fn pos(name: &str, v: f64) -> Result<()> {
    if !(v.is_finite() && v > 0.0) {
        return Err(Error::config(format!("{name}: must be a positive number, got {v}")));
    }
    Ok(())
}

fn nonneg(name: &str, v: f64) -> Result<()> {
    if !(v.is_finite() && v >= 0.0) {
        return Err(Error::config(format!("{name}: must be >= 0, got {v}")));
    }
    Ok(())
}

impl Config {
    /// Checks every field; returns the scheme.
    pub fn validate(&self) -> Result<Scheme> {
        let mode = Mode::parse(&self.mode)?;
        let cipher = CipherKind::parse(&self.cipher)?;
        let scheme = Scheme::new(mode, cipher, self.reorder)?;
        if self.policy != "secure" && self.policy != "relaxed" {
            return Err(Error::config(format!("policy: unknown policy '{}' (known: secure, relaxed)", self.policy)));
        }
        if self.fvt_size == 0 || self.fvt_size > 64 {
            return Err(Error::config(format!("fvt_size: must be 1..64 frequent values, got {}", self.fvt_size)));
        }
        if !self.fvt_candidates.is_power_of_two() || self.fvt_candidates > 1 << 20 {
            return Err(Error::config(format!(
                "fvt_candidates: must be a power of two up to 2^20, got {}",
                self.fvt_candidates
            )));
        }
        if self.fvt_promote == 0 {
            return Err(Error::config("fvt_promote: must be >= 1"));
        }
        pos("freq_ghz", self.freq_ghz)?;
        pos("ilp", self.ilp)?;
        if self.width == 0 {
            return Err(Error::config("width: must be >= 1"));
        }
        if self.rob == 0 || self.mshrs == 0 || self.write_buffer == 0 {
            return Err(Error::config("rob, mshrs, write_buffer: must be >= 1"));
        }
        nonneg("l2_latency", self.l2_latency)?;
        if self.line_bytes != 64 {
            return Err(Error::config(format!(
                "line_bytes: the model encrypts 64-byte lines (Table 2), got {}",
                self.line_bytes
            )));
        }
        if !(self.cpu_mem_ratio.is_finite() && self.cpu_mem_ratio >= 1.0) {
            return Err(Error::config(format!(
                "cpu_mem_ratio: the memory bus cannot run faster than the core (ratio >= 1), got {}",
                self.cpu_mem_ratio
            )));
        }
        if self.bus_bytes == 0 || 64 % self.bus_bytes != 0 {
            return Err(Error::config(format!("bus_bytes: must divide 64, got {}", self.bus_bytes)));
        }
        if self.dram_banks == 0 || self.dram_row_bytes < 64 || !self.dram_row_bytes.is_power_of_two() {
            return Err(Error::config("dram_banks >= 1 and dram_row_bytes a power of two >= 64"));
        }
        for (n, v) in [("t_cas", self.t_cas), ("t_rcd", self.t_rcd), ("t_rp", self.t_rp)] {
            nonneg(n, v)?;
        }
        nonneg("aes_latency_ns", self.aes_latency_ns)?;
        nonneg("tdes_latency_ns", self.tdes_latency_ns)?;
        nonneg("compare_cycles", self.compare_cycles)?;
        if self.aes_stages == 0 || self.tdes_stages == 0 || self.engines == 0 {
            return Err(Error::config("aes_stages, tdes_stages, engines: must be >= 1"));
        }
        if self.bitmap_cache_ways == 0
            || self.bitmap_cache_entries < self.bitmap_cache_ways
            || self.bitmap_cache_entries % self.bitmap_cache_ways != 0
        {
            return Err(Error::config(format!(
                "bitmap_cache_entries: must be a positive multiple of bitmap_cache_ways ({}), got {}",
                self.bitmap_cache_ways, self.bitmap_cache_entries
            )));
        }
        crate::engines::Arbitration::parse(&self.arbitration)?;
        BitmapFetch::parse(&self.bitmap_fetch)?;
        ReorderPolicy::parse(&self.reorder_policy)?;
        if self.adaptive_signal != "unpaired" && self.adaptive_signal != "frequent" {
            return Err(Error::config(format!(
                "adaptive_signal: unknown signal '{}' (known: unpaired, frequent)",
                self.adaptive_signal
            )));
        }
        if self.adaptive_window == 0 || self.adaptive_window > 32 {
            return Err(Error::config(format!("adaptive_window: must be 1..32 fills, got {}", self.adaptive_window)));
        }
        if self.adaptive_on_min == 0 || self.adaptive_on_min > self.adaptive_window {
            return Err(Error::config(format!(
                "adaptive_on_min: must be 1..adaptive_window ({}) fills, got {}",
                self.adaptive_window, self.adaptive_on_min
            )));
        }
        if self.adaptive_off_max >= self.adaptive_on_min {
            return Err(Error::config(format!(
                "adaptive_off_max: must be below adaptive_on_min ({}), got {} (a page would switch back at once)",
                self.adaptive_on_min, self.adaptive_off_max
            )));
        }
        MacStore::parse(&self.mac_store)?;
        if self.tree_arity < 2 {
            return Err(Error::config(format!("tree_arity: must be >= 2, got {}", self.tree_arity)));
        }
        crate::secure::Counters::new(&self.counters, self.tree_arity, 0)?;
        crate::tree::BlockOrg::parse(&self.counter_block, self.minor_counter_bits)?;
        if self.protected_mb == 0 || self.protected_mb > 1 << 24 {
            return Err(Error::config(format!("protected_mb: must be 1..2^24 MB, got {}", self.protected_mb)));
        }
        if self.counter_cache_ways == 0
            || self.counter_cache_entries < self.counter_cache_ways
            || self.counter_cache_entries % self.counter_cache_ways != 0
        {
            return Err(Error::config(format!(
                "counter_cache_entries: must be a positive multiple of counter_cache_ways ({}), got {}",
                self.counter_cache_ways, self.counter_cache_entries
            )));
        }
        if self.tlb_entries == 0 || self.tlb_ways == 0 || self.tlb_entries % self.tlb_ways != 0 {
            return Err(Error::config(format!(
                "tlb_entries: must be a positive multiple of tlb_ways ({}), got {}",
                self.tlb_ways, self.tlb_entries
            )));
        }
        nonneg("walk_latency", self.walk_latency)?;
        crate::prefetch::Prefetcher::new(&self.bitmap_prefetch, self.bitmap_prefetch_degree, self.bitmap_prefetch_streams)?;
        if self.bitmap_prefetch_degree == 0 || self.bitmap_prefetch_degree > 64 {
            return Err(Error::config(format!(
                "bitmap_prefetch_degree: must be 1..64 bitmap lines, got {}",
                self.bitmap_prefetch_degree
            )));
        }
        if self.bitmap_prefetch_streams == 0 || self.bitmap_prefetch_streams > 1024 {
            return Err(Error::config(format!(
                "bitmap_prefetch_streams: must be 1..1024, got {}",
                self.bitmap_prefetch_streams
            )));
        }
        Ok(scheme)
    }
}

/// When a page's bitmap line is fetched under re-ordering.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BitmapFetch {
    /// Alongside the page walk of a data-TLB miss (the bitmap cache covers the TLB's reach, as
    /// the paper sizes it), and on a bitmap-cache miss otherwise.
    WithWalk,
    /// On a bitmap-cache miss, when the L2 miss is known (after any walk).
    OnMiss,
    /// No bitmap lines: each line's bitmap travels with its MACs (beyond the paper).
    Inline,
}

impl BitmapFetch {
    pub const KNOWN: [&'static str; 3] = ["with_walk", "on_miss", "inline"];

    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "with_walk" => Ok(BitmapFetch::WithWalk),
            "on_miss" => Ok(BitmapFetch::OnMiss),
            "inline" => Ok(BitmapFetch::Inline),
            _ => Err(Error::config(format!("bitmap_fetch: unknown bitmap fetch '{s}' (known: {})", Self::KNOWN.join(", ")))),
        }
    }
}

/// Which pages re-order their lines (under `reorder`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReorderPolicy {
    /// Every page (the paper).
    Always,
    /// Per page, by its recent fills (beyond the paper; sim/adaptive.rs).
    Adaptive,
}

impl ReorderPolicy {
    pub const KNOWN: [&'static str; 2] = ["always", "adaptive"];

    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "always" => Ok(ReorderPolicy::Always),
            "adaptive" => Ok(ReorderPolicy::Adaptive),
            _ => Err(Error::config(format!(
                "reorder_policy: unknown re-ordering policy '{s}' (known: {})",
                Self::KNOWN.join(", ")
            ))),
        }
    }
}

/// Where a line's MACs are stored (what a fill or writeback moves besides the line).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MacStore {
    /// Beside the line in the same row: one longer burst (the paper's reading: each line is
    /// "stored with its updated MAC value", §2.2).
    BesideLine,
    /// In a separate region of MAC lines: a second access per line, no MAC cache.
    Separate,
    /// Not timed (the model before MAC traffic was booked).
    Untimed,
}

impl MacStore {
    pub const KNOWN: [&'static str; 3] = ["beside_line", "separate", "untimed"];

    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "beside_line" => Ok(MacStore::BesideLine),
            "separate" => Ok(MacStore::Separate),
            "untimed" => Ok(MacStore::Untimed),
            _ => Err(Error::config(format!("mac_store: unknown MAC store '{s}' (known: {})", Self::KNOWN.join(", ")))),
        }
    }
}
