//! A real Prometheus (Debian's `prometheus` package, the one that ships
//! `promtool`) scraping a running wink, loading the alerting rules, and
//! answering the dashboard's queries through its HTTP API.

use crate::cache_support::{WAIT, free_port, get_json, http};
use serde_json::Value;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A Prometheus server, killed when dropped.
pub struct Prometheus {
    child: Child,
    pub addr: String,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Prometheus {
    /// Scrape `target` every second with the rules of `rules`, evaluated
    /// every second; its data in `dir`.
    pub fn start(target: &str, rules: &Path, dir: &Path) -> Prometheus {
        let bin = crate::debian_support::ensure("prometheus", "prometheus");
        let config = format!(
            "global: {{scrape_interval: 1s, evaluation_interval: 1s}}\n\
             rule_files: [{:?}]\n\
             scrape_configs:\n  - job_name: wink\n    static_configs: [{{targets: [{target:?}]}}]\n",
            rules.display().to_string()
        );
        std::fs::write(dir.join("prometheus.yml"), config).unwrap();
        let addr = format!("127.0.0.1:{}", free_port());
        let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
        let child = Command::new(bin)
            .arg(format!("--config.file={}", dir.join("prometheus.yml").display()))
            .arg(format!("--storage.tsdb.path={}", dir.join("data").display()))
            .arg(format!("--web.listen-address={addr}"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("run prometheus (Debian's prometheus package)");
        Prometheus { child, addr }
    }

    /// The answer to an instant query: (status, result), retried while
    /// the server is not up yet.
    pub async fn query(&self, expr: &str) -> (String, Vec<Value>) {
        let mut query = String::new();
        for b in expr.bytes() {
            match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => query.push(b as char),
                _ => query.push_str(&format!("%{b:02X}")),
            }
        }
        let (status, body) = get_json(&self.addr, &format!("/api/v1/query?query={query}")).await;
        let result = body["data"]["result"].as_array().cloned().unwrap_or_default();
        let status = match status {
            200 => body["status"].as_str().unwrap_or("?").to_string(),
            other => format!("HTTP {other}: {}", body["error"]),
        };
        (status, result)
    }

    /// Wait until wink was scraped `n` times (with every sample accepted).
    pub async fn until_scraped(&self, n: usize) {
        let deadline = Instant::now() + WAIT;
        while tokio::net::TcpStream::connect(&self.addr).await.is_err() {
            assert!(
                Instant::now() < deadline,
                "Prometheus never listens on {}",
                self.addr
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        // Listening is not ready: until its storage is open, Prometheus
        // answers its API with a plain-text 503.
        loop {
            let ready =
                tokio::time::timeout(Duration::from_secs(5), http(&self.addr, "GET", "/-/ready")).await;
            if matches!(ready, Ok((200, _))) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "Prometheus never became ready: {ready:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        loop {
            if let Ok((200, body)) =
                tokio::time::timeout(Duration::from_secs(5), get_json(&self.addr, "/api/v1/targets")).await
            {
                let target = &body["data"]["activeTargets"][0];
                assert!(
                    target["lastError"].as_str().unwrap_or("").is_empty(),
                    "Prometheus cannot scrape wink: {target}"
                );
                let (_, up) = self.query("count_over_time(up{job=\"wink\"}[1m])").await;
                let scrapes = up
                    .first()
                    .and_then(|r| r["value"][1].as_str()?.parse::<usize>().ok())
                    .unwrap_or(0);
                if target["health"] == "up" && scrapes >= n {
                    return;
                }
            }
            assert!(
                Instant::now() < deadline,
                "Prometheus never scraped wink {n} times"
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// Every rule loaded, as (name, health, last error).
    pub async fn rules(&self) -> Vec<(String, String, String)> {
        let (status, body) = get_json(&self.addr, "/api/v1/rules").await;
        assert_eq!(status, 200, "{body}");
        let mut all = Vec::new();
        for group in body["data"]["groups"].as_array().unwrap() {
            for rule in group["rules"].as_array().unwrap() {
                let s = |k: &str| rule[k].as_str().unwrap_or("").to_string();
                all.push((s("name"), s("health"), s("lastError")));
            }
        }
        all
    }
}
