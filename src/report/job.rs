//! The report of a job: what held it back (the job findings), a rank x step
//! heat map of the time each rank spent waiting for others (the late rank
//! of each step outlined), and the per-rank and per-step tables. Same
//! rules as the single-trace report: the view holds every number already
//! formatted and every rectangle already laid out; the templates only loop.

use gapscope_analyzers::format::{duration, ms, percent};
use gapscope_analyzers::job::culprit::{job_cause_label, job_loss_label};
use gapscope_analyzers::job::finding::rank_list;
use gapscope_analyzers::job::{JobAnalysis, JobFinding};
use serde::Serialize;

/// Findings shown (all of them: `analyze --format json`).
const MAX_FINDINGS: usize = 12;
/// Ranks drawn in the heat map and listed; more get "and N more".
const MAX_RANKS: usize = 256;
/// Steps drawn in the heat map.
const MAX_STEPS: usize = 100;
/// Heat map cell size, in the SVG's units.
const CELL_W: u32 = 36;
const CELL_H: u32 = 18;
/// Room for the row and column labels.
const LEFT: u32 = 70;
const TOP: u32 = 22;

/// Wait share bins and their fills (light to dark red; ColorBrewer Reds):
/// a cell is filled by the share of the rank's step spent waiting.
pub const HEAT: [(f64, &str); 7] = [
    (0.01, "#fff5f0"),
    (0.05, "#fee0d2"),
    (0.10, "#fcbba1"),
    (0.20, "#fc9272"),
    (0.30, "#fb6a4a"),
    (0.50, "#de2d26"),
    (f64::INFINITY, "#a50f15"),
];

/// The whole page.
#[derive(Clone, Debug, Serialize)]
pub struct JobView {
    /// Page title.
    pub title: String,
    /// `gapscope <version>`.
    pub generator: String,
    /// `8 ranks of 8 (0-7)`.
    pub ranks_text: String,
    /// `4 steps #10..#13`.
    pub steps_text: String,
    /// Headline numbers.
    pub cards: Vec<Card>,
    /// The clocks, in words.
    pub clocks: String,
    /// What held the job back.
    pub findings: Vec<FindingView>,
    /// Findings not shown.
    pub more_findings: usize,
    /// Rank x step waits.
    pub heat: Heat,
    /// One row per rank.
    pub ranks: Vec<RankRow>,
    /// Ranks not listed.
    pub more_ranks: usize,
    /// One row per step.
    pub steps: Vec<StepRow>,
    /// Where the ranks' time was lost.
    pub causes: Vec<CauseRow>,
    /// What could not be analysed.
    pub warnings: Vec<String>,
}

/// A headline number.
#[derive(Clone, Debug, Serialize)]
pub struct Card {
    /// Label.
    pub label: String,
    /// The number.
    pub value: String,
    /// What it is of.
    pub sub: String,
}

/// One job finding.
#[derive(Clone, Debug, Serialize)]
pub struct FindingView {
    /// Position, from 1.
    pub n: usize,
    /// Rule id.
    pub id: String,
    /// Its sentence.
    pub title: String,
    /// `saves ~12.00 ms`.
    pub saves: String,
    /// Culprit, cause and waits, in words.
    pub facts: String,
    /// What to change.
    pub hint: String,
}

/// The heat map, laid out.
#[derive(Clone, Debug, Serialize)]
pub struct Heat {
    /// SVG width.
    pub width: u32,
    /// SVG height.
    pub height: u32,
    /// Cells.
    pub cells: Vec<HeatCell>,
    /// Rank labels (left).
    pub rows: Vec<HeatLabel>,
    /// Step labels (top).
    pub cols: Vec<HeatLabel>,
    /// Colour key.
    pub legend: Vec<LegendItem>,
    /// Steps or ranks left out of the drawing.
    pub note: String,
}

/// One rank in one step.
#[derive(Clone, Debug, Serialize)]
pub struct HeatCell {
    /// Position and size.
    pub x: u32,
    /// Position and size.
    pub y: u32,
    /// Fill.
    pub fill: &'static str,
    /// The rank was late in this step (others waited for it).
    pub culprit: bool,
    /// Hover text.
    pub title: String,
}

