//! The service's sessions: their keys, the replay window on request counters, and which session
//! goes when the table is full.

use aws_lc_rs::aead::LessSafeKey;
use std::collections::{HashMap, HashSet, VecDeque};
use std::time::Instant;

pub const SID_LEN: usize = 16;
/// Counters accepted behind the highest one seen: a retried or reordered request from one
/// session is served once, as the anti-replay window of IPsec (RFC 4303 3.4.3) and DTLS does.
pub const WINDOW: u64 = 64;

pub struct Session {
    pub key: LessSafeKey,
    /// Highest request counter accepted, and a bitmap of the WINDOW counters below it (bit i:
    /// counter `top - i` was accepted).
    top: Option<u64>,
    seen: u64,
    /// Whether an authenticated read has come under this session: only its real client, who
    /// holds the ephemeral private key, can make one.
    used: bool,
    last: Instant,
}

impl Session {
    pub fn new(key: LessSafeKey) -> Self {
        Self { key, top: None, seen: 0, used: false, last: Instant::now() }
    }

    /// Accepts counter `c` once: false for a counter already accepted or more than WINDOW
    /// behind the highest. Each accepted counter is a reply nonce used once.
    pub fn accept(&mut self, c: u64) -> bool {
        match self.top {
            None => {
                (self.top, self.seen) = (Some(c), 1);
            }
            Some(t) if c > t => {
                let shift = c - t;
                self.seen = if shift >= WINDOW { 1 } else { (self.seen << shift) | 1 };
                self.top = Some(c);
            }
            Some(t) => {
                let back = t - c;
                if back >= WINDOW || self.seen & (1 << back) != 0 {
                    return false;
                }
                self.seen |= 1 << back;
            }
        }
        self.used = true;
        self.last = Instant::now();
        true
    }
}

/// Sessions by id, at most `max`; the hello public keys seen recently, so that a replayed hello
/// is refused outright.
pub struct Sessions {
    pub map: HashMap<[u8; SID_LEN], Session>,
    max: usize,
    hellos: HashSet<[u8; 32]>,
    order: VecDeque<[u8; 32]>,
}

impl Sessions {
    pub fn new(max: usize) -> Self {
        Self { map: HashMap::new(), max: max.max(1), hellos: HashSet::new(), order: VecDeque::new() }
    }

    /// Records a hello's public key; false if it was seen among the last 4 * max hellos (a
    /// replay: an honest client draws a fresh ephemeral key for every hello).
    pub fn fresh_hello(&mut self, client_pub: [u8; 32]) -> bool {
        if !self.hellos.insert(client_pub) {
            return false;
        }
        self.order.push_back(client_pub);
        if self.order.len() > 4 * self.max {
            if let Some(old) = self.order.pop_front() {
                self.hellos.remove(&old);
            }
        }
        true
    }

    /// Adds a session. When full, the one to go is the least recently created session that
    /// never carried a read (a replay of an older hello makes only such sessions), and only if
    /// there is none the least recently used one: a replayed handshake never pushes out a
    /// client that is reading.
    pub fn insert(&mut self, sid: [u8; SID_LEN], s: Session) {
        if self.map.len() >= self.max {
            let victim = self
                .map
                .iter()
                .min_by_key(|(_, v)| (v.used, v.last))
                .map(|(k, _)| *k);
            if let Some(v) = victim {
                self.map.remove(&v);
            }
        }
        self.map.insert(sid, s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_lc_rs::aead::{UnboundKey, AES_256_GCM};

    fn key() -> LessSafeKey {
        LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &[7u8; 32]).unwrap())
    }

    #[test]
    fn window_accepts_each_counter_once_and_refuses_far_behind() {
        let mut s = Session::new(key());
        assert!(s.accept(5));
        assert!(!s.accept(5));
        assert!(s.accept(7) && s.accept(6) && !s.accept(6) && !s.accept(7));
        assert!(s.accept(100));
        assert!(s.accept(100 - (WINDOW - 1)), "the oldest counter inside the window");
        assert!(!s.accept(100 - WINDOW), "just outside it");
        assert!(!s.accept(7), "far behind: refused even if never seen");
        assert!(s.accept(100 + 2 * WINDOW) && !s.accept(100));
    }

    #[test]
    fn replayed_hellos_are_refused_and_never_evict_a_reading_session() {
        let mut t = Sessions::new(3);
        assert!(t.fresh_hello([1; 32]) && !t.fresh_hello([1; 32]));
        let mut live = Session::new(key());
        assert!(live.accept(1));
        t.insert([0; SID_LEN], live);
        for i in 1..50u8 {
            t.insert([i; SID_LEN], Session::new(key()));
            assert!(t.map.contains_key(&[0; SID_LEN]), "evicted by unused session {i}");
            assert!(t.map.len() <= 3);
        }
    }
}
