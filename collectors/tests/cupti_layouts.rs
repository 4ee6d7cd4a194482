//! Golden layout test: every record layout the decoder uses, for CUPTI 12.9
//! and 13.0, against `offsetof`/`sizeof` printed from the CUPTI headers of the
//! `nvidia-cuda-cupti-cu12==12.9.79` and `nvidia-cuda-cupti==13.0.85` wheels
//! (the program and the command are in docs/cupti.md). The two tables below
//! are that program's output, pasted unchanged.

use gapscope_collectors::cupti::decode::{kind, Family, Layouts, UnsupportedVersion, CUPTI_12_9, CUPTI_13_0};
use std::collections::HashMap;

const HEADERS_12_9: &str = r#"
CUpti_ActivityAPI size 40
  kind                     0 4
  cbid                     4 4
  start                    8 8
  end                     16 8
  processId               24 4
  threadId                28 4
  correlationId           32 4
  returnValue             36 4
CUpti_ActivityKernel9 size 208
  kind                     0 4
  cacheConfig              4 1
  sharedMemoryConfig       5 1
  registersPerThread       6 2
  partitionedGlobalCacheRequested   8 4
  partitionedGlobalCacheExecuted  12 4
  start                   16 8
  end                     24 8
  completed               32 8
  deviceId                40 4
  contextId               44 4
  streamId                48 4
  gridX                   52 4
  gridY                   56 4
  gridZ                   60 4
  blockX                  64 4
  blockY                  68 4
  blockZ                  72 4
  staticSharedMemory      76 4
  dynamicSharedMemory     80 4
  localMemoryPerThread    84 4
  localMemoryTotal        88 4
  correlationId           92 4
  gridId                  96 8
  name                   104 8
  reserved0              112 8
  queued                 120 8
  submitted              128 8
  launchType             136 1
  isSharedMemoryCarveoutRequested 137 1
  sharedMemoryCarveoutRequested 138 1
  padding                139 1
  sharedMemoryExecuted   140 4
  graphNodeId            144 8
  shmemLimitConfig       152 4
  graphId                156 4
  pAccessPolicyWindow    160 8
  channelID              168 4
  channelType            172 4
  clusterX               176 4
  clusterY               180 4
  clusterZ               184 4
  clusterSchedulingPolicy 188 4
  localMemoryTotal_v2    192 8
  maxPotentialClusterSize 200 4
  maxActiveClusters      204 4
CUpti_ActivityMemcpy6 size 96
  kind                     0 4
  copyKind                 4 1
  srcKind                  5 1
  dstKind                  6 1
  flags                    7 1
  bytes                    8 8
  start                   16 8
  end                     24 8
  deviceId                32 4
  contextId               36 4
  streamId                40 4
  correlationId           44 4
  runtimeCorrelationId    48 4
  reserved0               56 8
  graphNodeId             64 8
  graphId                 72 4
  channelID               76 4
  channelType             80 4
  copyCount               88 8
CUpti_ActivityMemcpyPtoP4 size 96
  kind                     0 4
  copyKind                 4 1
  srcKind                  5 1
  dstKind                  6 1
  flags                    7 1
  bytes                    8 8
  start                   16 8
  end                     24 8
  deviceId                32 4
  contextId               36 4
  streamId                40 4
  srcDeviceId             44 4
  srcContextId            48 4
  dstDeviceId             52 4
  dstContextId            56 4
  correlationId           60 4
  reserved0               64 8
  graphNodeId             72 8
  graphId                 80 4
  channelID               84 4
  channelType             88 4
CUpti_ActivityMemset4 size 88
  kind                     0 4
  value                    4 4
  bytes                    8 8
  start                   16 8
  end                     24 8
  deviceId                32 4
  contextId               36 4
  streamId                40 4
  correlationId           44 4
  flags                   48 2
  memoryKind              50 2
  reserved0               56 8
  graphNodeId             64 8
  graphId                 72 4
  channelID               76 4
  channelType             80 4
