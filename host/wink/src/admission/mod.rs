//! Admission webhooks, the daemon's side: plugins declare webhooks in
//! their registration and the runtime answers for them
//! ([`wink_runtime::PluginManager::admit`]); this module serves them to the
//! API server over HTTPS ([`server`], reviews translated by [`review`]),
//! with certificates the operator gives or wink issues from a CA of its
//! own ([`certs`]), and keeps the cluster's webhook configurations in step
//! with the plugins while this replica leads ([`configurations`]).
//!
//! Owns starting those tasks from the daemon's options; each part owns
//! its own job.

pub mod certs;
pub mod configurations;
pub mod flags;
pub mod metrics;
pub mod paced;
pub mod review;
pub mod scope;
pub mod server;
pub mod shared;

use crate::listener::{self, BoundedListener, ListenOptions};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use wink_runtime::PluginManager;
use wink_runtime::leadership::Leadership;

/// The webhook server's options, from the command line.
#[derive(Debug, Clone)]
pub struct AdmissionOptions {
    /// Where the HTTPS server listens (any address: the API server must
    /// reach it; it speaks TLS and answers only admission reviews).
    pub addr: SocketAddr,
    /// How the API server reaches it, when not through the Service
    /// (`https://host:port`); its host is in wink's serving certificate.
    pub webhook_url: Option<String>,
    /// The Service in front of the replicas, in `namespace`.
    pub service: String,
    /// wink's namespace: the CA Secret's, the Service's, excluded from
    /// every webhook.
    pub namespace: String,
    /// The Secret keeping wink's CA.
    pub ca_secret: String,
    /// The operator's certificate and key (PEM), and optionally the CA
    /// that signed them (the configurations' caBundle; else the
    /// certificate file itself).
    pub tls_files: Option<(PathBuf, PathBuf, Option<PathBuf>)>,
    /// Keep the webhook configurations in step (while leading).
    pub configurations: bool,
    /// The CA whose client certificates alone are served (PEM file).
    pub client_ca: Option<PathBuf>,
    /// How long wink's own serving certificates are valid.
    pub cert_validity: std::time::Duration,
}

/// The webhook server's socket (bound first, so a port that cannot be
/// had ends the start).
pub async fn bind(options: &AdmissionOptions) -> anyhow::Result<(BoundedListener, ListenOptions)> {
    if let Some(url) = &options.webhook_url {
        anyhow::ensure!(
            certs::url_host(url).is_some(),
            "--admission-webhook-url {url:?} is not an https://host[:port] URL (the API server calls webhooks over HTTPS only)"
        );
    }
    let listen = ListenOptions {
        allow_non_loopback: true,
        probe_reserve: 0,
        idle_timeout: server::KEEP_ALIVE,
        max_per_peer: Some(server::MAX_PER_PEER),
        ..ListenOptions::default()
    };
    let listener = listener::bind(options.addr, "the admission webhook server", &listen).await?;
    Ok((listener, listen))
}

/// Start serving on `listener` (counting in `metrics`) and, with `options.configurations`, keeping
/// the configurations; the certificates are loaded (or the CA created)
/// first, and an error there ends the start.
pub async fn start(
    options: AdmissionOptions,
    (listener, listen): (BoundedListener, ListenOptions),
    client: kube::Client,
    manager: Arc<PluginManager>,
    leadership: Leadership,
    metrics: metrics::AdmissionMetrics,
) -> anyhow::Result<()> {
    let source = match &options.tls_files {
        Some((cert, key, ca)) => certs::Source::Files {
            cert: cert.clone(),
            key: key.clone(),
            ca: ca.clone(),
        },
        None => certs::Source::Own {
            client: client.clone(),
            namespace: options.namespace.clone(),
            secret: options.ca_secret.clone(),
            names: certs::names(
                &options.service,
                &options.namespace,
                options.webhook_url.as_deref(),
            ),
            validity: options.cert_validity,
        },
    };
    let certs = certs::start(source).await?;
    let addr = listener.local_addr()?;
    let client_ca = match &options.client_ca {
        Some(path) => Some(server::client_roots(path)?),
        None => None,
    };
    let tls = server::tls_config(certs.resolver.clone(), client_ca)?;
    let serving = manager.clone();
    tokio::spawn(async move {
        if let Err(e) = server::serve(listener, listen, tls, serving, metrics).await {
            tracing::error!("admission webhook server stopped: {e:#}");
        }
    });
    tracing::info!(%addr, "admission webhook server listening");
    if options.configurations {
        let target = match &options.webhook_url {
            Some(url) => configurations::Target::Url(url.clone()),
            None => configurations::Target::Service {
                namespace: options.namespace.clone(),
                name: options.service.clone(),
            },
        };
        let cx = configurations::Context {
            target,
            namespace: options.namespace.clone(),
        };
        tokio::spawn(configurations::keep(
            client,
            manager,
            leadership,
            certs.ca_bundle,
            cx,
        ));
    } else {
        // Keep the bundle's channel open: the certificates stay current.
        tokio::spawn(async move {
            let mut bundle = certs.ca_bundle;
            while bundle.changed().await.is_ok() {}
        });
    }
    Ok(())
}
