//! [`TimeRange`]: a time window given by the user (`--time-window
//! START..END`), the one type both the Kineto reader (which drops rows
//! outside it as it reads) and the analysis (which selects inside it) take.

use super::Ns;
use serde::{Deserialize, Serialize};

/// A time range in ns since the trace origin (its earliest event, the 0 of
/// its tables), `[start_ns, end_ns)`, either end open (`--time-window
/// START..END`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimeRange {
    /// Start (`None`: the trace's start).
    pub start_ns: Option<Ns>,
    /// End (`None`: the trace's end).
    pub end_ns: Option<Ns>,
}

impl TimeRange {
    /// `(start, end)` with an open end as far as `Ns` goes.
    pub fn span(&self) -> (Ns, Ns) {
        (self.start_ns.unwrap_or(Ns::MIN), self.end_ns.unwrap_or(Ns::MAX))
    }
}
