//! `veil oram serve`: the store behind HTTP/1.1 on hyper + tokio, over TLS (rustls) unless the
//! operator asks for plaintext. The engine stays plain Rust; this module only carries requests
//! to it and sealed replies back.
//!
//! Protocol (version 1; `python/veil/oram/protocol.py` is the client side):
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
//!   byte. The reply is always `AES-256-GCM(status (1) || B bytes)`: success, unknown block and
//!   failed authentication of the storage all look alike on the wire (same size, same clock).
//!
//! Limits: a connection cap (further connections wait in the kernel's backlog), a header-read
//! timeout (slowloris), an idle timeout on the socket, a body timeout and size bound, a request
//! timeout; every error the server itself writes is JSON.

use crate::error::{OramError, Result};
use crate::service::Store;
use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM};
use aws_lc_rs::agreement::{agree_ephemeral, EphemeralPrivateKey, UnparsedPublicKey, X25519};
use aws_lc_rs::hmac;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

pub const PROTOCOL: &str = "veil-oram/1";
pub const SID_LEN: usize = 16;
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
    /// Log tamper details (block, slot) on stderr: the operator's view.
    pub log: bool,
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
            log: true,
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

struct Session {
    key: LessSafeKey,
    /// Highest request counter accepted: a request must carry a larger one.
    last: Option<u64>,
    used: Instant,
}

struct State {
    store: Arc<Store>,
    cfg: ServeConfig,
    auth: hmac::Key,
    sessions: Mutex<HashMap<[u8; SID_LEN], Session>>,
    info: Vec<u8>,
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

async fn handle(st: Arc<State>, req: Request<Incoming>) -> Reply {
    let (parts, body) = req.into_parts();
    let declared = parts.headers.get(hyper::header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > st.cfg.max_body as u64) {
        return error(StatusCode::PAYLOAD_TOO_LARGE, "too_large", format!("request body above {} bytes", st.cfg.max_body));
    }
    let path = parts.uri.path();
    let reply = match (&parts.method, path) {
        (&Method::GET, "/health") => {
            json_reply(StatusCode::OK, serde_json::json!({"ok": true, "protocol": PROTOCOL}), false)
        }
        (&Method::POST, "/session") => match read_body(&st, body).await {
            Err(r) => r,
            Ok(b) => new_session(&st, &b),
        },
        (&Method::POST, "/read") => match read_body(&st, body).await {
            Err(r) => r,
            Ok(b) => read(&st, &b).await,
        },
        (_, "/health" | "/session" | "/read") => {
            error(StatusCode::METHOD_NOT_ALLOWED, "method", format!("{} not allowed on {}", parts.method, path))
        }
        _ => {
            let shown: String = path.chars().take(64).collect();
            error(StatusCode::NOT_FOUND, "not_found", format!("no such endpoint: {} {shown}", parts.method))
        }
    };
    let delay = st.cfg.latency_ms / 1e3
        + if st.cfg.link_mbps > 0.0 { hyper::body::Body::size_hint(reply.body()).exact().unwrap_or(0) as f64 * 8.0 / (st.cfg.link_mbps * 1e6) } else { 0.0 };
    if delay > 0.0 {
        tokio::time::sleep(Duration::from_secs_f64(delay)).await;
    }
    reply
}

fn new_session(st: &State, body: &[u8]) -> Reply {
    #[derive(serde::Deserialize)]
    struct Hello {
        client_pub: String,
        mac: String,
    }
    let Ok(h) = serde_json::from_slice::<Hello>(body) else {
        return error(StatusCode::BAD_REQUEST, "malformed", "expected JSON {\"client_pub\": hex, \"mac\": hex}");
    };
    let (Some(cp), Some(m)) = (unhex(&h.client_pub), unhex(&h.mac)) else {
        return error(StatusCode::BAD_REQUEST, "malformed", "client_pub and mac must be hex");
    };
    if cp.len() != 32 || hmac::verify(&st.auth, &[b"veil-oram/1 hello".as_slice(), &cp].concat(), &m).is_err() {
        return error(StatusCode::UNAUTHORIZED, "auth", "hello not authenticated: wrong access token");
    }
    let rng = aws_lc_rs::rand::SystemRandom::new();
    let Ok(sk) = EphemeralPrivateKey::generate(&X25519, &rng) else {
        return error(StatusCode::INTERNAL_SERVER_ERROR, "internal", "key generation failed");
    };
    let sp = sk.compute_public_key().unwrap();
    let mut sid = [0u8; SID_LEN];
    crate::crypto::os_random(&mut sid);
    let transcript = [cp.as_slice(), sp.as_ref(), &sid].concat();
    let derived = agree_ephemeral(sk, UnparsedPublicKey::new(&X25519, &cp), (), |shared| {
        let prk = hmac::Key::new(hmac::HMAC_SHA256, &mac(&st.auth, &[shared]));
        Ok((mac(&prk, &[b"veil-oram/1 session", &transcript]), mac(&prk, &[b"veil-oram/1 server", &transcript])))
    });
    let Ok((ks, proof)) = derived else {
        return error(StatusCode::BAD_REQUEST, "malformed", "client_pub is not a usable X25519 key");
    };
    let key = LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &ks).unwrap());
    // the store's shape and file list, sealed: the observer learns only its length
    let mut info = st.info.clone();
    key.seal_in_place_append_tag(nonce(3, 0), Aad::from(&sid[..]), &mut info).unwrap();
    {
        let mut s = st.sessions.lock().unwrap();
        if s.len() >= st.cfg.max_sessions {
            // the least recently used goes: its client re-establishes on "unknown session"
            if let Some(old) = s.iter().min_by_key(|(_, v)| v.used).map(|(k, _)| *k) {
                s.remove(&old);
            }
        }
        s.insert(sid, Session { key, last: None, used: Instant::now() });
    }
    json_reply(
        StatusCode::OK,
        serde_json::json!({"protocol": PROTOCOL, "session": hex(&sid), "server_pub": hex(sp.as_ref()),
                           "proof": hex(&proof), "info": hex(&info)}),
        false,
    )
}

