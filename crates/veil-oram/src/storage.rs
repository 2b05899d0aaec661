//! Untrusted storage: fixed-size slots in numbered regions, plus small named metadata records.
//!
//! Everything here is the adversary's: it sees (and may change) every byte and every call.
//! Each backend can record its access log, which is exactly the adversary's view that the
//! obliviousness tests examine.

use crate::error::{OramError, Result};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Which trusted component issued a request (the enclaves are separate processes in PRO-ORAM,
/// so the adversary can tell them apart).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Actor {
    Init,
    Access,
    Shuffle,
    PathOram,
    Plain,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Op {
    Read,
    Write,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogEntry {
    pub actor: Actor,
    pub op: Op,
    pub region: u32,
    pub index: u64,
}

/// Byte and time counters, plus the optional access log.
#[derive(Default)]
pub struct AccessLog {
    enabled: AtomicBool,
    entries: Mutex<Vec<LogEntry>>,
    pub bytes_read: AtomicU64,
    pub bytes_written: AtomicU64,
    pub io_ns: AtomicU64,
}

impl AccessLog {
    pub fn set_enabled(&self, on: bool) {
        self.enabled.store(on, Ordering::SeqCst);
    }
    fn record(&self, actor: Actor, op: Op, region: u32, index: u64, bytes: usize, t0: Instant) {
        self.count(actor, op, region, index, bytes, t0.elapsed())
    }
    /// `record` with the time already known.
    fn count(&self, actor: Actor, op: Op, region: u32, index: u64, bytes: usize, took: Duration) {
        if !took.is_zero() {
            self.io_ns.fetch_add(took.as_nanos() as u64, Ordering::Relaxed);
        }
        match op {
            Op::Read => self.bytes_read.fetch_add(bytes as u64, Ordering::Relaxed),
            Op::Write => self.bytes_written.fetch_add(bytes as u64, Ordering::Relaxed),
        };
        if self.enabled.load(Ordering::Relaxed) {
            self.entries.lock().unwrap().push(LogEntry { actor, op, region, index });
        }
    }
    /// For backends outside this module.
    pub fn record_pub(&self, actor: Actor, op: Op, region: u32, index: u64, bytes: usize, t0: Instant) {
        self.record(actor, op, region, index, bytes, t0)
    }
    /// Takes the entries recorded so far.
    pub fn drain(&self) -> Vec<LogEntry> {
        std::mem::take(&mut *self.entries.lock().unwrap())
    }
}

pub trait Storage: Send + Sync {
    fn slot_size(&self) -> usize;
    fn region_slots(&self, region: u32) -> u64;
    /// Fills `buf` (one slot) with the stored bytes; a never-written slot reads as zeros.
    fn read(&self, actor: Actor, region: u32, index: u64, buf: &mut [u8]) -> Result<()>;
    fn write(&self, actor: Actor, region: u32, index: u64, data: &[u8]) -> Result<()>;
    /// Lends one slot's stored bytes to `f`. Backends that hold slots in memory lend them in
    /// place, so that a caller decrypting out of place never copies the ciphertext first.
    fn read_with(&self, actor: Actor, region: u32, index: u64, f: &mut dyn FnMut(&[u8]) -> Result<()>) -> Result<()> {
        with_scratch(self.slot_size(), |b| {
            self.read(actor, region, index, b)?;
            f(b)
        })
    }
    /// Lets `f` fill one slot, then stores it: in place where slots are in memory, so a
    /// caller encrypting out of place writes its ciphertext straight into storage.
    fn write_with(&self, actor: Actor, region: u32, index: u64, f: &mut dyn FnMut(&mut [u8]) -> Result<()>) -> Result<()> {
        with_scratch(self.slot_size(), |b| {
            f(b)?;
            self.write(actor, region, index, b)
        })
    }
    /// Makes every completed write durable.
    fn sync(&self) -> Result<()>;
    /// Makes the completed writes to one region durable.
    fn sync_region(&self, _region: u32) -> Result<()> {
        self.sync()
    }
    /// Replaces a metadata record atomically and durably (all of the new value or all of the old).
    fn put_meta(&self, name: &str, value: &[u8]) -> Result<()>;
    fn get_meta(&self, name: &str) -> Result<Option<Vec<u8>>>;
    fn log(&self) -> &AccessLog;
    /// The adversary's write access, for tamper tests: flips one bit of a stored slot.
    fn flip_bit(&self, region: u32, index: u64, bit: usize) -> Result<()> {
        let mut b = vec![0u8; self.slot_size()];
        self.read(Actor::Init, region, index, &mut b)?;
        let at = bit / 8 % b.len();
        b[at] ^= 1 << (bit % 8);
        self.write(Actor::Init, region, index, &b)
    }
}

fn check(slot_size: usize, slots: &[u64], region: u32, index: u64, len: usize) -> Result<()> {
    let n = *slots.get(region as usize).ok_or_else(|| OramError::Io(format!("no region {region}")))?;
    if index >= n {
        return Err(OramError::Io(format!("slot {index} outside region {region} of {n} slots")));
    }
    if len != slot_size {
        return Err(OramError::Io(format!("buffer of {len} bytes for slots of {slot_size}")));
    }
    Ok(())
}

/// Runs `f` on this thread's scratch slot of `len` bytes: the default `read_with` and
/// `write_with` of backends that cannot lend their slots in place go through it, without an
/// allocation per access. Not re-entrant: `f` must not use storage on this thread.
fn with_scratch<R>(len: usize, f: impl FnOnce(&mut [u8]) -> R) -> R {
    thread_local!(static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) });
    SCRATCH.with(|s| {
        let mut b = s.borrow_mut();
        b.resize(len, 0);
        f(&mut b)
    })
}

