//! wink's Prometheus alerting rules (`docs/observability/wink-alerts.yaml`,
//! compiled in) as the Prometheus Operator's `PrometheusRule`, which
//! `wink manifests --prometheus-rule` prints after the deployment.

use serde_json::{Value, json};

/// The rules file, as shipped beside the Grafana dashboard.
pub const ALERTS: &str = include_str!("../../../docs/observability/wink-alerts.yaml");

/// `wink manifests`' flag.
#[derive(clap::Args)]
pub struct PrometheusRuleFlag {
    /// Also print wink's alerting rules as a PrometheusRule
    /// (monitoring.coreos.com/v1, for the Prometheus Operator).
    #[arg(long)]
    pub prometheus_rule: bool,
}

impl PrometheusRuleFlag {
    /// The document to print after the others (with its `---`), or nothing.
    pub fn render(&self, namespace: &str) -> anyhow::Result<String> {
        if !self.prometheus_rule {
            return Ok(String::new());
        }
        let rule = prometheus_rule(namespace)?;
        Ok(format!("---\n{}", crate::manifests::to_yaml(&[rule])))
    }
}

/// The rules as a `PrometheusRule` in `namespace`, labelled as the other
/// objects `wink manifests` renders.
pub fn prometheus_rule(namespace: &str) -> anyhow::Result<Value> {
    let rules: Value = serde_norway::from_str(ALERTS)?;
    anyhow::ensure!(rules["groups"].is_array(), "the alerting rules have no groups");
    Ok(json!({
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": "wink", "namespace": namespace, "labels": {"app.kubernetes.io/name": "wink"}},
        "spec": {"groups": rules["groups"]},
    }))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_rule_carries_every_group_and_alert() {
        let rule = super::prometheus_rule("ops").unwrap();
        assert_eq!(rule["metadata"]["namespace"], "ops");
        let alerts: Vec<&str> = rule["spec"]["groups"][0]["rules"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|r| r["alert"].as_str())
            .collect();
        assert!(
            alerts.contains(&"WinkPluginQuarantined") && alerts.contains(&"WinkNoLeader"),
            "{alerts:?}"
        );
        assert_eq!(alerts.len(), super::ALERTS.matches("- alert: ").count());
    }
}
