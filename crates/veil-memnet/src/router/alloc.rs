//! The router's allocators, evaluate half: VC allocation and switch allocation (separable,
//! input-first, round-robin arbiters; see the parent module for the pipeline's timing).

use super::{unevaluated_prefix, ACTIVE, wrap, Params, Router, Scratch, STALL_BUSY, STALL_CONFLICT, STALL_FULL};

impl Router {
    /// The input arbiter's pick for input VC `ivc`: the free output VC of its route nearest
    /// after its round-robin pointer (-1: every one busy).
    #[inline(always)]
    fn input_pick(&self, ivc: usize, v: usize, nvc: usize) -> i32 {
        let rs = self.route[ivc];
        let ptr = self.vc_in_ptr[ivc] as usize;
        let mut best = -1i32;
        let mut best_d = u32::MAX;
        for ov in rs.vc_lo..=rs.vc_hi {
            let o_l = rs.port as usize * v + ov as usize;
            if self.ovc_in_use[o_l] {
                continue;
            }
            let d = wrap(o_l + nvc - ptr, nvc) as u32;
            if d < best_d {
                best_d = d;
                best = o_l as i32;
            }
        }
        best
    }

    /// VC allocation, evaluate: the entries queued since the last step request output VCs.
    /// True when any was granted.
    pub(super) fn eval_vc_alloc(&mut self, pr: &Params, s: &mut Scratch, now: i64) -> bool {
        let mut granted = false;
        let v = pr.v;
        let nvc = self.radix * v;
        // ---- VC allocation: evaluate ----
        // Work on a contiguous slice of the queue (put back below): no per-access wrapping.
        let mut q = std::mem::take(&mut self.vc_q);
        let qs = q.as_mut_slice();
        let n_new = unevaluated_prefix(qs);
        if n_new == 1 {
            // A lone request: the output arbiter grants whatever free output VC the input
            // arbiter picks; the general path below would give the same result.
            let e = &mut qs[0];
            let ivc = e.input as usize * v + e.vc as usize;
            let best = self.input_pick(ivc, v, nvc);
            if best < 0 {
                e.res = STALL_BUSY;
            } else {
                let o_l = best as usize;
                self.vc_out_ptr[o_l] = wrap(ivc + 1, nvc) as u16;
                self.vc_in_ptr[ivc] = wrap(o_l + 1, nvc) as u16;
                e.res = best;
                granted = true;
            }
            e.time = now + pr.vc_alloc_delay - 1;
        } else if n_new > 0 {
            s.s_touched.clear();
            for i in 0..n_new {
                let e = qs[i];
                let ivc_l = e.input as usize * v + e.vc as usize;
                let ivc = ivc_l;
                let best = self.input_pick(ivc, v, nvc);
                s.s_chosen[i] = best;
                if best < 0 {
                    qs[i].res = STALL_BUSY;
                    continue;
                }
                let o_l = best as usize;
                let d = wrap(ivc_l + nvc - self.vc_out_ptr[o_l] as usize, nvc) as u32;
                if s.s_best[o_l] < 0 {
                    s.s_touched.push(o_l as u32);
                    s.s_best[o_l] = ivc_l as i32;
                    s.s_best_dist[o_l] = d;
                } else if d < s.s_best_dist[o_l] {
                    s.s_best[o_l] = ivc_l as i32;
                    s.s_best_dist[o_l] = d;
                }
            }
            granted = !s.s_touched.is_empty();
            for &o_l in &s.s_touched {
                let w = s.s_best[o_l as usize] as usize;
                self.vc_out_ptr[o_l as usize] = wrap(w + 1, nvc) as u16;
                self.vc_in_ptr[w] = wrap(o_l as usize + 1, nvc) as u16;
            }
            for i in 0..n_new {
                let e = &mut qs[i];
                e.time = now + pr.vc_alloc_delay - 1;
                if e.res < -1 {
                    continue;
                }
                let ivc_l = e.input as usize * v + e.vc as usize;
                let c = s.s_chosen[i];
                e.res = if s.s_best[c as usize] == ivc_l as i32 { c } else { STALL_CONFLICT };
            }
            for &o_l in &s.s_touched {
                s.s_best[o_l as usize] = -1;
            }
        }
        if n_new > 0 && pr.vc_alloc_delay > 1 {
            for i in 0..qs.len() {
                let e = qs[i];
                if now < e.time {
                    break;
                }
                if e.res >= 0 && self.ovc_in_use[e.res as usize] {
                    qs[i].res = STALL_BUSY;
                }
            }
        }

        self.vc_q = q;
        granted
    }

