//! Whole-job analysis: many ranks, one answer.
//!
//! Each rank is summarised on its own ([`summarize_rank`], a pure function
//! of one trace, so ranks run in parallel or as tasks elsewhere); the job
//! analysis ([`analyze_job`]) reads only the summaries:
//!
//! 1. [`align`]: match the same collective across ranks and put every
//!    rank's clock on one (the lowest rank's), with a residual per rank.
//! 2. [`arrivals`]: who arrived when at each collective; each member's time
//!    in it splits into waiting for the last peer and the transfer.
//! 3. [`culprit`]: the waits are put on the last arriver and on what it
//!    was doing instead (its lead-in compared with its peers').
//! 4. [`replay`]: what the job's step would take without a culprit's
//!    delay: the findings' `est_savings_ns`.
//! 5. [`imbalance`], [`exposed`]: ranks that compute more, transfers no
//!    compute hides.
//!
//! The result, [`JobAnalysis`], is plain serializable data (its JSON is
//! versioned by [`JOB_SCHEMA_VERSION`]).

pub mod align;
pub mod arrivals;
pub mod collective;
pub mod culprit;
pub mod exposed;
pub mod finding;
pub mod group;
pub mod imbalance;
pub mod replay;
pub mod summary;

pub use finding::JobFinding;
pub use summary::{summarize, summarize_rank, summarize_selected, RankSummary};

use crate::analysis::Analysis;
use crate::breakdown::Breakdown;
use crate::causes::{Cause, CauseTotals};
use crate::workload::Workload;
use align::{median, Alignment, RankAlignment};
use arrivals::{Clock, Timed};
use culprit::Blamed;
use gapscope_collectors::trace::Ns;
use replay::StepModel;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Version of the [`JobAnalysis`] JSON schema.
pub const JOB_SCHEMA_VERSION: u32 = 1;

/// Thresholds of the job analysis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobOptions {
    /// A collective's last rank counts as late when it arrived at least
    /// this long after the second-last (and beyond the clocks' noise).
    pub min_lateness_ns: Ns,
}

impl Default for JobOptions {
    fn default() -> Self {
        JobOptions {
            min_lateness_ns: 50_000,
        }
    }
}

/// The analysis of a job of several ranks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobAnalysis {
    /// [`JOB_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Always `job` (a single trace's analysis has no `kind`).
    pub kind: String,
    /// The world size the ranks agree on, when they say.
    pub world_size: Option<i64>,
    /// The ranks analysed, by rank.
    pub ranks: Vec<RankReport>,
    /// Ranks below `world_size` with no trace.
    pub missing_ranks: Vec<i64>,
    /// How the ranks' clocks were put on one.
    pub alignment: AlignmentReport,
    /// The job's steps: per step, per rank, and the late ranks.
    pub steps: Vec<JobStep>,
    /// Every collective matched across ranks, in time order.
    pub collectives: Vec<CollectiveReport>,
    /// What to fix, ranked by estimated savings.
    pub findings: Vec<JobFinding>,
    /// The job in a few numbers.
    pub summary: JobSummary,
    /// What could not be analysed, one line each.
    pub warnings: Vec<String>,
}

/// Clock alignment of all ranks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AlignmentReport {
    /// The rank whose clock is the job's (offset 0).
    pub reference_rank: Option<i64>,
    /// Per rank, by rank.
    pub ranks: Vec<RankAlignment>,
}

/// One rank over the whole analysed window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankReport {
    /// The rank.
    pub rank: i64,
    /// Its trace.
    pub source: String,
    /// The GPU its collectives ran on.
    pub device: Option<u32>,
    /// Its steps in the job's steps.
    pub steps: u64,
    /// Median of its step durations, ns.
    pub step_time_median_ns: Option<Ns>,
    /// The device's breakdown summed over its steps (or its window when it
    /// has no steps).
    pub breakdown: Breakdown,
    /// Idle time by cause, summed likewise.
    pub idle_by_cause_ns: CauseTotals,
    /// Time in collectives waiting for a later peer.
    pub wait_ns: Ns,
    /// Time in collectives after the last peer arrived.
    pub transfer_ns: Ns,
    /// The part of `wait_ns` no compute hid.
    pub exposed_wait_ns: Ns,
    /// The part of `transfer_ns` no compute hid.
    pub exposed_transfer_ns: Ns,
    /// Collectives where it was the late rank.
    pub late: u64,
    /// The others' wait at those collectives after the second-last member
    /// arrived: the wait it alone caused.
    pub caused_wait_ns: Ns,
    /// Its own analysis.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub analysis: Option<Box<Analysis>>,
}

