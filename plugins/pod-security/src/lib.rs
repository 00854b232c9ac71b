//! `pod-security`: checks every v1 Pod, in every namespace, against five
//! controls of the Pod Security Standards' Baseline profile
//! (<https://kubernetes.io/docs/concepts/security/pod-security-standards/>)
//! and gives one policy result per rule on each add and update (the host
//! writes a PolicyReport only when its content changes). It only reports:
//! it never writes to the cluster, and logs per Pod at debug level only.
//!
//! Every result is under the policy `pod-security` (the plugin's name), in
//! the category `Pod Security Standards (Baseline)`; a rule fails when any
//! container, init container or ephemeral container breaks it:
//!
//! | rule | severity | fails when |
//! |------|----------|------------|
//! | `privileged-containers` | high | `securityContext.privileged: true` |
//! | `host-namespaces` | high | `spec.hostNetwork`, `hostPID` or `hostIPC` is true |
//! | `host-path-volumes` | high | a volume is a `hostPath` |
//! | `capabilities` | medium | `securityContext.capabilities.add` names one beyond `AUDIT_WRITE`, `CHOWN`, `DAC_OVERRIDE`, `FOWNER`, `FSETID`, `KILL`, `MKNOD`, `NET_BIND_SERVICE`, `SETFCAP`, `SETGID`, `SETPCAP`, `SETUID`, `SYS_CHROOT` (exact names) |
//! | `host-ports` | medium | a container port has a non-zero `hostPort` |
//!
//! A failure's message names the offenders, and its property `containers`
//! (`volumes` for `host-path-volumes`) lists them comma-separated. A Pod
//! whose JSON does not decode gets `error` on every rule.
//!
//! The same rules guard the door: the plugin's validating webhook refuses
//! a Pod being created that fails a `high` rule, naming the rules and the
//! offenders, and warns (allowing it) about `medium` ones. Pods already
//! running are only reported.
//!
//! No config.

mod rules;

use rules::{Check, Level};
use wink_sdk::admission::{self, Operation, Rule, Verdict, Webhook};
use wink_sdk::report::{self, Finding, Outcome, Severity};
use wink_sdk::serde::Deserialize;
use wink_sdk::{Handler, Object, Registration, Watch};

const CATEGORY: &str = "Pod Security Standards (Baseline)";

#[derive(Default, Deserialize)]
#[serde(crate = "wink_sdk::serde", deny_unknown_fields)]
struct Config {}

struct PodSecurity;

fn severity(level: Level) -> Severity {
    match level {
        Level::Medium => Severity::Medium,
        Level::High => Severity::High,
    }
}

fn rule_finding(rule: &str, level: Level, outcome: Outcome) -> Finding {
    report::finding(rule, outcome)
        .severity(severity(level))
        .category(CATEGORY)
}

fn finding(check: Check) -> Finding {
    let outcome = if check.passed {
        Outcome::Pass
    } else {
        Outcome::Fail
    };
    let mut finding = rule_finding(check.rule, check.level, outcome).message(check.message);
    for (key, value) in check.properties {
        finding = finding.property(key, value);
    }
    finding
}

impl PodSecurity {
    fn check(&self, pod: &Object) {
        let findings: Vec<Finding> = match pod.decode::<rules::Pod>() {
            Ok(decoded) => {
                let checks = rules::evaluate(&decoded.spec);
                let failed: Vec<&str> = checks.iter().filter(|c| !c.passed).map(|c| c.rule).collect();
                if failed.is_empty() {
                    wink_sdk::debug!("pod-security: {} passes", pod.key());
                } else {
                    wink_sdk::debug!("pod-security: {} fails {}", pod.key(), failed.join(", "));
                }
                checks.into_iter().map(finding).collect()
            }
            Err(e) => {
                wink_sdk::debug!("pod-security: {} not decoded: {e}", pod.key());
                let message = format!("the Pod did not decode: {e}");
                rules::RULES
                    .iter()
                    .map(|&(rule, level)| rule_finding(rule, level, Outcome::Error).message(&message))
                    .collect()
            }
        };
        if let Err(e) = report::set(pod, &findings) {
            wink_sdk::warn!("pod-security: results about {} not given: {e}", pod.key());
        }
    }
}

impl Handler for PodSecurity {
    fn init(config: &str) -> Result<(Self, Registration), String> {
        let Config {} = wink_sdk::config(config)?;
        let door = Webhook::validate().rule(Rule::new(&[Operation::Create], "", "v1", "pods"));
        let registration = Registration::new().watch(Watch::new("v1", "Pod")).admission(door);
        Ok((PodSecurity, registration))
    }

    fn validate(&mut self, request: &admission::Request) -> Verdict {
        let Some(Ok(pod)) = request.decode::<rules::Pod>() else {
            return Verdict::deny("pod-security: the Pod does not decode");
        };
        let failed: Vec<Check> = rules::evaluate(&pod.spec)
            .into_iter()
            .filter(|c| !c.passed)
            .collect();
        let mut verdict = Verdict::allow();
        let mut refused = Vec::new();
        for check in failed {
            let line = format!("{}: {}", check.rule, check.message);
            match check.level {
                Level::High => refused.push(line),
                Level::Medium => verdict = verdict.warn(format!("pod-security: {line}")),
            }
        }
        if !refused.is_empty() {
            return Verdict::deny(format!("pod-security (Baseline): {}", refused.join("; ")));
        }
        verdict
    }

    fn on_add(&mut self, obj: &Object, _in_initial_list: bool) {
        self.check(obj);
    }

    fn on_update(&mut self, _old: &Object, new: &Object) {
        self.check(new);
    }
}

wink_sdk::export_plugin!(PodSecurity);
