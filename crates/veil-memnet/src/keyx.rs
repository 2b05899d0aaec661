//! Boot-time key exchange of the memory network (ghost routing paper §III): before the first
//! packet, every CPU and memory module proves it is a genuine part and each communicating
//! (CPU, module) pair agrees on the keys and nonces its one-time-pad engines use.
//!
//! Protocol (one run per pair, CPU `c` initiating, module `m` answering; in a memory system's
//! run any pair of nodes, the lower id initiating; docs/memnet.md):
//! 1. Manufacturing: each device holds an Ed25519 device key; the manufacturer's Ed25519 key
//!    signs `CERT_LABEL || role || id || device public key` (the certificate). Every device
//!    knows the manufacturer's public key.
//! 2. `c -> m`: c's certificate and a fresh X25519 public key `e_c`.
//! 3. `m -> c`: m's certificate, a fresh `e_m`, and m's device signature over the transcript
//!    `TRANSCRIPT_LABEL || id_c || id_m || e_c || e_m`.
//! 4. `c -> m`: c's device signature over the same transcript.
//!    Each side refuses a certificate the manufacturer did not sign, a certificate of the wrong
//!    role or id, and a transcript signature that does not verify: so a man in the middle who
//!    swaps `e_c` or `e_m` for his own is detected (he cannot sign the transcript with a
//!    certified key), and a module without a valid certificate gets no key.
//! 5. Both compute the X25519 secret and HKDF-SHA256 (salt = transcript, info = `KDF_LABEL ||
//!    ids`) expands it into the pair's keys: an AES-128 key and a 96-bit nonce per direction.
//!    Ephemeral keys are fresh each boot, so two boots give unrelated keys.
//! 6. Pads and re-keying: a pad block is AES(key, nonce || counter); a packet takes as many
//!    consecutive counter blocks as it has 16-byte blocks, after the previous packet's. When a
//!    packet's blocks would pass the direction's limit, both ends step the key forward
//!    (HKDF-expand of the current key with the epoch) and restart the counter, so no
//!    (key, nonce, counter block) repeats and an old key reveals no later pad.

use aes::cipher::{KeyIvInit, StreamCipher};
use std::collections::HashMap;

use aws_lc_rs::agreement::{self, PrivateKey, UnparsedPublicKey as AgreePublic, X25519};
use aws_lc_rs::hkdf;
use aws_lc_rs::rand::{SecureRandom, SystemRandom};
use aws_lc_rs::signature::{self, Ed25519KeyPair, KeyPair};
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;

const CERT_LABEL: &[u8] = b"veil-memnet device certificate v1";
const TRANSCRIPT_LABEL: &[u8] = b"veil-memnet boot exchange v1";
const KDF_LABEL: &[u8] = b"veil-memnet pair keys v1";
const REKEY_LABEL: &[u8] = b"veil-memnet rekey v1";

/// What a device is: a CPU or a memory module.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Cpu,
    Module,
}

impl Role {
    fn byte(self) -> u8 {
        match self {
            Role::Cpu => 1,
            Role::Module => 2,
        }
    }
}

/// Why a boot exchange was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyxError {
    /// The certificate is not signed by the manufacturer (or names another role or id).
    Certificate(String),
    /// The transcript signature does not verify: the exchange was tampered with.
    Transcript(String),
    /// The system's randomness or a primitive failed.
    Crypto(String),
}

impl std::fmt::Display for KeyxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeyxError::Certificate(s) => write!(f, "certificate refused: {s}"),
            KeyxError::Transcript(s) => write!(f, "boot exchange tampered with: {s}"),
            KeyxError::Crypto(s) => write!(f, "crypto failure: {s}"),
        }
    }
}

impl std::error::Error for KeyxError {}

fn crypto<E: std::fmt::Debug>(what: &'static str) -> impl Fn(E) -> KeyxError {
    move |e| KeyxError::Crypto(format!("{what}: {e:?}"))
}

/// Where device and ephemeral keys come from. A real part draws them from its hardware RNG
/// (`SystemRandom` here); a simulated run draws them from a ChaCha20 stream of its seed
/// (`Keyring`), so one seed always boots to the same keys and runs are reproducible.
pub trait Entropy {
    fn bytes(&mut self, out: &mut [u8]) -> Result<(), KeyxError>;
}

impl Entropy for SystemRandom {
    fn bytes(&mut self, out: &mut [u8]) -> Result<(), KeyxError> {
        self.fill(out).map_err(crypto("system randomness"))
    }
}