/// One step of the job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobStep {
    /// `N` of `ProfilerStep#N`.
    pub step: u64,
    /// Earliest rank's start, ns on the job's clock.
    pub start_ns: Ns,
    /// Latest rank's end, same clock.
    pub end_ns: Ns,
    /// `end_ns - start_ns`: the job's step time.
    pub span_ns: Ns,
    /// Collectives matched in the step.
    pub collectives: u64,
    /// Of them, those with a late rank.
    pub late_collectives: u64,
    /// Sum of every rank's wait.
    pub total_wait_ns: Ns,
    /// The collective with the latest last rank.
    pub worst: Option<StepStraggler>,
    /// The rank that was late most often (most lateness on ties).
    pub most_late_rank: Option<i64>,
    /// Per rank, by rank.
    pub ranks: Vec<RankStepReport>,
}

/// The worst late arrival of a step.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepStraggler {
    /// Collective kind.
    pub collective: String,
    /// Its position among the step's collectives of that kind, from 1.
    pub ordinal: u64,
    /// The last rank.
    pub rank: i64,
    /// Its lead over the second-last.
    pub lateness_ns: Ns,
    /// Everyone's wait at it.
    pub total_wait_ns: Ns,
}

/// One rank in one step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankStepReport {
    /// The rank.
    pub rank: i64,
    /// Start, ns on the job's clock.
    pub start_ns: Ns,
    /// End, same clock.
    pub end_ns: Ns,
    /// The device's breakdown of the step.
    pub breakdown: Breakdown,
    /// Idle time by cause.
    pub idle_by_cause_ns: CauseTotals,
    /// Time in collectives waiting for a later peer.
    pub wait_ns: Ns,
    /// Time in collectives after the last peer arrived.
    pub transfer_ns: Ns,
    /// The part of `wait_ns` no compute hid.
    pub exposed_wait_ns: Ns,
    /// The part of `transfer_ns` no compute hid.
    pub exposed_transfer_ns: Ns,
    /// Collectives where it was the late rank.
    pub late: u64,
    /// The others' wait at those collectives after the second-last member
    /// arrived: the wait it alone caused.
    pub caused_wait_ns: Ns,
}

/// One collective across its ranks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CollectiveReport {
    /// The step it belongs to.
    pub step: Option<u64>,
    /// Its kind.
    pub kind: String,
    /// Its process group, when the trace names it.
    #[serde(default)]
    pub group: Option<String>,
    /// Its sequence number in the process group, when the trace gives it.
    #[serde(default)]
    pub seq: Option<u64>,
    /// Its position among the step's collectives of that kind, from 1.
    pub ordinal: u64,
    /// Ranks taking part.
    pub ranks: u64,
    /// First arrival, ns on the job's clock.
    pub first_arrival_ns: Ns,
    /// Last arrival, same clock.
    pub last_arrival_ns: Ns,
    /// The last rank.
    pub last_rank: i64,
    /// Its lead over the second-last.
    pub lateness_ns: Ns,
    /// Whether that lead counts as late (above the threshold and the noise).
    pub late: bool,
    /// Everyone's wait at it.
    pub total_wait_ns: Ns,
    /// The median member's transfer time.
    pub transfer_ns: Ns,
}

/// The job in a few numbers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobSummary {
    /// Ranks analysed together.
    pub ranks: u64,
    /// Steps of the job.
    pub steps: u64,
    /// Median of the job's step times, ns.
    pub step_time_ns: Option<Ns>,
    /// Every rank's wait for later peers, summed.
    pub total_wait_ns: Ns,
    /// Per rank: its wait as a share of its steps' time.
    pub wait_share: BTreeMap<i64, f64>,
    /// Per rank: its wait, ns.
    pub wait_ns: BTreeMap<i64, Ns>,
    /// The wait the late ranks alone caused (after the second-last member
    /// of each late collective arrived), by what they were doing instead.
    pub wait_by_cause_ns: BTreeMap<String, Ns>,
    /// Idle time summed over ranks, by cause.
    pub idle_by_cause_ns: CauseTotals,
    /// Where the ranks' time was lost, across the job, most first: idle
    /// causes and waiting for peers (by the late rank's cause).
    pub top_causes: Vec<CauseShare>,
}

