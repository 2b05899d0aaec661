//! Admission of connections: who may hold a connection slot before proving the token.
//!
//! A connection starts *unauthenticated*: it holds one place of a small budget shared by all
//! unauthenticated connections and must finish TLS and carry one authenticated request (a
//! hello with a valid MAC, or a read that opens under a live session) within `deadline`, or it
//! is closed. Addresses are grouped by network, /24 for IPv4 and /64 for IPv6 (one host holds a
//! /64; 256 neighbours are as cheap to an attacker as one address): each group may hold at most
//! its fair share of the budget (the budget over the groups holding places, and never above
//! `per_addr`). A connection from a group below its share is admitted; if the budget is full it
//! takes the place of a connection that has not sent a byte yet (an idle socket, not a client
//! mid-handshake), the oldest of the group holding the most such, and only when there is none,
//! the oldest of the group holding the most. A connection from a group at its share is
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
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
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
    /// Connections that have proven the token and wait for one of the authenticated places, at
    /// once; beyond, the request is refused with a 503 at once (each is a descriptor, and a
    /// token holder could otherwise queue without end).
    pub queue: usize,
}

impl Default for AdmitConfig {
    fn default() -> Self {
        Self {
            budget: 128,
            per_addr: 32,
            deadline: std::time::Duration::from_secs(2),
            park_budget: 2048,
            park: std::time::Duration::from_secs(10),
            queue: 256,
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
    /// The address's group (`group`).
    addr: IpAddr,
    /// Set when the first bytes arrive (a TLS record, or an HTTP request without TLS).
    spoke: AtomicBool,
    pub evicted: Notify,
    was_evicted: AtomicBool,
    pub authed: AtomicBool,
    /// Set once it has carried an authenticated request, before it waits for a place among the
    /// authenticated connections: from then on it is queued, not cut at the deadline.
    proven: AtomicBool,
    /// Set while it waits in line for a place: its request is in flight, so it is not idle
    /// (`Heard` stops its idle timer meanwhile).
    queued: AtomicBool,
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
    /// Connections waiting in line for an authenticated place (`Ticket::promote`).
    in_line: std::sync::atomic::AtomicUsize,
}

impl Admit {
    pub fn new(cfg: AdmitConfig) -> Arc<Self> {
        let cfg = AdmitConfig { budget: cfg.budget.max(1), per_addr: cfg.per_addr.max(1), ..cfg };
        Arc::new(Self { cfg, table: Mutex::default(), parked: Default::default(), in_line: Default::default() })
    }

    pub fn config(&self) -> &AdmitConfig {
        &self.cfg
    }

    /// Decides a new connection from `addr` (see the module's description).
    pub fn admit(self: &Arc<Self>, addr: IpAddr) -> Admission {
        let addr = group(addr);
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
            if let Some((a, id)) = victim(&t) {
                if let Some(q) = t.by_addr.get_mut(&a) {
                    q.retain(|x| *x != id);
                    if q.is_empty() {
                        t.by_addr.remove(&a);
                    }
                }
                if let Some(v) = t.live.remove(&id) {
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
            spoke: AtomicBool::new(false),
            evicted: Notify::new(),
            was_evicted: AtomicBool::new(false),
            authed: AtomicBool::new(false),
            proven: AtomicBool::new(false),
            queued: AtomicBool::new(false),
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

/// The group an address is counted in: its /24 (IPv4, also when mapped into IPv6) or its /64.
pub fn group(a: IpAddr) -> IpAddr {
    match a {
        IpAddr::V4(v) => IpAddr::V4(std::net::Ipv4Addr::from(u32::from(v) & !0xff)),
        IpAddr::V6(v) => match v.to_ipv4_mapped() {
            Some(v4) => group(IpAddr::V4(v4)),
            None => IpAddr::V6(std::net::Ipv6Addr::from(u128::from(v) & !((1u128 << 64) - 1))),
        },
    }
}

/// The connection a full budget gives up (group, id): among the silent ones if any (they have
/// sent nothing: idle sockets cost nothing to open, a client mid-handshake has done work), the
/// oldest of the group holding the most of them; else the oldest of the group holding the most.
fn victim(t: &Table) -> Option<(IpAddr, u64)> {
    let silent = |id: &u64| t.live.get(id).is_some_and(|k| !k.spoke.load(Ordering::Acquire));
    let any_silent = t.live.values().any(|k| !k.spoke.load(Ordering::Acquire));
    let count = |q: &VecDeque<u64>| if any_silent { q.iter().filter(|id| silent(id)).count() } else { q.len() };
    // ties go to the group whose candidate is oldest, so that equals take turns by age
    let (a, q) = t
        .by_addr
        .iter()
        .filter(|(_, q)| count(q) > 0)
        .max_by_key(|(_, q)| (count(q), std::cmp::Reverse(q.iter().find(|id| !any_silent || silent(id)).copied())))?;
    let id = *q.iter().find(|id| !any_silent || silent(id))?;
    Some((*a, id))
}

impl Ticket {
    /// The connection has sent its first bytes: from now on it goes after every silent one.
    pub fn mark_spoke(&self) {
        self.spoke.store(true, Ordering::Release);
    }

    /// Moves the connection to the authenticated budget: gives its unauthenticated place back
    /// at once (it has proven the token), then waits in line (the semaphore is FIFO) for one of
    /// the `permits`: the connections beyond `max_connections` are queued, for as long as the
    /// request timeout allows, and at most `AdmitConfig::queue` of them at once: false when the
    /// line is full (the caller refuses the request). Idempotent.
    pub async fn promote(&self, permits: &Arc<tokio::sync::Semaphore>) -> bool {
        if self.authed.load(Ordering::Acquire) {
            return true;
        }
        self.proven.store(true, Ordering::Release);
        self.admit.release(self.id, self.addr);
        // cleared however the wait ends: a place, or the request timeout dropping this future
        struct InLine<'a>(&'a AtomicBool, &'a std::sync::atomic::AtomicUsize);
        impl Drop for InLine<'_> {
            fn drop(&mut self) {
                self.0.store(false, Ordering::Release);
                self.1.fetch_sub(1, Ordering::AcqRel);
            }
        }
        if self.admit.in_line.fetch_add(1, Ordering::AcqRel) >= self.admit.cfg.queue {
            self.admit.in_line.fetch_sub(1, Ordering::AcqRel);
            return false;
        }
        self.queued.store(true, Ordering::Release);
        let in_line = InLine(&self.queued, &self.admit.in_line);
        let Ok(p) = permits.clone().acquire_owned().await else { return false };
        drop(in_line);
        let mut slot = self.auth_permit.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_none() {
            *slot = Some(p);
            self.authed.store(true, Ordering::Release);
        }
        true
    }

    /// Whether it has carried an authenticated request (it may still wait for its place).
    pub fn is_proven(&self) -> bool {
        self.proven.load(Ordering::Acquire)
    }

    /// Whether it is waiting in line for a place now.
    pub fn is_queued(&self) -> bool {
        self.queued.load(Ordering::Acquire)
    }

    pub fn is_authed(&self) -> bool {
        self.authed.load(Ordering::Acquire)
    }

    /// Called when the connection ends.
    pub fn done(&self) {
        self.admit.release(self.id, self.addr);
    }
}

/// A connection's socket that marks its ticket when the first bytes arrive (`Ticket::mark_spoke`)
/// and ends a read that has waited `idle` for bytes with `TimedOut` (the idle timeout), except
/// while the connection waits in line for a place (`Ticket::is_queued`). hyper keeps a read
/// pending during a request to notice a client that hangs up, so a plain read timer (as
/// `tokio_io_timeout`'s) also runs while a request waits for its place, and cut queued clients
/// at the idle timeout; the request timeout bounds that wait instead. The timer starts afresh
/// once the wait is over.
pub struct Heard<S> {
    inner: S,
    ticket: Arc<Ticket>,
    idle: Option<std::time::Duration>,
    timer: Pin<Box<tokio::time::Sleep>>,
    armed: bool,
}

impl<S> Heard<S> {
    pub fn new(inner: S, ticket: Arc<Ticket>, idle: Option<std::time::Duration>) -> Self {
        let timer = Box::pin(tokio::time::sleep(std::time::Duration::ZERO));
        Self { inner, ticket, idle, timer, armed: false }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Heard<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let this = &mut *self;
        if let Poll::Ready(r) = Pin::new(&mut this.inner).poll_read(cx, buf) {
            if buf.filled().len() > before {
                this.ticket.mark_spoke();
            }
            this.armed = false;
            return Poll::Ready(r);
        }
        let Some(idle) = this.idle else { return Poll::Pending };
        if this.ticket.is_queued() {
            // woken again when the reply goes out (hyper polls its reads after each write)
            this.armed = false;
            return Poll::Pending;
        }
        if !this.armed {
            this.timer.as_mut().reset(tokio::time::Instant::now() + idle);
            this.armed = true;
        }
        match this.timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(std::io::ErrorKind::TimedOut.into())),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Heard<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, b: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, b)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }
    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
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
        let x: Vec<_> = (0..3).map(|_| ticket(a.admit(ip("127.0.2.1")))).collect();
        // above the per-group cap: parked (one place), then reset; a neighbour in the same /24
        // counts as the same group
        let parked = a.admit(ip("127.0.2.9"));
        assert!(matches!(parked, Admission::Park(_)) && a.parked() == 1);
        assert!(matches!(a.admit(ip("127.0.2.1")), Admission::Reset));
        drop(parked);
        assert_eq!(a.parked(), 0);
        let y = ticket(a.admit(ip("127.0.3.1")));
        assert_eq!(a.held(), 4);
        // full: a third group (share 4/3 = 1) takes the place of the heaviest's oldest
        let z = ticket(a.admit(ip("127.0.1.1")));
        assert_eq!(a.held(), 4);
        let fired = |t: &Arc<Ticket>| t.was_evicted.load(Ordering::Acquire);
        assert!(fired(&x[0]) && !fired(&x[1]) && !fired(&y) && !fired(&z));
        // 127.0.2.0/24 still holds 2 > its share: its reconnect is parked, not a new eviction
        assert!(matches!(a.admit(ip("127.0.2.1")), Admission::Park(_)));
        let _w = ticket(a.admit(ip("127.0.4.1")));
        assert!(fired(&x[1]) && !fired(&y) && !fired(&z), "the lone connections of other groups stay");
        z.done();
        assert_eq!(a.held(), 3);
    }

    /// A connection waiting in line for a place has a request in flight: the idle timer must
    /// not end its read (it did: queued clients were cut at the idle timeout). Once it has its
    /// place, or its wait is given up (the request timeout drops the wait), the timer runs again.
    #[test]
    fn the_idle_timer_spares_a_connection_waiting_in_line() {
        use std::time::Duration;
        use tokio::io::AsyncReadExt;
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let a = Admit::new(cfg(4, 4, 0));
            let t = ticket(a.admit(ip("127.0.0.1")));
            let permits = Arc::new(tokio::sync::Semaphore::new(0));
            let (_client, server) = tokio::io::duplex(64);
            let mut io = Heard::new(server, t.clone(), Some(Duration::from_millis(50)));
            let mut b = [0u8; 8];
            let line = |t: &Arc<Ticket>| {
                let (t, p) = (t.clone(), permits.clone());
                tokio::spawn(async move { t.promote(&p).await })
            };
            // a wait given up (the request timeout) leaves the line
            let given_up = line(&t);
            tokio::time::sleep(Duration::from_millis(10)).await;
            assert!(t.is_queued());
            given_up.abort();
            let _ = given_up.await;
            assert!(!t.is_queued());
            let wait = line(&t);
            tokio::time::sleep(Duration::from_millis(10)).await;
            assert!(t.is_queued());
            let r = tokio::time::timeout(Duration::from_millis(300), io.read(&mut b)).await;
            assert!(r.is_err(), "the read ended while in line: {r:?}");
            permits.add_permits(1);
            wait.await.unwrap();
            assert!(t.is_authed() && !t.is_queued());
            let r = tokio::time::timeout(Duration::from_secs(5), io.read(&mut b)).await;
            assert_eq!(r.expect("the idle timer ends the read").unwrap_err().kind(), std::io::ErrorKind::TimedOut);
        });
    }

