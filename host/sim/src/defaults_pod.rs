//! The defaults kube-apiserver gives a Pod spec, in a Pod and in every Pod
//! template (a Deployment's, ReplicaSet's, StatefulSet's, DaemonSet's,
//! Job's, CronJob's job template's, ReplicationController's,
//! PodTemplate's): its `SetDefaults_PodSpec`, `SetDefaults_Container`
//! (`imagePullPolicy` `Always` for an untagged or `:latest` image, else
//! `IfNotPresent`; the termination message path and policy), ports'
//! protocol, probes' timings and HTTP scheme, volumes' modes, and the
//! fields Go's JSON always writes (a container's `resources: {}`).
//!
//! Owns: these defaults. Must not touch: validation, the store, HTTP.

use serde_json::{Map, Value, json};

/// Set `key` to `value` where it is absent or null.
fn set(o: &mut Map<String, Value>, key: &str, value: Value) {
    if o.get(key).is_none_or(Value::is_null) {
        o.insert(key.into(), value);
    }
}

/// The Pod template of a workload kind, as a JSON pointer.
pub fn template_path(group: &str, plural: &str) -> Option<&'static str> {
    match (group, plural) {
        ("apps", "deployments" | "replicasets" | "statefulsets" | "daemonsets")
        | ("batch", "jobs")
        | ("", "replicationcontrollers") => Some("/spec/template"),
        ("batch", "cronjobs") => Some("/spec/jobTemplate/spec/template"),
        ("", "podtemplates") => Some("/template"),
        _ => None,
    }
}

/// Default a Pod template: its `spec`, and its `metadata`, which Go's JSON
/// writes as `{}` when empty (a struct, not a pointer; no timestamp).
pub fn template(t: &mut Value) {
    let Some(o) = t.as_object_mut() else { return };
    o.entry("metadata").or_insert_with(|| json!({}));
    if let Some(spec) = o.get_mut("spec") {
        pod_spec(spec);
    }
}

/// `SetDefaults_PodSpec` and what it reaches (containers, volumes).
pub fn pod_spec(spec: &mut Value) {
    let Some(s) = spec.as_object_mut() else { return };
    set(s, "dnsPolicy", json!("ClusterFirst"));
    set(s, "restartPolicy", json!("Always"));
    set(s, "terminationGracePeriodSeconds", json!(30));
    set(s, "securityContext", json!({}));
    set(s, "schedulerName", json!("default-scheduler"));
    for list in ["containers", "initContainers", "ephemeralContainers"] {
        for c in items(s, list) {
            container(c);
        }
    }
    for v in items(s, "volumes") {
        volume(v);
    }
}

fn items<'a>(o: &'a mut Map<String, Value>, key: &str) -> impl Iterator<Item = &'a mut Map<String, Value>> {
    o.get_mut(key)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
}

/// `SetDefaults_Container` and its ports, probes and environment.
fn container(c: &mut Map<String, Value>) {
    let image = c.get("image").and_then(Value::as_str).unwrap_or("");
    let policy = match tag(image).as_deref() {
        Some("latest") => "Always",
        _ => "IfNotPresent",
    };
    set(c, "imagePullPolicy", json!(policy));
    set(c, "terminationMessagePath", json!("/dev/termination-log"));
    set(c, "terminationMessagePolicy", json!("File"));
    set(c, "resources", json!({}));
    for p in items(c, "ports") {
        set(p, "protocol", json!("TCP"));
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = c.get_mut(probe).and_then(Value::as_object_mut) {
            set(p, "timeoutSeconds", json!(1));
            set(p, "periodSeconds", json!(10));
            set(p, "successThreshold", json!(1));
            set(p, "failureThreshold", json!(3));
            if let Some(h) = p.get_mut("httpGet").and_then(Value::as_object_mut) {
                set(h, "path", json!("/"));
                set(h, "scheme", json!("HTTP"));
            }
        }
    }
    for e in items(c, "env") {
        if let Some(f) = e
            .get_mut("valueFrom")
            .and_then(|v| v.get_mut("fieldRef"))
            .and_then(Value::as_object_mut)
        {
            set(f, "apiVersion", json!("v1"));
        }
    }
}

/// The tag of an image reference as `ParseImageName` reads it: `latest`
/// when it has neither tag nor digest, none with only a digest.
fn tag(image: &str) -> Option<String> {
    let (name, digest) = match image.split_once('@') {
        Some((n, _)) => (n, true),
        None => (image, false),
    };
    let last = name.rsplit('/').next().unwrap_or(name);
    match last.rsplit_once(':') {
        Some((_, t)) => Some(t.to_string()),
        None if digest => None,
        None => Some("latest".to_string()),
    }
}

/// `SetDefaults_Volume` and the sources' modes.
fn volume(v: &mut Map<String, Value>) {
    let sources = v.keys().filter(|k| *k != "name").count();
    if sources == 0 {
        v.insert("emptyDir".into(), json!({}));
    }
    for source in ["secret", "configMap", "downwardAPI", "projected"] {
        if let Some(s) = v.get_mut(source).and_then(Value::as_object_mut) {
            set(s, "defaultMode", json!(420));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_specs_get_the_real_servers_defaults() {
        let mut t = json!({"spec": {"containers": [
            {"name": "a", "image": "nginx"},
            {"name": "b", "image": "r.example.com:5000/app:1.2", "ports": [{"containerPort": 80}]},
            {"name": "c", "image": "app@sha256:00", "imagePullPolicy": "Never",
                "readinessProbe": {"httpGet": {"port": 80}}}],
            "volumes": [{"name": "scratch"}, {"name": "cfg", "configMap": {"name": "x"}}]}});
        template(&mut t);
        assert_eq!(
            t["metadata"],
            json!({}),
            "kube-apiserver writes an empty template metadata, no timestamp"
        );
        let s = &t["spec"];
        assert_eq!(
            (&s["dnsPolicy"], &s["restartPolicy"], &s["schedulerName"]),
            (
                &json!("ClusterFirst"),
                &json!("Always"),
                &json!("default-scheduler")
            )
        );
        assert_eq!(
            (&s["terminationGracePeriodSeconds"], &s["securityContext"]),
            (&json!(30), &json!({}))
        );
        assert_eq!(
            s["containers"][0],
            json!({"name": "a", "image": "nginx", "imagePullPolicy": "Always", "resources": {},
                "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"})
        );
        assert_eq!(s["containers"][1]["imagePullPolicy"], "IfNotPresent");
        assert_eq!(s["containers"][1]["ports"][0]["protocol"], "TCP");
        assert_eq!(
            s["containers"][2]["imagePullPolicy"], "Never",
            "what was sent is kept"
        );
        assert_eq!(
            s["containers"][2]["readinessProbe"],
            json!({"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1,
                "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3})
        );
        assert_eq!(s["volumes"][0]["emptyDir"], json!({}));
        assert_eq!(s["volumes"][1]["configMap"]["defaultMode"], 420);
        assert_eq!(tag("nginx:latest").as_deref(), Some("latest"));
        assert_eq!(tag("app@sha256:00"), None);
        assert_eq!(tag("r.example.com:5000/app").as_deref(), Some("latest"));
    }
}
