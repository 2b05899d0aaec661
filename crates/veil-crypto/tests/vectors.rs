//! Published test vectors, typed in from the standards. Any wrong byte fails.

use veil_crypto::*;

fn h(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

// ---- AES: FIPS-197 Appendix C and NIST SP 800-38A Appendix F ----

#[test]
fn fips197_appendix_c() {
    let pt = h("00112233445566778899aabbccddeeff");
    let k128 = h("000102030405060708090a0b0c0d0e0f");
    let k256 = h("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f");
    assert_eq!(
        aes_encrypt_block(&k128, &pt).unwrap().to_vec(),
        h("69c4e0d86a7b0430d8cdb78070b4c55a")
    );
    assert_eq!(
        aes_encrypt_block(&k256, &pt).unwrap().to_vec(),
        h("8ea2b7ca516745bfeafc49904b496089")
    );
    assert_eq!(
        aes_decrypt_block(&k128, &h("69c4e0d86a7b0430d8cdb78070b4c55a"))
            .unwrap()
            .to_vec(),
        pt
    );
    assert_eq!(
        aes_decrypt_block(&k256, &h("8ea2b7ca516745bfeafc49904b496089"))
            .unwrap()
            .to_vec(),
        pt
    );
}

const SP800_38A_PT: &str = "6bc1bee22e409f96e93d7e117393172a ae2d8a571e03ac9c9eb76fac45af8e51
                            30c81c46a35ce411e5fbc1191a0a52ef f69f2445df4f9b17ad2b417be66c3710";
const K128: &str = "2b7e151628aed2a6abf7158809cf4f3c";
const K256: &str = "603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4";

#[test]
fn sp800_38a_f1_ecb() {
    let cases = [
        // F.1.1 ECB-AES128.Encrypt
        (
            K128,
            "3ad77bb40d7a3660a89ecaf32466ef97 f5d3d58503b9699de785895a96fdbaaf
                43b1cd7f598ece23881b00e3ed030688 7b0c785e27e8ad3f8223207104725dd4",
        ),
        // F.1.5 ECB-AES256.Encrypt
        (
            K256,
            "f3eed1bdb5d2a03c064b5a7e3db181f8 591ccb10d410ed26dc5ba74a31362870
                b6ed21b99ca6f4f9f153e7b1beafed1d 23304b7a39f9f3ff067d8d8f9e24ecc7",
        ),
    ];
    for (k, ct) in cases {
        let (k, pt, ct) = (h(k), h(SP800_38A_PT), h(ct));
        for i in 0..4 {
            let b = aes_encrypt_block(&k, &pt[16 * i..16 * i + 16]).unwrap();
            assert_eq!(b.to_vec(), ct[16 * i..16 * i + 16], "block {i}");
        }
        let c = AesCipher::new(&k).unwrap();
        let mut buf = pt.clone();
        c.encrypt_ecb(&mut buf).unwrap();
        assert_eq!(buf, ct);
        c.decrypt_ecb(&mut buf).unwrap(); // F.1.2 / F.1.6 decrypt direction
        assert_eq!(buf, pt);
    }
}

#[test]
fn sp800_38a_f5_ctr() {
    // Initial counter block f0f1...feff = nonce f0..f7 ‖ counter 0xf8f9fafbfcfdfeff.
    let nonce = h("f0f1f2f3f4f5f6f7");
    let counter = 0xf8f9fafbfcfdfeffu64;
    let cases = [
        // F.5.1 CTR-AES128.Encrypt
        (
            K128,
            "874d6191b620e3261bef6864990db6ce 9806f66b7970fdff8617187bb9fffdff
                5ae4df3edbd5d35e5b4f09020db03eab 1e031dda2fbe03d1792170a0f3009cee",
        ),
        // F.5.5 CTR-AES256.Encrypt
        (
            K256,
            "601ec313775789a5b7a7f504bbf3d228 f443e3ca4d62b59aca84e990cacaf5c5
                2b0930daa23de94ce87017ba2d84988d dfc9c58db67aada613c2dd08457941a6",
        ),
    ];
    for (k, ct) in cases {
        let (k, pt, ct) = (h(k), h(SP800_38A_PT), h(ct));
        let mut buf = pt.clone();
        ctr_xor(&k, &nonce, counter, &mut buf).unwrap();
        assert_eq!(buf, ct);
        ctr_xor(&k, &nonce, counter, &mut buf).unwrap(); // F.5.2 / F.5.6: decryption
        assert_eq!(buf, pt);
        // The pad is ct ^ pt; a pad started at counter+1 is the tail of that pad, and a
        // partial-block length is a prefix.
        let pad: Vec<u8> = ct.iter().zip(&pt).map(|(a, b)| a ^ b).collect();
        assert_eq!(ctr_pad(&k, &nonce, counter, 64).unwrap(), pad);
        assert_eq!(ctr_pad(&k, &nonce, counter + 1, 48).unwrap(), pad[16..]);
        assert_eq!(ctr_pad(&k, &nonce, counter, 23).unwrap(), pad[..23]);
    }
}

#[test]
fn ctr_refuses_counter_wrap_and_bad_lengths() {
    let k = h(K128);
    assert!(ctr_pad(&k, &[0; 8], u64::MAX, 16).is_ok());
    let e = ctr_pad(&k, &[0; 8], u64::MAX, 17).unwrap_err();
    assert!(e.to_string().contains("wrap"), "{e}");
    assert!(ctr_pad(&k, &[0; 12], 0, 16)
        .unwrap_err()
        .to_string()
        .contains("nonce must be 8 bytes"));
    assert!(ctr_pad(&k[..15], &[0; 8], 0, 16)
        .unwrap_err()
        .to_string()
        .contains("got 15"));
}

// ---- AES-GCM: McGrew & Viega GCM spec test cases 1-4 and 13-16 (SP 800-38D) ----

struct GcmCase {
    key: &'static str,
    iv: &'static str,
    pt: &'static str,
    aad: &'static str,
    ct: &'static str,
    tag: &'static str,
}

const GCM_P: &str = "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72
                     1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255";
const GCM_P60: &str = "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72
                       1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39";
const GCM_A: &str = "feedfacedeadbeeffeedfacedeadbeefabaddad2";
const GCM_K: &str = "feffe9928665731c6d6a8f9467308308";
const GCM_K256: &str = "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308";
const GCM_IV: &str = "cafebabefacedbaddecaf888";

const GCM_CASES: &[GcmCase] = &[
    GcmCase {
        key: "00000000000000000000000000000000",
        iv: "000000000000000000000000",
        pt: "",
        aad: "",
        ct: "",
        tag: "58e2fccefa7e3061367f1d57a4e7455a",
    },
    GcmCase {
        key: "00000000000000000000000000000000",
        iv: "000000000000000000000000",
        pt: "00000000000000000000000000000000",
        aad: "",
        ct: "0388dace60b6a392f328c2b971b2fe78",
        tag: "ab6e47d42cec13bdf53a67b21257bddf",
    },
    GcmCase {
        key: GCM_K,
        iv: GCM_IV,
        pt: GCM_P,
        aad: "",
        ct: "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e
                   21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091473f5985",
        tag: "4d5c2af327cd64a62cf35abd2ba6fab4",
    },
    GcmCase {
        key: GCM_K,
        iv: GCM_IV,
        pt: GCM_P60,
        aad: GCM_A,
        ct: "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e
                   21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091",
        tag: "5bc94fbc3221a5db94fae95ae7121a47",
    },
    GcmCase {
        key: "0000000000000000000000000000000000000000000000000000000000000000",
        iv: "000000000000000000000000",
        pt: "",
        aad: "",
        ct: "",
        tag: "530f8afbc74536b9a963b4f1c4cb738b",
    },
    GcmCase {
        key: "0000000000000000000000000000000000000000000000000000000000000000",
        iv: "000000000000000000000000",
        pt: "00000000000000000000000000000000",
        aad: "",
        ct: "cea7403d4d606b6e074ec5d3baf39d18",
        tag: "d0d1c8a799996bf0265b98b5d48ab919",
    },
    GcmCase {
        key: GCM_K256,
        iv: GCM_IV,
        pt: GCM_P,
        aad: "",
        ct: "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa
                   8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662898015ad",
        tag: "b094dac5d93471bdec1a502270e3cc6c",
    },
    GcmCase {
        key: GCM_K256,
        iv: GCM_IV,
        pt: GCM_P60,
        aad: GCM_A,
        ct: "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa
                   8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662",
        tag: "76fc6ece0f4e1768cddf8853bb2d551b",
    },
];

#[test]
fn gcm_spec_test_cases() {
    for (i, c) in GCM_CASES.iter().enumerate() {
        let (k, iv, pt, aad) = (h(c.key), h(c.iv), h(c.pt), h(c.aad));
        let mut expect = h(c.ct);
        expect.extend(h(c.tag));
        assert_eq!(
            gcm_seal(&k, &iv, &aad, &pt).unwrap(),
            expect,
            "case {i} seal"
        );
        assert_eq!(
            gcm_open(&k, &iv, &aad, &expect).unwrap(),
            pt,
            "case {i} open"
        );
    }
}

#[test]
fn gcm_rustcrypto_agrees_with_aws_lc() {
    use aes_gcm::aead::{Aead, KeyInit, Payload};
    for c in GCM_CASES.iter().filter(|c| c.key.len() == 32) {
        let g = aes_gcm::Aes128Gcm::new_from_slice(&h(c.key)).unwrap();
        let out = g
            .encrypt(
                (&h(c.iv)[..]).into(),
                Payload {
                    msg: &h(c.pt),
                    aad: &h(c.aad),
                },
            )
            .unwrap();
        assert_eq!(
            out,
            gcm_seal(&h(c.key), &h(c.iv), &h(c.aad), &h(c.pt)).unwrap()
        );
    }
}

#[test]
fn gcm_open_rejects_any_tampering() {
    let c = &GCM_CASES[3];
    let (k, iv, aad) = (h(c.key), h(c.iv), h(c.aad));
    let mut sealed = h(c.ct);
    sealed.extend(h(c.tag));
    for bit in [0, 7, 100, 8 * 59 + 3, 8 * 60, 8 * 75 + 7] {
        let mut t = sealed.clone();
        t[bit / 8] ^= 1 << (bit % 8);
        let e = gcm_open(&k, &iv, &aad, &t).unwrap_err();
        assert!(
            matches!(e, CryptoError::AuthenticationFailed(_)),
            "bit {bit}: {e}"
        );
    }
    let mut bad_aad = aad.clone();
    bad_aad[0] ^= 0x80;
    assert!(matches!(
        gcm_open(&k, &iv, &bad_aad, &sealed),
        Err(CryptoError::AuthenticationFailed(_))
    ));
    let mut bad_iv = iv.clone();
    bad_iv[11] ^= 1;
    assert!(matches!(
        gcm_open(&k, &bad_iv, &aad, &sealed),
        Err(CryptoError::AuthenticationFailed(_))
    ));
    assert!(gcm_open(&k, &iv, &[], &sealed).is_err());
    // In-place open wipes the buffer on failure: no unauthenticated plaintext escapes.
    let g = Gcm::new(&k).unwrap();
    let mut buf = h(c.ct);
    let mut tag = h(c.tag);
    tag[0] ^= 1;
    assert!(g.open_in_place(&iv, &aad, &mut buf, &tag).is_err());
    assert!(buf.iter().all(|&b| b == 0));
}

/// The out-of-place calls give the NIST ciphertexts and tags, leave their input as it was,
/// and refuse (wiping the output) a flipped bit or mismatched lengths.
#[test]
fn gcm_out_of_place_matches_vectors_and_refuses_tampering() {
    for (i, c) in GCM_CASES.iter().enumerate() {
        let g = Gcm::new(&h(c.key)).unwrap();
        let (iv, aad, pt) = (h(c.iv), h(c.aad), h(c.pt));
        let mut ct = vec![0xAA; pt.len()];
        let tag = g.seal_into(&iv, &aad, &pt, &mut ct).unwrap();
        assert_eq!((ct.clone(), tag.to_vec()), (h(c.ct), h(c.tag)), "case {i} seal");
        let mut out = vec![0x55; pt.len()];
        g.open_into(&iv, &aad, &ct, &tag, &mut out).unwrap();
        assert_eq!(out, pt, "case {i} open");
        if !ct.is_empty() {
            ct[0] ^= 1;
            assert!(matches!(
                g.open_into(&iv, &aad, &ct, &tag, &mut out),
                Err(CryptoError::AuthenticationFailed(_))
            ));
            assert!(out.iter().all(|&b| b == 0), "case {i}: plaintext left after a failed open");
        }
    }
    let g = Gcm::new(&[0; 16]).unwrap();
    assert!(g.seal_into(&[0; 12], b"", b"abc", &mut [0; 2]).is_err());
    assert!(g.open_into(&[0; 12], b"", b"abc", &[0; 16], &mut [0; 4]).is_err());
    assert!(g.open_into(&[0; 12], b"", b"abc", &[0; 15], &mut [0; 3]).is_err());
}

#[test]
fn gcm_bad_lengths_are_errors() {
    let e = gcm_seal(&[0; 24], &[0; 12], b"", b"x")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("AES-GCM key must be 16 or 32 bytes, got 24"),
        "{e}"
    );
    let e = gcm_seal(&[0; 16], &[0; 8], b"", b"x")
        .unwrap_err()
        .to_string();
    assert!(e.contains("nonce must be 12 bytes, got 8"), "{e}");
    let e = gcm_open(&[0; 16], &[0; 12], b"", &[0; 15])
        .unwrap_err()
        .to_string();
    assert!(e.contains("at least the 16-byte tag"), "{e}");
}

