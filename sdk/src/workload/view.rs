//! [`Pods`]: an object of a kind that carries Pods read, typed, only as far
//! as the container policies look (each container's name, image, resources
//! and probes), instead of as a whole `serde_json::Value` tree. Owns the
//! view's shape and its reading, as lenient as a `Value` walk (see
//! [`crate::loose`]): it reads every object a `Value` does, to the same
//! containers.

use super::{List, pod_kind};
use crate::loose::{NotNull, Shape, each_field, loose};
use serde::de::{Deserialize, DeserializeSeed, Deserializer, MapAccess};

/// The containers of an object's Pod spec, wherever its kind has it
/// (`spec`, `spec.template.spec`, `spec.jobTemplate.spec.template.spec`),
/// each read only for its name, image, resources and probes. Decode it
/// with [`Object::decode`](crate::Object::decode) (or as a
/// [`policy::Check`](crate::policy::Check)'s view) and walk it with
/// [`Pods::containers`]: it finds the containers [`super::containers`]
/// finds in the same object, at a fraction of the cost.
///
/// ```
/// use wink_sdk::workload::{List, Pods};
/// let pods: Pods = wink_sdk::serde_json::from_str(
///     r#"{"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "nginx"}]}}}}"#,
/// )
/// .unwrap();
/// let c = pods.containers("Deployment").next().unwrap();
/// assert_eq!((c.container.name(), c.container.image()), ("app", "nginx"));
/// assert_eq!((c.list, c.path()), (List::Containers, "spec.template.spec.containers[0]".into()));
/// assert!(!c.container.probe("livenessProbe"));
/// ```
#[derive(Debug, Clone, Default)]
pub struct Pods {
    spec: Spec,
}

/// One container of [`Pods`], read for what the container policies check.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodContainer {
    name: String,
    image: String,
    requests: Quantities,
    limits: Quantities,
    /// Whether each of [`PROBES`] says how to probe.
    probes: [bool; 3],
}

/// One container of [`Pods`] and where it is.
#[derive(Debug, Clone, Copy)]
pub struct ContainerAt<'a> {
    pub list: List,
    /// Its place in its list.
    pub index: usize,
    pub container: &'a PodContainer,
    pod_spec: &'static str,
}

impl ContainerAt<'_> {
    /// Its field, e.g. `spec.template.spec.initContainers[0]`.
    pub fn path(&self) -> String {
        format!("{}.{}[{}]", self.pod_spec, self.list.field(), self.index)
    }
}

impl Pods {
    /// Every container of the Pod spec of kind `kind`, in the order of its
    /// lists (containers, init containers, ephemeral containers); none when
    /// the kind carries no Pods.
    pub fn containers(&self, kind: &str) -> impl Iterator<Item = ContainerAt<'_>> {
        let (pod_spec, lists) = match pod_kind(kind) {
            Some(k) => (k.pod_spec, Some(self.pod_spec(k.pod_spec))),
            None => ("", None),
        };
        let lists = lists.into_iter().flat_map(|spec| {
            [List::Containers, List::Init, List::Ephemeral]
                .into_iter()
                .zip(&spec.lists)
        });
        lists.flat_map(move |(list, items)| {
            items
                .iter()
                .enumerate()
                .map(move |(index, container)| ContainerAt {
                    list,
                    index,
                    container,
                    pod_spec,
                })
        })
    }

    fn pod_spec(&self, path: &str) -> &PodSpec {
        match path {
            "spec" => &self.spec.pod,
            "spec.template.spec" => &self.spec.template.spec,
            _ => &self.spec.job_template.template.spec,
        }
    }
}

/// The probes a [`PodContainer`] reads.
const PROBES: [&str; 3] = ["livenessProbe", "readinessProbe", "startupProbe"];

impl PodContainer {
    /// Its `name` (empty when it has none).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its `image` (empty when it has none).
    pub fn image(&self) -> &str {
        &self.image
    }

    /// Whether `resources.requests.<resource>` is set: a number, or
    /// non-empty text.
    pub fn request(&self, resource: &str) -> bool {
        self.requests.is_set(resource)
    }

    /// Whether `resources.limits.<resource>` is set: a number, or non-empty text.
    pub fn limit(&self, resource: &str) -> bool {
        self.limits.is_set(resource)
    }

    /// Whether it has the probe `probe` (`livenessProbe`, `readinessProbe`
    /// or `startupProbe`) saying how to probe: an object with `exec`,
    /// `httpGet`, `tcpSocket` or `grpc` not null. False for other names.
    pub fn probe(&self, probe: &str) -> bool {
        PROBES
            .iter()
            .position(|p| *p == probe)
            .is_some_and(|i| self.probes[i])
    }
}

impl<'de> Deserialize<'de> for Pods {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        loose::<Pods>().deserialize(d)
    }
}

impl<'de> Deserialize<'de> for PodContainer {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        loose::<PodContainer>().deserialize(d)
    }
}

