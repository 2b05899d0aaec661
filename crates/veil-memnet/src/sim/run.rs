//! Run control: the watchdog, BookSim2's sample periods and convergence, fixed and batch runs,
//! the final drain, the conservation check and the result (the cycle loop is `sim.rs`).

use super::*;

impl Engine {
    pub(super) fn watchdog(&self) -> Result<(), SimError> {
        let c = &self.cfg.sim;
        if self.inflight_flits > 0 && self.now - self.last_progress > c.watchdog_cycles {
            return Err(SimError::Deadlock {
                cycle: self.now,
                in_flight_flits: self.inflight_flits,
                idle_cycles: self.now - self.last_progress,
            });
        }
        if c.max_packet_age > 0 && self.now % 1024 == 0 {
            let oldest = self
                .packets
                .slots
                .iter()
                .filter(|p| p.remaining > 0 && p.itime > 0)
                .map(|p| self.now - p.itime)
                .max()
                .unwrap_or(0);
            if oldest > c.max_packet_age {
                return Err(SimError::Livelock { cycle: self.now, packet_age: oldest });
            }
        }
        Ok(())
    }

    /// BookSim's estimate for the saturation test: mean latency of delivered packets and of
    /// every flit still in flight (counted from creation).
    fn latency_with_inflight(&self) -> f64 {
        let sum = self.plat.mean() * self.plat.count() as f64;
        let sum = if self.plat.count() == 0 { 0.0 } else { sum };
        let infl = (self.inflight_flits as u128 * self.now as u128 - self.inflight_ctime_sum) as f64;
        let count = self.plat.count() as f64 + self.inflight_flits as f64;
        if count == 0.0 { 0.0 } else { (sum + infl) / count }
    }

    fn accepted_rate(&self) -> f64 {
        let dt = (self.now - self.reset_time).max(1) as f64;
        self.accepted_flits as f64 / dt / self.topo.nodes as f64
    }

    fn packets_outstanding(&self) -> bool {
        self.measured_inflight > 0 || self.nodes.iter().any(|n| !n.qdrained)
    }

    fn run_cycles(&mut self, n: u64) -> Result<(), SimError> {
        for _ in 0..n {
            self.step()?;
        }
        Ok(())
    }

    /// Runs the whole simulation and returns its statistics.
    /// Packet slots ever allocated (the slab's high-water mark).
    pub fn packet_slots(&self) -> usize {
        self.packets.slots.len()
    }

    pub fn run(&mut self) -> Result<SimResult, SimError> {
        let started = std::time::Instant::now();
        // Most cycles the run can take before its drain (booksim mode stops earlier once converged).
        let planned = match (self.cfg.traffic.injection.as_str(), self.cfg.sim.mode.as_str()) {
            ("batch", _) => 0,
            (_, "fixed") => self.cfg.sim.warmup_cycles + self.cfg.sim.measure_cycles,
            _ => self.cfg.sim.sample_period * u64::from(self.cfg.sim.max_samples),
        };
        veil_core::progress::start(planned, "cycles");
        let stable = if self.cfg.traffic.injection == "batch" {
            self.run_batch()?
        } else if self.cfg.sim.mode == "fixed" {
            self.run_fixed()?
        } else {
            self.run_booksim()?
        };
        let mut res = self.collect(stable);
        if stable {
            self.final_drain()?;
            self.conservation()?;
            res.conservation_ok = true;
        }
        res.cycles_simulated = self.now;
        res.packets_delivered = self.retired_packets;
        res.wall_seconds = started.elapsed().as_secs_f64();
        res.threads = self.routers.threads();
        Ok(res)
    }

