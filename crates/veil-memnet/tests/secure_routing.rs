//! The secure routing algorithms (ghost routing paper §V and beyond): conservation, the
//! observable destination streams they promise, their dummy counts against analytic values,
//! determinism, bad input, and the paper's orderings on short runs.

use veil_memnet::config::TopologyConfig;
use veil_memnet::memsys::injection::ghost_minimal::expected_dummies_one_at_a_time;
use veil_memnet::memsys::{MemSysConfig, MemSysResult, MemSystem, WireRecord};
use veil_memnet::SimError;

const ALL: &[&str] = &["minimal", "minimal_dummy", "sequential", "broadcast", "ghost_minimal", "ghost_nonminimal", "constant_rate", "adaptive_ghost"];

/// 16 modules (dragonfly p=2, a=4, h=1, g=4), 4 CPUs at modules 0, 4, 8, 12.
fn small(injection: &str, requests: u64) -> MemSysConfig {
    let mut c = MemSysConfig::default();
    c.network.topology = TopologyConfig::Dragonfly { p: 2, a: 4, h: 1, g: Some(4), local_latency: 1, global_latency: 1, local_flit_cycles: 1, global_flit_cycles: 1 };
    c.cpu.count = 4;
    c.workload.requests_per_cpu = requests;
    c.encryption.uarch = "source_otp".into();
    c.injection = injection.into();
    c
}

fn run_logged(c: &MemSysConfig) -> (MemSysResult, Vec<WireRecord>, Vec<u32>, usize) {
    let mut s = MemSystem::new(c).unwrap();
    s.wire_log = Some(Vec::new());
    let r = s.run().unwrap();
    let cpus = s.cpu_nodes.clone();
    (r, s.wire_log.take().unwrap(), cpus, s.modules)
}

fn requests(r: &MemSysResult) -> u64 {
    r.reads + r.writes
}

#[test]
fn every_algorithm_answers_every_request_once_and_drops_every_dummy() {
    for &alg in ALL {
        let mut c = small(alg, 60);
        c.secure.hot_modules = vec![3];
        let (r, log, _, _) = run_logged(&c);
        assert_eq!(r.responses, requests(&r), "{alg}: one response per request");
        assert_eq!(r.dram.reads + r.dram.writes, requests(&r), "{alg}: one DRAM access per request");
        assert_eq!(r.dummies, r.dummy_packets, "{alg}: every dummy injected is delivered and dropped");
        assert_eq!(log.len() as u64, r.real_packets + r.dummy_packets, "{alg}");
        // Secure algorithms put one packet size on the wire; the baseline HMC's sizes.
        let sizes: std::collections::BTreeSet<u16> = log.iter().map(|w| w.flits).collect();
        if alg == "minimal" {
            assert_eq!(r.dummy_packets, 0);
            assert_eq!(r.extra_packets_per_request, 0.0);
            assert_eq!(sizes, [1, 5].into_iter().collect());
        } else {
            assert_eq!(sizes, [5].into_iter().collect(), "{alg}");
            assert!(r.extra_packets_per_request > 0.0, "{alg}");
        }
        assert!(r.injection_utilisation > 0.0 && r.injection_utilisation <= 1.0, "{alg}");
        assert!(r.cpu_injection_utilisation > 0.0 && r.cpu_injection_utilisation <= 1.0, "{alg}");
        assert!(r.network_utilisation > 0.0 && r.network_utilisation <= 1.0, "{alg}");
        assert!(r.avg_packet_latency_ns > 0.0, "{alg}");
    }
}

#[test]
fn with_one_terminal_per_router_cpus_share_their_module_port() {
    // 3x3 mesh: a CPU's node is its module's node, so some legs start and end at one node.
    for &alg in ALL {
        let mut c = small(alg, 30);
        c.network.topology = TopologyConfig::Mesh { k: 3, n: 2, latency: 1, flit_cycles: 1 };
        c.network.routing = "dor".into();
        c.cpu.count = 3;
        c.encryption.functional = true;
        let r = MemSystem::new(&c).unwrap().run().unwrap();
        assert_eq!(r.responses, requests(&r), "{alg}");
        assert_eq!(r.dummies, r.dummy_packets, "{alg}");
        let f = r.functional.unwrap();
        assert_eq!((f.mismatches, f.rejected_at_destination), (0, 0), "{alg}");
    }
}

/// Splits each CPU's first-leg destinations (packets it injects) per CPU.
fn first_legs(log: &[WireRecord], cpu: u32) -> Vec<u32> {
    log.iter().filter(|w| w.src == cpu).map(|w| w.dst).collect()
}

