//! The webhook server's certificates. Either the operator's (a certificate
//! and key file, e.g. cert-manager's Secret mounted: read again whenever
//! they change), or wink's own: a CA kept in a Secret of wink's namespace
//! (created when missing, reused on restart, so every replica signs with
//! the same CA and one `caBundle` trusts them all) and a serving
//! certificate for the Service's DNS names and the webhook URL's host,
//! issued at start and renewed well before it expires. Either way the
//! TLS server takes its key from a [`Resolver`], so a new certificate is
//! served by the next handshake, without a restart; and the CA bundle the
//! webhook configurations carry is published on a watch channel.
//!
//! Owns issuing, storing and reloading certificates; it never serves.

use anyhow::Context;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, PostParams};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::sync::watch;
use wink_informer::repeated::{RepeatedFailure, short_anyhow, short_error};

/// The CA Secret's keys.
pub const CA_CERT_KEY: &str = "ca.crt";
pub const CA_KEY_KEY: &str = "ca.key";
/// How long wink's CA is valid.
const CA_VALIDITY: Duration = Duration::from_secs(10 * 365 * 24 * 3600);
/// How long a serving certificate is valid; it is replaced once two
/// thirds of its life have passed (30 days before its end).
pub const SERVING_VALIDITY: Duration = Duration::from_secs(90 * 24 * 3600);
/// How often the operator's files and the CA Secret are looked at.
const RECHECK: Duration = Duration::from_secs(10);

/// Where the certificates come from.
#[derive(Clone)]
pub enum Source {
    /// The operator's files (PEM); the CA bundle is `ca`'s, else the
    /// certificate file's own chain.
    Files {
        cert: PathBuf,
        key: PathBuf,
        ca: Option<PathBuf>,
    },
    /// wink's own CA, kept in the Secret `secret` of `namespace`, and a
    /// serving certificate for `names` (DNS names or IP addresses).
    Own {
        client: kube::Client,
        namespace: String,
        secret: String,
        names: Vec<String>,
        /// How long its serving certificates are valid ([`SERVING_VALIDITY`]).
        validity: Duration,
    },
}

/// The key the TLS server presents, swapped in place.
#[derive(Debug)]
pub struct Resolver {
    current: RwLock<Arc<CertifiedKey>>,
}

impl Resolver {
    fn new(key: CertifiedKey) -> Arc<Resolver> {
        Arc::new(Resolver {
            current: RwLock::new(Arc::new(key)),
        })
    }

    fn swap(&self, key: CertifiedKey) {
        *self.current.write().unwrap() = Arc::new(key);
    }

    /// The certificate chain served now.
    pub fn chain(&self) -> Vec<CertificateDer<'static>> {
        self.current.read().unwrap().cert.clone()
    }
}

impl ResolvesServerCert for Resolver {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current.read().unwrap().clone())
    }
}

/// The server's certificates and the CA bundle that trusts them.
pub struct Certs {
    pub resolver: Arc<Resolver>,
    /// The CA bundle (PEM), for the webhook configurations' `caBundle`.
    pub ca_bundle: watch::Receiver<String>,
}

/// A CA: its certificate (as issued, PEM) and what signs with it.
struct Ca {
    pem: String,
    cert: rcgen::Certificate,
    key: KeyPair,
}

fn now() -> time::OffsetDateTime {
    time::OffsetDateTime::now_utc()
}

/// The CA's parameters: the same subject every time, so a CA read back
/// from its Secret signs certificates its stored certificate verifies.
fn ca_params() -> CertificateParams {
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, "wink admission CA");
    dn.push(DnType::OrganizationName, "wink");
    params.distinguished_name = dn;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params.not_before = now() - time::Duration::hours(1);
    params.not_after = now() + CA_VALIDITY;
    params
}

impl Ca {
    fn new() -> anyhow::Result<Ca> {
        let key = KeyPair::generate()?;
        let cert = ca_params().self_signed(&key)?;
        Ok(Ca {
            pem: cert.pem(),
            cert,
            key,
        })
    }

    /// The CA of a Secret's certificate and key (PEM).
    fn read(cert_pem: &str, key_pem: &str) -> anyhow::Result<Ca> {
        let key = KeyPair::from_pem(key_pem).context("the CA key is not a PEM private key")?;
        anyhow::ensure!(
            CertificateDer::from_pem_slice(cert_pem.as_bytes()).is_ok(),
            "the CA certificate is not PEM"
        );
        // What signs is the subject and the key: the same as the stored one's.
        let cert = ca_params().self_signed(&key)?;
        Ok(Ca {
            pem: cert_pem.to_string(),
            cert,
            key,
        })
    }

