//! Counter series of a device, as timelines draw them: busy percentage in
//! fixed bins, and the launch queue (work launched but not started).
//! Samples are step functions (a value holds until the next sample), so
//! repeats are dropped. [`window_counters`] bins both over the analysed
//! window into the compact [`Counters`] of the JSON (docs/analysis.md,
//! "Counters").
//!
//! ```text
//! launch calls   [L1]   [L2]
//! gpu                         [k1.....][k2...]
//! queue          1      2     1        0        a sample at each change
//! ```

use crate::intervals::Span;
use gapscope_collectors::trace::{Ns, Trace};
use serde::{Deserialize, Serialize};

/// The narrowest bin [`window_counters`] uses: 1 ms, as the Perfetto
/// export's utilization counter.
pub const MIN_BIN_NS: Ns = 1_000_000;

/// At most this many bins over a window: [`counter_bin`] widens the bin
/// beyond [`MIN_BIN_NS`] to keep the JSON small on long traces.
pub const MAX_BINS: i64 = 2_000;

/// A device's counters over the analysed window, in fixed bins: the
/// utilization and the launch queue, plus the launch queue's whole-window
/// summary. Bin `i` is `[start_ns + i·bin_ns, start_ns + (i+1)·bin_ns)`,
/// the last one cut at the window's end; each bin's numbers are over the
/// part of it inside the window.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Counters {
    /// Start of the first bin: the window's start, ns since the origin.
    pub start_ns: Ns,
    /// Bin length, ns ([`counter_bin`]).
    pub bin_ns: Ns,
    /// Per bin: busy time (kernels, copies, memsets) over the bin, percent
    /// (0 to 100).
    pub utilization_pct: Vec<f64>,
    /// Per bin: the launch queue's time-weighted mean.
    pub launch_queue_mean: Vec<f64>,
    /// Per bin: the launch queue's largest value.
    pub launch_queue_max: Vec<u64>,
    /// The launch queue's time-weighted mean over the whole window.
    pub launch_queue_window_mean: f64,
    /// The launch queue's largest value in the window.
    pub launch_queue_window_max: u64,
}

/// The bin for a window of `window_ns`: [`MIN_BIN_NS`], widened to the
/// smallest 1, 2 or 5 × 10ⁿ ms that makes at most [`MAX_BINS`] bins.
pub fn counter_bin(window_ns: Ns) -> Ns {
    let mut decade = MIN_BIN_NS;
    loop {
        for m in [1, 2, 5] {
            let bin = decade * m;
            if bins_of(window_ns, bin) <= MAX_BINS {
                return bin;
            }
        }
        decade *= 10;
    }
}

/// How many `bin`-ns bins cover `len` ns (0 for an empty length).
/// Without overflow: a window can span nearly all of `Ns` (a trace with
/// one stray far-off timestamp).
fn bins_of(len: Ns, bin: Ns) -> i64 {
    if len > 0 {
        len / bin + i64::from(len % bin != 0)
    } else {
        0
    }
}

/// Bins `busy` (sorted, disjoint spans) and `queue` (a step series as
/// [`launch_queue`] gives it, read once in time order: a big trace's is a
/// million steps, not kept) over `window` in bins of `bin` ns from the
/// window's start. One pass over each, plus one step per bin: O(spans +
/// samples + bins). An empty window gives no bins and zero summaries.
pub fn window_counters(
    busy: &[Span],
    queue: impl IntoIterator<Item = (Ns, f64)>,
    window: Span,
    bin: Ns,
) -> Counters {
    let (ws, we) = window;
    let bin = bin.max(1);
    let bins = bins_of(we.saturating_sub(ws), bin) as usize;
    let mut c = Counters {
        start_ns: ws,
        bin_ns: bin,
        utilization_pct: Vec::with_capacity(bins),
        launch_queue_mean: Vec::with_capacity(bins),
        launch_queue_max: Vec::with_capacity(bins),
        ..Default::default()
    };
    let mut k = busy.partition_point(|s| s.1 <= ws);
    // The queue's value before the bin; the next sample is its head.
    let mut queue = queue.into_iter().peekable();
    let mut value = 0;
    while let Some((_, v)) = queue.next_if(|s| s.0 < ws) {
        value = v as u64;
    }
    let mut total: i128 = 0;
    for i in 0..bins {
        // Bin `i` starts inside the window (`i` < bins), so `b` fits; its
        // end may pass `Ns::MAX` before it is cut at the window's end.
        let b = ws + i as Ns * bin;
        let e = b.saturating_add(bin).min(we);
        let mut busy_ns = 0;
        while k < busy.len() && busy[k].0 < e {
            busy_ns += busy[k].1.min(e) - busy[k].0.max(b);
            if busy[k].1 > e {
                break; // runs on into the next bin
            }
            k += 1;
        }
        // A sample at the bin's start sets the value the bin starts with.
        while let Some((_, v)) = queue.next_if(|s| s.0 <= b) {
            value = v as u64;
        }
        let (mut area, mut max, mut t) = (0i128, value, b);
        while let Some((at, v)) = queue.next_if(|s| s.0 < e) {
            area += value as i128 * (at - t) as i128;
            t = at;
            value = v as u64;
            max = max.max(value);
        }
        area += value as i128 * (e - t) as i128;
        total += area;
        c.utilization_pct.push(100.0 * busy_ns as f64 / (e - b) as f64);
        c.launch_queue_mean.push(area as f64 / (e - b) as f64);
        c.launch_queue_max.push(max);
        c.launch_queue_window_max = c.launch_queue_window_max.max(max);
    }
    if bins > 0 {
        c.launch_queue_window_mean = total as f64 / we.saturating_sub(ws) as f64;
    }
    c
}

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
        let e = b.saturating_add(bin);
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
        // Idle bins up to the next span's bin are all 0, so all but the
        // first would be dropped as repeats: jump over them. The cost is
        // then spans plus busy bins, not the trace's length in bins (a
        // stray far-off kernel made that 10^13 one-millisecond bins).
        while k < busy.len() && busy[k].1 <= b {
            k += 1;
        }
        if let Some(next) = busy.get(k) {
            let next_bin = next.0.div_euclid(bin) * bin;
            if next_bin > b {
                push_changed(&mut out, b, 0.0);
                b = next_bin;
            }
        }
    }
    push_changed(&mut out, b, 0.0);
    out
}

