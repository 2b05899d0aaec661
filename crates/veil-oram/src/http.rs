//! `veil oram serve`: the store behind HTTP/1.1 on hyper + tokio, over TLS (rustls) unless the
//! operator asks for plaintext. The engine stays plain Rust; this module only carries requests
//! to it and sealed replies back.
//!
//! Protocol (version 2; `python/veil/oram/protocol.py` is the client side; the key-derivation
//! labels below kept version 1's names):
//! * `K_auth = HMAC-SHA256(token, "veil-oram/1 auth")`. The token itself never leaves either side.
//! * `POST /session`, body `{"client_pub": hex, "mac": hex}`: an ephemeral X25519 public key and
//!   `HMAC(K_auth, "veil-oram/1 hello" || client_pub)`. The server answers with its own ephemeral
//!   key, a session id and `proof = HMAC(prk, "veil-oram/1 server" || transcript)`, where
//!   `prk = HMAC(K_auth, X25519 shared secret)` and `transcript = client_pub || server_pub || sid`.
//!   The session key is `HMAC(prk, "veil-oram/1 session" || transcript)`: it needs both the token
//!   and an ephemeral private key, so an observer of the handshake (even without TLS) gets neither,
//!   and a replayed hello opens a session nobody can use.
//! * `POST /read`, body `sid (16) || counter (8, big-endian) || AES-256-GCM(id as u64 LE)`: the
//!   counter must grow within a session (replays are refused) and is the nonce, with a direction
//!   byte. The reply is always `AES-256-GCM(status (1) || epoch (8, big-endian) || B bytes)`:
//!   success, unknown block and failed authentication of the storage all look alike on the wire
//!   (same size, same clock). `epoch` is `ProOram::served_epochs` (epochs ended by requests, as
//!   durably recorded), which the client checks on every reply against the highest it has seen:
//!   a store rolled back behind it is refused mid-session too.
//!
//!   Counters are accepted once each within a window of 64 behind the highest (a retried or
//!   reordered read is served; a replay is not).
//!
//! Limits: connections that have not yet proven the token hold places of a small budget of
//! their own, per address and in all, and have 2 s to finish TLS and one authenticated request
//! (`admit`); authenticated connections have the `max_connections` budget, which only token
//! holders can fill. A header-read timeout (slowloris), an idle timeout on the socket, a body
//! timeout and size bound, a request timeout; every error the server itself writes is JSON.

use crate::admit::{Admission, Admit, AdmitConfig, Ticket};
use crate::error::{OramError, Result};
use crate::service::Store;
use crate::session::{Session, Sessions};
use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM};
use aws_lc_rs::agreement::{agree_ephemeral, EphemeralPrivateKey, UnparsedPublicKey, X25519};
use aws_lc_rs::hmac;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Semaphore;

pub const PROTOCOL: &str = "veil-oram/2";
/// Status byte and epoch before the block in a sealed reply.
pub const REPLY_HEAD: usize = 1 + 8;
pub use crate::session::SID_LEN;
/// Shortest access token accepted: 32 characters, 128 bits when they are hex digits as the
/// generated ones are (an offline guess at a shorter one is within reach).
pub const MIN_TOKEN_CHARS: usize = 32;
pub const TAG: usize = 16;
/// sid || counter || sealed u64 id
pub const READ_BODY: usize = SID_LEN + 8 + 8 + TAG;
pub const STATUS_OK: u8 = 0;
pub const STATUS_UNKNOWN: u8 = 1;
pub const STATUS_INTEGRITY: u8 = 2;
pub const STATUS_STORAGE: u8 = 3;
const TLS_CERT: &str = "tls.crt";
const TLS_KEY: &str = "tls.key";
const TLS_FINGERPRINT: &str = "tls.fingerprint";

#[derive(Clone, Debug)]
pub struct ServeConfig {
    pub host: String,
    pub port: u16,
    /// TLS certificate and key (PEM); None serves plaintext HTTP.
    pub tls: Option<(std::path::PathBuf, std::path::PathBuf)>,
    pub token: String,
    pub max_connections: usize,
    pub max_sessions: usize,
    pub max_body: usize,
    pub header_timeout: Duration,
    pub idle_timeout: Duration,
    pub body_timeout: Duration,
    pub request_timeout: Duration,
    /// Emulated link: each reply waits latency + size / bandwidth.
    pub link_mbps: f64,
    pub latency_ms: f64,
    /// What goes to stderr (see `LogLevel`).
    pub log: LogLevel,
    /// The budget of connections that have not proven the token yet.
    pub admit: AdmitConfig,
}

