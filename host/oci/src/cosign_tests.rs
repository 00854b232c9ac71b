//! The cosign check against a signature made by openssl (`openssl dgst
//! -sha256 -sign`, the key of `openssl ecparam -name prime256v1`) and
//! against keys and signatures ring makes here.

use super::*;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair, KeyPair};

/// openssl's public key, and its signature of [`PAYLOAD`].
const OPENSSL_PUB: &str = "-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEMzVQwKLlOw/eDHxjHV9h+LF3hjwm
B4eoQEfMyATbmtm3UPNroM/GUPFlWlwy1XQ1iM4otHteLqNFzlAL0Ag9SQ==
-----END PUBLIC KEY-----
";
const OPENSSL_SIG: &str =
    "MEQCIApuiy1+qlJPY6Athm88T2VeXsyikB8cvPcFDwNwJtX7AiBOiXd+Z3pFEFSwkpvQodIIvmul7oa3dsJ5I/0EPTPe1w==";
/// A payload naming the digest of `abc`.
const PAYLOAD: &str = r#"{"critical":{"identity":{"docker-reference":"localhost:5000/wink/x"},"image":{"docker-manifest-digest":"sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},"type":"cosign container image signature"},"optional":null}"#;
const ED25519_PUB: &str = "-----BEGIN PUBLIC KEY-----
MCowBQYDK2VwAyEAlqBpKjfAP9RAZ6Fmy1TWpfJ0RGMRw8ZKy9HSQPNtmjE=
-----END PUBLIC KEY-----";

/// The repository [`PAYLOAD`] names.
const REPO: &str = "localhost:5000/wink/x";

/// [`super::check`] for [`REPO`].
fn check(signatures: &[Signed], digest: Digest, keys: &[PublicKey]) -> Result<(), VerifyError> {
    super::check(signatures, digest, REPO, keys)
}

#[test]
fn a_signature_made_for_another_repository_does_not_verify() {
    let (pair, key) = fresh_key();
    let d = Digest::of(b"component manifest");
    let signed = sign(&pair, d);
    super::check(std::slice::from_ref(&signed), d, REPO, std::slice::from_ref(&key)).unwrap();
    // A tag or digest on the source, Docker Hub's two names: the same repository.
    super::check(
        std::slice::from_ref(&signed),
        d,
        "localhost:5000/wink/x:v1",
        std::slice::from_ref(&key),
    )
    .unwrap();
    assert_eq!(
        repository_name("index.docker.io/library/x:1"),
        "docker.io/library/x"
    );
    let e = super::check(
        std::slice::from_ref(&signed),
        d,
        "localhost:5000/wink/other",
        std::slice::from_ref(&key),
    )
    .unwrap_err();
    assert_eq!(e.reason(), "SignatureInvalid", "{e}");
    assert!(
        e.to_string()
            .contains("made for localhost:5000/wink/x, not localhost:5000/wink/other"),
        "{e}"
    );
    // A payload naming no repository does not verify either.
    let payload = PAYLOAD
        .replace(r#""identity":{"docker-reference":"localhost:5000/wink/x"},"#, "")
        .replace(&Digest::of(b"abc").to_string(), &d.to_string());
    let anonymous = Signed {
        payload: b64(payload.as_bytes()),
        signature: b64(pair
            .sign(&SystemRandom::new(), payload.as_bytes())
            .unwrap()
            .as_ref()),
    };
    let e = check(&[anonymous], d, &[key]).unwrap_err();
    assert!(e.to_string().contains("no repository"), "{e}");
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn openssl_signed() -> Signed {
    Signed {
        payload: b64(PAYLOAD.as_bytes()),
        signature: OPENSSL_SIG.into(),
    }
}

/// A fresh key: the pair, and its public key as a PEM `PUBLIC KEY`.
fn fresh_key() -> (EcdsaKeyPair, PublicKey) {
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &rng).unwrap();
    let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, pkcs8.as_ref(), &rng).unwrap();
    let der = [&P256_SPKI_PREFIX[..], pair.public_key().as_ref()].concat();
    let pem = format!(
        "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n",
        b64(&der)
    );
    (pair, PublicKey::from_pem(&pem).unwrap())
}

