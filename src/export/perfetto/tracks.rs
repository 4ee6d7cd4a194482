//! Which slice goes on which track: the track tree, its descriptors, and the
//! per-track BEGIN/END edges.
//!
//! ```text
//! process 4242                      (process track)
//!   thread main                     cpu ops + runtime calls, nested
//!   main (2)                        only if some ranges overlap without nesting
//! GPU 0: NVIDIA H100                (named track, children in explicit order)
//!   stream 7, stream 7 (2)          kernels / memcpy / memset, lanes on overlap
//!   stream 7 sync                   CUDA sync records (waits, not work)
//!   GPU annotations                 gpu_user_annotation ranges
//!   GPU idle                        idle gaps, named by cause
//!   Findings                        detector findings (spans), when given
//!   GPU utilization, launch queue   counters
//! ```

use super::lanes::{self, Edge, Intervals};
use super::proto::{ChildOrdering, CounterDescriptor, ProcessDescriptor, ThreadDescriptor, TrackDescriptor};
use super::FindingSpan;
use crate::export::idle::IdleGap;
use gapscope_collectors::trace::{CpuOpKind, GpuKind, MarkerKind, Trace};
use std::collections::BTreeMap;

/// Where a slice comes from: a row of one of the trace's tables, or a gap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Src {
    /// `cpu_ops` row.
    Op(u32),
    /// `runtime` row.
    Call(u32),
    /// `gpu` row.
    Gpu(u32),
    /// `markers` row (a GPU annotation).
    Marker(u32),
    /// Index into the idle gaps.
    Idle(u32),
    /// Index into the findings.
    Finding(u32),
}

/// Every slice to export, in one columnar list.
#[derive(Default)]
pub struct Items {
    /// Starts, ns since the origin.
    pub start: Vec<i64>,
    /// Ends.
    pub end: Vec<i64>,
    /// Sources.
    pub src: Vec<Src>,
}

impl Items {
    fn push(&mut self, start: i64, end: i64, src: Src) -> u32 {
        self.start.push(start);
        self.end.push(end.max(start));
        self.src.push(src);
        (self.src.len() - 1) as u32
    }
}

impl Intervals for Items {
    fn start(&self, i: u32) -> i64 {
        self.start[i as usize]
    }
    fn end(&self, i: u32) -> i64 {
        self.end[i as usize]
    }
}

/// Emission rank at equal timestamps across tracks: CPU first, so a launch
/// BEGIN precedes the kernel that terminates its flow (the sorter keeps file
/// order for equal timestamps).
pub const RANK_CPU: u8 = 0;
/// GPU work tracks.
pub const RANK_GPU: u8 = 1;
/// Idle and annotation tracks.
pub const RANK_DERIVED: u8 = 2;
/// Counter tracks.
pub const RANK_COUNTER: u8 = 3;

/// A track that carries slices.
pub struct SliceTrack {
    /// Its uuid.
    pub uuid: u64,
    /// Tie-break rank, `RANK_*`.
    pub rank: u8,
    /// Edges in emission order.
    pub edges: Vec<Edge>,
}

/// A counter track's uuid and samples (time, value).
pub struct CounterTrack {
    /// Its uuid.
    pub uuid: u64,
    /// Samples in time order.
    pub samples: Vec<(i64, f64)>,
}

/// The whole track tree.
#[derive(Default)]
pub struct Layout {
    /// Descriptors, parents before children.
    pub descriptors: Vec<TrackDescriptor>,
    /// Tracks with slices.
    pub slices: Vec<SliceTrack>,
    /// Counter tracks, filled by the caller via [`Layout::counter_track`].
    pub counters: Vec<CounterTrack>,
    next_uuid: u64,
    /// The rank's process group in a job's export.
    group_uuid: Option<u64>,
}

impl Layout {
    fn uuid(&mut self) -> u64 {
        self.next_uuid += 1;
        self.next_uuid
    }

    fn named(&mut self, name: String, parent: Option<u64>, rank: i32) -> TrackDescriptor {
        TrackDescriptor {
            uuid: Some(self.uuid()),
            name: Some(name),
            parent_uuid: parent,
            sibling_order_rank: Some(rank),
            ..Default::default()
        }
    }