impl Shape for Pods {
    fn map<'de, A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
        let mut pods = Pods::default();
        each_field(map, &["spec"], |_, m| {
            pods.spec = m.next_value_seed(loose())?;
            Ok(())
        })?;
        Ok(pods)
    }
}

/// An object's `spec`: a Pod's lists, a workload's `template`, a CronJob's `jobTemplate`.
#[derive(Debug, Clone, Default)]
struct Spec {
    pod: PodSpec,
    template: Template,
    job_template: JobTemplate,
}

impl Shape for Spec {
    fn map<'de, A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
        let mut spec = Spec::default();
        const FIELDS: &[&str] = &[
            "template",
            "jobTemplate",
            "containers",
            "initContainers",
            "ephemeralContainers",
        ];
        each_field(map, FIELDS, |i, m| {
            match i {
                0 => spec.template = m.next_value_seed(loose())?,
                1 => spec.job_template = m.next_value_seed(loose())?,
                i => spec.pod.lists[i - 2] = m.next_value_seed(loose())?,
            }
            Ok(())
        })?;
        Ok(spec)
    }
}

/// A Pod template: its `spec`.
#[derive(Debug, Clone, Default)]
struct Template {
    spec: PodSpec,
}

impl Shape for Template {
    fn map<'de, A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
        let mut template = Template::default();
        each_field(map, &["spec"], |_, m| {
            template.spec = m.next_value_seed(loose())?;
            Ok(())
        })?;
        Ok(template)
    }
}

/// A CronJob's `jobTemplate`: its `spec.template`.
#[derive(Debug, Clone, Default)]
struct JobTemplate {
    template: Template,
}

impl Shape for JobTemplate {
    fn map<'de, A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
        let mut job = JobTemplate::default();
        each_field(map, &["spec"], |_, m| {
            // The job spec: only its `template` is read.
            let spec: Spec = m.next_value_seed(loose())?;
            job.template = spec.template;
            Ok(())
        })?;
        Ok(job)
    }
}

/// A Pod spec's lists: containers, init containers, ephemeral containers.
#[derive(Debug, Clone, Default)]
struct PodSpec {
    lists: [Vec<PodContainer>; 3],
}

impl Shape for PodSpec {
    fn map<'de, A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
        let mut spec = PodSpec::default();
        const FIELDS: &[&str] = &["containers", "initContainers", "ephemeralContainers"];
        each_field(map, FIELDS, |i, m| {
            spec.lists[i] = m.next_value_seed(loose())?;
            Ok(())
        })?;
        Ok(spec)
    }
}

impl Shape for PodContainer {
    fn map<'de, A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
        let mut c = PodContainer::default();
        const FIELDS: &[&str] = &[
            "name",
            "image",
            "resources",
            "livenessProbe",
            "readinessProbe",
            "startupProbe",
        ];
        each_field(map, FIELDS, |i, m| {
            match i {
                0 => c.name = m.next_value_seed(loose())?,
                1 => c.image = m.next_value_seed(loose())?,
                2 => {
                    let r: Resources = m.next_value_seed(loose())?;
                    (c.requests, c.limits) = (r.requests, r.limits);
                }
                i => c.probes[i - 3] = m.next_value_seed(loose::<Probe>())?.0,
            }
            Ok(())
        })?;
        Ok(c)
    }
}

/// A container's `resources`: its requests and limits.
#[derive(Default)]
struct Resources {
    requests: Quantities,
    limits: Quantities,
}

impl Shape for Resources {
    fn map<'de, A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
        let mut r = Resources::default();
        each_field(map, &["requests", "limits"], |i, m| {
            let q = m.next_value_seed(loose())?;
            match i {
                0 => r.requests = q,
                _ => r.limits = q,
            }
            Ok(())
        })?;
        Ok(r)
    }
}

/// Resource names and whether each is set, in the order given (a name
/// given twice: its last value counts).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Quantities(Vec<(String, bool)>);

impl Quantities {
    fn is_set(&self, name: &str) -> bool {
        self.0
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .is_some_and(|(_, set)| *set)
    }
}

impl Shape for Quantities {
    fn map<'de, A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let mut all = Vec::new();
        while let Some(name) = map.next_key::<String>()? {
            all.push((name, map.next_value_seed(loose::<Quantity>())?.0));
        }
        Ok(Quantities(all))
    }
}

/// Whether a quantity is set: a number, or non-empty text.
#[derive(Default)]
struct Quantity(bool);

impl Shape for Quantity {
    fn text(text: &str) -> Self {
        Quantity(!text.is_empty())
    }
    fn number() -> Self {
        Quantity(true)
    }
}

/// Whether a probe says how to probe.
#[derive(Default)]
struct Probe(bool);

impl Shape for Probe {
    fn map<'de, A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
        let mut handlers = [false; 4];
        each_field(map, &["exec", "httpGet", "tcpSocket", "grpc"], |i, m| {
            handlers[i] = m.next_value_seed(loose::<NotNull>())?.0;
            Ok(())
        })?;
        Ok(Probe(handlers.contains(&true)))
    }
}

