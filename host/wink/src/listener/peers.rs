//! Per-peer connection counts of a [`super::BoundedListener`]: a slot per
//! open connection of an address, given back when the connection drops.
//! Owns only the counts; the listener decides what a full peer gets.

use std::sync::Arc;

/// Open connections per peer address.
pub(super) type Peers = Arc<std::sync::Mutex<std::collections::HashMap<std::net::IpAddr, usize>>>;

/// One open connection of a peer, counted in [`Peers`] until dropped.
pub(super) struct PeerSlot {
    peers: Peers,
    ip: std::net::IpAddr,
}

impl PeerSlot {
    /// A slot for `ip`, unless it holds `max` already.
    pub(super) fn take(peers: &Peers, ip: std::net::IpAddr, max: usize) -> Option<PeerSlot> {
        let mut open = peers.lock().unwrap_or_else(|e| e.into_inner());
        let n = open.entry(ip).or_default();
        if *n >= max {
            return None;
        }
        *n += 1;
        Some(PeerSlot {
            peers: peers.clone(),
            ip,
        })
    }
}

impl Drop for PeerSlot {
    fn drop(&mut self) {
        let mut open = self.peers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = open.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.ip);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_holds_at_most_its_cap_and_gets_a_slot_back_when_one_drops() {
        let peers = Peers::default();
        let (a, b) = ("127.0.0.1".parse().unwrap(), "127.0.0.2".parse().unwrap());
        let first = PeerSlot::take(&peers, a, 2).unwrap();
        let _second = PeerSlot::take(&peers, a, 2).unwrap();
        assert!(
            PeerSlot::take(&peers, a, 2).is_none(),
            "a third from the same address"
        );
        assert!(
            PeerSlot::take(&peers, b, 2).is_some(),
            "another address has its own"
        );
        drop(first);
        assert!(PeerSlot::take(&peers, a, 2).is_some(), "a slot back");
    }
}
