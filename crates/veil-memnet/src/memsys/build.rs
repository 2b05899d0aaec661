//! Building a memory system from its configuration: checks, CPU placement, off-chip link
//! latencies, geometry and DRAM timing, the injection policy and the encryption state.

use super::*;
use crate::keyx::Role;

impl MemSystem {
    /// Builds the system with synthetic miss streams from `cfg.workload`.
    pub fn new(cfg: &MemSysConfig) -> Result<Self, SimError> {
        let w = cfg.workload.clone();
        let seed = cfg.network.seed;
        let pattern = match w.kind.as_str() {
            "uniform" | "batch" => workload::Pattern::Uniform,
            "hotspot" => workload::Pattern::Hotspot,
            "stream" => workload::Pattern::Stream,
            "trace" => return Self::from_trace(cfg),
            other => {
                let names: Vec<&str> = workload::WORKLOAD_NAMES.iter().map(|x| x.0).collect();
                return Err(ConfigError(format!("workload.kind: unknown '{other}' ({})", names.join(", "))).into());
            }
        };
        let gap = if w.kind == "batch" { 0.0 } else { w.insts_per_miss };
        let streams = RngStreams::new(seed);
        let mut factory = |i: usize, map: &AddressMap| -> Result<Box<dyn MissSource>, SimError> {
            Ok(Box::new(workload::Synthetic::new(
                streams.named("memnet.workload", i as u64),
                map.clone(),
                pattern,
                i as u32,
                w.requests_per_cpu,
                w.write_fraction,
                gap,
                w.hot_modules.clone(),
                w.hotspot_fraction,
            )))
        };
        Self::with_sources(cfg, &mut factory)
    }

    /// Builds the system replaying `cfg.workload.trace`: thread i on CPU i.
    pub(super) fn from_trace(cfg: &MemSysConfig) -> Result<Self, SimError> {
        let path = cfg.workload.trace.clone();
        if path.is_empty() {
            return Err(ConfigError("workload.trace: kind 'trace' needs a trace file".into()).into());
        }
        let probe = veil_trace::TraceReader::open(&path).map_err(|e| ConfigError(format!("workload.trace '{path}': {e}")))?;
        let h = probe.header();
        if h.line_size != 64 {
            return Err(ConfigError(format!("workload.trace '{path}': line size {} bytes, the memory modules use 64", h.line_size)).into());
        }
        let threads = h.threads as usize;
        drop(probe);
        // One thread per core, every core: a header of 0 threads (a trace whose producer did not
        // know them) would leave every CPU idle and the run empty, fewer would idle CPU ports.
        if threads != cfg.cpu.count {
            return Err(ConfigError(format!("workload.trace '{path}': {threads} threads but cpu.count is {} (one thread per core: set cpus = {threads}, or trace with --threads {})", cfg.cpu.count, cfg.cpu.count)).into());
        }
        let first_touch = match cfg.workload.page_mapping.as_str() {
            "first_touch" => true,
            "identity" => false,
            other => return Err(ConfigError(format!("workload.page_mapping: unknown '{other}' (first_touch, identity)")).into()),
        };
        let mut factory = |i: usize, _: &AddressMap| -> Result<Box<dyn MissSource>, SimError> {
            if i < threads {
                Ok(Box::new(workload::TraceStream::open(&path, i as u32)?))
            } else {
                Ok(Box::new(workload::Empty))
            }
        };
        let mut s = Self::with_sources(cfg, &mut factory)?;
        if first_touch {
            s.pages = Some(HashMap::new());
        }
        Ok(s)
    }

