//! Redis as the remote untrusted store a deployment would use: one key per slot
//! (`<prefix>:r<region>:<index>`) and per metadata record (`<prefix>:m:<name>`), spoken over
//! RESP with a small connection pool so the shuffle's threads each have a connection.
//! Durability is Redis's (appendonly with fsync gives it); SET of one key is atomic.

use crate::error::{OramError, Result};
use crate::storage::{AccessLog, Actor, Op, Storage};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::Mutex;
use std::net::ToSocketAddrs;
use std::time::{Duration, Instant};

const LAYOUT: &str = "layout";

/// The longest a connection attempt may take: an unreachable host is an outage, not a hang.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// The longest one read or write on the socket may stall: a Redis that accepts and never
/// answers (hung, paused, a dead peer behind a live proxy) fails the call within this, and the
/// request gets a storage-failure reply instead of waiting for the request timeout. A whole
/// 64 MiB slot moves within it on any usable link, since it bounds each stall, not the value.
pub const IO_TIMEOUT: Duration = Duration::from_secs(5);

struct Conn {
    r: BufReader<TcpStream>,
    w: TcpStream,
}

enum Reply {
    Ok,
    Nil,
    Bulk(Vec<u8>),
    Int,
}

impl Conn {
    fn open(addr: &str) -> Result<Self> {
        let e = |e: std::io::Error| OramError::Io(format!("redis at {addr}: {e}"));
        let mut last = OramError::Io(format!("redis at {addr}: no address"));
        let mut sock = None;
        for a in addr.to_socket_addrs().map_err(e)? {
            match TcpStream::connect_timeout(&a, CONNECT_TIMEOUT) {
                Ok(s) => {
                    sock = Some(s);
                    break;
                }
                Err(x) => last = e(x),
            }
        }
        let s = sock.ok_or(last)?;
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(IO_TIMEOUT))?;
        s.set_write_timeout(Some(IO_TIMEOUT))?;
        Ok(Self { r: BufReader::with_capacity(1 << 20, s.try_clone()?), w: s })
    }

    fn cmd(&mut self, args: &[&[u8]]) -> Result<Reply> {
        let mut head = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            head.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            if a.len() > 4096 {
                // big values go straight from the caller's buffer
                self.w.write_all(&head)?;
                self.w.write_all(a)?;
                head.clear();
                head.extend_from_slice(b"\r\n");
            } else {
                head.extend_from_slice(a);
                head.extend_from_slice(b"\r\n");
            }
        }
        self.w.write_all(&head)?;
        self.reply()
    }

    fn reply(&mut self) -> Result<Reply> {
        let mut line = Vec::new();
        self.r.read_until(b'\n', &mut line).map_err(timed_out)?;
        if line.len() < 3 {
            return Err(OramError::Io("redis: connection closed".into()));
        }
        let body = std::str::from_utf8(&line[1..line.len() - 2]).map_err(|_| OramError::Io("redis: bad reply".into()))?;
        match line[0] {
            b'+' => Ok(Reply::Ok),
            b'-' => Err(OramError::Io(format!("redis: {body}"))),
            b':' => Ok(Reply::Int),
            b'$' => {
                let n: i64 = body.parse().map_err(|_| OramError::Io("redis: bad length".into()))?;
                if n < 0 {
                    return Ok(Reply::Nil);
                }
                let mut v = vec![0u8; n as usize + 2];
                self.r.read_exact(&mut v).map_err(timed_out)?;
                v.truncate(n as usize);
                Ok(Reply::Bulk(v))
            }
            _ => Err(OramError::Io(format!("redis: unexpected reply {body}"))),
        }
    }
}

/// A socket timeout said as what it is (the OS says "Resource temporarily unavailable").
fn timed_out(e: std::io::Error) -> OramError {
    match e.kind() {
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
            OramError::Io(format!("redis: no reply within {} s", IO_TIMEOUT.as_secs()))
        }
        _ => OramError::Io(format!("redis: {e}")),
    }
}

pub struct RedisStorage {
    addr: String,
    prefix: String,
    slot_size: usize,
    slots: Vec<u64>,
    pool: Mutex<Vec<Conn>>,
    log: AccessLog,
}

impl RedisStorage {
    /// Connects to `addr` (host:port); keys live under `prefix`. `region_slots` sizes the regions.
    pub fn connect(addr: &str, prefix: &str, slot_size: usize, region_slots: &[u64]) -> Result<Self> {
        let me = Self {
            addr: addr.to_string(),
            prefix: prefix.to_string(),
            slot_size,
            slots: region_slots.to_vec(),
            pool: Mutex::new(Vec::new()),
            log: AccessLog::default(),
        };
        let mut c = me.conn()?;
        match c.cmd(&[b"PING"])? {
            Reply::Ok => {}
            _ => return Err(OramError::Io(format!("redis at {addr}: no PONG"))),
        }
        me.give(c);
        Ok(me)
    }

