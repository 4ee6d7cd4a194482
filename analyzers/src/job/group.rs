//! Which traces belong to one job, and which snapshot of it.
//!
//! A rank is `distributedInfo.rank`, else the number after `rank` or
//! `worker` in the file name ([`rank_from_name`]). Traces go together when
//!
//! - their world sizes agree (or neither says),
//! - their profiled steps overlap (`ProfilerStep#N` numbers), or, when
//!   either has no steps, their time spans overlap,
//! - their absolute time spans lie within [`SAME_RUN_SLACK_NS`] of each
//!   other (two runs of the same script hours apart are two jobs, whatever
//!   their step numbers), and
//! - no rank appears twice.
//!
//! `tensorboard_trace_handler` writes one file per profiling cycle and
//! worker: each cycle is a separate snapshot of the job (its steps do not
//! overlap the next cycle's), analysed on its own. A snapshot with one rank,
//! and a trace with no rank, is analysed apart, with the reason.

use gapscope_collectors::trace::Ns;
use serde::{Deserialize, Serialize};

/// How far apart (absolute clock) two traces of one run may lie: ranks'
/// clocks are synchronised to well under a second; two runs rarely start
/// within two minutes of each other.
pub const SAME_RUN_SLACK_NS: Ns = 120_000_000_000;

/// What grouping needs of one input.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputMeta {
    /// The name the user gave (file path).
    pub name: String,
    /// The rank, from the trace or its name.
    pub rank: Option<i64>,
    /// The world size, when the trace says.
    pub world_size: Option<i64>,
    /// Its `ProfilerStep#N` numbers.
    pub steps: Vec<u64>,
    /// Its first and last event, absolute ns in its own clock.
    pub span: Option<(Ns, Ns)>,
}

/// The inputs' grouping: indices into the inputs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Grouping {
    /// Jobs of two or more ranks, each by rank.
    pub jobs: Vec<Vec<usize>>,
    /// Inputs analysed alone, each with the reason (empty when there is
    /// nothing to say: world size 1, the only input, or no input has a rank).
    pub apart: Vec<(usize, String)>,
}

/// The number after `rank` or `worker` in a file name: `rank-3`, `rank_3`,
/// `rank3`, `worker3_step_12`, `worker_3`.
pub fn rank_from_name(name: &str) -> Option<i64> {
    let file = name
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or(name)
        .to_ascii_lowercase();
    for word in ["rank", "worker"] {
        let mut from = 0;
        while let Some(pos) = file[from..].find(word) {
            let rest = &file[from + pos + word.len()..];
            let rest = rest.strip_prefix(['-', '_', '.']).unwrap_or(rest);
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            if !digits.is_empty() {
                return digits.parse().ok();
            }
            from += pos + word.len();
        }
    }
    None
}

struct Snapshot {
    members: Vec<usize>,
    steps: Vec<u64>,
    span: Option<(Ns, Ns)>,
}

/// Groups `inputs` into jobs and snapshots (see the module's docs).
pub fn group(inputs: &[InputMeta]) -> Grouping {
    let mut out = Grouping::default();
    let mut order: Vec<usize> = Vec::new();
    // Traces none of which has a rank are separate traces, not a job with
    // its ranks missing: nothing to say about them.
    let any_rank = inputs.iter().any(|m| m.rank.is_some());
    for (i, m) in inputs.iter().enumerate() {
        match m.rank {
            None if !any_rank => out.apart.push((i, String::new())),
            None => out.apart.push((
                i,
                "no rank: the trace has no distributedInfo.rank and its name no `rank`/`worker` number"
                    .into(),
            )),
            Some(_) if m.world_size == Some(1) => out.apart.push((i, String::new())),
            Some(_) => order.push(i),
        }
    }
    order.sort_by_key(|&i| {
        let m = &inputs[i];
        (
            m.world_size,
            m.steps.iter().min().copied(),
            m.span.map(|s| s.0),
            m.rank,
        )
    });
    let mut snapshots: Vec<Snapshot> = Vec::new();
    for i in order {
        let m = &inputs[i];
        let fits = |s: &Snapshot| {
            let first = &inputs[s.members[0]];
            first.world_size == m.world_size
                && !s.members.iter().any(|&o| inputs[o].rank == m.rank)
                && together(&s.steps, s.span, &m.steps, m.span)
        };
        let best = snapshots
            .iter_mut()
            .filter(|s| fits(s))
            .min_by_key(|s| match (s.span, m.span) {
                (Some(a), Some(b)) => (a.0 - b.0).abs(),
                _ => 0,
            });
        match best {
            Some(s) => {
                s.members.push(i);
                s.steps.extend(&m.steps);
                s.steps.sort_unstable();
                s.steps.dedup();
                s.span = match (s.span, m.span) {
                    (Some(a), Some(b)) => Some((a.0.min(b.0), a.1.max(b.1))),
                    (a, b) => a.or(b),
                };
            }
            None => snapshots.push(Snapshot {
                members: vec![i],
                steps: m.steps.clone(),
                span: m.span,
            }),
        }
    }
    // Jobs and cycles in time order.
    snapshots.sort_by_key(|s| (s.span.map(|p| p.0), s.steps.first().copied()));
    let lone = snapshots.len() == 1 && inputs.len() == 1;
    for mut s in snapshots {
        if s.members.len() >= 2 {
            s.members.sort_by_key(|&i| inputs[i].rank);
            out.jobs.push(s.members);
        } else {
            let i = s.members[0];
            let why = if lone {
                String::new()
            } else {
                lone_reason(inputs, i)
            };
            out.apart.push((i, why));
        }
    }
    out.apart.sort_by_key(|a| a.0);
    out
}

