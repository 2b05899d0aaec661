#![allow(dead_code)]
use std::sync::Arc;
use veil_oram::crypto::{BlockKey, TAG_LEN};
use veil_oram::data::synthetic_block;
use veil_oram::proram::{region_slots, ProOram, ProOramConfig, DEFAULT_PACE_MARGIN, DEFAULT_RUN_AHEAD};
use veil_oram::storage::{MemoryStorage, Storage};

pub const SEED: u64 = 11;

pub fn cfg(block_size: usize, seed: u64) -> ProOramConfig {
    ProOramConfig { block_size, threads: 2, seed: Some(seed), pace: true, pace_margin: DEFAULT_PACE_MARGIN, shuffle_idle: false, epoch_len: None, shuffle: Default::default() }
}

pub fn master() -> BlockKey {
    BlockKey::from_bytes([9u8; 16])
}

pub fn fill(i: u64, b: &mut [u8]) {
    synthetic_block(SEED, i, b)
}

pub fn memory_store(n: u64, bs: usize, seed: u64) -> (ProOram, Arc<dyn Storage>) {
    let st: Arc<dyn Storage> = Arc::new(MemoryStorage::new(bs + TAG_LEN, &region_slots(n, DEFAULT_RUN_AHEAD).unwrap()));
    (ProOram::create(st.clone(), master(), n, cfg(bs, seed), &fill).unwrap(), st)
}

/// Upper tail of chi-square with k degrees of freedom (Wilson-Hilferty normal approximation).
pub fn chi2_sf(x: f64, k: f64) -> f64 {
    let z = ((x / k).powf(1.0 / 3.0) - (1.0 - 2.0 / (9.0 * k))) / (2.0 / (9.0 * k)).sqrt();
    0.5 * erfc(z / std::f64::consts::SQRT_2)
}

fn erfc(x: f64) -> f64 {
    // Numerical Recipes' erfc with fractional error < 1.2e-7
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t * (-z * z - 1.26551223
        + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806
        + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))))).exp();
    if x >= 0.0 { r } else { 2.0 - r }
}

/// Chi-square test of homogeneity between two histograms: p-value.
pub fn homogeneity_p(a: &[u64], b: &[u64]) -> f64 {
    let (na, nb) = (a.iter().sum::<u64>() as f64, b.iter().sum::<u64>() as f64);
    let mut x = 0.0;
    let mut k: f64 = 0.0;
    for (&ai, &bi) in a.iter().zip(b) {
        let t = (ai + bi) as f64;
        if t == 0.0 {
            continue;
        }
        let (ea, eb) = (t * na / (na + nb), t * nb / (na + nb));
        x += (ai as f64 - ea).powi(2) / ea + (bi as f64 - eb).powi(2) / eb;
        k += 1.0;
    }
    chi2_sf(x, (k - 1.0).max(1.0))
}

/// `count` requests of a named pattern over blocks 0..n: "repeat" (block 5 again and again),
/// "sequential" (0, 1, ..., n - 1, 0, ...) or anything else for uniform draws from `rng` (the
/// patterns the view tests set against each other).
pub fn read_pattern(o: &ProOram, pattern: &str, count: u64, n: u64, rng: &mut impl rand::Rng) {
    for k in 0..count {
        let id = match pattern {
            "repeat" => 5,
            "sequential" => k % n,
            _ => rng.gen_range(0..n),
        };
        o.read(id).unwrap();
    }
}
