//! Two analyses of one job compared: the job's step time, the time its
//! ranks spend waiting for each other, and which late ranks appeared or
//! went away.
//!
//! Regressions, with `th.time` (7 % by default):
//!
//! - `step_time`: the median job step grew by more than `th.time`;
//! - `wait`: the ranks' wait, as a share of their step time, grew by more
//!   than `th.time` of its base value and by at least one percentage point;
//! - `finding`: a culprit finding (`straggler_wait`, `consistent_straggler`,
//!   `load_imbalance`) of NEW whose rule, culprit rank and cause BASE does not
//!   have, saving more than `th.time` of BASE's step time per step.

use super::{Regression, Thresholds};
use crate::job::{JobAnalysis, JobFinding};
use gapscope_collectors::trace::Ns;
use serde::Serialize;

/// What changed between two analyses of a job.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct JobDiff {
    /// Median job step, base and new.
    pub step_time_ns: (Option<Ns>, Option<Ns>),
    /// Every rank's wait for later peers, summed, base and new.
    pub total_wait_ns: (Ns, Ns),
    /// That wait as a share of all ranks' step time, base and new.
    pub wait_share: (f64, f64),
    /// Ranks, base and new.
    pub ranks: (u64, u64),
    /// Culprit findings only NEW has (their titles).
    pub findings_added: Vec<String>,
    /// Culprit findings only BASE has.
    pub findings_removed: Vec<String>,
    /// What got worse beyond the thresholds.
    pub regressions: Vec<Regression>,
}

fn share(j: &JobAnalysis) -> f64 {
    let t: Ns = j.ranks.iter().map(|r| r.breakdown.window_ns).sum();
    if t > 0 {
        j.summary.total_wait_ns as f64 / t as f64
    } else {
        0.0
    }
}

fn is_culprit(f: &JobFinding) -> bool {
    matches!(
        f.id.as_str(),
        "straggler_wait" | "consistent_straggler" | "load_imbalance"
    )
}

fn key(f: &JobFinding) -> (&str, Option<i64>, Option<&str>) {
    (f.id.as_str(), f.culprit_rank, f.cause.as_deref())
}

/// Compares `new` with `base`.
pub fn diff_jobs(base: &JobAnalysis, new: &JobAnalysis, th: &Thresholds) -> JobDiff {
    let (sb, sn) = (base.summary.step_time_ns, new.summary.step_time_ns);
    let mut regressions = Vec::new();
    if let (Some(b), Some(n)) = (sb, sn) {
        let change = if b > 0 { (n - b) as f64 / b as f64 } else { 0.0 };
        if change > th.time {
            regressions.push(Regression {
                subject: "job".into(),
                metric: "step_time".into(),
                base: b as f64,
                new: n as f64,
                change,
                threshold: th.time,
                detail: format!(
                    "the job's median step went from {:.2} ms to {:.2} ms ({:+.1}%)",
                    b as f64 / 1e6,
                    n as f64 / 1e6,
                    change * 100.0
                ),
            });
        }
    }
    let (wb, wn) = (share(base), share(new));
    if wn - wb >= 0.01 && wn > wb * (1.0 + th.time) {
        regressions.push(Regression {
            subject: "job".into(),
            metric: "wait".into(),
            base: wb,
            new: wn,
            change: if wb > 0.0 { (wn - wb) / wb } else { 1.0 },
            threshold: th.time,
            detail: format!(
                "ranks wait for each other {:.1}% of their step time, was {:.1}%",
                wn * 100.0,
                wb * 100.0
            ),
        });
    }
    let culprits = |j: &JobAnalysis| {
        j.findings
            .iter()
            .filter(|f| is_culprit(f))
            .cloned()
            .collect::<Vec<_>>()
    };
    let (fb, fnew) = (culprits(base), culprits(new));
    let added: Vec<&JobFinding> = fnew
        .iter()
        .filter(|f| !fb.iter().any(|g| key(g) == key(f)))
        .collect();
    let removed: Vec<&JobFinding> = fb
        .iter()
        .filter(|f| !fnew.iter().any(|g| key(g) == key(f)))
        .collect();
    let steps = new.summary.steps.max(1) as f64;
    for f in &added {
        let per_step = f.est_savings_ns as f64 / steps;
        let bound = th.time * sb.unwrap_or(0) as f64;
        if per_step > bound && per_step > 0.0 {
            regressions.push(Regression {
                subject: f.culprit_rank.map_or("job".into(), |r| format!("rank {r}")),
                metric: "finding".into(),
                base: 0.0,
                new: f.est_savings_ns as f64,
                change: if bound > 0.0 {
                    per_step / (bound / th.time)
                } else {
                    1.0
                },
                threshold: th.time,
                detail: format!("new: {}", f.title),
            });
        }
    }
    JobDiff {
        step_time_ns: (sb, sn),
        total_wait_ns: (base.summary.total_wait_ns, new.summary.total_wait_ns),
        wait_share: (wb, wn),
        ranks: (base.ranks.len() as u64, new.ranks.len() as u64),
        findings_added: added.iter().map(|f| f.title.clone()).collect(),
        findings_removed: removed.iter().map(|f| f.title.clone()).collect(),
        regressions,
    }
}
