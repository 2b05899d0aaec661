//! The per-unit scheduler (run queues, context switches, preemption, responder timers and
//! quanta), the Fig. 3 category each worker is in, and the clients' wake-ups.

use veil_core::Cycle;

use super::{Act, Cat, Ev, Req, Sim, HOME_SHIFT};

impl<'a> Sim<'a> {
    // ----- categories -------------------------------------------------------------------------

    pub(super) fn mark_unit(&mut self, u: usize) {
        for i in 0..self.units[u].pinned.len() {
            let t = self.units[u].pinned[i];
            if let Some(w) = self.threads[t].worker {
                self.dirty.push(w);
            }
        }
    }

    pub(super) fn set_act(&mut self, u: usize, act: Act) {
        self.units[u].act = act;
        self.mark_unit(u);
    }

    pub(super) fn worker_cat(&self, w: usize) -> Option<Cat> {
        let tid = self.workers[w].tid;
        if self.threads[tid].done {
            return None;
        }
        let u = &self.units[self.threads[tid].unit];
        Some(match u.act {
            Act::Ctx(_) => Cat::Ctx,
            Act::Run(x) if self.threads[x].client.is_some() => Cat::Client,
            Act::Run(x) => self.threads[x].phase.map(|p| p.1).unwrap_or(Cat::Polling),
            Act::Spin(x) if x == tid => {
                // The paper's polling (i) is a worker waiting for its responder's *timer*: a
                // call posted to a responder that is awake (polling on a core or engine of its
                // own) is being handed over, and that wait is the call's (Syscall).
                let awake = self.workers[w].responder.is_some_and(|r| !self.threads[self.responders[r].tid].sleeping);
                if self.workers[w].req == Req::InService || (awake && matches!(self.workers[w].req, Req::Posted(_))) {
                    Cat::Syscall
                } else {
                    Cat::Polling
                }
            }
            Act::Spin(_) | Act::Idle => Cat::Polling,
        })
    }

    pub(super) fn refresh_dirty(&mut self) {
        let now = self.q.now();
        while let Some(w) = self.dirty.pop() {
            let c = self.worker_cat(w);
            let wk = &mut self.workers[w];
            if c != wk.cat {
                if let Some(old) = wk.cat {
                    wk.time[old as usize] += now - wk.since;
                }
                wk.cat = c;
                wk.since = now;
            }
        }
    }

    // ----- scheduling -------------------------------------------------------------------------

    pub(super) fn start_phase(&mut self, tid: usize, cycles: Cycle, cat: Cat) {
        let u = self.threads[tid].unit;
        let now = self.q.now();
        self.threads[tid].phase = Some((now + cycles, cat));
        self.units[u].gen += 1;
        let gen = self.units[u].gen;
        self.q.schedule(now + cycles, Ev::CoreDone { core: u, gen });
        self.set_act(u, Act::Run(tid));
    }

    pub(super) fn dispatch(&mut self, u: usize) {
        debug_assert!(self.units[u].cur.is_none());
        match self.units[u].runq.pop_front() {
            None => self.set_act(u, Act::Idle),
            Some(next) => {
                if self.units[u].last == Some(next) {
                    self.begin(u, next);
                } else {
                    self.c.ctx_switches += 1;
                    self.sched_footprint(u);
                    self.units[u].gen += 1;
                    let gen = self.units[u].gen;
                    self.q.after(self.ctx_cycles, Ev::CoreDone { core: u, gen });
                    self.set_act(u, Act::Ctx(next));
                }
            }
        }
    }

    /// The scheduler's own data passes through the core's L1 on every switch; its time is
    /// inside the fixed switch cost.
    pub(super) fn sched_footprint(&mut self, u: usize) {
        self.mem.t = self.q.now() as f64;
        let base = ((self.units[u].tile as u64) << HOME_SHIFT) | (1 << 42) | (u as u64 * self.lines.ctx_lines.max(1));
        for i in 0..self.lines.ctx_lines {
            self.mem.access(u, base + i, i % 2 == 0);
        }
    }