    /// Builds the system; core i replays the stream `sources(i, map)` returns.
    pub fn with_sources(cfg: &MemSysConfig, sources: &mut SourceFactory) -> Result<Self, SimError> {
        let open_page = check(cfg)?;
        let (m, e, c) = (&cfg.module, &cfg.encryption, &cfg.cpu);
        let bad = |s: String| -> Result<Self, SimError> { Err(ConfigError(s).into()) };
        let enc = encryption::build(&e.uarch, encryption::CipherCycles { aes_latency: e.aes_latency, xor_cycles: e.xor_cycles })?;

        cfg.network.validate()?;
        let mut topo = Topology::build(&cfg.network.topology, cfg.network.router.terminal_latency)?;
        let modules = topo.routers;
        if topo.nodes % modules != 0 {
            return bad(format!("network: {} terminals do not divide evenly over {modules} routers", topo.nodes));
        }
        let tpr = topo.nodes / modules;
        if modules > 65_535 {
            return bad(format!("network: at most 65535 modules (got {modules})"));
        }

        let cpu_nodes = place_cpus(c, modules, tpr)?;

        // Off-chip links: SerDes plus the scheme's per-hop stages.
        let tck = m.tck_ns;
        let extra = cycles(cfg.serdes_ns, tck) as u32 + enc.per_hop_cycles();
        add_offchip_latency(&mut topo, tpr, extra);
        // One `threads` for the whole run: the network steps its routers on the memory system's
        // count unless the network section sets its own.
        let mut net = cfg.network.clone();
        net.threads = net.threads.or(cfg.threads);
        let mut engine = Engine::external(&net, topo)?;
        if cfg.observe {
            engine.observe(Box::new(crate::observe::Observations::new(cfg.observe_max_events)));
        }

        let geo = geometry(m, modules)?;
        let banks = geo.layers * geo.banks_per_layer;
        let map = AddressMap::new(&m.address_mapping, geo)?;
        let w = &cfg.workload;
        if w.address_space > map.capacity {
            return bad(format!(
                "workload.address_space: {} bytes exceed the modules' capacity of {} bytes ({modules} x {} GiB)",
                w.address_space, map.capacity, m.gb
            ));
        }
        let timing = timing(m, open_page);
        let cpi = (1.0 / c.ipc) * (1.0 / tck) / c.ghz;
        // One job per miss stream at a time: more workers than CPUs would idle.
        let pool = readahead::worker_pool(readahead::thread_count(cfg.threads)?.min(c.count + 1))?;
        let mut cores = Vec::new();
        for (i, &n) in cpu_nodes.iter().enumerate() {
            let src = sources(i, &map)?;
            let src: Box<dyn MissSource> = match &pool {
                Some(p) => Box::new(readahead::ReadAhead::new(src, p.clone())),
                None => src,
            };
            cores.push(Core::new(n, src, c.mshrs, cpi, c.rob));
        }
        let nodes = engine.topo.nodes;
        let adjacency = adjacency(&engine.topo);
        let router_links = adjacency.iter().map(|a| a.len() as u64).sum();
        let net = injection::Net {
            nodes,
            tpr,
            modules,
            cpu_nodes: cpu_nodes.clone(),
            adjacency,
            seed: cfg.network.seed,
            secure: cfg.secure.clone(),
        };
        let policy = injection::build(&cfg.injection, &net)?;
        let (pad_blocks, otp, functional) = end_to_end_state(cfg, &*enc, &cpu_nodes, nodes);
        let nv = modules * m.vaults as usize;
        Ok(Self {
            policy,
            cfg: cfg.clone(),
            engine,
            map,
            timing,
            front: cycles(m.frontend_ns, tck),
            back: cycles(m.backend_ns, tck),
            tpr,
            modules,
            vaults_per_module: m.vaults as usize,
            vaults: (0..nv).map(|_| Vault::new(banks as usize)).collect(),
            active_vaults: Vec::new(),
            vault_active: vec![false; nv],
            msgs: Vec::new(),
            free: Vec::new(),
            live: 0,
            events: BinaryHeap::new(),
            head: vec![None; nodes],
            heads: 0,
            enc,
            otp,
            functional,
            store: HashMap::new(),
            cores,
            cpu_nodes,
            cores_done: 0,
            inj_nodes: nodeset::NodeSet::new(nodes),
            polled_to: 0,
            read_lat_sum: 0,
            read_lat_n: 0,
            read_lat_max: 0,
            net_lat_sum: 0,
            hops_sum: 0,
            delivered: 0,
            dummies: 0,
            responses: 0,
            foreign_rr: 0,
            pages: None,
            fwd: (0..nodes).map(|_| VecDeque::new()).collect(),
            fwd_count: 0,
            groups: Vec::new(),
            free_groups: Vec::new(),
            real_packets: 0,
            dummy_packets: 0,
            inj_flits: vec![0; nodes],
            net_flits: 0,
            router_links,
            pkt_lat_sum: 0,
            pkt_lat_n: 0,
            pad_blocks,
            packet_flits: cfg.secure.packet_flits,
            finished: false,
            wire_log: None,
        })
    }
}