// ---- XTS-AES: IEEE Std 1619-2007 Annex B vectors 1-5 ----

#[test]
fn ieee1619_vectors_1_to_3() {
    let cases = [
        (
            "00000000000000000000000000000000 00000000000000000000000000000000",
            0u128,
            "0000000000000000000000000000000000000000000000000000000000000000",
            "917cf69ebd68b2ec9b9fe9a3eadda692cd43d2f59598ed858c02c2652fbf922e",
        ),
        (
            "11111111111111111111111111111111 22222222222222222222222222222222",
            0x3333333333,
            "4444444444444444444444444444444444444444444444444444444444444444",
            "c454185e6a16936e39334038acef838bfb186fff7480adc4289382ecd6d394f0",
        ),
        (
            "fffefdfcfbfaf9f8f7f6f5f4f3f2f1f0 22222222222222222222222222222222",
            0x3333333333,
            "4444444444444444444444444444444444444444444444444444444444444444",
            "af85336b597afc1a900b2eb21ec949d292df4c047e0b21532186a5971a227a89",
        ),
    ];
    for (i, (k, dusn, pt, ct)) in cases.iter().enumerate() {
        let mut buf = h(pt);
        xts_encrypt(&h(k), *dusn, &mut buf).unwrap();
        assert_eq!(buf, h(ct), "vector {}", i + 1);
        xts_decrypt(&h(k), *dusn, &mut buf).unwrap();
        assert_eq!(buf, h(pt));
    }
}

