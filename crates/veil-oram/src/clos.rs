//! Routing a permutation through a three-stage Clos network of r x c slots.
//!
//! Slots form a grid of r rows and c columns (slot = row * c + col). Any permutation is the
//! product of three stages, each of which only permutes inside groups: inside each row, then
//! inside each column, then inside each row again.
//! Element x (source row u, destination row v) is given a "colour" j in 0..c such that every
//! source row and every destination row uses each colour exactly once: an edge colouring of
//! the c-regular bipartite multigraph rows -> rows, which exists by Koenig's theorem. Stage 1
//! moves x to column j of its row, stage 2 moves it down column j to row v (column j holds
//! one element for each destination row), stage 3 moves it to its final column.
//!
//! The shuffle reads and writes whole groups in a fixed order, so its storage trace is the
//! same for every permutation: this module's output decides only what goes where inside
//! private memory.

/// For each stage, where the element in a slot goes: `stages[s][from] = to`.
pub struct ClosRoute {
    pub rows: usize,
    pub cols: usize,
    pub stages: [Vec<u32>; 3],
}

const NONE: u32 = u32::MAX;

/// `dest[x]` is the final slot of the element that starts in slot x; `dest` must be a
/// permutation of 0..rows*cols.
pub fn route(rows: usize, cols: usize, dest: &[u32]) -> ClosRoute {
    let m = rows * cols;
    assert_eq!(dest.len(), m);
    let (r, c) = (rows, cols);
    // colour tables: left[u*c + j] / right[v*c + j] = element coloured j at that vertex
    let mut left = vec![NONE; m];
    let mut right = vec![NONE; m];
    let mut colour = vec![NONE; m];
    let src_row = |x: usize| x / c;
    let dst_row = |x: usize| dest[x] as usize / c;
    let mut path: Vec<usize> = Vec::new();
    for x in 0..m {
        let (u, v) = (src_row(x), dst_row(x));
        let a = (0..c).find(|&j| left[u * c + j] == NONE).expect("degree c");
        if right[v * c + a] != NONE {
            let b = (0..c).find(|&j| right[v * c + j] == NONE).expect("degree c");
            // Swap colours a and b along the alternating path that leaves v by colour a;
            // it cannot reach u (u has no a-edge), so afterwards a is free at both ends.
            path.clear();
            let (mut at_right, mut vert, mut want) = (true, v, a);
            loop {
                let e = if at_right { right[vert * c + want] } else { left[vert * c + want] };
                if e == NONE {
                    break;
                }
                let e = e as usize;
                path.push(e);
                vert = if at_right { src_row(e) } else { dst_row(e) };
                at_right = !at_right;
                want = if want == a { b } else { a };
            }
            for &e in &path {
                let k = colour[e] as usize;
                left[src_row(e) * c + k] = NONE;
                right[dst_row(e) * c + k] = NONE;
            }
            for &e in &path {
                let k = if colour[e] as usize == a { b } else { a };
                colour[e] = k as u32;
                left[src_row(e) * c + k] = e as u32;
                right[dst_row(e) * c + k] = e as u32;
            }
        }
        colour[x] = a as u32;
        left[u * c + a] = x as u32;
        right[v * c + a] = x as u32;
    }
    let mut s1 = vec![0u32; m];
    let mut s2 = vec![0u32; m];
    let mut s3 = vec![0u32; m];
    for x in 0..m {
        let j = colour[x] as usize;
        let mid1 = src_row(x) * c + j;
        let mid2 = dst_row(x) * c + j;
        s1[x] = mid1 as u32;
        s2[mid1] = mid2 as u32;
        s3[mid2] = dest[x];
    }
    let _ = r;
    ClosRoute { rows, cols, stages: [s1, s2, s3] }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::seq::SliceRandom;
    use rand::SeedableRng;

    fn check(r: usize, c: usize, dest: &[u32]) {
        let rt = route(r, c, dest);
        for (s, st) in rt.stages.iter().enumerate() {
            let mut seen = vec![false; r * c];
            for (from, &to) in st.iter().enumerate() {
                assert!(!seen[to as usize], "stage {s} is not a permutation");
                seen[to as usize] = true;
                let to = to as usize;
                // stages 1 and 3 stay in the row, stage 2 in the column
                if s == 1 {
                    assert_eq!(from % c, to % c);
                } else {
                    assert_eq!(from / c, to / c);
                }
            }
        }
        for x in 0..r * c {
            let y = rt.stages[2][rt.stages[1][rt.stages[0][x] as usize] as usize];
            assert_eq!(y, dest[x]);
        }
    }

    #[test]
    fn routes_random_and_adversarial_permutations() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        for &(r, c) in &[(1, 1), (1, 5), (5, 1), (4, 4), (64, 65), (7, 13), (33, 32)] {
            let mut d: Vec<u32> = (0..(r * c) as u32).collect();
            check(r, c, &d); // identity
            d.reverse();
            check(r, c, &d);
            // transpose-like: every source row scatters to all destination rows
            let t: Vec<u32> = (0..r * c).map(|x| ((x % r) * c + x / r) as u32).collect();
            check(r, c, &t);
            for _ in 0..3 {
                d.shuffle(&mut rng);
                check(r, c, &d);
            }
        }
    }
}