/// One cause of lost time across the job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CauseShare {
    /// `idle` (the rank's own GPU idle) or `wait` (in a collective, for a
    /// late peer).
    pub kind: String,
    /// The cause (an idle cause, or the late ranks' cause).
    pub cause: String,
    /// Time summed over ranks, ns.
    pub ns: Ns,
    /// As a share of all ranks' step time.
    pub share: f64,
}

/// Everything a timeline view needs beyond [`JobAnalysis`]: each rank's
/// shift onto the job's clock and the timed collectives.
#[derive(Clone, Debug)]
pub struct JobTimeline {
    /// Rank index to job clock.
    pub clock: Clock,
    /// The matched collectives, by last arrival.
    pub timed: Vec<Timed>,
    /// Whether each of `timed` has a late rank.
    pub late: Vec<bool>,
}

/// Analyses a job from its ranks' summaries (any order).
pub fn analyze_job(ranks: &[RankSummary], opts: &JobOptions) -> JobAnalysis {
    analyze_job_timeline(ranks, opts).0
}

/// [`analyze_job`], with the timeline views need.
pub fn analyze_job_timeline(ranks: &[RankSummary], opts: &JobOptions) -> (JobAnalysis, JobTimeline) {
    let alignment: Alignment = align::align(ranks);
    let clock = Clock::new(ranks, &alignment);
    let timed = arrivals::time_instances(ranks, &alignment, &clock);
    let residual: Vec<Ns> = alignment
        .ranks
        .iter()
        .map(|a| a.residual_median_ns.unwrap_or(0))
        .collect();
    let late: Vec<bool> = timed
        .iter()
        .map(|t| culprit::is_significant(t, &residual, opts))
        .collect();
    let matched = culprit::matched_calls(ranks, &timed);
    let blamed: Vec<Blamed> = timed
        .iter()
        .zip(&late)
        .filter(|(_, &l)| l)
        .map(|(t, _)| Blamed {
            timed: t,
            blame: culprit::blame(ranks, &clock, &matched, t),
        })
        .collect();
    let step_numbers: Vec<u64> = ranks
        .iter()
        .enumerate()
        .filter(|(r, _)| clock.shift[*r].is_some())
        .flat_map(|(_, s)| s.steps.iter().map(|x| x.number))
        .collect::<BTreeSet<u64>>()
        .into_iter()
        .collect();
    let models: HashMap<u64, StepModel> = step_numbers
        .iter()
        .map(|&s| (s, StepModel::new(ranks, &clock, &timed, s)))
        .collect();

    // `blamed` holds the late ones of `timed`, in the same order.
    let mut late_blames = blamed.iter().peekable();
    let staggered: Vec<culprit::Staggered> = timed
        .iter()
        .map(|t| {
            let blame = late_blames
                .next_if(|b| std::ptr::eq(b.timed, t))
                .map(|b| &b.blame);
            culprit::staggered_wait(ranks, &clock, &matched, t, blame)
        })
        .collect();
    let staggered_ns: Ns = staggered.iter().map(|s| s.total_ns()).sum();

    let mut findings = culprit::straggler_findings(ranks, &blamed, &models);
    findings.extend(
        timed
            .iter()
            .zip(&staggered)
            .filter_map(|(t, s)| culprit::staggered_finding(ranks, t, s, opts.min_lateness_ns)),
    );
    findings.extend(culprit::consistent_findings(ranks, &blamed, &models));
    // A rank that computes more but never holds anyone back (it arrives
    // early anyway) is not worth a finding.
    findings.extend(
        imbalance::findings(ranks, &clock, &timed, &models, &step_numbers)
            .into_iter()
            .filter(|f| f.est_savings_ns >= opts.min_lateness_ns),
    );
    let steps = job_steps(ranks, &clock, &timed, &late, &step_numbers);
    let workload = Workload::of_all(ranks.iter().map(|r| r.workload));
    findings.extend(exposed::finding(&steps, workload));
    finding::rank_findings(&mut findings);

    let world_size = agreed_world_size(ranks);
    let present: BTreeSet<i64> = ranks.iter().map(|r| r.rank).collect();
    let missing_ranks: Vec<i64> = world_size
        .map(|w| (0..w).filter(|r| !present.contains(r)).collect())
        .unwrap_or_default();
    let mut warnings = Vec::new();
    for a in &alignment.ranks {
        if a.offset_ns.is_none() && ranks.len() > 1 {
            let summary = ranks.iter().find(|r| r.rank == a.rank);
            let gloo = summary
                .filter(|r| r.collectives.is_empty())
                .map_or(0, |r| r.gloo_collectives);
            warnings.push(if gloo > 0 {
                format!(
                    "rank {}: its {gloo} collective{} ran through gloo on the CPU (`gloo:*`), and the job analysis \
                     matches only GPU collective kernels (NCCL, RCCL) across ranks, so its clock cannot be aligned; it \
                     is left out of the cross-rank analysis",
                    a.rank,
                    if gloo == 1 { "" } else { "s" }
                )
            } else {
                format!(
                    "rank {}: none of its collectives matches another rank's, so its clock cannot be aligned; it is \
                     left out of the cross-rank analysis",
                    a.rank
                )
            });
        }
    }
    if !missing_ranks.is_empty() {
        hedge(&mut findings, ranks.len(), &missing_ranks);
        warnings.push(format!(
            "no trace for rank{} {} of {}; the job is analysed without {}",
            if missing_ranks.len() == 1 { "" } else { "s" },
            finding::rank_list(&missing_ranks),
            world_size.unwrap_or(0),
            if missing_ranks.len() == 1 { "it" } else { "them" }
        ));
    }
    let rank_reports = rank_reports(ranks, &timed, &late, &step_numbers);
    let summary = summarize_job(&rank_reports, &steps, &blamed, staggered_ns);
    let collectives = timed
        .iter()
        .zip(&late)
        .map(|(t, &l)| CollectiveReport {
            step: t.step,
            kind: t.kind.clone(),
            group: ranks[t.last().rank].collectives[t.last().call].group.clone(),
            seq: ranks[t.last().rank].collectives[t.last().call].seq,
            ordinal: t.ordinal as u64,
            ranks: t.arrivals.len() as u64,
            first_arrival_ns: t.arrivals[0].start,
            last_arrival_ns: t.last_arrival(),
            last_rank: ranks[t.last().rank].rank,
            lateness_ns: t.lateness_ns,
            late: l,
            total_wait_ns: t.total_wait_ns(),
            transfer_ns: median(t.arrivals.iter().map(|a| a.transfer_ns).collect()),
        })
        .collect();
    let mut alignment_ranks = alignment.ranks.clone();
    alignment_ranks.sort_by_key(|a| a.rank);
    let analysis = JobAnalysis {
        schema_version: JOB_SCHEMA_VERSION,
        kind: "job".into(),
        world_size,
        ranks: rank_reports,
        missing_ranks,
        alignment: AlignmentReport {
            reference_rank: alignment
                .ranks
                .iter()
                .filter(|a| a.offset_ns == Some(0))
                .map(|a| a.rank)
                .min(),
            ranks: alignment_ranks,
        },
        steps,
        collectives,
        findings,
        summary,
        warnings,
    };
    (analysis, JobTimeline { clock, timed, late })
}

