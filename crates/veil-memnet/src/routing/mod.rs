//! Routing functions, chosen by name. Each returns an output port and a *VC class*; the
//! classes are what makes the algorithm deadlock-free (documented per algorithm, and in
//! docs/memnet-network.md). [`VcMap`] turns a class into a VC range: the VCs of a port are split
//! into `message classes x route classes` equal contiguous sets.

pub mod dor;
pub mod dragonfly;
pub mod flatfly;
pub mod table;

use veil_core::StreamRng;

use crate::error::ConfigError;
use crate::topology::{Shape, Topology};

/// What routing knows about a packet (kept in the packet, mutated as it travels).
#[derive(Clone, Copy, Debug, Default)]
pub struct PacketRoute {
    pub src: u32,
    pub dest: u32,
    /// Algorithm-defined phase (dragonfly min: 1 after the global hop; valiant: 1 after the
    /// intermediate was reached).
    pub ph: u8,
    /// Global hops taken (dragonfly) or network hops taken (table routing).
    pub count: u8,
    /// Valiant / UGAL intermediate (router or group, by algorithm); u32::MAX = minimal.
    pub inter: u32,
}

/// Random draws a routing function may need while routing (ties, adaptive choices).
pub trait Draw {
    /// Uniform integer in [0, max].
    fn int(&mut self, max: u32) -> u32;
}

impl Draw for StreamRng {
    fn int(&mut self, max: u32) -> u32 {
        use rand::Rng;
        self.gen_range(0..=max)
    }
}

impl Draw for crate::knuth::BookSimRng {
    fn int(&mut self, max: u32) -> u32 {
        self.int.int(max)
    }
}

/// Class meaning "any VC of the message class" (e.g. ejection on a torus, as BookSim2).
pub const ANY_CLASS: usize = usize::MAX;

/// Occupancy of a router's output ports (flits sent but not yet credited), for UGAL.
pub trait OccupancyView {
    fn used(&self, router: usize, port: usize) -> u32;
}

pub trait RoutingFunction: Send + Sync {
    /// VC classes needed for deadlock freedom.
    fn classes(&self) -> usize;
    /// Called once per packet when its head enters the network, with the state of the
    /// source router (Valiant draws its intermediate, UGAL chooses a path).
    fn at_source(&self, _r: usize, _pkt: &mut PacketRoute, _rng: &mut dyn Draw, _view: &dyn OccupancyView) {}
    /// Output port and VC class for a head flit at router `r`, arrived on `in_port`.
    fn route(&self, r: usize, in_port: usize, pkt: &mut PacketRoute, rng: &mut dyn Draw) -> (usize, usize);
    /// True when `route` may draw random numbers (their order then depends on the order in
    /// which arriving flits are queued).
    fn draws_while_routing(&self) -> bool {
        false
    }
    /// BookSim's dragonfly picks one random VC at injection instead of round-robin.
    fn random_injection_vc(&self) -> bool {
        false
    }
}

/// Class -> VC range.
#[derive(Clone, Copy, Debug)]
pub struct VcMap {
    pub route_classes: usize,
    pub msg_classes: usize,
    pub per_class: usize,
}

impl VcMap {
    pub fn new(num_vcs: usize, route_classes: usize, msg_classes: usize, routing: &str) -> Result<Self, ConfigError> {
        let need = route_classes * msg_classes;
        if num_vcs < need {
            return Err(ConfigError(format!(
                "router.num_vcs: routing '{routing}' needs at least {need} VCs ({route_classes} deadlock-avoidance class(es) x {msg_classes} message class(es)), got {num_vcs}"
            )));
        }
        Ok(Self { route_classes, msg_classes, per_class: num_vcs / need })
    }

    #[inline]
    pub fn range(&self, msg: usize, class: usize) -> (u8, u8) {
        if class == ANY_CLASS {
            return self.msg_range(msg);
        }
        let idx = msg * self.route_classes + class.min(self.route_classes - 1);
        let lo = idx * self.per_class;
        (lo as u8, (lo + self.per_class - 1) as u8)
    }

    /// All VCs of a message class (injection channel: no deadlock constraint there).
    #[inline]
    pub fn msg_range(&self, msg: usize) -> (u8, u8) {
        let lo = msg * self.route_classes * self.per_class;
        (lo as u8, (lo + self.route_classes * self.per_class - 1) as u8)
    }
}

/// Names known to the registry, per topology family.
pub const ROUTING_NAMES: &[(&str, &str)] = &[
    ("dor", "dimension-order routing: mesh (1 VC class), torus (2 classes, dateline), flattened butterfly"),
    ("min", "minimal routing: dragonfly (2 classes), flattened butterfly (dimension order), file topologies (hop-indexed classes)"),
    ("valiant", "Valiant: random intermediate (group on dragonfly, router on flattened butterfly), then minimal"),
    ("ugal", "UGAL-L: at the source, minimal or Valiant by queue length x hops"),
];

pub fn build(name: &str, topo: &Topology) -> Result<Box<dyn RoutingFunction>, ConfigError> {
    let misfit = || {
        let family = match &topo.shape {
            Shape::KnCube { torus: false, .. } => "mesh",
            Shape::KnCube { torus: true, .. } => "torus",
            Shape::Flatfly { .. } => "flatfly",
            Shape::Dragonfly { .. } => "dragonfly",
            Shape::Graph { .. } => "file",
        };
        let known = ROUTING_NAMES.iter().any(|(n, _)| *n == name);
        if known {
            ConfigError(format!("routing: '{name}' does not fit topology '{family}'"))
        } else {
            ConfigError(format!(
                "routing: unknown routing function '{name}' (known: {})",
                ROUTING_NAMES.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
            ))
        }
    };
    Ok(match (&topo.shape, name) {
        (Shape::KnCube { k, n, torus }, "dor") => Box::new(dor::Dor::new(*k, *n, *torus)),
        (Shape::Flatfly { k, c }, "dor" | "min") => Box::new(flatfly::FlatflyRouting::new(*k, *c, flatfly::Mode::Min)),
        (Shape::Flatfly { k, c }, "valiant") => Box::new(flatfly::FlatflyRouting::new(*k, *c, flatfly::Mode::Valiant)),
        (Shape::Flatfly { k, c }, "ugal") => Box::new(flatfly::FlatflyRouting::new(*k, *c, flatfly::Mode::Ugal)),
        (Shape::Dragonfly { p, a, h, g, lpp }, alg @ ("min" | "valiant" | "ugal")) => {
            let mode = match alg {
                "min" => dragonfly::Mode::Min,
                "valiant" => dragonfly::Mode::Valiant,
                _ => dragonfly::Mode::Ugal,
            };
            Box::new(dragonfly::DragonflyRouting::new(*p, *a, *h, *g, *lpp, mode))
        }
        (Shape::Graph { .. }, "min") => Box::new(table::TableRouting::new(topo)?),
        _ => return Err(misfit()),
    })
}
