//! The parts of a Pod (or of a workload's Pod template) the Pod Security
//! Standards read, as serde structs. Unset and `null` are kept apart where
//! PodSecurity admission keeps them apart (a Go pointer): an
//! `Option<bool>` is `None` for both, and a check that requires a value
//! fails on `None`. Lists and strings that are `null` read as empty.
//! Pure: no SDK call here.

use std::collections::BTreeMap;
use wink_sdk::serde::{Deserialize, Deserializer};
use wink_sdk::serde_json::{Map, Value};

/// A missing or `null` field as its default.
pub fn nullable<'de, D: Deserializer<'de>, T: Deserialize<'de> + Default>(d: D) -> Result<T, D::Error> {
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// A Pod, or a Pod template: metadata and spec.
#[derive(Debug, Default, Deserialize)]
#[serde(crate = "wink_sdk::serde")]
pub struct Pod {
    #[serde(default, deserialize_with = "nullable")]
    pub metadata: Metadata,
    #[serde(default, deserialize_with = "nullable")]
    pub spec: PodSpec,
}

#[derive(Debug, Default, Deserialize)]
#[serde(crate = "wink_sdk::serde")]
pub struct Metadata {
    #[serde(default, deserialize_with = "nullable")]
    pub annotations: BTreeMap<String, String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(crate = "wink_sdk::serde", rename_all = "camelCase")]
pub struct PodSpec {
    #[serde(default, deserialize_with = "nullable")]
    pub containers: Vec<Container>,
    #[serde(default, deserialize_with = "nullable")]
    pub init_containers: Vec<Container>,
    #[serde(default, deserialize_with = "nullable")]
    pub ephemeral_containers: Vec<Container>,
    #[serde(default, deserialize_with = "nullable")]
    pub volumes: Vec<Volume>,
    #[serde(default, deserialize_with = "nullable")]
    pub host_network: bool,
    #[serde(default, deserialize_with = "nullable", rename = "hostPID")]
    pub host_pid: bool,
    #[serde(default, deserialize_with = "nullable", rename = "hostIPC")]
    pub host_ipc: bool,
    #[serde(default)]
    pub host_users: Option<bool>,
    #[serde(default)]
    pub os: Option<PodOs>,
    #[serde(default)]
    pub runtime_class_name: Option<String>,
    #[serde(default)]
    pub security_context: Option<PodSecurityContext>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(crate = "wink_sdk::serde")]
pub struct PodOs {
    #[serde(default, deserialize_with = "nullable")]
    pub name: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(crate = "wink_sdk::serde", rename_all = "camelCase")]
pub struct PodSecurityContext {
    #[serde(default)]
    pub se_linux_options: Option<SeLinuxOptions>,
    #[serde(default)]
    pub run_as_non_root: Option<bool>,
    #[serde(default)]
    pub run_as_user: Option<i64>,
    #[serde(default)]
    pub seccomp_profile: Option<Profile>,
    #[serde(default)]
    pub app_armor_profile: Option<Profile>,
    #[serde(default)]
    pub windows_options: Option<WindowsOptions>,
    #[serde(default, deserialize_with = "nullable")]
    pub sysctls: Vec<Sysctl>,
}

/// A container, init container or ephemeral container.
#[derive(Debug, Default, Deserialize)]
#[serde(crate = "wink_sdk::serde", rename_all = "camelCase")]
pub struct Container {
    #[serde(default, deserialize_with = "nullable")]
    pub name: String,
    #[serde(default)]
    pub security_context: Option<SecurityContext>,
    #[serde(default, deserialize_with = "nullable")]
    pub ports: Vec<Port>,
    #[serde(default)]
    pub liveness_probe: Option<Handler>,
    #[serde(default)]
    pub readiness_probe: Option<Handler>,
    #[serde(default)]
    pub startup_probe: Option<Handler>,
    #[serde(default)]
    pub lifecycle: Option<Lifecycle>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(crate = "wink_sdk::serde", rename_all = "camelCase")]
