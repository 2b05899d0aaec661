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

use crate::sim::Observer;
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

    /// FNV-1a over the little-endian bytes of every recorded event, injections then channel
    /// traversals (stable across Rust versions, unlike `DefaultHasher`): what tests and the
    /// speed examples compare between builds. `fnv1a_more` continues it over more bytes.
    pub fn fnv1a(&self) -> u64 {
        let mut h = 0xcbf2_9ce4_8422_2325;
        for i in 0..self.inj_cycle.len() {
            h = fnv1a_more(h, &self.inj_cycle[i].to_le_bytes());
            h = fnv1a_more(h, &self.inj_src[i].to_le_bytes());
            h = fnv1a_more(h, &self.inj_dst[i].to_le_bytes());
            h = fnv1a_more(h, &self.inj_flits[i].to_le_bytes());
        }
        for i in 0..self.ch_cycle.len() {
            h = fnv1a_more(h, &self.ch_cycle[i].to_le_bytes());
            h = fnv1a_more(h, &self.ch_id[i].to_le_bytes());
            h = fnv1a_more(h, &self.ch_flits[i].to_le_bytes());
        }
        h
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

    pub fn truncated(&self) -> bool {
        self.complete_until != u64::MAX
    }
}

impl Observer for Observations {
    #[inline]
    fn channel(&mut self, t: u64, ch: u32, flits: u16) {
        if self.full(t) {
            return;
        }
        self.ch_cycle.push(t);
        self.ch_id.push(ch);
        self.ch_flits.push(flits);
    }

    #[inline]
    fn inject(&mut self, t: u64, src: u32, dst: u32, flits: u16) {
        if self.full(t) {
            return;
        }
        self.inj_cycle.push(t);
        self.inj_src.push(src);
        self.inj_dst.push(dst);
        self.inj_flits.push(flits);
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

/// FNV-1a state `h` continued over `bytes` (see [`Observations::fnv1a`]).
pub fn fnv1a_more(mut h: u64, bytes: &[u8]) -> u64 {
    for &x in bytes {
        h ^= x as u64;
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h
}
