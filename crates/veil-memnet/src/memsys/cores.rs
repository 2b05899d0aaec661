//! The CPU side: cores issue their ready misses as request packets (first-touch page
//! mapping for traces).

use super::*;

impl MemSystem {
    /// The physical address of a trace address: first-touch page frames when enabled.
    pub(super) fn physical(&mut self, addr: u64, thread: u32) -> Result<u64, SimError> {
        let cap = self.map.capacity;
        let phys = match self.pages.as_mut() {
            None => addr,
            Some(p) => {
                let next = p.len() as u64;
                let frame = *p.entry(addr / PAGE).or_insert(next);
                if (frame + 1) * PAGE > cap {
                    return Err(ConfigError(format!(
                        "trace: thread {thread} touches more than the modules' capacity of {cap} bytes ({} pages of 4 KiB)",
                        cap / PAGE
                    ))
                    .into());
                }
                frame * PAGE + addr % PAGE
            }
        };
        if phys >= cap {
            return Err(ConfigError(format!("trace: address {addr:#x} of thread {thread} is beyond the modules' capacity of {cap} bytes")).into());
        }
        Ok(phys)
    }

    pub(super) fn issue_from_cores(&mut self, now: u64) -> Result<(), SimError> {
        for i in 0..self.cores.len() {
            if !self.cores[i].due(now) {
                continue;
            }
            loop {
                let Some(rec) = self.cores[i].ready(now)? else { break };
                let (addr, thread, rkind, rdata) = (rec.addr, rec.thread, rec.kind, rec.data);
                let addr = self.physical(addr, thread)?;
                let loc = self.map.decode(addr);
                let write = rkind == Kind::Writeback;
                let load_at = (rkind == Kind::LoadFill).then(|| self.cores[i].position());
                let data = if write && self.functional.is_some() { Some(Box::new(rdata)) } else { None };
                let msg = Msg {
                    kind: if write { WRITE_REQ } else { READ_REQ },
                    src: self.cores[i].node,
                    dst: self.module_node(loc.module as usize),
                    core: i as u32,
                    addr,
                    issued: now,
                    data,
                    load_at,
                    ..Default::default()
                };
                self.cores[i].issued(now);
                let id = self.alloc(msg);
                self.queue_msg(id, now);
            }
            if self.cores[i].check_done(now) {
                self.cores_done += 1;
            }
        }
        Ok(())
    }

}