    /// Switch allocation, evaluate: one VC per (input, output) pair, input then output arbiters.
    /// True when any was granted.
    pub(super) fn eval_sw_alloc(&mut self, pr: &Params, s: &mut Scratch, now: i64) -> bool {
        let mut granted = false;
        let v = pr.v;
        let radix = self.radix;
        // ---- switch allocation: evaluate ----
        let mut q = std::mem::take(&mut self.sw_q);
        let qs = q.as_mut_slice();
        let n_new = unevaluated_prefix(qs);
        if n_new == 1 {
            // A lone request (most steps below saturation): both arbiters grant it unless
            // its output VC is full; the general path below would give the same result.
            let e = &mut qs[0];
            let inp = e.input as usize;
            let ivc = inp * v + e.vc as usize;
            let o = self.out_port[ivc] as usize;
            if self.ovc_occ[o * v + self.out_vc[ivc] as usize] as usize >= pr.buf {
                e.res = STALL_FULL;
            } else {
                e.res = o as i32;
                self.sw_in_ptr[inp] = wrap(o + 1, radix) as u16;
                self.sw_out_ptr[o] = wrap(inp + 1, radix) as u16;
                self.sw_rr_offset[inp] = wrap(e.vc as usize + 1, v) as u8;
                granted = true;
            }
            e.time = now + pr.sw_alloc_delay - 1;
        } else if n_new > 0 {
            s.s_req_touched.clear();
            for i in 0..n_new {
                let e = qs[i];
                let ivc = e.input as usize * v + e.vc as usize;
                debug_assert_eq!(self.state[ivc], ACTIVE);
                let o = self.out_port[ivc] as usize;
                let ovc = o * v + self.out_vc[ivc] as usize;
                if self.ovc_occ[ovc] as usize >= pr.buf {
                    qs[i].res = STALL_FULL;
                    continue;
                }
                let k = e.input as usize * radix + o;
                let cur = s.s_req[k];
                if cur < 0 {
                    s.s_req[k] = e.vc as i16;
                    s.s_req_touched.push(((e.input as u32) << 16) | o as u32);
                } else {
                    let off = self.sw_rr_offset[e.input as usize] as usize;
                    let dn = wrap(e.vc as usize + v - off, v);
                    let dc = wrap(cur as usize + v - off, v);
                    if dn < dc {
                        s.s_req[k] = e.vc as i16;
                    }
                }
            }
            // Input arbiters: each input picks one requested output (round robin over ports).
            for &k in &s.s_req_touched {
                let (inp, o) = ((k >> 16) as usize, (k & 0xffff) as usize);
                let ptr = self.sw_in_ptr[inp] as usize;
                let d = wrap(o + radix - ptr, radix);
                let cur = s.s_in_choice[inp];
                if cur < 0 || d < wrap(cur as usize + radix - ptr, radix) {
                    s.s_in_choice[inp] = o as i32;
                }
            }
            // Output arbiters over the inputs that chose them.
            for &k in &s.s_req_touched {
                let inp = (k >> 16) as usize;
                let o = s.s_in_choice[inp];
                if o < 0 || o as usize != (k & 0xffff) as usize {
                    continue;
                }
                let o = o as usize;
                let d = wrap(inp + radix - self.sw_out_ptr[o] as usize, radix) as u32;
                if s.s_out_best[o] < 0 || d < s.s_out_dist[o] {
                    s.s_out_best[o] = inp as i32;
                    s.s_out_dist[o] = d;
                }
            }
            for i in 0..n_new {
                let e = qs[i];
                let mut res = e.res;
                if res >= -1 {
                    let inp = e.input as usize;
                    let o = s.s_in_choice[inp];
                    res = STALL_CONFLICT;
                    if o >= 0 && s.s_out_best[o as usize] == inp as i32 && s.s_req[inp * radix + o as usize] == e.vc as i16 {
                        res = o;
                    }
                }
                let e = &mut qs[i];
                e.time = now + pr.sw_alloc_delay - 1;
                e.res = res;
            }
            // Grants move the round-robin pointers; then clear scratch.
            for &k in &s.s_req_touched {
                let (inp, o) = ((k >> 16) as usize, (k & 0xffff) as usize);
                if s.s_in_choice[inp] == o as i32 && s.s_out_best[o] == inp as i32 {
                    self.sw_in_ptr[inp] = wrap(o + 1, radix) as u16;
                    self.sw_out_ptr[o] = wrap(inp + 1, radix) as u16;
                    let vc = s.s_req[inp * radix + o] as usize;
                    self.sw_rr_offset[inp] = wrap(vc + 1, v) as u8;
                    granted = true;
                }
            }
            for &k in &s.s_req_touched {
                let (inp, o) = ((k >> 16) as usize, (k & 0xffff) as usize);
                s.s_req[inp * radix + o] = -1;
                s.s_in_choice[inp] = -1;
                s.s_out_best[o] = -1;
            }
        }
        if n_new > 0 && pr.sw_alloc_delay > 1 {
            for i in 0..qs.len() {
                let e = qs[i];
                if now < e.time {
                    break;
                }
                if e.res >= 0 {
                    let ivc = e.input as usize * v + e.vc as usize;
                    let ovc = e.res as usize * v + self.out_vc[ivc] as usize;
                    if self.ovc_occ[ovc] as usize >= pr.buf {
                        qs[i].res = STALL_FULL;
                    }
                }
            }
        }

        self.sw_q = q;
        granted
    }
}