/// The server's log. Nothing it writes at `Info` names a block, slot or position, nor follows
/// requests one by one: a line per failed storage check would tell whoever tampered a slot
/// and can read the log when its block is asked for again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogLevel {
    Off,
    /// The first failed storage check only, without naming anything.
    Info,
    /// Every failed storage check with its block id, region and slot: reveals the access
    /// pattern to whoever reads the log (the CLI asks for an explicit flag and warns).
    Debug,
}

impl ServeConfig {
    pub fn new(token: String) -> Self {
        Self {
            host: "127.0.0.1".into(),
            port: 0,
            tls: None,
            token,
            max_connections: 256,
            max_sessions: 4096,
            max_body: 4096,
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            body_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(60),
            link_mbps: 0.0,
            latency_ms: 0.0,
            log: LogLevel::Info,
            admit: AdmitConfig::default(),
        }
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 || s.len() > 256 {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

/// Writes a fresh self-signed certificate and key into `dir` (key mode 0600) and returns the
/// certificate's SHA-256 fingerprint, which clients pin.
pub fn make_tls_identity(dir: &Path) -> Result<String> {
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string(), "127.0.0.1".to_string()])
        .map_err(|e| OramError::Config(format!("certificate: {e}")))?;
    {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(dir.join(TLS_KEY))?;
        f.write_all(ck.key_pair.serialize_pem().as_bytes())?;
    }
    std::fs::write(dir.join(TLS_CERT), ck.cert.pem())?;
    let fp = hex(aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, ck.cert.der()).as_ref());
    std::fs::write(dir.join(TLS_FINGERPRINT), format!("{fp}\n"))?;
    Ok(fp)
}

/// The certificate and key `make_tls_identity` wrote into `dir`, if present.
pub fn tls_files(dir: &Path) -> Option<(std::path::PathBuf, std::path::PathBuf)> {
    let (c, k) = (dir.join(TLS_CERT), dir.join(TLS_KEY));
    (c.exists() && k.exists()).then_some((c, k))
}

fn tls_acceptor(cert: &Path, key: &Path) -> Result<tokio_rustls::TlsAcceptor> {
    let bad = |p: &Path, e: String| OramError::Config(format!("{}: {e}", p.display()));
    let certs: Vec<_> = rustls_pemfile::certs(&mut std::io::BufReader::new(
        std::fs::File::open(cert).map_err(|e| bad(cert, e.to_string()))?,
    ))
    .collect::<std::result::Result<_, _>>()
    .map_err(|e| bad(cert, e.to_string()))?;
    let key_der = rustls_pemfile::private_key(&mut std::io::BufReader::new(
        std::fs::File::open(key).map_err(|e| bad(key, e.to_string()))?,
    ))
    .map_err(|e| bad(key, e.to_string()))?
    .ok_or_else(|| bad(key, "no private key".into()))?;
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| OramError::Config(format!("TLS: {e}")))?
        .with_no_client_auth()
        .with_single_cert(certs, key_der)
        .map_err(|e| bad(cert, e.to_string()))?;
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(cfg)))
}

struct State {
    store: Arc<Store>,
    cfg: ServeConfig,
    auth: hmac::Key,
    /// A std lock in async code on purpose: it is held only for a map operation, never across an
    /// await or a wait, and nothing that blocks (the engine runs in `spawn_blocking`) takes it.
    sessions: Mutex<Sessions>,
    /// Places for authenticated connections.
    permits: Arc<Semaphore>,
    /// Set after the first failed storage check is logged at `Info`.
    logged_failure: std::sync::atomic::AtomicBool,
    outage: crate::ops::Outage,
    /// What the descriptor limit was raised to, logged once listening (`ops::fit_descriptors`).
    limits_line: String,
}

fn mac(key: &hmac::Key, parts: &[&[u8]]) -> [u8; 32] {
    let mut c = hmac::Context::with_key(key);
    for p in parts {
        c.update(p);
    }
    c.sign().as_ref().try_into().unwrap()
}

/// `K_auth` of the protocol: what both sides derive from the token.
pub fn auth_key(token: &str) -> hmac::Key {
    let k = mac(&hmac::Key::new(hmac::HMAC_SHA256, token.as_bytes()), &[b"veil-oram/1 auth"]);
    hmac::Key::new(hmac::HMAC_SHA256, &k)
}

