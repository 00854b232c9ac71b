//! One pass over one WinkPlugin: read its spec, fetch its component
//! through the [`Fetcher`] (the store first: a digest pinned once is
//! loaded with no registry), read its language from its metadata, put its
//! config beside it, give its grant and load it through the plugin
//! manager as a file (so a changed config, grant or component swaps the
//! running plugin with a file reload's guarantees). An OCI source under a
//! cosign key (its `spec.verify`, the daemon's `--cosign-key`) is verified
//! once its digest is known, before it is pulled or loaded: the
//! `Verified` condition. Every failure is a condition with its reason; a
//! plugin already running stays as it was.

use super::spec::{self, Source, Spec};
use super::status::{Condition, Outcome};
use anyhow::Context;
use serde_json::Value;
use std::path::PathBuf;
use wink_informer::repeated::{short_anyhow, short_error};
use wink_oci::cosign::VerifyError;
use wink_oci::digest::Digest;
use wink_oci::fetch::{Fetcher, parse_reference};
use wink_oci::registry::Registry;
use wink_oci::store::Pin;
use wink_runtime::PluginManager;
use wink_runtime::bindings::types::FailurePolicy;

/// What a pass needs.
pub struct Context_ {
    pub manager: std::sync::Arc<PluginManager>,
    pub fetcher: Fetcher,
    pub client: kube::Client,
    /// wink's namespace, where pull Secrets are.
    pub namespace: String,
    /// Names taken by the plugin directory or `--plugin-ref`.
    pub taken: wink_oci::plugins::Taken,
    /// The prefix of this controller's pins ([`PINS`] or [`TEAM_PINS`]).
    pub pins: &'static str,
}

/// The prefix of WinkPlugins' pins, kept apart from `--plugin-ref`'s.
pub const PINS: &str = "winkplugin.";
/// The prefix of NamespacedWinkPlugins' pins.
pub const TEAM_PINS: &str = "namespacedwinkplugin.";

impl Context_ {
    /// The key of the pin of plugin `name`.
    pub fn pin_key(&self, name: &str) -> String {
        format!("{}{name}", self.pins)
    }
}

/// Why a fetch failed, as a condition reason.
fn pull_reason(error: &str) -> &'static str {
    let e = error.to_lowercase();
    if e.contains("the pull secret") {
        "PullSecret"
    } else if e.contains("refused access") {
        "Unauthorized"
    } else if e.contains("digest") && (e.contains("match") || e.contains("expected")) {
        "DigestMismatch"
    } else if e.contains("certificate") {
        "CertificateRejected"
    } else if e.contains("cannot be reached") || e.contains("timed out") {
        "RegistryUnreachable"
    } else if e.contains("not found") {
        "NotFound"
    } else if e.contains("over the cap") || e.contains("at most") {
        "TooLarge"
    } else {
        "PullFailed"
    }
}

/// What a pull found: the outcome so far, and the spec and stored
/// component to load.
pub struct Pulled {
    pub outcome: Outcome,
    pub spec: Spec,
    pub component: Digest,
}

/// One pass over the object `object`, named `name`: what it found. With
/// `Ok`, the plugin runs from this spec (the caller remembers it).
pub async fn apply(cx: &Context_, name: &str, object: &Value) -> (Outcome, Option<Spec>) {
    match pull(cx, name, object).await {
        Ok(pulled) => finish(cx, name, pulled).await,
        Err(outcome) => (*outcome, None),
    }
}

