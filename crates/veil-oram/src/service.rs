//! The store behind `veil oram init/serve`: a PRO-ORAM over a data directory, built from real
//! files chunked into blocks or from synthetic blocks, with the sealing key beside it.
//!
//! `sealing.key` stands for the enclave's sealing key (on SGX it is derived inside the CPU and
//! never stored); the position map, epoch keys and the file manifest are kept only sealed
//! under it. Everything else in the directory is the untrusted store.

use crate::cacheshuffle::ShuffleKind;
use crate::crypto::{BlockKey, KEY_LEN, TAG_LEN};
use crate::data::synthetic_block;
use crate::error::{OramError, Result};
use crate::proram::{region_slots, ProOram, ProOramConfig, DEFAULT_PACE_MARGIN, DEFAULT_RUN_AHEAD};
use crate::redis::RedisStorage;
use crate::storage::{FileStorage, Storage};
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const KEY_FILE: &str = "sealing.key";
const MANIFEST: &str = "manifest.sealed";
/// Present when the slots live in Redis: {"kind": "redis", "addr": ..., "prefix": ...}.
const BACKEND: &str = "backend.json";

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FileEntry {
    pub name: String,
    pub first_block: u64,
    pub blocks: u64,
    pub bytes: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Manifest {
    pub block_size: usize,
    pub n_blocks: u64,
    /// Empty for a synthetic store.
    pub files: Vec<FileEntry>,
    /// Seed of the synthetic contents (see `data::synthetic_block`).
    pub synthetic_seed: Option<u64>,
    /// The shuffle that builds each next epoch, by registry name. It belongs to the store, not to
    /// one serving process: a restart must resume the shuffle the store was left in. Stores made
    /// before it was recorded use the Clos shuffle.
    #[serde(default = "default_shuffle")]
    pub shuffle: String,
}

fn default_shuffle() -> String {
    ShuffleKind::Clos.name().to_string()
}

fn random_bytes<const N: usize>() -> [u8; N] {
    let mut b = [0u8; N];
    crate::crypto::os_random(&mut b);
    b
}

/// The sealing key's file: `key_file` when given (the key may live outside the data
/// directory, e.g. on another volume), else DATA_DIR/sealing.key.
pub fn key_path(dir: &Path, key_file: Option<&Path>) -> PathBuf {
    key_file.map(Path::to_path_buf).unwrap_or_else(|| dir.join(KEY_FILE))
}

fn load_key(p: &Path) -> Result<BlockKey> {
    let raw = std::fs::read(p).map_err(|e| OramError::Config(format!("sealing key {}: {e}", p.display())))?;
    let k: [u8; KEY_LEN] = raw
        .try_into()
        .map_err(|_| OramError::Corrupt(format!("{}: not a {KEY_LEN}-byte key", p.display())))?;
    Ok(BlockKey::from_bytes(k))
}

fn seal_meta(s: &dyn Storage, key: &BlockKey, name: &str, value: &[u8]) -> Result<()> {
    let nonce = random_bytes::<12>();
    let mut out = nonce.to_vec();
    out.extend(key.seal_vec(nonce, value));
    s.put_meta(name, &out)
}

fn open_meta(s: &dyn Storage, key: &BlockKey, name: &str) -> Result<Vec<u8>> {
    let raw = s.get_meta(name)?.ok_or_else(|| OramError::Corrupt(format!("{name} missing")))?;
    if raw.len() < 12 {
        return Err(OramError::Corrupt(format!("{name} truncated")));
    }
    key.open_vec(raw[..12].try_into().unwrap(), &raw[12..])
        .map_err(|_| OramError::Corrupt(format!("{name} fails authentication")))
}

pub struct Store {
    pub oram: ProOram,
    pub manifest: Manifest,
    pub dir: PathBuf,
}

pub enum Source {
    Files(Vec<PathBuf>),
    Synthetic { n_blocks: u64, seed: u64 },
}

impl Store {
    /// `redis`: keep the slots and records in the Redis server at host:port instead of the
    /// directory (which then holds only the sealing key and where to find the store).
    pub fn init(
        dir: &Path,
        block_size: usize,
        source: Source,
        threads: usize,
        redis: Option<&str>,
        key_file: Option<&Path>,
        shuffle: ShuffleKind,
    ) -> Result<Self> {
        if block_size == 0 || block_size > (64 << 20) {
            return Err(OramError::Config(format!("block size {block_size} must be in 1..=64 MiB")));
        }
        if dir.join("layout.json").exists() || dir.join(BACKEND).exists() {
            return Err(OramError::Config(format!("{} already holds a store", dir.display())));
        }
        let (manifest, handles) = match &source {
            Source::Synthetic { n_blocks, seed } => {
                (Manifest { block_size, n_blocks: *n_blocks, files: vec![], synthetic_seed: Some(*seed), shuffle: shuffle.name().into() }, vec![])
            }
            Source::Files(paths) => {
                if paths.is_empty() {
                    return Err(OramError::Config("no input files".into()));
                }
                let mut files = Vec::new();
                let mut handles = Vec::new();
                let mut next = 0u64;
                for p in paths {
                    let f = File::open(p).map_err(|e| OramError::Config(format!("{}: {e}", p.display())))?;
                    let bytes = f.metadata()?.len();
                    let blocks = bytes.div_ceil(block_size as u64).max(1);
                    files.push(FileEntry { name: p.display().to_string(), first_block: next, blocks, bytes });
                    handles.push(f);
                    next += blocks;
                }
                (Manifest { block_size, n_blocks: next, files, synthetic_seed: None, shuffle: shuffle.name().into() }, handles)
            }
        };
        std::fs::create_dir_all(dir)?;
        let slots = region_slots(manifest.n_blocks, DEFAULT_RUN_AHEAD)?;
        let st: Arc<dyn Storage> = match redis {
            None => Arc::new(FileStorage::create(dir, block_size + TAG_LEN, &slots)?),
            Some(addr) => {
                let prefix = format!("veil-oram-{}", hex(&random_bytes::<8>()));
                let s = RedisStorage::create(addr, &prefix, block_size + TAG_LEN, &slots)?;
                let b = serde_json::json!({"kind": "redis", "addr": addr, "prefix": prefix});
                std::fs::write(dir.join(BACKEND), b.to_string())?;
                Arc::new(s)
            }
        };
        let key_path = key_path(dir, key_file);
        if key_path.exists() {
            return Err(OramError::Config(format!("{}: a key is already there", key_path.display())));
        }
        {
            use std::io::Write;
            use std::os::unix::fs::OpenOptionsExt;
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&key_path)
                .map_err(|e| OramError::Config(format!("{}: {e}", key_path.display())))?;
            f.write_all(&random_bytes::<KEY_LEN>())?;
            f.sync_all()?;
        }
        let master = load_key(&key_path)?;
        seal_meta(&*st, &master, MANIFEST, &serde_json::to_vec(&manifest).unwrap())?;
        let m2 = manifest.clone();
        let fill = move |i: u64, buf: &mut [u8]| {
            if let Some(seed) = m2.synthetic_seed {
                synthetic_block(seed, i, buf);
                return;
            }
            buf.fill(0);
            let k = m2.files.partition_point(|e| e.first_block + e.blocks <= i);
            let e = &m2.files[k];
            let off = (i - e.first_block) * block_size as u64;
            let len = (e.bytes.saturating_sub(off)).min(block_size as u64) as usize;
            // a read error leaves zeros; the manifest sizes were checked when it was built
            let _ = handles[k].read_exact_at(&mut buf[..len], off);
        };
        let cfg = ProOramConfig { block_size, threads, seed: None, pace: true, pace_margin: DEFAULT_PACE_MARGIN, shuffle_idle: false, epoch_len: None, shuffle };
        let oram = ProOram::create(st, master, manifest.n_blocks, cfg, &fill)?;
        Ok(Self { oram, manifest, dir: dir.to_path_buf() })
    }

    pub fn open(dir: &Path, threads: usize, key_file: Option<&Path>) -> Result<Self> {
        let st: Arc<dyn Storage> = match std::fs::read(dir.join(BACKEND)) {
            Err(_) => Arc::new(FileStorage::open(dir)?),
            Ok(raw) => {
                let v: serde_json::Value = serde_json::from_slice(&raw)
                    .map_err(|e| OramError::Corrupt(format!("{BACKEND}: {e}")))?;
                let (Some(addr), Some(prefix)) = (v["addr"].as_str(), v["prefix"].as_str()) else {
                    return Err(OramError::Corrupt(format!("{BACKEND}: addr and prefix expected")));
                };
                Arc::new(RedisStorage::open(addr, prefix)?)
            }
        };
        let master = load_key(&key_path(dir, key_file))?;
        let manifest: Manifest = serde_json::from_slice(&open_meta(&*st, &master, MANIFEST)?)
            .map_err(|e| OramError::Corrupt(format!("manifest unreadable: {e}")))?;
        let shuffle = ShuffleKind::from_name(&manifest.shuffle)
            .map_err(|_| OramError::Corrupt(format!("manifest names an unknown shuffle {:?}", manifest.shuffle)))?;
        let cfg = ProOramConfig { block_size: manifest.block_size, threads, seed: None, pace: true, pace_margin: DEFAULT_PACE_MARGIN, shuffle_idle: false, epoch_len: None, shuffle };
        let oram = ProOram::open(st, master, cfg)?;
        Ok(Self { oram, manifest, dir: dir.to_path_buf() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manifest_from_before_the_shuffle_was_recorded_reads_as_clos() {
        let old = r#"{"block_size":64,"n_blocks":8,"files":[],"synthetic_seed":3}"#;
        let m: Manifest = serde_json::from_str(old).unwrap();
        assert_eq!(ShuffleKind::from_name(&m.shuffle).unwrap(), ShuffleKind::Clos);
    }

    #[test]
    fn a_store_reopens_with_the_shuffle_it_was_made_with() {
        let dir = std::env::temp_dir().join(format!("veil-oram-svc-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let src = Source::Synthetic { n_blocks: 100, seed: 5 };
        let s = Store::init(&dir, 64, src, 1, None, None, ShuffleKind::Cache).unwrap();
        for i in 0..40 {
            assert_eq!(s.oram.read(i % 100).unwrap(), synthetic(5, i % 100));
        }
        drop(s);
        let s = Store::open(&dir, 1, None).unwrap();
        assert_eq!(s.manifest.shuffle, "cache");
        for i in 0..40 {
            assert_eq!(s.oram.read(i % 100).unwrap(), synthetic(5, i % 100));
        }
        assert!(s.oram.stats().cache_shuffles > 0, "the reopened store shuffles with the cache shuffle");
        drop(s);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn synthetic(seed: u64, i: u64) -> Vec<u8> {
        let mut b = vec![0u8; 64];
        synthetic_block(seed, i, &mut b);
        b
    }
}
