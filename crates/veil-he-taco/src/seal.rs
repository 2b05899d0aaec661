//! SEAL 4.x serialization (uncompressed, `compr_mode_type.none`): a 16-byte header
//! (magic 0xA15E, header size 16, version major/minor, compression mode, reserved, total
//! size as u64), then the object's members. A `Ciphertext` (and a `PublicKey`, which is one)
//! stores parms_id (4 x u64), is_ntt_form (1 byte), size, poly_modulus_degree,
//! coeff_modulus_size, scale (f64), correction_factor, then its coefficient array as a nested
//! serialized `DynArray` (its own 16-byte header, u64 count, raw little-endian u64s, poly by
//! poly, prime by prime). A `SecretKey` is a `Plaintext`: parms_id, coeff_count, scale, then
//! the nested array.

pub const MAGIC: u16 = 0xA15E;

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
    what: &'static str,
}

impl<'a> Reader<'a> {
    fn take(&mut self, k: usize) -> Result<&'a [u8], String> {
        if self.at + k > self.b.len() {
            return Err(format!("{}: truncated at byte {} (need {k} more of {})", self.what, self.at, self.b.len()));
        }
        let s = &self.b[self.at..self.at + k];
        self.at += k;
        Ok(s)
    }
    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
    /// A 16-byte SEAL header; returns the total size it announces.
    fn header(&mut self) -> Result<u64, String> {
        let h = self.take(16)?;
        let magic = u16::from_le_bytes([h[0], h[1]]);
        if magic != MAGIC {
            return Err(format!("{}: not SEAL serialization (magic {magic:#06x}, expected 0xa15e)", self.what));
        }
        if h[2] != 16 || h[3] != 4 {
            return Err(format!("{}: unsupported header (size {}, version {}.{})", self.what, h[2], h[3], h[4]));
        }
        if h[5] != 0 {
            return Err(format!("{}: compressed (mode {}); save with compr_mode_type.none", self.what, h[5]));
        }
        Ok(u64::from_le_bytes(h[8..16].try_into().unwrap()))
    }
    fn array(&mut self, expect: usize) -> Result<Vec<u64>, String> {
        let start = self.at;
        let size = self.header()? as usize;
        let count = self.u64()? as usize;
        if count != expect || size != 16 + 8 + 8 * count {
            return Err(format!("{}: coefficient array holds {count} values, expected {expect}", self.what));
        }
        let raw = self.take(8 * count)?;
        debug_assert_eq!(self.at - start, size);
        Ok(raw.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect())
    }
}

/// A parsed ciphertext or public key: `polys[j][i]` is polynomial j modulo prime i.
#[derive(Clone, Debug)]
pub struct Ciphertext {
    pub is_ntt_form: bool,
    pub n: usize,
    pub polys: Vec<Vec<Vec<u64>>>,
}

fn split(flat: Vec<u64>, size: usize, k: usize, n: usize) -> Vec<Vec<Vec<u64>>> {
    (0..size)
        .map(|j| (0..k).map(|i| flat[(j * k + i) * n..(j * k + i + 1) * n].to_vec()).collect())
        .collect()
}

pub fn parse_ciphertext(b: &[u8], what: &'static str) -> Result<Ciphertext, String> {
    let mut r = Reader { b, at: 0, what };
    let total = r.header()? as usize;
    if total != b.len() {
        return Err(format!("{what}: header says {total} bytes, got {}", b.len()));
    }
    r.take(32)?; // parms_id
    let is_ntt_form = r.take(1)?[0] != 0;
    let size = r.u64()? as usize;
    let n = r.u64()? as usize;
    let k = r.u64()? as usize;
    r.take(16)?; // scale, correction_factor
    if !(1..=16).contains(&size) || !n.is_power_of_two() || !(1..=64).contains(&k) {
        return Err(format!("{what}: implausible shape size={size} n={n} primes={k}"));
    }
    let flat = r.array(size * n * k)?;
    Ok(Ciphertext { is_ntt_form, n, polys: split(flat, size, k, n) })
}

/// A secret key (NTT form, every key-level prime): `s[i]` modulo prime i.
pub fn parse_secret_key(b: &[u8], n: usize, k: usize) -> Result<Vec<Vec<u64>>, String> {
    let what = "secret key";
    let mut r = Reader { b, at: 0, what };
    let total = r.header()? as usize;
    if total != b.len() {
        return Err(format!("{what}: header says {total} bytes, got {}", b.len()));
    }
    r.take(32)?;
    let count = r.u64()? as usize;
    r.take(8)?; // scale
    if count != n * k {
        return Err(format!("{what}: {count} coefficients, expected n*k = {}", n * k));
    }
    let flat = r.array(n * k)?;
    Ok(split(flat, 1, k, n).remove(0))
}

/// Serializes a ciphertext the way SEAL does, so `Ciphertext.load_bytes` reads it back:
/// the members before the coefficients (headers with SEAL's version, parms_id, scale) are
/// copied from `template`, a ciphertext SEAL serialized with the same shape.
pub fn write_ciphertext(ct: &Ciphertext, template: &[u8]) -> Result<Vec<u8>, String> {
    let t = parse_ciphertext(template, "template ciphertext")?;
    if t.polys.len() != ct.polys.len() || t.polys[0].len() != ct.polys[0].len() || t.n != ct.n {
        return Err("template ciphertext: shape differs from the datapath's".into());
    }
    let count = ct.polys.len() * ct.polys[0].len() * ct.n;
    let head = template.len() - 8 * count;
    let mut out = template[..head].to_vec();
    out[48] = ct.is_ntt_form as u8;
    for p in &ct.polys {
        for r in p {
            for c in r {
                out.extend_from_slice(&c.to_le_bytes());
            }
        }
    }
    Ok(out)
}
