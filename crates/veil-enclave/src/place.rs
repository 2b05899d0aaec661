//! Where every thread of the setup runs: workers, responders and the clients that issue the
//! requests. Units `0..tiles` are the enclave cores, `tiles..` the SSEs.
//!
//! Server threads follow the paper (Sec. 4.1): BL and EX-B put worker i on core i mod T; EX-L
//! gives each worker-responder pair two cores while cores last and pins a pair to one core once
//! the threads exceed the cores; SSE puts workers on cores and one responder per SSE. Clients
//! (one per worker, Sec. 4.2: "requests ... are issued evenly between clients, with each worker
//! serving its respective client's requests") are placed by `Placement` (config.rs).

use crate::config::{Config, Model, Placement};

/// The placement of one run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Unit of each worker.
    pub worker: Vec<usize>,
    /// (unit, workers served) of each responder.
    pub responders: Vec<(usize, Vec<usize>)>,
    /// Unit of each worker's client, if clients run on the chip.
    pub client: Vec<Option<usize>>,
}

impl Layout {
    /// Threads on each enclave core.
    pub fn core_load(&self, tiles: usize) -> Vec<usize> {
        let mut load = vec![0; tiles];
        let units = self.worker.iter().chain(self.responders.iter().map(|(u, _)| u)).chain(self.client.iter().flatten());
        for &u in units {
            if u < tiles {
                load[u] += 1;
            }
        }
        load
    }
}

/// Places the server's threads (the paper's rules), then the clients.
pub fn place(cfg: &Config) -> Layout {
    let t = cfg.tiles as usize;
    let n = cfg.workers as usize;
    let mut responders: Vec<(usize, Vec<usize>)> = Vec::new();
    let worker: Vec<usize> = match cfg.model {
        Model::Bl | Model::ExB => (0..n).map(|w| w % t).collect(),
        Model::ExL => {
            // Pairs get two cores while cores last; the rest share one core per pair.
            let split = if 2 * n <= t { n } else { t.saturating_sub(n) };
            let mut wu = Vec::with_capacity(n);
            for w in 0..n {
                if w < split {
                    wu.push(2 * w);
                    responders.push((2 * w + 1, vec![w]));
                } else {
                    let c = (2 * split + (w - split)) % t;
                    wu.push(c);
                    responders.push((c, vec![w]));
                }
            }
            wu
        }
        Model::SseNhp | Model::SseHp => {
            let wu: Vec<usize> = (0..n).map(|w| w % t).collect();
            let n_sse = cfg.sse_count() as usize;
            let k = cfg.cores_per_sse_eff() as usize;
            let mut served: Vec<Vec<usize>> = vec![Vec::new(); n_sse];
            for (w, &u) in wu.iter().enumerate() {
                served[(u / k).min(n_sse - 1)].push(w);
            }
            for (s, ws) in served.into_iter().enumerate() {
                if !ws.is_empty() {
                    responders.push((t + s, ws));
                }
            }
            wu
        }
    };
    let mut layout = Layout { worker, responders, client: vec![None; n] };
    if cfg.placement == Placement::WakeAffine {
        let mut load = layout.core_load(t);
        let mut resp_of = vec![None; n];
        for (r, (_, ws)) in layout.responders.iter().enumerate() {
            for &w in ws {
                resp_of[w] = Some(r);
            }
        }
        for (w, &resp) in resp_of.iter().enumerate() {
            let u = match load.iter().position(|&l| l == 0) {
                Some(idle) => idle,
                None => waker_core(cfg, &layout, resp, w),
            };
            load[u] += 1;
            layout.client[w] = Some(u);
        }
    }
    layout
}

/// The enclave core whose thread runs the page `send` that wakes worker `w`'s client: the
/// responder's core under EX-L (the send exits under both policies), the worker's otherwise (an
/// SSE runs no client: it is not a core the OS schedules on).
fn waker_core(cfg: &Config, layout: &Layout, responder: Option<usize>, w: usize) -> usize {
    match (cfg.model, responder) {
        (Model::ExL, Some(r)) => layout.responders[r].0,
        _ => layout.worker[w],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(model: Model, workers: u32) -> Config {
        Config { model, workers, placement: Placement::WakeAffine, ..Config::default() }
    }

    #[test]
    fn bl_clients_fill_idle_cores_then_share_with_their_worker() {
        let l = place(&cfg(Model::Bl, 32));
        assert_eq!(l.core_load(64), vec![1; 64]);
        assert_eq!(l.client[0], Some(32));
        let l = place(&cfg(Model::Bl, 64));
        assert_eq!(l.core_load(64), vec![2; 64]);
        assert!((0..64).all(|w| l.client[w] == Some(l.worker[w])));
    }

    #[test]
    fn exl_clients_go_to_the_responder_core_once_pairs_fill_the_chip() {
        let l = place(&cfg(Model::ExL, 16));
        assert!(l.core_load(64).iter().all(|&n| n <= 1));
        assert!((0..16).all(|w| l.client[w] == Some(32 + w)));
        let l = place(&cfg(Model::ExL, 32));
        assert!((0..32).all(|w| l.client[w] == Some(l.responders[w].0) && l.responders[w].0 == 2 * w + 1));
        let l = place(&cfg(Model::ExL, 64));
        assert_eq!(l.core_load(64), vec![3; 64]);
    }

    #[test]
    fn sse_clients_never_on_an_sse_and_server_only_has_none() {
        let l = place(&cfg(Model::SseHp, 64));
        assert!(l.client.iter().all(|c| c.unwrap() < 64));
        let l = place(&Config { placement: Placement::ServerOnly, ..cfg(Model::Bl, 64) });
        assert!(l.client.iter().all(Option::is_none));
        assert_eq!(l.core_load(64), vec![1; 64]);
    }
}
