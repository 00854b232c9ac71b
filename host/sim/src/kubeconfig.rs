//! Kubeconfig for the simulated API server: one cluster (plain HTTP on
//! loopback), one user without credentials, one context, current-context.
//!
//! Owns: the kubeconfig text. Must not touch: the server.

use std::path::Path;

pub const NAME: &str = "wink-sim";

/// The kubeconfig YAML pointing at `url`.
pub fn render(url: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: {NAME}\n  cluster:\n    server: {url}\n\
         users:\n- name: {NAME}\n  user: {{}}\ncontexts:\n- name: {NAME}\n  context:\n    \
         cluster: {NAME}\n    user: {NAME}\n    namespace: default\ncurrent-context: {NAME}\n\
         preferences: {{}}\n"
    )
}

/// Write the kubeconfig, creating parent directories.
pub fn write(url: &str, path: &Path) -> anyhow::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, render(url))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kube_accepts_it() {
        let kc: kube::config::Kubeconfig = serde_norway::from_str(&render("http://127.0.0.1:1")).unwrap();
        assert_eq!(kc.current_context.as_deref(), Some(NAME));
        assert_eq!(
            kc.clusters[0].cluster.as_ref().unwrap().server.as_deref(),
            Some("http://127.0.0.1:1")
        );
    }
}
