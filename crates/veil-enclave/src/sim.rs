//! The discrete-event engine: threads pinned to execution units (enclave cores and SSEs), a
//! per-unit scheduler with context switches, responder timers and round-robin quanta, the
//! shared request buffer between workers and responders, and the cache hierarchy that prices
//! every phase a thread runs.
//!
//! A thread runs as a sequence of *phases*. When a phase starts, its access stream goes through
//! the caches and its duration is fixed (compute + stalls); a preempted phase keeps its
//! remaining cycles. Effects (a request posted, a call completed) happen when a phase ends.

use std::collections::VecDeque;

use serde::Serialize;
use veil_core::{Cycle, EventQueue, StreamRng};

use crate::cache::{Hierarchy, HOME_SHIFT};
use crate::config::{Config, Model, Policy};
use crate::workload::{server_steps, server_steps_cached, Step};

mod build;
mod price;
mod sched;

/// Where a worker's time goes (the paper's Fig. 3 categories).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cat {
    Workload = 0,
    Pack = 1,
    Unpack = 2,
    Syscall = 3,
    Polling = 4,
    Ecall = 5,
    Ocall = 6,
    Ctx = 7,
    /// The worker's core runs its client (or another worker's): the worker waits for it.
    Client = 8,
}

pub const CAT_NAMES: [&str; 9] = ["workload", "pack", "unpack", "syscall", "polling", "ecall", "ocall", "ctx_switch", "client"];

