"""Experiments `memcrypt.run` (timing model: IPC and where a miss's time goes) and
`memcrypt.check` (functional model: real ciphers, MACs and speculation over the same trace).

Both call the Rust crate `veil-memcrypt` (`veil._native.memcrypt`). Every machine field and its
source is in docs/memcrypt-model.md; defaults are the paper's Table 2 machine.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from veil import _native
from veil.core import (ComponentName, ConfigError, ExperimentConfig, InputFile, register_component,
                       register_components, register_experiment)
from veil.memcrypt.workloads import known_workloads, trace_input

MODES = {
    "direct": "OCB-like direct encryption: each cipher-size chunk encrypted under a tweak from the line address "
              "and its per-line nonce (paper §2.1)",
    "counter": "counter mode: AES-CTR pads per (line, per-line counter), XORed with the line",
}
CIPHERS = {
    "aes128": "AES-128, 128-bit chunks (65 ns, Table 2)",
    "aes256": "AES-256, 128-bit chunks (65 ns, Table 2's default AES)",
    "tdes": "3-key Triple-DES, 64-bit chunks (96 ns, 48 stages, Table 2); direct mode only",
}
POLICIES = {
    "secure": "data is used only once decrypted and authenticated (the paper's policy)",
    "relaxed": "data is used once decrypted; authentication completes off the critical path",
}
BITMAP_PREFETCHERS = {
    "none": "bitmap lines are fetched on demand only",
    "next_line": "tagged next-line: a bitmap miss, or the first use of a prefetched bitmap line, fetches the bitmap "
                 "lines of the next `bitmap_prefetch_degree` pages",
    "stream": "stream table: once two consecutive pages (up or down) miss, keeps `bitmap_prefetch_degree` bitmap "
              "lines ahead of the stream; isolated misses fetch nothing extra",
}
ARBITRATIONS = {
    "demand_first": "demand decryptions, MAC checks, writebacks and bitmap lines take engine slots first; speculation "
                    "only the slots no demand work needs (the paper's idle cycles; lower priority, not pre-emptive)",
    "fcfs": "one first-come-first-served calendar for all engine work: a miss's candidates can delay the demand work "
            "of the misses behind it",
}
BITMAP_FETCHES = {
    "with_walk": "a page's bitmap line is requested alongside the page walk of its data-TLB miss (the bitmap cache covers "
                 "the TLB's reach, §3.2.2), and on a bitmap-cache miss otherwise",
    "on_miss": "a page's bitmap line is requested on a bitmap-cache miss, when the L2 miss is known (after any walk)",
    "inline": "beyond the paper: each line's bitmap travels with its MACs (no bitmap lines, no bitmap cache); "
              "speculation cannot know the pairs before the line arrives",
}
MAC_STORES = {
    "beside_line": "each line's MACs are stored beside it in the same row (paper §2.2: 'stored along with each "
                   "encrypted memory block'): one longer burst, +64 B under TDES, +32 B under AES",
    "separate": "MACs in a separate region of MAC lines: a second SDRAM access per line (no MAC cache)",
    "untimed": "MACs move no bytes (the model before MAC traffic was booked)",
}
COUNTER_STORES = {
    "tree": "counters in memory under a Bonsai-Merkle counter tree (root on chip) of arity tree_arity: the functional "
            "model rejects a replayed record with its old counters and tree nodes at the root; the timing model "
            "charges the counter cache's misses, tree-node fetches, dirty evictions and split-counter overflows",
    "on_chip": "every per-line counter kept on chip (8 B per line, unbounded trusted storage, charged nothing: the "
               "paper's implicit machine); a replayed record fails its MAC",
}
COUNTER_BLOCKS = {
    "split": "a 64-bit major and 64 minor counters (minor_counter_bits, 7) per 64-byte block, one block per 4 KB "
             "page (Yan et al., ISCA 2006); a minor counter's wrap re-encrypts the page's other lines",
    "monolithic": "eight 64-bit counters per 64-byte block (never overflow)",
}
REORDER_POLICIES = {
    "always": "every page re-orders its lines and reads its bitmap line (the paper)",
    "adaptive": "beyond the paper: a page whose last adaptive_window fills held at most adaptive_off_max that "
                "re-ordering would help (adaptive_signal) stops re-ordering (its lines rewritten in natural order, no "
                "bitmap line read or written); it resumes once adaptive_on_min of its last adaptive_window fills do",
}


class AdaptiveParams(BaseModel):
    adaptive_signal: Literal["unpaired", "frequent"] = Field(
        "unpaired", description="adaptive: which fills count for re-ordering: 'unpaired' (frequent words their natural "
                                "order leaves unpaired: what re-ordering can gain) or 'frequent' (two frequent words "
                                "or more, paired in place or not)")
    adaptive_window: int = Field(32, ge=1, le=32, description="adaptive: fills of a page the decision looks back over")
    adaptive_off_max: int = Field(0, ge=0, le=31, description="adaptive: a re-ordering page stops when its last "
                                                             "adaptive_window fills hold at most this many that count "
                                                             "(adaptive_signal)")
    adaptive_on_min: int = Field(2, ge=1, le=32, description="adaptive: a stopped page resumes once this many of its "
                                                            "last adaptive_window fills count")


register_component("memcrypt.reorder_policy", "always", REORDER_POLICIES["always"])
register_component("memcrypt.reorder_policy", "adaptive", REORDER_POLICIES["adaptive"], params=AdaptiveParams)
register_components("memcrypt.counter_block", COUNTER_BLOCKS)
register_components("memcrypt.counters", COUNTER_STORES)
register_components("memcrypt.mac_store", MAC_STORES)
register_components("memcrypt.bitmap_fetch", BITMAP_FETCHES)
register_components("memcrypt.arbitration", ARBITRATIONS)
register_components("memcrypt.bitmap_prefetch", BITMAP_PREFETCHERS)
register_components("memcrypt.mode", MODES)
register_components("memcrypt.cipher", CIPHERS)
register_components("memcrypt.policy", POLICIES)

# Fields that are not part of the native machine configuration.
_RUN_FIELDS = {"workload", "trace", "l2_kb", "max_records", "window", "warmup_records", "seed", "sampling",
               "sample_window", "sample_warmup", "sample_interval", "sample_confidence", "sample_target",
               "threads", "scheduler"}


class MachineConfig(ExperimentConfig):
    workload: str = Field("synthetic-pointer", description="trace-suite workload (SPEC-like) or synthetic-* stream")
    trace: InputFile = Field("", description="a veil-trace file (64-byte lines) to run instead of the workload "
                                             "(relative to the config file's folder)")
    l2_kb: Literal[256, 1024] = Field(256, description="L2 size, KB (Table 2: 256 KB or 1 MB, 4-way, 64 B lines)")
    max_records: int = Field(2_000_000, ge=1, le=10**10, description="trace records to time (after the warm-up)")
    window: Literal["middle", "start"] = Field(
        "middle", description="where the timed records sit in a trace: 'middle' centres them in what follows the "
                              "warm-up (past the program's initialisation, as the paper's fast-forward to SimPoint "
                              "regions), 'start' times them right after the warm-up")
    warmup_records: int = Field(250_000, ge=0, le=10**10,
                                description="records before the timed ones that only train the FVT, the stored bitmaps "
                                            "and the bitmap cache (fast-forward, paper §5); at most half a trace")
    encryption: bool = Field(True, description="false: the unprotected machine (no decryption or MAC at all)")
    mode: ComponentName("memcrypt.mode") = Field("direct", description="memory encryption mode")
    cipher: ComponentName("memcrypt.cipher") = Field("aes256", description="block cipher of the chunks")
    ct_speculation: bool = Field(True, description="frequent value ciphertext speculation")
    mac_speculation: bool = Field(True, description="frequent value MAC speculation")
    reorder: bool = Field(True, description="re-order frequent 64-bit words into pairs under 128-bit ciphers (bitmap)")
    reorder_policy: ComponentName("memcrypt.reorder_policy") = Field(
        "always", description="which pages re-order (with reorder): every page, or adaptive (by each page's recent fills)")
    adaptive_signal: Literal["unpaired", "frequent"] = AdaptiveParams.model_fields["adaptive_signal"]
    adaptive_window: int = AdaptiveParams.model_fields["adaptive_window"]
    adaptive_off_max: int = AdaptiveParams.model_fields["adaptive_off_max"]
    adaptive_on_min: int = AdaptiveParams.model_fields["adaptive_on_min"]
    policy: ComponentName("memcrypt.policy") = Field("secure", description="when fetched data may be used")
    pad_precompute: bool = Field(True, description="counter mode: pads computed when the miss is sent (counters on chip)")
    fvt_size: int = Field(8, ge=1, le=64, description="frequent values in the FVT, N (paper: 8, 16, 32)")
    fvt_candidates: int = Field(256, ge=1, le=1 << 20, description="candidate filter entries of the FVT (power of two)")
    fvt_promote: int = Field(4, ge=1, le=1 << 16, description="sightings a candidate needs to enter the FVT")
    freq_ghz: float = Field(1.0, ge=0.01, le=100, description="core clock, GHz (Table 2: 1)")
    width: int = Field(8, ge=1, le=64, description="fetch/decode/dispatch/commit width (Table 2: 8)")
    ilp: float = Field(2.0, gt=0, le=64, description="sustained IPC between L2 misses (dispatch = min(width, ilp))")
    rob: int = Field(128, ge=1, le=1 << 16, description="reorder buffer entries")
    mshrs: int = Field(16, ge=1, le=1024, description="outstanding L2 load misses")
    write_buffer: int = Field(16, ge=1, le=1024, description="outstanding store misses and dirty writebacks; a full "
                                                           "write buffer stalls the core")
    l2_latency: float | None = Field(None, ge=0, description="L2 hit latency, cycles; default 4 (256 KB) / 8 (1 MB), Table 2")
    pointer_dependences: bool = Field(True, description="a load miss to a line whose address a recent load miss's "
                                                        "line held as a word waits for that line (pointer chasing)")
    line_bytes: int = Field(64, description="cache line bytes (Table 2: 64; the model encrypts 64-byte lines)")
    cpu_mem_ratio: float = Field(5.0, le=1000, description="core clocks per memory-bus clock (200 MHz bus: 5; Fig. 9: 4, 6)")
    bus_bytes: int = Field(8, ge=1, le=64, description="memory bus width, bytes (Table 2: 8)")
    dram_banks: int = Field(4, ge=1, le=1024, description="SDRAM banks")
    dram_row_bytes: int = Field(4096, ge=64, le=1 << 20, description="SDRAM row (page) bytes")
    t_cas: float = Field(20.0, ge=0, description="CAS latency, bus clocks (Table 2: 20)")
    t_rcd: float = Field(7.0, ge=0, description="RAS-to-CAS latency, bus clocks (Table 2: 7)")
    t_rp: float = Field(7.0, ge=0, description="precharge latency, bus clocks (Table 2: 7)")
    dram_pipelined_cas: bool = Field(True, description="a bank takes its next command once a read's burst is out of "
                                                       "the array, during the read's CAS latency (PC SDRAM); false: "
                                                       "held until the burst starts")
    aes_latency_ns: float = Field(65.0, ge=0, description="AES latency, ns (Table 2: 65)")
    aes_stages: int = Field(65, ge=1, le=10_000, description="AES pipeline stages (§4: 14 rounds x 4-7 stages)")
    tdes_latency_ns: float = Field(96.0, ge=0, description="TDES latency, ns (Table 2: 96)")
    tdes_stages: int = Field(48, ge=1, le=10_000, description="TDES pipeline stages (Table 2: 48)")
    engines: int = Field(4, ge=1, le=1024, description="replicated pipelined crypto engines (shared by all work)")
    arbitration: ComponentName("memcrypt.arbitration") = Field(
        "demand_first", description="how engine slots are shared between demand and speculative work")
    compare_cycles: float = Field(1.0, ge=0, description="CAM compare of a speculated ciphertext or MAC, cycles")
    bitmap_cache_entries: int = Field(128, ge=1, le=1 << 20, description="bitmap cache entries (one 4 KB page each; 128 = 8 KB, §3.2.2)")
    bitmap_cache_ways: int = Field(4, ge=1, le=1 << 10, description="bitmap cache ways")
    bitmap_prefetch: ComponentName("memcrypt.bitmap_prefetch") = Field(
        "stream", description="bitmap prefetcher (§3.2.2: 'bitmaps can be prefetched using simple hardware prefetch "
                              "technique')")
    bitmap_prefetch_degree: int = Field(1, ge=1, le=64, description="bitmap lines a prefetch trigger fetches ahead")
    bitmap_prefetch_streams: int = Field(8, ge=1, le=1024, description="streams the 'stream' prefetcher tracks")
    bitmap_write_if_changed: bool = Field(True, description="a writeback updates its page's bitmap line only when "
                                                            "the line's bitmap changed (the fetched bitmap is kept "
                                                            "beside the L2 line); false: every writeback does")
    bitmap_fetch: ComponentName("memcrypt.bitmap_fetch") = Field(
        "with_walk", description="when a page's bitmap line is fetched under re-ordering")
    mac_store: ComponentName("memcrypt.mac_store") = Field(
        "beside_line", description="where each line's MACs are stored and what they add to its SDRAM traffic "
                                   "(nonces are kept on chip)")
    counters: ComponentName("memcrypt.counters") = Field(
        "tree", description="where the trusted per-line counters live, in both models (tree: in memory under a "
                            "counter tree, charged; on_chip: free)")
    tree_arity: int = Field(8, ge=2, le=1 << 16, description="arity of the counter tree (8: eight 8-byte digests "
                                                             "per 64-byte node)")
    counter_block: ComponentName("memcrypt.counter_block") = Field(
        "split", description="counter block layout in both models (counters = tree)")
    minor_counter_bits: int = Field(7, ge=1, le=7, description="split counter blocks: bits of each minor counter "
                                                               "(Yan et al.: 7; 64 minors and the 64-bit major fill "
                                                               "64 bytes, so at most 7)")
    protected_mb: int = Field(4096, ge=1, le=1 << 24, description="timing model: memory the counter tree covers, MB "
                                                                  "(sets the tree's height)")
    counter_cache_entries: int = Field(512, ge=1, le=1 << 20, description="timing model: counter cache lines "
                                                                          "(counter blocks and tree nodes, 64 B "
                                                                          "each; 512 = 32 KB)")
    counter_cache_ways: int = Field(8, ge=1, le=1 << 10, description="counter cache ways")
    tlb_entries: int = Field(128, ge=1, le=1 << 20, description="data TLB entries, 4 KB pages (§3.2.2: 128; Table 2: 256)")
    tlb_ways: int = Field(4, ge=1, le=1 << 10, description="data TLB ways (Table 2: 4)")
    walk_latency: float = Field(30.0, ge=0, description="page walk of a data-TLB miss, core cycles (SimpleScalar "
                                                        "sim-outorder's default TLB miss latency: 30)")

    sampling: Literal["full", "sampled"] = Field(
        "full", description="'full' times every record in sequence (the default, and what every comparison with "
                            "the paper uses); 'sampled' times windows of the timed records in parallel from "
                            "functionally warmed state and estimates IPC with a confidence interval")
    sample_window: int = Field(400, ge=2, le=10**8, description="sampled: records timed in detail per window, its "
                                                                 "warm-up included")
    sample_warmup: int = Field(100, ge=0, le=10**8, description="sampled: the first records of each window, timed "
                                                               "but not counted (rebuild the core, memory and "
                                                               "engine timing state)")
    sample_interval: int = Field(1500, ge=1, le=10**10, description="sampled: one window per this many timed "
                                                                    "records (at least)")
    sample_confidence: float = Field(0.997, gt=0.5, lt=1, description="sampled: confidence of the IPC interval")
    sample_target: float = Field(0.01, ge=0, lt=1, description="sampled: the IPC interval's half-width, relative, "
                                                               "that a run aims at: wider after the first windows, "
                                                               "a second pass times windows closer together "
                                                               "(SMARTS's tuned sample; 0: never)")
    threads: int | None = Field(None, ge=1, le=1024, description="sampled: threads timing windows (default: all "
                                                                 "cores)")
    scheduler: str = Field("", description="sampled: a Dask scheduler address (tcp://HOST:8786): windows are timed "
                                           "there instead of on this machine's cores")

    @model_validator(mode="after")
    def _sampled(self):
        if self.sample_window <= self.sample_warmup:
            raise ValueError(f"sample_window: a window of {self.sample_window} records must be longer than its "
                             f"warm-up (sample_warmup = {self.sample_warmup})")
        if self.sample_interval < self.sample_window:
            raise ValueError(f"sample_interval: {self.sample_interval} records is shorter than a window "
                             f"(sample_window = {self.sample_window})")
        if self.sampling == "sampled":
            units = self.max_records // self.sample_interval
            if units < 8:
                raise ValueError(f"sample_interval: {self.max_records} timed records at one window per "
                                 f"{self.sample_interval} records leave {units} window(s); the estimate needs "
                                 "at least 8")
        return self

    @model_validator(mode="after")
    def _fit(self):
        if self.cpu_mem_ratio < 1:
            raise ValueError(f"cpu_mem_ratio: the memory bus cannot run faster than the core (ratio >= 1), got {self.cpu_mem_ratio}")
        if self.mode == "counter" and self.cipher == "tdes":
            raise ValueError("cipher: counter mode takes its pads from AES-CTR; 'tdes' cannot be used with mode 'counter'")
        if not self.adaptive_off_max < self.adaptive_on_min <= self.adaptive_window:
            raise ValueError(f"adaptive_on_min: need adaptive_off_max < adaptive_on_min <= adaptive_window, got "
                             f"{self.adaptive_off_max}, {self.adaptive_on_min}, {self.adaptive_window}")
        if self.line_bytes != 64:
            raise ValueError(f"line_bytes: the model encrypts 64-byte lines (Table 2), got {self.line_bytes}")
        if not self.trace and self.workload not in known_workloads():
            raise ValueError(f"workload: unknown workload '{self.workload}' (known: {', '.join(known_workloads())})")
        return self


def window(total: int, max_records: int, warmup_records: int, where: str) -> tuple[int, int, int]:
    """(records skipped, warm-up records, timed records) of a trace of `total` records: the warm-up
    takes at most half the trace, the timed records at most the rest; 'middle' centres them in
    what follows the warm-up and skips the records before the warm-up."""
    warm = min(warmup_records, total // 2)
    n = min(max_records, total - warm)
    start = warm + ((total - warm - n) // 2 if where == "middle" else 0)
    return start - warm, warm, n


def _trace_records(path: str) -> int:
    from veil.core.tracefile import trace_records

    return trace_records(path)  # the whole file checked, an empty trace refused


def native_run(cfg: MachineConfig) -> dict[str, Any]:
    d = cfg.model_dump(mode="json")
    machine = {k: v for k, v in d.items() if k not in _RUN_FIELDS}
    if machine["l2_latency"] is None:
        machine["l2_latency"] = 4.0 if cfg.l2_kb == 256 else 8.0
    machine["seed"] = cfg.seed
    if cfg.trace:
        inp = {"trace": str(cfg.trace)}
    else:
        # A generator is stationary: its warm-up records are simply the first ones it makes.
        inp = trace_input(cfg.workload, cfg.l2_kb, cfg.warmup_records + cfg.max_records, cfg.seed)
    if "trace" in inp:
        skip, warm, n = window(_trace_records(inp["trace"]), cfg.max_records, cfg.warmup_records, cfg.window)
    else:
        skip, warm, n = 0, cfg.warmup_records, cfg.max_records
    machine["warmup_records"] = warm
    return {"config": machine, "max_records": n, "skip_records": skip, **inp}


def _call(fn, run: dict[str, Any], what: str) -> dict[str, Any]:
    try:
        return json.loads(fn(json.dumps(run)))
    except ValueError as e:
        raise ConfigError(f"{what}: {e}") from None


RUN_RESULTS = {
    "ipc": ("instr/cycle", "instructions per CPU cycle (1 GHz core)"),
    "cycles": ("cycles", "CPU cycles to replay the trace"),
    "insts": ("", "instructions retired"),
    "records": ("", "trace records timed"),
    "warmup_records": ("", "records before them that only warmed the model up (FVT, bitmaps, bitmap cache)"),
    "load_fills": ("", "LLC fills caused by loads"),
    "store_fills": ("", "LLC fills caused by stores"),
    "writebacks": ("", "dirty LLC writebacks (re-encrypted with a new nonce/counter)"),
    "llc_hits": ("", "L1 misses that hit the LLC"),
    "fetched_words": ("", "64-bit words fetched from memory"),
    "frequent_words": ("", "fetched 64-bit words that were in the frequent value table"),
    "frequent_words_paired_natural": ("", "frequent words whose 128-bit chunk partner is frequent too, "
                                          "in memory order"),
    "frequent_words_paired_reordered": ("", "the same after chunk re-ordering with the bitmap"),
    "frequent_words_paired_at_fetch": ("", "the same had the line been re-ordered with the FVT of its fetch (every "
                                           "frequent word but an odd one out)"),
    "chunks": ("", "cipher-size chunks fetched"),
    "chunks_predicted": ("", "chunks whose ciphertext speculation hit"),
    "spec_ops": ("operations", "crypto engine operations spent on speculation (candidate ciphertexts and MACs); "
                               "0 on a machine that does not speculate"),
    "writeback_ops": ("operations", "crypto engine operations re-encrypting and re-MACing written-back lines "
                                    "(every encrypting machine, speculating or not)"),
    "demand_ops": ("", "crypto engine operations spent on demand decryption and MAC checks"),
    "spec_displaced": ("", "speculative operations a later miss's demand operation landed on under demand_first "
                           "arbitration (the model keeps their times: optimistic by at least one slot)"),
    "bitmap_hits": ("", "bitmap cache hits"),
    "bitmap_misses": ("", "bitmap cache misses (a memory read and a decryption each)"),
    "bitmap_prefetches": ("", "bitmap lines fetched by the bitmap prefetcher"),
    "bitmap_prefetches_used": ("", "prefetched bitmap lines a fill or writeback then used"),
    "bitmap_late": ("", "bitmap cache hits that waited for a prefetch still in flight"),
    "bitmap_ops": ("", "crypto engine operations on bitmap lines (decryption, authentication, re-encryption)"),
    "tlb_misses": ("", "load and store fills whose page missed the data TLB (a page walk each)"),
    "bitmap_walk_fetches": ("", "bitmap lines requested alongside a page walk (bitmap_fetch = with_walk)"),
    "reorder_stops": ("", "reorder_policy = adaptive: pages that stopped re-ordering (none of their recent fills "
                          "counted: adaptive_signal)"),
    "reorder_resumes": ("", "reorder_policy = adaptive: pages that resumed re-ordering"),
    "reorder_pages_natural": ("", "reorder_policy = adaptive: pages laid out in natural order from their first access "
                                  "(it did not count)"),
    "natural_page_fills": ("", "reorder_policy = adaptive: fills of pages not re-ordering (no bitmap needed)"),
    "reorder_converted_lines": ("", "reorder_policy = adaptive: lines a stop rewrote in natural order (read and "
                                    "written; their stored bitmap was not zero)"),
    "reorder_convert_ops": ("operations", "reorder_policy = adaptive: engine operations of those rewrites"),
    "counter_misses": ("", "counter-cache misses, a counter block read each (counters = tree)"),
    "tree_fetches": ("", "counter-tree node lines read: for counter-cache misses, and parents of evicted dirty "
                         "lines that were not cached"),
    "counter_writebacks": ("", "dirty counter blocks and tree nodes evicted from the counter cache and written"),
    "counter_ops": ("operations", "MAC operations verifying fetched counter blocks and nodes and re-digesting "
                                  "evicted ones"),
    "counter_overflows": ("", "split counters: minor-counter wraps (each re-encrypts its page)"),
    "overflow_lines": ("", "lines read and re-encrypted by minor-counter overflows (the page's other 63 lines "
                           "each; the written line goes out under the new counter as its writeback)"),
    "overflow_ops": ("operations", "crypto engine operations of those re-encryptions"),
    "bitmap_wait_cycles": ("cycles", "over load fills, CPU cycles by which waiting for the bitmap delayed the data"),
    "dependent_misses": ("", "load misses that waited for the line holding their address (pointer chasing)"),
    "frequent_words_lost_odd": ("", "frequent words left without a frequent partner: the odd one of the bitmap"),
    "frequent_words_lost_changed": ("", "frequent words not predictable because their FVT status (or their "
                                        "partner's) changed since the line was written"),
    "dram_row_hits": ("", "SDRAM accesses to an open row"),
    "dram_row_closed": ("", "SDRAM accesses to a closed bank"),
    "dram_row_conflicts": ("", "SDRAM accesses that closed another row first"),
    "dram_accesses": ("", "SDRAM accesses (fills, writebacks, bitmap lines)"),
    "mean_memory_cycles": ("cycles", "mean memory latency of a fill (CPU cycles)"),
    "mean_crypto_cycles": ("cycles", "mean time a fill waited for decryption and authentication after its "
                                     "data arrived (CPU cycles)"),
    "stall_cycles": ("cycles", "CPU cycles the core stalled behind misses"),
    "dram_unloaded_*": ("cycles", "unloaded SDRAM latency of a row hit / closed bank / conflict (CPU cycles)"),
    "fv_predictability": ("", "share of fetched 64-bit words in the frequent value table (Fig. 5)"),
    "paired_share_natural": ("", "share of frequent words whose chunk is all frequent, in memory order"),
    "paired_share_reordered": ("", "the same after re-ordering with the stored bitmap (what the timing model uses)"),
    "paired_share_at_fetch": ("", "the same had each line been re-ordered with the FVT of its fetch (Fig. 6's measure)"),
    "chunk_predictability": ("", "share of fetched chunks whose speculation hit; None on a machine without "
                                 "ciphertext or MAC speculation (see chunk_predictability_note)"),
    "counter_placement": ("", "where the per-line counters (nonces) live in the timing model: off chip under a "
                              "counter tree with a counter cache (the default, charged: counter_misses, tree_fetches, "
                              "counter_writebacks, counter_overflows) or on chip (unbounded, uncharged)"),
    "chunk_predictability_note": ("", "why chunk_predictability is None (absent when it is a number)"),
    "ipc_low": ("instr/cycle", "sampled: lower end of the IPC interval (sample_confidence)"),
    "ipc_high": ("instr/cycle", "sampled: upper end of the IPC interval"),
    "ipc_rel_se": ("", "sampled: standard error of the cycle estimate, relative"),
    "sample_windows": ("", "sampled: windows timed"),
    "sampled_records": ("", "sampled: records timed in detail (window warm-ups and a first pass whose interval "
                            "was wider than sample_target included)"),
    "sampling_used": ("", "sampled: 'sampled', or 'full (...)' where a sampled pass would have cost as much CPU "
                          "as the full run (the full run was made)"),
    "sample_cost": ("timed steps", "sampled: estimated CPU cost of the passes made, in timed-record equivalents "
                                   "(veil.memcrypt.sampled's per-record costs)"),
    "full_cost": ("timed steps", "sampled: the same estimate for the full run the sampled one replaces"),
    "sample_target_met": ("", "sampled: whether the interval meets sample_target (False where the second pass "
                              "that would meet it cost more than the full run)"),
    "sample_interval_used": ("", "sampled: records per window of the windows the estimate comes from "
                                 "(sample_interval, or closer where sample_target asked for more windows)"),
}

CHECK_RESULTS = {
    "fetches": ("", "lines fetched, decrypted and authenticated by the real ciphers"),
    "writebacks": ("", "lines re-encrypted on writeback"),
    "external_updates": ("", "fetches whose plaintext differed from the last writeback: memory changed behind "
                             "the cache (a device or the kernel wrote it); the line is re-written as such a write"),
    "integrity_failures": ("", "MAC failures on untampered memory (must be 0)"),
    "ct_hits": ("", "chunks whose ciphertext speculation matched"),
    "mac_hits": ("", "chunks whose MAC speculation matched"),
    "false_hits": ("", "speculative hits that differ from the true decryption (must be 0)"),
    "chunks": ("", "cipher-size chunks checked"),
    "spec_ops": ("", "cipher operations spent on speculation"),
    "counter_overflows": ("", "split counters in memory: minor-counter overflows (each bumps its block's major "
                              "counter); the same count as memcrypt.run's on the same records without warm-up"),
    "overflow_lines": ("", "stored lines those overflows re-encrypted with the real ciphers (every other line of "
                           "the block that memory holds: authenticated under its old nonce, sealed under the new)"),
}


@register_experiment("memcrypt.run", MachineConfig, results=RUN_RESULTS, doc="timing model: IPC of one scheme on one workload's miss trace")
def run(cfg: MachineConfig) -> dict[str, Any]:
    if cfg.sampling == "sampled":
        from veil.memcrypt import sampled

        r = sampled.simulate(native_run(cfg), cfg)
    else:
        r = _call(_native.memcrypt.simulate, native_run(cfg), "memcrypt.run")
    hit, closed, conflict = r.pop("dram_unloaded")
    r.update(dram_unloaded_hit=hit, dram_unloaded_closed=closed, dram_unloaded_conflict=conflict)
    fw = max(r["fetched_words"], 1)
    fq = max(r["frequent_words"], 1)
    r["fv_predictability"] = r["frequent_words"] / fw
    r["paired_share_natural"] = r["frequent_words_paired_natural"] / fq
    r["paired_share_reordered"] = r["frequent_words_paired_reordered"] / fq
    r["paired_share_at_fetch"] = r["frequent_words_paired_at_fetch"] / fq
    r["counter_placement"] = counter_placement(cfg)
    if cfg.encryption and (cfg.ct_speculation or cfg.mac_speculation):
        r["chunk_predictability"] = r["chunks_predicted"] / max(r["chunks"], 1)
    else:
        # The FVT is still consulted (Fig. 5 measures it for every machine), but no speculation
        # acts on it: a hit rate would describe a mechanism this machine does not have.
        r["chunk_predictability"] = None
        r["chunk_predictability_note"] = ("no speculation on this machine (encryption off)" if not cfg.encryption
                                          else "no speculation on this machine (ct_speculation and mac_speculation off)")
    return r


def counter_placement(cfg: MachineConfig) -> str:
    """Where the timing model keeps each line's counter: the replay protection and its cost rest on it."""
    if not cfg.encryption:
        return "none (no encryption)"
    if cfg.counters == "on_chip":
        return "on chip (8 B per line, unbounded, not charged)"
    kb = cfg.counter_cache_entries * 64 / 1024
    return (f"off chip, {cfg.counter_block} counter blocks under a counter tree of arity {cfg.tree_arity} over "
            f"{cfg.protected_mb} MB, counter cache of {cfg.counter_cache_entries} entries ({kb:g} KB, "
            f"{cfg.counter_cache_ways}-way)")


