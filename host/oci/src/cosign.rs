//! Cosign key-based signatures of a manifest, checked with kept crypto
//! (ring's ECDSA P-256 SHA-256, the key cosign's `generate-key-pair`
//! makes). Cosign keeps the signatures of the manifest `sha256:<hex>` in
//! the same repository under the tag `sha256-<hex>.sig`: a manifest whose
//! layers of media type [`SIMPLE_SIGNING_MEDIA_TYPE`] each hold a JSON
//! payload naming the signed digest
//! (`critical.image.docker-manifest-digest`) and the repository it was
//! signed for (`critical.identity.docker-reference`), with the base64 ASN.1 DER
//! signature of the payload's bytes in the layer annotation
//! [`SIGNATURE_ANNOTATION`]. A manifest is verified under a set of keys
//! when, for each key, some payload's signature verifies under it and
//! names that manifest's digest and the repository it is pulled from. Owns reading the keys (PEM), reading the
//! signature manifest's layers, the check itself and why it failed
//! ([`VerifyError`]); the registry fetches ([`crate::registry`]).

use crate::digest::Digest;
use base64::Engine;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The media type of a cosign simple-signing payload layer.
pub const SIMPLE_SIGNING_MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The layer annotation holding the payload's base64 signature.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// The largest payload read.
pub const MAX_PAYLOAD_BYTES: u64 = 64 << 10;
/// At most this many signature layers are read.
pub const MAX_SIGNATURES: usize = 32;
/// A key file larger than this is refused.
pub const MAX_KEY_BYTES: u64 = 16 << 10;

/// The DER prefix of a P-256 SubjectPublicKeyInfo (id-ecPublicKey,
/// prime256v1, a 66-byte bit string), before the 65-byte point.
const P256_SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a, 0x86,
    0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

/// An ECDSA P-256 public key.
#[derive(Clone, PartialEq, Eq)]
pub struct PublicKey {
    /// The uncompressed point (0x04, x, y).
    point: Vec<u8>,
    /// `sha256:` and the first 16 hex digits of the digest of the DER key:
    /// how messages name it.
    id: String,
}

impl std::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PublicKey({})", self.id)
    }
}

impl PublicKey {
    /// The key of a PEM `PUBLIC KEY` block (what `cosign.pub` holds).
    pub fn from_pem(pem: &str) -> anyhow::Result<PublicKey> {
        let body = pem
            .split_once("-----BEGIN PUBLIC KEY-----")
            .and_then(|(_, rest)| rest.split_once("-----END PUBLIC KEY-----"))
            .map(|(body, _)| body)
            .ok_or_else(|| anyhow::anyhow!("not a PEM public key (no BEGIN/END PUBLIC KEY lines)"))?;
        let b64: String = body.chars().filter(|c| !c.is_ascii_whitespace()).collect();
        let der = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|e| anyhow::anyhow!("the PEM public key is not base64: {e}"))?;
        let point = der
            .strip_prefix(&P256_SPKI_PREFIX[..])
            .filter(|p| p.len() == 65 && p[0] == 0x04)
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "not an ECDSA P-256 public key (cosign's keys are; RSA, Ed25519 and other curves are not read)"
                )
            })?;
        Ok(PublicKey {
            point: point.to_vec(),
            id: format!("sha256:{}", &Digest::of(&der).hex()[..16]),
        })
    }

    /// The key in the PEM file `path`.
    pub fn read(path: &Path) -> anyhow::Result<PublicKey> {
        let bytes = wink_input::read_file(path, MAX_KEY_BYTES, "cosign public key")?;
        let text = std::str::from_utf8(&bytes)
            .map_err(|_| anyhow::anyhow!("{}: not a PEM file (not UTF-8)", path.display()))?;
        PublicKey::from_pem(text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
    }

    /// How messages name the key.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Whether `signature` (ASN.1 DER) is this key's over `payload`.
    fn verifies(&self, payload: &[u8], signature: &[u8]) -> bool {
        ring::signature::UnparsedPublicKey::new(&ring::signature::ECDSA_P256_SHA256_ASN1, &self.point)
            .verify(payload, signature)
            .is_ok()
    }
}

/// The tag cosign keeps the signatures of `digest` under.
pub fn signature_tag(digest: Digest) -> String {
    format!("sha256-{}.sig", digest.hex())
}

/// One signature layer: the payload and its signature, both base64 (as
/// the store keeps them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Signed {
    pub payload: String,
    pub signature: String,
}

/// Why a manifest is not verified.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// No signature: no `.sig` tag, or one without simple-signing layers.
    #[error("{0}")]
    Missing(String),
    /// Signatures, none of which verifies under a key for this digest.
    #[error("{0}")]
    Invalid(String),
    /// The signatures could not be read (registry down, a malformed
    /// signature manifest).
    #[error("{0:#}")]
    Failed(anyhow::Error),
}

impl VerifyError {
    /// The condition reason.
    pub fn reason(&self) -> &'static str {
        match self {
            VerifyError::Missing(_) => "SignatureMissing",
            VerifyError::Invalid(_) => "SignatureInvalid",
            VerifyError::Failed(_) => "VerifyFailed",
        }
    }
}

