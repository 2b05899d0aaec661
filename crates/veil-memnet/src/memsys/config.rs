//! Configuration of a memory-centric network: the network (memnet's `SimConfig`), the memory
//! modules, the CPUs, the workload and the packet encryption. Every field has a default;
//! the defaults are the system `docs/memnet-memsys.md` describes (64 HMC-like modules on a
//! dragonfly, 16 CPUs).

use serde::{Deserialize, Serialize};

use crate::config::{SimConfig, TopologyConfig};

/// An HMC-like module: a logic layer with one controller per vault and a router, DRAM
/// layers above. Timing values in ns are gem5's `HMC_2500_1x32` (DRAMSpec bank model and
/// Azarkhish et al.'s smart-memory-cube interconnect) unless noted; see docs/memnet-memsys.md.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct ModuleConfig {
    /// DRAM layers (gem5 HMC_2500_1x32: 4).
    pub layers: u32,
    /// Vaults per module (HMC 1.0/gem5: 16).
    pub vaults: u32,
    /// Banks per layer in a vault (gem5: 2, so 8 banks per vault).
    pub banks_per_layer: u32,
    /// Capacity per module in GiB (gem5: 4 layers x 4 Gbit = 2 GiB).
    pub gb: u32,
    /// Row buffer per bank (gem5: 256 B).
    pub row_bytes: u32,
    /// Field order of the physical address, most significant first (paper: RW:VL:CB:LY:CLL).
    pub address_mapping: String,
    /// "closed" (the HMC vault controllers' default, gem5 models it as close_adaptive) or "open".
    pub page_policy: String,
    /// DRAM clock (gem5: 0.8 ns, 1250 MHz); also the network cycle.
    pub tck_ns: f64,
    pub trp_ns: f64,
    /// Column-to-column delay: gem5 leaves tCCD_L unset for HMC and spaces bursts by tBURST.
    pub tccd_ns: f64,
    pub trcd_ns: f64,
    pub tcl_ns: f64,
    pub twr_ns: f64,
    pub tras_ns: f64,
    /// One burst of 8 beats over 32 TSVs: 32 bytes in 3.2 ns (gem5).
    pub tburst_ns: f64,
    pub burst_bytes: u32,
    /// Vault controller pipeline before and after the DRAM (gem5 MemCtrl static frontend and
    /// backend latency of its HMC controller: 4 ns each).
    pub frontend_ns: f64,
    pub backend_ns: f64,
    /// Requests FR-FCFS looks at (gem5: read buffer of 32).
    pub scheduler_window: usize,
}