fn sign(pair: &EcdsaKeyPair, digest: Digest) -> Signed {
    let payload = PAYLOAD.replace(&Digest::of(b"abc").to_string(), &digest.to_string());
    let sig = pair.sign(&SystemRandom::new(), payload.as_bytes()).unwrap();
    Signed {
        payload: b64(payload.as_bytes()),
        signature: b64(sig.as_ref()),
    }
}

#[test]
fn an_openssl_signature_verifies_for_its_digest_only() {
    let key = PublicKey::from_pem(OPENSSL_PUB).unwrap();
    assert!(key.id().starts_with("sha256:") && key.id().len() == 23, "{key:?}");
    let abc = Digest::of(b"abc");
    check(&[openssl_signed()], abc, std::slice::from_ref(&key)).unwrap();
    let other = check(
        &[openssl_signed()],
        Digest::of(b"abd"),
        std::slice::from_ref(&key),
    )
    .unwrap_err();
    assert_eq!(other.reason(), "SignatureInvalid", "{other}");
    assert!(other.to_string().contains("another digest"), "{other}");
    // The payload changed by one byte: its signature no longer holds.
    let mut tampered = openssl_signed();
    tampered.payload = b64(PAYLOAD.replace("wink/x", "wink/y").as_bytes());
    let e = check(&[tampered], abc, &[key]).unwrap_err();
    assert_eq!(e.reason(), "SignatureInvalid");
    assert!(e.to_string().contains("verifies under the key"), "{e}");
}

#[test]
fn every_key_must_have_signed_and_none_is_missing() {
    let (pair_a, a) = fresh_key();
    let (pair_b, b) = fresh_key();
    let d = Digest::of(b"component manifest");
    let by_a = sign(&pair_a, d);
    check(std::slice::from_ref(&by_a), d, std::slice::from_ref(&a)).unwrap();
    let e = check(std::slice::from_ref(&by_a), d, &[a.clone(), b.clone()]).unwrap_err();
    assert!(
        matches!(e, VerifyError::Invalid(_)) && e.to_string().contains(b.id()),
        "{e}"
    );
    check(&[by_a.clone(), sign(&pair_b, d)], d, &[a.clone(), b]).unwrap();
    // A key's signature of another digest beside another key's of this
    // one: not enough for the first key.
    let e = check(
        &[sign(&pair_a, Digest::of(b"x")), sign(&pair_b, d)],
        d,
        std::slice::from_ref(&a),
    )
    .unwrap_err();
    assert_eq!(e.reason(), "SignatureInvalid", "{e}");
    assert_eq!(check(&[], d, &[a]).unwrap_err().reason(), "SignatureMissing");
}

#[test]
fn keys_other_than_p256_and_malformed_pem_are_refused() {
    let e = PublicKey::from_pem(ED25519_PUB).unwrap_err().to_string();
    assert!(e.contains("not an ECDSA P-256 public key"), "{e}");
    assert!(PublicKey::from_pem("hello").is_err());
    let broken = OPENSSL_PUB.replace("MFkw", "MFk*");
    assert!(
        PublicKey::from_pem(&broken)
            .unwrap_err()
            .to_string()
            .contains("base64")
    );
}

#[test]
fn only_annotated_simple_signing_layers_are_signatures() {
    let d = Digest::of(b"payload");
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": d.to_string(), "size": 1},
        "layers": [
            {"mediaType": SIMPLE_SIGNING_MEDIA_TYPE, "digest": d.to_string(), "size": 7,
             "annotations": {SIGNATURE_ANNOTATION: "c2ln"}},
            {"mediaType": SIMPLE_SIGNING_MEDIA_TYPE, "digest": d.to_string(), "size": 7},
            {"mediaType": "application/wasm", "digest": d.to_string(), "size": 7,
             "annotations": {SIGNATURE_ANNOTATION: "c2ln"}}
        ]
    });
    let layers = signature_layers(manifest.to_string().as_bytes()).unwrap();
    assert_eq!(layers, vec![(d, 7, "c2ln".to_string())]);
    assert_eq!(
        signature_tag(d),
        format!("sha256-{}.sig", d.hex()),
        "cosign's tag of a digest"
    );
}