/// A label on an axis.
#[derive(Clone, Debug, Serialize)]
pub struct HeatLabel {
    /// Position.
    pub x: u32,
    /// Position.
    pub y: u32,
    /// Text.
    pub text: String,
}

/// A colour and what it means.
#[derive(Clone, Debug, Serialize)]
pub struct LegendItem {
    /// Fill.
    pub fill: &'static str,
    /// Meaning.
    pub text: String,
}

/// One rank.
#[derive(Clone, Debug, Serialize)]
pub struct RankRow {
    /// Rank.
    pub rank: i64,
    /// Median step, ms.
    pub step: String,
    /// Shares of its step time.
    pub compute: String,
    /// Exposed wait.
    pub waiting: String,
    /// Exposed collective time after the last peer arrived.
    pub communication: String,
    /// Copies and memsets.
    pub copies: String,
    /// Idle.
    pub idle: String,
    /// Its top idle cause.
    pub idle_mostly: String,
    /// Late collectives.
    pub late: u64,
    /// Others' wait for it.
    pub caused: String,
    /// Clock offset.
    pub offset: String,
    /// How its collectives were matched (`seq`, `order`, `time`, ...).
    pub matched_by: String,
    /// Alignment residual (median).
    pub residual: String,
    /// Its trace.
    pub source: String,
}

/// One step.
#[derive(Clone, Debug, Serialize)]
pub struct StepRow {
    /// Step number.
    pub step: u64,
    /// The job's step, ms.
    pub span: String,
    /// Collectives matched.
    pub collectives: u64,
    /// Of them late.
    pub late: u64,
    /// The worst late rank.
    pub rank: String,
    /// By how much.
    pub by: String,
    /// In which collective.
    pub collective: String,
    /// Everyone's wait.
    pub waited: String,
}

/// One cause of lost time.
#[derive(Clone, Debug, Serialize)]
pub struct CauseRow {
    /// What it is.
    pub what: String,
    /// ms.
    pub ms: String,
    /// Share of all ranks' step time.
    pub share: String,
}

/// Builds the page's view of `j`.
pub fn build(j: &JobAnalysis) -> JobView {
    let ranks: Vec<i64> = j.ranks.iter().map(|r| r.rank).collect();
    let world = j.world_size.map_or(String::new(), |w| format!(" of {w}"));
    let rank_time: i64 = j.ranks.iter().map(|r| r.breakdown.window_ns).sum();
    let s = &j.summary;
    let top_culprit = j.findings.iter().find_map(|f| f.culprit_rank);
    let cards = vec![
        Card {
            label: "Step time".into(),
            value: s.step_time_ns.map_or("-".into(), |t| format!("{} ms", ms(t))),
            sub: "median of the job's steps, first rank's start to last rank's end".into(),
        },
        Card {
            label: "Waiting for other ranks".into(),
            value: percent(s.total_wait_ns, rank_time),
            sub: format!("of all ranks' step time ({} ms)", ms(s.total_wait_ns)),
        },
        Card {
            label: "Top finding".into(),
            value: top_culprit.map_or("-".into(), |r| format!("rank {r}")),
            sub: j
                .findings
                .first()
                .map_or("no rank held the others back".into(), saves),
        },
    ];
    let aligned: Vec<_> = j
        .alignment
        .ranks
        .iter()
        .filter(|a| a.offset_ns.is_some())
        .collect();
    let clocks =
        format!(
        "{} of {} ranks aligned to rank {}'s clock on {} collectives; residual up to {} (median), {} (max)",
        aligned.len(),
        j.ranks.len(),
        j.alignment.reference_rank.map_or("-".into(), |r| r.to_string()),
        j.collectives.len(),
        duration(aligned.iter().filter_map(|a| a.residual_median_ns).max().unwrap_or(0)),
        duration(aligned.iter().filter_map(|a| a.residual_max_ns).max().unwrap_or(0)),
    );
    let findings = j
        .findings
        .iter()
        .take(MAX_FINDINGS)
        .enumerate()
        .map(|(i, f)| {
            let mut facts = Vec::new();
            if let Some(r) = f.culprit_rank {
                facts.push(format!("culprit rank {r}"));
            }
            if let Some(c) = &f.cause {
                facts.push(format!("cause: {}", job_cause_label(c)));
            }
            if f.total_wait_ns > 0 {
                facts.push(format!("others waited {} ms in all", ms(f.total_wait_ns)));
            }
            FindingView {
                n: i + 1,
                id: f.id.clone(),
                title: f.title.clone(),
                saves: saves(f),
                facts: facts.join(" · "),
                hint: f.hint.clone(),
            }
        })
        .collect();
    JobView {
        title: format!("Job of {} ranks: who held it back", j.ranks.len()),
        generator: format!("gapscope {}", env!("CARGO_PKG_VERSION")),
        ranks_text: format!("{} ranks{world} ({})", j.ranks.len(), rank_list(&ranks)),
        steps_text: match (j.steps.first(), j.steps.last()) {
            (Some(a), Some(b)) if a.step == b.step => format!("step #{}", a.step),
            (Some(a), Some(b)) => format!("{} steps #{}..#{}", j.steps.len(), a.step, b.step),
            _ => "no steps".into(),
        },
        cards,
        clocks,
        findings,
        more_findings: j.findings.len().saturating_sub(MAX_FINDINGS),
        heat: heat(j),
        ranks: rank_rows(j),
        more_ranks: j.ranks.len().saturating_sub(MAX_RANKS),
        steps: step_rows(j),
        causes: s
            .top_causes
            .iter()
            .take(10)
            .map(|c| CauseRow {
                what: job_loss_label(&c.kind, &c.cause),
                ms: ms(c.ns),
                share: format!("{:.1}%", c.share * 100.0),
            })
            .collect(),
        warnings: j.warnings.clone(),
    }
}

