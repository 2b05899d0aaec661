//! Simulated time and a deterministic discrete-event queue.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// Simulated time in clock cycles.
pub type Cycle = u64;

/// Converts cycles at `hz` to seconds.
pub fn cycles_to_seconds(c: Cycle, hz: f64) -> f64 {
    c as f64 / hz
}

/// Converts a duration in nanoseconds to whole cycles at `hz` (rounded to nearest).
pub fn ns_to_cycles(ns: f64, hz: f64) -> Cycle {
    (ns * hz / 1e9).round() as Cycle
}

struct Entry<T> {
    time: Cycle,
    seq: u64,
    item: T,
}

impl<T> PartialEq for Entry<T> {
    fn eq(&self, o: &Self) -> bool {
        self.time == o.time && self.seq == o.seq
    }
}
impl<T> Eq for Entry<T> {}
impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<T> Ord for Entry<T> {
    fn cmp(&self, o: &Self) -> Ordering {
        (self.time, self.seq).cmp(&(o.time, o.seq))
    }
}

/// A min-time event queue. Events at the same time pop in insertion order, so a simulation's
/// outcome never depends on heap internals.
pub struct EventQueue<T> {
    heap: BinaryHeap<Reverse<Entry<T>>>,
    seq: u64,
    now: Cycle,
}

impl<T> Default for EventQueue<T> {
    fn default() -> Self {
        Self { heap: BinaryHeap::new(), seq: 0, now: 0 }
    }
}

impl<T> EventQueue<T> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Current time: the time of the last event popped.
    pub fn now(&self) -> Cycle {
        self.now
    }

    /// Schedules `item` at absolute time `at`. Scheduling in the past is a logic error.
    pub fn schedule(&mut self, at: Cycle, item: T) {
        debug_assert!(at >= self.now, "event scheduled in the past: {at} < {}", self.now);
        self.heap.push(Reverse(Entry { time: at, seq: self.seq, item }));
        self.seq += 1;
    }

    /// Schedules `item` `delay` cycles from now.
    pub fn after(&mut self, delay: Cycle, item: T) {
        self.schedule(self.now + delay, item);
    }

    pub fn pop(&mut self) -> Option<(Cycle, T)> {
        let Reverse(e) = self.heap.pop()?;
        self.now = e.time;
        Some((e.time, e.item))
    }

    pub fn peek_time(&self) -> Option<Cycle> {
        self.heap.peek().map(|Reverse(e)| e.time)
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_in_time_then_insertion_order() {
        let mut q = EventQueue::new();
        q.schedule(5, "c");
        q.schedule(1, "a");
        q.schedule(5, "d");
        q.schedule(3, "b");
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(order, vec![(1, "a"), (3, "b"), (5, "c"), (5, "d")]);
        assert_eq!(q.now(), 5);
    }

    #[test]
    fn after_is_relative_to_now() {
        let mut q = EventQueue::new();
        q.schedule(10, 0);
        q.pop();
        q.after(4, 1);
        assert_eq!(q.pop(), Some((14, 1)));
    }

    #[test]
    fn conversions() {
        assert_eq!(ns_to_cycles(500.0, 1e9), 500);
        assert_eq!(ns_to_cycles(10_000.0, 2e9), 20_000);
        assert!((cycles_to_seconds(1_000_000_000, 1e9) - 1.0).abs() < 1e-12);
    }
}
