//! Team plugins: the `NamespacedWinkPlugin` (`wink.dev/v1alpha1`,
//! namespaced, plural `namespacedwinkplugins`, short name `nwp`), a
//! WinkPlugin a team writes in its own namespace. Its spec is a
//! WinkPlugin's less what only the operator may set: no Secrets, no
//! namespaces in its writes or scope; its grant is the intersection of
//! what it declares and the operator's team policy (the grants file's
//! `teams:`, [`wink_runtime::grants::TeamPolicy`]), its scope confined to
//! its namespace, its component from an allowed registry (and signed
//! under an allowed key, when the policy names keys), its pull Secret read
//! in its own namespace.
//!
//! Owns the CRD, the plugin name of a team plugin (`<name>--<namespace>`,
//! a DNS label as every plugin name is) and [`as_winkplugin`], which turns
//! the object into the WinkPlugin the controller's one pull-and-load path
//! ([`super::apply`]) runs, or says why it may not run.

use super::crd;
use super::spec::{self, Source};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use wink_oci::cosign::PublicKey;
use wink_runtime::grants::TeamPolicy;

/// The kind.
pub const KIND: &str = "NamespacedWinkPlugin";
/// The resource (plural).
pub const PLURAL: &str = "namespacedwinkplugins";
/// The CRD's name.
pub const CRD_NAME: &str = "namespacedwinkplugins.wink.dev";

/// What separates a team plugin's name from its namespace in its plugin
/// name; no WinkPlugin or NamespacedWinkPlugin name holds it, so a plugin
/// name is one object's alone (a namespace's name may hold it).
pub const SEPARATOR: &str = "--";

/// The plugin name of the team plugin `name` in `namespace`.
pub fn plugin_name(name: &str, namespace: &str) -> String {
    format!("{name}{SEPARATOR}{namespace}")
}

/// Why the (cluster-scoped) WinkPlugin `name` may not run under that
/// name: it holds [`SEPARATOR`], kept for team plugins' names.
pub fn cluster_name_refused(name: &str) -> Option<Refused> {
    name.contains(SEPARATOR).then(|| {
        refused(
            "InvalidName",
            format!("the name {name:?} holds {SEPARATOR:?}, kept for team plugins (<name>--<namespace>)"),
        )
    })
}

/// The CustomResourceDefinition: the WinkPlugin's schema, namespaced,
/// without the fields only an operator may set, its status saying the team.
pub fn definition() -> Value {
    let mut d = crd::definition();
    d["metadata"]["name"] = json!(CRD_NAME);
    d["spec"]["scope"] = json!("Namespaced");
    d["spec"]["names"] = json!({
        "kind": KIND,
        "listKind": "NamespacedWinkPluginList",
        "plural": PLURAL,
        "singular": "namespacedwinkplugin",
        "shortNames": ["nwp"],
        "categories": ["wink"]
    });
    let version = &mut d["spec"]["versions"][0];
    let schema = &mut version["schema"]["openAPIV3Schema"];
    schema["description"] = json!(
        "A team's plugin of wink, confined to its namespace: its component's source, config and the grant it asks for (what the operator's team policy allows of it)."
    );
    let spec = &mut schema["properties"]["spec"]["properties"];
    if let Some(g) = spec["grant"]["properties"].as_object_mut() {
        g.remove("secrets");
    }
    if let Some(w) = spec["grant"]["properties"]["writes"]["items"]["properties"].as_object_mut() {
        w.remove("namespaces");
    }
    for at in ["match", "exclude"] {
        if let Some(s) = spec[at]["properties"].as_object_mut() {
            s.remove("namespaces");
            s.remove("namespaceSelector");
        }
    }
    spec["pullSecret"]["description"] =
        json!("A kubernetes.io/dockerconfigjson Secret in this namespace, for a private registry.");
    schema["properties"]["status"]["properties"]["team"] = json!({"type": "string"});
    schema["properties"]["status"]["properties"]["plugin"] = json!({"type": "string"});
    if let Some(columns) = version["additionalPrinterColumns"].as_array_mut() {
        columns.insert(
            0,
            json!({"name": "Plugin", "type": "string", "jsonPath": ".status.plugin"}),
        );
    }
    d
}

/// Why a team plugin may not run: a condition reason and its message.
#[derive(Debug, Clone, PartialEq)]
pub struct Refused {
    pub reason: &'static str,
    pub message: String,
}

fn refused(reason: &'static str, message: impl Into<String>) -> Refused {
    Refused {
        reason,
        message: message.into(),
    }
}

