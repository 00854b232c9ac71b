//! The `wink run` flags of the admission webhook server, and the options
//! they make ([`super::AdmissionOptions`]). Owns only the command line.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// The admission flags of `wink run`.
#[derive(Debug, Clone, clap::Args)]
pub struct AdmissionFlags {
    /// Serve the plugins' admission webhooks over HTTPS on this address
    /// (e.g. 0.0.0.0:8443); off when absent. Every replica serves; the
    /// leader keeps the webhook configurations in step.
    #[arg(long)]
    pub admission_addr: Option<SocketAddr>,
    /// How the API server reaches the webhook server
    /// (`https://host:port`), when not through `--admission-service`; its
    /// host is in wink's serving certificate.
    #[arg(long)]
    pub admission_webhook_url: Option<String>,
    /// The Service in front of the webhook server (port 443), in
    /// `--admission-namespace`.
    #[arg(long, default_value = "wink")]
    pub admission_service: String,
    /// wink's namespace: the CA Secret's and the Service's; no webhook
    /// sees it (nor kube-system, nor kube-node-lease).
    #[arg(long, env = "POD_NAMESPACE", default_value = "default")]
    pub admission_namespace: String,
    /// The Secret keeping wink's CA (created when missing).
    #[arg(long, default_value = "wink-admission-ca")]
    pub admission_ca_secret: String,
    /// The webhook server's certificate (PEM, e.g. cert-manager's), read
    /// again when it changes; with `--tls-key-file`. Absent: wink's own CA.
    #[arg(long, requires = "tls_key_file")]
    pub tls_cert_file: Option<PathBuf>,
    /// The private key of `--tls-cert-file` (PEM).
    #[arg(long, requires = "tls_cert_file")]
    pub tls_key_file: Option<PathBuf>,
    /// The CA that signed `--tls-cert-file` (PEM), for the webhook
    /// configurations' caBundle (default: the certificate file itself).
    #[arg(long, requires = "tls_cert_file")]
    pub tls_ca_file: Option<PathBuf>,
    /// Serve only clients whose TLS certificate this CA (PEM) signed: the
    /// API server's, given in its admission `kubeConfigFile`. Absent: any
    /// client is served.
    #[arg(long)]
    pub admission_client_ca: Option<PathBuf>,
    /// Keep the Validating/MutatingWebhookConfigurations `wink` in step
    /// with the plugins (leader only): `=false` when they are managed
    /// elsewhere.
    #[arg(long, num_args = 0..=1, default_value_t = true, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub admission_configurations: bool,
    /// How long wink's own serving certificate is valid, seconds (renewed
    /// after two thirds of it); for tests.
    #[arg(long, hide = true, default_value_t = super::certs::SERVING_VALIDITY.as_secs())]
    pub admission_cert_validity_secs: u64,
}

/// wink's namespace in `wink dev` (kubectl's `default` must go through the
/// webhooks, and no webhook sees wink's own namespace).
pub const DEV_NAMESPACE: &str = "wink-system";

impl AdmissionFlags {
    /// `wink dev`'s defaults: the webhook server on a free loopback port
    /// unless `--admission-addr` names one; the webhook configurations
    /// pointing at it by URL (the simulated API server calls loopback URLs,
    /// and resolves no Service); wink's own namespace [`DEV_NAMESPACE`]
    /// unless one is named.
    pub fn dev_defaults(&mut self) -> std::io::Result<()> {
        let addr = match self.admission_addr {
            Some(addr) => addr,
            None => std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?,
        };
        self.admission_addr = Some(addr);
        if self.admission_webhook_url.is_none() {
            let ip = match addr.ip().is_unspecified() {
                true => std::net::Ipv4Addr::LOCALHOST.into(),
                false => addr.ip(),
            };
            self.admission_webhook_url = Some(format!("https://{}", SocketAddr::new(ip, addr.port())));
        }
        if self.admission_namespace == "default" {
            self.admission_namespace = DEV_NAMESPACE.into();
        }
        Ok(())
    }

    /// The admission webhook server's options, when `--admission-addr` is given.
    pub fn options(&self) -> Option<super::AdmissionOptions> {
        let addr = self.admission_addr?;
        let tls_files = match (&self.tls_cert_file, &self.tls_key_file) {
            (Some(cert), Some(key)) => Some((cert.clone(), key.clone(), self.tls_ca_file.clone())),
            _ => None,
        };
        Some(super::AdmissionOptions {
            addr,
            webhook_url: self.admission_webhook_url.clone(),
            service: self.admission_service.clone(),
            namespace: self.admission_namespace.clone(),
            ca_secret: self.admission_ca_secret.clone(),
            tls_files,
            client_ca: self.admission_client_ca.clone(),
            configurations: self.admission_configurations,
            cert_validity: Duration::from_secs(self.admission_cert_validity_secs.max(3)),
        })
    }
}
