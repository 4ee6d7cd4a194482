//! `gapscope._gapscope`: the Rust side of the `gapscope` Python package.
//! It imports and analyses a trace with the same code as the command line
//! (no subprocess, no JSON text in between) and builds the tables users get
//! as polars DataFrames. The Python side (python/gapscope/) wraps it.

mod columns;
mod export;
mod load;
mod tables;

use columns::StrPool;
use export::ArrowTable;
use gapscope_analyzers::analysis::{analyze, Analysis, AnalyzeOptions};
use gapscope_analyzers::attribution::OpContext;
use gapscope_analyzers::launch_stats::{launches, Launch};
use gapscope_analyzers::segments::{IdleAnalyzer, IdleSegment};
use gapscope_analyzers::window::{self, parse_steps, parse_time_window, WindowOptions};
use gapscope_collectors::kineto::{ReadLimits, TimeWindow};
use gapscope_collectors::trace::Trace;
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::OnceLock;

create_exception!(
    gapscope,
    GapscopeError,
    PyException,
    "A trace could not be read or analysed; the message is gapscope's one line: which file, what is wrong, what to do."
);

/// One analysed trace: the analysed part of the trace, the analysis, and
/// what the tables are built from, kept so that tables are made on first
/// use and the summary costs nothing more.
#[pyclass(frozen, module = "gapscope._gapscope")]
struct Session {
    trace: Trace,
    analysis: Analysis,
    warnings: Vec<String>,
    derived: OnceLock<Derived>,
}

/// What the tables read besides the trace and the analysis.
struct Derived {
    segments: Vec<(u32, Vec<IdleSegment>)>,
    launches: Vec<Launch>,
    context: OpContext,
    pool: StrPool,
}

impl Session {
    fn derived(&self) -> &Derived {
        self.derived.get_or_init(|| {
            let t = &self.trace;
            let idle = IdleAnalyzer::new(t);
            let span = window::window(t).span;
            let segments = self
                .analysis
                .devices
                .iter()
                .map(|d| (d.device, idle.segments(d.device, span)))
                .collect();
            Derived {
                segments,
                launches: launches(t),
                context: idle.context().clone(),
                pool: StrPool::new(&t.strings, tables::NAMES),
            }
        })
    }
}

#[pymethods]
impl Session {
    /// The analysis as Python objects, shaped as `analyze --format json`
    /// writes it (docs/json-schema.md).
    fn summary<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let value =
            serde_json::to_value(&self.analysis).map_err(|e| GapscopeError::new_err(e.to_string()))?;
        to_python(py, &value)
    }

    /// The warnings the command line would print (a trace read only in
    /// part, events skipped), one line each.
    fn warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }

    /// The table `name` as an Arrow stream (`gaps`, `steps`,
    /// `idle_by_cause`, `kernels`, `ops`, `launches`).
    fn table(&self, py: Python<'_>, name: &str) -> PyResult<ArrowTable> {
        let df = py.detach(|| {
            let d = self.derived();
            let inp = tables::Inputs {
                trace: &self.trace,
                analysis: &self.analysis,
                segments: &d.segments,
                launches: &d.launches,
                context: &d.context,
                pool: &d.pool,
            };
            match name {
                "gaps" => Some(tables::gaps(&inp)),
                "steps" => Some(tables::steps(&inp)),
                "idle_by_cause" => Some(tables::idle_by_cause(&inp)),
                "kernels" => Some(tables::kernels(&inp)),
                "ops" => Some(tables::ops(&inp)),
                "launches" => Some(tables::launches(&inp)),
                _ => None,
            }
        });
        match df {
            Some(Ok(df)) => Ok(ArrowTable::new(df)),
            Some(Err(e)) => Err(GapscopeError::new_err(format!("table {name}: {e}"))),
            None => Err(pyo3::exceptions::PyKeyError::new_err(format!(
                "no table named {name}"
            ))),
        }
    }
}