/// Nonce of message `counter` in direction `dir` (1: client to server, 2: reply).
fn nonce(dir: u8, counter: u64) -> Nonce {
    let mut n = [0u8; 12];
    n[0] = dir;
    n[4..].copy_from_slice(&counter.to_be_bytes());
    Nonce::assume_unique_for_key(n)
}

type Reply = Response<Full<Bytes>>;

fn json_reply(code: StatusCode, body: serde_json::Value, close: bool) -> Reply {
    let mut r = Response::builder()
        .status(code)
        .header("content-type", "application/json")
        .header("cache-control", "no-store");
    if close {
        r = r.header("connection", "close");
    }
    r.body(Full::new(Bytes::from(body.to_string()))).unwrap()
}

fn error(code: StatusCode, kind: &str, msg: impl Into<String>) -> Reply {
    let close = code == StatusCode::PAYLOAD_TOO_LARGE || code == StatusCode::REQUEST_TIMEOUT || code == StatusCode::BAD_REQUEST;
    json_reply(code, serde_json::json!({"error": msg.into(), "code": kind}), close)
}

async fn read_body(st: &State, body: Incoming) -> std::result::Result<Bytes, Reply> {
    let limited = Limited::new(body, st.cfg.max_body);
    match tokio::time::timeout(st.cfg.body_timeout, limited.collect()).await {
        Err(_) => Err(error(StatusCode::REQUEST_TIMEOUT, "timeout", "request body not received in time")),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(error(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_large",
            format!("request body above {} bytes", st.cfg.max_body),
        )),
        Ok(Err(_)) => Err(error(StatusCode::BAD_REQUEST, "malformed", "request body unreadable")),
        Ok(Ok(b)) => Ok(b.to_bytes()),
    }
}

async fn handle(st: Arc<State>, ticket: Arc<Ticket>, req: Request<Incoming>) -> Reply {
    let (parts, body) = req.into_parts();
    let declared = parts.headers.get(hyper::header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > st.cfg.max_body as u64) {
        return error(StatusCode::PAYLOAD_TOO_LARGE, "too_large", format!("request body above {} bytes", st.cfg.max_body));
    }
    let path = parts.uri.path();
    let mut authed = false;
    let reply = match (&parts.method, path) {
        (&Method::GET, "/health") => {
            json_reply(StatusCode::OK, serde_json::json!({"ok": true, "protocol": PROTOCOL}), false)
        }
        (&Method::POST, "/session") => match read_body(&st, body).await {
            Err(r) => r,
            Ok(b) => {
                let (r, a) = new_session(&st, &b);
                authed = a;
                r
            }
        },
        (&Method::POST, "/read") => match read_body(&st, body).await {
            Err(r) => r,
            Ok(b) => {
                let (r, a) = read(&st, &b).await;
                authed = a;
                r
            }
        },
        (_, "/health" | "/session" | "/read") => {
            error(StatusCode::METHOD_NOT_ALLOWED, "method", format!("{} not allowed on {}", parts.method, path))
        }
        _ => {
            let shown: String = path.chars().take(64).collect();
            error(StatusCode::NOT_FOUND, "not_found", format!("no such endpoint: {} {shown}", parts.method))
        }
    };
    if authed && !ticket.promote(&st.permits).await {
        // the line for a place is full: refused at once, and the connection closed
        return json_reply(
            StatusCode::SERVICE_UNAVAILABLE,
            serde_json::json!({"error": "the server is at its connection limit and its queue is full: try again later", "code": "busy"}),
            true,
        );
    }
    let delay = st.cfg.latency_ms / 1e3
        + if st.cfg.link_mbps > 0.0 { hyper::body::Body::size_hint(reply.body()).exact().unwrap_or(0) as f64 * 8.0 / (st.cfg.link_mbps * 1e6) } else { 0.0 };
    if delay > 0.0 {
        tokio::time::sleep(Duration::from_secs_f64(delay)).await;
    }
    reply
}