/// The WinkPlugin the NamespacedWinkPlugin `object` runs as under
/// `policy` (none: team plugins are off), its namespace labelled `labels`:
/// its spec with the grant the policy gives it and its scope confined to
/// its namespace, named [`plugin_name`]; or why it may not run.
pub fn as_winkplugin(
    object: &Value,
    policy: Option<&TeamPolicy>,
    labels: &BTreeMap<String, String>,
) -> Result<Value, Refused> {
    let namespace = object["metadata"]["namespace"].as_str().unwrap_or_default();
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    let Some(policy) = policy else {
        return Err(refused(
            "TeamPluginsOff",
            "team plugins are off: the operator's grants file has no teams section",
        ));
    };
    if name.contains(SEPARATOR) {
        return Err(refused(
            "InvalidName",
            format!(
                "the name {name:?} holds {SEPARATOR:?}, which separates a team plugin's name from its namespace"
            ),
        ));
    }
    let plugin = plugin_name(name, namespace);
    if !wink_runtime::plugin_file::is_dns_label(&plugin) {
        return Err(refused(
            "InvalidName",
            format!(
                "the plugin name {plugin:?} (<name>--<namespace>) is not a DNS label of at most 63 characters"
            ),
        ));
    }
    let spec = spec::parse(object).map_err(|e| refused("InvalidSpec", format!("{e:#}")))?;
    let source = spec.source.describe();
    if !policy.allows_source(&source) {
        return Err(refused(
            "RegistryNotAllowed",
            format!("{source} is not under a registry the operator allows team plugins (teams.registries)"),
        ));
    }
    if !policy.cosign_keys.is_empty() {
        let allowed: Vec<PublicKey> = policy
            .cosign_keys
            .iter()
            .filter_map(|k| PublicKey::from_pem(k).ok())
            .collect();
        match (&spec.source, &spec.cosign_key) {
            (Source::Oci(_), Some(k)) if allowed.contains(k) => {}
            (Source::Oci(_), Some(_)) => {
                return Err(refused(
                    "KeyNotAllowed",
                    "spec.verify.cosign.publicKey is not a key the operator allows (teams.cosignKeys)",
                ));
            }
            _ => {
                return Err(refused(
                    "SignatureRequired",
                    "the operator requires team plugins to be signed: spec.verify.cosign.publicKey, one of teams.cosignKeys",
                ));
            }
        }
    }
    let grant = policy
        .grant(namespace, labels, &spec.grant)
        .map_err(|e| refused("NotAllowed", e))?;
    let mut out = object.clone();
    let s = &mut out["spec"];
    let Some(fields) = s.as_object_mut() else {
        return Err(refused("InvalidSpec", "no spec"));
    };
    fields.remove("match");
    fields.remove("exclude");
    let mut g = serde_json::to_value(&grant).map_err(|e| refused("InvalidSpec", e.to_string()))?;
    if let Some(g) = g.as_object_mut() {
        if let Some(m) = g.remove("match") {
            fields.insert("match".into(), m);
        }
        if let Some(e) = g.remove("exclude") {
            fields.insert("exclude".into(), e);
        }
    }
    fields.insert("grant".into(), g);
    out["metadata"]["name"] = json!(plugin);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wink_runtime::grants::Grants;

    fn policy() -> TeamPolicy {
        Grants::parse(
            b"teams: {namespaces: [team-a], registries: [\"localhost:5000/teams\"], events: true, writes: [{apiVersion: v1, kind: ConfigMap, verbs: [create]}]}",
        )
        .unwrap()
        .teams
        .unwrap()
    }

    fn object(ns: &str, spec: Value) -> Value {
        json!({"apiVersion": "wink.dev/v1alpha1", "kind": KIND,
               "metadata": {"name": "probe", "namespace": ns, "generation": 1}, "spec": spec})
    }

    #[test]
    fn a_team_plugin_runs_as_a_winkplugin_confined_to_its_namespace() {
        let o = object(
            "team-a",
            json!({"source": {"oci": "localhost:5000/teams/probe:v1"},
                   "grant": {"events": true, "writes": [{"apiVersion": "v1", "kind": "ConfigMap", "verbs": ["create", "delete"]}]},
                   "match": {"kinds": ["Pod"]}}),
        );
        let w = as_winkplugin(&o, Some(&policy()), &BTreeMap::new()).unwrap();
        assert_eq!(w["metadata"]["name"], "probe--team-a");
        let s = spec::parse(&w).unwrap();
        assert_eq!(
            s.grant.match_.as_ref().unwrap().namespaces.as_ref().unwrap(),
            &["team-a"]
        );
        assert_eq!(s.grant.match_.as_ref().unwrap().kinds.as_ref().unwrap(), &["Pod"]);
        assert_eq!(s.grant.writes.len(), 1);
        assert_eq!(
            s.grant.writes[0].namespaces.as_deref(),
            Some(&["team-a".to_string()][..])
        );
        assert_eq!(s.grant.cluster_reads.as_deref(), Some(&[][..]));
        assert!(s.grant.events);
    }

    #[test]
    fn what_the_policy_refuses_is_a_reason() {
        let ok = json!({"source": {"oci": "localhost:5000/teams/probe:v1"}});
        let reason =
            |o: &Value, p: Option<&TeamPolicy>| as_winkplugin(o, p, &BTreeMap::new()).unwrap_err().reason;
        assert_eq!(reason(&object("team-a", ok.clone()), None), "TeamPluginsOff");
        assert_eq!(
            reason(&object("team-b", ok.clone()), Some(&policy())),
            "NotAllowed"
        );
        let elsewhere = json!({"source": {"oci": "localhost:5000/other/probe:v1"}});
        assert_eq!(
            reason(&object("team-a", elsewhere), Some(&policy())),
            "RegistryNotAllowed"
        );
        let mut signed = policy();
        signed.cosign_keys = vec!["-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEMzVQwKLlOw/eDHxjHV9h+LF3hjwm\nB4eoQEfMyATbmtm3UPNroM/GUPFlWlwy1XQ1iM4otHteLqNFzlAL0Ag9SQ==\n-----END PUBLIC KEY-----".into()];
        assert_eq!(
            reason(&object("team-a", ok.clone()), Some(&signed)),
            "SignatureRequired"
        );
        let other_ns =
            json!({"source": {"oci": "localhost:5000/teams/probe:v1"}, "match": {"namespaces": ["team-b"]}});
        assert_eq!(reason(&object("team-a", other_ns), Some(&policy())), "NotAllowed");
        let long = object(&"n".repeat(60), ok);
        let mut p = policy();
        p.namespaces = vec!["*".into()];
        assert_eq!(reason(&long, Some(&p)), "InvalidName");
    }

    #[test]
    fn a_namespace_labelled_into_the_policys_selector_runs_team_plugins() {
        let mut p = policy();
        p.namespaces = vec![];
        p.namespace_selector = serde_norway::from_str("{matchLabels: {wink.dev/team: 'true'}}").unwrap();
        let o = object(
            "team-b",
            json!({"source": {"oci": "localhost:5000/teams/probe:v1"}}),
        );
        let team: BTreeMap<String, String> = [("wink.dev/team".to_string(), "true".to_string())].into();
        let w = as_winkplugin(&o, Some(&p), &team).unwrap();
        assert_eq!(w["metadata"]["name"], "probe--team-b");
        let r = as_winkplugin(&o, Some(&p), &BTreeMap::new()).unwrap_err();
        assert_eq!(r.reason, "NotAllowed");
        assert!(
            r.message.contains("team-b may not run team plugins"),
            "{}",
            r.message
        );
    }

    #[test]
    fn no_two_objects_share_a_plugin_name() {
        // `a--b` in `c` and `a` in `b--c` would both be `a--b--c`; and a
        // WinkPlugin `probe--team-a` would be team-a's `probe`.
        let ok = json!({"source": {"oci": "localhost:5000/teams/probe:v1"}});
        let mut p = policy();
        p.namespaces = vec!["*".into()];
        let mut dashed = object("c", ok.clone());
        dashed["metadata"]["name"] = json!("a--b");
        assert_eq!(
            as_winkplugin(&dashed, Some(&p), &BTreeMap::new())
                .unwrap_err()
                .reason,
            "InvalidName"
        );
        let mut plain = object("b--c", ok);
        plain["metadata"]["name"] = json!("a");
        assert_eq!(
            as_winkplugin(&plain, Some(&p), &BTreeMap::new()).unwrap()["metadata"]["name"],
            "a--b--c"
        );
        assert_eq!(
            cluster_name_refused("probe--team-a").unwrap().reason,
            "InvalidName"
        );
        assert!(cluster_name_refused("probe-team-a").is_none());
    }

    #[test]
    fn the_crd_is_namespaced_without_the_operators_fields() {
        let d = definition();
        assert_eq!(d["spec"]["scope"], "Namespaced");
        assert_eq!(d["spec"]["names"]["kind"], KIND);
        let spec = &d["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"];
        assert!(spec["grant"]["properties"].get("secrets").is_none());
        assert!(spec["match"]["properties"].get("namespaces").is_none());
        assert!(spec["grant"]["properties"].get("writes").is_some());
    }
}
