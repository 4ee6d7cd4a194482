//! Why the GPU was idle: the [`Cause`] of one idle segment, and
//! [`CauseTotals`], the nanoseconds per cause.
//!
//! Every idle nanosecond of a device gets exactly one cause, chosen from
//! what the CPU side was doing at that instant (see
//! [`segments`](crate::segments) for how each rule is read from the trace,
//! with drawn timelines).
//!
//! # Precedence
//!
//! This is the one statement of which cause wins where several hold:
//! [`Cause::PRECEDENCE`], and `segments` applies exactly that list, first
//! match wins.
//!
//! ```text
//! profiler > queued > graph_capture > sync > dataloader > launch_overhead
//!          > cpu_op > framework_overhead > untraced
//! ```
//!
//! Once the next work's launch call has returned, the work is queued on
//! the device and nothing the host does holds it any more: from then on
//! only `queued` (the work did not start within a launch latency) or
//! `launch_overhead` hold, and `graph_capture`, `sync` and `dataloader`
//! only describe the time before it. `launch_overhead` holds from the start
//! of the next work's launch call on; `cpu_op`, `framework_overhead` and
//! `untraced` only describe the time before it, so those never compete for
//! one instant either.
//!
//! [`Cause::ALL`] is a different list: the order in which causes are
//! *listed* (JSON fields, tables, legends), kept stable for readers.

use serde::{Deserialize, Serialize};

/// The reason a device was idle during one segment of a gap.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// A profiler artifact: a `ProfilerOverhead` marker, CUPTI buffer
    /// flushes, or the CPU inside the profiler's own Python code
    /// (`torch/profiler/...`). Not the user's fault (detectors.md D16).
    Profiler,
    /// The host was blocked waiting for the device (stream/device/event
    /// synchronize, a blocking device→host copy, `.item()`): the queue
    /// drained and nothing new could be launched until the call returned.
    Sync,
    /// The launching thread was inside a DataLoader `__next__` range: the
    /// GPU waited for the next batch (detectors.md D11).
    Dataloader,
    /// The launching thread was inside an operator that had not launched
    /// its GPU work yet: CPU compute in the op.
    CpuOp,
    /// The launching thread was between operators (inside a step,
    /// annotation or Python frame, but no operator): Python / framework
    /// overhead.
    FrameworkOverhead,
    /// The next work was being launched (the host was inside its launch
    /// call), or was queued and started within a launch latency: launch
    /// cost between back-to-back kernels, and between a graph's kernels.
    LaunchOverhead,
    /// No CPU evidence at all explains the gap.
    Untraced,
    /// The next work had been launched and the device was idle, yet it did
    /// not start within a launch latency
    /// ([`QUEUED_AFTER_NS`](crate::segments::QUEUED_AFTER_NS)): something
    /// outside the trace held it (a stream waiting on an event of another
    /// process or device, another process on the GPU, work the trace lost).
    /// No operator is to blame.
    Queued,
    /// The launching thread was capturing a CUDA/HIP graph
    /// (`cudaStreamBeginCapture` .. `cudaStreamEndCapture`: launches are
    /// recorded into the graph, not run) or instantiating, uploading or
    /// destroying one: one-off setup, not a loop to speed up.
    GraphCapture,
}

impl Cause {
    /// Every cause, in the order they are listed (JSON, tables, legends).
    /// Which cause wins is [`Cause::PRECEDENCE`].
    pub const ALL: [Cause; 9] = [
        Cause::Profiler,
        Cause::Sync,
        Cause::Dataloader,
        Cause::CpuOp,
        Cause::FrameworkOverhead,
        Cause::LaunchOverhead,
        Cause::Untraced,
        Cause::Queued,
        Cause::GraphCapture,
    ];

    /// Every cause, strongest first: an idle instant takes the first cause
    /// of this list whose rule holds (see the module docs).
    pub const PRECEDENCE: [Cause; 9] = [
        Cause::Profiler,
        Cause::Queued,
        Cause::GraphCapture,
        Cause::Sync,
        Cause::Dataloader,
        Cause::LaunchOverhead,
        Cause::CpuOp,
        Cause::FrameworkOverhead,
        Cause::Untraced,
    ];

