//! Text output of a job: the headline, what held the job back (the job
//! findings), the per-step table of late ranks, the per-rank table, and
//! where all ranks' time went. Each rank's own analysis follows with
//! `--per-rank`.

use super::table::Table;
use super::text::wrap;
use gapscope_analyzers::format::{duration, ms, percent};
use gapscope_analyzers::job::align::{MatchMethod, RankAlignment};
use gapscope_analyzers::job::culprit::{job_cause_label, job_loss_label};
use gapscope_analyzers::job::finding::rank_list;
use gapscope_analyzers::job::JobAnalysis;
use std::io::{self, Write};

/// Job findings listed in text (all of them: `--format json`).
const MAX_FINDINGS: usize = 10;
/// Steps listed before the table is cut short.
const MAX_STEP_ROWS: usize = 30;
/// Ranks listed before the table is cut short.
const MAX_RANK_ROWS: usize = 64;
/// Causes listed in the job's time table.
const MAX_CAUSE_ROWS: usize = 10;
/// Column at which hints wrap.
const HINT_WIDTH: usize = 96;

/// Writes the job's sections; with `per_rank`, each rank's own analysis
/// after them.
pub fn write(out: &mut dyn Write, j: &JobAnalysis, per_rank: bool) -> io::Result<()> {
    headline(out, j)?;
    findings(out, j)?;
    steps(out, j)?;
    ranks(out, j)?;
    causes(out, j)?;
    if per_rank {
        for r in &j.ranks {
            if let Some(a) = &r.analysis {
                writeln!(out)?;
                let one = crate::analysed::Analysed {
                    name: format!("rank {}: {}", r.rank, r.source),
                    analysis: (**a).clone(),
                };
                super::text::write(out, std::slice::from_ref(&one))?;
            }
        }
    } else {
        writeln!(out)?;
        writeln!(
            out,
            "each rank's own analysis: --per-rank, or --format json (ranks[].analysis)"
        )?;
    }
    Ok(())
}

fn headline(out: &mut dyn Write, j: &JobAnalysis) -> io::Result<()> {
    let s = &j.summary;
    let world = j.world_size.map_or(String::new(), |w| format!(" of {w}"));
    let steps = match (j.steps.first(), j.steps.last()) {
        (Some(a), Some(b)) if a.step == b.step => format!("step #{}", a.step),
        (Some(a), Some(b)) => format!("{} steps #{}..#{}", j.steps.len(), a.step, b.step),
        _ => "no steps".into(),
    };
    let step_time = s
        .step_time_ns
        .map_or(String::new(), |t| format!(", median step {} ms", ms(t)));
    writeln!(
        out,
        "job: {} ranks{world} ({}), {steps}{step_time}",
        j.ranks.len(),
        rank_list(&j.ranks.iter().map(|r| r.rank).collect::<Vec<_>>())
    )?;
    let aligned: Vec<_> = j
        .alignment
        .ranks
        .iter()
        .filter(|a| a.offset_ns.is_some())
        .collect();
    let matched = j.collectives.len();
    let res_med = aligned
        .iter()
        .filter_map(|a| a.residual_median_ns)
        .max()
        .unwrap_or(0);
    let res_max = aligned
        .iter()
        .filter_map(|a| a.residual_max_ns)
        .max()
        .unwrap_or(0);
    writeln!(
        out,
        "clocks: {} of {} ranks aligned to rank {}'s on {matched} collectives{}; residual up to {} (median), {} (max)",
        aligned.len(),
        j.ranks.len(),
        j.alignment.reference_rank.map_or("-".into(), |r| r.to_string()),
        matched_by(&j.alignment.ranks),
        duration(res_med),
        duration(res_max)
    )?;
    writeln!(
        out,
        "waiting for other ranks: {} ms in all ({} of the ranks' step time)",
        ms(s.total_wait_ns),
        percent(
            s.total_wait_ns,
            j.ranks.iter().map(|r| r.breakdown.window_ns).sum()
        )
    )
}

fn findings(out: &mut dyn Write, j: &JobAnalysis) -> io::Result<()> {
    writeln!(out)?;
    if j.findings.is_empty() {
        return writeln!(
            out,
            "No rank held the others back by more than the clocks' noise."
        );
    }
    writeln!(out, "What held the job back (ranked by estimated savings)")?;
    for (i, f) in j.findings.iter().take(MAX_FINDINGS).enumerate() {
        writeln!(out, "{:>3}. [{}] {}", i + 1, f.id, f.title)?;
        let mut facts = vec![match f.savings_bound_ns {
            Some(bound) => format!(
                "saving not estimable from the trace (at most ~{} of the job's step time{})",
                duration(bound),
                f.over_steps()
            ),
            None => format!(
                "saves {}~{} of the job's step time{}",
                if f.untraced_ranks > 0 { "at most " } else { "" },
                duration(f.est_savings_ns),
                f.over_steps()
            ),
        }];
        if f.total_wait_ns > 0 {
            facts.push(format!("others waited {} in all", duration(f.total_wait_ns)));
        }
        if let Some(r) = f.culprit_rank {
            facts.push(format!("culprit rank {r}"));
        }
        if let Some(c) = &f.cause {
            facts.push(format!("cause: {}", job_cause_label(c)));
        }
        writeln!(out, "     {}", facts.join("; "))?;
        for line in wrap(&f.hint, HINT_WIDTH) {
            writeln!(out, "     {line}")?;
        }
    }
    if j.findings.len() > MAX_FINDINGS {
        let rest = j.findings.len() - MAX_FINDINGS;
        let noun = if rest == 1 { "finding" } else { "findings" };
        writeln!(out, "  ... and {rest} more {noun} (all of them: --format json)")?;
    }
    Ok(())
}