CUpti_ActivitySynchronization2 size 56
  kind                     0 4
  type                     4 4
  start                    8 8
  end                     16 8
  correlationId           24 4
  contextId               28 4
  streamId                32 4
  cudaEventId             36 4
  cudaEventSyncId         40 8
  returnValue             48 4
CUpti_ActivityExternalCorrelation size 24
  kind                     0 4
  externalKind             4 4
  externalId               8 8
  correlationId           16 4
  reserved                20 4
CUpti_ActivityMarker2 size 56
  kind                     0 4
  flags                    4 4
  timestamp                8 8
  id                      16 4
  objectKind              20 4
  objectId                24 12
  objectId.pt.processId   24 4
  objectId.pt.threadId    28 4
  objectId.dcs.deviceId   24 4
  objectId.dcs.contextId  28 4
  objectId.dcs.streamId   32 4
  name                    40 8
  domain                  48 8
CUpti_ActivityOverhead3 size 56
  kind                     0 4
  overheadKind             4 4
  objectKind               8 4
  objectId                12 12
  objectId.pt.processId   12 4
  objectId.pt.threadId    16 4
  start                   24 8
  end                     32 8
  correlationId           40 4
  reserved0               44 4
  overheadData            48 8
"#;

const HEADERS_13_0: &str = r#"
CUpti_ActivityAPI size 40
  kind                     0 4
  cbid                     4 4
  start                    8 8
  end                     16 8
  processId               24 4
  threadId                28 4
  correlationId           32 4
  returnValue             36 4
CUpti_ActivityKernel10 size 216
  kind                     0 4
  cacheConfig              4 1
  sharedMemoryConfig       5 1
  registersPerThread       6 2
  partitionedGlobalCacheRequested   8 4
  partitionedGlobalCacheExecuted  12 4
  start                   16 8
  end                     24 8
  completed               32 8
  deviceId                40 4
  contextId               44 4
  streamId                48 4
  gridX                   52 4
  gridY                   56 4
  gridZ                   60 4
  blockX                  64 4
  blockY                  68 4
  blockZ                  72 4
  staticSharedMemory      76 4
  dynamicSharedMemory     80 4
  localMemoryPerThread    84 4
  localMemoryTotal        88 4
  correlationId           92 4
  gridId                  96 8
  name                   104 8
  reserved0              112 8
  queued                 120 8
  submitted              128 8
  launchType             136 1
  isSharedMemoryCarveoutRequested 137 1
  sharedMemoryCarveoutRequested 138 1
  padding                139 1
  sharedMemoryExecuted   140 4
  graphNodeId            144 8
  shmemLimitConfig       152 4
  graphId                156 4
  pAccessPolicyWindow    160 8
  channelID              168 4
  channelType            172 4
  clusterX               176 4
  clusterY               180 4
  clusterZ               184 4
  clusterSchedulingPolicy 188 4
  localMemoryTotal_v2    192 8
  maxPotentialClusterSize 200 4
  maxActiveClusters      204 4
  isDeviceLaunched       208 1
CUpti_ActivityMemcpy6 size 96
  kind                     0 4
  copyKind                 4 1
  srcKind                  5 1
  dstKind                  6 1
  flags                    7 1
  bytes                    8 8
  start                   16 8
  end                     24 8
  deviceId                32 4
  contextId               36 4
  streamId                40 4
  correlationId           44 4
  runtimeCorrelationId    48 4
  reserved0               56 8
  graphNodeId             64 8
  graphId                 72 4
  channelID               76 4
  channelType             80 4
  isDeviceLaunched        84 1
  copyCount               88 8
CUpti_ActivityMemcpyPtoP4 size 96
  kind                     0 4
  copyKind                 4 1
  srcKind                  5 1
  dstKind                  6 1
  flags                    7 1
  bytes                    8 8
  start                   16 8
  end                     24 8
  deviceId                32 4
  contextId               36 4
  streamId                40 4
  srcDeviceId             44 4
  srcContextId            48 4
  dstDeviceId             52 4
  dstContextId            56 4
  correlationId           60 4
  reserved0               64 8
  graphNodeId             72 8
  graphId                 80 4
  channelID               84 4
  channelType             88 4
