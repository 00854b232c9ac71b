//! How fast one peer (the TCP address a review came from) may add audit
//! results to one plugin's trail: a token bucket per peer, [`BURST`] at
//! once and [`RATE`] a second sustained. A review past it is answered all
//! the same; only its result is not recorded. At most [`MAX_PEERS`] peers
//! are tracked: past that the peers whose bucket is full again (forgetting
//! them loses nothing) and then the longest unseen are forgotten, so a
//! flood from many addresses cannot grow the table. Owns only the buckets
//! and when to say that a peer is over its rate (once, then at most once a
//! minute per peer, with the count since).
//!
//! The figures: a real API server sends a plugin one review per write of a
//! resource its webhook matches, and only denials become results.
//! Controllers write at a client-side rate (kube-controller-manager's
//! default is 20 requests a second, 30 at once), and a `kubectl apply` of a
//! few hundred objects fits in the burst; a forger posting straight to the
//! port records no more than 256 results, then 32 a second, however fast
//! it sends.

use crate::rate::TokenBucket;
use std::collections::HashMap;
use std::net::IpAddr;
use std::time::Instant;
use wink_informer::repeated::RepeatedFailure;

/// Results one peer may add at once.
pub const BURST: u32 = 256;
/// Results one peer may add a second, sustained.
pub const RATE: f64 = 32.0;
/// Peers tracked per plugin at most.
pub const MAX_PEERS: usize = 1024;

struct Peer {
    bucket: TokenBucket,
    seen: Instant,
    /// What was said of its results dropped, and when.
    said: RepeatedFailure,
}

/// One plugin's peers and their buckets.
pub struct Peers {
    burst: u32,
    rate: f64,
    cap: usize,
    peers: HashMap<IpAddr, Peer>,
}

impl Default for Peers {
    fn default() -> Self {
        Peers::new(BURST, RATE, MAX_PEERS)
    }
}

/// What one result from a peer gets.
#[derive(Debug, PartialEq, Eq)]
pub enum Taken {
    /// Recorded.
    Yes,
    /// Over the peer's rate: not recorded; the line to log, if one is due.
    No(Option<String>),
}

impl Peers {
    /// `burst` at once and `rate` a second per peer, at most `cap` peers.
    pub fn new(burst: u32, rate: f64, cap: usize) -> Self {
        Peers {
            burst,
            rate,
            cap: cap.max(1),
            peers: HashMap::new(),
        }
    }

    /// How many peers are tracked.
    pub fn len(&self) -> usize {
        self.peers.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.peers.is_empty()
    }

    /// A token for one result from `peer` at `now`.
    pub fn take_at(&mut self, peer: IpAddr, now: Instant) -> Taken {
        if !self.peers.contains_key(&peer) && self.peers.len() >= self.cap {
            self.forget(now);
        }
        let (burst, rate) = (self.burst, self.rate);
        let p = self.peers.entry(peer).or_insert_with(|| Peer {
            bucket: TokenBucket::new_at(rate, burst, now),
            seen: now,
            said: RepeatedFailure::default(),
        });
        p.seen = now;
        if p.bucket.try_take_at(now) {
            return Taken::Yes;
        }
        let what = format!(
            "audit results from {peer} over its rate ({burst} at once, {rate} a second): \
             its reviews are answered, their results not recorded"
        );
        Taken::No(p.said.failed_at(now, &what))
    }

    /// Make room for one peer: those whose bucket is full again go (but
    /// not those whose drops were said: forgotten, they would be said
    /// again), then the longest unseen while no place is free.
    fn forget(&mut self, now: Instant) {
        self.peers
            .retain(|_, p| !p.bucket.is_full_at(now) || p.said.is_failing());
        while self.peers.len() >= self.cap {
            let Some(oldest) = self.peers.iter().min_by_key(|(_, p)| p.seen).map(|(ip, _)| *ip) else {
                break;
            };
            self.peers.remove(&oldest);
        }
    }

    /// Whether `peer` is tracked.
    #[cfg(test)]
    fn tracks(&self, peer: IpAddr) -> bool {
        self.peers.contains_key(&peer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn ip(n: u32) -> IpAddr {
        IpAddr::V4(std::net::Ipv4Addr::from(0x0a00_0000 + n))
    }

    #[test]
    fn audit_results_from_one_peer_take_its_burst_then_its_rate() {
        let t0 = Instant::now();
        let mut peers = Peers::new(10, 2.0, 8);
        let taken = (0..50).filter(|_| peers.take_at(ip(1), t0) == Taken::Yes).count();
        assert_eq!(taken, 10, "the burst, however many are sent at once");
        assert_eq!(peers.take_at(ip(2), t0), Taken::Yes, "another peer has its own");
        // One second later: two more, at the rate.
        let t1 = t0 + Duration::from_secs(1);
        let taken = (0..50).filter(|_| peers.take_at(ip(1), t1) == Taken::Yes).count();
        assert_eq!(taken, 2);
    }

    #[test]
    fn a_peer_over_its_rate_is_said_once_then_once_a_minute() {
        let t0 = Instant::now();
        let mut peers = Peers::new(1, 0.001, 8);
        assert_eq!(peers.take_at(ip(1), t0), Taken::Yes);
        let Taken::No(Some(line)) = peers.take_at(ip(1), t0) else {
            panic!("the first drop is said")
        };
        assert!(
            line.contains("10.0.0.1") && line.contains("not recorded"),
            "{line}"
        );
        for s in 1..60 {
            let t = t0 + Duration::from_secs(s);
            assert_eq!(peers.take_at(ip(1), t), Taken::No(None), "at {s} s");
        }
        let Taken::No(Some(line)) = peers.take_at(ip(1), t0 + Duration::from_secs(60)) else {
            panic!("said again after a minute")
        };
        assert!(line.contains("59 more times"), "{line}");
    }

    #[test]
    fn peers_past_the_cap_are_forgotten_idle_ones_first() {
        let t0 = Instant::now();
        let mut peers = Peers::new(4, 1.0, 3);
        // Peer 1 drains its bucket; 2 and 3 take one token each.
        for _ in 0..4 {
            peers.take_at(ip(1), t0);
        }
        peers.take_at(ip(2), t0);
        peers.take_at(ip(3), t0 + Duration::from_millis(1));
        // Two seconds on, 2 and 3 are full again, 1 is not: a fourth peer
        // costs 2 and 3, and 1 keeps its empty bucket.
        let t2 = t0 + Duration::from_secs(2);
        peers.take_at(ip(4), t2);
        assert!(peers.tracks(ip(1)) && peers.tracks(ip(4)));
        assert!(!peers.tracks(ip(2)) && !peers.tracks(ip(3)));
        // None full: the longest unseen goes.
        for _ in 0..4 {
            peers.take_at(ip(4), t2);
        }
        peers.take_at(ip(5), t2);
        peers.take_at(ip(6), t2 + Duration::from_millis(1));
        assert_eq!(peers.len(), 3);
        assert!(!peers.tracks(ip(1)), "the longest unseen");
        // A flood of addresses never grows the table past the cap.
        for n in 100..5000 {
            peers.take_at(ip(n), t2);
        }
        assert_eq!(peers.len(), 3);
    }
}
