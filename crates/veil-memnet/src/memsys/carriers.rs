//! Secure algorithms' packets (carriers): routes with waypoints, turning, waiting for
//! data at a module, and broadcast trees.

use super::*;

impl MemSystem {
    /// The response `rid` to request `req` (served at `node`) joins the carrier `c` waiting
    /// for it; the carrier leaves once nothing else is due there.
    pub(super) fn response_ready(&mut self, now: u64, c: u32, req: u32, rid: u32, node: u32) {
        let at = self.msgs[c as usize].dst;
        let car = self.msgs[c as usize].carrier.as_mut().expect("bound to a carrier");
        for x in car.msgs.iter_mut() {
            if *x == req {
                *x = rid;
            }
        }
        let e = car.pending.iter_mut().find(|e| e.0 == node).expect("pending at node");
        e.1 -= 1;
        if e.1 == 0 && car.parked && at == node {
            car.parked = false;
            self.depart(c, node, now);
        }
    }

    /// Sends carrier `id` from `node` towards its route's next waypoint.
    pub(super) fn depart(&mut self, id: u32, node: u32, now: u64) {
        let m = &mut self.msgs[id as usize];
        let car = m.carrier.as_mut().expect("carrier");
        car.pending.retain(|e| e.1 > 0);
        car.real = !car.msgs.is_empty();
        m.src = node;
        m.dst = car.route[car.pos];
        if car.hold_until > now {
            self.events.push(Reverse((car.hold_until, EV_DEPART, id)));
        } else {
            self.fwd[node as usize].push_back(id);
            self.inj_nodes.insert(node as usize);
            self.fwd_count += 1;
        }
    }

    /// A new packet of a secure algorithm leaves node `n`.
    pub(super) fn new_carrier(&mut self, n: usize, p: Packet, now: u64) -> u32 {
        let mut car = Carrier { route: p.route, origin: n as u32, turn: p.turn, ..Default::default() };
        if p.tree {
            let root = car.route[0] as usize / self.tpr;
            let g = Group {
                origin: n as u32,
                root,
                reqs: p.msgs,
                children_left: vec![u32::MAX; self.modules],
                data_wait: vec![0; self.modules],
                got: vec![Vec::new(); self.modules],
                sent: vec![false; self.modules],
                arrived: vec![0; self.modules],
            };
            let gid = match self.free_groups.pop() {
                Some(i) => {
                    self.groups[i as usize] = g;
                    i
                }
                None => {
                    self.groups.push(g);
                    (self.groups.len() - 1) as u32
                }
            };
            car.group = gid + 1;
            car.real = true;
        } else {
            car.real = !p.msgs.is_empty();
            car.msgs = p.msgs;
        }
        let m = Msg {
            kind: CARRIER,
            src: n as u32,
            dst: car.route[0],
            issued: now,
            dummy_flits: self.packet_flits,
            carrier: Some(Box::new(car)),
            ..Default::default()
        };
        self.alloc(m)
    }

    /// A broadcast packet from node `from` to `to` (down the tree or up it).
    pub(super) fn bcast_send(&mut self, g: u32, from: u32, to: u32, up: bool, to_cpu: bool, msgs: Vec<u32>, now: u64, at: u64) {
        let real = !up || !msgs.is_empty();
        let car = Carrier { msgs, route: vec![to], origin: from, class: up as u8, real, group: g + 1, up, to_cpu, ..Default::default() };
        let m = Msg { kind: CARRIER, src: from, dst: to, issued: now, dummy_flits: self.packet_flits, carrier: Some(Box::new(car)), ..Default::default() };
        let id = self.alloc(m);
        if at > now {
            self.events.push(Reverse((at, EV_DEPART, id)));
        } else {
            self.fwd[from as usize].push_back(id);
            self.inj_nodes.insert(from as usize);
            self.fwd_count += 1;
        }
    }

    /// Router `r` of broadcast `g` answers its parent once its children have and its own
    /// data is ready.
    pub(super) fn bcast_check_up(&mut self, now: u64, g: u32, r: usize) {
        let grp = &mut self.groups[g as usize];
        if grp.sent[r] || grp.children_left[r] != 0 || grp.data_wait[r] != 0 {
            return;
        }
        grp.sent[r] = true;
        let msgs = std::mem::take(&mut grp.got[r]);
        let (root, origin) = (grp.root, grp.origin);
        let at = grp.arrived[r] + self.cfg.secure.dwell_cycles as u64;
        let from = self.module_node(r);
        if r == root {
            self.bcast_send(g, from, origin, true, true, msgs, now, at);
        } else {
            let parent = self.policy.tree(root).expect("broadcast tree").parent[r] as usize;
            let to = self.module_node(parent);
            self.bcast_send(g, from, to, true, false, msgs, now, at);
        }
    }