/// Copies a slot out to untrusted memory with non-temporal stores: nothing reads it back soon,
/// so this skips reading the destination into the cache first and keeps the private buffers
/// cached.
fn copy_streaming(dst: &mut [u8], src: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_sfence, _mm_stream_si128};
        #[allow(clippy::manual_is_multiple_of)] // is_multiple_of needs Rust 1.87; the workspace says 1.75
        if dst.len() == src.len() && (dst.as_ptr() as usize) % 16 == 0 {
            let n = dst.len() / 16 * 16;
            // SAFETY: SSE2 is part of x86_64; every 16-byte access is inside both slices
            // (i + 16 <= n <= len) and the destination is 16-byte aligned as checked above.
            unsafe {
                let mut i = 0;
                while i < n {
                    let v = _mm_loadu_si128(src.as_ptr().add(i) as *const __m128i);
                    _mm_stream_si128(dst.as_mut_ptr().add(i) as *mut __m128i, v);
                    i += 16;
                }
                _mm_sfence();
            }
            dst[n..].copy_from_slice(&src[n..]);
            return;
        }
    }
    dst.copy_from_slice(src);
}

/// One region of untrusted RAM: an anonymous mapping of all its slots, backed by transparent
/// huge pages where the kernel allows. Pages are only committed when first written (a Path ORAM
/// tree is mostly empty at the start); a never-written slot reads as zeros. Huge pages matter
/// here: the shuffle streams through gigabytes per second, and with 4 KB pages every 256 KB
/// slot costs 64 TLB misses and the kernel's page scanners have 2^18 entries per GiB to walk.
struct Region {
    mem: *mut u8,
    len: usize,
    /// one lock per slot: a slot's bytes are only touched under its lock
    locks: Vec<Mutex<()>>,
}

// SAFETY: the mapping is owned by the region and every access to a slot's bytes holds that
// slot's lock, so no two threads touch the same bytes at once.
unsafe impl Send for Region {}
unsafe impl Sync for Region {}