    /// A serving certificate for `names`, valid for `validity`.
    fn issue(&self, names: &[String], validity: Duration) -> anyhow::Result<CertifiedKey> {
        let mut params = CertificateParams::new(names.to_vec())?;
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, names.first().map_or("wink", String::as_str));
        params.distinguished_name = dn;
        params.is_ca = IsCa::ExplicitNoCa;
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.not_before = now() - time::Duration::hours(1);
        params.not_after = now() + validity;
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &self.cert, &self.key)?;
        let chain = vec![cert.der().clone()];
        certified(chain, PrivateKeyDer::Pkcs8(key.serialize_der().into()))
    }
}

fn certified(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> anyhow::Result<CertifiedKey> {
    let signing = rustls::crypto::ring::sign::any_supported_type(&key)
        .map_err(|e| anyhow::anyhow!("the private key cannot sign: {e}"))?;
    Ok(CertifiedKey::new(chain, signing))
}

/// The CA of `secret`, or none when it has no CA (missing keys).
fn ca_of(secret: &Secret) -> anyhow::Result<Option<Ca>> {
    let data = secret.data.as_ref();
    let field = |k: &str| {
        data.and_then(|d| d.get(k))
            .map(|b| String::from_utf8_lossy(&b.0).into_owned())
    };
    match (field(CA_CERT_KEY), field(CA_KEY_KEY)) {
        (Some(cert), Some(key)) => Ca::read(&cert, &key).map(Some),
        _ => Ok(None),
    }
}

/// The CA of the Secret `name`: read, or created (by this replica, or by
/// another that created it first).
async fn load_or_create_ca(api: &Api<Secret>, name: &str) -> anyhow::Result<Ca> {
    for _ in 0..3 {
        if let Some(secret) = api
            .get_opt(name)
            .await
            .with_context(|| format!("cannot read the Secret {name}"))?
        {
            if let Some(ca) =
                ca_of(&secret).with_context(|| format!("the Secret {name} holds no usable CA"))?
            {
                tracing::info!(secret = name, "admission CA read from its Secret");
                return Ok(ca);
            }
            anyhow::bail!(
                "the Secret {name} has no {CA_CERT_KEY} and {CA_KEY_KEY}: delete it for wink to create its CA, \
                 or give --tls-cert-file and --tls-key-file"
            );
        }
        let ca = Ca::new()?;
        let secret = Secret {
            metadata: kube::api::ObjectMeta {
                name: Some(name.to_string()),
                labels: Some(BTreeMap::from([(
                    "app.kubernetes.io/managed-by".into(),
                    "wink".into(),
                )])),
                ..Default::default()
            },
            type_: Some("Opaque".into()),
            data: Some(BTreeMap::from([
                (CA_CERT_KEY.into(), ByteString(ca.pem.clone().into_bytes())),
                (CA_KEY_KEY.into(), ByteString(ca.key.serialize_pem().into_bytes())),
            ])),
            ..Default::default()
        };
        match api.create(&PostParams::default(), &secret).await {
            Ok(_) => {
                tracing::info!(secret = name, "admission CA created and kept in its Secret");
                return Ok(ca);
            }
            // Another replica created it first: use theirs.
            Err(kube::Error::Api(e)) if e.code == 409 => continue,
            Err(e) => return Err(e).with_context(|| format!("cannot create the Secret {name}")),
        }
    }
    anyhow::bail!("the Secret {name} kept appearing and vanishing")
}

/// The operator's files as a key and a CA bundle.
fn read_files(cert: &PathBuf, key: &PathBuf, ca: Option<&PathBuf>) -> anyhow::Result<(CertifiedKey, String)> {
    let read = |p: &PathBuf, what: &'static str| {
        wink_input::read_text(p, 1 << 20, what).with_context(|| format!("cannot read {what} {}", p.display()))
    };
    let cert_pem = read(cert, "the TLS certificate file")?;
    let key_pem = read(key, "the TLS key file")?;
    let chain = CertificateDer::pem_slice_iter(cert_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| anyhow::anyhow!("{} is not a PEM certificate: {e:?}", cert.display()))?;
    anyhow::ensure!(!chain.is_empty(), "{} holds no certificate", cert.display());
    let private = PrivateKeyDer::from_pem_slice(key_pem.as_bytes())
        .map_err(|e| anyhow::anyhow!("{} is not a PEM private key: {e:?}", key.display()))?;
    let bundle = match ca {
        Some(ca) => read(ca, "the TLS CA file")?,
        None => cert_pem,
    };
    Ok((certified(chain, private)?, bundle))
}

