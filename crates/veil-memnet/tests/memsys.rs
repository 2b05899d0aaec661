//! The memory system's checks: exact zero-load latency, one response per request,
//! determinism, bounded memory, OTP stalls and storage, functional encryption, bad input.

use veil_memnet::memsys::addrmap::AddressMap;
use veil_memnet::memsys::cpu::{Kind, MissSource, Record};
use veil_memnet::memsys::{MemSysConfig, MemSystem};
use veil_memnet::SimError;

/// A fixed list of records.
struct List(Vec<Record>, usize);

impl MissSource for List {
    fn next_into(&mut self, r: &mut Record) -> Result<bool, SimError> {
        if self.1 == self.0.len() {
            return Ok(false);
        }
        *r = self.0[self.1].clone();
        self.1 += 1;
        Ok(true)
    }
}

fn one_cpu(uarch: &str) -> MemSysConfig {
    let mut c = MemSysConfig::default();
    c.cpu.count = 1;
    c.cpu.placement = vec![0];
    c.encryption.uarch = uarch.into();
    c
}

/// Round trip of one read from the CPU at module 0 to module `target`, on an idle network.
fn idle_read(cfg: &MemSysConfig, target: u64) -> (u64, MemSystem) {
    let mut f = |_: usize, map: &AddressMap| -> Result<Box<dyn MissSource>, SimError> {
        let addr = map.compose(Some(target), &mut |_| 0);
        Ok(Box::new(List(vec![Record { kind: Kind::LoadFill, addr, ..Default::default() }], 0)))
    };
    let mut s = MemSystem::with_sources(cfg, &mut f).unwrap();
    let r = s.run().unwrap();
    assert_eq!(r.responses, 1);
    (r.cores[0].read_latency_max, s)
}

#[test]
fn idle_read_latency_is_analytic() {
    for (uarch, hop) in [("none", 0u64), ("per_hop_aes", 20), ("per_hop_otp", 1), ("source_otp", 0)] {
        let cfg = one_cpu(uarch);
        // Module 1 is router 1, in the CPU's group: CPU -> r0 -> r1 -> vaults and back.
        let (lat, s) = idle_read(&cfg, 1);
        let serdes = 4; // 3.2 ns at tCK 0.8 ns
        let cpu_link = 1 + serdes + hop;
        let local = 1 + serdes + hop;
        let vault_port = 1;
        // A packet of P flits: injection link, then per router 3 pipeline cycles and its
        // output link (latency + 1 each), then P - 1 flits behind the head.
        let req = (cpu_link + 1) + (3 + local) + (3 + vault_port) + (1 - 1);
        let resp = (vault_port + 1) + (3 + local) + (3 + cpu_link) + (5 - 1);
        let dram = 5 + 13 + 13 + 8 + 5; // front end, tRCD, tCL, 2 bursts, back end
        assert_eq!(s.idle_dram_read_cycles(), dram);
        assert_eq!(lat, req + dram + resp, "{uarch}");
    }
}

#[test]
fn idle_read_latency_grows_by_a_global_hop() {
    let cfg = one_cpu("none");
    let (near, _) = idle_read(&cfg, 1);
    // Module 8 is router 0 of group 1: one global hop away from router 0 (g = 8, one link
    // per group pair), or a global plus local hops: at least one more router each way.
    let (far, _) = idle_read(&cfg, 8 * 1 + 7);
    assert!(far > near, "{far} vs {near}");
}

fn small(kind: &str, uarch: &str, seed: u64) -> MemSysConfig {
    let mut c = MemSysConfig::default();
    c.network.seed = seed;
    c.workload.kind = kind.into();
    c.workload.requests_per_cpu = 300;
    c.encryption.uarch = uarch.into();
    c
}

#[test]
fn every_request_gets_one_response() {
    for kind in ["uniform", "hotspot", "stream", "batch"] {
        let mut s = MemSystem::new(&small(kind, "none", 1)).unwrap();
        let r = s.run().unwrap();
        assert_eq!(r.reads + r.writes, 16 * 300, "{kind}");
        assert_eq!(r.responses, r.reads + r.writes, "{kind}");
        assert_eq!(r.dram.reads, r.reads, "{kind}");
        assert_eq!(r.dram.writes, r.writes, "{kind}");
        assert!(r.writes > 0 && r.runtime_cycles > 0);
        assert_eq!(r.runtime_cycles, r.cores.iter().map(|c| c.finished_at).max().unwrap());
    }
}

#[test]
fn same_seed_same_runtime() {
    let a = MemSystem::new(&small("uniform", "source_otp", 3)).unwrap().run().unwrap();
    let b = MemSystem::new(&small("uniform", "source_otp", 3)).unwrap().run().unwrap();
    let c = MemSystem::new(&small("uniform", "source_otp", 4)).unwrap().run().unwrap();
    assert_eq!(a.runtime_cycles, b.runtime_cycles);
    assert_eq!(a.avg_read_latency, b.avg_read_latency);
    assert_ne!(a.runtime_cycles, c.runtime_cycles);
}