#[derive(Deserialize)]
struct Layer {
    #[serde(rename = "mediaType")]
    media_type: String,
    digest: String,
    size: u64,
    #[serde(default)]
    annotations: std::collections::BTreeMap<String, String>,
}

#[derive(Deserialize)]
struct SignatureManifest {
    #[serde(default)]
    layers: Vec<Layer>,
}

/// The simple-signing layers of a signature manifest: each payload's
/// digest and size, and its signature (base64).
pub fn signature_layers(manifest: &[u8]) -> anyhow::Result<Vec<(Digest, u64, String)>> {
    let m: SignatureManifest = serde_json::from_slice(manifest)
        .map_err(|e| anyhow::anyhow!("the signature manifest does not read: {e}"))?;
    let mut out = Vec::new();
    for layer in m.layers {
        if layer.media_type != SIMPLE_SIGNING_MEDIA_TYPE {
            continue;
        }
        let Some(signature) = layer.annotations.get(SIGNATURE_ANNOTATION) else {
            continue;
        };
        anyhow::ensure!(
            out.len() < MAX_SIGNATURES,
            "more than {MAX_SIGNATURES} signature layers"
        );
        out.push((Digest::parse(&layer.digest)?, layer.size, signature.clone()));
    }
    Ok(out)
}

#[derive(Deserialize)]
struct Payload {
    critical: Critical,
}

#[derive(Deserialize)]
struct Critical {
    #[serde(default)]
    identity: Option<Identity>,
    image: Image,
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Deserialize)]
struct Image {
    #[serde(rename = "docker-manifest-digest")]
    digest: String,
}

#[derive(Deserialize)]
struct Identity {
    #[serde(rename = "docker-reference")]
    reference: String,
}

/// What a payload signs, if it is a cosign image signature: the digest,
/// and the repository it names (none when it names none).
fn signed(payload: &[u8]) -> Option<(String, Option<String>)> {
    let p: Payload = serde_json::from_slice(payload).ok()?;
    (p.critical.kind == "cosign container image signature").then(|| {
        (
            p.critical.image.digest,
            p.critical.identity.map(|i| repository_name(&i.reference)),
        )
    })
}

/// A repository as `registry/path`, without tag or digest, Docker Hub
/// under one name (`index.docker.io/x` is `docker.io/x`), so that a
/// payload's docker-reference and a source compare.
pub fn repository_name(reference: &str) -> String {
    let r = reference.split('@').next().unwrap_or(reference);
    let r = match r.rsplit_once(':') {
        Some((head, tag)) if !tag.contains('/') => head,
        _ => r,
    };
    for hub in ["index.docker.io/", "registry-1.docker.io/"] {
        if let Some(rest) = r.strip_prefix(hub) {
            return format!("docker.io/{rest}");
        }
    }
    r.to_string()
}

/// Whether `signatures` verify `digest` of `repository` (`registry/path`)
/// under every key of `keys`: for each key, a signature that verifies
/// under it of a payload naming `digest` and, as its
/// `critical.identity.docker-reference`, `repository` (cosign's
/// `--check-claims`: a signature made for the same digest in another
/// repository does not verify); why not, when they do not.
pub fn check(
    signatures: &[Signed],
    digest: Digest,
    repository: &str,
    keys: &[PublicKey],
) -> Result<(), VerifyError> {
    let repository = repository_name(repository);
    if signatures.is_empty() {
        return Err(VerifyError::Missing(format!(
            "{digest} has no cosign signature (no {SIMPLE_SIGNING_MEDIA_TYPE} layer with a signature)"
        )));
    }
    let b64 = base64::engine::general_purpose::STANDARD;
    let decoded: Vec<(Vec<u8>, Vec<u8>)> = signatures
        .iter()
        .filter_map(|s| Some((b64.decode(&s.payload).ok()?, b64.decode(&s.signature).ok()?)))
        .collect();
    for key in keys {
        let mut by_key = decoded.iter().filter(|(p, s)| key.verifies(p, s)).peekable();
        if by_key.peek().is_none() {
            return Err(VerifyError::Invalid(format!(
                "none of the {} cosign signatures of {digest} verifies under the key {}",
                signatures.len(),
                key.id()
            )));
        }
        let of_digest: Vec<Option<String>> = by_key
            .filter_map(|(p, _)| signed(p))
            .filter(|(d, _)| *d == digest.to_string())
            .map(|(_, r)| r)
            .collect();
        if of_digest.is_empty() {
            return Err(VerifyError::Invalid(format!(
                "the signatures of {digest} under the key {} sign another digest (its payload's docker-manifest-digest)",
                key.id()
            )));
        }
        if !of_digest
            .iter()
            .any(|r| r.as_deref() == Some(repository.as_str()))
        {
            let named: Vec<&str> = of_digest
                .iter()
                .map(|r| r.as_deref().unwrap_or("no repository"))
                .collect();
            return Err(VerifyError::Invalid(format!(
                "the signatures of {digest} under the key {} were made for {}, not {repository} (their payload's docker-reference)",
                key.id(),
                named.join(", ")
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "cosign_tests.rs"]
mod tests;