CUpti_ActivityMemset4 size 88
  kind                     0 4
  value                    4 4
  bytes                    8 8
  start                   16 8
  end                     24 8
  deviceId                32 4
  contextId               36 4
  streamId                40 4
  correlationId           44 4
  flags                   48 2
  memoryKind              50 2
  reserved0               56 8
  graphNodeId             64 8
  graphId                 72 4
  channelID               76 4
  channelType             80 4
  isDeviceLaunched        84 1
CUpti_ActivitySynchronization2 size 56
  kind                     0 4
  type                     4 4
  start                    8 8
  end                     16 8
  correlationId           24 4
  contextId               28 4
  streamId                32 4
  cudaEventId             36 4
  cudaEventSyncId         40 8
  returnValue             48 4
CUpti_ActivityExternalCorrelation size 24
  kind                     0 4
  externalKind             4 4
  externalId               8 8
  correlationId           16 4
  reserved                20 4
CUpti_ActivityMarker2 size 56
  kind                     0 4
  flags                    4 4
  timestamp                8 8
  id                      16 4
  objectKind              20 4
  objectId                24 12
  objectId.pt.processId   24 4
  objectId.pt.threadId    28 4
  objectId.dcs.deviceId   24 4
  objectId.dcs.contextId  28 4
  objectId.dcs.streamId   32 4
  name                    40 8
  domain                  48 8
CUpti_ActivityOverhead3 size 56
  kind                     0 4
  overheadKind             4 4
  objectKind               8 4
  objectId                12 12
  objectId.pt.processId   12 4
  objectId.pt.threadId    16 4
  start                   24 8
  end                     32 8
  correlationId           40 4
  reserved0               44 4
  overheadData            48 8
"#;

/// struct name → (size, field → (offset, size)).
type Header = HashMap<String, (usize, HashMap<String, (usize, usize)>)>;

fn parse(text: &str) -> Header {
    let mut out: Header = HashMap::new();
    let mut current = String::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let w: Vec<&str> = line.split_whitespace().collect();
        if !line.starts_with(' ') {
            assert_eq!(w[1], "size", "{line}");
            current = w[0].to_string();
            out.insert(current.clone(), (w[2].parse().unwrap(), HashMap::new()));
        } else {
            let (off, size) = (w[1].parse().unwrap(), w[2].parse().unwrap());
            out.get_mut(&current)
                .unwrap()
                .1
                .insert(w[0].to_string(), (off, size));
        }
    }
    out
}

/// Checks one struct: its size, then each `(header field, our offset, width)`.
fn check(h: &Header, name: &str, size: usize, fields: &[(&str, usize, usize)]) {
    let (hsize, hfields) = h
        .get(name)
        .unwrap_or_else(|| panic!("{name} not in the header table"));
    assert_eq!(size, *hsize, "sizeof({name})");
    for &(f, off, width) in fields {
        let (hoff, hwidth) = hfields
            .get(f)
            .unwrap_or_else(|| panic!("{name}.{f} not in the header table"));
        assert_eq!((off, width), (*hoff, *hwidth), "offsetof/sizeof {name}.{f}");
    }
}