#[test]
fn memory_follows_the_network_not_the_trace() {
    let mut short = small("batch", "none", 1);
    short.workload.requests_per_cpu = 200;
    let mut long = short.clone();
    long.workload.requests_per_cpu = 2000;
    let mut a = MemSystem::new(&short).unwrap();
    a.run().unwrap();
    let mut b = MemSystem::new(&long).unwrap();
    b.run().unwrap();
    // At most one slot per outstanding miss (16 CPUs x 16 MSHRs), whatever the length.
    assert!(b.message_slots() <= 16 * 16 + 16, "{}", b.message_slots());
    assert!(b.engine.packet_slots() <= 16 * 16 + 128, "{}", b.engine.packet_slots());
    assert!(a.message_slots() <= 16 * 16 + 16);
}

#[test]
fn encryption_costs_rank_as_in_the_paper() {
    let rt = |u: &str| MemSystem::new(&small("uniform", u, 1)).unwrap().run().unwrap().runtime_cycles as f64;
    let none = rt("none");
    let aes = rt("per_hop_aes");
    let otp = rt("per_hop_otp");
    let src = rt("source_otp");
    assert!(aes > otp && otp > none, "aes {aes} otp {otp} none {none}");
    assert!(src < otp && (src / none - 1.0).abs() < 0.02, "source {src} none {none}");
}

#[test]
fn shallow_otp_buffers_stall_and_deep_ones_do_not() {
    let mut c = small("batch", "source_otp", 1);
    c.encryption.otp_depth = 1;
    c.encryption.aes_blocks_per_cycle = 0.25;
    let r = MemSystem::new(&c).unwrap().run().unwrap();
    assert!(r.otp.sender_stalls > 0 && r.otp.sender_stall_cycles >= r.otp.sender_stalls);
    c.encryption.otp_depth = 64;
    c.encryption.aes_blocks_per_cycle = 1.0;
    let r2 = MemSystem::new(&c).unwrap().run().unwrap();
    assert_eq!(r2.otp.sender_stalls, 0);
    assert!(r2.runtime_cycles < r.runtime_cycles);
    // 64 modules x 2 directions at a CPU: 64 pads of 80 B per pair side.
    assert!(r2.otp_storage_bytes_cpu > 128 * 64 * 80);
}

#[test]
fn small_counters_force_rekeys() {
    let mut c = small("hotspot", "source_otp", 1);
    c.cpu.count = 1;
    c.workload.requests_per_cpu = 1000;
    c.workload.hotspot_fraction = 1.0; // one pair carries every request
    c.encryption.counter_bits = 10; // 1024 blocks: a re-key every 12 rounds of 16 pads
    let r = MemSystem::new(&c).unwrap().run().unwrap();
    assert!(r.otp.rekeys > 0);
    assert_eq!(r.responses, r.reads + r.writes);
}

#[test]
fn functional_encryption_round_trips_out_of_order() {
    let mut c = small("uniform", "source_otp", 5);
    c.network.routing = "ugal".into();
    c.workload.insts_per_miss = 0.0;
    c.encryption.functional = true;
    c.encryption.check_bits = 8;
    c.encryption.foreign_checks = 8;
    let r = MemSystem::new(&c).unwrap().run().unwrap();
    let f = r.functional.unwrap();
    assert_eq!(f.packets, 2 * (r.reads + r.writes));
    assert_eq!(f.mismatches, 0);
    assert_eq!(f.rejected_at_destination, 0);
    assert!(f.out_of_order > 0, "multi-path delivery reorders some pairs");
    // A non-destination passes an 8-bit check with probability 1/256.
    let rate = f.foreign_accepts as f64 / f.foreign_trials as f64;
    let sd = (1.0 / 256.0 * (255.0 / 256.0) / f.foreign_trials as f64).sqrt();
    assert!((rate - 1.0 / 256.0).abs() < 4.0 * sd, "false-accept rate {rate} over {} trials", f.foreign_trials);
}

fn config_error(c: &MemSysConfig) -> String {
    match MemSystem::new(c) {
        Err(SimError::Config(e)) => e.0,
        Err(e) => panic!("not a config error: {e}"),
        Ok(_) => panic!("accepted"),
    }
}

#[test]
fn bad_input_is_one_line() {
    let mut c = MemSysConfig::default();
    c.cpu.count = 1;
    c.cpu.placement = vec![64];
    assert!(config_error(&c).contains("cpu.placement: module 64 does not exist"));
    let mut c = MemSysConfig::default();
    c.encryption.otp_depth = 0;
    assert!(config_error(&c).contains("otp_depth"));
    let mut c = MemSysConfig::default();
    c.module.address_mapping = "RW:VL:LY:CLL".into();
    assert!(config_error(&c).contains("does not cover the address bits"));
    let mut c = MemSysConfig::default();
    c.workload.address_space = 1 << 40;
    assert!(config_error(&c).contains("exceed the modules' capacity"));
    // A trace address beyond capacity is found while streaming: still bad input.
    let cfg = one_cpu("none");
    let mut f = |_: usize, map: &AddressMap| -> Result<Box<dyn MissSource>, SimError> {
        Ok(Box::new(List(vec![Record { addr: map.capacity + 64, ..Default::default() }], 0)))
    };
    match MemSystem::with_sources(&cfg, &mut f).unwrap().run() {
        Err(SimError::Config(e)) => assert!(e.0.contains("beyond the modules' capacity"), "{e}"),
        other => panic!("{other:?}"),
    }
}