// Footprints of the access streams (documented in docs/enclave-model.md).
const ARGS_LINES: u64 = 8;
const GLOBAL_KERNEL_LINES: u64 = 16 * 1024 / 64;
/// Lines of its stack a responder touches to run one call.
const CALL_STACK_LINES: u64 = 4;
/// Compute of one pass over the shared buffer (load flags, compare, branch).
const CHECK_CYCLES: f64 = 100.0;
/// Lines of a client's socket state its calls touch (before `syscall_lines_scale`): the
/// step table's `send` touches 16 lines of the server side's socket.
const CLIENT_SOCKET_LINES: u64 = 16;
/// Address bit of clients' private lines (buffers, socket state).
const CLIENT_BIT: u64 = 1 << 43;
/// Compute to post a request or read a completion in the shared buffer.
const POST_CYCLES: f64 = 50.0;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Work,
    /// The call executed on the worker's own core: directly from enclave buffers (`direct`,
    /// BL and SEV guest-kernel calls) or from the untrusted copy (EX-B).
    LocalSys { direct: bool },
    Pack { post: bool },
    Ocall,
    Ecall,
    Wait,
    Unpack { slot: bool },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Req {
    None,
    Posted(Cycle),
    InService,
    Done,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Act {
    Idle,
    Ctx(usize),
    Run(usize),
    Spin(usize),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RPhase {
    Check,
    Process(usize),
}

enum Ev {
    CoreDone { core: usize, gen: u64 },
    Timer { tid: usize },
    Quantum { core: usize, gen: u64 },
}

struct Unit {
    tile: u32,
    sse: bool,
    pinned: Vec<usize>,
    pinned_workers: usize,
    runq: VecDeque<usize>,
    cur: Option<usize>,
    last: Option<usize>,
    act: Act,
    gen: u64,
    qgen: u64,
    preempt_pending: bool,
}

struct Thread {
    unit: usize,
    worker: Option<usize>,
    responder: Option<usize>,
    client: Option<usize>,
    /// Remaining cycles and category of a preempted phase.
    saved: Option<(Cycle, Cat)>,
    /// End time and category of the running phase.
    phase: Option<(Cycle, Cat)>,
    /// Sleeping on its timer (responders).
    sleeping: bool,
    done: bool,
}

struct Worker {
    tid: usize,
    responder: Option<usize>,
    first_request: u64,
    n_requests: u64,
    req_i: u64,
    step_i: usize,
    ops: Vec<Op>,
    op_i: usize,
    req: Req,
    cat: Option<Cat>,
    since: Cycle,
    time: [Cycle; 9],
    done_at: Cycle,
    rng: StreamRng,
    tx_pos: u64,
    client: Option<usize>,
}

/// The client issuing one worker's requests. It keeps the next request queued at the worker
/// (the worker's `recv` always finds one), and handles each response when the worker has sent
/// it: one phase of client compute, its own `send` and two `recv`s, and the copy of the
/// response out of the worker's transmit ring. Blocked in `recv` while no response is pending.
struct Client {
    tid: usize,
    worker: usize,
    pending: u64,
    handled: u64,
    blocked: bool,
}

struct Responder {
    tid: usize,
    serves: Vec<usize>,
    phase: RPhase,
    spinning: bool,
}

/// Counters a run reports besides time.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Counters {
    pub ctx_switches: u64,
    pub ecalls: u64,
    pub ocalls: u64,
    pub calls_local: u64,
    pub calls_posted: u64,
    pub calls_completed: u64,
    pub responder_checks: u64,
    pub responder_empty_checks: u64,
    pub responder_sleeps: u64,
    pub responder_check_cycles: u64,
    pub responder_syscall_cycles: u64,
    pub preemptions: u64,
    /// Sum over exitless calls of the time from posting to a responder picking the call up.
    pub pickup_wait_cycles: u64,
    /// Cycles clients ran on enclave cores, and the times a blocked client was woken.
    pub client_cycles: u64,
    pub client_wakeups: u64,
    pub events: u64,
}

/// Result of one simulation.
#[derive(Clone, Debug, Serialize)]
pub struct SimResult {
    pub model: &'static str,
    pub policy: &'static str,
    pub workers: u32,
    pub tiles: u32,
    pub requests: u32,
    pub requests_completed: u64,
    /// Every request completed exactly once (checked per request id).
    pub each_request_once: bool,
    /// Parallel completion time: the last worker's finish.
    pub completion_cycles: u64,
    pub completion_s: f64,
    /// Thousand requests per second at `clock_ghz`.
    pub throughput_krps: f64,
    /// Mean cycles per worker in each Fig. 3 category (sums to the mean worker time).
    pub breakdown: std::collections::BTreeMap<&'static str, f64>,
    pub mean_worker_cycles: f64,
    pub l1d_accesses: u64,
    pub l1d_misses: u64,
    pub sse_l1d_misses: u64,
    pub sharing_misses: u64,
    pub l2_accesses: u64,
    pub l2_misses: u64,
    pub dram_accesses: u64,
    /// Off-chip traffic, GB/s of simulated time (reads and written-back lines).
    pub dram_gbps: f64,
    /// Mean wait of a DRAM read at its memory controller, cycles.
    pub dram_queue_cycles: f64,
    /// Mean load of the mesh links (flits carried / (links x completion cycles)).
    pub link_utilization: f64,
    /// Total wait of packets at mesh links per L1 miss of every private cache, cycles.
    pub link_wait_per_miss: f64,
    /// Link crossings and DRAM accesses stamped earlier than their queue's history (booked at
    /// its oldest bucket): a check that the history is long enough.
    pub queue_late: u64,
    pub counters: Counters,
}

/// Where each kind of line lives, in lines: a worker's shared block (user data, kernel state,
/// ring; directory index space, one block per worker, then the global kernel lines) and its
/// private space (the application's working set, then request, header, page, arguments).
struct Lines {
    /// Directory entries: every worker's shared block and the global kernel lines.
    dir_lines: usize,
    app_ws_lines: u64,
    resp_lines: u64,
    ctx_lines: u64,
    /// Lines of kernel state per connection (`kernel_state_kb`).
    kstate_lines: u64,
    sh_block: u64,
    sh_udata: u64,
    sh_kstate: u64,
    sh_ring: u64,
    ring_lines: u64,
    global_base: u64,
    pv_block: u64,
    pv_req: u64,
    pv_hdr: u64,
    pv_page: u64,
    pv_args: u64,
}

struct Sim<'a> {
    cfg: &'a Config,
    steps: Vec<Step>,
    q: EventQueue<Ev>,
    mem: Hierarchy,
    units: Vec<Unit>,
    threads: Vec<Thread>,
    workers: Vec<Worker>,
    responders: Vec<Responder>,
    clients: Vec<Client>,
    /// Clients whose worker finished a request during the current event.
    wake: Vec<usize>,
    dirty: Vec<usize>,
    c: Counters,
    cold_next: u64,
    completions: Vec<u8>,
    served: u64, // requests completed so far (progress line)
    ctx_cycles: Cycle,
    sleep_cycles: Cycle,
    quantum_cycles: Cycle,
    workers_left: usize,
    /// Guard against configurations that make no progress (a bug would otherwise hang).
    event_budget: u64,
    app_hot_lines: u64,
    lines: Lines,
}

fn lines_of(bytes: u64) -> u64 {
    bytes.div_ceil(64)
}

impl<'a> Sim<'a> {
    // ----- thread programs --------------------------------------------------------------------

