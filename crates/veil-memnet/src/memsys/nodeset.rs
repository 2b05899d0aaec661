//! A set of node numbers walked in ascending order (the nodes whose injection port has work).

#[derive(Clone, Debug, Default)]
pub struct NodeSet {
    words: Vec<u64>,
}

impl NodeSet {
    pub fn new(nodes: usize) -> Self {
        Self { words: vec![0; nodes.div_ceil(64)] }
    }

    pub fn insert(&mut self, n: usize) {
        self.words[n / 64] |= 1 << (n % 64);
    }

    pub fn clear(&mut self, n: usize) {
        self.words[n / 64] &= !(1 << (n % 64));
    }

    /// The smallest member >= `n`, read from the set as it is now (members added behind the
    /// walk's position are seen).
    pub fn next_from(&self, n: usize) -> Option<usize> {
        let mut w = n / 64;
        let mut bits = *self.words.get(w)? & (!0u64 << (n % 64));
        loop {
            if bits != 0 {
                return Some(w * 64 + bits.trailing_zeros() as usize);
            }
            w += 1;
            bits = *self.words.get(w)?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::NodeSet;

    #[test]
    fn walks_members_in_order() {
        let mut s = NodeSet::new(200);
        for n in [3, 64, 65, 130, 199] {
            s.insert(n);
        }
        s.clear(65);
        let mut seen = Vec::new();
        let mut n = 0;
        while let Some(m) = s.next_from(n) {
            seen.push(m);
            n = m + 1;
        }
        assert_eq!(seen, [3, 64, 130, 199]);
        assert_eq!(s.next_from(200), None);
    }
}
