//! The command line of the registry side: `wink push REF FILE`, `wink
//! pull REF [-o FILE]`, and the registry flags shared with `wink run`
//! (credentials, plain-HTTP registries, the size cap, the deadline; the
//! cosign key every pulled manifest must be signed by).

use crate::auth::Auths;
use crate::cosign::PublicKey;
use crate::fetch::{Fetcher, parse_reference};
use crate::registry::{Registry, RegistryOptions};
use crate::store::Store;
use anyhow::Context;
use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::time::Duration;

/// The largest component: the most the plugin loader reads.
pub const MAX_COMPONENT_MIB: u64 = wink_runtime::plugin_file::MAX_COMPONENT_BYTES >> 20;

/// How registries are reached.
#[derive(Args, Debug, Clone)]
pub struct RegistryArgs {
    /// Registry credentials: a dockerconfigjson file (what `docker login`
    /// writes; the `.dockerconfigjson` of an image pull Secret).
    #[arg(long, value_name = "FILE")]
    pub registry_auth: Option<PathBuf>,
    /// Speak plain HTTP, not HTTPS, to this registry (`host:port`, e.g. a
    /// registry on loopback); repeatable.
    #[arg(long, value_name = "HOST[:PORT]")]
    pub plain_http: Vec<String>,
    /// The largest component pulled or pushed, MiB.
    #[arg(long, default_value_t = MAX_COMPONENT_MIB,
          value_parser = clap::value_parser!(u64).range(1..=MAX_COMPONENT_MIB))]
    pub max_component_mib: u64,
    /// How long one registry operation (resolve, manifest, component,
    /// push) may take in all, seconds.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub registry_timeout_secs: u64,
}

impl RegistryArgs {
    pub fn options(&self) -> anyhow::Result<RegistryOptions> {
        let auths = match &self.registry_auth {
            Some(path) => Auths::read(path)?,
            None => Auths::default(),
        };
        Ok(RegistryOptions {
            plain_http: self.plain_http.clone(),
            auths,
            max_component_bytes: self.max_component_mib << 20,
            timeout: Duration::from_secs(self.registry_timeout_secs),
        })
    }
}

/// The cosign flag.
#[derive(Args, Debug, Clone)]
pub struct VerifyArgs {
    /// A cosign public key (PEM, ECDSA P-256: `cosign.pub`) every
    /// component from a registry must be signed by: its manifest's
    /// signature under the tag sha256-<hex>.sig is verified before it is
    /// pulled or loaded.
    #[arg(long, value_name = "FILE")]
    pub cosign_key: Option<PathBuf>,
}

impl VerifyArgs {
    /// The keys given (read and checked).
    pub fn keys(&self) -> anyhow::Result<Vec<PublicKey>> {
        self.cosign_key.iter().map(|p| PublicKey::read(p)).collect()
    }
}

/// The store flag.
#[derive(Args, Debug, Clone)]
pub struct StoreArgs {
    /// The content-addressed store of pulled components (default:
    /// $XDG_STATE_HOME/wink/oci, else ~/.local/state/wink/oci).
    #[arg(long, value_name = "DIR")]
    pub oci_store: Option<PathBuf>,
}

impl StoreArgs {
    pub fn open(&self) -> anyhow::Result<Store> {
        let root = match &self.oci_store {
            Some(dir) => dir.clone(),
            None => Store::default_root()
                .context("no $XDG_STATE_HOME or $HOME: give the store with --oci-store DIR")?,
        };
        Store::open(&root)
    }
}

/// `wink push` and `wink pull`.
#[derive(Subcommand, Debug)]
pub enum OciCommand {
    /// Push a plugin component to an OCI registry as a Wasm artifact (config
    /// application/vnd.wasm.config.v0+json, one application/wasm layer);
    /// prints REF@DIGEST.
    Push {
        /// Where: registry/repository:tag.
        reference: String,
        /// The component (`.wasm`).
        file: PathBuf,
        #[command(flatten)]
        registry: RegistryArgs,
    },
    /// Pull a plugin component by digest (a tag is resolved first), check
    /// it against its digest and keep it in the store; prints the digest.
    Pull {
        /// What: registry/repository:tag or registry/repository@sha256:....
        reference: String,
        /// Also write the component to this file.
        #[arg(short, long)]
        output: Option<PathBuf>,
        #[command(flatten)]
        store: StoreArgs,
        #[command(flatten)]
        registry: RegistryArgs,
        #[command(flatten)]
        verify: VerifyArgs,
    },
}

/// Run `wink push` or `wink pull`.
pub async fn run(command: OciCommand) -> anyhow::Result<()> {
    match command {
        OciCommand::Push {
            reference,
            file,
            registry,
        } => {
            let r = parse_reference(&reference)?;
            anyhow::ensure!(r.digest().is_none(), "{reference}: push to a tag, not a digest");
            let options = registry.options()?;
            let bytes = wink_input::read_file(&file, options.max_component_bytes, "component")?;
            // Progress on stderr; the answer alone on stdout.
            eprintln!(
                "pushing {} ({} KiB) to {reference}",
                file.display(),
                bytes.len() / 1024
            );
            let started = std::time::Instant::now();
            let digest = Registry::new(options).push(&r, &bytes).await?;
            eprintln!("pushed in {} ms", started.elapsed().as_millis());
            println!("{}/{}@{digest}", r.registry(), r.repository());
            Ok(())
        }
        OciCommand::Pull {
            reference,
            output,
            store,
            registry,
            verify,
        } => {
            let r = parse_reference(&reference)?;
            let fetcher = Fetcher {
                store: store.open()?,
                registry: Registry::new(registry.options()?),
                keys: verify.keys()?,
            };
            eprintln!("pulling {reference}");
            let fetched = fetcher.fetch(&r, None).await?;
            if let Some(out) = output {
                std::fs::copy(&fetched.path, &out)
                    .with_context(|| format!("cannot write {}", out.display()))?;
            }
            let source = if fetched.from_store { "store" } else { "registry" };
            eprintln!(
                "pulled {reference} from the {source} in {} ms: component {}",
                fetched.took.as_millis(),
                fetched.component
            );
            for key in &fetched.verified {
                eprintln!("verified: signed by the cosign key {key}");
            }
            println!("{}", fetched.manifest);
            Ok(())
        }
    }
}