/// A job with untraced ranks: a culprit finding names the last of the
/// traced ranks, which an untraced one may have followed, so it says so
/// and its saving is a bound.
fn hedge(findings: &mut [JobFinding], traced: usize, missing: &[i64]) {
    for f in findings.iter_mut().filter(|f| f.culprit_rank.is_some()) {
        f.untraced_ranks = missing.len() as u64;
        f.title.push_str(&format!(
            " (only {traced} of the job's {} ranks were traced: an untraced rank may have been later still, so the \
             saving is at most this)",
            traced + missing.len()
        ));
    }
}

/// The world size the ranks agree on (the most common one given).
fn agreed_world_size(ranks: &[RankSummary]) -> Option<i64> {
    let mut count: BTreeMap<i64, usize> = BTreeMap::new();
    for w in ranks.iter().filter_map(|r| r.world_size) {
        *count.entry(w).or_default() += 1;
    }
    count.into_iter().max_by_key(|&(w, n)| (n, w)).map(|(w, _)| w)
}

/// Per (rank index, step): wait, transfer, exposure, lateness.
#[derive(Clone, Copy, Default)]
struct Tally {
    wait: Ns,
    transfer: Ns,
    exposed_wait: Ns,
    exposed_transfer: Ns,
    late: u64,
    caused: Ns,
}

fn tallies(timed: &[Timed], late: &[bool]) -> HashMap<(usize, Option<u64>), Tally> {
    let mut t: HashMap<(usize, Option<u64>), Tally> = HashMap::new();
    for (c, &is_late) in timed.iter().zip(late) {
        for a in &c.arrivals {
            let e = t.entry((a.rank, c.step)).or_default();
            e.wait += a.wait_ns;
            e.transfer += a.transfer_ns;
            e.exposed_wait += a.exposed_wait_ns;
            e.exposed_transfer += a.exposed_transfer_ns;
        }
        if is_late {
            let e = t.entry((c.last().rank, c.step)).or_default();
            e.late += 1;
            e.caused += c.caused_wait_ns();
        }
    }
    t
}