/// Load the certificates of `source` and keep them current in the
/// background (until the returned [`Certs`]' receivers are all dropped).
pub async fn start(source: Source) -> anyhow::Result<Certs> {
    match source {
        Source::Files { cert, key, ca } => {
            let (served, bundle) = read_files(&cert, &key, ca.as_ref())?;
            let resolver = Resolver::new(served);
            let (tx, rx) = watch::channel(bundle);
            let r = resolver.clone();
            tokio::spawn(async move {
                let mut failures = RepeatedFailure::default();
                loop {
                    tokio::time::sleep(RECHECK).await;
                    if tx.is_closed() {
                        return;
                    }
                    // Re-read each time: a mounted Secret changes by a symlink swap.
                    match read_files(&cert, &key, ca.as_ref()) {
                        Ok((served, bundle)) => {
                            if served.cert != r.chain() {
                                tracing::info!(cert = %cert.display(), "TLS certificate file changed: now served");
                                r.swap(served);
                            }
                            tx.send_if_modified(|b| (*b != bundle).then(|| *b = bundle).is_some());
                            if let Some(said) = failures.succeeded() {
                                tracing::info!("TLS files read again: {said}");
                            }
                        }
                        Err(e) => {
                            if let Some(said) = failures.failed(&short_anyhow(&e)) {
                                tracing::warn!("TLS files not reloaded (the previous ones stay): {said}");
                            }
                        }
                    }
                }
            });
            Ok(Certs {
                resolver,
                ca_bundle: rx,
            })
        }
        Source::Own {
            client,
            namespace,
            secret,
            names,
            validity,
        } => {
            let api: Api<Secret> = Api::namespaced(client, &namespace);
            let ca = load_or_create_ca(&api, &secret).await?;
            let resolver = Resolver::new(ca.issue(&names, validity)?);
            tracing::info!(names = ?names, "admission serving certificate issued");
            let (tx, rx) = watch::channel(ca.pem.clone());
            tokio::spawn(keep_own(api, secret, (names, validity), ca, resolver.clone(), tx));
            Ok(Certs {
                resolver,
                ca_bundle: rx,
            })
        }
    }
}

/// Renew the serving certificate before it expires, and follow the CA
/// Secret: a CA replaced there (an operator rotating it) is adopted; a
/// Secret deleted is written again with the CA in use.
async fn keep_own(
    api: Api<Secret>,
    secret: String,
    (names, validity): (Vec<String>, Duration),
    mut ca: Ca,
    resolver: Arc<Resolver>,
    tx: watch::Sender<String>,
) {
    let mut issued = tokio::time::Instant::now();
    let renew_after = validity * 2 / 3;
    // The CA Secret's failures, said once a minute while they last.
    let mut failures = RepeatedFailure::default();
    loop {
        tokio::time::sleep((RECHECK * 6).min(validity / 6)).await;
        if tx.is_closed() {
            return;
        }
        let mut reissue = issued.elapsed() >= renew_after;
        let (mut failure, mut unread) = (None, false);
        match api.get_opt(&secret).await {
            Ok(Some(s)) => match ca_of(&s) {
                Ok(Some(stored)) if stored.pem != ca.pem => {
                    tracing::info!(secret, "the admission CA in its Secret changed: adopted");
                    tx.send_replace(rotated(&stored.pem, &ca.pem));
                    ca = stored;
                    reissue = true;
                }
                Ok(_) => {}
                Err(e) => {
                    failure = Some(format!(
                        "the CA Secret is unusable (the CA in use stays): {}",
                        short_anyhow(&e)
                    ))
                }
            },
            Ok(None) => match load_or_create_ca(&api, &secret).await {
                Ok(stored) if stored.pem != ca.pem => {
                    tx.send_replace(rotated(&stored.pem, &ca.pem));
                    ca = stored;
                    reissue = true;
                }
                Ok(_) => {}
                Err(e) => {
                    failure = Some(format!(
                        "the CA Secret could not be written again: {}",
                        short_anyhow(&e)
                    ))
                }
            },
            Err(e) => {
                tracing::debug!(secret, "the CA Secret could not be read: {}", short_error(&e));
                unread = true;
            }
        }
        match failure {
            Some(what) => {
                if let Some(said) = failures.failed(&what) {
                    tracing::warn!(secret, "{said}");
                }
            }
            // Unread: nothing known either way.
            None if unread => {}
            None => {
                if let Some(said) = failures.succeeded() {
                    tracing::info!(secret, "the CA Secret is usable again: {said}");
                }
            }
        }
        if reissue {
            match ca.issue(&names, validity) {
                Ok(key) => {
                    resolver.swap(key);
                    issued = tokio::time::Instant::now();
                    tracing::info!("admission serving certificate renewed");
                }
                Err(e) => tracing::error!("admission serving certificate not renewed: {}", short_anyhow(&e)),
            }
        }
    }
}

