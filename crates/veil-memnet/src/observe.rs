//! What an adversary who probes every channel of the network sees (ghost routing's threat
//! model, paper §II): each packet crossing each channel (when, which channel, how many flits)
//! and each packet entering the network (when, from which node, toward which next
//! destination, as the plaintext routing header shows it). Never contents: a dummy and a real
//! packet of the same size look alike here, as they do on the wire.
//!
//! Recording is off unless a driver asks for it ([`Engine::observe`](crate::sim::Engine::observe));
//! every event takes constant memory in flat arrays (14 bytes per channel event, 18 per
//! injection), and recording stops for good at a cap so memory stays bounded: the streams are
//! then complete up to `complete_until`.

use crate::topology::{ChannelClass, End, Topology};

#[derive(Clone, Debug, Default)]
pub struct Observations {
    cap: usize,
    /// Recording stopped (the cap was reached) at this cycle; u64::MAX = never.
    pub complete_until: u64,
    /// Channel traversals, one per packet and channel, at the cycle its head flit leaves.
    pub ch_cycle: Vec<u64>,
    pub ch_id: Vec<u32>,
    pub ch_flits: Vec<u16>,
    /// Injections: the cycle the head flit entered the injection channel, the source node,
    /// the destination its header names (the first leg's, for multi-leg routes) and length.
    pub inj_cycle: Vec<u64>,
    pub inj_src: Vec<u32>,
    pub inj_dst: Vec<u32>,
    pub inj_flits: Vec<u16>,
}

impl Observations {
    pub fn new(cap: usize) -> Self {
        Self { cap, complete_until: u64::MAX, ..Default::default() }
    }

    #[inline]
    fn full(&mut self, t: u64) -> bool {
        if self.complete_until != u64::MAX {
            return true;
        }
        if self.ch_cycle.len() >= self.cap || self.inj_cycle.len() >= self.cap {
            self.complete_until = t;
            return true;
        }
        false
    }

    #[inline]
    pub(crate) fn channel(&mut self, t: u64, ch: u32, flits: u16) {
        if self.full(t) {
            return;
        }
        self.ch_cycle.push(t);
        self.ch_id.push(ch);
        self.ch_flits.push(flits);
    }

    #[inline]
    pub(crate) fn inject(&mut self, t: u64, src: u32, dst: u32, flits: u16) {
        if self.full(t) {
            return;
        }
        self.inj_cycle.push(t);
        self.inj_src.push(src);
        self.inj_dst.push(dst);
        self.inj_flits.push(flits);
    }

    pub fn truncated(&self) -> bool {
        self.complete_until != u64::MAX
    }
}

/// One channel the adversary can probe.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChannelInfo {
    /// injection, ejection, local or global (router to router).
    pub kind: &'static str,
    /// Router (output channels) or node (injection channels) it leaves.
    pub from: u32,
    /// Router or node it enters.
    pub to: u32,
}

/// Channel ids: router r's output port p is `base[r] + p` (the engine's global port index;
/// unconnected mesh-edge ports keep an id and never carry traffic); node n's injection
/// channel is `ports + n`. Entry i describes channel id i.
pub fn channel_table(topo: &Topology) -> Vec<ChannelInfo> {
    let mut v = Vec::new();
    for r in 0..topo.routers {
        for l in &topo.out[r] {
            let (kind, to) = match (l.to, l.class) {
                (End::None, _) => ("unconnected", u32::MAX),
                (End::Node(n), _) => ("ejection", n),
                (End::Router { r: nr, .. }, ChannelClass::Global) => ("global", nr),
                (End::Router { r: nr, .. }, _) => ("local", nr),
            };
            v.push(ChannelInfo { kind, from: r as u32, to });
        }
    }
    for n in 0..topo.nodes {
        v.push(ChannelInfo { kind: "injection", from: n as u32, to: topo.attach[n].0 });
    }
    v
}

/// A memory-system run with everything the adversary saw.
pub struct Observed {
    pub result: crate::memsys::MemSysResult,
    pub obs: Observations,
    pub channels: Vec<ChannelInfo>,
    /// Node ids of the CPUs and of the modules' vault ports (module m's node).
    pub cpu_nodes: Vec<u32>,
    pub module_nodes: Vec<u32>,
    pub nodes: usize,
}

/// Runs a memory system (synthetic streams or a trace) with observation on, whatever
/// `cfg.observe` says.
pub fn memsys_observed(cfg: &crate::memsys::MemSysConfig) -> Result<Observed, crate::SimError> {
    let mut cfg = cfg.clone();
    cfg.observe = true;
    let mut s = crate::memsys::MemSystem::new(&cfg)?;
    let result = s.run()?;
    let obs = s.engine.take_observations().unwrap_or_default();
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
