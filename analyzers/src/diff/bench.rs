//! Bench results (JSON lines written by `gapscope bench`, schema in
//! docs/bench-results.md) and their comparison: per model/config, the
//! relative change of the median time and of peak CPU/GPU memory, and
//! whether it is a regression.
//!
//! Noise guard: a time change is only a regression when it is beyond the
//! threshold *and* beyond the runs' own noise, measured as half the wider
//! of the two relative spreads `(max − min) / median`:
//!
//! ```text
//! base  min 99  median 100  max 101    spread 2%
//! new   min 108 median 110  max 112    spread 3.6%   change +10% > 7%, > 1.8%: regression
//! new'  min 95  median 109  max 135    spread 37%    change +9% > 7%, < 18%: noisy, not fired
//! ```
//!
//! Medians make one slow sample harmless; the spread guard makes a pair of
//! runs that disagree with themselves harmless. Memory peaks are single
//! numbers per run and are compared against their own threshold.

use super::{Regression, Thresholds};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub use gapscope_collectors::bench_record::{BenchRecord, ConfigValue, BENCH_SCHEMA};

/// Checks what the JSON shape cannot: the schema version, times present
/// and positive, each model/config once. `Err` names the 0-based record and
/// the problem.
pub fn validate(records: &[BenchRecord]) -> Result<(), (usize, String)> {
    if records.is_empty() {
        return Err((0, "no bench records".to_string()));
    }
    for (i, rec) in records.iter().enumerate() {
        let err = |m: String| Err((i, m));
        if rec.schema != BENCH_SCHEMA {
            return err(format!(
                "schema `{}` is not {BENCH_SCHEMA}, the one this gapscope reads",
                rec.schema
            ));
        }
        if rec.status == "ok" && rec.times_ns.is_empty() {
            return err(format!("`{}` has status ok but no times_ns", rec.key()));
        }
        if rec.times_ns.iter().any(|&t| t <= 0) {
            return err(format!("`{}` has a time that is not positive", rec.key()));
        }
        if records[..i].iter().any(|r| r.key() == rec.key()) {
            return err(format!("`{}` appears twice", rec.key()));
        }
    }
    Ok(())
}

/// Minimum, median and maximum of a run's time samples, ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// Fastest sample.
    pub min_ns: i64,
    /// Median (mean of the two middle samples for an even count).
    pub median_ns: f64,
    /// Slowest sample.
    pub max_ns: i64,
    /// Number of samples.
    pub samples: usize,
}

impl Spread {
    /// The spread of `times`; `None` when empty.
    pub fn of(times: &[i64]) -> Option<Spread> {
        let mut t = times.to_vec();
        t.sort_unstable();
        let n = t.len();
        let median_ns = match n {
            0 => return None,
            _ if n % 2 == 1 => t[n / 2] as f64,
            _ => (t[n / 2 - 1] as f64 + t[n / 2] as f64) / 2.0,
        };
        Some(Spread {
            min_ns: t[0],
            median_ns,
            max_ns: t[n - 1],
            samples: n,
        })
    }

    /// `(max − min) / median`.
    pub fn relative(&self) -> f64 {
        (self.max_ns - self.min_ns) as f64 / self.median_ns
    }
}

/// Verdict on one compared metric.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Worse by more than the threshold (and, for time, the noise).
    Regression,
    /// Worse by more than the threshold but within the runs' noise.
    Noisy,
    /// Better by more than the threshold (and the noise).
    Improvement,
    /// Within the threshold.
    Same,
}

/// One metric of one model/config, base against new.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetricChange {
    /// Base value (median time in ns, or peak bytes).
    pub base: f64,
    /// New value.
    pub new: f64,
    /// `(new − base) / base`, as a fraction (0.1 = 10% more).
    pub change: f64,
    /// The threshold it was held to, as a fraction.
    pub threshold: f64,
    /// For time: half the wider relative spread, as a fraction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise: Option<f64>,
    /// What it amounts to.
    pub verdict: Verdict,
}