const V4_KEY: &str = "27182818284590452353602874713526 31415926535897932384626433832795";
const V4_CT64: &str = "27a7479befa1d476489f308cd4cfa6e2a96e4bbe3208ff25287dd3819616e89c
                       c78cf7f5e543445f8333d8fa7f56000005279fa5d8b5e4ad40e736ddb4d35412";
const V5_CT64: &str = "264d3ca8512194fec312c8c9891f279fefdd608d0c027b60483a3fa811d65ee5
                       9d52d9e40ec5672d81532b38b6b089ce951f0f9c35590b8b978d175213f329bb";

#[test]
fn ieee1619_vectors_4_5_as_memory_lines() {
    // Vectors 4 and 5 are 512-byte units; XTS block j depends only on the tweak and j, so the
    // first 64 bytes of each are exactly one memory line at address 0 (vector 4, plaintext
    // 00 01 .. 3f) and address 1 (vector 5, plaintext = vector 4's ciphertext).
    let lc = LineCipher::new(&h(V4_KEY)).unwrap();
    let mut line: Vec<u8> = (0..64u8).collect();
    lc.encrypt_line(0, 0, &mut line).unwrap();
    assert_eq!(line, h(V4_CT64));
    lc.encrypt_line(1, 0, &mut line).unwrap();
    assert_eq!(line, h(V5_CT64));
    lc.decrypt_line(1, 0, &mut line).unwrap();
    lc.decrypt_line(0, 0, &mut line).unwrap();
    assert_eq!(line, (0..64u8).collect::<Vec<_>>());
    // The version occupies the tweak's high 64 bits.
    let mut a = (0..64u8).collect::<Vec<_>>();
    lc.encrypt_line(0, 1, &mut a).unwrap();
    let mut b = (0..64u8).collect::<Vec<_>>();
    xts_encrypt(&h(V4_KEY), 1u128 << 64, &mut b).unwrap();
    assert_eq!(a, b);
    assert_ne!(a, h(V4_CT64));
}

