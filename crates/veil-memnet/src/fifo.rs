//! A FIFO on one `Vec` for the router's pipeline stages: pops advance a head index, so the
//! live entries are always one slice (the allocators scan them in place, where a `VecDeque`
//! had to be rotated contiguous first) and push/pop need no ring wrapping.

#[derive(Clone, Debug)]
pub struct Fifo<T> {
    buf: Vec<T>,
    head: usize,
}

impl<T> Default for Fifo<T> {
    fn default() -> Self {
        Self { buf: Vec::new(), head: 0 }
    }
}

impl<T: Copy> Fifo<T> {
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.head == self.buf.len()
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.buf.len() - self.head
    }

    #[inline]
    pub fn front(&self) -> Option<&T> {
        self.buf.get(self.head)
    }

    #[inline]
    pub fn pop_front(&mut self) -> Option<T> {
        let x = *self.buf.get(self.head)?;
        self.head += 1;
        if self.head == self.buf.len() {
            self.buf.clear();
            self.head = 0;
        }
        Some(x)
    }

    #[inline]
    pub fn push_back(&mut self, x: T) {
        if self.buf.len() == self.buf.capacity() && self.head > 0 && self.head >= self.buf.len() / 2 {
            // Reuse the consumed front instead of growing; moving at most half the buffer
            // when at least half is freed keeps pushes amortised O(1).
            self.buf.copy_within(self.head.., 0);
            self.buf.truncate(self.buf.len() - self.head);
            self.head = 0;
        }
        self.buf.push(x);
    }

    /// The live entries, front first.
    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        &mut self.buf[self.head..]
    }

    #[inline]
    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, T> {
        self.as_mut_slice().iter_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::Fifo;
    use std::collections::VecDeque;

    #[test]
    fn behaves_as_a_vecdeque() {
        // The routers' pattern (pop some, push some, scan the live slice) against VecDeque.
        let mut f = Fifo::default();
        let mut d = VecDeque::new();
        let mut x = 1u64;
        for step in 0..20_000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let pops = (x >> 33) % 5;
            let pushes = (x >> 40) % 5 + (step % 7 == 0) as u64;
            for _ in 0..pops {
                assert_eq!(f.pop_front(), d.pop_front());
            }
            for k in 0..pushes {
                f.push_back(step * 8 + k);
                d.push_back(step * 8 + k);
            }
            assert_eq!(f.len(), d.len());
            assert_eq!(f.is_empty(), d.is_empty());
            assert_eq!(f.front(), d.front());
            assert!(f.as_mut_slice().iter().eq(d.iter()));
        }
    }
}
