//! Counter series of a device, as timelines draw them: busy percentage in
//! fixed bins, and the launch queue (work launched but not started).
//! Samples are step functions (a value holds until the next sample), so
//! repeats are dropped.
//!
//! ```text
//! launch calls   [L1]   [L2]
//! gpu                         [k1.....][k2...]
//! queue          1      2     1        0        a sample at each change
//! ```

use crate::intervals::Span;
use gapscope_collectors::trace::Trace;

/// Busy percentage of each `bin`-ns bin from the bin holding the first busy
/// span to the end of the last, with a closing 0 sample. `busy` is sorted and
/// disjoint.
pub fn utilization(busy: &[Span], bin: i64) -> Vec<(i64, f64)> {
    let (Some(first), Some(last)) = (busy.first(), busy.last()) else {
        return Vec::new();
    };
    let start = first.0.div_euclid(bin) * bin;
    let mut out: Vec<(i64, f64)> = Vec::new();
    let mut k = 0; // first span that may still overlap the current bin
    let mut b = start;
    while b < last.1 {
        let e = b + bin;
        let mut ns = 0;
        while k < busy.len() && busy[k].1 <= b {
            k += 1;
        }
        let mut j = k;
        while j < busy.len() && busy[j].0 < e {
            ns += busy[j].1.min(e) - busy[j].0.max(b);
            j += 1;
        }
        push_changed(&mut out, b, 100.0 * ns as f64 / bin as f64);
        b = e;
    }
    push_changed(&mut out, b, 0.0);
    out
}

/// Per device: how many GPU items were launched (the launching call has
/// started) but have not started on the GPU. Work that starts before its
/// launch call (clock skew) was never queued and is skipped.
pub fn launch_queue(trace: &Trace, device: u32) -> Vec<(i64, f64)> {
    let mut deltas: Vec<(i64, i8)> = Vec::new();
    for i in 0..trace.gpu.len() {
        let Some(call) = trace.links.gpu_launch[i] else {
            continue;
        };
        if trace.gpu.device[i] != device || !trace.gpu.is_busy(i) {
            continue;
        }
        let launched = trace.runtime.start[call.index()];
        if trace.gpu.start[i] >= launched {
            deltas.push((launched, 1));
            deltas.push((trace.gpu.start[i], -1));
        }
    }
    // Starts before launches at one time: the queue never shows a spurious peak.
    deltas.sort_unstable();
    let mut out = Vec::new();
    let mut q: i64 = 0;
    for (k, &(t, d)) in deltas.iter().enumerate() {
        q += d as i64;
        if deltas.get(k + 1).is_none_or(|n| n.0 != t) {
            push_changed(&mut out, t, q as f64);
        }
    }
    out
}

fn push_changed(out: &mut Vec<(i64, f64)>, t: i64, v: f64) {
    if out.last().is_none_or(|&(_, last)| last != v) {
        out.push((t, v));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utilization_bins_and_drops_repeats() {
        // bins of 10: [0,10) busy 5, [10,20) busy 10, [20,30) busy 10, [30,40) busy 0? no: ends at 30.
        let u = utilization(&[(5, 10), (10, 30)], 10);
        // (5,10) and (10,30) are touching but given as separate spans.
        assert_eq!(u, vec![(0, 50.0), (10, 100.0), (30, 0.0)]);
    }
}