impl Entropy for ChaCha20Rng {
    fn bytes(&mut self, out: &mut [u8]) -> Result<(), KeyxError> {
        self.fill_bytes(out);
        Ok(())
    }
}

/// An Ed25519 key from 32 fresh bytes (the seed form of RFC 8032's private key).
fn ed25519(rng: &mut dyn Entropy, what: &'static str) -> Result<Ed25519KeyPair, KeyxError> {
    let mut seed = [0u8; 32];
    rng.bytes(&mut seed)?;
    Ed25519KeyPair::from_seed_unchecked(&seed).map_err(crypto(what))
}

/// A device's certificate: its role, id and Ed25519 public key, signed by the manufacturer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Certificate {
    pub role: Role,
    pub id: u32,
    pub public: Vec<u8>,
    pub signature: Vec<u8>,
}

fn cert_message(role: Role, id: u32, public: &[u8]) -> Vec<u8> {
    let mut m = CERT_LABEL.to_vec();
    m.push(role.byte());
    m.extend_from_slice(&id.to_le_bytes());
    m.extend_from_slice(public);
    m
}

/// The manufacturer: signs device keys.
pub struct Manufacturer {
    key: Ed25519KeyPair,
}

impl Manufacturer {
    pub fn new(rng: &mut dyn Entropy) -> Result<Self, KeyxError> {
        Ok(Self { key: ed25519(rng, "manufacturer key")? })
    }

    pub fn public(&self) -> Vec<u8> {
        self.key.public_key().as_ref().to_vec()
    }

    /// A genuine device: a fresh device key with a certificate.
    pub fn make(&self, role: Role, id: u32, rng: &mut dyn Entropy) -> Result<Device, KeyxError> {
        let d = Device::uncertified(role, id, rng)?;
        let signature = self.key.sign(&cert_message(role, id, &d.cert.public)).as_ref().to_vec();
        Ok(Device { cert: Certificate { signature, ..d.cert }, key: d.key })
    }
}

/// A CPU or module with its device key and certificate.
pub struct Device {
    pub cert: Certificate,
    key: Ed25519KeyPair,
}

impl Device {
    /// A device whose certificate carries no valid signature (a counterfeit part).
    pub fn uncertified(role: Role, id: u32, rng: &mut dyn Entropy) -> Result<Self, KeyxError> {
        let key = ed25519(rng, "device key")?;
        let public = key.public_key().as_ref().to_vec();
        Ok(Self { cert: Certificate { role, id, public, signature: vec![0; 64] }, key })
    }

    fn sign(&self, msg: &[u8]) -> Vec<u8> {
        self.key.sign(msg).as_ref().to_vec()
    }
}

/// Checks that `cert` is the manufacturer's and names `role` (and `id` when given).
pub fn verify_certificate(cert: &Certificate, manufacturer: &[u8], role: Role, id: Option<u32>) -> Result<(), KeyxError> {
    if cert.role != role || id.is_some_and(|i| i != cert.id) {
        return Err(KeyxError::Certificate(format!("{:?} {} presented where {role:?} {id:?} was expected", cert.role, cert.id)));
    }
    signature::UnparsedPublicKey::new(&signature::ED25519, manufacturer)
        .verify(&cert_message(cert.role, cert.id, &cert.public), &cert.signature)
        .map_err(|_| KeyxError::Certificate(format!("{:?} {}: not signed by the manufacturer", cert.role, cert.id)))
}

fn verify_transcript(cert: &Certificate, transcript: &[u8], sig: &[u8]) -> Result<(), KeyxError> {
    signature::UnparsedPublicKey::new(&signature::ED25519, &cert.public)
        .verify(transcript, sig)
        .map_err(|_| KeyxError::Transcript(format!("{:?} {}'s signature does not match the exchange", cert.role, cert.id)))
}

/// One direction's OTP keying: an AES-128 key, a 96-bit nonce and the pad counter.
///
/// The counter counts 16-byte pad blocks, not packets: a packet of `b` bytes takes the
/// `ceil(b / 16)` counter blocks `nonce || counter ..` that follow the previous packet's, so
/// no counter block (and so no pad block) is used twice under one key. A packet never
/// straddles two keys: when its blocks would pass `limit`, the key is stepped forward first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirectionKeys {
    pub key: [u8; 16],
    pub nonce: [u8; 12],
    /// The next unused counter block under the current key.
    pub counter: u32,
    pub epoch: u32,
    /// Counter blocks (16-byte pad blocks) per key before it is stepped forward.
    pub limit: u32,
}

