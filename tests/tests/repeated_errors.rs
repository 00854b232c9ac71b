//! End-to-end: a retry loop's error lines are short and bounded. wink runs
//! on the simulated API server, which refuses its ValidatingWebhookConfiguration
//! writes with a 422 (as a real one refuses an invalid configuration) for
//! 10 s while wink tries again every 2 s: the failure is said once, as a
//! line under 1 KB with the Status's code, reason and message and no
//! `Debug` dump; once the writes are accepted, its recovery is said once.

use crate::admission::run;
use crate::cache_support::*;
use std::time::Duration;
use wink_sim::{Sim, SimConfig};

const REFUSAL: &str = "ValidatingWebhookConfiguration.admissionregistration.k8s.io \"wink\" is invalid: webhooks[0].name: Invalid value: \"probe\": should be a domain with at least three segments separated by dots";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_webhook_configuration_is_said_once_in_a_short_line() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    sim.faults()
        .refuse_writes("validatingwebhookconfigurations", 422, REFUSAL);
    let s = Setup::new("repeated_errors", &sim);
    s.install("admit_probe", "probe", None);
    let wink = run(&s, free_port(), &[]);
    wait_synced(&wink, "probe");
    let failed = "webhook configuration not written";
    wink.wait_for_line(failed, WAIT);
    // Five tries or more, every 2 s.
    tokio::time::sleep(Duration::from_secs(10)).await;
    let lines = wink.lines();
    let said: Vec<&String> = lines.iter().filter(|l| l.contains(failed)).collect();
    assert_eq!(said.len(), 1, "said once:\n{}", lines.join("\n"));
    let line = said[0];
    assert!(line.len() < 1024, "{} bytes: {line}", line.len());
    assert!(line.contains("WARN"), "{line}");
    assert!(line.contains(&format!("422 Invalid: {REFUSAL}")), "{line}");
    for dump in ["ErrorResponse {", "Api(", "Status {", "ApiError"] {
        assert!(!line.contains(dump), "a Debug dump ({dump}): {line}");
    }
    assert!(line.contains("kind=ValidatingWebhookConfiguration"), "{line}");

    sim.faults().accept_writes();
    let recovered = "webhook configuration written: recovered after";
    wink.wait_for_line(recovered, WAIT);
    tokio::time::sleep(Duration::from_secs(3)).await;
    let lines = wink.lines();
    let again: Vec<&String> = lines.iter().filter(|l| l.contains(recovered)).collect();
    assert_eq!(again.len(), 1, "{}", lines.join("\n"));
    assert!(again[0].contains("INFO"), "{}", again[0]);
    let tries: u64 = again[0]
        .split(recovered)
        .nth(1)
        .and_then(|r| r.split_whitespace().next()?.parse().ok())
        .unwrap();
    assert!(tries >= 5, "every 2 s for 10 s: {}", again[0]);
    assert_eq!(lines.iter().filter(|l| l.contains(failed)).count(), 1);
    drop(wink);
}