    /// BookSim2's _SingleSim: sample periods, warm-up, convergence, saturation abort, drain.
    fn run_booksim(&mut self) -> Result<bool, SimError> {
        let c = self.cfg.sim.clone();
        let mut converged = 0u32;
        let (mut prev_lat, mut prev_acc) = (0.0f64, 0.0f64);
        let mut clear_last = false;
        let mut total_phases = 0u32;
        self.phase = Phase::WarmingUp;
        self.clear_stats();
        while total_phases < c.max_samples && (self.phase != Phase::Running || converged < 3) {
            if clear_last || (self.phase == Phase::WarmingUp && total_phases % 2 == 0) {
                clear_last = false;
                self.clear_stats();
            }
            self.run_cycles(c.sample_period)?;
            let cur_lat = self.plat.mean();
            let cur_acc = self.accepted_rate();
            let lat_change = ((cur_lat - prev_lat) / cur_lat).abs();
            let acc_change = ((cur_acc - prev_acc) / cur_acc).abs();
            prev_lat = cur_lat;
            prev_acc = cur_acc;
            if std::env::var_os("MEMNET_TRACE_PERIODS").is_some() {
                eprintln!("t={} lat={cur_lat:.4} acc={cur_acc:.6} dlat={lat_change:.5} dacc={acc_change:.5}", self.now);
            }
            if self.latency_with_inflight() > c.latency_threshold {
                self.phase = Phase::Draining;
                self.drain_time = self.now;
                return Ok(false);
            }
            let lat_ok = !(lat_change > c.stopping_threshold);
            let acc_ok = !(acc_change > c.acc_stopping_threshold);
            match self.phase {
                Phase::WarmingUp => {
                    let done = if c.warmup_periods > 0 { total_phases + 1 >= c.warmup_periods } else { lat_ok && acc_ok };
                    if done {
                        clear_last = true;
                        self.phase = Phase::Running;
                    }
                }
                Phase::Running => {
                    if lat_ok && acc_ok {
                        converged += 1;
                    } else {
                        converged = 0;
                    }
                }
                Phase::Draining => {}
            }
            total_phases += 1;
        }
        if self.phase != Phase::Running {
            return Ok(false);
        }
        self.phase = Phase::Draining;
        self.drain_time = self.now;
        self.drain_measured()
    }