#[test]
fn ghost_minimal_destinations_are_a_concatenation_of_permutations() {
    let (r, log, cpus, modules) = run_logged(&small("ghost_minimal", 100));
    assert!(r.dummy_packets > 0);
    let all: Vec<u32> = (0..modules as u32).map(|m| m * 2).collect();
    for &c in &cpus {
        let seq = first_legs(&log, c);
        assert!(seq.len() > 4 * modules, "{}", seq.len());
        for chunk in seq.chunks(modules) {
            let mut s = chunk.to_vec();
            s.sort_unstable();
            let n = s.len();
            s.dedup();
            assert_eq!(s.len(), n, "a destination repeats within a permutation");
            if n == modules {
                assert_eq!(s, all);
            }
        }
        // And not always the same permutation.
        assert_ne!(seq[..modules], seq[modules..2 * modules]);
    }
}

#[test]
fn finishing_rounds_makes_every_burst_whole_permutations() {
    // One message at a time: without finish_rounds a burst ends with the real packet.
    for (alg, round) in [("ghost_minimal", 16), ("adaptive_ghost", 16 + 3), ("ghost_nonminimal", 256)] {
        let mut c = small(alg, 40);
        c.cpu.mshrs = 1;
        c.workload.insts_per_miss = 3000.0;
        c.secure.hot_modules = vec![5];
        c.secure.finish_rounds = true;
        let (r, log, cpus, _) = run_logged(&c);
        assert_eq!(r.responses, requests(&r), "{alg}");
        for &cpu in &cpus {
            let seq: Vec<&WireRecord> = log.iter().filter(|w| w.src == cpu).collect();
            assert_eq!(seq.len() % round, 0, "{alg}: {} packets", seq.len());
            // A gap (the CPU idle) only ever follows the last slot of a round.
            for (k, w) in seq.windows(2).enumerate() {
                if w[1].at - w[0].at > 200 {
                    assert_eq!((k + 1) % round, 0, "{alg}: burst ends inside a round");
                }
            }
        }
    }
}

#[test]
fn ghost_nonminimal_pairs_are_a_concatenation_of_permutations_of_all_pairs() {
    let (_, log, cpus, modules) = run_logged(&small("ghost_nonminimal", 300));
    for &c in &cpus {
        // The intermediate of a slot is its first leg; with i = f the first leg is also the last.
        let seq = first_legs(&log, c);
        let round = modules * modules;
        assert!(seq.len() >= round, "{} slots", seq.len());
        let mut count = vec![0usize; modules];
        for &d in &seq[..round] {
            count[d as usize / 2] += 1;
        }
        // Each module is the intermediate of N of the N^2 pairs of a round.
        assert!(count.iter().all(|&k| k == modules), "{count:?}");
    }
}

#[test]
fn minimal_dummy_sends_modules_minus_one_dummies_per_real_packet() {
    let (r, log, cpus, modules) = run_logged(&small("minimal_dummy", 60));
    assert_eq!(r.dummy_packets, (modules as u64 - 1) * r.real_packets);
    assert_eq!(r.dummies_per_real_packet, (modules - 1) as f64);
    // Every round is one packet to every module.
    for &c in &cpus {
        for chunk in first_legs(&log, c).chunks(modules) {
            let mut s = chunk.to_vec();
            s.sort_unstable();
            s.dedup();
            assert_eq!(s.len(), modules);
        }
    }
}

#[test]
fn sequential_and_broadcast_packet_counts_follow_their_routes() {
    // Sequential: the CPU's packet, then one leg per module (the last one home): N + 1 per request.
    let (r, log, _, modules) = run_logged(&small("sequential", 40));
    let n = modules as u64;
    assert_eq!(r.real_packets + r.dummy_packets, (n + 1) * requests(&r));
    assert_eq!(r.dummy_packets, 0);
    // Every request's legs visit every module: each module node receives one leg per request.
    for m in 0..n as u32 {
        assert_eq!(log.iter().filter(|w| w.dst == m * 2).count() as u64, requests(&r));
    }
    // Broadcast: to the root, N - 1 copies down the tree, N - 1 answers up, the root's answer.
    let (b, _, _, _) = run_logged(&small("broadcast", 40));
    assert_eq!(b.real_packets + b.dummy_packets, 2 * n * requests(&b));
    assert_eq!(b.extra_packets_per_request, (2 * n - 2) as f64);
}

#[test]
fn ghost_minimal_dummies_per_real_packet_match_the_analytic_expectation() {
    // One message at a time per CPU (1 MSHR), uniform destinations: docs/memnet-memsys.md's chain.
    let mut c = small("ghost_minimal", 600);
    c.cpu.mshrs = 1;
    let (r, _, _, modules) = run_logged(&c);
    let expect = expected_dummies_one_at_a_time(modules);
    let got = r.dummies_per_real_packet;
    eprintln!("ghost_minimal, one message at a time, {modules} modules: measured {got:.3}, analytic {expect:.3}");
    assert!((got / expect - 1.0).abs() < 0.05, "measured {got:.3}, analytic {expect:.3} ({} requests)", requests(&r));
}

