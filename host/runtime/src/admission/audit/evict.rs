//! Which result a full audit trail gives up for a new one. Results about
//! objects the informer cache does not hold go first (forged reviews, and
//! deleted objects; a CREATE under review is about an object that does not
//! exist yet, so it is among them too), then those wink cannot tell about
//! (no informer holds the whole resource), then the oldest. A new result
//! never evicts one of a higher rank than its own: when every held result
//! is about an object that exists, a result about one that does not is
//! dropped instead. Owns only that choice; the cache is asked through
//! [`Cache`], at the time of the choice (an object created since its review
//! is there by then).

use crate::reports::aggregate::Subject;

/// Whether the informer cache holds an object, in eviction order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum InCache {
    /// An informer holding the whole resource has synced and has no such
    /// object.
    Absent,
    /// No synced informer holds the whole resource.
    Unknown,
    /// The cache holds it.
    Present,
}

/// The resource a review was about, as its `resource` names it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Resource {
    pub group: String,
    pub version: String,
    /// The plural, as in a URL (`pods`).
    pub resource: String,
}

/// What the informer cache holds.
pub trait Cache {
    /// Whether it holds `subject`, an object of `resource`.
    fn in_cache(&self, resource: &Resource, subject: &Subject) -> InCache;
}

impl<F: Fn(&Resource, &Subject) -> InCache> Cache for F {
    fn in_cache(&self, resource: &Resource, subject: &Subject) -> InCache {
        self(resource, subject)
    }
}

/// The index in `held` (oldest first) of the result to give up for a new
/// one ranked `new`: the oldest of the lowest rank, when that rank is not
/// above `new`; none when the new result is to be dropped.
pub fn victim<'a>(
    held: impl IntoIterator<Item = (&'a Resource, &'a Subject)>,
    new: InCache,
    cache: &dyn Cache,
) -> Option<usize> {
    let mut best: Option<(usize, InCache)> = None;
    for (i, (resource, subject)) in held.into_iter().enumerate() {
        let rank = cache.in_cache(resource, subject);
        if best.is_none_or(|(_, b)| rank < b) {
            best = Some((i, rank));
        }
        if rank == InCache::Absent {
            break;
        }
    }
    best.filter(|(_, rank)| *rank <= new).map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subject(name: &str) -> Subject {
        Subject {
            api_version: "v1".into(),
            kind: "Pod".into(),
            namespace: Some("ns".into()),
            name: name.into(),
            uid: String::new(),
        }
    }

    /// Objects named `real-*` exist, `unknown-*` cannot be told, the rest
    /// do not.
    fn cache(_: &Resource, s: &Subject) -> InCache {
        if s.name.starts_with("real-") {
            InCache::Present
        } else if s.name.starts_with("unknown-") {
            InCache::Unknown
        } else {
            InCache::Absent
        }
    }

    fn pick(names: &[&str], new: InCache) -> Option<usize> {
        let r = Resource::default();
        let held: Vec<(Resource, Subject)> = names.iter().map(|n| (r.clone(), subject(n))).collect();
        victim(held.iter().map(|(r, s)| (r, s)), new, &cache)
    }

    #[test]
    fn absent_objects_go_first_then_unknown_then_the_oldest() {
        use InCache::*;
        let names = ["real-a", "unknown-b", "real-c", "forged-d", "forged-e"];
        for new in [Absent, Unknown, Present] {
            assert_eq!(pick(&names, new), Some(3), "the oldest absent, for {new:?}");
        }
        let names = ["real-a", "unknown-b", "real-c", "unknown-d"];
        assert_eq!(pick(&names, Present), Some(1), "the oldest unknown");
        assert_eq!(pick(&names, Unknown), Some(1));
        assert_eq!(pick(&names, Absent), None, "an absent one evicts no unknown");
        let names = ["real-a", "real-b"];
        assert_eq!(pick(&names, Present), Some(0), "only then the oldest");
        assert_eq!(pick(&names, Unknown), None);
        assert_eq!(pick(&names, Absent), None, "dropped rather than evicting");
        assert_eq!(pick(&[], Absent), None);
    }

    #[test]
    fn the_scan_stops_at_the_first_absent_object() {
        let asked = std::cell::Cell::new(0);
        let counting = |r: &Resource, s: &Subject| {
            asked.set(asked.get() + 1);
            cache(r, s)
        };
        let r = Resource::default();
        let held: Vec<(Resource, Subject)> = ["real-a", "gone", "real-b", "gone-too"]
            .iter()
            .map(|n| (r.clone(), subject(n)))
            .collect();
        let got = victim(held.iter().map(|(r, s)| (r, s)), InCache::Present, &counting);
        assert_eq!((got, asked.get()), (Some(1), 2));
    }
}