    fn build_ops(&self, step: &Step) -> Vec<Op> {
        let mut ops = vec![Op::Work];
        let Some(call) = step.call else { return ops };
        let exits = match self.cfg.policy {
            Policy::Sgx => true,
            Policy::Sev => call.device,
        };
        let has_in = self.bytes(call.in_size) > 0;
        let has_out = self.bytes(call.out_size) > 0;
        match self.cfg.model {
            Model::Bl => ops.push(Op::LocalSys { direct: true }),
            _ if !exits => ops.push(Op::LocalSys { direct: true }),
            Model::ExB => {
                if has_in {
                    ops.push(Op::Pack { post: false });
                }
                ops.extend([Op::Ocall, Op::LocalSys { direct: false }, Op::Ecall]);
                if has_out {
                    ops.push(Op::Unpack { slot: false });
                }
            }
            Model::ExL | Model::SseNhp | Model::SseHp => {
                ops.extend([Op::Pack { post: true }, Op::Wait, Op::Unpack { slot: true }]);
            }
        }
        ops
    }

    fn next(&mut self, tid: usize) {
        if let Some(w) = self.threads[tid].worker {
            self.next_worker(w);
        } else if let Some(r) = self.threads[tid].responder {
            self.next_responder(r);
        } else if let Some(c) = self.threads[tid].client {
            self.next_client(c);
        }
    }

    fn next_worker(&mut self, w: usize) {
        let tid = self.workers[w].tid;
        loop {
            let wk = &self.workers[w];
            if wk.req_i >= wk.n_requests {
                self.finish_worker(w);
                return;
            }
            if wk.op_i >= wk.ops.len() {
                // Next step (or first op of a fresh request).
                let wk = &mut self.workers[w];
                if !wk.ops.is_empty() {
                    wk.step_i += 1;
                    if wk.step_i == self.steps.len() {
                        wk.step_i = 0;
                        let id = (wk.first_request + wk.req_i) as usize;
                        self.completions[id] += 1;
                        self.served += 1;
                        if let Some(c) = wk.client {
                            self.wake.push(c);
                        }
                        wk.req_i += 1;
                        wk.ops.clear();
                        continue;
                    }
                }
                let step = self.steps[self.workers[w].step_i];
                let ops = self.build_ops(&step);
                let wk = &mut self.workers[w];
                wk.ops = ops;
                wk.op_i = 0;
            }
            let op = self.workers[w].ops[self.workers[w].op_i];
            let call = self.steps[self.workers[w].step_i].call;
            match op {
                Op::Work => {
                    let c = self.work_cost(w);
                    self.start_phase(tid, c, Cat::Workload);
                }
                Op::LocalSys { direct } => {
                    self.c.calls_local += 1;
                    let c = self.sys_cost(tid, w, &call.unwrap(), direct);
                    self.start_phase(tid, c, Cat::Syscall);
                }
                Op::Pack { post } => {
                    let c = self.pack_cost(w, &call.unwrap(), true, post);
                    self.start_phase(tid, c, Cat::Pack);
                }
                Op::Unpack { slot } => {
                    let c = self.pack_cost(w, &call.unwrap(), false, slot);
                    self.start_phase(tid, c, Cat::Unpack);
                }
                Op::Ocall => {
                    self.c.ocalls += 1;
                    self.start_phase(tid, self.cfg.ocall_cycles.round() as Cycle, Cat::Ocall);
                }
                Op::Ecall => {
                    self.c.ecalls += 1;
                    self.start_phase(tid, self.cfg.ecall_cycles.round() as Cycle, Cat::Ecall);
                }
                Op::Wait => {
                    if self.workers[w].req == Req::Done {
                        self.workers[w].req = Req::None;
                        self.workers[w].op_i += 1;
                        continue;
                    }
                    let u = self.threads[tid].unit;
                    self.set_act(u, Act::Spin(tid));
                }
            }
            return;
        }
    }

    fn finish_worker(&mut self, w: usize) {
        let tid = self.workers[w].tid;
        let now = self.q.now();
        self.threads[tid].done = true;
        self.workers[w].done_at = now;
        self.dirty.push(w);
        self.workers_left -= 1;
        let u = self.threads[tid].unit;
        self.units[u].pinned_workers -= 1;
        self.leave(tid);
    }

