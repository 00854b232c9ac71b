//! One registry conversation: resolving a tag to a manifest digest,
//! pulling a manifest and a component by digest (every body read capped
//! by [`crate::wire`], the whole exchange under a deadline, bytes checked
//! against the digest), reading a manifest's cosign signatures
//! ([`Registry::signatures`]), pushing an artifact (through `oci-client`). Owns the client's
//! configuration (plain HTTP hosts, credentials, timeouts) and turning
//! the registry's failures into errors that say what happened.

use crate::artifact::{self, MAX_MANIFEST_BYTES};
use crate::auth::Auths;
use crate::cosign::{self, Signed, VerifyError};
use crate::digest::{Digest, Mismatch};
use crate::wire::Wire;
use anyhow::Context;
use base64::Engine;
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::errors::{OciDistributionError, OciErrorCode};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference, RegistryOperation};
use std::future::Future;
use std::time::Duration;

/// How the registry is reached.
#[derive(Debug, Clone)]
pub struct RegistryOptions {
    /// Registries (`host[:port]`) spoken to over plain HTTP.
    pub plain_http: Vec<String>,
    /// Credentials per registry.
    pub auths: Auths,
    /// The largest component pulled, bytes.
    pub max_component_bytes: u64,
    /// How long one registry operation (a resolve, a manifest, a
    /// component) may take in all, connection included.
    pub timeout: Duration,
}

/// A client for registries.
pub struct Registry {
    /// Pushes (`wink push`).
    client: Client,
    /// Every read: tokens, tags, manifests, blobs, each body capped.
    wire: Wire,
    options: RegistryOptions,
}