    /// Declares device `d`'s group track (`GPU 0: NVIDIA H100`, its
    /// children in explicit order) and returns its uuid.
    fn gpu_group(&mut self, trace: &Trace, d: u32) -> u64 {
        let dev_name = (0..trace.devices.len())
            .find(|&i| trace.devices.id[i] == d)
            .map(|i| trace.strings.get(trace.devices.name[i]))
            .filter(|n| !n.is_empty());
        let title = match dev_name {
            Some(n) => format!("GPU {d}: {n}"),
            None => format!("GPU {d}"),
        };
        // Below a rank's threads when grouped.
        let order = if self.group_uuid.is_some() {
            1_000_000 + d as i32
        } else {
            0
        };
        let mut gpu_group = self.named(title, self.group_uuid, order);
        gpu_group.child_ordering = Some(ChildOrdering::Explicit as i32);
        let guuid = gpu_group.uuid.unwrap_or_default();
        self.descriptors.push(gpu_group);
        guuid
    }

    /// Adds the lanes of `order` (sorted items) as tracks: the first uses
    /// `first`, the others are named `"{base} (k)"` under `parent`.
    fn lanes(
        &mut self,
        items: &Items,
        order: &[u32],
        first: TrackDescriptor,
        base: &str,
        parent: Option<u64>,
        rank: u8,
    ) {
        for (k, lane) in lanes::assign(items, order).iter().enumerate() {
            let td = if k == 0 {
                first.clone()
            } else {
                let r = first.sibling_order_rank.unwrap_or(0);
                self.named(format!("{base} ({})", k + 1), parent, r)
            };
            self.slices.push(SliceTrack {
                uuid: td.uuid.unwrap_or_default(),
                rank,
                edges: lanes::edges(items, lane),
            });
            self.descriptors.push(td);
        }
    }

    /// Adds a counter track under `parent` and returns its index in
    /// `counters`.
    pub fn counter_track(
        &mut self,
        name: String,
        unit: &str,
        parent: u64,
        rank: i32,
        samples: Vec<(i64, f64)>,
    ) {
        let mut td = self.named(name, Some(parent), rank);
        td.counter = Some(CounterDescriptor {
            unit_name: Some(unit.to_string()),
        });
        self.counters.push(CounterTrack {
            uuid: td.uuid.unwrap_or_default(),
            samples,
        });
        self.descriptors.push(td);
    }
}

/// Outer kinds first at equal ranges, as the Trace nests them; runtime
/// calls innermost.
fn op_rank(k: CpuOpKind) -> u8 {
    match k {
        CpuOpKind::ProfilerStep => 0,
        CpuOpKind::UserAnnotation => 1,
        CpuOpKind::PythonFunction => 2,
        CpuOpKind::Other => 3,
        CpuOpKind::Operator => 4,
    }
}

fn sort_items(items: &Items, order: &mut [u32], rank: impl Fn(u32) -> u8) {
    order.sort_by_key(|&i| (items.start(i), std::cmp::Reverse(items.end(i)), rank(i)));
}

fn fits_i32(v: i64) -> bool {
    i32::try_from(v).is_ok()
}

/// One rank's place in a job's export: its tracks hang under one process
/// group named for the rank, with uuids above `uuid_base` (every rank's
/// tracks share the file).
#[derive(Clone, Debug)]
pub struct Group {
    /// Tracks of this rank get uuids above this.
    pub uuid_base: u64,
    /// The group's (synthetic) pid.
    pub pid: i32,
    /// The group's name (`rank 3: worker3.pt.trace.json`).
    pub title: String,
}