    fn worker_phase_end(&mut self, w: usize) {
        let op = self.workers[w].ops[self.workers[w].op_i];
        self.workers[w].op_i += 1;
        if let Op::Pack { post: true } = op {
            self.workers[w].req = Req::Posted(self.q.now());
            self.dirty.push(w);
            self.c.calls_posted += 1;
            let r = self.workers[w].responder.expect("exitless worker has a responder");
            let rt = self.responders[r].tid;
            let ru = self.threads[rt].unit;
            if self.responders[r].spinning && self.units[ru].act == Act::Spin(rt) {
                // A polling responder sees the flag on its next pass over the buffer.
                self.responders[r].spinning = false;
                self.responders[r].phase = RPhase::Check;
                let c = self.check_cost(r);
                self.c.responder_checks += 1;
                self.c.responder_check_cycles += c;
                self.start_phase(rt, c, Cat::Polling);
            }
        }
        self.next_worker(w);
    }

    fn next_responder(&mut self, r: usize) {
        // Every (re)start of a responder begins with a pass over the shared buffer.
        let tid = self.responders[r].tid;
        self.responders[r].phase = RPhase::Check;
        self.responders[r].spinning = false;
        let c = self.check_cost(r);
        self.c.responder_checks += 1;
        self.c.responder_check_cycles += c;
        self.start_phase(tid, c, Cat::Polling);
    }

    fn responder_phase_end(&mut self, r: usize) {
        let tid = self.responders[r].tid;
        match self.responders[r].phase {
            RPhase::Process(w) => {
                self.workers[w].req = Req::Done;
                self.c.calls_completed += 1;
                self.dirty.push(w);
                let wt = self.workers[w].tid;
                let wu = self.threads[wt].unit;
                if self.units[wu].cur == Some(wt) && self.units[wu].act == Act::Spin(wt) {
                    self.next_worker(w);
                }
                self.next_responder(r);
            }
            RPhase::Check => {
                let pick = self.responders[r]
                    .serves
                    .iter()
                    .filter_map(|&w| match self.workers[w].req {
                        Req::Posted(t) => Some((t, w)),
                        _ => None,
                    })
                    .min();
                if let Some((posted, w)) = pick {
                    self.c.pickup_wait_cycles += self.q.now() - posted;
                    self.workers[w].req = Req::InService;
                    self.dirty.push(w);
                    let step = self.steps[self.workers[w].step_i];
                    let c = self.sys_cost(tid, w, &step.call.unwrap(), false);
                    self.c.responder_syscall_cycles += c;
                    self.responders[r].phase = RPhase::Process(w);
                    self.start_phase(tid, c, Cat::Syscall);
                    return;
                }
                self.c.responder_empty_checks += 1;
                let u = self.threads[tid].unit;
                let alone = self.units[u].pinned.len() == 1;
                let all_done = self.responders[r].serves.iter().all(|&w| self.threads[self.workers[w].tid].done);
                if all_done {
                    self.threads[tid].done = true;
                    self.leave(tid);
                } else if alone {
                    // Nothing else can use this unit: keep polling.
                    self.responders[r].spinning = true;
                    self.set_act(u, Act::Spin(tid));
                } else {
                    // Yield the core: sleep on the responder's own timer.
                    self.c.responder_sleeps += 1;
                    self.threads[tid].sleeping = true;
                    self.dirty.extend(self.responders[r].serves.iter().copied());
                    self.q.after(self.sleep_cycles, Ev::Timer { tid });
                    self.leave(tid);
                }
            }
        }
    }

    fn run(&mut self) {
        veil_core::progress::start(self.completions.len() as u64, "requests");
        for u in 0..self.units.len() {
            let pinned: Vec<usize> = self.units[u].pinned.iter().copied().filter(|&t| self.threads[t].client.is_none()).collect();
            self.units[u].runq.extend(pinned);
            if !self.units[u].runq.is_empty() {
                // Threads start on their unit without a switch.
                let first = self.units[u].runq.pop_front().unwrap();
                self.begin(u, first);
            }
        }
        self.refresh_dirty();
        while let Some((_, ev)) = self.q.pop() {
            if self.workers_left == 0 || self.c.events >= self.event_budget {
                break;
            }
            if self.c.events & 4095 == 0 {
                if veil_core::interrupt::requested() {
                    break;
                }
                veil_core::progress::set(self.served);
            }
            self.c.events += 1;
            match ev {
                Ev::CoreDone { core, gen } => {
                    if gen != self.units[core].gen {
                        continue;
                    }
                    match self.units[core].act {
                        Act::Ctx(tid) => self.begin(core, tid),
                        Act::Run(tid) => {
                            self.threads[tid].phase = None;
                            if let Some(w) = self.threads[tid].worker {
                                self.worker_phase_end(w);
                            } else if let Some(r) = self.threads[tid].responder {
                                self.responder_phase_end(r);
                            } else if let Some(c) = self.threads[tid].client {
                                self.clients[c].handled += 1;
                                self.next_client(c);
                            }
                        }
                        _ => {}
                    }
                }
                Ev::Timer { tid } => {
                    if self.threads[tid].done || !self.threads[tid].sleeping {
                        continue;
                    }
                    self.threads[tid].sleeping = false;
                    if let Some(r) = self.threads[tid].responder {
                        self.dirty.extend(self.responders[r].serves.iter().copied());
                    }
                    self.make_runnable(tid, true);
                }
                Ev::Quantum { core, gen } => {
                    if gen != self.units[core].qgen {
                        continue;
                    }
                    let others = !self.units[core].runq.is_empty();
                    if let Some(cur) = self.units[core].cur {
                        if self.threads[cur].worker.is_some() && others {
                            self.preempt(core, false);
                            self.dispatch(core);
                        } else if self.threads[cur].worker.is_some() {
                            self.units[core].qgen += 1;
                            let g = self.units[core].qgen;
                            self.q.after(self.quantum_cycles, Ev::Quantum { core, gen: g });
                        }
                    }
                }
            }
            while let Some(c) = self.wake.pop() {
                self.deliver(c);
            }
            self.refresh_dirty();
        }
    }

