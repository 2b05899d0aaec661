//! 2D flattened butterfly: k x k routers (router id = y*k + x), each fully connected to the
//! other k-1 routers of its row and of its column, with c terminals per router.
//! Ports: 0..c terminals, then k-1 row ports, then k-1 column ports. Row port j leads to
//! column index j if j < x, else j+1 (likewise for columns), so links are symmetric.
//! With `noc_latency` (BookSim2's `use_noc_latency`) the routers are laid out on a k x k grid
//! and a link between columns x and nx takes `latency * |x - nx|` cycles (rows likewise).

use super::{ChannelClass, Shape, Topology};
use crate::error::ConfigError;

pub fn build(
    k: usize,
    c: usize,
    latency: u32,
    flit_cycles: u32,
    noc_latency: bool,
    terminal_latency: u32,
) -> Result<Topology, ConfigError> {
    if k < 2 || k > 256 {
        return Err(ConfigError(format!("topology.flatfly: k must be in 2..=256 (got {k})")));
    }
    if c == 0 || c > 256 {
        return Err(ConfigError(format!("topology.flatfly: c must be in 1..=256 (got {c})")));
    }
    if latency == 0 || flit_cycles == 0 {
        return Err(ConfigError("topology.flatfly: latency and flit_cycles must be >= 1".into()));
    }
    let routers = k * k;
    let radix = vec![c + 2 * (k - 1); routers];
    let mut t = Topology::empty(Shape::Flatfly { k, c }, &radix, routers * c);
    for r in 0..routers {
        let (x, y) = (r % k, r / k);
        for j in 0..k - 1 {
            let nx = if j < x { j } else { j + 1 };
            let back = if x < nx { x } else { x - 1 };
            let span = |a: usize, b: usize| if noc_latency { latency * a.abs_diff(b) as u32 } else { latency };
            t.connect(r, c + j, y * k + nx, c + back, span(x, nx), flit_cycles, ChannelClass::Local);
            let ny = if j < y { j } else { j + 1 };
            let back = if y < ny { y } else { y - 1 };
            t.connect(r, c + (k - 1) + j, ny * k + x, c + (k - 1) + back, span(y, ny), flit_cycles, ChannelClass::Local);
        }
        for tix in 0..c {
            t.attach_node(r * c + tix, r, tix, terminal_latency);
        }
    }
    Ok(t)
}

/// The port of router `r` that leads to router `to` (same row or column), or None.
pub fn port_towards(k: usize, c: usize, r: usize, to: usize) -> Option<usize> {
    let (x, y, tx, ty) = (r % k, r / k, to % k, to / k);
    if y == ty && x != tx {
        Some(c + if tx < x { tx } else { tx - 1 })
    } else if x == tx && y != ty {
        Some(c + (k - 1) + if ty < y { ty } else { ty - 1 })
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn noc_latency_grows_with_the_span_of_a_link() {
        let flat = build(4, 1, 2, 1, false, 1).unwrap();
        let noc = build(4, 1, 2, 1, true, 1).unwrap();
        // Router 0 (x=0, y=0): row ports lead to x = 1, 2, 3; column ports to y = 1, 2, 3.
        for (j, span) in [(0usize, 1u32), (1, 2), (2, 3)] {
            assert_eq!(flat.out[0][1 + j].latency, 2);
            assert_eq!(noc.out[0][1 + j].latency, 2 * span);
            assert_eq!(noc.out[0][1 + 3 + j].latency, 2 * span);
        }
        // Router 5 (x=1, y=1): its row link to x=3 spans two pitches.
        assert_eq!(noc.out[5][1 + 2].latency, 4);
    }
}