/// The first half of a pass, the one that speaks to registries: read the
/// spec, fetch the component into the store (verified). A failure is the
/// outcome to report.
pub async fn pull(cx: &Context_, name: &str, object: &Value) -> Result<Pulled, Box<Outcome>> {
    let mut outcome = Outcome {
        generation: object["metadata"]["generation"].as_i64().unwrap_or(0),
        ..Outcome::default()
    };
    // Said by the controller, once a minute while the passes fail.
    let fail = |mut o: Outcome, kind: &'static str, reason: &str, e: String| {
        o.conditions
            .push(Condition::new(kind, Some(false), reason, e.clone()));
        o.last_error = Some(e);
        Err(Box::new(o))
    };
    let spec = match spec::parse(object) {
        Ok(s) => s,
        Err(e) => return fail(outcome, "Loaded", "InvalidSpec", short_anyhow(&e)),
    };
    outcome.source = spec.source.describe();
    outcome.mode = format!("{:?}", spec.grant.mode).to_lowercase();
    if let Err(e) = wink_runtime::plugin_file::plugin_name(&PathBuf::from(format!("{name}.wasm"))) {
        return fail(outcome, "Loaded", "InvalidName", short_error(&e));
    }
    if let Some(why) = (cx.taken)(name) {
        return fail(outcome, "Loaded", "NameClash", why);
    }
    let uid = object["metadata"]["uid"].as_str();
    let (manifest, component, verified) = match fetch(cx, name, uid, &spec).await {
        Ok(d) => d,
        Err(e) => {
            if let Some(v) = e.downcast_ref::<VerifyError>() {
                return fail(outcome, "Verified", v.reason(), short_anyhow(&e));
            }
            let e = short_anyhow(&e);
            return fail(outcome, "Pulled", pull_reason(&e), e);
        }
    };
    if !verified.is_empty() {
        outcome.conditions.push(Condition::new(
            "Verified",
            Some(true),
            "Verified",
            format!(
                "{manifest} is signed by the cosign key {}",
                verified.join(" and ")
            ),
        ));
    }
    outcome.digest = Some(manifest.clone());
    outcome.component_digest = Some(component.to_string());
    outcome.language = language(cx, component).map(|l| l.name().to_string());
    outcome.conditions.push(Condition::new(
        "Pulled",
        Some(true),
        "Pulled",
        format!("{} is {manifest}", spec.source.describe()),
    ));
    Ok(Pulled {
        outcome,
        spec,
        component,
    })
}

/// The second half of a pass, with no registry: load what [`pull`] put in
/// the store.
pub async fn finish(cx: &Context_, name: &str, pulled: Pulled) -> (Outcome, Option<Spec>) {
    let Pulled {
        mut outcome,
        spec,
        component,
    } = pulled;
    match load(cx, name, &spec, component).await {
        Ok(()) => {
            outcome.conditions.push(Condition::new(
                "Loaded",
                Some(true),
                "Loaded",
                "loaded by the plugin manager",
            ));
            (outcome, Some(spec))
        }
        Err(e) => {
            let e = short_anyhow(&e);
            outcome
                .conditions
                .push(Condition::new("Loaded", Some(false), "LoadFailed", e.clone()));
            outcome.last_error = Some(e);
            (outcome, None)
        }
    }
}

/// The registry client for `spec`: the daemon's, or one with the
/// credentials of its pull Secret ([`super::pull_secret`]).
async fn registry(cx: &Context_, spec: &Spec) -> anyhow::Result<Option<Registry>> {
    let Some(secret) = &spec.pull_secret else {
        return Ok(None);
    };
    let namespace = spec.namespace.as_deref().unwrap_or(&cx.namespace);
    let auths = super::pull_secret::read(&cx.client, namespace, secret).await?;
    let mut options = cx.fetcher.registry.options().clone();
    options.auths = auths;
    Ok(Some(Registry::new(options)))
}

