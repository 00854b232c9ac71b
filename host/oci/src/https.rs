//! A component from an `https://` URL, pinned by its sha256: the store
//! first (a component already there is not downloaded, so a restart needs
//! no network), else one capped, timed download whose bytes are checked
//! against the digest before they are kept.

use crate::digest::Digest;
use crate::store::Store;
use anyhow::Context;
use std::time::Duration;

/// Fetch the component `digest` from `url` into `store`, at most `max`
/// bytes within `timeout`. Whether it came from the store.
pub async fn fetch(
    store: &Store,
    url: &str,
    digest: Digest,
    max: u64,
    timeout: Duration,
) -> anyhow::Result<bool> {
    anyhow::ensure!(url.starts_with("https://"), "{url:?} is not an https:// URL");
    if store.read(digest, max)?.is_some() {
        return Ok(true);
    }
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .https_only(true)
        .connect_timeout(timeout.min(Duration::from_secs(10)))
        .timeout(timeout)
        .user_agent(concat!("wink/", env!("CARGO_PKG_VERSION")))
        .build()
        .context("an HTTP client with rustls on ring")?;
    let mut response = client
        .get(url)
        .send()
        .await
        .with_context(|| format!("{url} cannot be reached"))?;
    let status = response.status();
    anyhow::ensure!(status.is_success(), "{url}: HTTP {status}");
    if let Some(len) = response.content_length() {
        anyhow::ensure!(len <= max, "{url}: {len} bytes, over the cap of {max}");
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await.with_context(|| format!("reading {url}"))? {
        bytes.extend_from_slice(&chunk);
        anyhow::ensure!(bytes.len() as u64 <= max, "{url}: over the cap of {max} bytes");
    }
    store.write("component", digest, &bytes)?;
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_stored_component_needs_no_network_and_only_https_is_fetched() {
        let dir = std::env::temp_dir().join(format!("wink-oci-https-{}", std::process::id()));
        let store = Store::open(&dir).unwrap();
        let bytes = b"\0asm component bytes";
        let digest = Digest::of(bytes);
        store.write("component", digest, bytes).unwrap();
        let timeout = Duration::from_secs(1);
        assert!(
            fetch(
                &store,
                "https://unreachable.invalid/x.wasm",
                digest,
                1 << 20,
                timeout
            )
            .await
            .unwrap()
        );
        let e = fetch(&store, "http://example.com/x.wasm", digest, 1 << 20, timeout)
            .await
            .unwrap_err();
        assert!(e.to_string().contains("not an https:// URL"), "{e}");
        let other = Digest::of(b"not stored");
        let e = fetch(
            &store,
            "https://unreachable.invalid/x.wasm",
            other,
            1 << 20,
            timeout,
        )
        .await
        .unwrap_err();
        assert!(format!("{e:#}").contains("cannot be reached"), "{e:#}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