/// The reply, and whether the hello proved the token.
fn new_session(st: &State, body: &[u8]) -> (Reply, bool) {
    #[derive(serde::Deserialize)]
    struct Hello {
        client_pub: String,
        mac: String,
    }
    let Ok(h) = serde_json::from_slice::<Hello>(body) else {
        return (error(StatusCode::BAD_REQUEST, "malformed", "expected JSON {\"client_pub\": hex, \"mac\": hex}"), false);
    };
    let (Some(cp), Some(m)) = (unhex(&h.client_pub), unhex(&h.mac)) else {
        return (error(StatusCode::BAD_REQUEST, "malformed", "client_pub and mac must be hex"), false);
    };
    if cp.len() != 32 || hmac::verify(&st.auth, &[b"veil-oram/1 hello".as_slice(), &cp].concat(), &m).is_err() {
        return (error(StatusCode::UNAUTHORIZED, "auth", "hello not authenticated: wrong access token"), false);
    }
    if !st.sessions.lock().unwrap().fresh_hello(cp[..].try_into().unwrap()) {
        // not a proof of the token: whoever saw the hello can send it again
        return (error(StatusCode::UNAUTHORIZED, "replay", "hello replayed: refused"), false);
    }
    (open_session(st, &cp), true)
}

fn open_session(st: &State, cp: &[u8]) -> Reply {
    let rng = aws_lc_rs::rand::SystemRandom::new();
    let Ok(sk) = EphemeralPrivateKey::generate(&X25519, &rng) else {
        return error(StatusCode::INTERNAL_SERVER_ERROR, "internal", "key generation failed");
    };
    let sp = sk.compute_public_key().unwrap();
    let mut sid = [0u8; SID_LEN];
    crate::crypto::os_random(&mut sid);
    let transcript = [cp, sp.as_ref(), &sid].concat();
    let derived = agree_ephemeral(sk, UnparsedPublicKey::new(&X25519, cp), (), |shared| {
        let prk = hmac::Key::new(hmac::HMAC_SHA256, &mac(&st.auth, &[shared]));
        Ok((mac(&prk, &[b"veil-oram/1 session", &transcript]), mac(&prk, &[b"veil-oram/1 server", &transcript])))
    });
    let Ok((ks, proof)) = derived else {
        return error(StatusCode::BAD_REQUEST, "malformed", "client_pub is not a usable X25519 key");
    };
    let key = LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &ks).unwrap());
    // the store's shape, file list and epoch, sealed: the observer learns only its length. The
    // epoch lets a client refuse a store rolled back behind one it has already read.
    let m = &st.store.manifest;
    let mut info = serde_json::to_vec(&serde_json::json!({"n_blocks": m.n_blocks, "block_size": m.block_size,
        "files": m.files, "epoch": st.store.oram.served_epochs()}))
    .unwrap();
    key.seal_in_place_append_tag(nonce(3, 0), Aad::from(&sid[..]), &mut info).unwrap();
    st.sessions.lock().unwrap().insert(sid, Session::new(key));
    json_reply(
        StatusCode::OK,
        serde_json::json!({"protocol": PROTOCOL, "session": hex(&sid), "server_pub": hex(sp.as_ref()),
                           "proof": hex(&proof), "info": hex(&info)}),
        false,
    )
}