/// The fill of a wait share.
pub fn heat_fill(share: f64) -> &'static str {
    HEAT.iter()
        .find(|(upto, _)| share < *upto)
        .map_or(HEAT[HEAT.len() - 1].1, |h| h.1)
}

fn heat(j: &JobAnalysis) -> Heat {
    let steps: Vec<_> = j.steps.iter().take(MAX_STEPS).collect();
    let ranks: Vec<i64> = j.ranks.iter().take(MAX_RANKS).map(|r| r.rank).collect();
    let mut cells = Vec::new();
    for (c, s) in steps.iter().enumerate() {
        for (r, &rank) in ranks.iter().enumerate() {
            let Some(rs) = s.ranks.iter().find(|x| x.rank == rank) else {
                continue;
            };
            let dur = (rs.end_ns - rs.start_ns).max(1);
            let share = rs.wait_ns as f64 / dur as f64;
            let mut title = format!(
                "rank {rank}, step {}: waited {} ms for other ranks ({:.1}% of its {} ms step)",
                s.step,
                ms(rs.wait_ns),
                share * 100.0,
                ms(dur)
            );
            if rs.late > 0 {
                title += &format!(
                    "; late at {} collective{}: the others waited {} ms for it",
                    rs.late,
                    if rs.late == 1 { "" } else { "s" },
                    ms(rs.caused_wait_ns)
                );
            }
            cells.push(HeatCell {
                x: LEFT + c as u32 * CELL_W,
                y: TOP + r as u32 * CELL_H,
                fill: heat_fill(share),
                culprit: rs.late > 0,
                title,
            });
        }
    }
    let every = (ranks.len() / 32).max(1);
    let rows = ranks
        .iter()
        .enumerate()
        .filter(|(i, _)| i % every == 0)
        .map(|(i, r)| HeatLabel {
            x: LEFT - 6,
            y: TOP + i as u32 * CELL_H + CELL_H - 5,
            text: format!("rank {r}"),
        })
        .collect();
    let every = (steps.len() / 25).max(1);
    let cols = steps
        .iter()
        .enumerate()
        .filter(|(i, _)| i % every == 0)
        .map(|(i, s)| HeatLabel {
            x: LEFT + i as u32 * CELL_W + CELL_W / 2,
            y: TOP - 7,
            text: format!("#{}", s.step),
        })
        .collect();
    let mut lo = 0.0;
    let legend = HEAT
        .iter()
        .map(|&(upto, fill)| {
            let text = if upto.is_infinite() {
                format!("≥ {:.0}%", lo * 100.0)
            } else {
                format!("{:.0}–{:.0}%", lo * 100.0, upto * 100.0)
            };
            lo = upto;
            LegendItem { fill, text }
        })
        .collect();
    let mut note = Vec::new();
    if j.steps.len() > MAX_STEPS {
        note.push(format!("the first {MAX_STEPS} of {} steps", j.steps.len()));
    }
    if j.ranks.len() > MAX_RANKS {
        note.push(format!("the first {MAX_RANKS} of {} ranks", j.ranks.len()));
    }
    Heat {
        width: LEFT + steps.len().max(1) as u32 * CELL_W + 4,
        height: TOP + ranks.len().max(1) as u32 * CELL_H + 4,
        cells,
        rows,
        cols,
        legend,
        note: if note.is_empty() {
            String::new()
        } else {
            format!("Drawn: {}.", note.join(", "))
        },
    }
}