fn write_trace(name: &str, records: usize, threads: u32) -> String {
    let path = std::env::temp_dir().join(format!("veil-memsys-{}-{name}.vtrace", std::process::id()));
    let h = veil_trace::synthetic::header(threads, 64);
    let mut w = veil_trace::TraceWriter::create(&path, &h).unwrap();
    for r in veil_trace::synthetic::records(7, records, threads, 64) {
        w.write(&r).unwrap();
    }
    w.finish().unwrap();
    path.to_string_lossy().into_owned()
}

#[test]
fn trace_threads_replay_on_their_cores() {
    let path = write_trace("four", 2000, 4);
    let mut c = MemSysConfig::default();
    c.cpu.count = 4;
    c.workload.kind = "trace".into();
    c.workload.trace = path.clone();
    let r = MemSystem::new(&c).unwrap().run().unwrap();
    assert_eq!(r.reads + r.writes, 2000);
    assert_eq!(r.responses, 2000);
    let per_core: Vec<u64> = r.cores.iter().map(|k| k.reads + k.writes).collect();
    let mut want = [0u64; 4];
    for rec in veil_trace::synthetic::records(7, 2000, 4, 64) {
        want[rec.thread as usize] += 1;
    }
    assert_eq!(per_core, want.to_vec());
    let again = MemSystem::new(&c).unwrap().run().unwrap();
    assert_eq!(again.runtime_cycles, r.runtime_cycles);
    assert!(r.pages_touched > 0 && r.pages_touched <= 2000);
    // Identity mapping: the synthetic trace's addresses (below 4 GiB) fit as they are.
    c.workload.page_mapping = "identity".into();
    let ident = MemSystem::new(&c).unwrap().run().unwrap();
    assert_eq!(ident.responses, 2000);
    assert_eq!(ident.pages_touched, 0);
    // More threads than CPUs is bad input, and so are fewer (idle CPU ports).
    c.cpu.count = 2;
    assert!(config_error(&c).contains("4 threads but cpu.count is 2"));
    c.cpu.count = 16;
    assert!(config_error(&c).contains("4 threads but cpu.count is 16"));
    std::fs::remove_file(path).ok();
    // A header that names no threads (a producer that did not know them) never runs empty.
    let zero = std::env::temp_dir().join(format!("veil-memsys-{}-zero.vtrace", std::process::id()));
    let mut w = veil_trace::TraceWriter::create(&zero, &veil_trace::synthetic::header(0, 64)).unwrap();
    for r in veil_trace::synthetic::records(7, 100, 4, 64) {
        w.write(&r).unwrap();
    }
    w.finish().unwrap();
    c.workload.trace = zero.to_string_lossy().into_owned();
    c.cpu.count = 4;
    assert!(config_error(&c).contains("0 threads but cpu.count is 4"));
    std::fs::remove_file(zero).ok();
}

/// A run with the fast-forward on and off (on a trace of 4 threads), checked equal.
fn fast_forward_pair(path: &str, tune: impl Fn(&mut MemSysConfig)) -> veil_memnet::memsys::MemSysResult {
    let mut c = MemSysConfig::default();
    c.cpu.count = 4;
    c.workload.kind = "trace".into();
    c.workload.trace = path.to_string();
    c.encryption.uarch = "source_otp".into();
    tune(&mut c);
    let a = MemSystem::new(&c).unwrap().run().unwrap();
    c.fast_forward = false;
    let b = MemSystem::new(&c).unwrap().run().unwrap();
    assert_eq!(a.runtime_cycles, b.runtime_cycles);
    assert_eq!(a.avg_read_latency, b.avg_read_latency);
    assert_eq!(a.cores, b.cores);
    assert_eq!(a.otp, b.otp);
    a
}

#[test]
fn fast_forward_changes_nothing() {
    let path = write_trace("ff", 600, 4);
    fast_forward_pair(&path, |c| c.network.router.internal_speedup = 1.5);
    std::fs::remove_file(path).ok();
}

/// The jump also passes over cores waiting for a response (ROB full behind a load miss, or
/// every MSHR taken), counting their stall cycles as polling each cycle would.
#[test]
fn fast_forward_over_stalled_cores_changes_nothing() {
    let path = write_trace("ffstall", 2000, 4);
    for (mshrs, rob) in [(1, 4096), (16, 8), (2, 64)] {
        let a = fast_forward_pair(&path, |c| (c.cpu.mshrs, c.cpu.rob) = (mshrs, rob));
        let stalls: u64 = a.cores.iter().map(|c| if rob < 100 { c.rob_stall_cycles } else { c.mshr_stall_cycles }).sum();
        assert!(stalls > 1000, "mshrs {mshrs}, rob {rob}: {stalls} stall cycles: the case is not exercised");
    }
    std::fs::remove_file(path).ok();
}