/// Per device: how many GPU items were launched (the launching call has
/// started) but have not started on the GPU. Work that starts before its
/// launch call (clock skew) was never queued and is skipped.
pub fn launch_queue(trace: &Trace, device: u32) -> Vec<(i64, f64)> {
    launch_queue_steps(trace, device).collect()
}

/// [`launch_queue`]'s steps, made as they are read.
pub fn launch_queue_steps(trace: &Trace, device: u32) -> QueueDepth {
    // Launches and starts in two lists of times (8 bytes an entry, not a
    // padded 16 for a time and a sign: two per GPU row of a big trace).
    let (mut launches, mut starts): (Vec<i64>, Vec<i64>) = (Vec::new(), Vec::new());
    for i in 0..trace.gpu.len() {
        let Some(call) = trace.links.gpu_launch[i] else {
            continue;
        };
        if trace.gpu.device[i] != device || !trace.gpu.is_busy(i) {
            continue;
        }
        let launched = trace.runtime.start[call.index()];
        if trace.gpu.start[i] >= launched {
            launches.push(launched);
            starts.push(trace.gpu.start[i]);
        }
    }
    launches.sort_unstable();
    starts.sort_unstable();
    QueueDepth::new(launches, starts)
}

/// The queue's depth where it changes, from the sorted times work was
/// launched and started: one step per distinct time where the depth
/// changes. Starts count before launches at one time, so the queue never
/// shows a spurious peak.
pub struct QueueDepth {
    launches: Vec<i64>,
    starts: Vec<i64>,
    /// The next launch and start to read, and the depth before them.
    l: usize,
    s: usize,
    q: i64,
    /// The depth last given.
    last: Option<i64>,
}

impl QueueDepth {
    /// From the sorted times work was launched and started.
    fn new(launches: Vec<i64>, starts: Vec<i64>) -> QueueDepth {
        QueueDepth {
            launches,
            starts,
            l: 0,
            s: 0,
            q: 0,
            last: None,
        }
    }
}

impl Iterator for QueueDepth {
    type Item = (i64, f64);

    fn next(&mut self) -> Option<(i64, f64)> {
        loop {
            let t = match (self.launches.get(self.l), self.starts.get(self.s)) {
                (Some(&a), Some(&b)) => a.min(b),
                (Some(&a), None) => a,
                (None, Some(&b)) => b,
                (None, None) => return None,
            };
            while self.starts.get(self.s) == Some(&t) {
                self.q -= 1;
                self.s += 1;
            }
            while self.launches.get(self.l) == Some(&t) {
                self.q += 1;
                self.l += 1;
            }
            if self.last != Some(self.q) {
                self.last = Some(self.q);
                return Some((t, self.q as f64));
            }
        }
    }
}