fn rank_rows(j: &JobAnalysis) -> Vec<RankRow> {
    j.ranks
        .iter()
        .take(MAX_RANKS)
        .map(|r| {
            let b = &r.breakdown;
            let a = j.alignment.ranks.iter().find(|a| a.rank == r.rank);
            let waiting = r.exposed_wait_ns.min(b.communication_ns);
            RankRow {
                rank: r.rank,
                step: r.step_time_median_ns.map_or("-".into(), ms),
                compute: percent(b.compute_ns, b.window_ns),
                waiting: percent(waiting, b.window_ns),
                communication: percent(b.communication_ns - waiting, b.window_ns),
                copies: percent(b.memcpy_ns + b.memset_ns, b.window_ns),
                idle: percent(b.idle_ns, b.window_ns),
                idle_mostly: r
                    .idle_by_cause_ns
                    .top()
                    .map_or("-".into(), |c| c.label().to_string()),
                late: r.late,
                caused: if r.caused_wait_ns > 0 {
                    format!("{} ms", ms(r.caused_wait_ns))
                } else {
                    "-".into()
                },
                offset: a.and_then(|a| a.offset_ns).map_or("not aligned".into(), duration),
                matched_by: a.map_or("-".into(), |a| a.match_label()),
                residual: a.and_then(|a| a.residual_median_ns).map_or("-".into(), duration),
                source: r.source.clone(),
            }
        })
        .collect()
}

fn step_rows(j: &JobAnalysis) -> Vec<StepRow> {
    j.steps
        .iter()
        .take(MAX_STEPS)
        .map(|s| {
            let (rank, by, collective) = match &s.worst {
                Some(w) => (
                    w.rank.to_string(),
                    duration(w.lateness_ns),
                    format!("{} #{}", w.collective, w.ordinal),
                ),
                None => ("-".into(), "-".into(), "-".into()),
            };
            StepRow {
                step: s.step,
                span: ms(s.span_ns),
                collectives: s.collectives,
                late: s.late_collectives,
                rank,
                by,
                collective,
                waited: ms(s.total_wait_ns),
            }
        })
        .collect()
}

/// `saves ~12.00 ms` (`~850.0 µs`: each in its unit), or `saves at most
/// ~12.00 ms` when ranks of the job were not traced (the culprit may not
/// have been the last); ` over 2 steps` when summed over several; or the
/// bound of a saving the trace cannot estimate.
fn saves(f: &JobFinding) -> String {
    if let Some(bound) = f.savings_bound_ns {
        return format!(
            "saving not estimable (at most ~{}{})",
            duration(bound),
            f.over_steps()
        );
    }
    let bound = if f.untraced_ranks > 0 { "at most " } else { "" };
    format!("saves {bound}~{}{}", duration(f.est_savings_ns), f.over_steps())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heat_bins() {
        assert_eq!(heat_fill(0.0), "#fff5f0");
        assert_eq!(heat_fill(0.07), "#fcbba1");
        assert_eq!(heat_fill(0.45), "#de2d26");
        assert_eq!(heat_fill(0.9), "#a50f15");
    }
}