// ---- Per-chunk MACs: CMAC (SP 800-38B examples) and the line construction ----

#[test]
fn sp800_38b_cmac_examples() {
    use cmac::{Cmac, Mac};
    let k = h(K128);
    let mut m = <Cmac<aes::Aes128> as Mac>::new_from_slice(&k).unwrap();
    m.update(b"");
    assert_eq!(
        m.finalize().into_bytes().to_vec(),
        h("bb1d6929e95937287fa37d129b756746")
    );
    let mut m = <Cmac<aes::Aes128> as Mac>::new_from_slice(&k).unwrap();
    m.update(&h("6bc1bee22e409f96e93d7e117393172a"));
    assert_eq!(
        m.finalize().into_bytes().to_vec(),
        h("070a16b46b4d4144f79bdd9dd04a287c")
    );
}

#[test]
fn chunk_mac_is_truncated_cmac_of_documented_message() {
    use cmac::{Cmac, Mac};
    let mac_key = h(K128);
    let lc = MemoryLines::new(&h(V4_KEY), &mac_key).unwrap();
    let (addr, ver) = (0x1234_5678_9abc_def0u64, 42u64);
    let (ct, tags) = lc.seal_line(addr, ver, &[0xab; 64], 16).unwrap();
    for (i, tag) in tags.iter().enumerate() {
        let mut m = <Cmac<aes::Aes128> as Mac>::new_from_slice(&mac_key).unwrap();
        m.update(&addr.to_le_bytes());
        m.update(&ver.to_le_bytes());
        m.update(&[i as u8, 16]);
        m.update(&ct[16 * i..16 * i + 16]);
        assert_eq!(tag[..], m.finalize().into_bytes()[..8]);
    }
}

