//! What the host checks of a registration before it resolves it: the name a
//! plugin declares, and that it asks only for what this host serves. Owns
//! those refusals and their messages; grants are decided elsewhere
//! (`allowed`).

use crate::bindings::types::Registration;

/// The longest plugin name (a DNS label: it goes into field managers,
/// Event sources and label values).
pub const MAX_NAME: usize = 63;

/// Whether `name` can be a plugin's declared name: a DNS-1123 label
/// (lowercase letters, digits and `-`, starting and ending with a letter or
/// digit, at most 63 characters).
pub fn check(name: &str) -> anyhow::Result<()> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if ok {
        return Ok(());
    }
    anyhow::bail!(
        "the declared plugin name {name:?} is not a DNS label (lowercase letters, digits and '-', \
         at most {MAX_NAME} characters, not starting or ending with '-')"
    )
}

/// Refuse what the registration asks for that this host does not serve yet
/// (rather than accept it and do nothing), and webhooks the API server
/// would refuse.
pub fn unserved(registration: &Registration) -> anyhow::Result<()> {
    if registration.queue.is_some() {
        anyhow::bail!("it asks for a work queue (`queue`), which this wink does not serve yet");
    }
    if let Some(w) = registration
        .watches
        .iter()
        .find(|w| !matches!(w.enqueue, crate::bindings::types::Enqueue::None))
    {
        anyhow::bail!(
            "its watch of {} {} enqueues keys, which needs a work queue this wink does not serve yet",
            w.resource.api_version,
            w.resource.kind
        );
    }
    let mut hooks = Vec::new();
    for w in &registration.admission {
        if hooks.contains(&w.hook) {
            anyhow::bail!("it declares two {:?} webhooks: at most one of each", w.hook);
        }
        hooks.push(w.hook);
        if !(1..=30).contains(&w.timeout_seconds) {
            anyhow::bail!(
                "its {:?} webhook's timeout is {} s: the API server takes 1 to 30",
                w.hook,
                w.timeout_seconds
            );
        }
        if w.rules.is_empty() {
            anyhow::bail!("its {:?} webhook has no rules: it would match nothing", w.hook);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_names_are_dns_labels() {
        for ok in ["team-label-guard", "a", "p2", &"a".repeat(63)] {
            check(ok).unwrap();
        }
        for bad in ["", "Team", "team_label", "-a", "a-", "a.b", &"a".repeat(64)] {
            let e = check(bad).unwrap_err().to_string();
            assert!(e.contains("not a DNS label"), "{bad}: {e}");
        }
    }
}