/// Imports and analyses one trace file, as `gapscope analyze` does, with
/// the GIL released.
#[pyfunction]
#[pyo3(signature = (path, steps=None, exclude_last_step=false, time_window=None))]
fn analyze_file(
    py: Python<'_>,
    path: PathBuf,
    steps: Option<String>,
    exclude_last_step: bool,
    time_window: Option<String>,
) -> PyResult<Session> {
    let err = GapscopeError::new_err;
    let steps = match steps.as_deref() {
        Some(s) => Some(parse_steps(s).map_err(|e| err(format!("steps {s}: {e}")))?),
        None => None,
    };
    let time = match time_window.as_deref() {
        Some(text) => Some((
            text,
            parse_time_window(text).map_err(|e| err(format!("time_window {text}: {e}")))?,
        )),
        None => None,
    };
    let options = AnalyzeOptions {
        window: WindowOptions {
            steps,
            exclude_last_step,
        },
        time_window: time.map(|(_, t)| t),
        ..AnalyzeOptions::default()
    };
    let limits = ReadLimits {
        max_events: None,
        time_window: time.map(|(_, t)| TimeWindow {
            start: t.start_ns,
            end: t.end_ns,
        }),
    };
    py.detach(|| {
        let imported = load::load(&path, &limits)?;
        let name = path.display().to_string();
        if let Some((text, t)) = time {
            let extent = imported.extent.unwrap_or((0, 0));
            window::check_time_window(&imported.trace, &options.window, t, extent)
                .map_err(|e| load::one_line(&e.message(&name, text)))?;
        }
        let mut warnings: Vec<String> = imported
            .warnings(&name)
            .iter()
            .map(|w| load::one_line(w))
            .collect();
        warnings.extend(skipped_warning(&name, &imported.trace));
        let analysis = analyze(&imported.trace, &options);
        // The tables read the analysed part of the trace; keep only that.
        let selected = match window::selection(&imported.trace, &options.window, options.time_window) {
            Cow::Owned(t) => Some(t),
            Cow::Borrowed(_) => None,
        };
        let trace = selected.unwrap_or(imported.trace);
        Ok(Session {
            trace,
            analysis,
            warnings,
            derived: OnceLock::new(),
        })
    })
    .map_err(|e: String| err(e))
}

/// The command line's line for events the importer skipped.
fn skipped_warning(name: &str, trace: &Trace) -> Option<String> {
    let skipped: Vec<(&str, u64)> = trace.diagnostics.skipped().collect();
    let n: u64 = skipped.iter().map(|(_, v)| v).sum();
    if n == 0 {
        return None;
    }
    let reasons: Vec<String> = skipped.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    let events = if n == 1 { "event" } else { "events" };
    Some(format!("{name}: skipped {n} {events} ({})", reasons.join(", ")))
}

/// A JSON value as Python objects (dict, list, int, float, str, bool, None).
fn to_python<'py>(py: Python<'py>, v: &serde_json::Value) -> PyResult<Bound<'py, PyAny>> {
    use serde_json::Value;
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => b.into_pyobject(py)?.to_owned().into_any(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any()
            } else {
                n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any()
            }
        }
        Value::String(s) => s.into_pyobject(py)?.into_any(),
        Value::Array(a) => {
            let list = PyList::empty(py);
            for x in a {
                list.append(to_python(py, x)?)?;
            }
            list.into_any()
        }
        Value::Object(o) => {
            let dict = PyDict::new(py);
            for (k, x) in o {
                dict.set_item(k, to_python(py, x)?)?;
            }
            dict.into_any()
        }
    })
}

#[pymodule]
fn _gapscope(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("GapscopeError", m.py().get_type::<GapscopeError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<Session>()?;
    m.add_class::<ArrowTable>()?;
    m.add_function(wrap_pyfunction!(analyze_file, m)?)?;
    Ok(())
}
