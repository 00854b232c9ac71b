//! Which webhooks a Pod review goes to: read from wink's validating
//! configuration on the (simulated) server as the API server reads it (the
//! rules that take a Pod, the namespace selector that takes its namespace),
//! and the same split into one webhook per plugin, to compare.

use serde_json::Value;
use std::time::{Duration, Instant};
use wink_sim::Sim;

const WAIT: Duration = Duration::from_secs(300);

/// Whether the label selector `selector` (a `metav1.LabelSelector`)
/// selects `labels`.
fn selects(selector: &Value, labels: &serde_json::Map<String, Value>) -> bool {
    let matched = selector["matchLabels"]
        .as_object()
        .into_iter()
        .flatten()
        .all(|(k, v)| labels.get(k) == Some(v));
    let expressions = selector["matchExpressions"].as_array().into_iter().flatten();
    matched
        && expressions.into_iter().all(|e| {
            let value = labels.get(e["key"].as_str().unwrap_or_default());
            let listed = e["values"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|v| Some(v) == value);
            match e["operator"].as_str() {
                Some("In") => listed,
                Some("NotIn") => !listed,
                Some("Exists") => value.is_some(),
                Some("DoesNotExist") => value.is_none(),
                other => panic!("operator {other:?}"),
            }
        })
}

/// The paths of the validating webhooks the API server would call for a
/// Pod created in `namespace` (its labels as the server has them), from
/// wink's configuration on the (simulated) server: their rules take Pods
/// and their namespace selector the namespace.
pub async fn pod_webhooks(sim: &Sim, namespace: &str, policies: &[&str]) -> Vec<String> {
    use kube::api::{ApiResource, DynamicObject};
    let ar = ApiResource::from_gvk(&kube::core::GroupVersionKind::gvk(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingWebhookConfiguration",
    ));
    let api: kube::Api<DynamicObject> = kube::Api::all_with(sim.client(), &ar);
    let ns: kube::Api<k8s_openapi::api::core::v1::Namespace> = kube::Api::all(sim.client());
    let labels = ns
        .get(namespace)
        .await
        .unwrap()
        .metadata
        .labels
        .unwrap_or_default();
    let labels: serde_json::Map<String, Value> =
        labels.into_iter().map(|(k, v)| (k, Value::from(v))).collect();
    let deadline = Instant::now() + WAIT;
    loop {
        let config = api.get_opt("wink").await.unwrap().map(|c| c.data);
        let webhooks = config
            .as_ref()
            .and_then(|c| c["webhooks"].as_array().cloned())
            .unwrap_or_default();
        let path = |w: &Value| {
            let url = w["clientConfig"]["url"].as_str().unwrap_or_default();
            format!("/{}", url.splitn(4, '/').nth(3).unwrap_or_default())
        };
        let served: Vec<String> = webhooks.iter().map(path).collect();
        // Every policy given in: the configuration is the whole library's.
        let whole = policies.iter().all(|p| {
            served.iter().any(|s| {
                s.split('/')
                    .nth(2)
                    .is_some_and(|seg| seg.split('.').any(|x| x == *p))
            })
        });
        if whole {
            let takes_pods = |r: &Value| {
                let has =
                    |k: &str, v: &str| r[k].as_array().into_iter().flatten().any(|x| x == v || x == "*");
                has("operations", "CREATE")
                    && has("apiGroups", "")
                    && has("apiVersions", "v1")
                    && has("resources", "pods")
                    && matches!(r["scope"].as_str(), None | Some("*" | "Namespaced"))
            };
            return webhooks
                .iter()
                .filter(|w| w["rules"].as_array().into_iter().flatten().any(takes_pods))
                .filter(|w| selects(&w["namespaceSelector"], &labels))
                .map(path)
                .collect();
        }
        assert!(
            Instant::now() < deadline,
            "wink's configuration never held every policy: {config:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// `paths` with each shared webhook's split into its plugins' own: what the
/// API server was sent when every plugin had a webhook of its own (less
/// those whose own rules do not take the review).
pub fn one_per_plugin(paths: &[String]) -> Vec<String> {
    paths
        .iter()
        .flat_map(|p| {
            let segment = p.split('/').nth(2).unwrap_or_default().to_string();
            segment
                .split('.')
                .map(|plugin| format!("/admission/{plugin}/validate"))
                .collect::<Vec<_>>()
        })
        .collect()
}
