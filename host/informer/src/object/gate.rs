//! [`CompressionGate`]: whether an informer still tries to compress the
//! objects it caches. A stream of text that does not compress (random
//! payloads, already-encoded data) would pay for an LZ4 pass per event only
//! to hold the text plain; after a run of such objects the gate lets one in
//! [`SAMPLE`] try, and opens again as soon as one compresses. Owns only that
//! count; what is held is decided in `CachedObject::from_text`.

use super::CachePolicy;

/// Objects in a row that did not compress before the gate narrows.
pub const RUN: u32 = 16;

/// While narrowed, one object in this many is still tried.
pub const SAMPLE: u32 = 32;

/// One informer's compression gate.
#[derive(Debug, Default)]
pub struct CompressionGate {
    /// Tried objects in a row that were held plain.
    misses: u32,
    /// Objects not tried since the last sample.
    skipped: u32,
}

impl CompressionGate {
    /// The policy for the next object: `policy` itself, or without
    /// compression while the gate is narrowed (except for a sample).
    pub fn policy(&mut self, policy: CachePolicy) -> CachePolicy {
        if !policy.compress || self.misses < RUN {
            return policy;
        }
        self.skipped += 1;
        if self.skipped >= SAMPLE {
            self.skipped = 0;
            return policy;
        }
        CachePolicy {
            compress: false,
            ..policy
        }
    }

    /// What came of an object cached under `tried` (the policy
    /// [`policy`](Self::policy) gave): whether it was held compressed.
    pub fn record(&mut self, tried: CachePolicy, compressed: bool) {
        if !tried.compress {
            return;
        }
        self.misses = if compressed {
            0
        } else {
            self.misses.saturating_add(1)
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ON: CachePolicy = CachePolicy {
        managed_fields: true,
        last_applied: true,
        compress: true,
    };

    #[test]
    fn narrows_after_a_run_samples_and_reopens() {
        let mut g = CompressionGate::default();
        for _ in 0..RUN {
            let p = g.policy(ON);
            assert!(p.compress, "tried until the run is complete");
            g.record(p, false);
        }
        let tried: Vec<bool> = (0..SAMPLE * 2)
            .map(|_| {
                let p = g.policy(ON);
                g.record(p, false);
                p.compress
            })
            .collect();
        assert_eq!(tried.iter().filter(|t| **t).count(), 2, "one in SAMPLE is tried");
        // A sample that compresses opens the gate again.
        let p = loop {
            let p = g.policy(ON);
            if p.compress {
                break p;
            }
        };
        g.record(p, true);
        assert!(g.policy(ON).compress);
    }

    #[test]
    fn compressible_streams_and_compression_off_are_left_alone() {
        let mut g = CompressionGate::default();
        for _ in 0..100 {
            let p = g.policy(ON);
            assert!(p.compress);
            g.record(p, true);
        }
        let off = CachePolicy {
            compress: false,
            ..ON
        };
        assert!(!g.policy(off).compress);
    }
}