fn job_steps(
    ranks: &[RankSummary],
    clock: &Clock,
    timed: &[Timed],
    late: &[bool],
    steps: &[u64],
) -> Vec<JobStep> {
    let tally = tallies(timed, late);
    steps
        .iter()
        .map(|&step| {
            let mut per_rank: Vec<RankStepReport> = ranks
                .iter()
                .enumerate()
                .filter_map(|(r, s)| {
                    let st = s.steps.iter().find(|x| x.number == step)?;
                    let t = tally.get(&(r, Some(step))).copied().unwrap_or_default();
                    Some(RankStepReport {
                        rank: s.rank,
                        start_ns: clock.at(r, st.start_ns)?,
                        end_ns: clock.at(r, st.end_ns)?,
                        breakdown: st.breakdown,
                        idle_by_cause_ns: st.idle_by_cause_ns,
                        wait_ns: t.wait,
                        transfer_ns: t.transfer,
                        exposed_wait_ns: t.exposed_wait,
                        exposed_transfer_ns: t.exposed_transfer,
                        late: t.late,
                        caused_wait_ns: t.caused,
                    })
                })
                .collect();
            per_rank.sort_by_key(|r| r.rank);
            let start_ns = per_rank.iter().map(|r| r.start_ns).min().unwrap_or(0);
            let end_ns = per_rank.iter().map(|r| r.end_ns).max().unwrap_or(0);
            let in_step: Vec<(&Timed, bool)> = timed
                .iter()
                .zip(late)
                .filter(|(t, _)| t.step == Some(step))
                .map(|(t, &l)| (t, l))
                .collect();
            let worst = in_step
                .iter()
                .filter(|(_, l)| *l)
                .max_by_key(|(t, _)| (t.lateness_ns, std::cmp::Reverse(t.last_arrival())))
                .map(|(t, _)| StepStraggler {
                    collective: t.kind.clone(),
                    ordinal: t.ordinal as u64,
                    rank: ranks[t.last().rank].rank,
                    lateness_ns: t.lateness_ns,
                    total_wait_ns: t.total_wait_ns(),
                });
            let most_late_rank = per_rank
                .iter()
                .filter(|r| r.late > 0)
                .max_by_key(|r| (r.late, r.caused_wait_ns, std::cmp::Reverse(r.rank)))
                .map(|r| r.rank);
            JobStep {
                step,
                start_ns,
                end_ns,
                span_ns: end_ns - start_ns,
                collectives: in_step.len() as u64,
                late_collectives: in_step.iter().filter(|(_, l)| *l).count() as u64,
                total_wait_ns: in_step.iter().map(|(t, _)| t.total_wait_ns()).sum(),
                worst,
                most_late_rank,
                ranks: per_rank,
            }
        })
        .collect()
}

fn add_breakdown(a: &mut Breakdown, b: &Breakdown) {
    a.window_ns += b.window_ns;
    a.compute_ns += b.compute_ns;
    a.communication_ns += b.communication_ns;
    a.memcpy_ns += b.memcpy_ns;
    a.memset_ns += b.memset_ns;
    a.idle_ns += b.idle_ns;
    a.memcpy_by_kind_ns.htod += b.memcpy_by_kind_ns.htod;
    a.memcpy_by_kind_ns.dtoh += b.memcpy_by_kind_ns.dtoh;
    a.memcpy_by_kind_ns.dtod += b.memcpy_by_kind_ns.dtod;
    a.memcpy_by_kind_ns.other += b.memcpy_by_kind_ns.other;
}

fn add_causes(a: &mut CauseTotals, b: &CauseTotals) {
    for (c, ns) in b.iter() {
        a.add(c, ns);
    }
}