/// The end-to-end encryption's state: the pad length in blocks, the per-pair OTP buffers (for
/// schemes with end-to-end pads) and the functional engines (with `encryption.functional`).
fn end_to_end_state(
    cfg: &MemSysConfig,
    enc: &dyn Encryption,
    cpu_nodes: &[u32],
    nodes: usize,
) -> (u64, Option<OtpBuffers>, Option<Functional>) {
    let e = &cfg.encryption;
    let secure = !matches!(cfg.injection.as_str(), "minimal" | "direct");
    // Secure packets are padded to packet_flits; a pad covers the largest packet.
    let pad_blocks = if secure { PAD_BLOCKS.max(cfg.secure.packet_flits as u64) } else { PAD_BLOCKS };
    let otp = enc.end_to_end_pads().then(|| {
        OtpBuffers::new(
            OtpParams {
                depth: e.otp_depth,
                aes_latency: e.aes_latency as u64,
                blocks_per_cycle: e.aes_blocks_per_cycle,
                pad_blocks,
                counter_bits: e.counter_bits,
                rekey_cycles: e.rekey_cycles,
            },
            nodes,
            cfg.network.seed,
        )
    });
    let functional = e.functional.then(|| {
        // Every node gets a certified device key; a CPU's node is the CPU's, the rest are modules'.
        let mut roles = vec![Role::Module; nodes];
        for &n in cpu_nodes {
            roles[n as usize] = Role::Cpu;
        }
        Functional::new(cfg.network.seed, &roles, e.otp_depth, pad_blocks, e.check_bits)
    });
    (pad_blocks, otp, functional)
}

/// Checks the module, encryption and CPU settings; the page policy is open (true) or closed.
fn check(cfg: &MemSysConfig) -> Result<bool, ConfigError> {
    let m = &cfg.module;
    let bad = |s: String| -> Result<bool, ConfigError> { Err(ConfigError(s)) };
    readahead::thread_count(cfg.threads)?;
    if m.layers == 0 || m.vaults == 0 || m.banks_per_layer == 0 || m.gb == 0 {
        return bad("module: layers, vaults, banks_per_layer and gb must be >= 1".into());
    }
    for (name, v) in [("tck_ns", m.tck_ns), ("tburst_ns", m.tburst_ns)] {
        if !(v > 0.0 && v.is_finite()) {
            return bad(format!("module.{name}: must be > 0 (got {v})"));
        }
    }
    for (name, v) in [
        ("trp_ns", m.trp_ns),
        ("tccd_ns", m.tccd_ns),
        ("trcd_ns", m.trcd_ns),
        ("tcl_ns", m.tcl_ns),
        ("twr_ns", m.twr_ns),
        ("tras_ns", m.tras_ns),
        ("frontend_ns", m.frontend_ns),
        ("backend_ns", m.backend_ns),
        ("serdes_ns", cfg.serdes_ns),
    ] {
        if !(v >= 0.0 && v.is_finite()) {
            return bad(format!("{name}: must be >= 0 (got {v})"));
        }
    }
    if m.row_bytes < 64 || m.row_bytes % 64 != 0 || m.burst_bytes == 0 || 64 % m.burst_bytes != 0 {
        return bad(format!("module: row_bytes must be a multiple of the 64-byte line and burst_bytes divide it (got {}, {})", m.row_bytes, m.burst_bytes));
    }
    let open_page = match m.page_policy.as_str() {
        "open" => true,
        "closed" => false,
        other => return bad(format!("module.page_policy: unknown '{other}' (open, closed)")),
    };
    if m.scheduler_window == 0 {
        return bad("module.scheduler_window: must be >= 1".into());
    }
    let e = &cfg.encryption;
    if e.otp_depth == 0 {
        return bad("encryption.otp_depth: must be >= 1 (got 0)".into());
    }
    if e.otp_depth > 65_535 {
        return bad(format!("encryption.otp_depth: at most 65535 (got {})", e.otp_depth));
    }
    if !(e.aes_blocks_per_cycle > 0.0 && e.aes_blocks_per_cycle.is_finite()) {
        return bad(format!("encryption.aes_blocks_per_cycle: must be > 0 (got {})", e.aes_blocks_per_cycle));
    }
    if e.counter_bits < 8 || e.counter_bits > 64 {
        return bad(format!("encryption.counter_bits: must be in 8..=64 (got {})", e.counter_bits));
    }
    if e.check_bits == 0 || e.check_bits > 16 {
        return bad(format!("encryption.check_bits: must be in 1..=16 (got {})", e.check_bits));
    }
    let c = &cfg.cpu;
    if c.count == 0 {
        return bad("cpu.count: must be >= 1".into());
    }
    if !(c.ipc > 0.0 && c.ghz > 0.0 && c.issue_width > 0.0) || c.ipc > c.issue_width {
        return bad(format!("cpu: need 0 < ipc <= issue_width and ghz > 0 (got ipc {}, issue_width {}, ghz {})", c.ipc, c.issue_width, c.ghz));
    }
    if c.mshrs == 0 {
        return bad("cpu.mshrs: must be >= 1".into());
    }
    Ok(open_page)
}