    fn result(self) -> SimResult {
        let cfg = self.cfg;
        let n = self.workers.len() as f64;
        let completion = self.workers.iter().map(|w| w.done_at).max().unwrap_or(0);
        let mut breakdown = std::collections::BTreeMap::new();
        let mut total = 0.0;
        for (i, name) in CAT_NAMES.iter().enumerate() {
            let v = self.workers.iter().map(|w| w.time[i] as f64).sum::<f64>() / n;
            total += v;
            breakdown.insert(*name, v);
        }
        let t = cfg.tiles as usize;
        let core_stats = &self.mem.l1_stats[..t];
        let sse_stats = &self.mem.l1_stats[t..];
        let secs = completion as f64 / (cfg.clock_ghz * 1e9);
        let done: u64 = self.completions.iter().map(|&c| c as u64).sum();
        SimResult {
            model: cfg.model.name(),
            policy: cfg.policy.name(),
            workers: cfg.workers,
            tiles: cfg.tiles,
            requests: cfg.requests,
            requests_completed: done,
            each_request_once: self.completions.iter().all(|&c| c == 1),
            completion_cycles: completion,
            completion_s: secs,
            throughput_krps: if secs > 0.0 { cfg.requests as f64 / secs / 1000.0 } else { 0.0 },
            breakdown,
            mean_worker_cycles: total,
            l1d_accesses: core_stats.iter().map(|s| s.accesses).sum(),
            l1d_misses: core_stats.iter().map(|s| s.misses).sum(),
            sse_l1d_misses: sse_stats.iter().map(|s| s.misses).sum(),
            sharing_misses: self.mem.l1_stats.iter().map(|s| s.sharing).sum(),
            l2_accesses: self.mem.l2_accesses.iter().sum(),
            l2_misses: self.mem.l2_misses.iter().sum(),
            dram_accesses: self.mem.dram_accesses,
            dram_gbps: if secs > 0.0 { self.mem.fabric.dram_lines() as f64 * 64.0 / secs / 1e9 } else { 0.0 },
            dram_queue_cycles: self.mem.fabric.dram_wait / self.mem.fabric.dram_served.max(1) as f64,
            link_utilization: self.mem.fabric.flit_hops / (self.mem.fabric.link_count().max(1) as f64 * completion.max(1) as f64),
            queue_late: self.mem.fabric.late(),
            link_wait_per_miss: self.mem.fabric.link_wait / self.mem.l1_stats.iter().map(|s| s.misses).sum::<u64>().max(1) as f64,
            counters: self.c,
        }
    }
}

/// Runs one simulation.
pub fn simulate(cfg: &Config) -> Result<SimResult, String> {
    cfg.validate()?;
    let mut sim = Sim::new(cfg);
    sim.run();
    if veil_core::interrupt::requested() {
        return Err("interrupted".into());
    }
    if sim.workers_left != 0 {
        return Err(format!(
            "simulation made no progress after {} events with {} workers unfinished (check that responder_sleep_us \
             is well above ctx_switch_ns) [{:?}]",
            sim.c.events, sim.workers_left, sim.c
        ));
    }
    Ok(sim.result())
}

/// Runs many simulations in parallel (rayon), in order.
pub fn simulate_many(cfgs: &[Config]) -> Vec<Result<SimResult, String>> {
    use rayon::prelude::*;
    cfgs.par_iter().map(simulate).collect()
}
