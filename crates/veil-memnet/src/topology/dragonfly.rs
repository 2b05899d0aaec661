//! Dragonfly (Kim et al. 2008): g groups of a routers; each router has p terminals, a-1 local
//! ports (the group is fully connected) and h global ports. Router id = group*a + index.
//!
//! Port layout (as BookSim2's `dragonflynew`): 0..p terminals, p..p+a-1 local ports (local
//! port j leads to group index j if j < own index, else j+1), then h global ports.
//!
//! Global wiring: a group's global links are numbered q = index*h + c. With lpp = a*h/(g-1)
//! links per pair of groups, link q goes to the j-th other group, j = q / lpp (group j if
//! j < own group, else j+1), as its (q % lpp)-th link to that group; links numbered beyond
//! lpp*(g-1) stay unconnected. For the balanced maximum g = a*h+1 this is BookSim2's
//! "absolute" arrangement exactly.

use super::{ChannelClass, Shape, Topology};
use crate::error::ConfigError;

pub fn build(
    p: usize,
    a: usize,
    h: usize,
    g: Option<usize>,
    local: (u32, u32),
    global: (u32, u32),
    terminal_latency: u32,
) -> Result<Topology, ConfigError> {
    let err = |m: String| Err(ConfigError(format!("topology.dragonfly: {m}")));
    if p == 0 || a == 0 || h == 0 {
        return err(format!("p, a and h must be >= 1 (got p={p}, a={a}, h={h})"));
    }
    if p > 64 || a > 256 || h > 64 {
        return err(format!("p <= 64, a <= 256, h <= 64 supported (got p={p}, a={a}, h={h})"));
    }
    let gmax = a * h + 1;
    let g = g.unwrap_or(gmax);
    if g < 2 {
        return err(format!("needs at least 2 groups (got g={g})"));
    }
    if g > gmax {
        return err(format!("cannot be built: g={g} groups need more than a*h={} global links per group (at most g={gmax})", a * h));
    }
    if local.0 == 0 || global.0 == 0 || local.1 == 0 || global.1 == 0 {
        return err("latencies and flit_cycles must be >= 1".into());
    }
    let lpp = (a * h) / (g - 1);
    let routers = g * a;
    let radix = vec![p + (a - 1) + h; routers];
    let mut t = Topology::empty(Shape::Dragonfly { p, a, h, g, lpp }, &radix, routers * p);
    for r in 0..routers {
        let (grp, i) = (r / a, r % a);
        for tix in 0..p {
            t.attach_node(r * p + tix, r, tix, terminal_latency);
        }
        for j in 0..a - 1 {
            let ni = if j < i { j } else { j + 1 };
            let back = if i < ni { i } else { i - 1 };
            t.connect(r, p + j, grp * a + ni, p + back, local.0, local.1, ChannelClass::Local);
        }
        for c in 0..h {
            let q = i * h + c;
            let j = q / lpp;
            if j >= g - 1 {
                continue;
            }
            let m = q % lpp;
            let dg = if j < grp { j } else { j + 1 };
            let jb = if grp < dg { grp } else { grp - 1 };
            let qb = jb * lpp + m;
            let (ib, cb) = (qb / h, qb % h);
            t.connect(r, p + a - 1 + c, dg * a + ib, p + a - 1 + cb, global.0, global.1, ChannelClass::Global);
        }
    }
    Ok(t)
}

/// Global link number q (0..a*h) of group `grp` used to reach group `dg` as its m-th link.
pub fn global_link(a: usize, h: usize, g: usize, lpp: usize, grp: usize, dg: usize, m: usize) -> usize {
    debug_assert!(grp != dg && dg < g && m < lpp && lpp * (g - 1) <= a * h);
    let j = if dg < grp { dg } else { dg - 1 };
    j * lpp + m
}
