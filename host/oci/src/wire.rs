//! The read side of the distribution protocol, spoken by wink itself so
//! that every byte a registry sends is counted before it is held: the
//! token dance (a `401` from `/v2/` naming a Bearer realm, the realm's
//! answer read up to [`MAX_TOKEN_BYTES`]), a tag resolved by `HEAD` (or,
//! when the registry gives no `Docker-Content-Digest`, by a `GET` read up
//! to the manifest cap), a manifest and a blob read up to their caps, and
//! an error's body read up to [`MAX_ERROR_BYTES`]. Failures are
//! `oci-client`'s error type, so that one explanation covers both clients.

use crate::auth::Auths;
use crate::digest::Digest;
use oci_client::Reference;
use oci_client::errors::{OciDistributionError, OciEnvelope};
use oci_client::secrets::RegistryAuth;
use reqwest::{RequestBuilder, Response, StatusCode};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The largest answer of a token endpoint read (a token, its expiry).
pub const MAX_TOKEN_BYTES: usize = 64 << 10;
/// The most of an error's body read (what the registry says went wrong).
pub const MAX_ERROR_BYTES: usize = 4 << 10;
/// At most this many tokens are kept (then all are dropped).
const MAX_TOKENS: usize = 256;
/// A token without `expires_in` is kept this long (the token spec's default).
const TOKEN_LIFETIME: Duration = Duration::from_secs(60);

/// What a manifest GET or HEAD accepts: the OCI and Docker manifests and
/// indexes (an index is refused later, by its media type).
pub const MANIFEST_ACCEPT: &str = "application/vnd.oci.image.manifest.v1+json, application/vnd.oci.image.index.v1+json, application/vnd.docker.distribution.manifest.v2+json, application/vnd.docker.distribution.manifest.list.v2+json";

/// A body over its cap: said with the cap, nothing of it kept.
#[derive(Debug, thiserror::Error)]
#[error("{what} is {got} bytes or more, over the cap of {cap} bytes")]
pub struct OverCap {
    pub what: String,
    pub got: u64,
    pub cap: u64,
}

/// How a request is authorised.
#[derive(Clone)]
enum Credential {
    None,
    Basic(String, String),
    Bearer(String),
}

/// The HTTP client and what it knows of each registry.
pub struct Wire {
    http: reqwest::Client,
    plain_http: Vec<String>,
    auths: Auths,
    /// Bearer tokens per (registry, scope), with when they expire.
    tokens: Mutex<HashMap<(String, String), (String, Instant)>>,
}

impl Wire {
    pub fn new(http: reqwest::Client, plain_http: Vec<String>, auths: Auths) -> Wire {
        Wire {
            http,
            plain_http,
            auths,
            tokens: Mutex::new(HashMap::new()),
        }
    }

    fn base(&self, registry: &str) -> String {
        let scheme = match self.plain_http.iter().any(|h| h == registry) {
            true => "http",
            false => "https",
        };
        format!("{scheme}://{registry}/v2")
    }

    /// A bearer token for pushing to `reference`'s repository when the
    /// registry asks for one (read as [`Wire::credential`] reads it).
    pub async fn push_token(&self, reference: &Reference) -> Result<Option<String>, OciDistributionError> {
        let scope = format!("repository:{}:pull,push", reference.repository());
        match self.credential(reference, &scope).await? {
            Credential::Bearer(t) => Ok(Some(t)),
            _ => Ok(None),
        }
    }

