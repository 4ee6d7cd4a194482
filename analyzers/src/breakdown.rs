//! Where each nanosecond of the window went, per device: compute,
//! communication, memcpy, memset or idle, by that priority where they
//! overlap.
//!
//! ```text
//! stream 7   [gemm.........]      [nccl all_reduce.....]
//! stream 13        [Memcpy HtoD.........]       [memset]
//! owner      CCCCCCCCCCCCCCCMMMMMMNNNNNNNNNNNNNNNNNNNNNN....
//!                                                     ^ idle: nothing runs
//! ```
//!
//! The per-class time is computed once per device as disjoint span lists
//! ([`DeviceTimeline`]); a window or step then only sums the parts of each
//! list inside its range, so N steps cost N binary searches, not N sweeps.

use crate::intervals::{self, Span};
use crate::kinds::{ClassTable, CopyClass, WorkClass};
use gapscope_collectors::trace::{Ns, Trace};
use serde::{Deserialize, Serialize};

/// Memcpy time split by direction. Adds up to [`Breakdown::memcpy_ns`];
/// where copies of two directions overlap, the first listed owns the time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemcpyByKind {
    /// Host to device.
    pub htod: Ns,
    /// Device to host.
    pub dtoh: Ns,
    /// Device to device.
    pub dtod: Ns,
    /// Peer to peer, host to host or unknown direction.
    pub other: Ns,
}

/// One device's time over one range. Every ns of `window_ns` is in exactly
/// one of compute, communication, memcpy, memset and idle.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Breakdown {
    /// Length of the range.
    pub window_ns: Ns,
    /// Some non-collective kernel runs.
    pub compute_ns: Ns,
    /// An NCCL/RCCL collective runs and no compute kernel.
    pub communication_ns: Ns,
    /// A copy runs and no kernel.
    pub memcpy_ns: Ns,
    /// A memset runs and nothing above.
    pub memset_ns: Ns,
    /// Nothing runs on any stream of the device.
    pub idle_ns: Ns,
    /// `memcpy_ns` by copy direction.
    pub memcpy_by_kind_ns: MemcpyByKind,
}

impl Breakdown {
    /// Busy time: everything but idle.
    pub fn busy_ns(&self) -> Ns {
        self.window_ns - self.idle_ns
    }
}

/// Owner labels, in priority order.
const COMPUTE: usize = 0;
const COMM: usize = 1;
const HTOD: usize = 2;
const DTOH: usize = 3;
const DTOD: usize = 4;
const COPY_OTHER: usize = 5;
const MEMSET: usize = 6;
const LABELS: usize = 7;

/// One device's whole-trace timeline, as disjoint span lists per owner
/// label: a span in `owned[l]` is time where label `l` is the
/// highest-priority thing running.
#[derive(Clone, Debug, Default)]
pub struct DeviceTimeline {
    /// The device index.
    pub device: u32,
    owned: [Vec<Span>; LABELS],
}

impl DeviceTimeline {
    /// Builds a timeline from raw (overlapping) spans per owner label, each
    /// list sorted by start.
    fn from_raw(device: u32, raw: [Vec<Span>; LABELS]) -> Self {
        let mut covered: Vec<Span> = Vec::new();
        let owned = raw.map(|spans| {
            // Rows come from a table sorted by start: the sort inside union
            // runs on sorted input.
            let u = intervals::union(spans);
            let mine = difference(&u, &covered);
            covered = merge(&covered, &u);
            mine
        });
        DeviceTimeline { device, owned }
    }

    /// Busy time of the whole device, as disjoint sorted spans.
    pub fn busy(&self) -> Vec<Span> {
        let all: Vec<Span> = self.owned.iter().flatten().copied().collect();
        intervals::union(all)
    }

    /// Kernel time (compute and collectives) of the whole device, as
    /// disjoint sorted spans.
    pub fn kernel_spans(&self) -> Vec<Span> {
        merge(&self.owned[COMPUTE], &self.owned[COMM])
    }

    /// The breakdown of `range`.
    pub fn breakdown(&self, range: Span) -> Breakdown {
        let t = |l: usize| sum_in(&self.owned[l], range);
        let by_kind = MemcpyByKind {
            htod: t(HTOD),
            dtoh: t(DTOH),
            dtod: t(DTOD),
            other: t(COPY_OTHER),
        };
        let mut b = Breakdown {
            window_ns: (range.1 - range.0).max(0),
            compute_ns: t(COMPUTE),
            communication_ns: t(COMM),
            memcpy_ns: by_kind.htod + by_kind.dtoh + by_kind.dtod + by_kind.other,
            memset_ns: t(MEMSET),
            idle_ns: 0,
            memcpy_by_kind_ns: by_kind,
        };
        b.idle_ns = b.window_ns - b.compute_ns - b.communication_ns - b.memcpy_ns - b.memset_ns;
        b
    }
}