impl Region {
    fn new(slot_size: usize, slots: u64) -> Self {
        let len = slot_size.checked_mul(slots as usize).expect("region size overflows");
        let mem = if len == 0 {
            std::ptr::NonNull::<u8>::dangling().as_ptr()
        } else {
            // SAFETY: a fresh private anonymous mapping; nothing else refers to it.
            unsafe {
                let p = libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                    -1,
                    0,
                );
                assert!(p != libc::MAP_FAILED, "cannot map {len} bytes of memory for a storage region");
                libc::madvise(p, len, libc::MADV_HUGEPAGE);
                p as *mut u8
            }
        };
        Self { mem, len, locks: (0..slots).map(|_| Mutex::new(())).collect() }
    }
    /// The slot's bytes; the caller holds the slot's lock.
    #[allow(clippy::mut_from_ref)]
    unsafe fn slot(&self, index: u64, slot_size: usize) -> &mut [u8] {
        std::slice::from_raw_parts_mut(self.mem.add(index as usize * slot_size), slot_size)
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        if self.len > 0 {
            // SAFETY: mapped in `new` with this length; the region is not used after this.
            unsafe {
                libc::munmap(self.mem as *mut libc::c_void, self.len);
            }
        }
    }
}

/// Slots in RAM (see `Region`).
pub struct MemoryStorage {
    slot_size: usize,
    slots: Vec<u64>,
    regions: Vec<Region>,
    meta: Mutex<HashMap<String, Vec<u8>>>,
    log: AccessLog,
}

impl MemoryStorage {
    pub fn new(slot_size: usize, region_slots: &[u64]) -> Self {
        let regions = region_slots.iter().map(|&n| Region::new(slot_size, n)).collect();
        Self { slot_size, slots: region_slots.to_vec(), regions, meta: Mutex::default(), log: AccessLog::default() }
    }
}

impl MemoryStorage {
    /// Runs `f` on a slot's bytes in place, under the slot's lock, and logs the access.
    fn lend(&self, actor: Actor, op: Op, region: u32, index: u64, f: &mut dyn FnMut(&mut [u8]) -> Result<()>) -> Result<()> {
        check(self.slot_size, &self.slots, region, index, self.slot_size)?;
        let r = &self.regions[region as usize];
        let lock = &r.locks[index as usize];
        // the storage cost is the lock wait only: the caller's work on the bytes is its own.
        // Uncontended (the shuffle and the requests never touch one slot at once) there is no
        // wait to time: two clock reads per slot were a tenth of the shuffle's time at 4 KB.
        let (g, wait) = match lock.try_lock() {
            Ok(g) => (g, Duration::ZERO),
            Err(_) => {
                let t0 = Instant::now();
                let g = lock.lock().unwrap();
                (g, t0.elapsed())
            }
        };
        // SAFETY: as in `read`.
        let out = f(unsafe { r.slot(index, self.slot_size) });
        drop(g);
        self.log.count(actor, op, region, index, self.slot_size, wait);
        out
    }
}

impl Storage for MemoryStorage {
    fn slot_size(&self) -> usize {
        self.slot_size
    }
    fn region_slots(&self, region: u32) -> u64 {
        self.slots.get(region as usize).copied().unwrap_or(0)
    }
    fn read(&self, actor: Actor, region: u32, index: u64, buf: &mut [u8]) -> Result<()> {
        check(self.slot_size, &self.slots, region, index, buf.len())?;
        let t0 = Instant::now();
        let r = &self.regions[region as usize];
        let g = r.locks[index as usize].lock().unwrap();
        // SAFETY: `check` bounds the index; the slot's lock is held.
        buf.copy_from_slice(unsafe { r.slot(index, self.slot_size) });
        drop(g);
        self.log.record(actor, Op::Read, region, index, buf.len(), t0);
        Ok(())
    }
    fn write(&self, actor: Actor, region: u32, index: u64, data: &[u8]) -> Result<()> {
        check(self.slot_size, &self.slots, region, index, data.len())?;
        let t0 = Instant::now();
        let r = &self.regions[region as usize];
        let g = r.locks[index as usize].lock().unwrap();
        // SAFETY: as in `read`.
        copy_streaming(unsafe { r.slot(index, self.slot_size) }, data);
        drop(g);
        self.log.record(actor, Op::Write, region, index, data.len(), t0);
        Ok(())
    }
    fn read_with(&self, actor: Actor, region: u32, index: u64, f: &mut dyn FnMut(&[u8]) -> Result<()>) -> Result<()> {
        self.lend(actor, Op::Read, region, index, &mut |slot| f(slot))
    }
    fn write_with(&self, actor: Actor, region: u32, index: u64, f: &mut dyn FnMut(&mut [u8]) -> Result<()>) -> Result<()> {
        self.lend(actor, Op::Write, region, index, f)
    }
    fn sync(&self) -> Result<()> {
        Ok(())
    }
    fn put_meta(&self, name: &str, value: &[u8]) -> Result<()> {
        self.meta.lock().unwrap().insert(name.to_string(), value.to_vec());
        Ok(())
    }
    fn get_meta(&self, name: &str) -> Result<Option<Vec<u8>>> {
        Ok(self.meta.lock().unwrap().get(name).cloned())
    }
    fn log(&self) -> &AccessLog {
        &self.log
    }
}