#[test]
fn constant_rate_sends_one_packet_per_slot_on_every_channel() {
    let mut c = small("constant_rate", 30);
    c.secure.slot_cycles = 40;
    let (r, log, cpus, modules) = run_logged(&c);
    let end = log.iter().filter(|w| w.real).map(|w| w.at).max().unwrap();
    for n in cpus.iter().copied().chain((0..modules as u32).map(|m| m * 2)) {
        let times: Vec<u64> = log.iter().filter(|w| w.src == n && w.at <= end).map(|w| w.at).collect();
        assert!(times.len() > 10);
        assert!(times.windows(2).all(|t| t[1] - t[0] == 40), "node {n}: {:?}", &times[..10]);
    }
    assert!(r.dummy_packets > r.real_packets);
}

#[test]
fn a_seed_fixes_the_run_and_another_changes_it() {
    for alg in ["ghost_minimal", "ghost_nonminimal", "broadcast"] {
        let a = MemSystem::new(&small(alg, 40)).unwrap().run().unwrap();
        let b = MemSystem::new(&small(alg, 40)).unwrap().run().unwrap();
        assert_eq!((a.runtime_cycles, a.dummy_packets, a.real_packets), (b.runtime_cycles, b.dummy_packets, b.real_packets), "{alg}");
        let mut c = small(alg, 40);
        c.network.seed = 7;
        let d = MemSystem::new(&c).unwrap().run().unwrap();
        assert_ne!((a.runtime_cycles, a.dummy_packets), (d.runtime_cycles, d.dummy_packets), "{alg}");
    }
}

/// Mean cycles from a CPU's packet to module m to m's reply, for real and for dummy packets
/// (one CPU, one message at a time, reads only).
fn turnaround(dwell: u32) -> (f64, f64) {
    let mut c = small("ghost_minimal", 150);
    c.cpu.count = 1;
    c.cpu.mshrs = 1;
    c.workload.write_fraction = 0.0;
    c.workload.insts_per_miss = 2000.0;
    c.secure.dwell_cycles = dwell;
    let (_, log, cpus, modules) = run_logged(&c);
    let cpu = cpus[0];
    let (mut real, mut dummy) = (Vec::new(), Vec::new());
    for m in 0..modules as u32 {
        let out: Vec<&WireRecord> = log.iter().filter(|w| w.src == cpu && w.dst == 2 * m).collect();
        let back: Vec<&WireRecord> = log.iter().filter(|w| w.src == 2 * m && w.dst == cpu).collect();
        assert_eq!(out.len(), back.len(), "one reply per packet");
        for (o, b) in out.iter().zip(&back) {
            assert_eq!(o.real, b.real, "replies in order");
            let d = (b.at - o.at) as f64;
            if o.real { real.push(d) } else { dummy.push(d) }
        }
    }
    let mean = |v: &Vec<f64>| v.iter().sum::<f64>() / v.len() as f64;
    (mean(&real), mean(&dummy))
}

#[test]
fn a_dwell_of_the_idle_access_time_hides_which_packet_read_dram() {
    let idle = MemSystem::new(&small("ghost_minimal", 1)).unwrap().idle_dram_read_cycles();
    let (r0, d0) = turnaround(0);
    assert!(r0 - d0 > idle as f64 - 5.0, "without a dwell the real reply is late: {r0:.1} vs {d0:.1}");
    let (r1, d1) = turnaround(idle as u32);
    eprintln!("turnaround real/dummy: dwell 0 {r0:.1}/{d0:.1}, dwell {idle} {r1:.1}/{d1:.1}");
    assert!((r1 - d1).abs() < 2.0, "with it they leave alike: {r1:.1} vs {d1:.1}");
}

fn config_error(c: &MemSysConfig) -> String {
    match MemSystem::new(c) {
        Err(SimError::Config(e)) => {
            assert!(!e.0.contains('\n'), "one line: {e}");
            e.0
        }
        Err(e) => panic!("not a config error: {e}"),
        Ok(_) => panic!("accepted"),
    }
}

