//! A memory-system run with observation on: what an adversary probing every channel saw
//! ([`crate::observe`]), with the channel table and which nodes are CPUs and modules.

use std::any::Any;

use crate::observe::{channel_table, ChannelInfo, Observations};

/// A memory-system run with everything the adversary saw.
pub struct Observed {
    pub result: super::MemSysResult,
    pub obs: Observations,
    pub channels: Vec<ChannelInfo>,
    /// Node ids of the CPUs and of the modules' vault ports (module m's node).
    pub cpu_nodes: Vec<u32>,
    pub module_nodes: Vec<u32>,
    pub nodes: usize,
}

/// Runs a memory system (synthetic streams or a trace) with observation on, whatever
/// `cfg.observe` says.
pub fn memsys_observed(cfg: &super::MemSysConfig) -> Result<Observed, crate::SimError> {
    let mut cfg = cfg.clone();
    cfg.observe = true;
    let mut s = super::MemSystem::new(&cfg)?;
    let result = s.run()?;
    let obs = s.engine.take_observer().and_then(|o| (o as Box<dyn Any>).downcast::<Observations>().ok()).map(|b| *b).unwrap_or_default();
    Ok(Observed {
        result,
        obs,
        channels: channel_table(&s.engine.topo),
        cpu_nodes: s.cpu_nodes.clone(),
        module_nodes: (0..s.modules).map(|m| s.module_node(m)).collect(),
        nodes: s.engine.topo.nodes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memsys::{MemSysConfig, READ_REQ_FLITS, READ_RESP_FLITS, WRITE_REQ_FLITS};

    fn small() -> MemSysConfig {
        let mut c = MemSysConfig::default();
        c.workload.requests_per_cpu = 200;
        c
    }

    #[test]
    fn every_packet_is_seen_on_its_whole_path_and_nothing_else() {
        let c = small();
        let o = memsys_observed(&c).unwrap();
        let r = &o.result;
        let obs = &o.obs;
        assert!(!obs.truncated());
        // One injection per packet: requests and their responses (no dummies with direct).
        assert_eq!(r.dummies, 0);
        assert_eq!(obs.inj_cycle.len() as u64, 2 * (r.reads + r.writes));
        // Each packet crosses its injection channel, avg_hops routers (one output channel
        // each, the last being the ejection channel).
        let expect = obs.inj_cycle.len() as f64 * (1.0 + r.avg_hops);
        assert!((obs.ch_cycle.len() as f64 - expect).abs() < 0.5, "{} vs {expect}", obs.ch_cycle.len());
        let kinds = |k: &str| obs.ch_id.iter().filter(|&&i| o.channels[i as usize].kind == k).count();
        assert_eq!(kinds("injection"), obs.inj_cycle.len());
        assert_eq!(kinds("ejection"), obs.inj_cycle.len());
        assert_eq!(kinds("unconnected"), 0);
        // Sizes are HMC's, reads dominate: 1-flit requests, 5-flit responses.
        let flits: u64 = obs.inj_flits.iter().map(|&f| f as u64).sum();
        let want = r.reads * (READ_REQ_FLITS + READ_RESP_FLITS) as u64 + r.writes * (WRITE_REQ_FLITS + 1) as u64;
        assert_eq!(flits, want);
        // CPUs inject only toward modules and modules only toward CPUs.
        for (&s, &d) in obs.inj_src.iter().zip(&obs.inj_dst) {
            let (sc, dm) = (o.cpu_nodes.contains(&s), o.module_nodes.contains(&d));
            assert_eq!(sc, dm, "{s} -> {d}");
        }
        // Time-ordered streams within the run.
        assert!(obs.inj_cycle.windows(2).all(|w| w[0] <= w[1]));
        assert!(*obs.ch_cycle.last().unwrap() <= r.runtime_cycles);
    }

    #[test]
    fn the_cap_bounds_memory_and_marks_where_the_record_is_complete() {
        let mut c = small();
        c.observe_max_events = 1000;
        let o = memsys_observed(&c).unwrap();
        assert!(o.obs.truncated());
        assert!(o.obs.ch_cycle.len() <= 1000 && o.obs.inj_cycle.len() <= 1000);
        assert!(o.obs.ch_cycle.iter().all(|&t| t <= o.obs.complete_until));
        // The same run, uncapped, agrees on everything before the cut.
        let full = memsys_observed(&small()).unwrap();
        let k = o.obs.inj_cycle.len();
        assert_eq!(&full.obs.inj_cycle[..k], &o.obs.inj_cycle[..]);
        assert_eq!(&full.obs.inj_dst[..k], &o.obs.inj_dst[..]);
        assert_eq!(full.result.runtime_cycles, o.result.runtime_cycles, "observing changes nothing");
    }
}