class CheckConfig(MachineConfig):
    max_records: int = Field(200_000, ge=1, le=10**10, description="trace records to replay through the real ciphers")
    # The functional model runs the real ciphers on every record it is given: a warm-up would only
    # add records, so by default it takes the trace's first records.
    window: Literal["middle", "start"] = Field("start", description="where the replayed records sit in a trace")
    warmup_records: int = Field(0, ge=0, le=10**10, description="records before them, replayed as well")

    @model_validator(mode="after")
    def _every_record(self):
        if self.sampling != "full":
            raise ValueError("sampling: memcrypt.check replays every record through the real ciphers; "
                             "'sampled' is a timing-model option (memcrypt.run)")
        if self.reorder_policy != "always":
            raise ValueError("reorder_policy: the functional model re-orders every page; adaptive re-ordering only "
                             "gives some lines bitmap zero, a layout it already checks (docs/memcrypt-model.md), and is a "
                             "timing-model option (memcrypt.run)")
        return self


@register_experiment("memcrypt.check", CheckConfig, results=CHECK_RESULTS,
                     doc="functional model: real encryption, MACs and speculation over a trace; counts false hits")
def check(cfg: CheckConfig) -> dict[str, Any]:
    return _call(_native.memcrypt.check, native_run(cfg), "memcrypt.check")
