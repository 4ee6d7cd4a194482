//! [`BenchRecord`]: one line of a bench-results file (JSON lines, schema
//! in docs/bench-results.md), the one definition that the model runner
//! (`torch`, feature `torch`) writes and `gapscope diff` reads
//! (`gapscope_analyzers::diff::bench`). Always built: reading needs no
//! libtorch.

use crate::trace::Ns;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The `schema` value of the current bench-results format.
pub const BENCH_SCHEMA: &str = "gapscope-bench/1";

/// One line of a bench-results file: one model in one configuration, as
/// `gapscope bench` writes it and `gapscope diff` reads it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchRecord {
    /// [`BENCH_SCHEMA`].
    pub schema: String,
    /// Model name (`resnet50`).
    pub model: String,
    /// What was run: mode, device, batch size, precision, ... Part of the
    /// key that pairs base and new records.
    #[serde(default)]
    pub config: BTreeMap<String, ConfigValue>,
    /// `ok`, or `error` when the model failed to run.
    #[serde(default = "ok")]
    pub status: String,
    /// Why it failed (with `status: error`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Wall time of each measured iteration, ns (warm-up excluded).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub times_ns: Vec<Ns>,
    /// Fastest iteration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_ns: Option<Ns>,
    /// Median iteration (the lower-rounded mean of the two middle ones for
    /// an even count).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub median_ns: Option<Ns>,
    /// Slowest iteration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_ns: Option<Ns>,
    /// Samples per second at the median time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throughput_per_s: Option<f64>,
    /// Loss after the last train step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_loss: Option<f64>,
    /// Peak resident memory of the process while this model ran, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_cpu_memory_bytes: Option<u64>,
    /// Peak bytes allocated by libtorch's CUDA caching allocator (absent
    /// on CPU runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_gpu_memory_bytes: Option<u64>,
    /// libtorch's version (empty when the file does not say).
    #[serde(default)]
    pub torch_version: String,
}

impl BenchRecord {
    /// A record of `model` in `config` with status `ok` and nothing
    /// measured yet.
    pub fn new(model: String, config: BTreeMap<String, ConfigValue>) -> BenchRecord {
        BenchRecord {
            schema: BENCH_SCHEMA.to_string(),
            model,
            config,
            status: ok(),
            error: None,
            times_ns: Vec::new(),
            min_ns: None,
            median_ns: None,
            max_ns: None,
            throughput_per_s: None,
            final_loss: None,
            peak_cpu_memory_bytes: None,
            peak_gpu_memory_bytes: None,
            torch_version: String::new(),
        }
    }

    /// The key that pairs records: `model` plus the config, `k=v` sorted by
    /// key (`resnet50 batch_size=32 device=cuda mode=train`).
    pub fn key(&self) -> String {
        let mut k = self.model.clone();
        for (name, v) in &self.config {
            k.push_str(&format!(" {name}={v}"));
        }
        k
    }
}

fn ok() -> String {
    "ok".to_string()
}

/// One config value: a string, number or flag as the runner wrote it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ConfigValue {
    /// `"train"`, `"cuda"`.
    Text(String),
    /// `32`.
    Int(i64),
    /// `0.5`.
    Float(f64),
    /// `true`.
    Flag(bool),
}

impl std::fmt::Display for ConfigValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigValue::Text(s) => f.write_str(s),
            ConfigValue::Int(v) => write!(f, "{v}"),
            ConfigValue::Float(v) => write!(f, "{v}"),
            ConfigValue::Flag(v) => write!(f, "{v}"),
        }
    }
}