async fn read(st: &Arc<State>, body: &[u8]) -> Reply {
    if body.len() != READ_BODY {
        return error(StatusCode::BAD_REQUEST, "malformed", format!("read body must be {READ_BODY} bytes"));
    }
    let sid: [u8; SID_LEN] = body[..SID_LEN].try_into().unwrap();
    let ctr = u64::from_be_bytes(body[SID_LEN..SID_LEN + 8].try_into().unwrap());
    let aad = [b"req".as_slice(), &sid, &ctr.to_be_bytes()].concat();
    let id = {
        let mut s = st.sessions.lock().unwrap();
        let Some(sess) = s.get_mut(&sid) else {
            return error(StatusCode::UNAUTHORIZED, "session", "unknown session: POST /session again");
        };
        let mut ct = body[SID_LEN + 8..].to_vec();
        let Ok(pt) = sess.key.open_in_place(nonce(1, ctr), Aad::from(&aad[..]), &mut ct) else {
            return error(StatusCode::UNAUTHORIZED, "auth", "request not authenticated under this session");
        };
        if sess.last.is_some_and(|l| ctr <= l) {
            return error(StatusCode::UNAUTHORIZED, "replay", "request counter reused: replay refused");
        }
        sess.last = Some(ctr);
        sess.used = Instant::now();
        u64::from_le_bytes(pt[..8].try_into().unwrap())
    };
    let store = st.store.clone();
    let n = store.manifest.n_blocks;
    // an unknown id still costs one oblivious request (block 0), so it takes the clock's time
    // like any other; the reply says "unknown" only inside the sealed body
    let got = tokio::task::spawn_blocking(move || store.oram.read(if id < n { id } else { 0 })).await;
    let b = st.store.manifest.block_size;
    let mut out = vec![0u8; 1 + b];
    match got {
        Ok(Ok(d)) if id < n => out[1..].copy_from_slice(&d),
        Ok(Ok(_)) => out[0] = STATUS_UNKNOWN,
        Ok(Err(OramError::Tamper { region, index })) => {
            out[0] = STATUS_INTEGRITY;
            if st.cfg.log {
                eprintln!("veil oram serve: block {id}: storage failed authentication (region {region}, slot {index})");
            }
        }
        Ok(Err(e)) => {
            out[0] = STATUS_STORAGE;
            if st.cfg.log {
                eprintln!("veil oram serve: block {id}: {e}");
            }
        }
        Err(_) => out[0] = STATUS_STORAGE,
    }
    let key = {
        let s = st.sessions.lock().unwrap();
        match s.get(&sid) {
            Some(sess) => {
                let aad = [b"rep".as_slice(), &sid, &ctr.to_be_bytes()].concat();
                sess.key.seal_in_place_append_tag(nonce(2, ctr), Aad::from(&aad[..]), &mut out).map(|_| ())
            }
            None => Err(aws_lc_rs::error::Unspecified),
        }
    };
    if key.is_err() {
        return error(StatusCode::UNAUTHORIZED, "session", "unknown session: POST /session again");
    }
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "application/octet-stream")
        .header("cache-control", "no-store")
        .body(Full::new(Bytes::from(out)))
        .unwrap()
}

