//! Packets and flits. A flit is a packet index plus head/tail bits; everything else lives
//! once per packet in a slab whose slots are reused, so memory follows the number of packets
//! in flight, never the simulated time.

use crate::routing::PacketRoute;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flit {
    pub pkt: u32,
    pub head: bool,
    pub tail: bool,
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