    /// At most `queue` connections wait in line at once: one more is refused at once (it was
    /// not bounded, and each is a descriptor), and the place in line frees however a wait ends.
    #[test]
    fn the_line_for_a_place_is_bounded() {
        use std::time::Duration;
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let a = Admit::new(AdmitConfig { queue: 1, ..cfg(4, 4, 0) });
            let permits = Arc::new(tokio::sync::Semaphore::new(0));
            let (t1, t2) = (ticket(a.admit(ip("127.0.0.1"))), ticket(a.admit(ip("127.0.1.1"))));
            let line = |t: &Arc<Ticket>| {
                let (t, p) = (t.clone(), permits.clone());
                tokio::spawn(async move { t.promote(&p).await })
            };
            let w1 = line(&t1);
            tokio::time::sleep(Duration::from_millis(10)).await;
            assert!(t1.is_queued());
            let second = tokio::time::timeout(Duration::from_secs(2), t2.promote(&permits)).await;
            assert_eq!(second.ok(), Some(false), "a second connection joined a full line");
            assert!(!t2.is_queued() && t2.is_proven() && !t2.is_authed());
            w1.abort();
            let _ = w1.await;
            let w2 = line(&t2);
            tokio::time::sleep(Duration::from_millis(10)).await;
            assert!(t2.is_queued(), "the given-up wait kept its place in line");
            permits.add_permits(1);
            assert!(w2.await.unwrap() && t2.is_authed());
        });
    }

    #[test]
    fn addresses_group_by_24_and_64() {
        assert_eq!(group(ip("10.1.2.3")), ip("10.1.2.0"));
        assert_eq!(group(ip("::ffff:10.1.2.3")), ip("10.1.2.0"));
        assert_eq!(group(ip("2001:db8:1:2:aaaa:bbbb:cccc:dddd")), ip("2001:db8:1:2::"));
        assert_ne!(group(ip("2001:db8:1:3::1")), group(ip("2001:db8:1:2::1")));
        // 2^64 addresses of one /64 hold one group's share, as one address did
        let a = Admit::new(cfg(8, 2, 0));
        let held: Vec<_> = (1..=2).map(|k| ticket(a.admit(ip(&format!("2001:db8::{k:x}"))))).collect();
        assert!(matches!(a.admit(ip("2001:db8::ffff:1")), Admission::Reset));
        assert_eq!(held.len(), 2);
    }

    /// Thousands of addresses, each in a /24 of its own and holding one silent place, do not
    /// push out a connection that has sent its first bytes: the silent ones go first, oldest
    /// first; only when none is silent does the oldest of the heaviest group go.
    #[test]
    fn silent_connections_are_evicted_before_ones_mid_handshake() {
        let a = Admit::new(cfg(128, 32, 0));
        let fired = |t: &Arc<Ticket>| t.was_evicted.load(Ordering::Acquire);
        let client = ticket(a.admit(ip("127.0.0.1")));
        client.mark_spoke();
        let mut flood = Vec::new();
        for k in 0..4096u32 {
            flood.push(ticket(a.admit(ip(&format!("127.{}.{}.7", 1 + k / 256, k % 256)))));
            assert!(!fired(&client), "the client was evicted by silent socket {k}");
        }
        assert_eq!(a.held(), 128);
        assert!(flood[..4096 - 127].iter().all(fired) && flood[4096 - 127..].iter().all(|t| !fired(t)));
        // once every place has spoken, the oldest of the heaviest group goes
        for t in &flood[4096 - 127..] {
            t.mark_spoke();
        }
        let late = ticket(a.admit(ip("127.200.0.1")));
        assert!(fired(&client) && !fired(&late));
    }
}