    /// A broadcast packet arrived at its node.
    pub(super) fn bcast_at(&mut self, now: u64, id: u32) {
        let w = self.msgs[id as usize].dst;
        let car = self.msgs[id as usize].carrier.take().expect("carrier");
        self.release(id);
        let g = car.group - 1;
        if car.to_cpu {
            for rid in car.msgs {
                self.note_latency(now, rid);
                self.deliver(now, rid);
            }
            let grp = &mut self.groups[g as usize];
            grp.reqs.clear();
            self.free_groups.push(g);
            return;
        }
        let r = w as usize / self.tpr;
        if car.up {
            let grp = &mut self.groups[g as usize];
            grp.got[r].extend(car.msgs);
            grp.children_left[r] -= 1;
        } else {
            // Served requests leave the group's list (their ids are reused once answered).
            let reqs = std::mem::take(&mut self.groups[g as usize].reqs);
            let (here, rest): (Vec<u32>, Vec<u32>) = reqs.into_iter().partition(|&q| self.msgs[q as usize].dst == w);
            self.groups[g as usize].reqs = rest;
            for q in here {
                {
                    self.note_latency(now, q);
                    let m = &mut self.msgs[q as usize];
                    m.bgroup = g + 1;
                    m.brouter = r as u32;
                    self.groups[g as usize].data_wait[r] += 1;
                    self.events.push(Reverse((now + self.front, EV_VAULT, q)));
                }
            }
            let root = self.groups[g as usize].root;
            let children = self.policy.tree(root).expect("broadcast tree").children[r].clone();
            self.groups[g as usize].children_left[r] = children.len() as u32;
            self.groups[g as usize].arrived[r] = now;
            for ch in children {
                let to = self.module_node(ch as usize);
                self.bcast_send(g, w, to, false, false, Vec::new(), now, now);
            }
        }
        self.bcast_check_up(now, g, r);
    }

    /// A real message reached its destination node.
    pub(super) fn note_latency(&mut self, now: u64, id: u32) {
        self.pkt_lat_sum += now - self.msgs[id as usize].queued_at;
        self.pkt_lat_n += 1;
    }

    /// A carrier arrived at a waypoint: serve the messages addressed there, then send it
    /// on, turn it round, hold it for data, or retire it.
    pub(super) fn carrier_at(&mut self, now: u64, id: u32) {
        if self.msgs[id as usize].carrier.as_ref().expect("carrier").group != 0 {
            return self.bcast_at(now, id);
        }
        let w = self.msgs[id as usize].dst;
        let mut car = self.msgs[id as usize].carrier.take().expect("carrier");
        let last = car.pos + 1 == car.route.len();
        // A packet that ends at a module without turning leaves its replies to be queued.
        let bind = !(last && !car.turn);
        let mut keep = Vec::with_capacity(car.msgs.len());
        let mut bound_here = 0;
        for mid in std::mem::take(&mut car.msgs) {
            let (kind, dst, bound) = {
                let m = &self.msgs[mid as usize];
                (m.kind, m.dst, m.bound)
            };
            if dst != w || bound != 0 {
                keep.push(mid);
                continue;
            }
            self.note_latency(now, mid);
            match kind {
                READ_REQ | WRITE_REQ => {
                    if bind {
                        self.msgs[mid as usize].bound = id + 1;
                        bound_here += 1;
                        keep.push(mid);
                    }
                    self.events.push(Reverse((now + self.front, EV_VAULT, mid)));
                }
                _ => self.deliver(now, mid),
            }
        }
        car.msgs = keep;
        if bound_here > 0 {
            car.pending.push((w, bound_here));
        }
        if last && (!car.turn || car.back) {
            debug_assert!(car.msgs.is_empty(), "a carrier retires with messages on board");
            self.release(id);
            return;
        }
        if last {
            // Turn: back along the waypoints before this one, then to the source.
            let mut r: Vec<u32> = car.route[..car.pos].iter().rev().copied().collect();
            r.push(car.origin);
            car.route = r;
            car.pos = 0;
            car.back = true;
            car.class = 1;
        } else {
            car.pos += 1;
        }
        // On its way out a turning packet passes every waypoint again: it collects there then.
        let revisit = car.turn && !car.back;
        let wait = !revisit && car.pending.iter().any(|e| e.0 == w && e.1 > 0);
        car.parked = wait;
        // Where it may pick up data it stays at least dwell_cycles, data or not.
        car.hold_until = if revisit { now } else { now + self.cfg.secure.dwell_cycles as u64 };
        self.msgs[id as usize].carrier = Some(car);
        if !wait {
            self.depart(id, w, now);
        }
    }

}