impl Registry {
    pub fn new(options: RegistryOptions) -> Registry {
        // reqwest's rustls has no provider of its own here: ring, as the
        // rest of wink uses.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let config = ClientConfig {
            protocol: ClientProtocol::HttpsExcept(options.plain_http.clone()),
            connect_timeout: Some(options.timeout.min(Duration::from_secs(10))),
            read_timeout: Some(options.timeout),
            // An image index is not a plugin: say so rather than choose.
            platform_resolver: None,
            user_agent: concat!("wink/", env!("CARGO_PKG_VERSION")),
            ..ClientConfig::default()
        };
        let http = reqwest::Client::builder()
            .connect_timeout(options.timeout.min(Duration::from_secs(10)))
            .read_timeout(options.timeout)
            .user_agent(concat!("wink/", env!("CARGO_PKG_VERSION")))
            .build()
            .expect("an HTTP client with rustls on ring");
        Registry {
            client: Client::new(config),
            wire: Wire::new(http, options.plain_http.clone(), options.auths.clone()),
            options,
        }
    }

    pub fn options(&self) -> &RegistryOptions {
        &self.options
    }

    /// The manifest digest `reference` names now: its own digest when it
    /// has one, else what its tag points to (a manifest the registry
    /// sends in place of a digest read up to [`MAX_MANIFEST_BYTES`]).
    pub async fn resolve(&self, reference: &Reference) -> anyhow::Result<Digest> {
        if let Some(d) = reference.digest() {
            return Digest::parse(d);
        }
        let resolve = self.wire.resolve(reference, MAX_MANIFEST_BYTES as u64);
        self.deadline(reference, "resolving the tag", resolve).await?
    }

    /// The manifest `digest` of `reference`'s repository, checked against it.
    pub async fn manifest(&self, reference: &Reference, digest: Digest) -> anyhow::Result<Vec<u8>> {
        self.manifest_as(reference, digest, artifact::MANIFEST_MEDIA_TYPE)
            .await
    }

    /// The manifest `digest`, asked for as `accept`, read up to
    /// [`MAX_MANIFEST_BYTES`].
    async fn manifest_as(
        &self,
        reference: &Reference,
        digest: Digest,
        accept: &str,
    ) -> anyhow::Result<Vec<u8>> {
        let what = format!("the manifest of {reference}");
        let path = format!("manifests/{digest}");
        let pull = self
            .wire
            .get(reference, &path, accept, MAX_MANIFEST_BYTES as u64, &what);
        let bytes = self.deadline(reference, "pulling the manifest", pull).await??;
        crate::digest::verify(&what, &bytes, digest)?;
        Ok(bytes)
    }

    /// The component blob `digest` (`size` bytes as the manifest says),
    /// read up to the cap and checked against the digest.
    pub async fn component(
        &self,
        reference: &Reference,
        digest: Digest,
        size: u64,
    ) -> anyhow::Result<Vec<u8>> {
        let max = self.options.max_component_bytes;
        let what = format!("the component of {reference}");
        self.blob(reference, digest, size, max, what).await
    }

    /// The blob `digest`, read up to the `size` its manifest gives (itself
    /// at most `max`) and checked against the digest.
    async fn blob(
        &self,
        reference: &Reference,
        digest: Digest,
        size: u64,
        max: u64,
        what: String,
    ) -> anyhow::Result<Vec<u8>> {
        anyhow::ensure!(
            size <= max,
            "{what} is {size} bytes by its manifest, over the cap of {max} bytes"
        );
        let path = format!("blobs/{digest}");
        let read = self
            .wire
            .get(reference, &path, "application/octet-stream, */*", size, &what);
        let doing = format!("pulling {}", what.split(" of ").next().unwrap_or("a blob"));
        let bytes = self
            .deadline(reference, &doing, read)
            .await?
            .with_context(|| format!("its manifest gives {size} bytes"))?;
        let actual = Digest::of(&bytes);
        if actual != digest {
            return Err(Mismatch {
                what,
                expected: digest,
                actual,
            }
            .into());
        }
        Ok(bytes)
    }

    /// The cosign signatures of the manifest `digest` of `reference`'s
    /// repository: the simple-signing layers of the manifest its tag
    /// `sha256-<hex>.sig` names, each payload checked against its digest.
    /// No such tag is [`VerifyError::Missing`]; a registry that fails,
    /// [`VerifyError::Failed`].
    pub async fn signatures(
        &self,
        reference: &Reference,
        digest: Digest,
    ) -> Result<Vec<Signed>, VerifyError> {
        let tag = Reference::with_tag(
            reference.registry().to_string(),
            reference.repository().to_string(),
            cosign::signature_tag(digest),
        );
        let sig_digest = match self.resolve(&tag).await {
            Ok(d) => d,
            Err(e) if e.downcast_ref::<OciDistributionError>().is_some_and(not_found) => {
                return Err(VerifyError::Missing(format!(
                    "{digest} has no cosign signature: {tag} is not in the registry"
                )));
            }
            Err(e) => return Err(VerifyError::Failed(e.context("reading the cosign signatures"))),
        };
        let by_digest = tag.clone_with_digest(sig_digest.to_string());
        let accept = format!("{}, {DOCKER_MANIFEST_MEDIA_TYPE}", artifact::MANIFEST_MEDIA_TYPE);
        let read = async {
            let manifest = self.manifest_as(&by_digest, sig_digest, &accept).await?;
            let layers = cosign::signature_layers(&manifest).with_context(|| format!("{tag}"))?;
            let mut signed = Vec::new();
            for (payload, size, signature) in layers {
                let what = format!("the signature payload of {tag}");
                let bytes = self
                    .blob(&by_digest, payload, size, cosign::MAX_PAYLOAD_BYTES, what)
                    .await?;
                signed.push(Signed {
                    payload: base64::engine::general_purpose::STANDARD.encode(bytes),
                    signature,
                });
            }
            anyhow::Ok(signed)
        };
        read.await
            .map_err(|e| VerifyError::Failed(e.context("reading the cosign signatures")))
    }

    /// Push the component `bytes` as a Wasm artifact under `reference`
    /// (a tag); the manifest's digest.
    pub async fn push(&self, reference: &Reference, bytes: &[u8]) -> anyhow::Result<Digest> {
        anyhow::ensure!(
            bytes.len() as u64 <= self.options.max_component_bytes,
            "the component is {} bytes, over the cap of {} MiB",
            bytes.len(),
            self.options.max_component_bytes >> 20
        );
        let built = artifact::build(bytes, artifact::created()?)?;
        let auth = self.options.auths.for_registry(reference.resolve_registry());
        let push = async {
            // A push token (read capped, as every read) or Basic
            // credentials before anything.
            let auth = match self.wire.push_token(reference).await? {
                Some(token) => RegistryAuth::Bearer(token),
                None => auth,
            };
            self.client
                .auth(reference, &auth, RegistryOperation::Push)
                .await?;
            self.client
                .push_blob(reference, bytes.to_vec(), &built.layer_digest.to_string())
                .await?;
            self.client
                .push_blob(reference, built.config.clone(), &built.config_digest.to_string())
                .await?;
            let content_type = http::HeaderValue::from_static(artifact::MANIFEST_MEDIA_TYPE);
            self.client
                .push_manifest_raw(reference, built.manifest.clone(), content_type)
                .await
        };
        self.deadline(reference, "pushing", push).await?;
        Ok(built.manifest_digest)
    }

    /// `op` under the deadline, its failure explained.
    async fn deadline<T>(
        &self,
        reference: &Reference,
        doing: &str,
        op: impl Future<Output = Result<T, OciDistributionError>>,
    ) -> anyhow::Result<T> {
        let registry = reference.resolve_registry();
        match tokio::time::timeout(self.options.timeout, op).await {
            Err(_) => anyhow::bail!(
                "{reference}: the registry {registry} did not finish {doing} within {:?} (down, hanging or too slow)",
                self.options.timeout
            ),
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(explain(e, reference, doing)),
        }
    }
}

