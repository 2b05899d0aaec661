//! CHOCO-TACO (van der Hagen & Lucia, ASPLOS 2022): the client-side HE encryption and
//! decryption accelerator, as an executable datapath. The blocks compute SEAL's BFV
//! public-key encryption and decryption on SEAL's own serialized keys and ciphertexts, and
//! count what each block does while it runs; the cost model (Python, `veil.he.taco`) turns
//! those counts into time, energy, power and area per hardware configuration.

use serde::Serialize;

pub mod arith;
pub mod datapath;
pub mod ntt;
pub mod prng;
pub mod seal;

/// What one hardware block did, counted as the datapath ran.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// NTT/INTT butterflies (one modular multiply and a modular add/sub pair each)
    pub butterflies: u64,
    /// 64-bit modular multiplications, butterflies' included
    pub modmuls: u64,
    /// modular additions/subtractions and reductions, butterflies' included
    pub modadds: u64,
    /// integer divisions (the plaintext scaling's divide by t)
    pub divides: u64,
    /// 64-bit words read from and written to the block's local memory
    pub sram_reads: u64,
    pub sram_writes: u64,
    /// bytes the samplers consumed, and the hash work SEAL's PRNG did to supply them (BLAKE2b
    /// compressions for blake2xb, Keccak-f[1600] permutations for shake256; 4096 bytes a refill)
    pub prng_bytes: u64,
    pub prng_blocks: u64,
    /// coefficients through the block (all lanes)
    pub coeffs: u64,
}

pub use datapath::{decrypt, encrypt, encrypt_symmetric, Ledger, Params};

/// Encrypts `m` under SEAL's serialized public key; returns SEAL-loadable ciphertext bytes
/// (headers copied from `template`, a SEAL ciphertext of the same shape) and the ledger.
pub fn encrypt_seal(pk_bytes: &[u8], template: &[u8], primes: &[u64], t: u64, m: &[u64], prng: &str, seed: &[u8]) -> Result<(Vec<u8>, Ledger), String> {
    let prng = prng::PrngType::parse(prng)?;
    let pk = seal::parse_ciphertext(pk_bytes, "public key")?;
    if !pk.is_ntt_form {
        return Err("public key: not in NTT form".into());
    }
    let p = Params::new(pk.n, primes, t)?;
    let mut led = Ledger::new();
    let polys = encrypt(&p, &pk.polys, m, prng, seed, &mut led)?;
    let ct = seal::Ciphertext { is_ntt_form: false, n: pk.n, polys };
    Ok((seal::write_ciphertext(&ct, template)?, led))
}

/// Decrypts SEAL's serialized ciphertext with SEAL's serialized secret key, at whatever level
/// of the modulus chain it is: SEAL's BFV chain drops the last data prime at each switch, so a
/// ciphertext with j primes is modulo the first j key-level primes (`primes`, special last).
pub fn decrypt_seal(sk_bytes: &[u8], ct_bytes: &[u8], primes: &[u64], t: u64) -> Result<(Vec<u64>, Ledger), String> {
    let ct = seal::parse_ciphertext(ct_bytes, "ciphertext")?;
    if ct.is_ntt_form {
        return Err("ciphertext: in NTT form; BFV decryption expects coefficient form".into());
    }
    if ct.polys.len() != 2 {
        return Err(format!("ciphertext: {} polynomials; the datapath decrypts 2 (relinearize a product first)", ct.polys.len()));
    }
    let j = ct.polys[0].len();
    if primes.len() < 2 || j >= primes.len() {
        return Err(format!("ciphertext: {j} primes, but the modulus chain's levels hold 1 to {} (the key level's {} primes less the special one)",
                           primes.len().saturating_sub(1), primes.len()));
    }
    let sk = seal::parse_secret_key(sk_bytes, ct.n, primes.len())?;
    let mut level = primes[..j].to_vec();
    level.push(primes[primes.len() - 1]);
    let p = Params::new(ct.n, &level, t)?;
    let mut led = Ledger::new();
    let m = decrypt(&p, &sk, &ct.polys, &mut led)?;
    Ok((m, led))
}