fn rank_reports(ranks: &[RankSummary], timed: &[Timed], late: &[bool], steps: &[u64]) -> Vec<RankReport> {
    let tally = tallies(timed, late);
    let mut out: Vec<RankReport> = ranks
        .iter()
        .enumerate()
        .map(|(r, s)| {
            let mut t = Tally::default();
            for ((rr, _), v) in tally.iter().filter(|((rr, _), _)| *rr == r) {
                let _ = rr;
                t.wait += v.wait;
                t.transfer += v.transfer;
                t.exposed_wait += v.exposed_wait;
                t.exposed_transfer += v.exposed_transfer;
                t.late += v.late;
                t.caused += v.caused;
            }
            let mine: Vec<_> = s.steps.iter().filter(|x| steps.contains(&x.number)).collect();
            let mut breakdown = Breakdown::default();
            let mut idle = CauseTotals::default();
            for st in &mine {
                add_breakdown(&mut breakdown, &st.breakdown);
                add_causes(&mut idle, &st.idle_by_cause_ns);
            }
            if mine.is_empty() {
                if let Some(d) = s
                    .analysis
                    .as_ref()
                    .and_then(|a| a.devices.iter().find(|d| Some(d.device) == s.device))
                {
                    breakdown = d.breakdown;
                    idle = d.idle_by_cause_ns;
                }
            }
            RankReport {
                rank: s.rank,
                source: s.source.clone(),
                device: s.device,
                steps: mine.len() as u64,
                step_time_median_ns: (!mine.is_empty())
                    .then(|| median(mine.iter().map(|x| x.end_ns - x.start_ns).collect())),
                breakdown,
                idle_by_cause_ns: idle,
                wait_ns: t.wait,
                transfer_ns: t.transfer,
                exposed_wait_ns: t.exposed_wait,
                exposed_transfer_ns: t.exposed_transfer,
                late: t.late,
                caused_wait_ns: t.caused,
                analysis: s.analysis.clone(),
            }
        })
        .collect();
    out.sort_by_key(|r| r.rank);
    out
}

/// The job's summary; `staggered` is the part of the waits no single rank
/// caused that staggered step starts explain ([`culprit::staggered_wait`]).
fn summarize_job(ranks: &[RankReport], steps: &[JobStep], blamed: &[Blamed], staggered: Ns) -> JobSummary {
    let mut wait_by_cause: BTreeMap<String, Ns> = BTreeMap::new();
    for b in blamed {
        *wait_by_cause.entry(b.blame.cause.clone()).or_default() += b.timed.caused_wait_ns();
    }
    let mut idle = CauseTotals::default();
    for r in ranks {
        add_causes(&mut idle, &r.idle_by_cause_ns);
    }
    let rank_time: Ns = ranks.iter().map(|r| r.breakdown.window_ns).sum();
    let total_wait: Ns = ranks.iter().map(|r| r.wait_ns).sum();
    let share = |ns: Ns| {
        if rank_time > 0 {
            ns as f64 / rank_time as f64
        } else {
            0.0
        }
    };
    let mut top: Vec<CauseShare> = idle
        .iter()
        .filter(|&(_, ns)| ns > 0)
        .map(|(c, ns): (Cause, Ns)| CauseShare {
            kind: "idle".into(),
            cause: c.name().into(),
            ns,
            share: share(ns),
        })
        .collect();
    let attributed: Ns = wait_by_cause.values().sum();
    for (c, &ns) in &wait_by_cause {
        top.push(CauseShare {
            kind: "wait".into(),
            cause: c.clone(),
            ns,
            share: share(ns),
        });
    }
    // Waits at collectives without a late rank (everyone a little late, or
    // one early rank), and the waits at late ones before their second-last
    // member arrived (several ranks late), have no single culprit; at a
    // step's first collective much of that may be the ranks' staggered
    // step starts.
    let unattributed = (total_wait - attributed).max(0);
    let staggered = staggered.clamp(0, unattributed);
    for (cause, ns) in [
        ("staggered_start", staggered),
        ("no_culprit", unattributed - staggered),
    ] {
        if ns > 0 {
            top.push(CauseShare {
                kind: "wait".into(),
                cause: cause.into(),
                ns,
                share: share(ns),
            });
        }
    }
    top.sort_by(|a, b| b.ns.cmp(&a.ns).then_with(|| a.cause.cmp(&b.cause)));
    JobSummary {
        ranks: ranks.len() as u64,
        steps: steps.len() as u64,
        step_time_ns: (!steps.is_empty()).then(|| median(steps.iter().map(|s| s.span_ns).collect())),
        total_wait_ns: total_wait,
        wait_share: ranks
            .iter()
            .map(|r| {
                let t = r.breakdown.window_ns;
                (r.rank, if t > 0 { r.wait_ns as f64 / t as f64 } else { 0.0 })
            })
            .collect(),
        wait_ns: ranks.iter().map(|r| (r.rank, r.wait_ns)).collect(),
        wait_by_cause_ns: wait_by_cause,
        idle_by_cause_ns: idle,
        top_causes: top,
    }
}