impl DirectionKeys {
    /// Reserves `blocks` consecutive counter blocks, stepping the key forward when the current
    /// key's range cannot hold them all: the (key, nonce, first counter block) to use.
    fn reserve(&mut self, blocks: u32) -> ([u8; 16], [u8; 12], u32) {
        assert!(
            blocks <= self.limit,
            "a packet of {blocks} pad blocks does not fit a key's range of {} blocks",
            self.limit
        );
        // u64: counter + blocks may pass u32::MAX; counter + blocks <= limit <= u32::MAX keeps
        // the last block (counter + blocks - 1) below the 32-bit counter's wrap.
        if self.counter as u64 + blocks as u64 > self.limit as u64 {
            self.rekey();
        }
        let c = self.counter;
        self.counter += blocks;
        (self.key, self.nonce, c)
    }

    /// These keys stepped forward to `epoch` (the memory system's OTP engines re-key when their
    /// pad counter would pass `2^counter_bits`, and bump the epoch the packet carries).
    pub fn at_epoch(&self, epoch: u32) -> DirectionKeys {
        assert!(epoch >= self.epoch, "keys only step forward (epoch {} asked of {})", epoch, self.epoch);
        let mut k = self.clone();
        while k.epoch < epoch {
            k.rekey();
        }
        k
    }

    /// HKDF-expand of the current key: both ends do it at the same counter, nothing is sent.
    fn rekey(&mut self) {
        self.epoch += 1;
        let prk = hkdf::Prk::new_less_safe(hkdf::HKDF_SHA256, &self.key);
        let mut out = [0u8; 28];
        let info = [REKEY_LABEL, &self.epoch.to_le_bytes()];
        prk.expand(&info, Len(28)).and_then(|o| o.fill(&mut out)).expect("28 bytes is within HKDF's range");
        self.key.copy_from_slice(&out[..16]);
        self.nonce.copy_from_slice(&out[16..]);
        self.counter = 0;
    }

    /// The sender: encrypts one packet's payload with the next `ceil(len / 16)` pad blocks.
    /// Returns the packet's first counter block (under the key now in `self.key`).
    pub fn seal(&mut self, payload: &mut [u8]) -> u32 {
        let blocks = u32::try_from(payload.len().div_ceil(16)).expect("a packet of fewer than 2^32 pad blocks");
        let (k, n, c) = self.reserve(blocks);
        otp(&k, &n, c, payload);
        c
    }

    /// The receiver, in step with the sender (same packets, same lengths, same order):
    /// decrypts one packet, taking the same counter blocks and re-keying at the same point.
    pub fn open(&mut self, payload: &mut [u8]) -> u32 {
        // AES-CTR is its own inverse: opening takes exactly the blocks sealing took.
        self.seal(payload)
    }
}

/// XORs `data` with AES-128-CTR's stream from block `nonce || counter` (the OTP engine's pad).
pub fn otp(key: &[u8; 16], nonce: &[u8; 12], counter: u32, data: &mut [u8]) {
    let mut iv = [0u8; 16];
    iv[..12].copy_from_slice(nonce);
    iv[12..].copy_from_slice(&counter.to_be_bytes());
    let mut c = ctr::Ctr32BE::<aes::Aes128>::new(key.into(), &iv.into());
    c.apply_keystream(data);
}

struct Len(usize);

impl hkdf::KeyType for Len {
    fn len(&self) -> usize {
        self.0
    }
}

/// A pair's keys as one end holds them: `forward` for the initiator's packets (in `boot`, the
/// CPU's to the module), `backward` for the responder's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PairKeys {
    pub initiator: u32,
    pub responder: u32,
    pub forward: DirectionKeys,
    pub backward: DirectionKeys,
}

fn derive(shared: &[u8], transcript: &[u8], initiator: u32, responder: u32, limit: u32) -> PairKeys {
    let prk = hkdf::Salt::new(hkdf::HKDF_SHA256, transcript).extract(shared);
    let ids = [initiator.to_le_bytes(), responder.to_le_bytes()].concat();
    let mut out = [0u8; 56];
    prk.expand(&[KDF_LABEL, &ids], Len(56)).and_then(|o| o.fill(&mut out)).expect("56 bytes is within HKDF's range");
    let dir = |k: &[u8], n: &[u8]| DirectionKeys {
        key: k.try_into().unwrap(),
        nonce: n.try_into().unwrap(),
        counter: 0,
        epoch: 0,
        limit,
    };
    PairKeys { initiator, responder, forward: dir(&out[0..16], &out[32..44]), backward: dir(&out[16..32], &out[44..56]) }
}

