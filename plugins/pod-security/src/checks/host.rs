//! Baseline checks on what reaches the node: host namespaces, privileged
//! containers, hostPath volumes, host ports, Windows HostProcess, and a
//! host named by a probe or lifecycle handler.

use super::{Check, Forbidden, containers, forbid, join_quote, pluralize, sorted};
use crate::pod::{Handler, Pod};
use crate::version::Level;

pub const HOST_NAMESPACES: Check = Check {
    id: "hostNamespaces",
    level: Level::Baseline,
    versions: &[(0, host_namespaces)],
    overrides: &[],
};

fn host_namespaces(pod: &Pod) -> Option<Forbidden> {
    let spec = &pod.spec;
    let shared: Vec<&str> = [
        (spec.host_network, "hostNetwork=true"),
        (spec.host_pid, "hostPID=true"),
        (spec.host_ipc, "hostIPC=true"),
    ]
    .into_iter()
    .filter_map(|(on, field)| on.then_some(field))
    .collect();
    if shared.is_empty() {
        return None;
    }
    forbid("host namespaces", shared.join(", "))
}

pub const PRIVILEGED: Check = Check {
    id: "privileged",
    level: Level::Baseline,
    versions: &[(0, privileged)],
    overrides: &[],
};

fn privileged(pod: &Pod) -> Option<Forbidden> {
    let bad: Vec<&str> = pod
        .spec
        .containers()
        .filter(|c| c.security_context.as_ref().and_then(|s| s.privileged) == Some(true))
        .map(|c| c.name.as_str())
        .collect();
    if bad.is_empty() {
        return None;
    }
    forbid(
        "privileged",
        format!(
            "{} must not set securityContext.privileged=true",
            containers(&bad)
        ),
    )
}

pub const HOST_PATH_VOLUMES: Check = Check {
    id: "hostPathVolumes",
    level: Level::Baseline,
    versions: &[(0, host_path_volumes)],
    overrides: &[],
};

fn host_path_volumes(pod: &Pod) -> Option<Forbidden> {
    let bad: Vec<&str> = pod
        .spec
        .volumes
        .iter()
        .filter(|v| v.has("hostPath"))
        .map(|v| v.name.as_str())
        .collect();
    if bad.is_empty() {
        return None;
    }
    forbid(
        "hostPath volumes",
        format!(
            "{} {}",
            pluralize("volume", "volumes", bad.len()),
            join_quote(&bad)
        ),
    )
}

pub const HOST_PORTS: Check = Check {
    id: "hostPorts",
    level: Level::Baseline,
    versions: &[(0, host_ports)],
    overrides: &[],
};

fn host_ports(pod: &Pod) -> Option<Forbidden> {
    let mut bad = Vec::new();
    let mut ports = Vec::new();
    for c in pod.spec.containers() {
        let used: Vec<i64> = c.ports.iter().map(|p| p.host_port).filter(|p| *p != 0).collect();
        if !used.is_empty() {
            bad.push(c.name.as_str());
            ports.extend(used);
        }
    }
    if bad.is_empty() {
        return None;
    }
    ports.sort_unstable();
    ports.dedup();
    let listed: Vec<String> = ports.iter().map(i64::to_string).collect();
    forbid(
        "hostPort",
        format!(
            "{} {} {} {}",
            containers(&bad),
            pluralize("uses", "use", bad.len()),
            pluralize("hostPort", "hostPorts", ports.len()),
            listed.join(", ")
        ),
    )
}

pub const WINDOWS_HOST_PROCESS: Check = Check {
    id: "windowsHostProcess",
    level: Level::Baseline,
    versions: &[(0, windows_host_process)],
    overrides: &[],
};

fn windows_host_process(pod: &Pod) -> Option<Forbidden> {
    let pod_sets = pod
        .spec
        .security_context
        .as_ref()
        .and_then(|s| s.windows_options.as_ref())
        .and_then(|w| w.host_process)
        == Some(true);
    let bad: Vec<&str> = pod
        .spec
        .containers()
        .filter(|c| {
            c.security_context
                .as_ref()
                .and_then(|s| s.windows_options.as_ref())
                .and_then(|w| w.host_process)
                == Some(true)
        })
        .map(|c| c.name.as_str())
        .collect();
    let mut setters = Vec::new();
    if pod_sets {
        setters.push("pod".to_string());
    }
    if !bad.is_empty() {
        setters.push(containers(&bad));
    }
    if setters.is_empty() {
        return None;
    }
    forbid(
        "hostProcess",
        format!(
            "{} must not set securityContext.windowsOptions.hostProcess=true",
            setters.join(" and ")
        ),
    )
}

pub const HOST_PROBES_AND_HOST_LIFECYCLE: Check = Check {
    id: "hostProbesAndHostLifecycle",
    level: Level::Baseline,
    versions: &[(34, host_probes_and_host_lifecycle)],
    overrides: &[],
};

/// The hosts a probe or lifecycle handler names.
fn hosts(handler: &Option<Handler>) -> impl Iterator<Item = String> + '_ {
    handler
        .iter()
        .flat_map(|h| [&h.http_get, &h.tcp_socket])
        .flatten()
        .filter(|a| !a.host.is_empty())
        .map(|a| a.host.clone())
}

fn host_probes_and_host_lifecycle(pod: &Pod) -> Option<Forbidden> {
    let mut bad = Vec::new();
    let mut named = Vec::new();
    for c in pod.spec.containers() {
        let mut found: Vec<String> = hosts(&c.liveness_probe)
            .chain(hosts(&c.readiness_probe))
            .chain(hosts(&c.startup_probe))
            .collect();
        if let Some(l) = &c.lifecycle {
            found.extend(hosts(&l.post_start).chain(hosts(&l.pre_stop)));
        }
        if !found.is_empty() {
            bad.push(c.name.clone());
            named.extend(found);
        }
    }
    if bad.is_empty() {
        return None;
    }
    let (bad, named) = (sorted(bad), sorted(named));
    forbid(
        "probe or lifecycle host",
        format!(
            "{} {} {} {}",
            containers(&bad),
            pluralize("uses", "use", bad.len()),
            pluralize("probe or lifecycle host", "probe or lifecycle hosts", named.len()),
            join_quote(&named)
        ),
    )
}
