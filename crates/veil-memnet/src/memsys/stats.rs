//! What a run reports: DRAM, latency, packet and channel statistics gathered from the
//! cores, vaults and injection counters at the end of a run.

use super::*;

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct DramStats {
    pub reads: u64,
    pub writes: u64,
    pub row_hits: u64,
    pub max_vault_queue: usize,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct MemSysResult {
    /// Cycles until every core finished (network cycles = tCK).
    pub runtime_cycles: u64,
    pub runtime_ns: f64,
    pub reads: u64,
    pub writes: u64,
    pub responses: u64,
    pub dummies: u64,
    pub avg_read_latency: f64,
    pub max_read_latency: u64,
    pub avg_network_latency: f64,
    pub avg_hops: f64,
    pub instructions: u64,
    pub otp: OtpStats,
    /// OTP storage per node in bytes (the largest node; CPUs talk to every module).
    pub otp_storage_bytes_per_node: u64,
    pub otp_storage_bytes_cpu: u64,
    pub otp_storage_bytes_module: u64,
    pub functional: Option<FunctionalStats>,
    pub dram: DramStats,
    /// Trace pages given a frame (first-touch mapping), 0 otherwise.
    pub pages_touched: u64,
    pub cores: Vec<CoreStats>,
    pub modules: usize,
    pub cpus: usize,
    pub uarch: String,
    /// Routing and injection algorithm.
    pub injection: String,
    /// Packet injections (every leg, CPU and module channels) carrying real messages.
    pub real_packets: u64,
    /// Packet injections carrying none (dummies, dummy replies).
    pub dummy_packets: u64,
    /// Injections beyond the non-secure baseline's one request and one reply per request,
    /// per request.
    pub extra_packets_per_request: f64,
    pub dummies_per_real_packet: f64,
    /// Mean latency of a real message from ready to leave its node to arrival at its
    /// destination (waiting for a slot and detours included).
    pub avg_packet_latency_ns: f64,
    /// Mean busy fraction of the CPU and module injection channels.
    pub injection_utilisation: f64,
    /// Mean busy fraction of the CPUs' injection channels alone (the paper's "injection
    /// bandwidth"; with one terminal per router, the port a CPU shares with its module).
    pub cpu_injection_utilisation: f64,
    /// Mean busy fraction of the router-to-router channels.
    pub network_utilisation: f64,
    pub wall_seconds: f64,
    pub cycles_per_second: f64,
}

impl MemSystem {
    pub(super) fn result(&self, wall: f64) -> MemSysResult {
        let runtime = self.cores.iter().map(|c| c.stats.finished_at).max().unwrap_or(0);
        let mut dram = DramStats::default();
        for v in &self.vaults {
            dram.reads += v.stats.reads;
            dram.writes += v.stats.writes;
            dram.row_hits += v.stats.row_hits;
            dram.max_vault_queue = dram.max_vault_queue.max(v.stats.max_queue);
        }
        let e = &self.cfg.encryption;
        let ncpu = self.cpu_nodes.len() as u64;
        let (cpu_b, mod_b) = if self.enc.end_to_end_pads() {
            // A CPU pairs with every module, a module with every CPU, both directions.
            (
                otp::storage_bytes(e.otp_depth, self.pad_blocks * 16, e.counter_bits, self.modules as u64, self.modules as u64),
                otp::storage_bytes(e.otp_depth, self.pad_blocks * 16, e.counter_bits, ncpu, ncpu),
            )
        } else {
            (0, 0)
        };
        let n = self.delivered.max(1) as f64;
        let requests: u64 = self.cores.iter().map(|c| c.stats.reads + c.stats.writes).sum();
        let cycles_run = self.engine.now.max(1);
        // Injection channels: every CPU's, and every module's vault port.
        let inj_nodes: Vec<usize> = if self.tpr == 1 {
            (0..self.modules).collect()
        } else {
            (0..self.modules).map(|m| m * self.tpr).chain(self.cpu_nodes.iter().map(|&c| c as usize)).collect()
        };
        let util = |nodes: &mut dyn Iterator<Item = usize>| {
            let (sum, k) = nodes.fold((0.0, 0usize), |(s, k), x| (s + self.inj_flits[x] as f64 / cycles_run as f64, k + 1));
            sum / k.max(1) as f64
        };
        let inj_util = util(&mut inj_nodes.iter().copied());
        let cpu_util = util(&mut self.cpu_nodes.iter().map(|&c| c as usize));
        MemSysResult {
            runtime_cycles: runtime,
            runtime_ns: runtime as f64 * self.cfg.module.tck_ns,
            reads: self.cores.iter().map(|c| c.stats.reads).sum(),
            writes: self.cores.iter().map(|c| c.stats.writes).sum(),
            responses: self.responses,
            dummies: self.dummies,
            avg_read_latency: self.read_lat_sum as f64 / self.read_lat_n.max(1) as f64,
            max_read_latency: self.read_lat_max,
            avg_network_latency: self.net_lat_sum as f64 / n,
            avg_hops: self.hops_sum as f64 / n,
            instructions: self.cores.iter().map(|c| c.stats.instructions).sum(),
            otp: self.otp.as_ref().map(|o| o.stats.clone()).unwrap_or_default(),
            otp_storage_bytes_per_node: cpu_b.max(mod_b),
            otp_storage_bytes_cpu: cpu_b,
            otp_storage_bytes_module: mod_b,
            functional: self.functional.as_ref().map(|f| f.stats.clone()),
            dram,
            pages_touched: self.pages.as_ref().map_or(0, |p| p.len() as u64),
            cores: self.cores.iter().map(|c| c.stats.clone()).collect(),
            modules: self.modules,
            cpus: self.cores.len(),
            uarch: self.enc.name().into(),
            injection: self.policy.name().into(),
            real_packets: self.real_packets,
            dummy_packets: self.dummy_packets,
            extra_packets_per_request: (self.real_packets + self.dummy_packets) as f64 / requests.max(1) as f64 - 2.0,
            dummies_per_real_packet: self.dummy_packets as f64 / self.real_packets.max(1) as f64,
            avg_packet_latency_ns: self.pkt_lat_sum as f64 / self.pkt_lat_n.max(1) as f64 * self.cfg.module.tck_ns,
            injection_utilisation: inj_util,
            cpu_injection_utilisation: cpu_util,
            network_utilisation: self.net_flits as f64 / (self.router_links.max(1) * cycles_run) as f64,
            wall_seconds: wall,
            cycles_per_second: self.engine.now as f64 / wall.max(1e-9),
        }
    }
}