/// The media type of a Docker image manifest (what older cosigns push
/// their signatures as).
const DOCKER_MANIFEST_MEDIA_TYPE: &str = "application/vnd.docker.distribution.manifest.v2+json";

/// Whether the registry said that what was asked for is not there.
fn not_found(e: &OciDistributionError) -> bool {
    match e {
        OciDistributionError::ImageManifestNotFoundError(_) => true,
        OciDistributionError::RegistryError { envelope, .. } => envelope.errors.iter().any(|x| {
            matches!(
                x.code,
                OciErrorCode::ManifestUnknown
                    | OciErrorCode::NameUnknown
                    | OciErrorCode::BlobUnknown
                    | OciErrorCode::NotFound
            )
        }),
        OciDistributionError::ServerError { code, .. } => *code == 404,
        _ => false,
    }
}

/// What a registry failure means, in one sentence with its cause after.
fn explain(e: OciDistributionError, reference: &Reference, doing: &str) -> anyhow::Error {
    let registry = reference.resolve_registry();
    let status = match &e {
        OciDistributionError::ServerError { code, .. } => Some(*code),
        OciDistributionError::UnauthorizedError { .. } => Some(401),
        _ => None,
    };
    let not_found = not_found(&e);
    let denied = match &e {
        OciDistributionError::AuthenticationFailure(_) => true,
        OciDistributionError::RegistryError { envelope, .. } => envelope
            .errors
            .iter()
            .any(|x| matches!(x.code, OciErrorCode::Unauthorized | OciErrorCode::Denied)),
        _ => matches!(status, Some(401 | 403)),
    };
    let (unreachable, timed_out) = match &e {
        OciDistributionError::RequestError(r) => (r.is_connect() && !r.is_timeout(), r.is_timeout()),
        _ => (false, false),
    };
    let what = if let OciDistributionError::DigestError(d) = &e {
        format!("digest mismatch while {doing} ({d}): refused, nothing stored")
    } else if timed_out {
        format!("the registry {registry} did not answer in time while {doing} (hanging or too slow)")
    } else if unreachable {
        format!("the registry {registry} cannot be reached while {doing} (down or unreachable)")
    } else if not_found {
        format!("not found in the registry {registry} (404) while {doing}")
    } else if denied {
        format!(
            "the registry {registry} refused access (401/403) while {doing}: give credentials with --registry-auth FILE (a dockerconfigjson)"
        )
    } else if status == Some(429)
        || matches!(&e, OciDistributionError::RegistryError { envelope, .. }
            if envelope.errors.iter().any(|x| x.code == OciErrorCode::Toomanyrequests))
    {
        format!("the registry {registry} is rate limiting (429) while {doing}: try again later")
    } else if let Some(code) = status.filter(|c| *c >= 500) {
        format!(
            "the registry {registry} failed ({code}) while {doing}: a fault of the registry, try again later"
        )
    } else {
        format!("the registry {registry} failed while {doing}")
    };
    anyhow::Error::new(e).context(format!("{reference}: {what}"))
}