/// One model/config compared.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchChange {
    /// [`BenchRecord::key`].
    pub key: String,
    /// Status in base and in new (`ok`, `error`, `missing`).
    pub status: (String, String),
    /// Time samples of base and new.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread: Option<(Spread, Spread)>,
    /// Median time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<MetricChange>,
    /// Peak CPU memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_memory: Option<MetricChange>,
    /// Peak GPU memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_memory: Option<MetricChange>,
}

/// Two bench-results files compared.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BenchDiff {
    /// One entry per model/config in either file, in base order then new.
    pub changes: Vec<BenchChange>,
    /// What is worse beyond its threshold (and noise).
    pub regressions: Vec<Regression>,
}

/// Compares `new` against `base`.
pub fn diff(base: &[BenchRecord], new: &[BenchRecord], th: &Thresholds) -> BenchDiff {
    let mut out = BenchDiff::default();
    let new_by_key: BTreeMap<String, &BenchRecord> = new.iter().map(|r| (r.key(), r)).collect();
    let base_keys: Vec<String> = base.iter().map(BenchRecord::key).collect();
    for (b, key) in base.iter().zip(&base_keys) {
        let n = new_by_key.get(key).copied();
        let change = compare(key, Some(b), n, th);
        regressions_of(&change, n, &mut out.regressions);
        out.changes.push(change);
    }
    for n in new.iter().filter(|r| !base_keys.contains(&r.key())) {
        out.changes.push(compare(&n.key(), None, Some(n), th));
    }
    out
}

fn status(r: Option<&BenchRecord>) -> String {
    r.map_or_else(|| "missing".to_string(), |r| r.status.clone())
}

fn compare(key: &str, b: Option<&BenchRecord>, n: Option<&BenchRecord>, th: &Thresholds) -> BenchChange {
    let mut c = BenchChange {
        key: key.to_string(),
        status: (status(b), status(n)),
        spread: None,
        time: None,
        cpu_memory: None,
        gpu_memory: None,
    };
    let (Some(b), Some(n)) = (b, n) else { return c };
    if let (Some(sb), Some(sn)) = (Spread::of(&b.times_ns), Spread::of(&n.times_ns)) {
        c.spread = Some((sb, sn));
        c.time = Some(time_change(&sb, &sn, th.time));
    }
    let mem = |x: Option<u64>, y: Option<u64>| match (x, y) {
        (Some(x), Some(y)) if x > 0 => Some(metric(x as f64, y as f64, th.memory, 0.0)),
        _ => None,
    };
    c.cpu_memory = mem(b.peak_cpu_memory_bytes, n.peak_cpu_memory_bytes);
    c.gpu_memory = mem(b.peak_gpu_memory_bytes, n.peak_gpu_memory_bytes);
    c
}

/// The median-time change with its noise guard (module docs).
pub fn time_change(base: &Spread, new: &Spread, threshold: f64) -> MetricChange {
    let noise = base.relative().max(new.relative()) / 2.0;
    let mut m = metric(base.median_ns, new.median_ns, threshold, noise);
    m.noise = Some(noise);
    m
}

fn metric(base: f64, new: f64, threshold: f64, noise: f64) -> MetricChange {
    let change = (new - base) / base;
    let verdict = if change > threshold {
        if change > noise {
            Verdict::Regression
        } else {
            Verdict::Noisy
        }
    } else if change < -threshold && -change > noise {
        Verdict::Improvement
    } else {
        Verdict::Same
    };
    MetricChange {
        base,
        new,
        change,
        threshold,
        noise: None,
        verdict,
    }
}

