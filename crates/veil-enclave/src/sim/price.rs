//! Addresses of every access stream and the price of each phase: compute plus the stalls the
//! cache hierarchy returns for the phase's accesses.

use rand::Rng;
use veil_core::Cycle;

use super::{lines_of, Sim, CLIENT_BIT, CLIENT_SOCKET_LINES, ARGS_LINES, CALL_STACK_LINES, CHECK_CYCLES, GLOBAL_KERNEL_LINES, POST_CYCLES};
use crate::cache::{HOME_SHIFT, SHARED_BIT};
use crate::workload::{Buf, Call, Kernel, Size};

impl<'a> Sim<'a> {
    // ----- addresses ------------------------------------------------------------------------

    pub(super) fn worker_tile(&self, w: usize) -> u64 {
        self.units[self.threads[self.workers[w].tid].unit].tile as u64
    }
    pub(super) fn private_line(&self, w: usize, off: u64) -> u64 {
        (self.worker_tile(w) << HOME_SHIFT) | (w as u64 * self.lines.pv_block + off)
    }
    pub(super) fn shared_line(&self, w: usize, off: u64) -> u64 {
        (self.worker_tile(w) << HOME_SHIFT) | SHARED_BIT | (w as u64 * self.lines.sh_block + off)
    }
    pub(super) fn global_line(&self, i: u64) -> u64 {
        let i = i % GLOBAL_KERNEL_LINES;
        ((i % self.cfg.tiles as u64) << HOME_SHIFT) | SHARED_BIT | (self.lines.global_base + i)
    }
    pub(super) fn responder_line(&self, r: usize, i: u64) -> u64 {
        let tile = self.units[self.threads[self.responders[r].tid].unit].tile as u64;
        // Private space above every worker block.
        (tile << HOME_SHIFT) | (self.lines.pv_block * self.workers.len() as u64 + r as u64 * self.lines.resp_lines + i % self.lines.resp_lines)
    }
    pub(super) fn cold_line(&mut self, tile: u64) -> u64 {
        self.cold_next += 1;
        (tile << HOME_SHIFT) | (1 << 41) | self.cold_next
    }
    pub(super) fn buf_line(&self, w: usize, b: Buf, i: u64) -> u64 {
        let off = match b {
            Buf::Args => self.lines.pv_args + i % ARGS_LINES,
            Buf::Request => self.lines.pv_req + i,
            Buf::Header => self.lines.pv_hdr + i,
            Buf::Page => self.lines.pv_page + i,
        };
        self.private_line(w, off)
    }
    pub(super) fn bytes(&self, s: Size) -> u64 {
        match s {
            Size::Bytes(b) => b,
            Size::HttpRequest => self.cfg.http_request_bytes,
            Size::Header => self.cfg.header_bytes,
            Size::Page => self.cfg.page_bytes,
        }
    }

    // ----- pricing phases ---------------------------------------------------------------------

    pub(super) fn l1_of(&self, tid: usize) -> usize {
        self.threads[tid].unit
    }

    /// Phase duration: compute plus stalls, scattered accesses overlapped by the unit's
    /// memory-level parallelism, copy streams by the stream prefetcher's (`copy_mlp`).
    pub(super) fn finish_cost(&self, tid: usize, compute: f64, stall: f64, stream: f64) -> Cycle {
        let u = &self.units[self.threads[tid].unit];
        let s = stream / self.cfg.copy_mlp;
        let c = if u.sse { compute * self.cfg.sse_cpi_factor + stall + s } else { compute + stall / self.cfg.core_mlp + s };
        c.round().max(1.0) as Cycle
    }

    pub(super) fn work_cost(&mut self, w: usize) -> Cycle {
        self.mem.t = self.q.now() as f64;
        let tid = self.workers[w].tid;
        let l1 = self.l1_of(tid);
        let step = self.steps[self.workers[w].step_i];
        let mut stall = 0.0;
        let n_lines = (step.work_lines as f64 * self.cfg.work_lines_scale).round() as u32;
        for _ in 0..n_lines {
            let wk = &mut self.workers[w];
            let off = if wk.rng.gen::<f64>() < self.cfg.app_hot_fraction {
                wk.rng.gen_range(0..self.app_hot_lines)
            } else {
                wk.rng.gen_range(0..self.lines.app_ws_lines)
            };
            let write = wk.rng.gen_range(0..4) == 0;
            let line = self.private_line(w, off);
            stall += self.mem.access(l1, line, write);
        }
        let mut compute = step.work_cycles * self.cfg.work_scale;
        let mut stream = 0.0;
        if let Some((b, s)) = step.work_reads {
            for i in 0..lines_of(self.bytes(s)) {
                stream += self.mem.access(l1, self.buf_line(w, b, i), false);
            }
        }
        if let Some((b, s)) = step.work_writes {
            let n = lines_of(self.bytes(s));
            compute += n as f64 * self.cfg.copy_cycles_per_line;
            for i in 0..n {
                stream += self.mem.access(l1, self.buf_line(w, b, i), true);
            }
        }
        if self.workers[w].step_i == 0 {
            // The server's shared bookkeeping (connection count, log position): one line
            // every worker writes once per request.
            let g = self.global_line(GLOBAL_KERNEL_LINES - 1);
            stall += self.mem.access(l1, g, true);
        }
        self.finish_cost(tid, compute, stall, stream)
    }