/// The node of each CPU: `cpu.placement` (or spread evenly), on its module's spare terminals.
fn place_cpus(c: &CpuConfig, modules: usize, tpr: usize) -> Result<Vec<u32>, ConfigError> {
    let bad = |s: String| -> Result<Vec<u32>, ConfigError> { Err(ConfigError(s)) };
    let placement: Vec<usize> = if c.placement.is_empty() {
        (0..c.count).map(|i| i * modules / c.count).collect()
    } else {
        if c.placement.len() != c.count {
            return bad(format!("cpu.placement: {} modules given for {} CPUs", c.placement.len(), c.count));
        }
        c.placement.clone()
    };
    let mut used = vec![0usize; modules];
    let mut cpu_nodes = Vec::new();
    for &pm in &placement {
        if pm >= modules {
            return bad(format!("cpu.placement: module {pm} does not exist (the network has {modules} modules, 0..{})", modules - 1));
        }
        let node = if tpr == 1 {
            pm
        } else {
            used[pm] += 1;
            if used[pm] >= tpr {
                return bad(format!("cpu.placement: module {pm} has no free terminal for another CPU ({} terminals per router, one is the module's)", tpr));
            }
            pm * tpr + used[pm]
        };
        cpu_nodes.push(node as u32);
    }

    Ok(cpu_nodes)
}

/// Off-chip links (router to router, router to CPU) take `extra` cycles more each way.
fn add_offchip_latency(topo: &mut Topology, tpr: usize, extra: u32) {
    let is_cpu = |n: u32| tpr > 1 && (n as usize) % tpr != 0;
    for r in 0..topo.routers {
        for p in 0..topo.out[r].len() {
            let off = match topo.out[r][p].to {
                End::Router { .. } => true,
                End::Node(n) => is_cpu(n),
                End::None => false,
            };
            if off {
                topo.out[r][p].latency += extra;
            }
            let off_in = match topo.inp[r][p].0 {
                End::Router { .. } => true,
                End::Node(n) => is_cpu(n),
                End::None => false,
            };
            if off_in {
                topo.inp[r][p].1 += extra;
            }
        }
    }
}

/// The modules' geometry: `module.gb` split into vaults, banks and rows.
fn geometry(m: &ModuleConfig, modules: usize) -> Result<Geometry, ConfigError> {
    let banks = (m.layers * m.banks_per_layer) as u64;
    let per_bank = (m.gb as u64) << 30;
    let div = m.vaults as u64 * banks * m.row_bytes as u64;
    if per_bank % div != 0 {
        return Err(ConfigError(format!("module: {} GiB does not split into {} vaults x {banks} banks of {}-byte rows", m.gb, m.vaults, m.row_bytes)));
    }
    Ok(Geometry {
        modules: modules as u64,
        vaults: m.vaults as u64,
        layers: m.layers as u64,
        banks_per_layer: m.banks_per_layer as u64,
        rows_per_bank: per_bank / div,
        lines_per_row: (m.row_bytes / 64) as u64,
        line_bytes: 64,
    })
}

/// DRAM timing in network cycles (tCK).
fn timing(m: &ModuleConfig, open_page: bool) -> Timing {
    let tck = m.tck_ns;
    Timing {
        trp: cycles(m.trp_ns, tck),
        tccd: cycles(m.tccd_ns, tck),
        trcd: cycles(m.trcd_ns, tck),
        tcl: cycles(m.tcl_ns, tck),
        twr: cycles(m.twr_ns, tck),
        tras: cycles(m.tras_ns, tck),
        line: (64 / m.burst_bytes) as u64 * cycles(m.tburst_ns, tck),
        open_page,
        window: m.scheduler_window,
    }
}

/// Each router's neighbours, one entry per router-to-router link.
fn adjacency(topo: &Topology) -> Vec<Vec<u32>> {
    let mut adj = vec![Vec::new(); topo.routers];
    for (r, ports) in topo.out.iter().enumerate() {
        for l in ports {
            if let End::Router { r: to, .. } = l.to {
                adj[r].push(to);
            }
        }
    }
    adj
}