fn regressions_of(c: &BenchChange, n: Option<&BenchRecord>, out: &mut Vec<Regression>) {
    if c.status.0 == "ok" && c.status.1 == "error" {
        out.push(Regression {
            subject: c.key.clone(),
            metric: "status".to_string(),
            base: 0.0,
            new: 0.0,
            change: 0.0,
            threshold: 0.0,
            detail: format!(
                "ran in base, failed in new: {}",
                n.and_then(|n| n.error.as_deref()).unwrap_or("no error message")
            ),
        });
    }
    let metrics = [
        ("time", &c.time, "median time"),
        ("cpu_memory", &c.cpu_memory, "peak CPU memory"),
        ("gpu_memory", &c.gpu_memory, "peak GPU memory"),
    ];
    for (metric, m, what) in metrics {
        if let Some(m) = m.as_ref().filter(|m| m.verdict == Verdict::Regression) {
            out.push(Regression {
                subject: c.key.clone(),
                metric: metric.to_string(),
                base: m.base,
                new: m.new,
                change: m.change,
                threshold: m.threshold,
                detail: format!(
                    "{what} {:+.1}% (threshold {:.1}%)",
                    m.change * 100.0,
                    m.threshold * 100.0
                ),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(model: &str, times: &[i64], cpu: u64, gpu: u64) -> BenchRecord {
        BenchRecord {
            times_ns: times.to_vec(),
            peak_cpu_memory_bytes: Some(cpu),
            peak_gpu_memory_bytes: Some(gpu),
            ..BenchRecord::new(model.to_string(), BTreeMap::new())
        }
    }

    #[test]
    fn medians_of_odd_and_even_counts() {
        let s = Spread::of(&[5, 1, 3]).unwrap();
        assert_eq!((s.min_ns, s.median_ns, s.max_ns), (1, 3.0, 5));
        assert_eq!(Spread::of(&[4, 1, 3, 2]).unwrap().median_ns, 2.5);
        assert!(Spread::of(&[]).is_none());
    }

    #[test]
    fn one_slow_sample_moves_no_median() {
        // One iteration 3x slower (a GC pause, a clock change): the median
        // stays put, nothing fires.
        let th = Thresholds::default();
        let d = diff(
            &[rec("m", &[100, 100, 101, 99, 100], 10, 10)],
            &[rec("m", &[100, 300, 101, 99, 100], 10, 10)],
            &th,
        );
        assert!(d.regressions.is_empty());
    }

    #[test]
    fn improvement_and_failure() {
        let th = Thresholds::default();
        let mut failed = rec("f", &[], 0, 0);
        failed.status = "error".to_string();
        failed.error = Some("CUDA out of memory".to_string());
        let d = diff(
            &[rec("m", &[100, 101, 99], 10, 10), rec("f", &[10], 1, 1)],
            &[rec("m", &[80, 81, 79], 10, 10), failed],
            &th,
        );
        assert_eq!(d.changes[0].time.as_ref().unwrap().verdict, Verdict::Improvement);
        assert_eq!(d.regressions.len(), 1);
        assert_eq!(d.regressions[0].metric, "status");
        assert!(d.regressions[0].detail.contains("out of memory"));
    }

    #[test]
    fn validation_names_the_record() {
        let good = rec("m", &[1], 1, 1);
        let mut twice = good.clone();
        twice.times_ns = vec![2];
        assert_eq!(validate(std::slice::from_ref(&good)), Ok(()));
        assert!(validate(&[]).is_err());
        assert_eq!(validate(&[good.clone(), twice]).unwrap_err().0, 1);
        let mut negative = good.clone();
        negative.times_ns = vec![0];
        assert!(validate(&[negative]).unwrap_err().1.contains("not positive"));
        let mut future = good;
        future.schema = "gapscope-bench/2".to_string();
        assert!(validate(&[future]).unwrap_err().1.contains("schema"));
    }

    #[test]
    fn key_orders_config() {
        let mut r = rec("resnet50", &[1], 1, 1);
        r.config.insert("mode".into(), ConfigValue::Text("train".into()));
        r.config.insert("batch_size".into(), ConfigValue::Int(32));
        assert_eq!(r.key(), "resnet50 batch_size=32 mode=train");
    }
}