    /// `tid` takes unit `u` (after a context switch, or directly).
    pub(super) fn begin(&mut self, u: usize, tid: usize) {
        self.units[u].cur = Some(tid);
        self.units[u].last = Some(tid);
        // A worker that shares its core gets a quantum, so a thread queued behind it (another
        // worker, or a responder woken while a responder ran) always gets the core back.
        if self.threads[tid].worker.is_some() && self.units[u].pinned.len() > 1 {
            self.units[u].qgen += 1;
            let gen = self.units[u].qgen;
            self.q.after(self.quantum_cycles, Ev::Quantum { core: u, gen });
        }
        if let Some((rem, cat)) = self.threads[tid].saved.take() {
            self.start_phase(tid, rem, cat);
        } else {
            self.next(tid);
        }
        if std::mem::take(&mut self.units[u].preempt_pending) && self.units[u].cur.is_some() {
            // A responder's timer fired during the switch: it takes the core straight away.
            let r = self.units[u].runq.pop_front();
            self.preempt(u, true);
            if let Some(r) = r {
                self.units[u].runq.push_front(r);
            }
            self.dispatch(u);
        }
    }

    /// Takes the running thread off unit `u`; it goes to the front (a responder's timer
    /// preempts its worker) or the back (quantum) of the run queue.
    pub(super) fn preempt(&mut self, u: usize, front: bool) {
        let Some(tid) = self.units[u].cur.take() else { return };
        self.c.preemptions += 1;
        let now = self.q.now();
        if let Act::Run(x) = self.units[u].act {
            if x == tid {
                if let Some((end, cat)) = self.threads[tid].phase.take() {
                    self.threads[tid].saved = Some((end - now, cat));
                }
            }
        }
        if let Some(r) = self.threads[tid].responder {
            self.responders[r].spinning = false;
        }
        self.units[u].gen += 1; // cancels the phase end
        if front {
            self.units[u].runq.push_front(tid);
        } else {
            self.units[u].runq.push_back(tid);
        }
    }

    pub(super) fn leave(&mut self, tid: usize) {
        let u = self.threads[tid].unit;
        debug_assert_eq!(self.units[u].cur, Some(tid));
        self.units[u].cur = None;
        self.units[u].gen += 1;
        self.dispatch(u);
    }

    pub(super) fn make_runnable(&mut self, tid: usize, urgent: bool) {
        let u = self.threads[tid].unit;
        if self.units[u].cur.is_none() {
            match self.units[u].act {
                Act::Ctx(_) => {
                    if urgent {
                        self.units[u].runq.push_front(tid);
                        self.units[u].preempt_pending = true;
                    } else {
                        self.units[u].runq.push_back(tid);
                    }
                }
                _ => {
                    self.units[u].runq.push_back(tid);
                    self.dispatch(u);
                }
            }
            return;
        }
        let cur = self.units[u].cur.unwrap();
        if urgent && self.threads[cur].worker.is_some() {
            self.preempt(u, true);
            self.units[u].runq.push_front(tid);
            self.dispatch(u);
        } else if urgent {
            // Another responder holds the core: this one runs next, ahead of any worker (a
            // preempted worker re-queues at the front and would otherwise starve it).
            self.units[u].runq.push_front(tid);
        } else {
            self.units[u].runq.push_back(tid);
        }
    }


    // ----- clients ----------------------------------------------------------------------------

    pub(super) fn next_client(&mut self, c: usize) {
        let tid = self.clients[c].tid;
        if self.clients[c].pending > 0 {
            self.clients[c].pending -= 1;
            let cost = self.client_cost(c);
            self.c.client_cycles += cost;
            self.start_phase(tid, cost, Cat::Client);
            return;
        }
        let w = self.clients[c].worker;
        if self.clients[c].handled >= self.workers[w].n_requests {
            self.threads[tid].done = true;
        } else {
            // Blocked in recv until the worker sends the next response.
            self.clients[c].blocked = true;
        }
        self.leave(tid);
    }

    /// A response has been sent to client `c`: a blocked client wakes and, as a sleeper under
    /// CFS, preempts the worker running on its core (never a responder: it runs next).
    pub(super) fn deliver(&mut self, c: usize) {
        self.clients[c].pending += 1;
        if std::mem::take(&mut self.clients[c].blocked) {
            self.c.client_wakeups += 1;
            let tid = self.clients[c].tid;
            let u = self.threads[tid].unit;
            match self.units[u].cur {
                Some(cur) if self.threads[cur].worker.is_some() => {
                    self.preempt(u, true);
                    self.units[u].runq.push_front(tid);
                    self.dispatch(u);
                }
                // A responder or another client holds the core (or a switch is under way):
                // the client runs next.
                Some(_) => self.units[u].runq.push_front(tid),
                None if matches!(self.units[u].act, Act::Ctx(_)) => self.units[u].runq.push_front(tid),
                None => {
                    self.units[u].runq.push_front(tid);
                    self.dispatch(u);
                }
            }
        }
    }
}