/// The CA bundle after a rotation from `old` to `new`: both, so that a
/// replica still serving a certificate of the old CA (each adopts the new
/// one within a minute) is trusted meanwhile.
fn rotated(new: &str, old: &str) -> String {
    let mut bundle = new.trim_end().to_string();
    bundle.push('\n');
    bundle.push_str(old.trim_end());
    bundle.push('\n');
    bundle
}

/// The names a serving certificate is for: the Service's DNS names in
/// `namespace`, and `url`'s host when given.
pub fn names(service: &str, namespace: &str, url: Option<&str>) -> Vec<String> {
    let mut names = vec![
        format!("{service}.{namespace}.svc"),
        format!("{service}.{namespace}.svc.cluster.local"),
        format!("{service}.{namespace}"),
        service.to_string(),
    ];
    if let Some(host) = url.and_then(url_host)
        && !names.contains(&host)
    {
        names.insert(0, host);
    }
    names
}

/// The host of an `https://host[:port]/path` URL (an IPv6 address without
/// its brackets).
pub fn url_host(url: &str) -> Option<String> {
    let rest = url.strip_prefix("https://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next()?,
        None => authority.rsplit_once(':').map_or(authority, |(h, _)| h),
    };
    (!host.is_empty()).then(|| host.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rotated_bundle_trusts_both_cas() {
        let (old, new) = (Ca::new().unwrap(), Ca::new().unwrap());
        let bundle = rotated(&new.pem, &old.pem);
        let certs: Vec<_> = CertificateDer::pem_slice_iter(bundle.as_bytes())
            .map(Result::unwrap)
            .collect();
        assert_eq!(certs.len(), 2);
        assert_eq!(certs[0], *new.cert.der());
    }

    #[test]
    fn names_cover_the_service_and_the_url_host() {
        let n = names("wink", "wink-system", Some("https://127.0.0.1:8443/x"));
        assert_eq!(n[0], "127.0.0.1");
        assert!(n.contains(&"wink.wink-system.svc".to_string()));
        assert!(n.contains(&"wink.wink-system.svc.cluster.local".to_string()));
        assert_eq!(url_host("https://[::1]:443"), Some("::1".into()));
        assert_eq!(
            url_host("https://hooks.example.com/a"),
            Some("hooks.example.com".into())
        );
        assert_eq!(url_host("http://x"), None);
    }

    #[test]
    fn a_ca_read_back_signs_what_its_stored_certificate_verifies() {
        use rustls::client::danger::ServerCertVerifier;
        let _ = rustls::crypto::ring::default_provider().install_default();
        let ca = Ca::new().unwrap();
        let again = Ca::read(&ca.pem, &ca.key.serialize_pem()).unwrap();
        let served = again.issue(&["wink.ns.svc".into()], SERVING_VALIDITY).unwrap();
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_slice(ca.pem.as_bytes()).unwrap())
            .unwrap();
        let verifier = rustls::client::WebPkiServerVerifier::builder(Arc::new(roots))
            .build()
            .unwrap();
        let name = rustls::pki_types::ServerName::try_from("wink.ns.svc").unwrap();
        verifier
            .verify_server_cert(
                &served.cert[0],
                &[],
                &name,
                &[],
                rustls::pki_types::UnixTime::now(),
            )
            .expect("the stored CA verifies a certificate issued after a restart");
    }
}
