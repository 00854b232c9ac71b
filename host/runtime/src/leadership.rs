//! Whether this replica leads: one flag, set by the daemon's leader
//! election and read by every delivery and write. Owns the flag only; the
//! election is the daemon's.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether this replica leads: read on every delivery and write.
#[derive(Debug, Clone)]
pub struct Leadership {
    leading: Arc<AtomicBool>,
}

impl Leadership {
    /// Always leading (no election).
    pub fn always() -> Self {
        Leadership {
            leading: Arc::new(AtomicBool::new(true)),
        }
    }

    /// Not leading until elected.
    pub fn standby() -> Self {
        Leadership {
            leading: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Whether this replica leads now.
    pub fn is_leading(&self) -> bool {
        self.leading.load(Ordering::Acquire)
    }

    /// Say whether this replica leads: the elector's call, nobody else's.
    pub fn set(&self, leading: bool) {
        self.leading.store(leading, Ordering::Release);
    }
}
