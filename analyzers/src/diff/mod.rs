//! Comparing two runs: two traces ([`trace`], [`ops`]) or two bench-result
//! files ([`bench`]), each ending in a list of [`Regression`]s.
//!
//! Pure comparison: the inputs are already-analysed values (an
//! [`Analysis`](crate::analysis::Analysis) and its [`ops::OpTotals`], or
//! parsed [`bench::BenchRecord`]s); reading files is the caller's job.

pub mod bench;
pub mod job;
pub mod ops;
pub mod trace;

use serde::{Deserialize, Serialize};

/// How much worse something may get before it is a regression, as
/// fractions (0.07 = 7%).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Thresholds {
    /// For times: median bench time, mean step time, idle per step.
    pub time: f64,
    /// For peak CPU and GPU memory.
    pub memory: f64,
}

impl Default for Thresholds {
    /// 7% for both: TorchBench's CI threshold.
    fn default() -> Self {
        Thresholds {
            time: 0.07,
            memory: 0.07,
        }
    }
}

/// Something that got worse beyond its threshold.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Regression {
    /// What regressed: a model/config key, `trace`, a device (`GPU 0`), or
    /// a finding.
    pub subject: String,
    /// Which number: `time`, `cpu_memory`, `gpu_memory`, `status`,
    /// `step_time`, `idle`, `finding`.
    pub metric: String,
    /// Its base value (ns or bytes; 0 where not a number).
    pub base: f64,
    /// Its new value.
    pub new: f64,
    /// `(new − base) / reference` as a fraction; the reference is `base`
    /// except where the detail says otherwise.
    pub change: f64,
    /// The threshold it crossed, as a fraction.
    pub threshold: f64,
    /// One line for people.
    pub detail: String,
}