/// The messages of one exchange, as they cross the wire (an attacker on the link may change them).
#[derive(Clone, Debug)]
pub struct Wire {
    pub initiator_cert: Certificate,
    pub initiator_ephemeral: Vec<u8>,
    pub responder_cert: Certificate,
    pub responder_ephemeral: Vec<u8>,
    pub responder_signature: Vec<u8>,
    pub initiator_signature: Vec<u8>,
}

/// Both parts' roles and ids are in the transcript: in `boot` a CPU and a module share an id.
fn transcript(a: &Certificate, b: &Certificate, e_a: &[u8], e_b: &[u8]) -> Vec<u8> {
    let mut t = TRANSCRIPT_LABEL.to_vec();
    for c in [a, b] {
        t.push(c.role.byte());
        t.extend_from_slice(&c.id.to_le_bytes());
    }
    t.extend_from_slice(e_a);
    t.extend_from_slice(e_b);
    t
}

fn ephemeral(rng: &mut dyn Entropy) -> Result<(PrivateKey, Vec<u8>), KeyxError> {
    let mut secret = [0u8; 32];
    rng.bytes(&mut secret)?;
    let k = PrivateKey::from_private_key(&X25519, &secret).map_err(crypto("ephemeral key"))?;
    let p = k.compute_public_key().map_err(crypto("ephemeral key"))?.as_ref().to_vec();
    Ok((k, p))
}

fn agree(k: &PrivateKey, peer: &[u8]) -> Result<Vec<u8>, KeyxError> {
    let bad = KeyxError::Transcript("the peer's ephemeral key is not a valid X25519 key".into());
    agreement::agree(k, AgreePublic::new(&X25519, peer), bad, |s| Ok(s.to_vec()))
}

/// Runs the exchange between CPU `cpu` (initiating) and module `module`; `tamper` sees (and
/// may change) the messages in flight, as a man in the middle would. Returns each end's view
/// of the pair's keys.
pub fn exchange(
    cpu: &Device,
    module: &Device,
    manufacturer: &[u8],
    limit: u32,
    rng: &mut dyn Entropy,
    tamper: &mut dyn FnMut(&mut Wire, u8),
) -> Result<(PairKeys, PairKeys), KeyxError> {
    exchange_between(cpu, module, (Role::Cpu, Role::Module), manufacturer, limit, rng, tamper)
}

/// The exchange between any two parts (in a memory system's run, any two nodes whose packets
/// cross the network). Each end knows which part it means to talk to (the network's parts and
/// their places are public: `roles` and the devices' ids), and refuses a certificate that
/// names another role or id.
pub fn exchange_between(
    initiator: &Device,
    responder: &Device,
    roles: (Role, Role),
    manufacturer: &[u8],
    limit: u32,
    rng: &mut dyn Entropy,
    tamper: &mut dyn FnMut(&mut Wire, u8),
) -> Result<(PairKeys, PairKeys), KeyxError> {
    let (ka, e_a) = ephemeral(rng)?;
    let mut w = Wire {
        initiator_cert: initiator.cert.clone(),
        initiator_ephemeral: e_a.clone(),
        responder_cert: responder.cert.clone(),
        responder_ephemeral: vec![],
        responder_signature: vec![],
        initiator_signature: vec![],
    };
    tamper(&mut w, 1);
    // The responder: checks the initiator's certificate, answers with its own, signs the transcript.
    let (ia, ib) = (&initiator.cert, &responder.cert);
    verify_certificate(&w.initiator_cert, manufacturer, roles.0, Some(ia.id))?;
    let (kb, e_b) = ephemeral(rng)?;
    let t_b = transcript(&w.initiator_cert, ib, &w.initiator_ephemeral, &e_b);
    w.responder_cert = ib.clone();
    w.responder_ephemeral = e_b.clone();
    w.responder_signature = responder.sign(&t_b);
    tamper(&mut w, 2);
    // The initiator: checks the responder's certificate (the part it meant to reach) and signature.
    verify_certificate(&w.responder_cert, manufacturer, roles.1, Some(ib.id))?;
    let t_a = transcript(ia, &w.responder_cert, &e_a, &w.responder_ephemeral);
    verify_transcript(&w.responder_cert, &t_a, &w.responder_signature)?;
    w.initiator_signature = initiator.sign(&t_a);
    let a_view = derive(&agree(&ka, &w.responder_ephemeral)?, &t_a, ia.id, w.responder_cert.id, limit);
    tamper(&mut w, 3);
    // The responder: checks the initiator's signature over its own view of the transcript.
    verify_transcript(&w.initiator_cert, &t_b, &w.initiator_signature)?;
    let b_view = derive(&agree(&kb, &w.initiator_ephemeral)?, &t_b, w.initiator_cert.id, ib.id, limit);
    Ok((a_view, b_view))
}