/// The trace's own tracks: its items and track tree, and the uuid of each
/// device's group track, by device. With a `group`, every track goes under
/// that one process group: threads as named tracks (`main (pid 4242)`), GPU
/// groups as its children. Needs the trace only, so the export lays it out
/// and writes it while the analysis runs.
pub fn build_own(trace: &Trace, group: Option<&Group>) -> (Items, Layout, BTreeMap<u32, u64>) {
    let mut items = Items::default();
    let mut layout = Layout {
        next_uuid: group.map_or(0, |g| g.uuid_base),
        ..Layout::default()
    };
    let group_uuid = group.map(|g| {
        let u = layout.uuid();
        layout.descriptors.push(TrackDescriptor {
            uuid: Some(u),
            process: Some(ProcessDescriptor {
                pid: Some(g.pid),
                process_name: Some(g.title.clone()),
            }),
            ..Default::default()
        });
        u
    });
    layout.group_uuid = group_uuid;

    // CPU: one process track per pid, one thread track (+ lanes) per thread.
    let mut per_thread: Vec<Vec<u32>> = vec![Vec::new(); trace.threads.len()];
    for i in 0..trace.cpu_ops.len() {
        let t = trace.cpu_ops.thread[i].0 as usize;
        per_thread[t].push(items.push(trace.cpu_ops.start[i], trace.cpu_ops.end[i], Src::Op(i as u32)));
    }
    for i in 0..trace.runtime.len() {
        let t = trace.runtime.thread[i].0 as usize;
        per_thread[t].push(items.push(trace.runtime.start[i], trace.runtime.end[i], Src::Call(i as u32)));
    }
    let mut process_uuid: BTreeMap<i64, u64> = BTreeMap::new();
    for (t, order) in per_thread.iter_mut().enumerate() {
        if order.is_empty() {
            continue;
        }
        sort_items(&items, order, |i| match items.src[i as usize] {
            Src::Op(o) => op_rank(trace.cpu_ops.kind[o as usize]),
            _ => 5,
        });
        let (pid, tid) = (trace.threads.pid[t], trace.threads.tid[t]);
        let name = trace.strings.get(trace.threads.name[t]);
        if let Some(gu) = group_uuid {
            // In a rank's group: named tracks that keep the real pid.
            let label = if name.is_empty() {
                format!("thread {tid} (pid {pid})")
            } else {
                format!("{name} (pid {pid})")
            };
            let first = layout.named(label.clone(), Some(gu), t as i32);
            layout.lanes(&items, order, first, &label, Some(gu), RANK_CPU);
            continue;
        }
        let puuid = match process_uuid.get(&pid) {
            Some(&u) => u,
            None => {
                let u = layout.uuid();
                // Pids that do not fit Perfetto's int32 (string pids mapped
                // to negatives still fit) become a named group instead.
                let td = TrackDescriptor {
                    uuid: Some(u),
                    process: fits_i32(pid).then_some(ProcessDescriptor {
                        pid: Some(pid as i32),
                        process_name: None,
                    }),
                    name: (!fits_i32(pid)).then(|| format!("process {pid}")),
                    ..Default::default()
                };
                layout.descriptors.push(td);
                process_uuid.insert(pid, u);
                u
            }
        };
        let label = if name.is_empty() {
            format!("thread {tid}")
        } else {
            name.to_string()
        };
        let uuid = layout.uuid();
        let first = if fits_i32(pid) && fits_i32(tid) {
            TrackDescriptor {
                uuid: Some(uuid),
                parent_uuid: Some(puuid),
                thread: Some(ThreadDescriptor {
                    pid: Some(pid as i32),
                    tid: Some(tid as i32),
                    thread_name: (!name.is_empty()).then(|| name.to_string()),
                }),
                ..Default::default()
            }
        } else {
            TrackDescriptor {
                uuid: Some(uuid),
                parent_uuid: Some(puuid),
                name: Some(label.clone()),
                ..Default::default()
            }
        };
        layout.lanes(&items, order, first, &label, Some(puuid), RANK_CPU);
    }

    // GPU: a group per device; per stream, work and sync records apart.
    let mut per_stream: BTreeMap<(u32, i64, bool), Vec<u32>> = BTreeMap::new();
    for i in 0..trace.gpu.len() {
        let key = (
            trace.gpu.device[i],
            trace.gpu.stream[i],
            trace.gpu.kind[i] == GpuKind::Sync,
        );
        let it = items.push(trace.gpu.start[i], trace.gpu.end[i], Src::Gpu(i as u32));
        per_stream.entry(key).or_default().push(it);
    }
    let mut per_device_ann: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for i in 0..trace.markers.len() {
        if let (MarkerKind::GpuAnnotation, Some(device)) = (trace.markers.kind[i], trace.markers.device[i]) {
            let it = items.push(
                trace.markers.start[i],
                trace.markers.end[i],
                Src::Marker(i as u32),
            );
            per_device_ann.entry(device).or_default().push(it);
        }
    }
    let mut devices: Vec<u32> = per_stream.keys().map(|k| k.0).collect();
    devices.extend(per_device_ann.keys());
    devices.sort_unstable();
    devices.dedup();
    let mut groups = BTreeMap::new();
    for &d in &devices {
        let guuid = layout.gpu_group(trace, d);
        groups.insert(d, guuid);
        let mut rank = 0;
        for (&(_, stream, sync), order) in per_stream.range_mut((d, i64::MIN, false)..=(d, i64::MAX, true)) {
            sort_items(&items, order, |_| 0);
            let base = if sync {
                format!("stream {stream} sync")
            } else {
                format!("stream {stream}")
            };
            rank += 1;
            let first = layout.named(base.clone(), Some(guuid), rank);
            layout.lanes(&items, order, first, &base, Some(guuid), RANK_GPU);
        }
        if let Some(order) = per_device_ann.get_mut(&d) {
            sort_items(&items, order, |_| 0);
            let name = "GPU annotations";
            let first = layout.named(name.to_string(), Some(guuid), 10_000);
            layout.lanes(&items, order, first, name, Some(guuid), RANK_DERIVED);
        }
    }
    (items, layout, groups)
}