fn label(class: WorkClass, trace: &Trace, i: usize) -> usize {
    match class {
        WorkClass::Compute => COMPUTE,
        WorkClass::Communication => COMM,
        WorkClass::Memset => MEMSET,
        WorkClass::Memcpy => match CopyClass::of(trace.gpu.copy_kind[i]) {
            CopyClass::HtoD => HTOD,
            CopyClass::DtoH => DTOH,
            CopyClass::DtoD => DTOD,
            CopyClass::Other => COPY_OTHER,
        },
    }
}

/// Union of two disjoint sorted lists, in one linear merge.
fn merge(a: &[Span], b: &[Span]) -> Vec<Span> {
    let mut out: Vec<Span> = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        let next = if j == b.len() || (i < a.len() && a[i] <= b[j]) {
            i += 1;
            a[i - 1]
        } else {
            j += 1;
            b[j - 1]
        };
        match out.last_mut() {
            Some(last) if next.0 <= last.1 => last.1 = last.1.max(next.1),
            _ => out.push(next),
        }
    }
    out
}

/// `a` minus `b`, both disjoint and sorted, in one linear pass.
fn difference(a: &[Span], b: &[Span]) -> Vec<Span> {
    let mut out = Vec::with_capacity(a.len());
    let mut j = 0;
    for &(s, e) in a {
        let mut at = s;
        while j < b.len() && b[j].1 <= at {
            j += 1;
        }
        let mut k = j;
        while k < b.len() && b[k].0 < e {
            if b[k].0 > at {
                out.push((at, b[k].0));
            }
            at = at.max(b[k].1);
            k += 1;
        }
        if at < e {
            out.push((at, e));
        }
    }
    out
}

/// Length of disjoint sorted `spans` inside `range`, without allocating.
fn sum_in(spans: &[Span], range: Span) -> Ns {
    let first = spans.partition_point(|&(_, e)| e <= range.0);
    spans[first..]
        .iter()
        .take_while(|&&(s, _)| s < range.1)
        .map(|&(s, e)| (e.min(range.1) - s.max(range.0)).max(0))
        .sum()
}

/// The timelines of every device with busy GPU activity, sorted by id, in
/// one pass over the GPU rows.
pub fn timelines(trace: &Trace) -> Vec<DeviceTimeline> {
    timelines_with(trace, &crate::collectives::communication_rows(trace))
}

/// [`timelines`] with the collective rows already known (`comm` from
/// [`communication_rows`](crate::collectives::communication_rows)).
pub fn timelines_with(trace: &Trace, comm: &[bool]) -> Vec<DeviceTimeline> {
    let classes = ClassTable::new(trace);
    let devices = trace.active_devices();
    let mut raw: Vec<[Vec<Span>; LABELS]> = devices.iter().map(|_| Default::default()).collect();
    let mut last = (u32::MAX, 0usize);
    for i in 0..trace.gpu.len() {
        let Some(mut class) = classes.class(trace, i) else {
            continue;
        };
        if class == WorkClass::Compute && comm[i] {
            class = WorkClass::Communication;
        }
        let d = trace.gpu.device[i];
        if d != last.0 {
            // Devices are few and sorted; rows of one device tend to cluster.
            last = (d, devices.binary_search(&d).expect("active device"));
        }
        raw[last.1][label(class, trace, i)].push((trace.gpu.start[i], trace.gpu.end[i]));
    }
    devices
        .into_iter()
        .zip(raw)
        .map(|(d, r)| DeviceTimeline::from_raw(d, r))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_unions_sorted_lists() {
        assert_eq!(
            merge(&[(0, 5), (10, 12)], &[(3, 7), (12, 13), (20, 21)]),
            vec![(0, 7), (10, 13), (20, 21)]
        );
        assert_eq!(merge(&[], &[(1, 2)]), vec![(1, 2)]);
    }

    #[test]
    fn difference_removes_covered_parts() {
        let a = [(0, 10), (20, 30), (40, 50)];
        let b = [(2, 4), (8, 22), (25, 26), (45, 60)];
        assert_eq!(
            difference(&a, &b),
            vec![(0, 2), (4, 8), (22, 25), (26, 30), (40, 45)]
        );
        assert_eq!(difference(&a, &[]), a.to_vec());
    }

    #[test]
    fn sum_in_clips() {
        let s = [(0, 10), (20, 30)];
        assert_eq!(sum_in(&s, (5, 25)), 10);
        assert_eq!(sum_in(&s, (10, 20)), 0);
        assert_eq!(sum_in(&s, (-5, 100)), 20);
    }
}