/// A booted system: every (CPU, module) pair's keys, as the CPU holds them.
pub struct Booted {
    pub pairs: Vec<PairKeys>,
    pub modules: usize,
}

impl Booted {
    pub fn pair(&mut self, cpu: usize, module: usize) -> &mut PairKeys {
        &mut self.pairs[cpu * self.modules + module]
    }
}

/// Boots `cpus` x `modules` devices with the system's randomness: every pair runs the exchange;
/// one refused certificate or tampered exchange stops the boot (no keys, no run).
pub fn boot(cpus: &[Device], modules: &[Device], manufacturer: &[u8], limit: u32) -> Result<Booted, KeyxError> {
    let mut rng = SystemRandom::new();
    let mut pairs = Vec::with_capacity(cpus.len() * modules.len());
    for c in cpus {
        for m in modules {
            let (cv, mv) = exchange(c, m, manufacturer, limit, &mut rng, &mut |_, _| {})?;
            debug_assert_eq!(cv, mv);
            pairs.push(cv);
        }
    }
    Ok(Booted { pairs, modules: modules.len() })
}

/// A ChaCha20 stream of a run's seed: stream 0 makes the manufacturer, 1 + n node n's device
/// key, 2^32 + pair index the pair's ephemeral keys, so a pair's keys do not depend on the order
/// in which pairs first talk.
fn seeded(seed: u64, stream: u64) -> ChaCha20Rng {
    let mut r = ChaCha20Rng::seed_from_u64(seed);
    r.set_stream(stream);
    r
}

/// The boot of a simulated memory system, deterministic for its seed: one certified device per
/// node, and a key exchange per pair of nodes, run when the pair first needs its keys (every
/// pair that communicates, module-to-module legs of multi-leg routes included, and the pairs
/// a non-destination node tries when it decodes a packet with its own keys).
pub struct Keyring {
    seed: u64,
    manufacturer: Vec<u8>,
    roles: Vec<Role>,
    devices: Vec<Device>,
    pairs: HashMap<(u32, u32), PairKeys>,
    /// Exchanges run so far (one per unordered pair).
    pub exchanges: u64,
}

impl Keyring {
    /// `roles[n]`: what node n is; device ids are node ids.
    pub fn new(seed: u64, roles: &[Role]) -> Result<Self, KeyxError> {
        let m = Manufacturer::new(&mut seeded(seed, 0))?;
        let devices = roles.iter().enumerate().map(|(n, &r)| m.make(r, n as u32, &mut seeded(seed, 1 + n as u64))).collect::<Result<_, _>>()?;
        Ok(Self { seed, manufacturer: m.public(), roles: roles.to_vec(), devices, pairs: HashMap::new(), exchanges: 0 })
    }

    /// What each node is (node ids are device ids).
    pub fn roles(&self) -> &[Role] {
        &self.roles
    }

    /// The keys of direction `src -> dst` at key epoch `epoch` (the lower node id initiates).
    pub fn direction(&mut self, src: u32, dst: u32, epoch: u32) -> Result<DirectionKeys, KeyxError> {
        let (a, b) = (src.min(dst), src.max(dst));
        if !self.pairs.contains_key(&(a, b)) {
            let stream = (1u64 << 32) + a as u64 * self.devices.len() as u64 + b as u64;
            let (da, db) = (&self.devices[a as usize], &self.devices[b as usize]);
            // The engines step the epoch themselves (`at_epoch`); `limit` is not used here.
            let roles = (self.roles[a as usize], self.roles[b as usize]);
            let (va, vb) = exchange_between(da, db, roles, &self.manufacturer, u32::MAX, &mut seeded(self.seed, stream), &mut |_, _| {})?;
            if va != vb {
                return Err(KeyxError::Crypto(format!("nodes {a} and {b} derived different keys")));
            }
            self.pairs.insert((a, b), va);
            self.exchanges += 1;
        }
        let p = &self.pairs[&(a, b)];
        Ok(if src == a { &p.forward } else { &p.backward }.at_epoch(epoch))
    }
}
