//! Building a run: the execution units, the threads placed on them, the memory layout and the
//! cache hierarchy, from the config.

use std::collections::VecDeque;

use veil_core::{Cycle, EventQueue, RngStreams};

use super::{
    lines_of, server_steps, server_steps_cached, Act, Client, Counters, Lines, Req, Responder, RPhase, Sim, Thread, Unit,
    Worker, ARGS_LINES, GLOBAL_KERNEL_LINES,
};
use crate::cache::{Hierarchy, Latency};
use crate::noc::FabricConfig;
use crate::config::{Config, Model};

/// The execution units: one per tile, then the SSEs (each beside the first of its cores' tiles).
fn make_units(cfg: &Config) -> Vec<Unit> {
    let t = cfg.tiles as usize;
    let model = cfg.model;
    let n_sse = if model.sse() { cfg.sse_count() as usize } else { 0 };
    let k = if model.sse() { cfg.cores_per_sse_eff() as usize } else { 1 };
    (0..t + n_sse)
        .map(|u| Unit {
            tile: if u < t { u as u32 } else { ((u - t) * k).min(t - 1) as u32 },
            sse: u >= t,
            pinned: Vec::new(),
            pinned_workers: 0,
            runq: VecDeque::new(),
            cur: None,
            last: None,
            act: Act::Idle,
            gen: 0,
            qgen: 0,
            preempt_pending: false,
        })
        .collect()
}

/// The threads of a run: workers (thread ids 0..workers), responders, clients.
struct Cast {
    threads: Vec<Thread>,
    workers: Vec<Worker>,
    responders: Vec<Responder>,
    clients: Vec<Client>,
}

/// Every thread, placed by `crate::place` and pinned to its unit.
fn make_threads(cfg: &Config, units: &mut [Unit]) -> Cast {
    let n = cfg.workers as usize;
    let layout = crate::place::place(cfg);
    let worker_unit = layout.worker.clone();
    let responder_units = layout.responders.clone();
    let rs = RngStreams::new(cfg.seed);
    let m = cfg.requests as u64;
    let (base, extra) = (m / n as u64, m % n as u64);
    let mut threads = Vec::new();
    let mut workers = Vec::new();
    let mut first = 0u64;
    for w in 0..n {
        let nr = base + u64::from((w as u64) < extra);
        threads.push(Thread { unit: worker_unit[w], worker: Some(w), responder: None, client: None, saved: None, phase: None, sleeping: false, done: false });
        workers.push(Worker {
            tid: w,
            responder: None,
            first_request: first,
            n_requests: nr,
            req_i: 0,
            step_i: 0,
            ops: Vec::new(),
            op_i: 0,
            req: Req::None,
            cat: None,
            since: 0,
            time: [0; 9],
            done_at: 0,
            rng: rs.named("worker", w as u64),
            tx_pos: 0,
            client: None,
        });
        first += nr;
    }
    let mut responders = Vec::new();
    for (r, (unit, serves)) in responder_units.into_iter().enumerate() {
        let tid = threads.len();
        threads.push(Thread { unit, worker: None, responder: Some(r), client: None, saved: None, phase: None, sleeping: false, done: false });
        for &w in &serves {
            workers[w].responder = Some(r);
        }
        responders.push(Responder { tid, serves, phase: RPhase::Check, spinning: false });
    }
    let mut clients = Vec::new();
    for (w, u) in layout.client.iter().enumerate() {
        if let Some(u) = *u {
            let tid = threads.len();
            threads.push(Thread { unit: u, worker: None, responder: None, client: Some(clients.len()), saved: None, phase: None, sleeping: false, done: false });
            workers[w].client = Some(clients.len());
            // Each client has sent its first requests and waits in recv.
            clients.push(Client { tid, worker: w, pending: 0, handled: 0, blocked: true });
        }
    }
    // Responders first: they check the buffer, find it empty and sleep, as in the paper.
    for r in &responders {
        units[threads[r.tid].unit].pinned.push(r.tid);
    }
    for w in 0..n {
        units[worker_unit[w]].pinned.push(w);
        units[worker_unit[w]].pinned_workers += 1;
    }
    for c in &clients {
        units[threads[c.tid].unit].pinned.push(c.tid);
    }
    Cast { threads, workers, responders, clients }
}