/// A data directory: one preallocated file per region (`region<r>.dat`, slot i at offset
/// i * slot_size) and one file per metadata record, replaced by write-to-temp, fsync, rename,
/// fsync of the directory, so a crash leaves either the old or the new record.
pub struct FileStorage {
    dir: PathBuf,
    slot_size: usize,
    slots: Vec<u64>,
    files: Vec<File>,
    log: AccessLog,
}

const LAYOUT: &str = "layout.json";

#[derive(Serialize, Deserialize)]
struct Layout {
    slot_size: usize,
    region_slots: Vec<u64>,
}

impl FileStorage {
    /// Creates the directory's region files (sparse) for a new store; fails if one exists.
    pub fn create(dir: &Path, slot_size: usize, region_slots: &[u64]) -> Result<Self> {
        fs::create_dir_all(dir)?;
        if dir.join(LAYOUT).exists() {
            return Err(OramError::Config(format!("{} already holds a store", dir.display())));
        }
        let mut files = Vec::new();
        for (r, &n) in region_slots.iter().enumerate() {
            let f = OpenOptions::new().read(true).write(true).create(true).truncate(true).open(dir.join(format!("region{r}.dat")))?;
            f.set_len(n * slot_size as u64)?;
            files.push(f);
        }
        let s = Self { dir: dir.to_path_buf(), slot_size, slots: region_slots.to_vec(), files, log: AccessLog::default() };
        let layout = serde_json::to_vec(&Layout { slot_size, region_slots: region_slots.to_vec() }).unwrap();
        s.put_meta(LAYOUT, &layout)?;
        Ok(s)
    }

    /// Opens an existing store directory and checks that its region files are whole.
    pub fn open(dir: &Path) -> Result<Self> {
        let raw = fs::read(dir.join(LAYOUT))
            .map_err(|e| OramError::Corrupt(format!("{}: no store here ({e})", dir.display())))?;
        let l: Layout = serde_json::from_slice(&raw)
            .map_err(|e| OramError::Corrupt(format!("{}: {LAYOUT} unreadable ({e})", dir.display())))?;
        let mut files = Vec::new();
        for (r, &n) in l.region_slots.iter().enumerate() {
            let p = dir.join(format!("region{r}.dat"));
            let f = OpenOptions::new().read(true).write(true).open(&p)
                .map_err(|e| OramError::Corrupt(format!("{}: {e}", p.display())))?;
            let want = n * l.slot_size as u64;
            let have = f.metadata()?.len();
            if have != want {
                return Err(OramError::Corrupt(format!("{}: {have} bytes, expected {want}", p.display())));
            }
            files.push(f);
        }
        Ok(Self { dir: dir.to_path_buf(), slot_size: l.slot_size, slots: l.region_slots, files, log: AccessLog::default() })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)?.sync_all()?;
    Ok(())
}

