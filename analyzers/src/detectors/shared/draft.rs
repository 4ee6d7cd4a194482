//! Drafts: a finding before its totals and savings are known, how its
//! saving is replayed, and how it becomes a [`Finding`] with evidence.

use super::blame::Blame;
use super::context::Cx;
use crate::detectors::{Evidence, Finding, MAX_EVIDENCE};
use crate::whatif::Edit;
use crate::whatif::Replay;
use gapscope_collectors::trace::parallel::{both, PARALLEL_ROWS};
use gapscope_collectors::trace::{CallRow, GpuRow, Ns, OpRow};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A finding before its totals and savings are computed.
pub(crate) struct Draft {
    pub detector: &'static str,
    pub id: &'static str,
    pub title: String,
    pub pieces: Vec<u32>,
    pub occurrences: u64,
    /// Busy time the fix removes (added to `explained_ns`).
    pub removed_busy_ns: Ns,
    /// Idle time after the draft's blocking calls returned that their fix
    /// can also remove, without claiming it (added to `explained_ns`): see
    /// [`Cx::drain_after`].
    pub drain_ns: Ns,
    /// Graph edit beyond removing the pieces' own CPU time.
    pub edit: Edit,
    /// Also remove the CPU time of the claimed pieces in the replay.
    pub remove_piece_cpu: bool,
    /// False: savings are not estimable (reported as 0).
    pub estimable: bool,
    pub primary: bool,
    pub hint: String,
    /// `(operator, annotation, source)` to report instead of the dominant
    /// attribution of the pieces.
    pub blame: Option<Blame>,
    /// Idle time to report for a non-primary finding (primary ones sum
    /// their pieces).
    pub context_idle_ns: Ns,
    /// When not estimable: the most the fix could save, if more than the
    /// idle time the draft covers (exposed communication: the exposed time).
    pub savings_bound_ns: Option<Ns>,
    pub evidence: Vec<Evidence>,
}

impl Draft {
    pub fn new(detector: &'static str, id: &'static str, title: String, hint: String) -> Draft {
        Draft {
            detector,
            id,
            title,
            pieces: Vec::new(),
            occurrences: 0,
            removed_busy_ns: 0,
            drain_ns: 0,
            edit: Edit::default(),
            remove_piece_cpu: true,
            estimable: true,
            primary: true,
            hint,
            blame: None,
            context_idle_ns: 0,
            savings_bound_ns: None,
            evidence: Vec::new(),
        }
    }
}

/// What replaying one draft's fix needs, read from the pieces while they
/// are there: the replays run after the pieces are freed.
pub(crate) struct SavingsJob {
    edit: Edit,
    /// What the draft explains: the saving is capped at it.
    explained: Ns,
    /// The earliest time the edit changes: where its replay starts.
    earliest: Ns,
}

