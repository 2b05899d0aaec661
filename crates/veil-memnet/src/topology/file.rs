//! Topology from an adjacency list.
//!
//! ```text
//! # comment
//! terminals 1          # terminals per router (optional, default 1)
//! latency 1            # default link latency (optional, default 1)
//! 0: 1 2@3             # router 0 has links to 1 (default latency) and to 2 (latency 3)
//! 1: 0 2
//! 2: 0 1
//! ```
//! Routers are numbered 0..R-1 and every router needs a line. Links are directed; each link
//! gets its own credit channel back. Ports: terminals first, then links in listed order.
//! Node id = router*terminals + t.

use super::{ChannelClass, Shape, Topology};
use crate::error::ConfigError;

pub fn parse(text: &str, terminal_latency: u32) -> Result<Topology, ConfigError> {
    let err = |line: usize, m: String| Err(ConfigError(format!("topology file line {line}: {m}")));
    let mut terminals = 1usize;
    let mut default_latency = 1u32;
    let mut adj: Vec<Option<Vec<(usize, u32)>>> = Vec::new();
    for (ln, raw) in text.lines().enumerate() {
        let ln = ln + 1;
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("terminals") {
            terminals = match rest.trim().parse::<usize>() {
                Ok(v) if (1..=64).contains(&v) => v,
                _ => return err(ln, format!("'terminals' needs an integer in 1..=64, got '{}'", rest.trim())),
            };
            continue;
        }
        if let Some(rest) = line.strip_prefix("latency") {
            default_latency = match rest.trim().parse::<u32>() {
                Ok(v) if v >= 1 => v,
                _ => return err(ln, format!("'latency' needs a positive integer, got '{}'", rest.trim())),
            };
            continue;
        }
        let Some((head, tail)) = line.split_once(':') else {
            return err(ln, format!("expected '<router>: <neighbour> ...', got '{line}'"));
        };
        let r: usize = match head.trim().parse() {
            Ok(v) if v < 1 << 20 => v,
            _ => return err(ln, format!("bad router id '{}'", head.trim())),
        };
        let mut links = Vec::new();
        for tok in tail.split_whitespace() {
            let (nb, lat) = match tok.split_once('@') {
                Some((a, b)) => (a, b.parse::<u32>().ok().filter(|&v| v >= 1)),
                None => (tok, Some(default_latency)),
            };
            let Some(lat) = lat else {
                return err(ln, format!("bad latency in '{tok}' (positive integer expected)"));
            };
            let Ok(nb) = nb.parse::<usize>() else {
                return err(ln, format!("bad neighbour '{tok}'"));
            };
            if nb == r {
                return err(ln, format!("router {r} links to itself"));
            }
            links.push((nb, lat));
        }
        if adj.len() <= r {
            adj.resize(r + 1, None);
        }
        if adj[r].is_some() {
            return err(ln, format!("router {r} listed twice"));
        }
        adj[r] = Some(links);
    }
    if adj.is_empty() {
        return Err(ConfigError("topology file: no routers".into()));
    }
    let routers = adj.len();
    let mut lists = Vec::with_capacity(routers);
    for (r, a) in adj.into_iter().enumerate() {
        match a {
            Some(l) => lists.push(l),
            None => return Err(ConfigError(format!("topology file: router {r} has no line (routers must be 0..{})", routers - 1))),
        }
    }
    for (r, l) in lists.iter().enumerate() {
        if let Some(&(nb, _)) = l.iter().find(|(nb, _)| *nb >= routers) {
            return Err(ConfigError(format!("topology file: router {r} links to unknown router {nb}")));
        }
    }
    // Input ports: terminals, then incoming links in order of (source router, listing order).
    let mut in_count = vec![terminals; routers];
    for l in &lists {
        for &(nb, _) in l {
            in_count[nb] += 1;
        }
    }
    let radix: Vec<usize> = (0..routers).map(|r| (terminals + lists[r].len()).max(in_count[r])).collect();
    let mut t = Topology::empty(Shape::Graph { terminals_per_router: terminals }, &radix, routers * terminals);
    let mut next_in = vec![terminals; routers];
    for (r, l) in lists.iter().enumerate() {
        for (j, &(nb, lat)) in l.iter().enumerate() {
            let pb = next_in[nb];
            next_in[nb] += 1;
            t.connect(r, terminals + j, nb, pb, lat, 1, ChannelClass::Local);
        }
        for tix in 0..terminals {
            t.attach_node(r * terminals + tix, r, tix, terminal_latency);
        }
    }
    Ok(t)
}
