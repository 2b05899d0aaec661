//! Admission of connections: who may hold a connection slot before proving the token.
//!
//! A connection starts *unauthenticated*: it holds one place of a small budget shared by all
//! unauthenticated connections and must finish TLS and carry one authenticated request (a
//! hello with a valid MAC, or a read that opens under a live session) within `deadline`, or it
//! is closed. Each peer address may hold at most its fair share of the budget (the budget over
//! the addresses holding places, and never above `per_addr`). A connection from an address
//! below its share is admitted; if the budget is full it takes the place of the oldest
//! connection of the address holding the most. A connection from an address at its share is
//! *parked*: held open but never read, then closed after `park`, so that refusing it does not
//! invite an immediate reconnect (a reset-and-reconnect loop would cost both sides CPU at the
//! attacker's pace); only when `park_budget` sockets are parked is it reset at once. Once
//! authenticated, a connection leaves this budget for the separate one of `max_connections`
//! that only token holders can occupy.
//!
//! This is the layered design of production TLS front ends (a short handshake timeout as
//! HAProxy's `timeout http-request` or nginx's `client_header_timeout`, per-address limits as
//! nginx's `limit_conn`), with fair-share eviction: a new address is admitted at once while
//! another holds more than its share, whatever the others send or do not send.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

#[derive(Clone, Copy, Debug)]
pub struct AdmitConfig {
    /// Unauthenticated connections held at once, all addresses together.
    pub budget: usize,
    /// Unauthenticated connections held at once from one address.
    pub per_addr: usize,
    /// Time to finish TLS and one authenticated request.
    pub deadline: std::time::Duration,
    /// Sockets over their address's share held open unread at once, and for how long.
    pub park_budget: usize,
    pub park: std::time::Duration,
}

impl Default for AdmitConfig {
    fn default() -> Self {
        Self {
            budget: 128,
            per_addr: 32,
            deadline: std::time::Duration::from_secs(2),
            park_budget: 2048,
            park: std::time::Duration::from_secs(10),
        }
    }
}

/// What to do with a new connection.
pub enum Admission {
    Admit(Arc<Ticket>),
    /// Hold it unread for `AdmitConfig::park`, then close it; the guard frees its place.
    Park(ParkGuard),
    Reset,
}

pub struct ParkGuard(Arc<Admit>);

impl Drop for ParkGuard {
    fn drop(&mut self) {
        self.0.parked.fetch_sub(1, Ordering::Relaxed);
    }
}

/// One admitted connection's standing: `evicted` fires when a newer connection takes its place;
/// `authed` is set once it has carried an authenticated request.
pub struct Ticket {
    id: u64,
    addr: IpAddr,
    pub evicted: Notify,
    was_evicted: AtomicBool,
    pub authed: AtomicBool,
    /// Set once it has carried an authenticated request, before it waits for a place among the
    /// authenticated connections: from then on it is queued, not cut at the deadline.
    proven: AtomicBool,
    pub auth_permit: Mutex<Option<tokio::sync::OwnedSemaphorePermit>>,
    admit: Arc<Admit>,
}

#[derive(Default)]
struct Table {
    next: u64,
    live: BTreeMap<u64, Arc<Ticket>>,
    by_addr: HashMap<IpAddr, VecDeque<u64>>,
}

pub struct Admit {
    cfg: AdmitConfig,
    table: Mutex<Table>,
    parked: std::sync::atomic::AtomicUsize,
}

impl Admit {
    pub fn new(cfg: AdmitConfig) -> Arc<Self> {
        let cfg = AdmitConfig { budget: cfg.budget.max(1), per_addr: cfg.per_addr.max(1), ..cfg };
        Arc::new(Self { cfg, table: Mutex::default(), parked: Default::default() })
    }

    pub fn config(&self) -> &AdmitConfig {
        &self.cfg
    }

