//! Several processes' traces → one.

use crate::trace::*;

/// See [`super::merge`].
pub fn merge(parts: Vec<Trace>, source: &str) -> Trace {
    let rows = |t: &Trace| t.gpu.len() + t.runtime.len() + t.cpu_ops.len() + t.markers.len();
    // An empty part's origin means nothing (an empty trace's origin is 0):
    // it must not pull the merged origin back to the epoch.
    let origin = parts
        .iter()
        .filter(|p| rows(p) > 0)
        .map(|p| p.meta.origin_ns)
        .min()
        .or_else(|| parts.first().map(|p| p.meta.origin_ns))
        .unwrap_or(0);

    let mut b = TraceBuilder::new();
    // Rows are placed relative to `origin` below.
    b.set_origin(0);
    let mut named_devices: FxHashMap<u32, bool> = FxHashMap::default();
    // Correlation and external ids are per process: each part's non-zero
    // ids are shifted past the largest id of the parts before it, so part 0
    // keeps its own and no two parts share one.
    let (mut corr_base, mut ext_base) = (0u64, 0u64);
    for part in &parts {
        let shift = part.meta.origin_ns.saturating_sub(origin);
        let at = |t: Ns| t.saturating_add(shift);
        let smap: Vec<StrId> = part.strings.iter().map(|(_, s)| b.intern(s)).collect();
        let s = |id: StrId| smap[id.0 as usize];
        let tmap: Vec<ThreadId> = (0..part.threads.len())
            .map(|i| {
                let t = b.thread(part.threads.pid[i], part.threads.tid[i]);
                if part.threads.name[i] != Strings::EMPTY {
                    b.set_thread_name(t, part.strings.get(part.threads.name[i]));
                }
                t
            })
            .collect();
        let t = |id: ThreadId| tmap[id.0 as usize];
        for i in 0..part.devices.len() {
            let mut d = part.devices.row(i);
            d.name = s(d.name);
            let named = d.name != Strings::EMPTY;
            // The same GPU seen by two processes: keep the description that
            // has a name.
            if named_devices.get(&d.id).is_none_or(|&had| named || !had) {
                named_devices.insert(d.id, named);
                b.device(d);
            }
        }
        let (cb, eb) = (corr_base, ext_base);
        let corr = |c: u64| if c == 0 { 0 } else { c.saturating_add(cb) };
        let ext = |e: u64| if e == 0 { 0 } else { e.saturating_add(eb) };
        let max = |base: &mut u64, v: u64| *base = (*base).max(v);
        let cmap: Vec<CollectiveRow> = (0..part.collectives.len())
            .map(|i| {
                let mut c = part.collectives.row(i);
                c.name = s(c.name);
                c.group = s(c.group);
                c.group_desc = s(c.group_desc);
                c.group_ranks = s(c.group_ranks);
                b.push_collective(c)
            })
            .collect();
        let coll = |c: Option<CollectiveRow>| c.map(|c| cmap[c.index()]);
        for i in 0..part.gpu.len() {
            let mut r = part.gpu.row(i);
            r.collective = coll(r.collective);
            r.start = at(r.start);
            r.end = at(r.end);
            r.name = s(r.name);
            r.correlation = corr(r.correlation);
            r.external_id = ext(r.external_id);
            max(&mut corr_base, r.correlation);
            max(&mut ext_base, r.external_id);
            b.push_gpu(r);
        }
        for i in 0..part.runtime.len() {
            let mut r = part.runtime.row(i);
            r.start = at(r.start);
            r.end = at(r.end);
            r.name = s(r.name);
            r.thread = t(r.thread);
            r.correlation = corr(r.correlation);
            r.external_id = ext(r.external_id);
            max(&mut corr_base, r.correlation);
            max(&mut ext_base, r.external_id);
            b.push_runtime(r);
        }
        for i in 0..part.cpu_ops.len() {
            let mut r = part.cpu_ops.row(i);
            r.collective = coll(r.collective);
            r.start = at(r.start);
            r.end = at(r.end);
            r.name = s(r.name);
            r.shapes = s(r.shapes);
            r.source = s(r.source);
            r.thread = t(r.thread);
            r.external_id = ext(r.external_id);
            max(&mut ext_base, r.external_id);
            b.push_cpu_op(r);
        }
        for i in 0..part.markers.len() {
            let mut r = part.markers.row(i);
            r.start = at(r.start);
            r.end = at(r.end);
            r.name = s(r.name);
            r.thread = r.thread.map(t);
            b.push_marker(r);
        }
        let mut d = part.diagnostics.clone();
        // Recounted by `finish` over the merged rows.
        for reason in Diagnostics::RECOUNTED {
            d.counts.remove(*reason);
        }
        b.diagnostics.absorb(d);
    }
    let agreed = |f: fn(&Trace) -> Option<i64>| {
        let mut v = parts.iter().filter_map(f);
        let first = v.next()?;
        v.all(|x| x == first).then_some(first)
    };
    let format = match parts.first() {
        Some(p) if parts.iter().all(|q| q.meta.format == p.meta.format) => p.meta.format.clone(),
        _ => "merged".to_string(),
    };
    let meta = TraceMeta {
        origin_ns: origin,
        source: source.to_string(),
        format,
        rank: agreed(|t| t.meta.rank),
        world_size: agreed(|t| t.meta.world_size),
    };
    let mut trace = b.finish();
    trace.meta = meta;
    trace
}
