//! k-ary n-cube: mesh (no wrap-around links) and torus. Port layout follows BookSim2's kncube
//! so arbitration order matches: output 2d goes to the +1 neighbour in dimension d, output
//! 2d+1 to the -1 neighbour; input 2d comes from the +1 neighbour, input 2d+1 from the -1
//! neighbour; port 2n is the terminal.

use super::{ChannelClass, Shape, Topology};
use crate::error::ConfigError;

pub fn build(k: usize, n: usize, torus: bool, latency: u32, flit_cycles: u32, terminal_latency: u32) -> Result<Topology, ConfigError> {
    let name = if torus { "torus" } else { "mesh" };
    if k < 2 {
        return Err(ConfigError(format!("topology.{name}: k must be >= 2 (got {k})")));
    }
    if n == 0 || n > 8 {
        return Err(ConfigError(format!("topology.{name}: n must be in 1..=8 (got {n})")));
    }
    let size = k.checked_pow(n as u32).filter(|&s| s <= 1 << 20).ok_or_else(|| {
        ConfigError(format!("topology.{name}: k^n too large (k={k}, n={n})"))
    })?;
    if latency == 0 || flit_cycles == 0 {
        return Err(ConfigError(format!("topology.{name}: latency and flit_cycles must be >= 1")));
    }
    let radix = vec![2 * n + 1; size];
    let mut t = Topology::empty(Shape::KnCube { k, n, torus }, &radix, size);
    for r in 0..size {
        let mut stride = 1;
        for d in 0..n {
            let x = (r / stride) % k;
            // + neighbour
            if x + 1 < k || torus {
                let nb = r - x * stride + ((x + 1) % k) * stride;
                t.connect(r, 2 * d, nb, 2 * d + 1, latency, flit_cycles, ChannelClass::Local);
            }
            if x > 0 || torus {
                let nb = r - x * stride + ((x + k - 1) % k) * stride;
                t.connect(r, 2 * d + 1, nb, 2 * d, latency, flit_cycles, ChannelClass::Local);
            }
            stride *= k;
        }
        t.attach_node(r, r, 2 * n, terminal_latency);
    }
    Ok(t)
}