fn check_family(h: &Header, l: &Layouts) {
    let k = &l.kernel;
    let mut kf = vec![
        ("registersPerThread", k.registers_per_thread, 2),
        ("start", k.start, 8),
        ("end", k.end, 8),
        ("completed", k.completed, 8),
        ("deviceId", k.device_id, 4),
        ("contextId", k.context_id, 4),
        ("streamId", k.stream_id, 4),
        ("gridX", k.grid_x, 4),
        ("gridY", k.grid_x + 4, 4),
        ("gridZ", k.grid_x + 8, 4),
        ("blockX", k.block_x, 4),
        ("blockY", k.block_x + 4, 4),
        ("blockZ", k.block_x + 8, 4),
        ("staticSharedMemory", k.static_shared_memory, 4),
        ("dynamicSharedMemory", k.dynamic_shared_memory, 4),
        ("correlationId", k.correlation_id, 4),
        ("gridId", k.grid_id, 8),
        ("name", k.name, 8),
        ("graphNodeId", k.graph_node_id, 8),
        ("graphId", k.graph_id, 4),
        ("channelID", k.channel_id, 4),
        ("channelType", k.channel_type, 4),
    ];
    if let Some(o) = k.is_device_launched {
        kf.push(("isDeviceLaunched", o, 1));
    }
    check(h, k.struct_name, k.size, &kf);

    let m = &l.memcpy;
    let mut mf = vec![
        ("copyKind", m.copy_kind, 1),
        ("srcKind", m.src_kind, 1),
        ("dstKind", m.dst_kind, 1),
        ("flags", m.flags, 1),
        ("bytes", m.bytes, 8),
        ("start", m.start, 8),
        ("end", m.end, 8),
        ("deviceId", m.device_id, 4),
        ("contextId", m.context_id, 4),
        ("streamId", m.stream_id, 4),
        ("correlationId", m.correlation_id, 4),
        ("graphNodeId", m.graph_node_id, 8),
        ("graphId", m.graph_id, 4),
        ("copyCount", m.copy_count, 8),
    ];
    if let Some(o) = m.is_device_launched {
        mf.push(("isDeviceLaunched", o, 1));
    }
    check(h, m.struct_name, m.size, &mf);

    let p = &l.peer;
    check(
        h,
        p.struct_name,
        p.size,
        &[
            ("copyKind", p.copy_kind, 1),
            ("srcKind", p.src_kind, 1),
            ("dstKind", p.dst_kind, 1),
            ("flags", p.flags, 1),
            ("bytes", p.bytes, 8),
            ("start", p.start, 8),
            ("end", p.end, 8),
            ("deviceId", p.device_id, 4),
            ("contextId", p.context_id, 4),
            ("streamId", p.stream_id, 4),
            ("srcDeviceId", p.src_device_id, 4),
            ("dstDeviceId", p.dst_device_id, 4),
            ("correlationId", p.correlation_id, 4),
            ("graphNodeId", p.graph_node_id, 8),
            ("graphId", p.graph_id, 4),
        ],
    );

    let z = &l.memset;
    let mut zf = vec![
        ("value", z.value, 4),
        ("bytes", z.bytes, 8),
        ("start", z.start, 8),
        ("end", z.end, 8),
        ("deviceId", z.device_id, 4),
        ("contextId", z.context_id, 4),
        ("streamId", z.stream_id, 4),
        ("correlationId", z.correlation_id, 4),
        ("flags", z.flags, 2),
        ("memoryKind", z.memory_kind, 2),
        ("graphNodeId", z.graph_node_id, 8),
        ("graphId", z.graph_id, 4),
    ];
    if let Some(o) = z.is_device_launched {
        zf.push(("isDeviceLaunched", o, 1));
    }
    check(h, z.struct_name, z.size, &zf);

    let y = &l.sync;
    check(
        h,
        y.struct_name,
        y.size,
        &[
            ("type", y.sync_type, 4),
            ("start", y.start, 8),
            ("end", y.end, 8),
            ("correlationId", y.correlation_id, 4),
            ("contextId", y.context_id, 4),
            ("streamId", y.stream_id, 4),
            ("cudaEventId", y.cuda_event_id, 4),
            ("cudaEventSyncId", y.cuda_event_sync_id, 8),
            ("returnValue", y.return_value, 4),
        ],
    );

    let a = &l.api;
    check(
        h,
        a.struct_name,
        a.size,
        &[
            ("cbid", a.cbid, 4),
            ("start", a.start, 8),
            ("end", a.end, 8),
            ("processId", a.process_id, 4),
            ("threadId", a.thread_id, 4),
            ("correlationId", a.correlation_id, 4),
            ("returnValue", a.return_value, 4),
        ],
    );

    let e = &l.external;
    check(
        h,
        e.struct_name,
        e.size,
        &[
            ("externalKind", e.external_kind, 4),
            ("externalId", e.external_id, 8),
            ("correlationId", e.correlation_id, 4),
        ],
    );

    let r = &l.marker;
    check(
        h,
        r.struct_name,
        r.size,
        &[
            ("flags", r.flags, 4),
            ("timestamp", r.timestamp, 8),
            ("id", r.id, 4),
            ("objectKind", r.object_kind, 4),
            ("objectId", r.object_id, 12),
            ("objectId.pt.processId", r.object_id, 4),
            ("objectId.pt.threadId", r.object_id + 4, 4),
            ("objectId.dcs.streamId", r.object_id + 8, 4),
            ("name", r.name, 8),
            ("domain", r.domain, 8),
        ],
    );

    let o = &l.overhead;
    check(
        h,
        o.struct_name,
        o.size,
        &[
            ("overheadKind", o.overhead_kind, 4),
            ("objectKind", o.object_kind, 4),
            ("objectId", o.object_id, 12),
            ("objectId.pt.processId", o.object_id, 4),
            ("objectId.pt.threadId", o.object_id + 4, 4),
            ("start", o.start, 8),
            ("end", o.end, 8),
            ("correlationId", o.correlation_id, 4),
            ("overheadData", o.overhead_data, 8),
        ],
    );

    // Every record starts with its 4-byte kind.
    for (_, (_, fields)) in h.iter() {
        assert_eq!(fields["kind"], (0, 4));
    }
}