/// The reply, and whether the request opened under a live session (proof of the token).
async fn read(st: &Arc<State>, body: &[u8]) -> (Reply, bool) {
    if body.len() != READ_BODY {
        return (error(StatusCode::BAD_REQUEST, "malformed", format!("read body must be {READ_BODY} bytes")), false);
    }
    let sid: [u8; SID_LEN] = body[..SID_LEN].try_into().unwrap();
    let ctr = u64::from_be_bytes(body[SID_LEN..SID_LEN + 8].try_into().unwrap());
    let aad = [b"req".as_slice(), &sid, &ctr.to_be_bytes()].concat();
    let id = {
        let mut s = st.sessions.lock().unwrap();
        let Some(sess) = s.map.get_mut(&sid) else {
            return (error(StatusCode::UNAUTHORIZED, "session", "unknown session: POST /session again"), false);
        };
        let mut ct = body[SID_LEN + 8..].to_vec();
        let Ok(pt) = sess.key.open_in_place(nonce(1, ctr), Aad::from(&aad[..]), &mut ct) else {
            return (error(StatusCode::UNAUTHORIZED, "auth", "request not authenticated under this session"), false);
        };
        let id = u64::from_le_bytes(pt[..8].try_into().unwrap());
        if !sess.accept(ctr) {
            return (error(StatusCode::UNAUTHORIZED, "replay", "request counter reused or too old: replay refused"), false);
        }
        id
    };
    let store = st.store.clone();
    let n = store.manifest.n_blocks;
    let b = store.manifest.block_size;
    // The reply buffer is filled by the engine with the same copies whatever happens (see
    // ProOram::read_into); only its first byte differs, and the whole of it is sealed. An
    // unknown id still costs one oblivious request (block 0: a token holder may read it anyway),
    // so it takes the clock's time like any other; "unknown" is said only inside the seal.
    let got = tokio::task::spawn_blocking(move || {
        let mut out = vec![0u8; REPLY_HEAD + b];
        let r = store.oram.read_into(if id < n { id } else { 0 }, &mut out[REPLY_HEAD..]);
        // read after the request: it only grows, so the client sees the latest it can
        out[1..REPLY_HEAD].copy_from_slice(&store.oram.served_epochs().to_be_bytes());
        (out, r)
    })
    .await;
    let (mut out, failure) = match got {
        Ok((mut out, r)) => {
            out[0] = match &r {
                Ok(()) if id < n => STATUS_OK,
                Ok(()) => STATUS_UNKNOWN,
                Err(OramError::Tamper { .. }) => STATUS_INTEGRITY,
                Err(_) => STATUS_STORAGE,
            };
            (out, r.err())
        }
        Err(_) => {
            let mut out = vec![0u8; REPLY_HEAD + b];
            out[0] = STATUS_STORAGE;
            out[1..REPLY_HEAD].copy_from_slice(&st.store.oram.served_epochs().to_be_bytes());
            (out, Some(OramError::Io("request task failed".into())))
        }
    };
    let sealed = {
        let s = st.sessions.lock().unwrap();
        match s.map.get(&sid) {
            Some(sess) => {
                let aad = [b"rep".as_slice(), &sid, &ctr.to_be_bytes()].concat();
                sess.key.seal_in_place_append_tag(nonce(2, ctr), Aad::from(&aad[..]), &mut out).is_ok()
            }
            None => false,
        }
    };
    match failure {
        Some(e) => log_failure(st, id, e),
        None => {
            if let Some(line) = st.outage.served() {
                log_line(st, line);
            }
        }
    }
    if !sealed {
        return (error(StatusCode::UNAUTHORIZED, "session", "unknown session: POST /session again"), true);
    }
    let reply = Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "application/octet-stream")
        .header("cache-control", "no-store")
        .body(Full::new(Bytes::from(out)))
        .unwrap();
    (reply, true)
}

/// Logs a failed request off the reply's path (a detached task: writing the line must not delay
/// this reply more than any other). See `LogLevel` for what each level says.
fn log_failure(st: &Arc<State>, id: u64, e: OramError) {
    use std::sync::atomic::Ordering;
    // a storage error (descriptors, disk, Redis) is an outage, told at its start and its end;
    // only a failed authentication says the store was modified
    if !matches!(e, OramError::Tamper { .. }) {
        let cause = e.to_string();
        if let Some(line) = st.outage.failed(&cause) {
            log_line(st, line);
        }
        if st.cfg.log != LogLevel::Debug {
            return;
        }
    }
    let line = match st.cfg.log {
        LogLevel::Off => return,
        LogLevel::Debug => format!("veil oram serve: debug: block {id}: {e}"),
        LogLevel::Info => {
            if st.logged_failure.swap(true, Ordering::Relaxed) {
                return;
            }
            "veil oram serve: storage failed authentication: the store was modified or damaged; affected \
             requests get an integrity error (further failures are not logged at this level: their times \
             would tell which requests repeat)"
                .to_string()
        }
    };
    log_line(st, line);
}

/// Writes one log line off the reply's path (nothing at `Off`).
fn log_line(st: &State, line: String) {
    if st.cfg.log != LogLevel::Off {
        tokio::task::spawn_blocking(move || eprintln!("{line}"));
    }
}

