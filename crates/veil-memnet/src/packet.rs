//! Packets and flits. A flit is a packet index plus head/tail bits; everything else lives
//! once per packet in a slab whose slots are reused, so memory follows the number of packets
//! in flight, never the simulated time.

use crate::routing::PacketRoute;

/// A flit: its packet's slab index with head and tail bits, packed in 32 bits so that the
/// input buffers (the largest arrays of a deep-buffered network) stay small.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flit(u32);

impl Flit {
    const HEAD: u32 = 1 << 31;
    const TAIL: u32 = 1 << 30;

    #[inline]
    pub fn new(pkt: u32, head: bool, tail: bool) -> Self {
        debug_assert!(pkt < Self::TAIL, "packet index overflow");
        Flit(pkt | if head { Self::HEAD } else { 0 } | if tail { Self::TAIL } else { 0 })
    }
    #[inline]
    pub fn pkt(self) -> u32 {
        self.0 & (Self::TAIL - 1)
    }
    #[inline]
    pub fn head(self) -> bool {
        self.0 & Self::HEAD != 0
    }
    #[inline]
    pub fn tail(self) -> bool {
        self.0 & Self::TAIL != 0
    }
}

/// A route set: one output port and a VC range there.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RouteSet {
    pub port: u16,
    pub vc_lo: u8,
    pub vc_hi: u8,
}

#[derive(Clone, Copy, Debug, Default)]
pub struct Packet {
    pub route: PacketRoute,
    /// Lookahead route at the next router (computed when the head leaves the previous one).
    pub la: RouteSet,
    /// Creation time (enters the source queue) and time the head entered the network.
    pub ctime: u64,
    pub itime: u64,
    /// Routers traversed.
    pub hops: u16,
    pub len: u16,
    /// Flits not yet ejected.
    pub remaining: u16,
    pub record: bool,
    /// Message class: 0 request / plain, 1 reply.
    pub msg: u8,
    /// An outside driver's handle for the packet (memory system messages); 0 otherwise.
    pub tag: u32,
}

#[derive(Default)]
pub struct PacketSlab {
    pub slots: Vec<Packet>,
    free: Vec<u32>,
    pub live: usize,
}

impl PacketSlab {
    pub fn alloc(&mut self, p: Packet) -> u32 {
        self.live += 1;
        if let Some(i) = self.free.pop() {
            self.slots[i as usize] = p;
            i
        } else {
            self.slots.push(p);
            (self.slots.len() - 1) as u32
        }
    }

    pub fn free(&mut self, i: u32) {
        self.live -= 1;
        self.free.push(i);
    }

    #[inline]
    pub fn get(&self, i: u32) -> &Packet {
        &self.slots[i as usize]
    }

    #[inline]
    pub fn get_mut(&mut self, i: u32) -> &mut Packet {
        &mut self.slots[i as usize]
    }
}