    /// A copy of `n` lines, each a read of `src(i)` and a write of `dst(i)`.
    pub(super) fn copy(&mut self, l1: usize, srcs: &[u64], dsts: &[u64]) -> (f64, f64) {
        let mut stall = 0.0;
        for (&s, &d) in srcs.iter().zip(dsts) {
            stall += self.mem.access(l1, s, false);
            stall += self.mem.access(l1, d, true);
        }
        (srcs.len() as f64 * self.cfg.copy_cycles_per_line, stall)
    }

    pub(super) fn udata_lines(&self, w: usize, bytes: u64, args: bool) -> Vec<u64> {
        let n = lines_of(bytes);
        (0..n)
            .map(|i| {
                let off = if args { self.lines.sh_udata + (self.lines.sh_kstate - self.lines.sh_udata - ARGS_LINES) + i % ARGS_LINES } else { self.lines.sh_udata + i };
                self.shared_line(w, off)
            })
            .collect()
    }

    pub(super) fn enclave_lines(&self, w: usize, b: Buf, bytes: u64) -> Vec<u64> {
        (0..lines_of(bytes)).map(|i| self.buf_line(w, b, i)).collect()
    }

    /// Pack (enclave -> untrusted) or unpack (untrusted -> enclave) of the call's data.
    pub(super) fn pack_cost(&mut self, w: usize, call: &Call, pack: bool, slot: bool) -> Cycle {
        self.mem.t = self.q.now() as f64;
        let tid = self.workers[w].tid;
        let l1 = self.l1_of(tid);
        let (size, buf) = if pack { (call.in_size, call.in_buf) } else { (call.out_size, call.out_buf) };
        let bytes = self.bytes(size);
        let args = buf == Buf::Args;
        let enc = self.enclave_lines(w, buf, bytes);
        let unt = self.udata_lines(w, bytes, args);
        let mut stall = 0.0;
        let mut stream = 0.0;
        let mut compute = POST_CYCLES;
        if !pack && slot {
            stall += self.mem.access(l1, self.shared_line(w, 0), false);
        }
        let (c, s) = if pack { self.copy(l1, &enc, &unt) } else { self.copy(l1, &unt, &enc) };
        compute += c;
        stream += s;
        if pack && slot {
            stall += self.mem.access(l1, self.shared_line(w, 0), true);
        }
        self.finish_cost(tid, compute, stall, stream)
    }