    /// How to authorise requests to `reference`'s repository for `scope`:
    /// a token from the realm `/v2/`'s challenge names (kept until it
    /// expires), Basic credentials, or nothing.
    async fn credential(
        &self,
        reference: &Reference,
        scope: &str,
    ) -> Result<Credential, OciDistributionError> {
        let registry = reference.resolve_registry();
        let auth = self.auths.for_registry(registry);
        if let RegistryAuth::Bearer(token) = &auth {
            return Ok(Credential::Bearer(token.clone()));
        }
        let key = (registry.to_string(), scope.to_string());
        if let Some((token, until)) = self.tokens.lock().unwrap().get(&key)
            && *until > Instant::now()
        {
            return Ok(Credential::Bearer(token.clone()));
        }
        let basic = match &auth {
            RegistryAuth::Basic(u, p) => Credential::Basic(u.clone(), p.clone()),
            _ => Credential::None,
        };
        // The body of /v2/ is not read: only its status and challenge matter.
        let probe = self.http.get(format!("{}/", self.base(registry))).send().await?;
        if probe.status() != StatusCode::UNAUTHORIZED {
            return Ok(basic);
        }
        let Some(challenge) = probe
            .headers()
            .get_all(reqwest::header::WWW_AUTHENTICATE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find_map(bearer_challenge)
        else {
            return Ok(basic);
        };
        drop(probe);
        let mut url = reqwest::Url::parse(&challenge.realm)
            .map_err(|e| OciDistributionError::UrlParseError(format!("{}: {e}", challenge.realm)))?;
        url.query_pairs_mut().append_pair("scope", scope);
        if let Some(service) = &challenge.service {
            url.query_pairs_mut().append_pair("service", service);
        }
        let response = authorise(self.http.get(url.clone()), &basic).send().await?;
        let status = response.status();
        if !status.is_success() {
            let body = read_error_body(response).await;
            return Err(OciDistributionError::AuthenticationFailure(format!(
                "{url}: HTTP {status}: {body}"
            )));
        }
        let what = format!("the token answer of {}", challenge.realm);
        let body = read_capped(response, MAX_TOKEN_BYTES as u64, &what)
            .await?
            .map_err(|e| OciDistributionError::AuthenticationFailure(e.to_string()))?;
        #[derive(serde::Deserialize)]
        struct Answer {
            token: Option<String>,
            access_token: Option<String>,
            expires_in: Option<u64>,
        }
        let answer: Answer = serde_json::from_slice(&body)
            .map_err(|e| OciDistributionError::RegistryTokenDecodeError(e.to_string()))?;
        let token = answer.token.or(answer.access_token).ok_or_else(|| {
            OciDistributionError::RegistryTokenDecodeError("no `token` in the answer".into())
        })?;
        let lifetime = answer
            .expires_in
            .map(|s| Duration::from_secs(s.clamp(1, 3600)))
            .unwrap_or(TOKEN_LIFETIME);
        let mut tokens = self.tokens.lock().unwrap();
        if tokens.len() >= MAX_TOKENS {
            tokens.clear();
        }
        tokens.insert(key, (token.clone(), Instant::now() + lifetime * 9 / 10));
        Ok(Credential::Bearer(token))
    }

    /// A GET or HEAD of `path` under `reference`'s repository, authorised
    /// for pulling; a status other than success is the registry's error
    /// (its body read up to [`MAX_ERROR_BYTES`]).
    async fn send(
        &self,
        reference: &Reference,
        head: bool,
        path: &str,
        accept: &str,
    ) -> Result<Response, OciDistributionError> {
        let scope = format!("repository:{}:pull", reference.repository());
        let credential = self.credential(reference, &scope).await?;
        let registry = reference.resolve_registry();
        let url = format!("{}/{}/{path}", self.base(registry), reference.repository());
        let request = match head {
            true => self.http.head(&url),
            false => self.http.get(&url),
        };
        let response = authorise(request.header("Accept", accept), &credential)
            .send()
            .await?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let body = read_error_body(response).await;
        if status == StatusCode::UNAUTHORIZED {
            return Err(OciDistributionError::UnauthorizedError { url });
        }
        Err(match serde_json::from_str::<OciEnvelope>(&body) {
            Ok(envelope) if status.is_client_error() => OciDistributionError::RegistryError { envelope, url },
            _ => OciDistributionError::ServerError {
                code: status.as_u16(),
                url,
                message: body,
            },
        })
    }

    /// The manifest digest `reference`'s tag points to: the registry's
    /// `Docker-Content-Digest` on a HEAD, else the digest of the manifest
    /// a GET answers, read up to `max` bytes.
    pub async fn resolve(
        &self,
        reference: &Reference,
        max: u64,
    ) -> Result<anyhow::Result<Digest>, OciDistributionError> {
        let tag = reference.tag().unwrap_or("latest");
        let path = format!("manifests/{tag}");
        let head = self.send(reference, true, &path, MANIFEST_ACCEPT).await?;
        let said = head
            .headers()
            .get("Docker-Content-Digest")
            .and_then(|v| v.to_str().ok())
            .map(Digest::parse);
        if let Some(said) = said {
            return Ok(said);
        }
        drop(head);
        let response = self.send(reference, false, &path, MANIFEST_ACCEPT).await?;
        let what = format!("the manifest of {reference}");
        Ok(read_capped(response, max, &what).await?.map(|b| Digest::of(&b)))
    }

    /// The body of a GET of `path` (`manifests/<digest>`, `blobs/<digest>`)
    /// under `reference`'s repository, read up to `max` bytes: past it,
    /// an [`OverCap`] naming `what`, and nothing more read.
    pub async fn get(
        &self,
        reference: &Reference,
        path: &str,
        accept: &str,
        max: u64,
        what: &str,
    ) -> Result<anyhow::Result<Vec<u8>>, OciDistributionError> {
        let response = self.send(reference, false, path, accept).await?;
        read_capped(response, max, what).await
    }
}

fn authorise(request: RequestBuilder, credential: &Credential) -> RequestBuilder {
    match credential {
        Credential::None => request,
        Credential::Basic(u, p) => request.basic_auth(u, Some(p)),
        Credential::Bearer(t) => request.bearer_auth(t),
    }
}

/// The body of `response`, at most `max` bytes: a `Content-Length` over
/// it is refused before a byte is read, a body that grows past it is cut
/// at the first chunk that would cross it.
pub async fn read_capped(
    mut response: Response,
    max: u64,
    what: &str,
) -> Result<anyhow::Result<Vec<u8>>, OciDistributionError> {
    let over = |got: u64| {
        anyhow::Error::new(OverCap {
            what: what.to_string(),
            got,
            cap: max,
        })
    };
    if let Some(len) = response.content_length()
        && len > max
    {
        return Ok(Err(over(len)));
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let got = (bytes.len() + chunk.len()) as u64;
        if got > max {
            return Ok(Err(over(got)));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(Ok(bytes))
}

/// Up to [`MAX_ERROR_BYTES`] of an error's body, as text (what could not
/// be read is left out).
async fn read_error_body(mut response: Response) -> String {
    let mut bytes = Vec::new();
    while bytes.len() < MAX_ERROR_BYTES
        && let Ok(Some(chunk)) = response.chunk().await
    {
        bytes.extend_from_slice(&chunk);
    }
    bytes.truncate(MAX_ERROR_BYTES);
    String::from_utf8_lossy(&bytes).into_owned()
}

/// A Bearer challenge's realm and service.
#[derive(Debug, PartialEq)]
struct Challenge {
    realm: String,
    service: Option<String>,
}

/// The Bearer challenge of a `WWW-Authenticate` value, if it is one:
/// `Bearer realm="...",service="...",scope="..."`.
fn bearer_challenge(header: &str) -> Option<Challenge> {
    let (scheme, rest) = header.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let mut params: HashMap<String, String> = HashMap::new();
    let mut chars = rest.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| *c == ',' || c.is_whitespace()) {
            chars.next();
        }
        let key: String = chars.by_ref().take_while(|c| *c != '=').collect();
        if key.is_empty() {
            break;
        }
        let mut value = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => value.extend(chars.next()),
                    '"' => break,
                    c => value.push(c),
                }
            }
        } else {
            while let Some(c) = chars.peek().copied().filter(|c| *c != ',') {
                value.push(c);
                chars.next();
            }
        }
        params.insert(key.trim().to_ascii_lowercase(), value);
    }
    Some(Challenge {
        realm: params.remove("realm")?,
        service: params.remove("service"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_bearer_challenge() {
        let c = bearer_challenge(
            r#"Bearer realm="https://auth.example/token",service="registry.example",scope="repository:a/b:pull,push""#,
        )
        .unwrap();
        assert_eq!(
            c,
            Challenge {
                realm: "https://auth.example/token".into(),
                service: Some("registry.example".into())
            }
        );
        assert_eq!(
            bearer_challenge("bearer realm=http://x/t").unwrap().realm,
            "http://x/t"
        );
        assert!(bearer_challenge(r#"Basic realm="x""#).is_none());
        assert!(bearer_challenge(r#"Bearer service="x""#).is_none());
    }
}