pub struct SecurityContext {
    #[serde(default)]
    pub privileged: Option<bool>,
    #[serde(default)]
    pub capabilities: Option<Capabilities>,
    #[serde(default)]
    pub se_linux_options: Option<SeLinuxOptions>,
    #[serde(default)]
    pub proc_mount: Option<String>,
    #[serde(default)]
    pub seccomp_profile: Option<Profile>,
    #[serde(default)]
    pub app_armor_profile: Option<Profile>,
    #[serde(default)]
    pub windows_options: Option<WindowsOptions>,
    #[serde(default)]
    pub allow_privilege_escalation: Option<bool>,
    #[serde(default)]
    pub run_as_non_root: Option<bool>,
    #[serde(default)]
    pub run_as_user: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(crate = "wink_sdk::serde")]
pub struct Capabilities {
    #[serde(default, deserialize_with = "nullable")]
    pub add: Vec<String>,
    #[serde(default, deserialize_with = "nullable")]
    pub drop: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(crate = "wink_sdk::serde")]
pub struct SeLinuxOptions {
    #[serde(default, deserialize_with = "nullable", rename = "type")]
    pub type_: String,
    #[serde(default, deserialize_with = "nullable")]
    pub user: String,
    #[serde(default, deserialize_with = "nullable")]
    pub role: String,
}

/// A seccomp or AppArmor profile: its `type`.
#[derive(Debug, Default, Deserialize)]
#[serde(crate = "wink_sdk::serde")]
pub struct Profile {
    #[serde(default, deserialize_with = "nullable", rename = "type")]
    pub type_: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(crate = "wink_sdk::serde", rename_all = "camelCase")]
pub struct WindowsOptions {
    #[serde(default)]
    pub host_process: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(crate = "wink_sdk::serde")]
pub struct Sysctl {
    #[serde(default, deserialize_with = "nullable")]
    pub name: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(crate = "wink_sdk::serde", rename_all = "camelCase")]
pub struct Port {
    #[serde(default, deserialize_with = "nullable")]
    pub host_port: i64,
}

/// A probe or a lifecycle handler: the two actions that name a host.
#[derive(Debug, Default, Deserialize)]
#[serde(crate = "wink_sdk::serde", rename_all = "camelCase")]
pub struct Handler {
    #[serde(default)]
    pub http_get: Option<HostAction>,
    #[serde(default)]
    pub tcp_socket: Option<HostAction>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(crate = "wink_sdk::serde")]
pub struct HostAction {
    #[serde(default, deserialize_with = "nullable")]
    pub host: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(crate = "wink_sdk::serde", rename_all = "camelCase")]
pub struct Lifecycle {
    #[serde(default)]
    pub post_start: Option<Handler>,
    #[serde(default)]
    pub pre_stop: Option<Handler>,
}

/// A volume: its name and the rest of its fields (its source).
#[derive(Debug, Default, Deserialize)]
#[serde(crate = "wink_sdk::serde")]
pub struct Volume {
    #[serde(default, deserialize_with = "nullable")]
    pub name: String,
    #[serde(flatten)]
    pub source: Map<String, Value>,
}

impl Volume {
    /// Whether the source `field` (e.g. `hostPath`) is set and not `null`.
    pub fn has(&self, field: &str) -> bool {
        self.source.get(field).is_some_and(|v| !v.is_null())
    }
}

impl PodSpec {
    /// Init containers, containers, then ephemeral containers (the order
    /// PodSecurity admission visits them in).
    pub fn containers(&self) -> impl Iterator<Item = &Container> {
        self.init_containers
            .iter()
            .chain(&self.containers)
            .chain(&self.ephemeral_containers)
    }

    /// Whether `spec.os.name` is `windows`.
    pub fn is_windows(&self) -> bool {
        self.os.as_ref().is_some_and(|os| os.name == "windows")
    }

    /// Whether the Pod runs in a user namespace (`hostUsers: false`).
    pub fn in_user_namespace(&self) -> bool {
        self.host_users == Some(false)
    }
}