fn steps(out: &mut dyn Write, j: &JobAnalysis) -> io::Result<()> {
    if j.steps.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(
        out,
        "Late ranks per step (the job's step: first rank's start to last rank's end)"
    )?;
    let mut t = Table::new([
        "step",
        "job ms",
        "collectives",
        "late",
        "worst: rank",
        "late by",
        "in",
        "all ranks waited ms",
    ])
    .left(&[6]);
    for s in j.steps.iter().take(MAX_STEP_ROWS) {
        let (rank, by, what) = match &s.worst {
            Some(w) => (
                w.rank.to_string(),
                duration(w.lateness_ns),
                format!("{} #{}", w.collective, w.ordinal),
            ),
            None => ("-".into(), "-".into(), "-".into()),
        };
        t.row([
            s.step.to_string(),
            ms(s.span_ns),
            s.collectives.to_string(),
            s.late_collectives.to_string(),
            rank,
            by,
            what,
            ms(s.total_wait_ns),
        ]);
    }
    t.write(out, "  ")?;
    if j.steps.len() > MAX_STEP_ROWS {
        writeln!(
            out,
            "  ... {} more steps (--format json)",
            j.steps.len() - MAX_STEP_ROWS
        )?;
    }
    Ok(())
}

fn ranks(out: &mut dyn Write, j: &JobAnalysis) -> io::Result<()> {
    writeln!(out)?;
    writeln!(
        out,
        "Ranks (over their steps; the shares add up: waiting and communication are collective time no compute hid)"
    )?;
    let mut t = Table::new([
        "rank",
        "step ms",
        "compute",
        "waiting",
        "communication",
        "copies",
        "idle",
        "idle mostly",
        "late",
        "others waited",
        "clock offset",
        "matched by",
        "residual",
        "file",
    ])
    .left(&[7, 11, 13]);
    for r in j.ranks.iter().take(MAX_RANK_ROWS) {
        let b = &r.breakdown;
        let a = j.alignment.ranks.iter().find(|a| a.rank == r.rank);
        let idle_top = r
            .idle_by_cause_ns
            .top()
            .map_or("-".to_string(), |c| c.label().to_string());
        // The breakdown's communication is collective time no compute
        // overlapped; its waiting part is the exposed wait.
        let waiting = r.exposed_wait_ns.min(b.communication_ns);
        t.row([
            r.rank.to_string(),
            r.step_time_median_ns.map_or("-".into(), ms),
            percent(b.compute_ns, b.window_ns),
            percent(waiting, b.window_ns),
            percent(b.communication_ns - waiting, b.window_ns),
            percent(b.memcpy_ns + b.memset_ns, b.window_ns),
            percent(b.idle_ns, b.window_ns),
            idle_top,
            r.late.to_string(),
            if r.caused_wait_ns > 0 {
                format!("{} ms", ms(r.caused_wait_ns))
            } else {
                "-".into()
            },
            a.and_then(|a| a.offset_ns).map_or("not aligned".into(), duration),
            a.map_or("-".into(), RankAlignment::match_label),
            a.and_then(|a| a.residual_median_ns).map_or("-".into(), duration),
            r.source.clone(),
        ]);
    }
    t.write(out, "  ")?;
    if j.ranks.len() > MAX_RANK_ROWS {
        writeln!(
            out,
            "  ... {} more ranks (--format json)",
            j.ranks.len() - MAX_RANK_ROWS
        )?;
    }
    Ok(())
}

fn causes(out: &mut dyn Write, j: &JobAnalysis) -> io::Result<()> {
    let s = &j.summary;
    if s.top_causes.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(out, "Where the ranks' time was lost (summed over ranks)")?;
    let mut t = Table::new(["lost to", "ms", "% of rank time"]);
    for c in s.top_causes.iter().take(MAX_CAUSE_ROWS) {
        let what = job_loss_label(&c.kind, &c.cause);
        t.row([what, ms(c.ns), format!("{:.1}%", c.share * 100.0)]);
    }
    t.write(out, "  ")
}

/// ` (matched by process group and sequence number)`, ` (matched by
/// order)`, or the ranks per way when they differ; empty for one rank.
fn matched_by(ranks: &[RankAlignment]) -> String {
    let mut ways: Vec<(String, usize)> = Vec::new();
    for a in ranks.iter().filter(|a| a.method != MatchMethod::Reference) {
        let way = match a.match_label().as_str() {
            "seq" => "process group and sequence number".to_string(),
            "none" => "nothing (left out)".to_string(),
            "seq+order" => "sequence number and order".to_string(),
            "seq+time" => "sequence number and time".to_string(),
            other => other.to_string(),
        };
        match ways.iter_mut().find(|(w, _)| *w == way) {
            Some((_, n)) => *n += 1,
            None => ways.push((way, 1)),
        }
    }
    match ways.as_slice() {
        [] => String::new(),
        [(w, _)] => format!(" (matched by {w})"),
        _ => {
            let parts: Vec<String> = ways
                .iter()
                .map(|(w, n)| format!("{w}: {n} {}", if *n == 1 { "rank" } else { "ranks" }))
                .collect();
            format!(" (matched by {})", parts.join(", "))
        }
    }
}
