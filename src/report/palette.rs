//! Names and colours of what the report draws: the four time classes of
//! the TorchBench-style breakdown and the idle causes. One place, so the
//! bars, the timeline, the legend and the Markdown use the same words.
//!
//! Colours are from the Tableau 10 palette (distinct for the common kinds
//! of colour blindness); busy classes are cool, idle causes warm or grey.

use gapscope_analyzers::breakdown::Breakdown;
use gapscope_analyzers::causes::Cause;
use gapscope_analyzers::causes::CauseTotals;
use gapscope_collectors::trace::Ns;

/// A time class of the breakdown (data movement is memcpy + memset).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// Non-collective kernels.
    Compute,
    /// NCCL/RCCL collectives.
    Communication,
    /// Copies and memsets.
    DataMovement,
    /// Nothing runs.
    Idle,
}

impl Class {
    /// Every class, in stacking order.
    pub const ALL: [Class; 4] = [
        Class::Compute,
        Class::Communication,
        Class::DataMovement,
        Class::Idle,
    ];

    /// Stable key (CSS class suffix, JSON).
    pub fn key(self) -> &'static str {
        match self {
            Class::Compute => "compute",
            Class::Communication => "communication",
            Class::DataMovement => "data_movement",
            Class::Idle => "idle",
        }
    }

    /// What a reader sees.
    pub fn label(self) -> &'static str {
        match self {
            Class::Compute => "compute",
            Class::Communication => "communication",
            Class::DataMovement => "data movement",
            Class::Idle => "idle",
        }
    }

    /// Fill colour.
    pub fn color(self) -> &'static str {
        match self {
            Class::Compute => "#4c78a8",
            Class::Communication => "#54a24b",
            Class::DataMovement => "#72b7b2",
            Class::Idle => "#d4d4d4",
        }
    }
}

/// Fill colour of an idle cause.
pub fn cause_color(c: Cause) -> &'static str {
    match c {
        Cause::Profiler => "#bab0ac",
        Cause::Queued => "#79706e",
        Cause::GraphCapture => "#9ecae9",
        Cause::Sync => "#e45756",
        Cause::Dataloader => "#eeca3b",
        Cause::CpuOp => "#f58518",
        Cause::FrameworkOverhead => "#b279a2",
        Cause::LaunchOverhead => "#ff9da6",
        Cause::Untraced => "#9d755d",
    }
}

/// Colour of busy time in the timeline strips.
pub const BUSY: &str = "#4c78a8";

/// The four classes of a breakdown.
pub fn class_ns(b: &Breakdown) -> [(Class, Ns); 4] {
    [
        (Class::Compute, b.compute_ns),
        (Class::Communication, b.communication_ns),
        (Class::DataMovement, b.memcpy_ns + b.memset_ns),
        (Class::Idle, b.idle_ns),
    ]
}

/// Non-zero causes, most time first (precedence order breaks ties).
pub fn causes_desc(t: &CauseTotals) -> Vec<(Cause, Ns)> {
    let mut v: Vec<(Cause, Ns)> = t.iter().filter(|&(_, ns)| ns > 0).collect();
    v.sort_by_key(|&(_, ns)| std::cmp::Reverse(ns));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_are_distinct() {
        let mut all: Vec<&str> = Cause::ALL.iter().map(|&c| cause_color(c)).collect();
        all.extend(Class::ALL.iter().map(|c| c.color()));
        let n = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), n);
    }
}