    /// Decides a new connection from `addr` (see the module's description).
    pub fn admit(self: &Arc<Self>, addr: IpAddr) -> Admission {
        let mut t = self.table.lock().unwrap();
        let holds = t.by_addr.get(&addr).map_or(0, |q| q.len());
        let addrs = t.by_addr.len() + usize::from(holds == 0);
        let share = (self.cfg.budget / addrs).clamp(1, self.cfg.per_addr);
        if holds >= share {
            drop(t);
            if self.parked.fetch_add(1, Ordering::Relaxed) < self.cfg.park_budget {
                return Admission::Park(ParkGuard(self.clone()));
            }
            self.parked.fetch_sub(1, Ordering::Relaxed);
            return Admission::Reset;
        }
        if t.live.len() >= self.cfg.budget {
            let heaviest = t.by_addr.iter().max_by_key(|(_, q)| q.len()).map(|(a, _)| *a);
            if let Some(a) = heaviest {
                let victim = t.by_addr.get_mut(&a).and_then(|q| q.pop_front());
                if t.by_addr.get(&a).is_some_and(|q| q.is_empty()) {
                    t.by_addr.remove(&a);
                }
                if let Some(v) = victim.and_then(|v| t.live.remove(&v)) {
                    // notify_one keeps the wake-up for a task not yet waiting on it
                    v.was_evicted.store(true, Ordering::Release);
                    v.evicted.notify_one();
                }
            }
        }
        let id = t.next;
        t.next += 1;
        let ticket = Arc::new(Ticket {
            id,
            addr,
            evicted: Notify::new(),
            was_evicted: AtomicBool::new(false),
            authed: AtomicBool::new(false),
            proven: AtomicBool::new(false),
            auth_permit: Mutex::new(None),
            admit: self.clone(),
        });
        t.live.insert(id, ticket.clone());
        t.by_addr.entry(addr).or_default().push_back(id);
        Admission::Admit(ticket)
    }

    fn release(&self, id: u64, addr: IpAddr) {
        let mut t = self.table.lock().unwrap();
        if t.live.remove(&id).is_some() {
            if let Some(q) = t.by_addr.get_mut(&addr) {
                q.retain(|x| *x != id);
                if q.is_empty() {
                    t.by_addr.remove(&addr);
                }
            }
        }
    }

    /// Unauthenticated connections held now (tests, stats).
    pub fn held(&self) -> usize {
        self.table.lock().unwrap().live.len()
    }

    pub fn parked(&self) -> usize {
        self.parked.load(Ordering::Relaxed)
    }
}

impl Ticket {
    /// Moves the connection to the authenticated budget: gives its unauthenticated place back
    /// at once (it has proven the token), then waits in line (the semaphore is FIFO) for one of
    /// the `permits`: the connections beyond `max_connections` are queued, for as long as the
    /// request timeout allows. Idempotent.
    pub async fn promote(&self, permits: &Arc<tokio::sync::Semaphore>) {
        if self.authed.load(Ordering::Acquire) {
            return;
        }
        self.proven.store(true, Ordering::Release);
        self.admit.release(self.id, self.addr);
        let Ok(p) = permits.clone().acquire_owned().await else { return };
        let mut slot = self.auth_permit.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_none() {
            *slot = Some(p);
            self.authed.store(true, Ordering::Release);
        }
    }

    /// Whether it has carried an authenticated request (it may still wait for its place).
    pub fn is_proven(&self) -> bool {
        self.proven.load(Ordering::Acquire)
    }

    pub fn is_authed(&self) -> bool {
        self.authed.load(Ordering::Acquire)
    }

    /// Called when the connection ends.
    pub fn done(&self) {
        self.admit.release(self.id, self.addr);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn cfg(budget: usize, per_addr: usize, park_budget: usize) -> AdmitConfig {
        AdmitConfig { budget, per_addr, park_budget, ..AdmitConfig::default() }
    }

    fn ticket(a: Admission) -> Arc<Ticket> {
        match a {
            Admission::Admit(t) => t,
            _ => panic!("not admitted"),
        }
    }

    #[test]
    fn fair_share_parks_the_heavy_address_and_evicts_for_a_new_one() {
        let a = Admit::new(cfg(4, 3, 1));
        let x: Vec<_> = (0..3).map(|_| ticket(a.admit(ip("127.0.0.2")))).collect();
        // above the per-address cap: parked (one place), then reset
        let parked = a.admit(ip("127.0.0.2"));
        assert!(matches!(parked, Admission::Park(_)) && a.parked() == 1);
        assert!(matches!(a.admit(ip("127.0.0.2")), Admission::Reset));
        drop(parked);
        assert_eq!(a.parked(), 0);
        let y = ticket(a.admit(ip("127.0.0.3")));
        assert_eq!(a.held(), 4);
        // full: a third address (share 4/3 = 1) takes the place of the heaviest's oldest
        let z = ticket(a.admit(ip("127.0.0.1")));
        assert_eq!(a.held(), 4);
        let fired = |t: &Arc<Ticket>| t.was_evicted.load(Ordering::Acquire);
        assert!(fired(&x[0]) && !fired(&x[1]) && !fired(&y) && !fired(&z));
        // 127.0.0.2 still holds 2 > its share: its reconnect is parked, not a new eviction
        assert!(matches!(a.admit(ip("127.0.0.2")), Admission::Park(_)));
        let _w = ticket(a.admit(ip("127.0.0.4")));
        assert!(fired(&x[1]) && !fired(&y) && !fired(&z), "the lone connections of other addresses stay");
        z.done();
        assert_eq!(a.held(), 3);
    }
}
