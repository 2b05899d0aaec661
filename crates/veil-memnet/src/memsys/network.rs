//! Glue to the network engine: admission at each injection port (forwarded carriers,
//! then the injection policy, then the encryption scheme's pad), and what happens when a
//! packet arrives.

use super::*;

impl MemSystem {
    /// Admission at each free injection port: forwarded packets first, else the policy
    /// picks; then the scheme's pad.
    pub(super) fn inject(&mut self, now: u64) {
        if !self.policy.busy() && self.heads == 0 && self.fwd_count == 0 {
            return;
        }
        if !self.policy.pops_only_pushed() {
            for n in 0..self.head.len() {
                self.inject_at(n, now);
            }
            return;
        }
        // Only nodes with a head, a forwarded carrier or a queued message can send: visit
        // those, in node order as the full walk would.
        let mut n = 0;
        while let Some(m) = self.inj_nodes.next_from(n) {
            self.inject_at(m, now);
            if self.head[m].is_none() && self.fwd[m].is_empty() && !self.policy.queued_at(m) {
                self.inj_nodes.clear(m);
            }
            n = m + 1;
        }
    }

    /// One node's injection port at `now` (see `inject`).
    fn inject_at(&mut self, n: usize, now: u64) {
        if self.engine.queued(n) > 0 {
            return;
        }
        if self.head[n].is_none() {
            if let Some(id) = self.fwd[n].pop_front() {
                self.fwd_count -= 1;
                self.head[n] = Some((id, false));
                self.heads += 1;
            } else {
                match self.policy.pop(n, now) {
                    None => return,
                    Some(Injected::Packet(p)) => {
                        let id = self.new_carrier(n, p, now);
                        self.head[n] = Some((id, false));
                        self.heads += 1;
                    }
                    Some(Injected::Real(id)) => {
                        self.head[n] = Some((id, false));
                        self.heads += 1;
                    }
                    Some(Injected::Dummy { dest, flits }) => {
                        let m = Msg { kind: DUMMY, src: n as u32, dst: dest, issued: now, dummy_flits: flits, ..Default::default() };
                        let id = self.alloc(m);
                        self.head[n] = Some((id, false));
                        self.heads += 1;
                    }
                }
            }
        }
        let (id, stalled) = self.head[n].unwrap();
        let (src, dst) = (self.msgs[id as usize].src, self.msgs[id as usize].dst);
        if let Some(otp) = self.otp.as_mut() {
            match otp.take(src as usize, dst as usize, now) {
                Ok(t) => self.msgs[id as usize].ticket = t,
                Err(_) => {
                    if !stalled {
                        otp.stats.sender_stalls += 1;
                    }
                    otp.stats.sender_stall_cycles += 1;
                    self.head[n] = Some((id, true));
                    return;
                }
            }
        }
        if let Some(f) = self.functional.as_mut() {
            let m = &self.msgs[id as usize];
            let flits = m.flits() as usize;
            // A carrier's plaintext holds its first message (a dummy's: the dummy command).
            let inner = m.carrier.as_ref().and_then(|c| c.msgs.first()).map(|&x| &self.msgs[x as usize]);
            let (kind, line, data) = match (m.kind, inner) {
                (CARRIER, Some(x)) => (x.kind, x.addr / 64, x.data.as_deref()),
                (CARRIER, None) => (DUMMY, 0, None),
                _ => (m.kind, m.addr / 64, m.data.as_deref()),
            };
            let plain = f.plaintext(src, dst, m.ticket, kind, line, data, flits);
            let mut wire = plain.clone();
            f.encrypt(src, dst, m.ticket, &mut wire);
            let seq = f.last_seq(src, dst);
            let m = &mut self.msgs[id as usize];
            m.plain = plain;
            m.wire = wire;
            m.seq = seq;
        }
        let m = &self.msgs[id as usize];
        let real = match &m.carrier {
            Some(c) => c.real,
            None => m.kind != DUMMY,
        };
        if real {
            self.real_packets += 1;
        } else {
            self.dummy_packets += 1;
        }
        self.inj_flits[n] += m.flits() as u64;
        if let Some(log) = self.wire_log.as_mut() {
            log.push(WireRecord { at: now, src: n as u32, dst, real, flits: m.flits(), wire: m.wire.clone() });
        }
        self.engine.offer(n, Offer { at: now, dest: dst, len: m.flits(), msg: m.class(), tag: id });
        self.head[n] = None;
        self.heads -= 1;
    }

    /// A packet's tail arrived at its destination node.
    pub(super) fn arrive(&mut self, d: crate::sim::Delivery) {
        let now = d.at;
        let id = d.tag;
        self.net_lat_sum += d.at - d.itime;
        self.hops_sum += d.hops as u64;
        self.delivered += 1;
        let m = &self.msgs[id as usize];
        self.net_flits += m.flits() as u64 * (d.hops as u64).saturating_sub(1);
        if m.carrier.as_ref().is_some_and(|c| !c.real) {
            self.dummies += 1;
        }
        if m.carrier.is_none() && m.kind != DUMMY {
            self.note_latency(now, id);
        }
        let mut ready = now;
        if let Some(otp) = self.otp.as_mut() {
            let m = &self.msgs[id as usize];
            ready = otp.receive(m.src as usize, m.dst as usize, m.ticket, now);
        }
        if let Some(f) = self.functional.as_mut() {
            let m = &self.msgs[id as usize];
            f.arrived(m.src, m.dst, m.seq);
            match f.decode(m.dst, &m.wire, m.ticket.round) {
                Some(p) if p == m.plain => {}
                Some(_) => f.stats.mismatches += 1,
                None => f.stats.rejected_at_destination += 1,
            }
            let nodes = self.engine.topo.nodes as u64;
            for _ in 0..self.cfg.encryption.foreign_checks {
                // Another node, walking the nodes so every one gets its turn.
                self.foreign_rr += 1;
                let other = ((m.dst as u64 + 1 + self.foreign_rr % (nodes - 1)) % nodes) as u32;
                f.stats.foreign_trials += 1;
                if f.decode(other, &m.wire, m.ticket.round).is_some() {
                    f.stats.foreign_accepts += 1;
                }
            }
        }
        if ready > now {
            self.events.push(Reverse((ready, EV_DELIVER, id)));
        } else {
            self.deliver(now, id);
        }
    }

    pub(super) fn deliver(&mut self, now: u64, id: u32) {
        let kind = self.msgs[id as usize].kind;
        match kind {
            CARRIER => self.carrier_at(now, id),
            READ_REQ | WRITE_REQ => self.events.push(Reverse((now + self.front, EV_VAULT, id))),
            READ_RESP | WRITE_RESP => {
                self.responses += 1;
                let m = &self.msgs[id as usize];
                let core = m.core as usize;
                let lat = (kind == READ_RESP).then(|| now - m.issued);
                let load_at = m.load_at;
                if let Some(l) = lat {
                    self.read_lat_sum += l;
                    self.read_lat_n += 1;
                    self.read_lat_max = self.read_lat_max.max(l);
                }
                self.release(id);
                self.cores[core].catch_up(self.polled_to);
                self.cores[core].completed(lat, load_at);
                if self.cores[core].check_done(now) {
                    self.cores_done += 1;
                }
            }
            _ => {
                self.dummies += 1;
                self.release(id);
            }
        }
    }

}