impl Default for ModuleConfig {
    fn default() -> Self {
        Self {
            layers: 4,
            vaults: 16,
            banks_per_layer: 2,
            gb: 2,
            row_bytes: 256,
            address_mapping: "RW:VL:CB:LY:CLL".into(),
            page_policy: "closed".into(),
            tck_ns: 0.8,
            trp_ns: 7.7,
            tccd_ns: 3.2,
            trcd_ns: 10.2,
            tcl_ns: 9.9,
            twr_ns: 8.0,
            tras_ns: 21.6,
            tburst_ns: 3.2,
            burst_bytes: 32,
            frontend_ns: 4.0,
            backend_ns: 4.0,
            scheduler_window: 32,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct CpuConfig {
    pub count: usize,
    /// Module each CPU attaches to (its router); empty = spread evenly (CPU i at module
    /// i * modules / count).
    pub placement: Vec<usize>,
    /// Outstanding misses per core.
    pub mshrs: u32,
    /// Reorder buffer: instructions the core may run past its oldest outstanding load miss.
    pub rob: u64,
    pub issue_width: f64,
    /// Instructions per core cycle between misses (at most issue_width).
    pub ipc: f64,
    pub ghz: f64,
}

impl Default for CpuConfig {
    fn default() -> Self {
        Self { count: 16, placement: Vec::new(), mshrs: 16, rob: 128, issue_width: 4.0, ipc: 2.0, ghz: 2.0 }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct WorkloadConfig {
    /// uniform, hotspot, stream, batch (synthetic streams) or trace.
    pub kind: String,
    /// Records (fills and writebacks) per core, synthetic streams.
    pub requests_per_cpu: u64,
    /// Probability that a fill is followed by a writeback.
    pub write_fraction: f64,
    /// Mean instructions between misses (exponential); batch ignores it (0).
    pub insts_per_miss: f64,
    pub hot_modules: Vec<u64>,
    pub hotspot_fraction: f64,
    /// Address space the workload uses in bytes (0 = all the modules' capacity); a trace
    /// whose addresses need more than the modules hold is bad input.
    pub address_space: u64,
    /// kind = trace: the trace file (veil-trace format); thread i runs on CPU i.
    pub trace: String,
    /// kind = trace: "first_touch" gives each 4 KiB page of the trace (virtual addresses of a
    /// real program) the next free physical frame on first use, as an OS would; more pages
    /// than the modules hold is bad input. "identity" uses the addresses as they are.
    pub page_mapping: String,
}

impl Default for WorkloadConfig {
    fn default() -> Self {
        Self {
            kind: "uniform".into(),
            requests_per_cpu: 2000,
            write_fraction: 0.25,
            insts_per_miss: 100.0,
            hot_modules: vec![0],
            hotspot_fraction: 0.5,
            address_space: 0,
            trace: String::new(),
            page_mapping: "first_touch".into(),
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct EncryptionConfig {
    /// none, per_hop_aes, per_hop_otp, source_otp.
    pub uarch: String,
    /// Latency of one AES operation in network cycles (a 10-round engine, one round a cycle).
    pub aes_latency: u32,
    /// Cycles of the XOR stage per hop (per_hop_otp).
    pub xor_cycles: u32,
    /// OTP buffer depth D per (source, destination) pair.
    pub otp_depth: usize,
    /// AES blocks each node's engines produce per cycle (pipelined; 2 = one engine per link
    /// direction, which matches a 16-byte-per-cycle link each way).
    pub aes_blocks_per_cycle: f64,
    /// Pair counter width; a saturated counter forces a re-key.
    pub counter_bits: u32,
    /// Cycles a re-key (nonce exchange) stalls the pair.
    pub rekey_cycles: u64,
    /// Really encrypt and decrypt every packet (veil-crypto AES-CTR).
    pub functional: bool,
    /// Bits of the encrypted destination check in the header.
    pub check_bits: u32,
    /// Functional mode: non-destination nodes that try to decode each delivered packet.
    pub foreign_checks: u32,
}

impl Default for EncryptionConfig {
    fn default() -> Self {
        Self {
            uarch: "none".into(),
            aes_latency: 10,
            xor_cycles: 1,
            otp_depth: 16,
            aes_blocks_per_cycle: 2.0,
            counter_bits: 32,
            rekey_cycles: 1000,
            functional: false,
            check_bits: 16,
            foreign_checks: 1,
        }
    }
}

/// Parameters of the secure routing algorithms (`[secure]`; each algorithm reads some of
/// them, `veil list` shows which).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct SecureConfig {
    /// Real messages one packet may carry to its destination (batching per destination),
    /// as long as they and their replies fit in `packet_flits`.
    pub batch: u32,
    /// Flits of every packet of a secure algorithm, real or dummy (>= 5: the largest HMC
    /// packet, a 64-byte line and its header).
    pub packet_flits: u16,
    /// constant_rate: cycles between packets on an injection channel (0 = back to back, one
    /// packet every packet_flits cycles).
    pub slot_cycles: u32,
    /// adaptive_ghost: modules that get hot_weight slots per round (public, fixed).
    pub hot_modules: Vec<u64>,
    /// adaptive_ghost: slots per round of each hot module (others get one).
    pub hot_weight: u32,
    /// Cycles a packet stays at least at each module where it may pick up data (0 = leaves
    /// as soon as nothing is due there). The idle access time (44 cycles by default) stops a
    /// real access standing out by its dwell when the vault is idle (timing is outside the
    /// paper's threat model).
    pub dwell_cycles: u32,
    /// Ghost routings: a CPU that runs out of messages keeps sending dummies until its
    /// current permutation is used up, so a burst never ends right after a real packet (the
    /// paper stops at once; then the last packet of a burst is likely real, a leak through
    /// timing).
    pub finish_rounds: bool,
}

impl Default for SecureConfig {
    fn default() -> Self {
        Self { batch: 1, packet_flits: 5, slot_cycles: 0, hot_modules: Vec::new(), hot_weight: 4, dwell_cycles: 0, finish_rounds: false }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct MemSysConfig {
    /// Topology, routing and router (memnet's SimConfig; its traffic and run-control fields
    /// are not used, `sim.watchdog_cycles` is). Every router is a memory module.
    pub network: SimConfig,
    /// SerDes latency of an off-chip link (router-to-router and CPU links), both ends.
    pub serdes_ns: f64,
    pub module: ModuleConfig,
    pub cpu: CpuConfig,
    pub workload: WorkloadConfig,
    pub encryption: EncryptionConfig,
    /// Routing and injection algorithm: minimal (alias direct, non-secure), minimal_dummy,
    /// sequential, broadcast, ghost_minimal, ghost_nonminimal, constant_rate, adaptive_ghost.
    pub injection: String,
    /// Parameters of the secure algorithms.
    pub secure: SecureConfig,
    /// Give up after this many cycles (0 = no limit).
    pub max_cycles: u64,
    /// Jump over cycles in which nothing can happen (same results as stepping each one).
    pub fast_forward: bool,
    /// Record what an adversary probing every channel sees (`crate::observe`).
    pub observe: bool,
    /// Cap on recorded events per stream (channel traversals, injections); memory is about
    /// 18 bytes per event.
    pub observe_max_events: usize,
    /// Threads one run may use, the simulation's own included (None = every core; 1..=1024).
    /// Results are the same for any number.
    pub threads: Option<usize>,
}

impl Default for MemSysConfig {
    fn default() -> Self {
        let mut network = SimConfig::default();
        // 64 modules: 8 groups of 8 routers, one global link each (g = 8 <= a*h+1 = 9), two
        // terminals per router (the module's vault port and a CPU port).
        network.topology = TopologyConfig::Dragonfly {
            p: 2,
            a: 8,
            h: 1,
            g: Some(8),
            local_latency: 1,
            global_latency: 1,
            local_flit_cycles: 1,
            global_flit_cycles: 1,
        };
        network.routing = "min".into();
        // Requests and replies x the dragonfly routings' classes (3 for Valiant / UGAL).
        network.router.num_vcs = 6;
        network.router.vc_buf_size = 8;
        Self {
            network,
            serdes_ns: 3.2,
            module: ModuleConfig::default(),
            cpu: CpuConfig::default(),
            workload: WorkloadConfig::default(),
            encryption: EncryptionConfig::default(),
            injection: "minimal".into(),
            secure: SecureConfig::default(),
            max_cycles: 0,
            fast_forward: true,
            observe: false,
            observe_max_events: 20_000_000,
            threads: None,
        }
    }
}