#[test]
fn line_macs_detect_tampering_splicing_and_replay() {
    let lc = MemoryLines::new(&h(V4_KEY), &[9; 16]).unwrap();
    let pt: Vec<u8> = (100..164u8).collect();
    for chunk in [8, 16] {
        let (ct, tags) = lc.seal_line(0x40, 3, &pt, chunk).unwrap();
        assert_eq!(tags.len(), 64 / chunk);
        assert_eq!(lc.open_line(0x40, 3, &ct, chunk, &tags).unwrap(), pt);
        // a flipped bit in chunk 2 is reported as chunk 2
        let mut bad = ct.clone();
        bad[2 * chunk + 1] ^= 4;
        let e = lc.open_line(0x40, 3, &bad, chunk, &tags).unwrap_err();
        assert!(matches!(e, CryptoError::AuthenticationFailed(_)));
        assert!(e.to_string().ends_with("chunk(s) 2"), "{e}");
        // the same ciphertext and tags at another address (splicing) or an older version (replay)
        assert!(lc.mac.verify_line(0x80, 3, &ct, chunk, &tags).is_err());
        assert!(lc.mac.verify_line(0x40, 2, &ct, chunk, &tags).is_err());
        // swapping two chunks together with their tags
        let mut sw = ct.clone();
        sw[..chunk].copy_from_slice(&ct[chunk..2 * chunk]);
        sw[chunk..2 * chunk].copy_from_slice(&ct[..chunk]);
        let mut swt = tags.clone();
        swt.swap(0, 1);
        assert!(lc.mac.verify_line(0x40, 3, &sw, chunk, &swt).is_err());
    }
    // tags of different chunk sizes live in different domains
    let (ct, t16) = lc.seal_line(0, 0, &pt, 16).unwrap();
    assert_ne!(lc.mac.line_macs(0, 0, &ct, 8).unwrap()[0], t16[0]);
}