/// The analysis' tracks under each device's group: idle gaps and findings
/// (a job's waits too). Their uuids follow `own`'s; a device without a
/// group in `groups` (no GPU rows or annotations of its own) gets one here.
/// The returned layout holds only the new tracks' descriptors.
pub fn build_derived(
    trace: &Trace,
    own: &Layout,
    groups: &mut BTreeMap<u32, u64>,
    idle: &[IdleGap<'_>],
    findings: &[FindingSpan],
) -> (Items, Layout) {
    let mut items = Items::default();
    let mut layout = Layout {
        next_uuid: own.next_uuid,
        group_uuid: own.group_uuid,
        ..Layout::default()
    };
    let mut per_device_idle: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for (k, g) in idle.iter().enumerate() {
        let it = items.push(g.start(), g.end(), Src::Idle(k as u32));
        per_device_idle.entry(g.device).or_default().push(it);
    }
    let mut per_device_finding: BTreeMap<(u32, &str), Vec<u32>> = BTreeMap::new();
    for (k, f) in findings.iter().enumerate() {
        let it = items.push(f.start, f.end, Src::Finding(k as u32));
        per_device_finding
            .entry((f.device, f.track))
            .or_default()
            .push(it);
    }
    let mut devices: Vec<u32> = per_device_idle.keys().copied().collect();
    devices.extend(per_device_finding.keys().map(|k| k.0));
    devices.sort_unstable();
    devices.dedup();
    for &d in &devices {
        let guuid = *groups.entry(d).or_insert_with(|| layout.gpu_group(trace, d));
        if let Some(order) = per_device_idle.get_mut(&d) {
            sort_items(&items, order, |_| 0);
            let name = "GPU idle";
            let first = layout.named(name.to_string(), Some(guuid), 10_001);
            layout.lanes(&items, order, first, name, Some(guuid), RANK_DERIVED);
        }
        // Findings, then any other span tracks (a job's waits), by name.
        for (k, (&(_, name), order)) in per_device_finding.range_mut((d, "")..(d + 1, "")).enumerate() {
            sort_items(&items, order, |_| 0);
            let first = layout.named(name.to_string(), Some(guuid), 10_002 + k as i32);
            layout.lanes(&items, order, first, name, Some(guuid), RANK_DERIVED);
        }
    }
    (items, layout)
}