    /// What a reader sees (tables, charts, legends).
    pub fn label(self) -> &'static str {
        match self {
            Cause::Profiler => "profiler overhead",
            Cause::Queued => "queued, not started",
            Cause::GraphCapture => "graph capture (setup)",
            Cause::Sync => "host waits on GPU (sync)",
            Cause::Dataloader => "DataLoader",
            Cause::CpuOp => "CPU-bound operator",
            Cause::FrameworkOverhead => "Python/framework",
            Cause::LaunchOverhead => "kernel launch",
            Cause::Untraced => "untraced",
        }
    }

    /// One sentence on what the cause means and where to look.
    pub fn meaning(self) -> &'static str {
        match self {
            Cause::Profiler => "the profiler itself (buffer flushes, its own Python code); not your code",
            Cause::Queued => {
                "work was launched and the GPU idle, yet it did not start: something outside the trace held it (a wait on another process or device)"
            }
            Cause::GraphCapture => {
                "the CPU was capturing or instantiating a CUDA/HIP graph: one-off setup, nothing runs"
            }
            Cause::Sync => {
                "the CPU blocked on the GPU (synchronize, .item(), a blocking copy to the host), so the queue drained"
            }
            Cause::Dataloader => "the thread that launches the GPU work waited for the next batch from the DataLoader",
            Cause::CpuOp => "the CPU was busy inside an operator before it launched its GPU work",
            Cause::FrameworkOverhead => "the CPU ran Python or framework code between operators",
            Cause::LaunchOverhead => {
                "the CPU was inside the launch call, or queued work started within a launch latency"
            }
            Cause::Untraced => "nothing in the trace explains the gap (code the profiler did not record)",
        }
    }

    /// The cause whose [`Cause::name`] is `name`.
    pub fn from_name(name: &str) -> Option<Cause> {
        Cause::ALL.into_iter().find(|c| c.name() == name)
    }

    /// The stable snake_case name used in JSON and reports.
    pub fn name(self) -> &'static str {
        match self {
            Cause::Profiler => "profiler",
            Cause::Queued => "queued",
            Cause::GraphCapture => "graph_capture",
            Cause::Sync => "sync",
            Cause::Dataloader => "dataloader",
            Cause::CpuOp => "cpu_op",
            Cause::FrameworkOverhead => "framework_overhead",
            Cause::LaunchOverhead => "launch_overhead",
            Cause::Untraced => "untraced",
        }
    }
}

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Idle nanoseconds per cause. Every cause is a field, so the JSON always
/// has all of them, zeros included; their sum is the idle time they
/// describe, exactly.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CauseTotals {
    /// See [`Cause::Profiler`].
    pub profiler: i64,
    /// See [`Cause::Sync`].
    pub sync: i64,
    /// See [`Cause::Dataloader`].
    pub dataloader: i64,
    /// See [`Cause::CpuOp`].
    pub cpu_op: i64,
    /// See [`Cause::FrameworkOverhead`].
    pub framework_overhead: i64,
    /// See [`Cause::LaunchOverhead`].
    pub launch_overhead: i64,
    /// See [`Cause::Untraced`].
    pub untraced: i64,
    /// See [`Cause::Queued`].
    #[serde(default)]
    pub queued: i64,
    /// See [`Cause::GraphCapture`].
    #[serde(default)]
    pub graph_capture: i64,
}

impl CauseTotals {
    /// The counter of `cause`.
    pub fn get(&self, cause: Cause) -> i64 {
        match cause {
            Cause::Profiler => self.profiler,
            Cause::Queued => self.queued,
            Cause::GraphCapture => self.graph_capture,
            Cause::Sync => self.sync,
            Cause::Dataloader => self.dataloader,
            Cause::CpuOp => self.cpu_op,
            Cause::FrameworkOverhead => self.framework_overhead,
            Cause::LaunchOverhead => self.launch_overhead,
            Cause::Untraced => self.untraced,
        }
    }

    /// Adds `ns` to the counter of `cause`.
    pub fn add(&mut self, cause: Cause, ns: i64) {
        let slot = match cause {
            Cause::Profiler => &mut self.profiler,
            Cause::Queued => &mut self.queued,
            Cause::GraphCapture => &mut self.graph_capture,
            Cause::Sync => &mut self.sync,
            Cause::Dataloader => &mut self.dataloader,
            Cause::CpuOp => &mut self.cpu_op,
            Cause::FrameworkOverhead => &mut self.framework_overhead,
            Cause::LaunchOverhead => &mut self.launch_overhead,
            Cause::Untraced => &mut self.untraced,
        };
        *slot += ns;
    }

    /// Sum over all causes: the idle time described.
    pub fn total(&self) -> i64 {
        Cause::ALL.iter().map(|&c| self.get(c)).sum()
    }

    /// `(cause, ns)` for every cause, in listing order ([`Cause::ALL`]).
    pub fn iter(&self) -> impl Iterator<Item = (Cause, i64)> + '_ {
        Cause::ALL.iter().map(move |&c| (c, self.get(c)))
    }

    /// The cause with the most time (the earliest in [`Cause::ALL`] on
    /// ties), or `None` when all are zero.
    pub fn top(&self) -> Option<Cause> {
        let mut best: Option<(Cause, i64)> = None;
        for (c, ns) in self.iter() {
            if ns > 0 && best.is_none_or(|(_, b)| ns > b) {
                best = Some((c, ns));
            }
        }
        best.map(|(c, _)| c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_serialize_every_cause_and_sum() {
        let mut t = CauseTotals::default();
        t.add(Cause::Sync, 5);
        t.add(Cause::Dataloader, 7);
        t.add(Cause::Sync, 1);
        assert_eq!(t.total(), 13);
        assert_eq!(t.top(), Some(Cause::Dataloader));
        let names: Vec<_> = Cause::ALL.iter().map(|c| c.name()).collect();
        assert_eq!(
            names,
            [
                "profiler",
                "sync",
                "dataloader",
                "cpu_op",
                "framework_overhead",
                "launch_overhead",
                "untraced",
                "queued",
                "graph_capture"
            ]
        );
    }

    #[test]
    fn precedence_holds_every_cause_once() {
        let mut p = Cause::PRECEDENCE.to_vec();
        p.sort();
        assert_eq!(p, Cause::ALL.to_vec());
        assert_eq!(Cause::PRECEDENCE[0], Cause::Profiler);
        assert_eq!(Cause::PRECEDENCE[8], Cause::Untraced);
        let labels: std::collections::HashSet<&str> = Cause::ALL.iter().map(|c| c.label()).collect();
        assert_eq!(labels.len(), 9);
    }

    #[test]
    fn names_parse_back() {
        for c in Cause::ALL {
            assert_eq!(Cause::from_name(c.name()), Some(c));
        }
        assert_eq!(Cause::from_name("compute"), None);
    }
}