/// A running server: its address and the means to stop it.
pub struct Server {
    addr: SocketAddr,
    stop: Option<tokio::sync::watch::Sender<bool>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Binds at once (a port in use or a bad host is a configuration error here, not later).
/// The accept queue is the kernel's maximum (somaxconn) rather than std's 128: a burst of
/// sockets that the admission step closes at once must not fill it and make a real client's SYN
/// wait for its 1 s retransmission.
fn bind(cfg: &ServeConfig) -> Result<std::net::TcpListener> {
    use std::net::ToSocketAddrs;
    let bad = |e: std::io::Error| OramError::Config(format!("cannot listen on {}:{}: {e}", cfg.host, cfg.port));
    let addr = (cfg.host.as_str(), cfg.port).to_socket_addrs().map_err(bad)?.next().ok_or_else(|| {
        OramError::Config(format!("cannot listen on {}:{}: no address", cfg.host, cfg.port))
    })?;
    let s = socket2::Socket::new(socket2::Domain::for_address(addr), socket2::Type::STREAM, None).map_err(bad)?;
    s.set_reuse_address(true).map_err(bad)?;
    s.bind(&addr.into()).map_err(bad)?;
    s.listen(4096).map_err(bad)?;
    let l: std::net::TcpListener = s.into();
    l.set_nonblocking(true)?;
    Ok(l)
}

fn state(store: Arc<Store>, mut cfg: ServeConfig) -> Result<(Arc<State>, Option<tokio_rustls::TlsAcceptor>)> {
    check_token(&cfg.token)?;
    // every socket held, parked or authenticated is a descriptor: without enough of them the
    // storage's own opens fail (EMFILE) while sockets pile up
    let limits_line = crate::ops::fit_descriptors(cfg.max_connections, &mut cfg.admit);
    if cfg.tls.is_none() && !is_loopback(&cfg.host) {
        return Err(OramError::Config(format!(
            "plaintext serving on {}: only on a loopback address (without TLS one observed handshake lets \
             anyone test token guesses offline)",
            cfg.host
        )));
    }
    let tls = match &cfg.tls {
        Some((c, k)) => Some(tls_acceptor(c, k)?),
        None => None,
    };
    let auth = auth_key(&cfg.token);
    let sessions = Mutex::new(Sessions::new(cfg.max_sessions));
    let permits = Arc::new(Semaphore::new(cfg.max_connections.max(1)));
    let logged_failure = Default::default();
    Ok((Arc::new(State { store, cfg, auth, sessions, permits, logged_failure, outage: Default::default(), limits_line }), tls))
}

/// Refuses a token shorter than MIN_TOKEN_CHARS.
pub fn check_token(token: &str) -> Result<()> {
    let n = token.chars().count();
    if n < MIN_TOKEN_CHARS {
        return Err(OramError::Config(format!(
            "access token of {n} characters: at least {MIN_TOKEN_CHARS} required (128 bits as hex; \
             'veil oram init' makes one)"
        )));
    }
    Ok(())
}

/// Whether `host` names a loopback address (127.0.0.0/8, ::1 or "localhost").
pub fn is_loopback(host: &str) -> bool {
    host == "localhost" || host.parse::<std::net::IpAddr>().is_ok_and(|a| a.is_loopback())
}

async fn serve_on(
    listener: std::net::TcpListener,
    st: Arc<State>,
    tls: Option<tokio_rustls::TlsAcceptor>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let listener = tokio::net::TcpListener::from_std(listener).expect("a non-blocking listener");
    // only once listening: a start that fails says one thing, its error
    log_line(&st, st.limits_line.clone());
    let admit = Admit::new(st.cfg.admit);
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    loop {
        // Accepting never waits for a place: an unauthenticated socket takes one of the
        // admission budget (or is closed at once), never one of the authenticated connections'.
        let (sock, peer) = tokio::select! {
            a = listener.accept() => match a {
                Ok(a) => a,
                // out of descriptors and the like: wait a little rather than spin
                Err(_) => { tokio::time::sleep(Duration::from_millis(50)).await; continue; }
            },
            _ = stop.changed() => break,
        };
        let ticket = match admit.admit(peer.ip()) {
            Admission::Admit(t) => t,
            Admission::Park(guard) => {
                let park = admit.config().park;
                tokio::spawn(async move {
                    tokio::time::sleep(park).await;
                    let _ = sock.set_zero_linger();
                    drop((sock, guard));
                });
                continue;
            }
            Admission::Reset => {
                // a reset rather than a FIN: no TIME_WAIT left behind per refused socket
                let _ = sock.set_zero_linger();
                continue;
            }
        };
        let _ = sock.set_nodelay(true);
        // the admission table tells idle sockets from connections that have sent something;
        // the idle timeout on reads spares a connection waiting in line for a place (`Heard`)
        let mut io = tokio_io_timeout::TimeoutStream::new(crate::admit::Heard::new(sock, ticket.clone(), Some(st.cfg.idle_timeout)));
        io.set_write_timeout(Some(st.cfg.idle_timeout));
        let (st2, t2) = (st.clone(), ticket.clone());
        let svc = hyper::service::service_fn(move |req| {
            let (st, ticket) = (st2.clone(), t2.clone());
            async move {
                let t = st.cfg.request_timeout;
                Ok::<_, std::convert::Infallible>(match tokio::time::timeout(t, handle(st, ticket, req)).await {
                    Ok(r) => r,
                    Err(_) => error(StatusCode::SERVICE_UNAVAILABLE, "timeout", "request took too long"),
                })
            }
        });
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder.timer(TokioTimer::new()).header_read_timeout(st.cfg.header_timeout).max_buf_size(16 * 1024);
        let watcher = graceful.watcher();
        let tls = tls.clone();
        let deadline = admit.config().deadline;
        tokio::spawn(async move {
            let io = Box::pin(io);
            // connection errors (resets, broken pipes, timeouts) end that connection quietly
            let conn = async move {
                match tls {
                    None => {
                        let _ = watcher.watch(builder.serve_connection(TokioIo::new(io), svc)).await;
                    }
                    Some(acc) => {
                        if let Ok(s) = acc.accept(io).await {
                            let _ = watcher.watch(builder.serve_connection(TokioIo::new(s), svc)).await;
                        }
                    }
                }
            };
            // an unauthenticated connection ends at its deadline or when a newer one takes its
            // place; one that has proven the token (authenticated, or queued for a place) only
            // by the limits above
            let guard = async {
                tokio::select! {
                    _ = ticket.evicted.notified() => {}
                    _ = tokio::time::sleep(deadline) => {}
                }
                if ticket.is_proven() {
                    std::future::pending::<()>().await;
                }
            };
            tokio::select! {
                _ = conn => {}
                _ = guard => {}
            }
            ticket.done();
        });
    }
    drop(listener);
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown()).await;
}