    /// The kernel side of a call, run by `tid` (the worker itself or a responder) for worker
    /// `w`. `direct`: data moves straight between kernel and enclave buffers (no untrusted copy).
    pub(super) fn sys_cost(&mut self, tid: usize, w: usize, call: &Call, direct: bool) -> Cycle {
        self.mem.t = self.q.now() as f64;
        let l1 = self.l1_of(tid);
        let exec_tile = self.units[self.threads[tid].unit].tile as u64;
        let mut stall = 0.0;
        let mut stream = 0.0;
        let mut compute = call.sys_cycles * self.cfg.syscall_scale;
        if let Some(r) = self.threads[tid].responder {
            for i in 0..CALL_STACK_LINES {
                stall += self.mem.access(l1, self.responder_line(r, i), true);
            }
        }
        // Connection state: the same lines for the same call every request.
        let seed = call.name.bytes().fold(0u64, |a, b| a.wrapping_mul(31).wrapping_add(b as u64));
        let k_lines = (call.kernel_lines as f64 * self.cfg.syscall_lines_scale).round() as u64;
        for i in 0..k_lines {
            let off = self.lines.sh_kstate + (seed + i) % self.lines.kstate_lines;
            stall += self.mem.access(l1, self.shared_line(w, off), i % 2 == 0);
        }
        let g_lines = (call.global_lines as f64 * self.cfg.global_lines_scale).round() as u64;
        for i in 0..g_lines {
            stall += self.mem.access(l1, self.global_line(seed + i), i % 3 == 0);
        }
        // Data handed in.
        let in_b = self.bytes(call.in_size);
        if in_b > 0 {
            let src = if direct { self.enclave_lines(w, call.in_buf, in_b) } else { self.udata_lines(w, in_b, call.in_buf == Buf::Args) };
            let n = src.len() as u64;
            let dst: Vec<u64> = match call.in_to {
                Kernel::TxRing => {
                    let p = self.workers[w].tx_pos;
                    self.workers[w].tx_pos = (p + n) % self.lines.ring_lines;
                    (0..n).map(|i| self.shared_line(w, self.lines.sh_ring + (p + i) % self.lines.ring_lines)).collect()
                }
                _ => (0..n).map(|i| self.shared_line(w, self.lines.sh_kstate + (seed + 7 + i) % self.lines.kstate_lines)).collect(),
            };
            let (c, s) = self.copy(l1, &src, &dst);
            compute += c;
            stream += s;
        }
        let out_b = self.bytes(call.out_size);
        if out_b > 0 {
            let dst = if direct { self.enclave_lines(w, call.out_buf, out_b) } else { self.udata_lines(w, out_b, call.out_buf == Buf::Args) };
            let n = dst.len() as u64;
            let src: Vec<u64> = match call.out_from {
                Kernel::Nic | Kernel::PageCache => (0..n).map(|_| self.cold_line(exec_tile)).collect(),
                _ => (0..n).map(|i| self.shared_line(w, self.lines.sh_kstate + (seed + 3 + i) % self.lines.kstate_lines)).collect(),
            };
            let (c, s) = self.copy(l1, &src, &dst);
            compute += c;
            stream += s;
        }
        self.finish_cost(tid, compute, stall, stream)
    }

    pub(super) fn check_cost(&mut self, r: usize) -> Cycle {
        self.mem.t = self.q.now() as f64;
        let tid = self.responders[r].tid;
        let l1 = self.l1_of(tid);
        let mut stall = 0.0;
        for i in 0..self.lines.resp_lines {
            stall += self.mem.access(l1, self.responder_line(r, i), i % 4 == 0);
        }
        let serves = self.responders[r].serves.clone();
        for &w in &serves {
            stall += self.mem.access(l1, self.shared_line(w, 0), false);
        }
        self.finish_cost(tid, CHECK_CYCLES * serves.len() as f64, stall, 0.0)
    }

    /// A client's handling of one response: its own compute, the kernel work of its `send`
    /// (the next request) and two `recv`s (header, page) at the step table's costs, its socket
    /// state, and the copy of header and page out of the worker's transmit ring (lines the
    /// worker's side wrote: sharing misses when they are still in another L1) into its buffer.
    pub(super) fn client_cost(&mut self, c: usize) -> Cycle {
        self.mem.t = self.q.now() as f64;
        let tid = self.clients[c].tid;
        let w = self.clients[c].worker;
        let l1 = self.l1_of(tid);
        let tile = self.units[self.threads[tid].unit].tile as u64;
        let sys: f64 = self.steps.iter().filter_map(|s| s.call).filter(|k| k.name == "recv").map(|k| 2.0 * k.sys_cycles).next().unwrap_or(0.0)
            + self.steps.iter().filter_map(|s| s.call).filter(|k| k.name == "send").map(|k| k.sys_cycles).next().unwrap_or(0.0);
        let mut compute = self.cfg.client_work_cycles + sys * self.cfg.syscall_scale;
        let (hdr_l, page_l) = (lines_of(self.cfg.header_bytes), lines_of(self.cfg.page_bytes));
        let n = hdr_l + page_l;
        let block = n + CLIENT_SOCKET_LINES;
        let base = (tile << HOME_SHIFT) | CLIENT_BIT | (c as u64 * block);
        let mut stall = 0.0;
        let k_lines = (CLIENT_SOCKET_LINES as f64 * self.cfg.syscall_lines_scale).round() as u64;
        for i in 0..k_lines {
            stall += self.mem.access(l1, base + n + i % CLIENT_SOCKET_LINES, i % 2 == 0);
        }
        let end = self.workers[w].tx_pos + self.lines.ring_lines;
        let src: Vec<u64> = (0..n).map(|i| self.shared_line(w, self.lines.sh_ring + (end - n + i) % self.lines.ring_lines)).collect();
        let dst: Vec<u64> = (0..n).map(|i| base + i).collect();
        let (cc, stream) = self.copy(l1, &src, &dst);
        compute += cc;
        self.finish_cost(tid, compute, stall, stream)
    }
}