fn together(sa: &[u64], pa: Option<(Ns, Ns)>, sb: &[u64], pb: Option<(Ns, Ns)>) -> bool {
    let near = match (pa, pb) {
        (Some(a), Some(b)) => a.0 <= b.1 + SAME_RUN_SLACK_NS && b.0 <= a.1 + SAME_RUN_SLACK_NS,
        _ => true,
    };
    if !near {
        return false;
    }
    if !sa.is_empty() && !sb.is_empty() {
        return sa.iter().any(|s| sb.binary_search(s).is_ok());
    }
    match (pa, pb) {
        (Some(a), Some(b)) => a.0 <= b.1 && b.0 <= a.1,
        _ => true,
    }
}

fn lone_reason(inputs: &[InputMeta], i: usize) -> String {
    let m = &inputs[i];
    let others: Vec<&InputMeta> = inputs
        .iter()
        .enumerate()
        .filter(|&(j, o)| j != i && o.rank.is_some())
        .map(|(_, o)| o)
        .collect();
    if others.is_empty() {
        return String::new();
    }
    if others.iter().all(|o| o.world_size != m.world_size) {
        return format!(
            "its world size ({}) differs from the other traces'",
            m.world_size.map_or("unknown".into(), |w| w.to_string())
        );
    }
    let same: Vec<&&InputMeta> = others.iter().filter(|o| o.world_size == m.world_size).collect();
    if same.iter().all(|o| o.rank == m.rank) {
        return format!(
            "rank {} appears in several traces of other runs or cycles",
            m.rank.unwrap_or(-1)
        );
    }
    let steps = |s: &[u64]| match (s.first(), s.last()) {
        (Some(a), Some(b)) if a == b => format!("step {a}"),
        (Some(a), Some(b)) => format!("steps {a}..{b}"),
        _ => "no steps".to_string(),
    };
    format!(
        "no other rank of its run has overlapping steps ({}) within {} s of it",
        steps(&m.steps),
        SAME_RUN_SLACK_NS / 1_000_000_000
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(name: &str, rank: i64, world: i64, steps: &[u64], t: Ns) -> InputMeta {
        InputMeta {
            name: name.into(),
            rank: Some(rank),
            world_size: Some(world),
            steps: steps.to_vec(),
            span: Some((t, t + 1_000_000_000)),
        }
    }

    #[test]
    fn ranks_from_names() {
        assert_eq!(
            rank_from_name("worker3_step_12.1694128201557.pt.trace.json.gz"),
            Some(3)
        );
        assert_eq!(rank_from_name("dir/sampled_rank-1.json.gz"), Some(1));
        assert_eq!(rank_from_name("rank_12.json"), Some(12));
        assert_eq!(rank_from_name("RANK7.json"), Some(7));
        assert_eq!(rank_from_name("/runs/rank/host_123.pt.trace.json"), None);
        assert_eq!(rank_from_name("host_1234.1694.pt.trace.json"), None);
    }

    #[test]
    fn cycles_pair_by_step_and_runs_split_by_time() {
        let h = 3_600_000_000_000;
        let inputs = vec![
            meta("a0c1", 0, 2, &[5, 6], 0),
            meta("a1c1", 1, 2, &[5, 6], 1_000),
            meta("a0c2", 0, 2, &[15, 16], 10_000_000_000),
            meta("a1c2", 1, 2, &[15, 16], 10_000_001_000),
            // Another run an hour later with the same steps.
            meta("b0", 0, 2, &[5, 6], h),
            meta("b1", 1, 2, &[5, 6], h + 5),
            // A lone rank of a 4-rank job.
            meta("c2", 2, 4, &[5], 0),
        ];
        let g = group(&inputs);
        assert_eq!(g.jobs, vec![vec![0, 1], vec![2, 3], vec![4, 5]]);
        assert_eq!(g.apart.len(), 1);
        assert_eq!(g.apart[0].0, 6);
        assert!(g.apart[0].1.contains("world size (4)"), "{}", g.apart[0].1);
    }

    #[test]
    fn a_missing_rank_is_not_filled_from_another_run() {
        let h = 3_600_000_000_000;
        let inputs = vec![
            meta("a0", 0, 3, &[1], 0),
            meta("a1", 1, 3, &[1], 0),
            meta("b0", 0, 3, &[1], h),
            meta("b1", 1, 3, &[1], h),
            meta("b2", 2, 3, &[1], h),
        ];
        let g = group(&inputs);
        assert_eq!(g.jobs, vec![vec![0, 1], vec![2, 3, 4]]);
        assert!(g.apart.is_empty());
    }

    #[test]
    fn traces_without_rank_or_overlap_stay_apart() {
        let mut none = meta("x", 0, 2, &[1], 0);
        none.rank = None;
        let inputs = vec![none, meta("a0", 0, 2, &[1, 2], 0), meta("a1", 1, 2, &[7, 8], 0)];
        let g = group(&inputs);
        assert!(g.jobs.is_empty());
        assert_eq!(g.apart.len(), 3);
        assert!(g.apart[0].1.starts_with("no rank"));
        assert!(g.apart[1].1.contains("overlapping steps"), "{}", g.apart[1].1);
    }
}
