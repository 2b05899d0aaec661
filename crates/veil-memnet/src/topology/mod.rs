//! Network topologies as plain graphs: routers with numbered ports, links with a latency and
//! a serialisation time, terminals attached to router ports. Each topology builder lives in
//! its own file and only fills this structure; routing functions read the builder's
//! parameters from [`Shape`].

pub mod dragonfly;
pub mod file;
pub mod flatfly;
pub mod kncube;

use crate::config::TopologyConfig;
use crate::error::ConfigError;

/// Where a link ends (or, for an input port, where it starts).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// Unconnected port (mesh edges).
    None,
    Router { r: u32, port: u16 },
    Node(u32),
}

/// What a channel is, for utilisation statistics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChannelClass {
    Injection,
    Ejection,
    Local,
    Global,
}

#[derive(Clone, Copy, Debug)]
pub struct Link {
    pub to: End,
    pub latency: u32,
    /// Cycles one flit occupies the link (1 = full width).
    pub flit_cycles: u32,
    pub class: ChannelClass,
}

/// Parameters routing functions need, by topology family.
#[derive(Clone, Debug, PartialEq)]
pub enum Shape {
    KnCube { k: usize, n: usize, torus: bool },
    Flatfly { k: usize, c: usize },
    /// `lpp`: global links between each pair of groups.
    Dragonfly { p: usize, a: usize, h: usize, g: usize, lpp: usize },
    Graph { terminals_per_router: usize },
}

#[derive(Clone, Debug)]
pub struct Topology {
    pub shape: Shape,
    pub routers: usize,
    pub nodes: usize,
    /// `out[r][port]`: the link leaving router r at `port`.
    pub out: Vec<Vec<Link>>,
    /// `inp[r][port]`: what feeds router r's input `port`, and that channel's latency.
    pub inp: Vec<Vec<(End, u32)>>,
    /// node -> (router, port): the node injects into input `port` and ejects from output
    /// `port` of that router.
    pub attach: Vec<(u32, u16)>,
}

impl Topology {
    pub fn build(cfg: &TopologyConfig, terminal_latency: u32) -> Result<Self, ConfigError> {
        match cfg {
            TopologyConfig::Mesh { k, n, latency, flit_cycles } => {
                kncube::build(*k, *n, false, *latency, *flit_cycles, terminal_latency)
            }
            TopologyConfig::Torus { k, n, latency, flit_cycles } => {
                kncube::build(*k, *n, true, *latency, *flit_cycles, terminal_latency)
            }
            TopologyConfig::Flatfly { k, c, latency, flit_cycles, noc_latency } => {
                flatfly::build(*k, *c, *latency, *flit_cycles, *noc_latency, terminal_latency)
            }
            TopologyConfig::Dragonfly { p, a, h, g, local_latency, global_latency, local_flit_cycles, global_flit_cycles } => {
                dragonfly::build(
                    *p,
                    *a,
                    *h,
                    *g,
                    (*local_latency, *local_flit_cycles),
                    (*global_latency, *global_flit_cycles),
                    terminal_latency,
                )
            }
            TopologyConfig::File { path, text } => {
                let body = match (path, text) {
                    (Some(p), None) => std::fs::read_to_string(p)
                        .map_err(|e| ConfigError(format!("topology file '{p}': {e}")))?,
                    (None, Some(t)) => t.clone(),
                    _ => return Err(ConfigError("topology.file: give exactly one of 'path' or 'text'".into())),
                };
                file::parse(&body, terminal_latency)
            }
        }
    }

    /// An empty topology with `routers` routers of the given radices, to be wired.
    pub(crate) fn empty(shape: Shape, radix: &[usize], nodes: usize) -> Self {
        let unconnected = Link { to: End::None, latency: 1, flit_cycles: 1, class: ChannelClass::Local };
        Self {
            shape,
            routers: radix.len(),
            nodes,
            out: radix.iter().map(|&k| vec![unconnected; k]).collect(),
            inp: radix.iter().map(|&k| vec![(End::None, 1); k]).collect(),
            attach: vec![(0, 0); nodes],
        }
    }

    /// Wires router `a` output `pa` to router `b` input `pb`.
    pub(crate) fn connect(&mut self, a: usize, pa: usize, b: usize, pb: usize, latency: u32, flit_cycles: u32, class: ChannelClass) {
        self.out[a][pa] = Link { to: End::Router { r: b as u32, port: pb as u16 }, latency, flit_cycles, class };
        self.inp[b][pb] = (End::Router { r: a as u32, port: pa as u16 }, latency);
    }

    /// Attaches terminal `node` to router `r` port `port` (both directions).
    pub(crate) fn attach_node(&mut self, node: usize, r: usize, port: usize, latency: u32) {
        self.attach[node] = (r as u32, port as u16);
        self.out[r][port] = Link { to: End::Node(node as u32), latency, flit_cycles: 1, class: ChannelClass::Ejection };
        self.inp[r][port] = (End::Node(node as u32), latency);
    }

    pub fn radix(&self, r: usize) -> usize {
        self.out[r].len()
    }

    /// Router-to-router channels (each direction counted).
    pub fn network_channels(&self) -> usize {
        self.out.iter().flatten().filter(|l| matches!(l.to, End::Router { .. })).count()
    }

    pub fn max_latency(&self) -> u32 {
        self.out.iter().flatten().map(|l| l.latency).max().unwrap_or(1)
    }
}
