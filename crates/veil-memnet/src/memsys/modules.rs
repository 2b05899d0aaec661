//! The memory modules: requests reach their vault, vaults schedule DRAM, and responses
//! (functional mode: with the stored line) go back toward the CPU or the waiting carrier.

use super::*;

impl MemSystem {
    pub(super) fn schedule_vaults(&mut self, now: u64) {
        let mut i = 0;
        while i < self.active_vaults.len() {
            let v = self.active_vaults[i] as usize;
            if let Some((req, done)) = self.vaults[v].schedule(now, &self.timing) {
                self.events.push(Reverse((done + self.back, EV_RESPOND, req.msg)));
            }
            if self.vaults[v].queue.is_empty() {
                self.vault_active[v] = false;
                self.active_vaults.swap_remove(i);
            } else {
                i += 1;
            }
        }
    }

    pub(super) fn handle_event(&mut self, now: u64, kind: u8, id: u32) {
        match kind {
            EV_VAULT => {
                let m = &self.msgs[id as usize];
                let loc = self.map.decode(m.addr);
                let v = loc.module as usize * self.vaults_per_module + loc.vault as usize;
                self.vaults[v].push(Req { msg: id, bank: loc.bank, row: loc.row, write: m.kind == WRITE_REQ });
                if !self.vault_active[v] {
                    self.vault_active[v] = true;
                    self.active_vaults.push(v as u32);
                }
            }
            EV_RESPOND => {
                let req = std::mem::take(&mut self.msgs[id as usize]);
                let write = req.kind == WRITE_REQ;
                let line = req.addr / 64;
                let data = if self.functional.is_some() {
                    if write {
                        self.store.insert(line, *req.data.as_deref().expect("write data"));
                        None
                    } else {
                        let d = self.store.get(&line).copied().unwrap_or_else(|| initial_line(line));
                        Some(Box::new(d))
                    }
                } else {
                    None
                };
                let resp = Msg {
                    kind: if write { WRITE_RESP } else { READ_RESP },
                    src: req.dst,
                    dst: req.src,
                    core: req.core,
                    addr: req.addr,
                    issued: req.issued,
                    data,
                    load_at: req.load_at,
                    queued_at: now,
                    ..Default::default()
                };
                self.release(id);
                let rid = self.alloc(resp);
                if req.bound != 0 {
                    self.response_ready(now, req.bound - 1, id, rid, req.dst);
                } else if req.bgroup != 0 {
                    let (g, r) = (req.bgroup - 1, req.brouter as usize);
                    let grp = &mut self.groups[g as usize];
                    grp.got[r].push(rid);
                    grp.data_wait[r] -= 1;
                    self.bcast_check_up(now, g, r);
                } else {
                    self.queue_msg(rid, now);
                }
            }
            EV_DEPART => {
                let n = self.msgs[id as usize].src as usize;
                self.fwd[n].push_back(id);
                self.inj_nodes.insert(n);
                self.fwd_count += 1;
            }
            _ => self.deliver(now, id),
        }
    }

}
