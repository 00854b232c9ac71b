//! On the real kube-apiserver (see `envtest`): policy reports in both
//! report APIs. wink installs the API's CRDs, which the real server
//! validates, and `pod-security`'s results about every Pod of a namespace
//! become one report there, with the summary of its results: as
//! wgpolicyk8s.io PolicyReports, then as openreports.io Reports; kubectl
//! lists them through the CRDs' columns; a deleted Pod's results leave.

use crate::cache_support::{Setup, WAIT};
use crate::envtest;
use crate::report_support::{expected, until_reports_of, violating_pod};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, PostParams};
use std::time::Duration;
use wink::reports::ReportApi;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_security_results_become_reports_in_either_api() {
    let Some(cp) = envtest::shared() else { return };
    let client = cp.client().await;
    for api in [ReportApi::Wgpolicyk8s, ReportApi::OpenReports] {
        let ns = cp.namespace(&format!("reports-{api}")).await;
        let pods_api: Api<Pod> = Api::namespaced(client.clone(), &ns);
        let mut pods = Vec::new();
        for (i, flaw) in [0, 1, 2, 5].into_iter().enumerate() {
            let name = format!("pod-{i}");
            let pod: Pod = serde_json::from_value(violating_pod(&ns, &name, flaw)).unwrap();
            pods_api.create(&PostParams::default(), &pod).await.unwrap();
            pods.push((ns.clone(), name, flaw));
        }
        let s = Setup::with_kubeconfig(&format!("real_reports_{api}"), &cp.kubeconfig);
        s.install("pod_security", "pod-security", None);
        let flag = format!("--report-api={api}");
        let mut wink = s.run(&[&flag, "--report-batch-ms", "200"]);
        let ours = |r: &serde_json::Value| r["metadata"]["namespace"] == ns.as_str();
        until_reports_of(&client, api, &expected(&pods), WAIT, ours).await;

        let kubectl = cp.kubectl(&crate::common::scratch(&format!("real_reports_kubectl_{api}")));
        let table = kubectl
            .ok(&["get", &format!("{}.{}", api.plural(true), api.group()), "-n", &ns])
            .await;
        let header = table.lines().next().unwrap_or_default();
        assert!(
            ["NAME", "PASS", "FAIL"].iter().all(|c| header.contains(c)),
            "{table}"
        );

        pods_api.delete("pod-1", &DeleteParams::default()).await.unwrap();
        pods.retain(|(_, name, _)| name != "pod-1");
        until_reports_of(&client, api, &expected(&pods), WAIT, ours).await;
        assert!(
            !wink
                .lines()
                .iter()
                .any(|l| l.contains("forbidden") || l.contains("422 ")),
            "{:#?}",
            wink.lines()
        );
        wink.terminate(Duration::from_secs(20));
    }
}