#[cfg(test)]
fn queue_depth(launches: &[i64], starts: &[i64]) -> Vec<(i64, f64)> {
    QueueDepth::new(launches.to_vec(), starts.to_vec()).collect()
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

    /// A window spanning nearly all of `Ns` (one stray far-off timestamp)
    /// still gets at most [`MAX_BINS`] bins, the last one cut at the
    /// window's end, without overflow.
    #[test]
    fn a_window_as_long_as_ns_goes() {
        let we = Ns::MAX - 1_000;
        let bin = counter_bin(we);
        assert!(bins_of(we, bin) <= MAX_BINS);
        let c = window_counters(&[(0, 5), (we - 10, we)], [(0, 1.0), (5, 0.0)], (0, we), bin);
        assert_eq!(c.utilization_pct.len() as i64, bins_of(we, bin));
        assert!(c.utilization_pct.iter().all(|u| (0.0..=100.0).contains(u)));
        assert_eq!(c.launch_queue_window_max, 1);
        assert_eq!(bins_of(Ns::MAX, 1), Ns::MAX);
        assert_eq!(bins_of(Ns::MAX, Ns::MAX), 1);
        assert_eq!(bins_of(10, 3), 4);
        assert_eq!(bins_of(9, 3), 3);
    }

    /// Idle stretches are jumped over, with the same samples a bin-by-bin
    /// walk gives; a span far off costs nothing for the bins between.
    #[test]
    fn utilization_jumps_idle_bins() {
        let busy = [(5, 10), (100, 115), (117, 118), (1_000, 1_010)];
        let walked = |busy: &[Span], bin: i64| {
            let (start, end) = (busy[0].0.div_euclid(bin) * bin, busy.last().unwrap().1);
            let mut out = Vec::new();
            let mut b = start;
            while b < end {
                let ns: i64 = busy.iter().map(|s| (s.1.min(b + bin) - s.0.max(b)).max(0)).sum();
                push_changed(&mut out, b, 100.0 * ns as f64 / bin as f64);
                b += bin;
            }
            push_changed(&mut out, b, 0.0);
            out
        };
        for bin in [1, 3, 10, 7, 100, 2_000] {
            assert_eq!(utilization(&busy, bin), walked(&busy, bin), "bin {bin}");
        }
        let far = utilization(&[(0, 5), (Ns::MAX - 10, Ns::MAX - 5)], 1_000_000);
        assert_eq!(far.len(), 4, "{far:?}");
    }

    /// The merge of the two sorted lists gives what one sorted list of
    /// +1/-1 steps gives, equal times included (starts first).
    #[test]
    fn queue_depth_merges_launches_and_starts() {
        let by_steps = |launches: &[i64], starts: &[i64]| {
            let mut d: Vec<(i64, i8)> = launches.iter().map(|&t| (t, 1)).collect();
            d.extend(starts.iter().map(|&t| (t, -1)));
            d.sort_unstable();
            let (mut out, mut q) = (Vec::new(), 0i64);
            for (k, &(t, x)) in d.iter().enumerate() {
                q += x as i64;
                if d.get(k + 1).is_none_or(|n| n.0 != t) {
                    push_changed(&mut out, t, q as f64);
                }
            }
            out
        };
        // (launch, start) pairs: back to back, equal times, a start at
        // another call's launch, work that starts at its launch.
        let pairs = [
            (0, 5),
            (1, 5),
            (5, 9),
            (5, 5),
            (9, 12),
            (20, 30),
            (21, 22),
            (22, 30),
        ];
        let (mut l, mut s): (Vec<i64>, Vec<i64>) = pairs.iter().copied().unzip();
        l.sort_unstable();
        s.sort_unstable();
        let got = queue_depth(&l, &s);
        assert_eq!(got, by_steps(&l, &s));
        assert_eq!(got[0], (0, 1.0));
        assert_eq!(got.last(), Some(&(30, 0.0)));
        assert!(got.iter().all(|&(_, q)| q <= 3.0), "{got:?}");
        assert_eq!(queue_depth(&[], &[]), vec![]);
    }

    #[test]
    fn the_bin_widens_in_1_2_5_steps_to_at_most_max_bins() {
        let ms = MIN_BIN_NS;
        assert_eq!(counter_bin(0), ms);
        assert_eq!(counter_bin(2_000 * ms), ms);
        assert_eq!(counter_bin(2_000 * ms + 1), 2 * ms);
        assert_eq!(counter_bin(4_000 * ms), 2 * ms);
        assert_eq!(counter_bin(4_001 * ms), 5 * ms);
        assert_eq!(counter_bin(10_001 * ms), 10 * ms);
        assert_eq!(counter_bin(3_600_000 * ms), 2_000 * ms);
    }

    #[test]
    fn window_counters_bin_busy_time_and_the_queue() {
        // window [5, 40), bins of 10 from 5: [5,15) [15,25) [25,35) [35,40)
        // busy     [2.....12)   [20..........38)
        // queue    0 @0, 2 @8, 1 @12, 0 @20, 3 @30, 0 @36
        let busy = [(2, 12), (20, 38)];
        let queue = [(8, 2.0), (12, 1.0), (20, 0.0), (30, 3.0), (36, 0.0)];
        let c = window_counters(&busy, queue.iter().copied(), (5, 40), 10);
        assert_eq!(c.start_ns, 5);
        assert_eq!(c.bin_ns, 10);
        assert_eq!(c.utilization_pct, vec![70.0, 50.0, 100.0, 60.0]);
        // [5,15): 0×3 + 2×4 + 1×3 = 11; [15,25): 1×5 + 0×5 = 5;
        // [25,35): 0×5 + 3×5 = 15; [35,40): 3×1 + 0×4 = 3
        assert_eq!(c.launch_queue_mean, vec![1.1, 0.5, 1.5, 0.6]);
        assert_eq!(c.launch_queue_max, vec![2, 1, 3, 3]);
        assert_eq!(c.launch_queue_window_max, 3);
        assert_eq!(c.launch_queue_window_mean, 34.0 / 35.0);
        let none = window_counters(&busy, queue.iter().copied(), (7, 7), 10);
        assert!(none.utilization_pct.is_empty());
        assert_eq!(none.launch_queue_window_mean, 0.0);
    }
}