#[test]
fn cupti_12_9_layouts_match_its_headers() {
    let h = parse(HEADERS_12_9);
    assert_eq!(CUPTI_12_9.family, Family::Cupti12_9);
    check_family(&h, &CUPTI_12_9);
    assert_eq!(h.len(), 9, "every struct of the table is checked");
}

#[test]
fn cupti_13_0_layouts_match_its_headers() {
    let h = parse(HEADERS_13_0);
    assert_eq!(CUPTI_13_0.family, Family::Cupti13_0);
    check_family(&h, &CUPTI_13_0);
    assert_eq!(h.len(), 9);
}

/// Record sizes by kind as `cuptiActivityGetNextRecord` of each library
/// steps over them (measured; the oracle test re-measures them).
#[test]
fn record_sizes_per_version() {
    let common = [
        (kind::MEMCPY, 96),
        (kind::MEMSET, 88),
        (kind::DRIVER, 40),
        (kind::RUNTIME, 40),
        (kind::INTERNAL_LAUNCH_API, 40),
        (kind::CONTEXT, 32),
        (kind::NAME, 32),
        (kind::MARKER, 56),
        (kind::OVERHEAD, 56),
        (kind::MEMCPY2, 96),
        (kind::CUDA_EVENT, 56),
        (kind::STREAM, 24),
        (kind::SYNCHRONIZATION, 56),
        (kind::EXTERNAL_CORRELATION, 24),
        (kind::GRAPH_TRACE, 56),
    ];
    for (k, s) in common {
        assert_eq!(CUPTI_12_9.record_size(k), Some(s), "12.9 kind {k}");
        assert_eq!(CUPTI_13_0.record_size(k), Some(s), "13.0 kind {k}");
    }
    for k in [kind::KERNEL, kind::CONCURRENT_KERNEL] {
        assert_eq!(CUPTI_12_9.record_size(k), Some(208));
        assert_eq!(CUPTI_13_0.record_size(k), Some(216));
    }
    assert_eq!(CUPTI_12_9.record_size(kind::MARKER_DATA), Some(32));
    assert_eq!(CUPTI_13_0.record_size(kind::MARKER_DATA), Some(40));
    for k in [0, 6, 7, 56, 9999] {
        assert_eq!(CUPTI_13_0.record_size(k), None, "kind {k}");
    }
}

#[test]
fn layouts_are_chosen_from_the_runtime_api_version() {
    assert_eq!(Layouts::for_api_version(28).unwrap(), CUPTI_12_9);
    assert_eq!(Layouts::for_api_version(130001).unwrap(), CUPTI_13_0);
    for v in [0, 26, 27, 29, 130101, 130202, 130401] {
        assert_eq!(Layouts::for_api_version(v), Err(UnsupportedVersion(v)));
    }
    let msg = UnsupportedVersion(130101).to_string();
    assert!(msg.contains("130101") && msg.contains("13.0"), "{msg}");
}