    /// Steps until every recorded packet is delivered; false if latency explodes meanwhile.
    fn drain_measured(&mut self) -> Result<bool, SimError> {
        let mut steps = 0u64;
        while self.packets_outstanding() {
            self.step()?;
            steps += 1;
            if steps % 1000 == 0 && self.latency_with_inflight() > self.cfg.sim.latency_threshold {
                return Ok(false);
            }
            if steps > self.cfg.sim.max_drain_cycles {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn run_fixed(&mut self) -> Result<bool, SimError> {
        let c = self.cfg.sim.clone();
        self.phase = Phase::WarmingUp;
        self.clear_stats();
        self.run_cycles(c.warmup_cycles)?;
        self.phase = Phase::Running;
        self.clear_stats();
        self.run_cycles(c.measure_cycles)?;
        if self.latency_with_inflight() > c.latency_threshold {
            self.phase = Phase::Draining;
            self.drain_time = self.now;
            return Ok(false);
        }
        self.phase = Phase::Draining;
        self.drain_time = self.now;
        self.drain_measured()
    }

    /// Batch mode: every node sends batch_size packets; all are measured.
    fn run_batch(&mut self) -> Result<bool, SimError> {
        self.phase = Phase::Running;
        self.clear_stats();
        let limit = self.cfg.sim.max_drain_cycles;
        loop {
            let done = self.nodes.iter().all(|n| n.batch_left == 0 && n.cur == NONE && n.replies.is_empty() && n.outstanding == 0)
                && self.inflight_flits == 0;
            if done {
                break;
            }
            if self.now > limit {
                return Ok(false);
            }
            self.step()?;
        }
        self.batch_done_time = self.now;
        self.phase = Phase::Draining;
        self.drain_time = self.now;
        for n in self.nodes.iter_mut() {
            n.qdrained = true;
        }
        Ok(true)
    }

    /// BookSim's final drain: stop injecting, deliver everything, wait for every credit.
    fn final_drain(&mut self) -> Result<(), SimError> {
        self.empty_network = true;
        let limit = self.now + self.cfg.sim.max_drain_cycles;
        while self.inflight_flits > 0 || self.credit_events > 0 || self.routers.any_pending_out() {
            if self.now > limit {
                return Err(SimError::Conservation(format!(
                    "drain did not finish within {} cycles ({} flits in flight)",
                    self.cfg.sim.max_drain_cycles, self.inflight_flits
                )));
            }
            self.step()?;
        }
        Ok(())
    }

    fn conservation(&self) -> Result<(), SimError> {
        let err = |m: String| Err(SimError::Conservation(m));
        if self.created_packets != self.retired_packets {
            return err(format!("{} packets created, {} delivered", self.created_packets, self.retired_packets));
        }
        if self.created_flits != self.ejected_flits {
            return err(format!("{} flits created, {} ejected", self.created_flits, self.ejected_flits));
        }
        if self.misrouted > 0 {
            return err(format!("{} packets delivered to the wrong node", self.misrouted));
        }
        if self.packets.live != 0 || self.inflight_flits != 0 {
            return err(format!("{} packets still allocated after drain", self.packets.live));
        }
        let b = self.routers.buffered_flits();
        if b != 0 {
            return err(format!("{b} flits left in router buffers"));
        }
        let c = self.routers.credits_outstanding() + self.node_occ.iter().map(|&x| x as u64).sum::<u64>();
        if c != 0 {
            return err(format!("{c} credits never returned"));
        }
        if !self.routers.all_vcs_idle() {
            return err("an input VC is not idle after drain".into());
        }
        Ok(())
    }

    fn collect(&self, stable: bool) -> SimResult {
        let nodes = self.topo.nodes as f64;
        let end = if self.phase == Phase::Draining && stable { self.drain_time } else { self.now };
        let dt = (end - self.reset_time).max(1) as f64;
        let accepted = if stable { self.accepted_flits as f64 / dt / nodes } else { self.accepted_rate() };
        let offered = if stable { self.sent_flits as f64 / dt / nodes } else { self.sent_flits as f64 / (self.now - self.reset_time).max(1) as f64 / nodes };
        let mut inj = ChannelUse::default();
        let mut ej = ChannelUse::default();
        let mut local = ChannelUse::default();
        let mut global = ChannelUse::default();
        let detail = self.cfg.channel_detail;
        let mut channels = Vec::new();
        for n in 0..self.topo.nodes {
            let u = self.inj_flits[n] as f64 / dt;
            inj.add(u);
            if detail {
                let port = self.topo.attach[n].1;
                channels.push(ChannelStat { kind: "injection".into(), router_or_node: n as u32, port, flits_per_cycle: u });
            }
        }
        for r in 0..self.topo.routers {
            for (p, l) in self.topo.out[r].iter().enumerate() {
                let u = self.chan_flits[self.routers.base[r] + p] as f64 / dt;
                let kind = match (l.to, l.class) {
                    (End::None, _) => continue,
                    (_, ChannelClass::Ejection) => {
                        ej.add(u);
                        "ejection"
                    }
                    (_, ChannelClass::Global) => {
                        global.add(u);
                        "global"
                    }
                    _ => {
                        local.add(u);
                        "local"
                    }
                };
                if detail {
                    channels.push(ChannelStat { kind: kind.into(), router_or_node: r as u32, port: p as u16, flits_per_cycle: u });
                }
            }
        }
        let q = |p: f64| self.plat.quantile(p);
        SimResult {
            saturated: !stable,
            offered_flits_per_node_cycle: self.cfg.traffic.rate,
            injected_flits_per_node_cycle: offered,
            accepted_flits_per_node_cycle: accepted,
            avg_packet_latency: self.plat.mean(),
            avg_network_latency: self.nlat.mean(),
            p50_packet_latency: q(0.5),
            p99_packet_latency: q(0.99),
            max_packet_latency: self.plat.max(),
            avg_hops: self.hops.mean(),
            packets_measured: self.plat.count(),
            packets_delivered: self.retired_packets,
            latency_histogram: if self.cfg.histogram { self.plat.buckets() } else { Vec::new() },
            injection_channels: inj,
            ejection_channels: ej,
            network_channels: local,
            global_channels: global,
            channels,
            batch_cycles: if self.cfg.traffic.injection == "batch" { Some(self.batch_done_time) } else { None },
            cycles_simulated: self.now,
            wall_seconds: 0.0,
            threads: 1,
            conservation_ok: false,
            nodes: self.topo.nodes,
            routers: self.topo.routers,
        }
    }
}