impl Storage for FileStorage {
    fn slot_size(&self) -> usize {
        self.slot_size
    }
    fn region_slots(&self, region: u32) -> u64 {
        self.slots.get(region as usize).copied().unwrap_or(0)
    }
    fn read(&self, actor: Actor, region: u32, index: u64, buf: &mut [u8]) -> Result<()> {
        check(self.slot_size, &self.slots, region, index, buf.len())?;
        let t0 = Instant::now();
        self.files[region as usize].read_exact_at(buf, index * self.slot_size as u64)?;
        self.log.record(actor, Op::Read, region, index, buf.len(), t0);
        Ok(())
    }
    fn write(&self, actor: Actor, region: u32, index: u64, data: &[u8]) -> Result<()> {
        check(self.slot_size, &self.slots, region, index, data.len())?;
        let t0 = Instant::now();
        self.files[region as usize].write_all_at(data, index * self.slot_size as u64)?;
        self.log.record(actor, Op::Write, region, index, data.len(), t0);
        Ok(())
    }
    fn sync(&self) -> Result<()> {
        for f in &self.files {
            f.sync_data()?;
        }
        Ok(())
    }
    fn sync_region(&self, region: u32) -> Result<()> {
        match self.files.get(region as usize) {
            Some(f) => Ok(f.sync_data()?),
            None => Err(OramError::Io(format!("no region {region}"))),
        }
    }
    fn put_meta(&self, name: &str, value: &[u8]) -> Result<()> {
        let tmp = self.dir.join(format!(".{name}.tmp"));
        {
            let mut f = File::create(&tmp)?;
            std::io::Write::write_all(&mut f, value)?;
            f.sync_all()?;
        }
        fs::rename(&tmp, self.dir.join(name))?;
        sync_dir(&self.dir)
    }
    fn get_meta(&self, name: &str) -> Result<Option<Vec<u8>>> {
        match fs::read(self.dir.join(name)) {
            Ok(v) => Ok(Some(v)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
    fn log(&self) -> &AccessLog {
        &self.log
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exercise(s: &dyn Storage) {
        s.log().set_enabled(true);
        let a = vec![7u8; 32];
        s.write(Actor::Init, 1, 3, &a).unwrap();
        let mut b = vec![0u8; 32];
        s.read(Actor::Access, 1, 3, &mut b).unwrap();
        assert_eq!(a, b);
        s.read(Actor::Access, 0, 0, &mut b).unwrap();
        assert_eq!(b, vec![0u8; 32]);
        assert!(s.read(Actor::Access, 1, 4, &mut b).is_err());
        assert!(s.read(Actor::Access, 2, 0, &mut b).is_err());
        s.put_meta("m", b"one").unwrap();
        s.put_meta("m", b"two").unwrap();
        assert_eq!(s.get_meta("m").unwrap().unwrap(), b"two");
        assert_eq!(s.get_meta("absent").unwrap(), None);
        let log = s.log().drain();
        assert_eq!(log.len(), 3);
        assert_eq!(log[1], LogEntry { actor: Actor::Access, op: Op::Read, region: 1, index: 3 });
    }

    #[test]
    fn memory_backend() {
        exercise(&MemoryStorage::new(32, &[2, 4]));
    }

    #[test]
    fn file_backend_persists() {
        let dir = std::env::temp_dir().join(format!("veil-oram-st-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        exercise(&FileStorage::create(&dir, 32, &[2, 4]).unwrap());
        assert!(FileStorage::create(&dir, 32, &[2, 4]).is_err());
        let s = FileStorage::open(&dir).unwrap();
        let mut b = vec![0u8; 32];
        s.read(Actor::Access, 1, 3, &mut b).unwrap();
        assert_eq!(b, vec![7u8; 32]);
        // A truncated region file is reported, not read past.
        OpenOptions::new().write(true).open(dir.join("region1.dat")).unwrap().set_len(10).unwrap();
        assert!(matches!(FileStorage::open(&dir), Err(OramError::Corrupt(_))));
        fs::remove_dir_all(&dir).unwrap();
    }
}