/// How long connections get to finish when the server stops: SIGTERM must stop it within a
/// second whatever the clients do.
const SHUTDOWN_GRACE: Duration = Duration::from_millis(500);

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(512)
        .enable_all()
        .build()
        .map_err(|e| OramError::Io(format!("runtime: {e}")))
}

impl Server {
    /// Starts serving on a thread of its own; `stop` (or drop) shuts it down.
    pub fn start(store: Arc<Store>, cfg: ServeConfig) -> Result<Server> {
        // settings are checked before anything listens
        let (st, tls) = state(store, cfg)?;
        let listener = bind(&st.cfg)?;
        let addr = listener.local_addr()?;
        let rt = runtime()?;
        let (tx, rx) = tokio::sync::watch::channel(false);
        let thread = std::thread::Builder::new()
            .name("veil-oram-http".into())
            .spawn(move || {
                rt.block_on(serve_on(listener, st, tls, rx));
                // a request still inside the engine finishes on its own; nobody waits for it
                rt.shutdown_timeout(Duration::from_millis(100));
            })?;
        Ok(Server { addr, stop: Some(tx), thread: Some(thread) })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn stop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(true);
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// How `serve_until_signal` ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Stopped {
    Interrupt,
    Terminate,
}

/// Serves in the calling thread until SIGINT or SIGTERM, then shuts down gracefully (connections
/// get up to SHUTDOWN_GRACE to finish). `ready` is called with the bound address before the first accept.
pub fn serve_until_signal(store: Arc<Store>, cfg: ServeConfig, ready: impl FnOnce(SocketAddr)) -> Result<Stopped> {
    let (st, tls) = state(store, cfg)?;
    let listener = bind(&st.cfg)?;
    let addr = listener.local_addr()?;
    let rt = runtime()?;
    let how = rt.block_on(async move {
        use tokio::signal::unix::{signal, SignalKind};
        let mut int = signal(SignalKind::interrupt()).map_err(|e| OramError::Io(e.to_string()))?;
        let mut term = signal(SignalKind::terminate()).map_err(|e| OramError::Io(e.to_string()))?;
        let (tx, rx) = tokio::sync::watch::channel(false);
        ready(addr);
        let server = tokio::spawn(serve_on(listener, st, tls, rx));
        let how = tokio::select! {
            _ = int.recv() => Stopped::Interrupt,
            _ = term.recv() => Stopped::Terminate,
        };
        let _ = tx.send(true);
        let _ = server.await;
        Ok(how)
    });
    rt.shutdown_timeout(Duration::from_millis(100));
    how
}
