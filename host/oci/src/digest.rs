//! Content digests: `sha256:<64 lowercase hex>`, the only algorithm wink
//! accepts, parsed strictly and computed over bytes or a stream of them.

use sha2::{Digest as _, Sha256};
use std::fmt;

/// A sha256 content digest.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest([u8; 32]);

impl Digest {
    /// Parse `sha256:<64 lowercase hex>`; anything else is refused by name.
    pub fn parse(s: &str) -> anyhow::Result<Digest> {
        let Some(hex_part) = s.strip_prefix("sha256:") else {
            anyhow::bail!("{s:?}: not a sha256 digest (expected sha256:<64 hex digits>)");
        };
        let lower = hex_part.len() == 64
            && hex_part
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        anyhow::ensure!(
            lower,
            "{s:?}: not a sha256 digest (expected sha256:<64 lowercase hex digits>)"
        );
        let mut out = [0u8; 32];
        hex::decode_to_slice(hex_part, &mut out)?;
        Ok(Digest(out))
    }

    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Digest {
        Digest(Sha256::digest(bytes).into())
    }

    /// The 64 hex digits, without the algorithm.
    pub fn hex(&self) -> String {
        hex::encode(self.0)
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sha256:{}", self.hex())
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A running sha256 over bytes as they arrive.
#[derive(Default)]
pub struct Hasher(Sha256);

impl Hasher {
    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    pub fn finish(self) -> Digest {
        Digest(self.0.finalize().into())
    }
}

/// Bytes whose digest is not the one they were asked for.
#[derive(Debug, thiserror::Error)]
#[error("digest mismatch for {what}: expected {expected}, got {actual} (refused; nothing stored)")]
pub struct Mismatch {
    pub what: String,
    pub expected: Digest,
    pub actual: Digest,
}

/// `bytes` if their digest is `expected`, else a [`Mismatch`].
pub fn verify(what: &str, bytes: &[u8], expected: Digest) -> Result<(), Mismatch> {
    let actual = Digest::of(bytes);
    match actual == expected {
        true => Ok(()),
        false => Err(Mismatch {
            what: what.to_string(),
            expected,
            actual,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_only_sha256_lowercase() {
        let d = Digest::of(b"abc");
        assert_eq!(
            d.to_string(),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(Digest::parse(&d.to_string()).unwrap(), d);
        assert!(Digest::parse(&d.to_string().to_uppercase()).is_err());
        assert!(Digest::parse("sha512:00").is_err());
        assert!(Digest::parse("sha256:abc").is_err());
    }

    #[test]
    fn verify_names_both_digests() {
        let e = verify("layer", b"xyz", Digest::of(b"abc")).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("digest mismatch") && msg.contains(&Digest::of(b"xyz").to_string()),
            "{msg}"
        );
    }
}
