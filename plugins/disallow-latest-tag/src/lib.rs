//! `disallow-latest-tag`: an image without a tag means `latest`, and
//! `latest` moves: two nodes may run two versions of one Pod. Every
//! container (containers, init containers, ephemeral containers) of a Pod,
//! and of the Pod template of a Deployment, StatefulSet, DaemonSet,
//! ReplicaSet, Job or CronJob, must name its image with a tag that is not
//! disallowed, or pin it by digest (`@sha256:...`).
//!
//! - At the door (a validating webhook on create and update, Pods'
//!   `ephemeralcontainers` subresource included): refused, naming each
//!   container, its field and its image.
//! - In the background: every such object gets the result `image-tag`
//!   (`fail` naming the containers, or `pass`) on add and update.
//!
//! Config (these are the defaults): `{"tags": ["latest"], "exemptImages": []}`.
//! An exempt image is matched whole, or by prefix when it ends with `*`
//! (`registry.example.com/tools/*`).

use wink_sdk::serde::Deserialize;
use wink_sdk::workload::{self, Pods};
use wink_sdk::{Registration, policy};

const NAME: &str = "disallow-latest-tag";

#[derive(Deserialize)]
#[serde(
    crate = "wink_sdk::serde",
    default,
    deny_unknown_fields,
    rename_all = "camelCase"
)]
struct Config {
    tags: Vec<String>,
    exempt_images: Vec<String>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            tags: vec!["latest".into()],
            exempt_images: Vec::new(),
        }
    }
}

/// An image reference's tag and whether a digest pins it:
/// `registry:5000/team/app:1.2@sha256:...` has the tag `1.2` and a digest.
fn tag_of(image: &str) -> (Option<&str>, bool) {
    let (name, digest) = match image.split_once('@') {
        Some((name, _)) => (name, true),
        None => (image, false),
    };
    let last = name.rsplit('/').next().unwrap_or(name);
    (last.split_once(':').map(|(_, tag)| tag), digest)
}

impl Config {
    fn check(&self) -> Result<(), String> {
        if self.tags.is_empty() || self.tags.iter().any(|t| t.is_empty()) {
            return Err("bad config: tags: name at least one tag, none empty".into());
        }
        Ok(())
    }
}

struct Policy {
    config: Config,
}

impl Policy {
    fn exempt(&self, image: &str) -> bool {
        self.config
            .exempt_images
            .iter()
            .any(|e| match e.strip_suffix('*') {
                Some(prefix) => image.starts_with(prefix),
                None => e == image,
            })
    }

    /// What is wrong with the images of `object` (of kind `kind`), one line per container.
    fn find(&self, kind: &str, object: &Pods) -> Vec<String> {
        let mut found = Vec::new();
        for c in object.containers(kind) {
            let image = c.container.image();
            if self.exempt(image) {
                continue;
            }
            match tag_of(image) {
                (_, true) => {}
                (None, false) => found.push(format!(
                    "container {} ({}.image) uses the image {image:?}, which names no tag (latest)",
                    c.container.name(),
                    c.path()
                )),
                (Some(tag), false) if self.config.tags.iter().any(|t| t == tag) => found.push(format!(
                    "container {} ({}.image) uses the image {image}, whose tag {tag} is disallowed",
                    c.container.name(),
                    c.path()
                )),
                _ => {}
            }
        }
        found
    }
}

impl policy::Check<Pods> for Policy {
    const NAME: &'static str = NAME;

    fn new(config: &str) -> Result<Self, String> {
        let config: Config = wink_sdk::config(config)?;
        config.check()?;
        Ok(Policy { config })
    }

    fn registration(&self) -> Registration {
        workload::registration(true)
    }

    fn rule(&self) -> policy::Rule {
        policy::Rule::new(
            "image-tag",
            "Best Practices",
            "every image names an allowed tag or a digest",
        )
    }

    fn violations(&self, kind: &str, object: &Pods) -> Vec<String> {
        self.find(kind, object)
    }
}

wink_sdk::export_plugin!(policy::Checked<Policy, Pods>);