#[test]
fn bad_secure_input_is_one_line() {
    let e = config_error(&small("ghost", 1));
    assert!(e.contains("unknown algorithm 'ghost'") && e.contains("ghost_minimal") && e.contains("adaptive_ghost"), "{e}");
    let mut c = small("adaptive_ghost", 1);
    c.secure.hot_modules = vec![2, 16];
    assert!(config_error(&c).contains("secure.hot_modules: module 16 does not exist (the network has 16 modules"));
    c.secure.hot_modules = vec![2, 2];
    assert!(config_error(&c).contains("listed twice"));
    let mut c = small("ghost_minimal", 1);
    c.secure.batch = 0;
    assert!(config_error(&c).contains("secure.batch"));
    c.secure.batch = 1;
    c.secure.packet_flits = 4;
    assert!(config_error(&c).contains("secure.packet_flits: must be >= 5"));
    // Valiant-style routing needs a module to route through besides the destination.
    let mut c = small("ghost_nonminimal", 1);
    c.network.topology = TopologyConfig::File { path: None, text: Some("terminals 2\n0:\n".into()) };
    c.network.routing = "min".into();
    c.cpu.count = 1;
    let e = config_error(&c);
    assert!(e.contains("'ghost_nonminimal' needs at least 2 modules"), "{e}");
    // A slot shorter than a packet cannot be kept on a one-flit-per-cycle injection channel.
    let mut c = small("constant_rate", 1);
    c.secure.slot_cycles = 3;
    assert!(config_error(&c).contains("secure.slot_cycles: 3 is shorter than a packet (5 flits"));
}

#[test]
fn dummies_and_real_packets_look_alike_on_the_wire() {
    let mut c = small("ghost_minimal", 40);
    c.encryption.functional = true;
    let (r, log, _, _) = run_logged(&c);
    let f = r.functional.unwrap();
    assert_eq!((f.mismatches, f.rejected_at_destination), (0, 0));
    assert_eq!(f.packets, r.real_packets + r.dummy_packets, "every packet, dummies too, is encrypted and decoded");
    // Same length, and after the 8 plaintext bytes (source, pad slot, round, epoch) the bytes
    // of both kinds look uniform: chi-square over 256 byte values.
    for real in [true, false] {
        let mut hist = [0u64; 256];
        let mut total = 0u64;
        for w in log.iter().filter(|w| w.real == real) {
            assert_eq!(w.wire.len(), 80);
            for &b in &w.wire[8..] {
                hist[b as usize] += 1;
                total += 1;
            }
        }
        let e = total as f64 / 256.0;
        let chi2: f64 = hist.iter().map(|&h| (h as f64 - e).powi(2) / e).sum();
        // 255 degrees of freedom: mean 255, sd 22.6; 400 is beyond 6 sd.
        assert!(chi2 < 400.0, "real = {real}: chi2 {chi2:.0} over {total} bytes");
    }
}

#[test]
fn the_papers_orderings_on_a_short_run() {
    // Memory-intensive: cores keep their MSHRs full.
    let run = |alg: &str| {
        let mut c = small(alg, 60);
        c.workload.kind = "batch".into();
        MemSystem::new(&c).unwrap().run().unwrap()
    };
    let r: Vec<(&str, MemSysResult)> = ["minimal", "minimal_dummy", "ghost_minimal", "ghost_nonminimal", "sequential", "broadcast"].iter().map(|&a| (a, run(a))).collect();
    let get = |a: &str| &r.iter().find(|x| x.0 == a).unwrap().1;
    for (a, x) in &r {
        eprintln!(
            "{a:>17}: {} cycles, {:.2} dummies per real packet, {:.1} extra packets per request, CPU injection {:.3}, network {:.3}",
            x.runtime_cycles, x.dummies_per_real_packet, x.extra_packets_per_request, x.cpu_injection_utilisation, x.network_utilisation
        );
    }
    let slowest = r.iter().max_by_key(|x| x.1.runtime_cycles).unwrap().0;
    assert_eq!(slowest, "minimal_dummy");
    // ... because it fills the CPUs' injection channels.
    let busiest = r.iter().max_by(|a, b| a.1.cpu_injection_utilisation.total_cmp(&b.1.cpu_injection_utilisation)).unwrap().0;
    assert_eq!(busiest, "minimal_dummy");
    assert!(get("ghost_minimal").dummy_packets * 2 < get("minimal_dummy").dummy_packets);
    assert!(get("minimal").runtime_cycles < get("ghost_minimal").runtime_cycles);
    // Latency-bound (100 instructions between misses): the tree's depth beats the tour's
    // length. (Bandwidth-bound, broadcast's 2N packets per request lose to sequential's N + 1:
    // docs/memnet-memsys.md.)
    let lat = |alg: &str| MemSystem::new(&small(alg, 60)).unwrap().run().unwrap().runtime_cycles;
    let (b, s) = (lat("broadcast"), lat("sequential"));
    eprintln!("uniform: broadcast {b} cycles, sequential {s}");
    assert!(b < s);
}