impl Cx<'_> {
    /// Each draft's replay job (`None` when its saving is not estimable or
    /// it explains nothing: reported as 0) and its finding
    /// ([`finish`](Self::finish)), in the drafts' order. The draft with
    /// the most pieces is done on a second thread when it has
    /// [`PARALLEL_ROWS`] of them: on a big trace D2's largest group walks
    /// a million pieces for each, while the other drafts are few.
    pub(crate) fn jobs_and_findings(
        &self,
        mut drafts: Vec<Draft>,
    ) -> (Vec<Option<SavingsJob>>, Vec<Finding>) {
        let one = |d: Draft| (self.savings_job(&d), self.finish(d));
        let big = (0..drafts.len())
            .max_by_key(|&i| drafts[i].pieces.len())
            .filter(|&i| drafts.len() > 1 && drafts[i].pieces.len() >= PARALLEL_ROWS);
        let Some(big) = big else {
            return drafts.into_iter().map(one).unzip();
        };
        let big_draft = drafts.remove(big);
        let (big_done, mut done) = both(
            true,
            || one(big_draft),
            || drafts.into_iter().map(one).collect::<Vec<_>>(),
        );
        done.insert(big, big_done);
        done.into_iter().unzip()
    }

    fn savings_job(&self, d: &Draft) -> Option<SavingsJob> {
        let idle = if d.primary {
            self.total(&d.pieces)
        } else {
            d.context_idle_ns
        };
        let explained = idle + d.removed_busy_ns + d.drain_ns;
        if !d.estimable || explained == 0 {
            return None;
        }
        let mut edit = d.edit.clone();
        if d.remove_piece_cpu {
            for &i in &d.pieces {
                let p = &self.piece(i);
                if let Some(t) = self.thread(p) {
                    match edit.remove_cpu.last_mut() {
                        // The replay takes the union of each thread's
                        // spans, and a group's pieces mostly run back to
                        // back: one span for a run keeps the edit small (a
                        // million pieces on a big trace).
                        Some((last_t, (_, end))) if *last_t == t && *end == p.start => *end = p.end,
                        _ => edit.remove_cpu.push((t, (p.start, p.end))),
                    }
                }
            }
        }
        Some(SavingsJob {
            earliest: self.earliest_change(d),
            edit,
            explained,
        })
    }

    /// The earliest time draft `d`'s savings edit changes (`Ns::MAX` when
    /// it changes nothing): where its replay starts.
    fn earliest_change(&self, d: &Draft) -> Ns {
        let (gpu, rt) = (&self.trace.gpu, &self.trace.runtime);
        let e = &d.edit;
        // Pieces are in time order: the lowest index is the earliest.
        let pieces = d
            .remove_piece_cpu
            .then(|| d.pieces.iter().min().map(|&i| self.piece(i).start));
        e.remove_cpu
            .iter()
            .map(|(_, (s, _))| *s)
            .chain(e.no_wait.iter().map(|c| rt.start[c.index()]))
            .chain(e.remove_gpu.iter().map(|g| gpu.start[g.index()]))
            .chain(e.shorten_gpu.iter().map(|(g, _)| gpu.start[g.index()]))
            .chain(pieces.flatten())
            .min()
            .unwrap_or(Ns::MAX)
    }

    /// The finding of draft `d`: its totals, blame and idle evidence. Its
    /// saving is 0 here, set by the caller from [`all_savings`].
    pub(crate) fn finish(&self, d: Draft) -> Finding {
        let idle_ns = if d.primary {
            self.total(&d.pieces)
        } else {
            d.context_idle_ns
        };
        let explained_ns = idle_ns + d.removed_busy_ns + d.drain_ns;
        let savings_bound_ns = (!d.estimable)
            .then(|| d.savings_bound_ns.unwrap_or(idle_ns))
            .filter(|&b| b > 0);
        let (operator, annotation, source) = d.blame.clone().unwrap_or_else(|| self.blame(&d.pieces));
        let mut evidence = d.evidence;
        // The longest pieces, the earliest first among equals, kept in one
        // pass over the group (it can hold a million pieces; only the few
        // shown are ever in order).
        let room = MAX_EVIDENCE.saturating_sub(evidence.len());
        let key = |i: u32| (std::cmp::Reverse(self.piece(i).dur()), self.piece(i).start);
        let mut largest: Vec<((std::cmp::Reverse<Ns>, Ns), u32)> = Vec::with_capacity(room + 1);
        let pieces = if room > 0 { &d.pieces[..] } else { &[] };
        for &i in pieces {
            let k = key(i);
            if largest.len() == room && largest.last().is_some_and(|&(last, _)| k >= last) {
                continue;
            }
            let at = largest.partition_point(|&(other, _)| other <= k);
            largest.insert(at, (k, i));
            largest.truncate(room);
        }
        for &(_, i) in &largest {
            let p = &self.piece(i);
            evidence.push(Evidence {
                kind: "idle".into(),
                row: None,
                start_ns: p.start,
                end_ns: p.end,
            });
        }
        evidence.truncate(MAX_EVIDENCE);
        Finding {
            id: d.id.to_string(),
            detector: d.detector.to_string(),
            title: d.title,
            device: self.device,
            occurrences: d.occurrences,
            idle_ns,
            explained_ns,
            // Replayed after the pieces are freed ([`all_savings`]).
            est_savings_ns: 0,
            estimable: d.estimable,
            savings_bound_ns,
            primary: d.primary,
            operator,
            annotation,
            source,
            evidence,
            hint: d.hint,
        }
    }

    /// Evidence pointing at a `runtime` row.
    pub fn runtime_evidence(&self, r: CallRow) -> Evidence {
        Evidence {
            kind: "runtime".into(),
            row: Some(r.get()),
            start_ns: self.trace.runtime.start[r.index()],
            end_ns: self.trace.runtime.end[r.index()],
        }
    }

    /// Evidence pointing at a `gpu` row.
    pub fn gpu_evidence(&self, g: GpuRow) -> Evidence {
        Evidence {
            kind: "gpu".into(),
            row: Some(g.get()),
            start_ns: self.trace.gpu.start[g.index()],
            end_ns: self.trace.gpu.end[g.index()],
        }
    }

    /// Evidence pointing at a `cpu_ops` row.
    pub fn op_evidence(&self, o: OpRow) -> Evidence {
        Evidence {
            kind: "cpu_op".into(),
            row: Some(o.get()),
            start_ns: self.trace.cpu_ops.start[o.index()],
            end_ns: self.trace.cpu_ops.end[o.index()],
        }
    }
}

/// The replayed saving of each job (0 for none), capped at what its draft
/// explains. Replays are independent passes over one read-only graph, so
/// they run on all cores.
pub(crate) fn all_savings(replay: &Replay, jobs: &[Option<SavingsJob>]) -> Vec<Ns> {
    let one = |job: &Option<SavingsJob>| -> Ns {
        job.as_ref()
            .map_or(0, |j| replay.savings(&j.edit).min(j.explained))
    };
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(jobs.len());
    if threads <= 1 {
        return jobs.iter().map(one).collect();
    }
    // Each thread, this one too, takes the next job when it is done with
    // one: a replay runs from the first event its edit changes to the end
    // of the window, so its cost ranges from nothing to a whole pass, and
    // halves fixed in advance left one thread working alone at the end.
    // The earliest edits, the longest replays, go first.
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&i| jobs[i].as_ref().map_or(Ns::MAX, |j| j.earliest));
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        while let Some(&i) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
            done.push((i, one(&jobs[i])));
        }
        done
    };
    let mut savings = vec![0; jobs.len()];
    std::thread::scope(|s| {
        let others: Vec<_> = (1..threads).map(|_| s.spawn(work)).collect();
        let mine = work();
        for done in others
            .into_iter()
            .map(|h| h.join().expect("a replay panicked"))
            .chain([mine])
        {
            for (i, ns) in done {
                savings[i] = ns;
            }
        }
    });
    savings
}
