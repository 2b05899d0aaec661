//! Boot-time key exchange of the memory network (ghost routing paper §III): before the first
//! packet, every CPU and memory module proves it is a genuine part and each communicating
//! (CPU, module) pair agrees on the keys and nonces its one-time-pad engines use.
//!
//! Protocol (one run per pair, CPU `c` initiating, module `m` answering; docs/memnet.md):
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
//! 6. Re-keying: a pad is AES(key, nonce || counter); when a direction's counter reaches its
//!    limit, both ends step the key forward (HKDF-expand of the current key with the epoch)
//!    and restart the counter, so no (key, nonce, counter) repeats and an old key reveals no
//!    later pad.

use aes::cipher::{KeyIvInit, StreamCipher};
use aws_lc_rs::agreement::{self, EphemeralPrivateKey, UnparsedPublicKey as AgreePublic, X25519};
use aws_lc_rs::hkdf;
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{self, Ed25519KeyPair, KeyPair};

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
    pub fn new(rng: &SystemRandom) -> Result<Self, KeyxError> {
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(rng).map_err(crypto("manufacturer key"))?;
        Ok(Self { key: Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).map_err(crypto("manufacturer key"))? })
    }

    pub fn public(&self) -> Vec<u8> {
        self.key.public_key().as_ref().to_vec()
    }

    /// A genuine device: a fresh device key with a certificate.
    pub fn make(&self, role: Role, id: u32, rng: &SystemRandom) -> Result<Device, KeyxError> {
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
    pub fn uncertified(role: Role, id: u32, rng: &SystemRandom) -> Result<Self, KeyxError> {
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(rng).map_err(crypto("device key"))?;
        let key = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).map_err(crypto("device key"))?;
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
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirectionKeys {
    pub key: [u8; 16],
    pub nonce: [u8; 12],
    pub counter: u32,
    pub epoch: u32,
    /// Pads per key before it is stepped forward (the counter's range).
    pub limit: u32,
}

impl DirectionKeys {
    /// The next pad's (key, nonce, counter), stepping the key forward when the counter is spent.
    fn next(&mut self) -> ([u8; 16], [u8; 12], u32) {
        if self.counter >= self.limit {
            self.rekey();
        }
        let c = self.counter;
        self.counter += 1;
        (self.key, self.nonce, c)
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

    /// Encrypts (or decrypts) one packet's payload with the next pad.
    pub fn seal(&mut self, payload: &mut [u8]) -> u32 {
        let (k, n, c) = self.next();
        otp(&k, &n, c, payload);
        c
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

/// A pair's keys as one end holds them: `send` for its packets, `recv` for the other's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PairKeys {
    pub cpu: u32,
    pub module: u32,
    pub cpu_to_module: DirectionKeys,
    pub module_to_cpu: DirectionKeys,
}

fn derive(shared: &[u8], transcript: &[u8], cpu: u32, module: u32, limit: u32) -> PairKeys {
    let prk = hkdf::Salt::new(hkdf::HKDF_SHA256, transcript).extract(shared);
    let ids = [cpu.to_le_bytes(), module.to_le_bytes()].concat();
    let mut out = [0u8; 56];
    prk.expand(&[KDF_LABEL, &ids], Len(56)).and_then(|o| o.fill(&mut out)).expect("56 bytes is within HKDF's range");
    let dir = |k: &[u8], n: &[u8]| DirectionKeys {
        key: k.try_into().unwrap(),
        nonce: n.try_into().unwrap(),
        counter: 0,
        epoch: 0,
        limit,
    };
    PairKeys { cpu, module, cpu_to_module: dir(&out[0..16], &out[32..44]), module_to_cpu: dir(&out[16..32], &out[44..56]) }
}

/// The messages of one exchange, as they cross the wire (an attacker on the link may change them).
#[derive(Clone, Debug)]
pub struct Wire {
    pub cpu_cert: Certificate,
    pub cpu_ephemeral: Vec<u8>,
    pub module_cert: Certificate,
    pub module_ephemeral: Vec<u8>,
    pub module_signature: Vec<u8>,
    pub cpu_signature: Vec<u8>,
}

fn transcript(cpu: u32, module: u32, e_c: &[u8], e_m: &[u8]) -> Vec<u8> {
    let mut t = TRANSCRIPT_LABEL.to_vec();
    t.extend_from_slice(&cpu.to_le_bytes());
    t.extend_from_slice(&module.to_le_bytes());
    t.extend_from_slice(e_c);
    t.extend_from_slice(e_m);
    t
}

fn ephemeral(rng: &SystemRandom) -> Result<(EphemeralPrivateKey, Vec<u8>), KeyxError> {
    let k = EphemeralPrivateKey::generate(&X25519, rng).map_err(crypto("ephemeral key"))?;
    let p = k.compute_public_key().map_err(crypto("ephemeral key"))?.as_ref().to_vec();
    Ok((k, p))
}

fn agree(k: EphemeralPrivateKey, peer: &[u8]) -> Result<Vec<u8>, KeyxError> {
    let bad = KeyxError::Transcript("the peer's ephemeral key is not a valid X25519 key".into());
    agreement::agree_ephemeral(k, &AgreePublic::new(&X25519, peer), bad, |s| Ok(s.to_vec()))
}

/// Runs the exchange between `cpu` and `module`; `tamper` sees (and may change) the messages
/// in flight, as a man in the middle would. Returns each end's view of the pair's keys.
pub fn exchange(
    cpu: &Device,
    module: &Device,
    manufacturer: &[u8],
    limit: u32,
    rng: &SystemRandom,
    tamper: &mut dyn FnMut(&mut Wire, u8),
) -> Result<(PairKeys, PairKeys), KeyxError> {
    let (kc, e_c) = ephemeral(rng)?;
    let mut w = Wire {
        cpu_cert: cpu.cert.clone(),
        cpu_ephemeral: e_c.clone(),
        module_cert: module.cert.clone(),
        module_ephemeral: vec![],
        module_signature: vec![],
        cpu_signature: vec![],
    };
    tamper(&mut w, 1);
    // The module: checks the CPU's certificate, answers with its own, signs the transcript.
    verify_certificate(&w.cpu_cert, manufacturer, Role::Cpu, None)?;
    let (km, e_m) = ephemeral(rng)?;
    let (c_id, m_id) = (w.cpu_cert.id, module.cert.id);
    let t_m = transcript(c_id, m_id, &w.cpu_ephemeral, &e_m);
    w.module_cert = module.cert.clone();
    w.module_ephemeral = e_m.clone();
    w.module_signature = module.sign(&t_m);
    tamper(&mut w, 2);
    // The CPU: checks the module's certificate (the module it meant to reach) and signature.
    verify_certificate(&w.module_cert, manufacturer, Role::Module, Some(module.cert.id))?;
    let t_c = transcript(cpu.cert.id, w.module_cert.id, &e_c, &w.module_ephemeral);
    verify_transcript(&w.module_cert, &t_c, &w.module_signature)?;
    w.cpu_signature = cpu.sign(&t_c);
    let cpu_view = derive(&agree(kc, &w.module_ephemeral)?, &t_c, cpu.cert.id, w.module_cert.id, limit);
    tamper(&mut w, 3);
    // The module: checks the CPU's signature over its own view of the transcript.
    verify_transcript(&w.cpu_cert, &t_m, &w.cpu_signature)?;
    let module_view = derive(&agree(km, &w.cpu_ephemeral)?, &t_m, c_id, m_id, limit);
    Ok((cpu_view, module_view))
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

/// Boots `cpus` x `modules` devices: every pair runs the exchange; one refused certificate or
/// tampered exchange stops the boot (no keys, no run).
pub fn boot(cpus: &[Device], modules: &[Device], manufacturer: &[u8], limit: u32) -> Result<Booted, KeyxError> {
    let rng = SystemRandom::new();
    let mut pairs = Vec::with_capacity(cpus.len() * modules.len());
    for c in cpus {
        for m in modules {
            let (cv, mv) = exchange(c, m, manufacturer, limit, &rng, &mut |_, _| {})?;
            debug_assert_eq!(cv, mv);
            pairs.push(cv);
        }
    }
    Ok(Booted { pairs, modules: modules.len() })
}