fn memory_layout(cfg: &Config) -> Lines {
    let n = cfg.workers as usize;
    let page_l = lines_of(cfg.page_bytes);
    let req_l = lines_of(cfg.http_request_bytes);
    let hdr_l = lines_of(cfg.header_bytes);
    let udata_l = page_l.max(req_l).max(hdr_l) + ARGS_LINES;
    let ring_lines = 2 * page_l.max(hdr_l);
    let sh_udata = 1;
    let sh_kstate = sh_udata + udata_l;
    let kstate_lines = (cfg.kernel_state_kb as u64 * 16).max(1);
    let sh_ring = sh_kstate + kstate_lines;
    let sh_block = sh_ring + ring_lines;
    let global_base = sh_block * n as u64;
    let dir_lines = (global_base + GLOBAL_KERNEL_LINES + 1) as usize;
    let app_ws_lines = cfg.app_ws_kb as u64 * 16;
    let resp_lines = cfg.responder_ws_lines as u64;
    let ctx_lines = cfg.ctx_switch_kb as u64 * 16;
    let pv_req = app_ws_lines;
    let pv_hdr = pv_req + req_l;
    let pv_page = pv_hdr + hdr_l;
    let pv_args = pv_page + page_l;
    let pv_block = pv_args + ARGS_LINES;
    Lines {
        dir_lines,
        app_ws_lines,
        resp_lines,
        ctx_lines,
        kstate_lines,
        sh_block,
        sh_udata,
        sh_kstate,
        sh_ring,
        ring_lines,
        global_base,
        pv_block,
        pv_req,
        pv_hdr,
        pv_page,
        pv_args,
    }
}

/// The cache hierarchy: an L1 per unit (the SSEs' own size), the tiles' L2 slices, the directory.
fn make_hierarchy(cfg: &Config, units: &[Unit], dir_lines: usize) -> Hierarchy {
    let model = cfg.model;
    let mut l1s = Vec::new();
    for u in units {
        if u.sse {
            l1s.push((cfg.sse_l1d_kb as u64 * 1024, cfg.sse_l1d_ways as usize, u.tile, true));
        } else {
            l1s.push((cfg.l1d_kb as u64 * 1024, cfg.l1d_ways as usize, u.tile, false));
        }
    }
    let l2_kb = if model == Model::SseNhp { cfg.l2_slice_nhp_kb } else { cfg.l2_slice_kb };
    let lat = Latency {
        l2_hit: cfg.l2_hit_cycles,
        hop: cfg.hop_cycles,
        remote_l1: cfg.remote_l1_cycles,
        dram: cfg.dram_cycles,
        crypto: if model.secure() { cfg.mem_crypto_cycles } else { 0.0 },
    };
    let fabric = FabricConfig {
        tiles: cfg.tiles,
        hop_cycles: cfg.hop_cycles,
        flit_bytes: cfg.flit_bytes,
        controllers: if cfg.mem_controllers == 0 { cfg.tiles } else { cfg.mem_controllers },
        controller_bytes_per_cycle: cfg.controller_gbps / cfg.clock_ghz,
    };
    Hierarchy::new(&l1s, cfg.tiles, l2_kb as u64 * 1024, cfg.l2_ways as usize, dir_lines, lat).with_fabric(fabric)
}

impl<'a> Sim<'a> {
    pub(super) fn new(cfg: &'a Config) -> Self {
        let n = cfg.workers as usize;
        let m = cfg.requests as u64;
        let mut units = make_units(cfg);
        let Cast { threads, workers, responders, clients } = make_threads(cfg, &mut units);
        let l = memory_layout(cfg);
        let mem = make_hierarchy(cfg, &units, l.dir_lines);
        let cyc = |ns: f64| (ns * cfg.clock_ghz).round() as Cycle;
        Sim {
            cfg,
            steps: if cfg.cached_pages { server_steps_cached() } else { server_steps() },
            q: EventQueue::new(),
            mem,
            units,
            threads,
            workers,
            responders,
            clients,
            wake: Vec::new(),
            dirty: Vec::new(),
            c: Counters::default(),
            cold_next: 0,
            completions: vec![0; m as usize],
            served: 0,
            ctx_cycles: cyc(cfg.ctx_switch_ns),
            sleep_cycles: cyc(cfg.responder_sleep_us * 1000.0).max(1),
            quantum_cycles: cyc(cfg.sched_quantum_us * 1000.0).max(1),
            workers_left: n,
            event_budget: 2_000 * m.max(1) * (1 + n as u64 / cfg.tiles as u64) + 10_000_000,
            app_hot_lines: cfg.app_hot_kb as u64 * 16,
            lines: l,
        }
    }
}