#[cfg(test)]
mod tests {
    use super::super::containers;
    use super::*;
    use serde_json::{Value, json};

    /// What a `serde_json::Value` walk makes of a container: as the
    /// container policies read it before they had this view.
    fn by_value(c: &Value) -> (bool, bool, bool, [bool; 3]) {
        let set = |part: &str, name: &str| match c
            .get("resources")
            .and_then(|r| r.get(part))
            .and_then(|p| p.get(name))
        {
            Some(Value::String(s)) => !s.is_empty(),
            Some(Value::Number(_)) => true,
            _ => false,
        };
        let probe = |probe: &str| {
            c.get(probe).and_then(Value::as_object).is_some_and(|p| {
                ["exec", "httpGet", "tcpSocket", "grpc"]
                    .iter()
                    .any(|h| p.get(*h).is_some_and(|v| !v.is_null()))
            })
        };
        let probes = PROBES.map(probe);
        (
            set("requests", "cpu"),
            set("requests", "memory"),
            set("limits", "memory"),
            probes,
        )
    }

    type Seen = (String, List, String, String, (bool, bool, bool, [bool; 3]));

    fn walk_value(kind: &str, text: &str) -> Vec<Seen> {
        let object: Value = serde_json::from_str(text).unwrap();
        containers(kind, &object)
            .iter()
            .map(|c| {
                (
                    c.path.clone(),
                    c.list,
                    c.name.to_string(),
                    c.image().to_string(),
                    by_value(c.spec),
                )
            })
            .collect()
    }

    fn walk_view(kind: &str, text: &str) -> Vec<Seen> {
        let pods: Pods = serde_json::from_str(text).unwrap();
        pods.containers(kind)
            .map(|at| {
                let c = at.container;
                let probes = PROBES.map(|p| c.probe(p));
                let set = (c.request("cpu"), c.request("memory"), c.limit("memory"), probes);
                (
                    at.path(),
                    at.list,
                    c.name().to_string(),
                    c.image().to_string(),
                    set,
                )
            })
            .collect()
    }

    #[test]
    fn the_view_finds_what_a_value_walk_finds_in_any_shape() {
        let odd = json!({"name": "odd", "image": "x:1",
            "resources": {"requests": {"cpu": "", "memory": 0, "cpu ": "1"}, "limits": {"memory": null}},
            "livenessProbe": {"exec": null, "httpGet": {}}, "readinessProbe": {"tcpSocket": null},
            "startupProbe": [{"exec": {}}]});
        let good = json!({"name": "app", "image": "registry.example.com/app:1.0",
            "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": 32}},
            "livenessProbe": {"grpc": {"port": 1}}, "readinessProbe": {"tcpSocket": {"port": 80}},
            "startupProbe": {"exec": {"command": ["true"]}}});
        let lists = json!({"containers": ["text", {"name": 5, "image": ["x"], "resources": "none"}, odd, good],
            "initContainers": null, "ephemeralContainers": [{"name": "dbg", "image": "busybox",
            "livenessProbe": "yes", "resources": {"requests": []}}]});
        let objects = [
            json!({"kind": "Pod", "spec": lists}).to_string(),
            json!({"spec": {"containers": [good], "template": {"spec": lists}}}).to_string(),
            json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": lists}}}}}).to_string(),
            json!({"spec": {"template": {"spec": {"containers": {"name": "not a list"}}}}}).to_string(),
            json!({"spec": {"template": null, "jobTemplate": 5}}).to_string(),
            json!({"spec": 5, "metadata": {"name": "x"}}).to_string(),
            json!([1, 2]).to_string(),
            // A field given twice: the last one counts, as in a `Value`.
            r#"{"spec": {"containers": [{"name": "a"}], "containers": [{"name": "b", "name": "c",
                "resources": {"requests": {"cpu": "1", "cpu": ""}, "limits": {"memory": "", "memory": "1"}},
                "livenessProbe": {"exec": {}, "exec": null}, "livenessProbe": {"grpc": {}, "exec": null}}]}}"#
                .to_string(),
        ];
        for text in &objects {
            for kind in ["Pod", "Deployment", "CronJob", "Job", "Service"] {
                assert_eq!(walk_view(kind, text), walk_value(kind, text), "{kind} {text}");
            }
        }
        // Not vacuous: the view found containers in every list, in both shapes of each field.
        let found = walk_view("Pod", &objects[0]);
        assert_eq!(found.len(), 5);
        assert_eq!(found[3].4, (true, true, true, [true, true, true]));
        assert_eq!(found[2].4, (false, true, false, [true, false, false]));
        assert_eq!(found[4].0, "spec.ephemeralContainers[0]");
        assert_eq!(
            walk_view("Pod", &objects[7])[0].4,
            (false, false, true, [true, false, false])
        );
    }
}