/// A running server: its address and the means to stop it.
pub struct Server {
    addr: SocketAddr,
    stop: Option<tokio::sync::watch::Sender<bool>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Binds at once (a port in use or a bad host is a configuration error here, not later).
fn bind(cfg: &ServeConfig) -> Result<std::net::TcpListener> {
    let l = std::net::TcpListener::bind((cfg.host.as_str(), cfg.port))
        .map_err(|e| OramError::Config(format!("cannot listen on {}:{}: {e}", cfg.host, cfg.port)))?;
    l.set_nonblocking(true)?;
    Ok(l)
}

fn state(store: Arc<Store>, cfg: ServeConfig) -> Result<(Arc<State>, Option<tokio_rustls::TlsAcceptor>)> {
    if cfg.token.is_empty() {
        return Err(OramError::Config("empty access token".into()));
    }
    let tls = match &cfg.tls {
        Some((c, k)) => Some(tls_acceptor(c, k)?),
        None => None,
    };
    let m = &store.manifest;
    let info = serde_json::to_vec(&serde_json::json!({"n_blocks": m.n_blocks, "block_size": m.block_size, "files": m.files}))
        .unwrap();
    let auth = auth_key(&cfg.token);
    Ok((Arc::new(State { store, cfg, auth, sessions: Mutex::new(HashMap::new()), info }), tls))
}

async fn serve_on(
    listener: std::net::TcpListener,
    st: Arc<State>,
    tls: Option<tokio_rustls::TlsAcceptor>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let listener = tokio::net::TcpListener::from_std(listener).expect("a non-blocking listener");
    let permits = Arc::new(Semaphore::new(st.cfg.max_connections));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    loop {
        let permit = tokio::select! {
            p = permits.clone().acquire_owned() => p.unwrap(),
            _ = stop.changed() => break,
        };
        let (sock, _) = tokio::select! {
            a = listener.accept() => match a {
                Ok(a) => a,
                // out of descriptors and the like: wait a little rather than spin
                Err(_) => { tokio::time::sleep(Duration::from_millis(50)).await; continue; }
            },
            _ = stop.changed() => break,
        };
        let _ = sock.set_nodelay(true);
        let mut io = tokio_io_timeout::TimeoutStream::new(sock);
        io.set_read_timeout(Some(st.cfg.idle_timeout));
        io.set_write_timeout(Some(st.cfg.idle_timeout));
        let st2 = st.clone();
        let svc = hyper::service::service_fn(move |req| {
            let st = st2.clone();
            async move {
                let t = st.cfg.request_timeout;
                Ok::<_, std::convert::Infallible>(match tokio::time::timeout(t, handle(st, req)).await {
                    Ok(r) => r,
                    Err(_) => error(StatusCode::SERVICE_UNAVAILABLE, "timeout", "request took too long"),
                })
            }
        });
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder.timer(TokioTimer::new()).header_read_timeout(st.cfg.header_timeout).max_buf_size(16 * 1024);
        let watcher = graceful.watcher();
        let tls = tls.clone();
        let hs_timeout = st.cfg.header_timeout;
        tokio::spawn(async move {
            let _permit = permit;
            let io = Box::pin(io);
            // connection errors (resets, broken pipes, timeouts) end that connection quietly
            match tls {
                None => {
                    let _ = watcher.watch(builder.serve_connection(TokioIo::new(io), svc)).await;
                }
                Some(acc) => {
                    if let Ok(Ok(s)) = tokio::time::timeout(hs_timeout, acc.accept(io)).await {
                        let _ = watcher.watch(builder.serve_connection(TokioIo::new(s), svc)).await;
                    }
                }
            }
        });
    }
    drop(listener);
    let _ = tokio::time::timeout(Duration::from_secs(5), graceful.shutdown()).await;
}

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
        let listener = bind(&cfg)?;
        let addr = listener.local_addr()?;
        let (st, tls) = state(store, cfg)?;
        let rt = runtime()?;
        let (tx, rx) = tokio::sync::watch::channel(false);
        let thread = std::thread::Builder::new()
            .name("veil-oram-http".into())
            .spawn(move || rt.block_on(serve_on(listener, st, tls, rx)))?;
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
/// get up to 5 s to finish). `ready` is called with the bound address before the first accept.
pub fn serve_until_signal(store: Arc<Store>, cfg: ServeConfig, ready: impl FnOnce(SocketAddr)) -> Result<Stopped> {
    let listener = bind(&cfg)?;
    let addr = listener.local_addr()?;
    let (st, tls) = state(store, cfg)?;
    let rt = runtime()?;
    rt.block_on(async move {
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
    })
}