#[test]
fn line_bad_inputs_are_errors() {
    let err = |r: Result<()>| r.unwrap_err().to_string();
    let e = LineCipher::new(&[5; 32]).err().unwrap().to_string();
    assert!(e.contains("halves"), "{e}");
    let e = LineCipher::new(&h(V4_KEY)[..31]).err().unwrap().to_string();
    assert!(e.contains("32 or 64"), "{e}");
    let e = LineMac::new(&[0; 15]).err().unwrap().to_string();
    assert!(e.contains("16 bytes, got 15"), "{e}");
    assert!(LineMac::new(&[0; 32]).is_err());
    let lc = MemoryLines::new(&h(V4_KEY), &[0; 16]).unwrap();
    let e = err(lc.cipher.encrypt_line(0, 0, &mut [0; 63]));
    assert!(e.contains("64 bytes, got 63"), "{e}");
    let e = err(lc.mac.line_macs(0, 0, &[0; 64], 32).map(|_| ()));
    assert!(e.contains("8 or 16"), "{e}");
    let e = err(lc.mac.verify_line(0, 0, &[0; 64], 16, &[[0; 8]; 3]));
    assert!(e.contains("expected 4"), "{e}");
    assert!(lc.mac.chunk_mac(0, 0, 4, &[0; 16]).is_err());
    assert!(xts_encrypt(&h(V4_KEY), 0, &mut [0; 15]).is_err());
}

// ---- Triple-DES: SP 800-67 Rev. 1 example, SP 800-20 / FIPS 46 known answers ----

#[test]
fn sp800_67_tdes_example() {
    let k = h("0123456789ABCDEF 23456789ABCDEF01 456789ABCDEF0123");
    let pt = b"The qufck brown fox jump";
    let ct = h("A826FD8CE53B855F CCE21C8112256FE6 68D5C05DD9B6B900");
    for i in 0..3 {
        assert_eq!(
            tdes_encrypt_block(&k, &pt[8 * i..8 * i + 8])
                .unwrap()
                .to_vec(),
            ct[8 * i..8 * i + 8]
        );
        assert_eq!(
            tdes_decrypt_block(&k, &ct[8 * i..8 * i + 8])
                .unwrap()
                .to_vec(),
            pt[8 * i..8 * i + 8]
        );
    }
}

#[test]
fn sp800_20_tdes_known_answers() {
    // Variable-plaintext and variable-key KATs (K1 = K2 = K3, so TDES reduces to DES), and
    // the classic FIPS 46 worked example.
    let cases = [
        ("0101010101010101", "8000000000000000", "95F8A5E5DD31D900"),
        ("0101010101010101", "4000000000000000", "DD7F121CA5015619"),
        ("0101010101010101", "2000000000000000", "2E8653104F3834EA"),
        ("8001010101010101", "0000000000000000", "95A8D72813DAA94D"),
        ("133457799BBCDFF1", "0123456789ABCDEF", "85E813540F0AB405"),
    ];
    for (k1, pt, ct) in cases {
        let k = h(&k1.repeat(3));
        assert_eq!(
            tdes_encrypt_block(&k, &h(pt)).unwrap().to_vec(),
            h(ct),
            "key {k1} pt {pt}"
        );
        assert_eq!(tdes_decrypt_block(&k, &h(ct)).unwrap().to_vec(), h(pt));
    }
    assert!(tdes_encrypt_block(&[0; 16], &[0; 8])
        .unwrap_err()
        .to_string()
        .contains("24"));
    assert!(tdes_encrypt_block(&[0; 24], &[0; 16])
        .unwrap_err()
        .to_string()
        .contains("8 bytes"));
}

#[test]
fn aes_bad_lengths_are_errors() {
    let e = aes_encrypt_block(&[0; 20], &[0; 16])
        .unwrap_err()
        .to_string();
    assert_eq!(e, "AES key must be 16, 24 or 32 bytes, got 20");
    assert!(aes_encrypt_block(&[0; 16], &[0; 15])
        .unwrap_err()
        .to_string()
        .contains("got 15"));
    assert!(AesCipher::new(&[0; 16])
        .unwrap()
        .encrypt_ecb(&mut [0; 17])
        .is_err());
}

#[test]
fn hardware_aes_is_detected_on_x86_64() {
    #[cfg(target_arch = "x86_64")]
    assert!(
        hardware_aes(),
        "this x86_64 CPU lacks AES-NI: the aes crate falls back to software"
    );
}