    /// A new store: records the layout under the prefix; fails if one is there already.
    pub fn create(addr: &str, prefix: &str, slot_size: usize, region_slots: &[u64]) -> Result<Self> {
        let me = Self::connect(addr, prefix, slot_size, region_slots)?;
        if me.get_meta(LAYOUT)?.is_some() {
            return Err(OramError::Config(format!("redis {addr} already holds a store under '{prefix}'")));
        }
        let layout = serde_json::json!({"slot_size": slot_size, "region_slots": region_slots});
        me.put_meta(LAYOUT, layout.to_string().as_bytes())?;
        Ok(me)
    }

    /// An existing store under `prefix`, sized from its recorded layout.
    pub fn open(addr: &str, prefix: &str) -> Result<Self> {
        let probe = Self::connect(addr, prefix, 0, &[])?;
        let raw = probe
            .get_meta(LAYOUT)?
            .ok_or_else(|| OramError::Corrupt(format!("redis {addr}: no store under '{prefix}'")))?;
        let v: serde_json::Value = serde_json::from_slice(&raw)
            .map_err(|e| OramError::Corrupt(format!("redis {addr}: layout unreadable ({e})")))?;
        let slot = v["slot_size"].as_u64().ok_or_else(|| OramError::Corrupt("redis layout: slot_size".into()))?;
        let regions: Vec<u64> = v["region_slots"]
            .as_array()
            .map(|a| a.iter().filter_map(|x| x.as_u64()).collect())
            .ok_or_else(|| OramError::Corrupt("redis layout: region_slots".into()))?;
        Self::connect(addr, prefix, slot as usize, &regions)
    }

    fn conn(&self) -> Result<Conn> {
        if let Some(c) = self.pool.lock().unwrap().pop() {
            return Ok(c);
        }
        Conn::open(&self.addr)
    }

    fn give(&self, c: Conn) {
        self.pool.lock().unwrap().push(c);
    }

    fn with<T>(&self, f: impl FnOnce(&mut Conn) -> Result<T>) -> Result<T> {
        let mut c = self.conn()?;
        let r = f(&mut c);
        if r.is_ok() {
            self.give(c); // a failed connection is dropped, not reused mid-reply
        }
        r
    }

    fn key(&self, region: u32, index: u64) -> Vec<u8> {
        format!("{}:r{region}:{index}", self.prefix).into_bytes()
    }

    fn check(&self, region: u32, index: u64, len: usize) -> Result<()> {
        let n = *self.slots.get(region as usize).ok_or_else(|| OramError::Io(format!("no region {region}")))?;
        if index >= n || len != self.slot_size {
            return Err(OramError::Io(format!("slot {index} of region {region} out of range or wrong size")));
        }
        Ok(())
    }
}

impl Storage for RedisStorage {
    fn slot_size(&self) -> usize {
        self.slot_size
    }
    fn region_slots(&self, region: u32) -> u64 {
        self.slots.get(region as usize).copied().unwrap_or(0)
    }
    fn read(&self, actor: Actor, region: u32, index: u64, buf: &mut [u8]) -> Result<()> {
        self.check(region, index, buf.len())?;
        let t0 = Instant::now();
        let k = self.key(region, index);
        match self.with(|c| c.cmd(&[b"GET", &k]))? {
            Reply::Nil => buf.fill(0),
            Reply::Bulk(v) if v.len() == buf.len() => buf.copy_from_slice(&v),
            // a value of the wrong size is the adversary's doing: hand it on so that
            // authentication fails, rather than guessing
            Reply::Bulk(v) => {
                buf.fill(0);
                let n = v.len().min(buf.len());
                buf[..n].copy_from_slice(&v[..n]);
            }
            _ => return Err(OramError::Io("redis: unexpected reply to GET".into())),
        }
        self.log.record_pub(actor, Op::Read, region, index, buf.len(), t0);
        Ok(())
    }
    fn write(&self, actor: Actor, region: u32, index: u64, data: &[u8]) -> Result<()> {
        self.check(region, index, data.len())?;
        let t0 = Instant::now();
        let k = self.key(region, index);
        self.with(|c| c.cmd(&[b"SET", &k, data]))?;
        self.log.record_pub(actor, Op::Write, region, index, data.len(), t0);
        Ok(())
    }
    fn sync(&self) -> Result<()> {
        Ok(())
    }
    fn put_meta(&self, name: &str, value: &[u8]) -> Result<()> {
        let k = format!("{}:m:{name}", self.prefix).into_bytes();
        self.with(|c| c.cmd(&[b"SET", &k, value]))?;
        Ok(())
    }
    fn get_meta(&self, name: &str) -> Result<Option<Vec<u8>>> {
        let k = format!("{}:m:{name}", self.prefix).into_bytes();
        match self.with(|c| c.cmd(&[b"GET", &k]))? {
            Reply::Bulk(v) => Ok(Some(v)),
            Reply::Nil => Ok(None),
            Reply::Ok | Reply::Int => Err(OramError::Io("redis: unexpected reply to GET".into())),
        }
    }
    fn log(&self) -> &AccessLog {
        &self.log
    }
}