/// Fetch the component of `spec`: (the manifest digest, the component's,
/// the ids of the cosign keys it was verified under).
async fn fetch(
    cx: &Context_,
    name: &str,
    uid: Option<&str>,
    spec: &Spec,
) -> anyhow::Result<(String, Digest, Vec<String>)> {
    let raw = match &spec.source {
        Source::Oci(r) => r,
        Source::Https { url, sha256 } => {
            let digest = Digest::parse(sha256)?;
            let options = cx.fetcher.registry.options();
            let started = std::time::Instant::now();
            let stored = wink_oci::https::fetch(
                &cx.fetcher.store,
                url,
                digest,
                options.max_component_bytes,
                options.timeout,
            )
            .await?;
            tracing::info!(
                winkplugin = %name,
                url = %url,
                digest = %digest,
                from = %if stored { "store" } else { "https" },
                took_ms = started.elapsed().as_millis() as u64,
                "WinkPlugin fetched"
            );
            return Ok((digest.to_string(), digest, Vec::new()));
        }
    };
    let reference = parse_reference(raw)?;
    let store = &cx.fetcher.store;
    let key = cx.pin_key(name);
    // A pin made for another object of this name (deleted, created anew)
    // is not taken: its tag is resolved again.
    let pinned = store
        .pins()?
        .remove(&key)
        .filter(|p| &p.reference == raw && (p.uid.is_none() || p.uid.as_deref() == uid));
    let expected = pinned.map(|p| Digest::parse(&p.digest)).transpose()?;
    let keys: Vec<_> = spec.cosign_key.iter().cloned().collect();
    let fetched = match registry(cx, spec).await? {
        Some(registry) => {
            let fetcher = Fetcher {
                store: store.clone(),
                registry,
                keys: cx.fetcher.keys.clone(),
            };
            fetcher.fetch_verified(&reference, expected, &keys).await?
        }
        None => cx.fetcher.fetch_verified(&reference, expected, &keys).await?,
    };
    store.pin(
        &key,
        Pin {
            reference: raw.clone(),
            digest: fetched.manifest.to_string(),
            uid: uid.map(str::to_string),
        },
    )?;
    tracing::info!(
        winkplugin = %name,
        reference = %raw,
        digest = %fetched.manifest,
        from = %if fetched.from_store { "store" } else { "registry" },
        took_ms = fetched.took.as_millis() as u64,
        "WinkPlugin fetched"
    );
    Ok((fetched.manifest.to_string(), fetched.component, fetched.verified))
}

/// The language of the stored component `component`, as its metadata
/// says (none when the store cannot give it).
fn language(cx: &Context_, component: Digest) -> Option<wink_runtime::Language> {
    let max = cx.fetcher.registry.options().max_component_bytes;
    let path = cx.fetcher.store.blob_path(component);
    let bytes = wink_input::read_file(&path, max, "component").ok()?;
    Some(wink_runtime::Language::of(&bytes))
}

/// Put the component and its config in place, give the grant, load.
async fn load(cx: &Context_, name: &str, spec: &Spec, component: Digest) -> anyhow::Result<()> {
    let max = cx.fetcher.registry.options().max_component_bytes;
    let path = cx.fetcher.store.materialise(name, component, max)?;
    let config = wink_runtime::plugin_file::config_path(&path);
    match spec.config.is_empty() {
        true => match std::fs::remove_file(&config) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(e).with_context(|| format!("removing {}", config.display()));
            }
            _ => {}
        },
        false => {
            std::fs::write(&config, &spec.config).with_context(|| format!("writing {}", config.display()))?
        }
    }
    cx.manager.give_grant(name, Some(spec.grant.clone())).await;
    // A NamespacedWinkPlugin's namespace is its team.
    cx.manager.give_team(name, spec.namespace.as_deref());
    let policy = spec.failure_policy.as_deref().map(|p| match p {
        "Ignore" => FailurePolicy::Ignore,
        _ => FailurePolicy::Fail,
    });
    cx.manager.give_failure_policy(name, policy);
    cx.manager.load_file(&path).await?;
    // The manager names a plugin as its registration does: a component
    // declaring another name than its WinkPlugin's is refused, so that its
    // grant, its status and its deletion find it.
    let absolute = std::path::absolute(&path).unwrap_or_else(|_| path.clone());
    let declared = cx
        .manager
        .status()
        .await
        .into_iter()
        .find(|s| s.path == absolute)
        .map(|s| s.name);
    if let Some(declared) = declared.filter(|d| d != name) {
        cx.manager.unload_path(&path).await;
        anyhow::bail!("the component declares the name {declared:?}: its WinkPlugin must be named so");
    }
    anyhow::ensure!(
        cx.manager.has_path(&path).await,
        "not running: the resources it watches are not served yet (tried again), or this wink loads only some plugins (wink dev without --src)"
    );
    Ok(())
}
