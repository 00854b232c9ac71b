//! [`LabelSummary`]: 64 bits that say which `key=value` labels an object
//! may carry (a Bloom filter of its label pairs), kept beside an object in an
//! index so a walk that looks for `app=web` skips the objects that cannot
//! match without reading their labels. It only ever rules objects out: a
//! summary that passes still goes through [`crate::LabelSelector::matches`].
//!
//! Owns the hashing of label pairs into the summary and the bits a
//! selector needs; knows nothing of where labels are stored.

/// The label pairs of one object, as a Bloom filter of two bits per pair.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LabelSummary(u64);

impl LabelSummary {
    /// The summary of `labels`' pairs.
    pub fn of<'a>(labels: impl IntoIterator<Item = (&'a str, &'a str)>) -> LabelSummary {
        LabelSummary(labels.into_iter().fold(0, |bits, (k, v)| bits | pair_bits(k, v)))
    }

    /// Whether an object with this summary may satisfy a selector that
    /// needs `needed` ([`crate::LabelSelector::summary_bits`]): false only
    /// when it certainly does not.
    pub fn may_match(self, needed: u64) -> bool {
        self.0 & needed == needed
    }
}

/// The two bits of the pair `key=value`: FNV-1a over the key, a separator
/// no key contains, and the value, then two 6-bit positions of the mixed hash.
pub fn pair_bits(key: &str, value: &str) -> u64 {
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in key.as_bytes().iter().chain(b"=").chain(value.as_bytes()) {
        h = (h ^ u64::from(b)).wrapping_mul(PRIME);
    }
    h ^= h >> 29;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 32;
    (1u64 << (h & 63)) | (1u64 << ((h >> 6) & 63))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LabelSelector;

    fn labels(n: usize) -> Vec<(String, String)> {
        (0..n)
            .map(|i| (format!("key-{i}"), format!("value-{i}")))
            .collect()
    }

    #[test]
    fn a_summary_never_rules_out_an_object_the_selector_matches() {
        let selectors = [
            "key-0=value-0",
            "key-1=value-1,key-3",
            "key-2 in (value-2)",
            "key-2 in (x, value-2)",
            "key-0!=x",
            "!absent",
            "key-4==value-4,key-0=value-0",
        ];
        for n in 0..8 {
            let object = labels(n);
            let summary = LabelSummary::of(object.iter().map(|(k, v)| (k.as_str(), v.as_str())));
            for text in selectors {
                let s = LabelSelector::parse(text).unwrap();
                if s.matches(object.as_slice()) {
                    assert!(summary.may_match(s.summary_bits()), "{text} on {n} labels");
                }
            }
        }
    }

    #[test]
    fn a_summary_rules_out_most_objects_without_the_pair() {
        // Ten labels an object, a selector naming a pair none of them has:
        // almost every object is skipped without its labels being read.
        let wanted = LabelSelector::parse("app=none").unwrap().summary_bits();
        let passed = (0..1000)
            .filter(|i| {
                let object: Vec<(String, String)> = (0..10)
                    .map(|j| (format!("label-{j}"), format!("{i}-{j}")))
                    .collect();
                LabelSummary::of(object.iter().map(|(k, v)| (k.as_str(), v.as_str()))).may_match(wanted)
            })
            .count();
        assert!(passed < 100, "{passed} of 1000 passed");
        // A selector with nothing to look for (only a negation) needs no bit.
        assert_eq!(LabelSelector::parse("!x").unwrap().summary_bits(), 0);
        assert!(LabelSummary::default().may_match(0));
    }
}
