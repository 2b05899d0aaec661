//! The published test vectors of the primitives the boot exchange (`keyx.rs`) is built on,
//! checked through the same aws-lc-rs calls it makes: X25519 (RFC 7748 §5.2 and §6.1),
//! Ed25519 (RFC 8032 §7.1, tests 1-3) and HKDF-SHA256 (RFC 5869 appendix A, cases 1-3).

use aws_lc_rs::agreement::{self, PrivateKey, UnparsedPublicKey, X25519};
use aws_lc_rs::hkdf;
use aws_lc_rs::signature::{self, Ed25519KeyPair, KeyPair};

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    assert_eq!(s.len() % 2, 0, "odd-length hex");
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

/// X25519(scalar, u) as `keyx::agree` computes it: a private key from the scalar's bytes,
/// agreement with the peer's public u-coordinate.
fn x25519(scalar: &[u8], u: &[u8]) -> Vec<u8> {
    let k = PrivateKey::from_private_key(&X25519, scalar).unwrap();
    agreement::agree(&k, UnparsedPublicKey::new(&X25519, u), "agreement refused", |s| Ok(s.to_vec())).unwrap()
}

#[test]
fn rfc7748_x25519_function_vectors() {
    // §5.2: the two single-call vectors (the second's u has its top bit set: it must be masked).
    let cases = [
        (
            "a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4",
            "e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c",
            "c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552",
        ),
        (
            "4b66e9d4d1b4673c5ad22691957d6af5c11b6421e0ea01d42ca4169e7918ba0d",
            "e5210f12786811d3f4b7959d0538ae2c31dbe7106fc03c3efc4cd549c715a493",
            "95cbde9476e8907d7aade45cb4b873f88b595a68799fa152e6f8f7647aac7957",
        ),
    ];
    for (k, u, out) in cases {
        assert_eq!(x25519(&hex(k), &hex(u)), hex(out), "X25519({k}, {u})");
    }
}

#[test]
fn rfc7748_diffie_hellman_example() {
    // §6.1: Alice's and Bob's keys, public keys X25519(k, 9), and their shared secret.
    let a = hex("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a");
    let a_pub = hex("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a");
    let b = hex("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb");
    let b_pub = hex("de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f");
    let shared = hex("4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742");
    // `keyx::ephemeral`'s public key: compute_public_key of the private key.
    for (k, p) in [(&a, &a_pub), (&b, &b_pub)] {
        let key = PrivateKey::from_private_key(&X25519, k).unwrap();
        assert_eq!(key.compute_public_key().unwrap().as_ref(), &p[..]);
    }
    assert_eq!(x25519(&a, &b_pub), shared);
    assert_eq!(x25519(&b, &a_pub), shared);
}

#[test]
fn rfc8032_ed25519_vectors_1_to_3() {
    // §7.1 TEST 1-3: secret key (the 32-byte seed), public key, message, signature.
    let cases = [
        (
            "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
            "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
            "",
            "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b",
        ),
        (
            "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
            "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c",
            "72",
            "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00",
        ),
        (
            "c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
            "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025",
            "af82",
            "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a",
        ),
    ];
    for (i, (sk, pk, msg, sig)) in cases.iter().enumerate() {
        let (sk, pk, msg, sig) = (hex(sk), hex(pk), hex(msg), hex(sig));
        // `keyx::ed25519`: a key pair from the seed; `Manufacturer::make` and `Device::sign` sign.
        let kp = Ed25519KeyPair::from_seed_unchecked(&sk).unwrap();
        assert_eq!(kp.public_key().as_ref(), &pk[..], "TEST {}: public key", i + 1);
        assert_eq!(kp.sign(&msg).as_ref(), &sig[..], "TEST {}: signature", i + 1);
        // `verify_certificate` / `verify_transcript`: the published signature verifies, and a
        // flipped bit of it or of the message does not.
        let v = signature::UnparsedPublicKey::new(&signature::ED25519, &pk);
        v.verify(&msg, &sig).unwrap();
        let mut bad = sig.clone();
        bad[7] ^= 1;
        assert!(v.verify(&msg, &bad).is_err(), "TEST {}: a changed signature verifies", i + 1);
        let mut other = msg.clone();
        other.push(0);
        assert!(v.verify(&other, &sig).is_err(), "TEST {}: another message verifies", i + 1);
    }
}

struct Len(usize);

impl hkdf::KeyType for Len {
    fn len(&self) -> usize {
        self.0
    }
}

#[test]
fn rfc5869_hkdf_sha256_cases_1_to_3() {
    let seq = |a: u8, b: u8| (a..=b).map(|x| format!("{x:02x}")).collect::<String>();
    // Appendix A.1-A.3: IKM, salt, info, L, PRK, OKM.
    let cases = [
        (
            "0b".repeat(22),
            "000102030405060708090a0b0c".to_string(),
            "f0f1f2f3f4f5f6f7f8f9".to_string(),
            42,
            "077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5",
            "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865",
        ),
        (
            seq(0x00, 0x4f),
            seq(0x60, 0xaf),
            seq(0xb0, 0xff),
            82,
            "06a6b88c5853361a06104c9ceb35b45cef760014904671014a193f40c15fc244",
            "b11e398dc80327a1c8e7f78c596a49344f012eda2d4efad8a050cc4c19afa97c\
             59045a99cac7827271cb41c65e590e09da3275600c2f09b8367793a9aca3db71\
             cc30c58179ec3e87c14c01d5c1f3434f1d87",
        ),
        (
            "0b".repeat(22),
            String::new(),
            String::new(),
            42,
            "19ef24a32c717b167f33a91d6f648bdf96596776afdb6377ac434c1c293ccb04",
            "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8",
        ),
    ];
    for (i, (ikm, salt, info, l, prk, okm)) in cases.iter().enumerate() {
        let (ikm, salt, info, prk, okm) = (hex(ikm), hex(salt), hex(info), hex(prk), hex(okm));
        assert_eq!((ikm.len(), okm.len(), prk.len()), (ikm.len(), *l, 32));
        // `keyx::derive`: extract with the salt, expand with the info.
        let mut out = vec![0u8; *l];
        hkdf::Salt::new(hkdf::HKDF_SHA256, &salt).extract(&ikm).expand(&[&info], Len(*l)).unwrap().fill(&mut out).unwrap();
        assert_eq!(out, okm, "case {}: OKM from IKM", i + 1);
        // `DirectionKeys::rekey`: expand from a given PRK (`new_less_safe`); the published PRK
        // gives the published OKM, so extract produced that PRK's expansion.
        let mut out = vec![0u8; *l];
        hkdf::Prk::new_less_safe(hkdf::HKDF_SHA256, &prk).expand(&[&info], Len(*l)).unwrap().fill(&mut out).unwrap();
        assert_eq!(out, okm, "case {}: OKM from PRK", i + 1);
        // The PRK itself is HMAC-SHA256(salt, IKM) (RFC 5869 §2.2; an empty salt is HashLen zeros,
        // which HMAC pads to the same key).
        let tag = aws_lc_rs::hmac::sign(&aws_lc_rs::hmac::Key::new(aws_lc_rs::hmac::HMAC_SHA256, &salt), &ikm);
        assert_eq!(tag.as_ref(), &prk[..], "case {}: PRK", i + 1);
    }
}
