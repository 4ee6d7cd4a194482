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
use gapscope_analyzers::analysis::AnalyzeOptions;
use gapscope_analyzers::window::{self, parse_steps, parse_time_window, WindowOptions};
use gapscope_analyzers::Session;
use gapscope_collectors::kineto::ReadLimits;
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use std::path::PathBuf;
use std::sync::OnceLock;

create_exception!(
    gapscope,
    GapscopeError,
    PyException,
    "A trace could not be read or analysed; the message is gapscope's one line: which file, what is wrong, what to do."
);

/// One analysed trace: gapscope's [`Session`] of it (selection, window,
/// idle segments, findings, kernel table, launches, each computed once and
/// kept), which the summary and every table read.
#[pyclass(name = "Session", frozen, module = "gapscope._gapscope")]
struct PySession {
    session: Session<'static>,
    warnings: Vec<String>,
    /// The string pool the tables' string columns point into, made on the
    /// first table.
    pool: OnceLock<StrPool>,
}

#[pymethods]
impl PySession {
    /// The analysis as Python objects, shaped as `analyze --format json`
    /// writes it (docs/json-schema.md).
    fn summary<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let value = py
            .detach(|| serde_json::to_value(self.session.analysis()))
            .map_err(|e| GapscopeError::new_err(e.to_string()))?;
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
            let s = &self.session;
            let inp = tables::Inputs {
                session: s,
                pool: self
                    .pool
                    .get_or_init(|| StrPool::new(&s.trace().strings, tables::NAMES)),
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
) -> PyResult<PySession> {
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
        time_window: time.map(|(_, t)| t),
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
        warnings.extend(imported.trace.diagnostics.skipped_line(&name));
        let session = Session::owned(imported.trace, &options);
        // Analysed here, with the GIL released: the summary and the tables
        // then only read it.
        session.analysis();
        Ok(PySession {
            session,
            warnings,
            pool: OnceLock::new(),
        })
    })
    .map_err(|e: String| err(e))
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
    m.add_class::<PySession>()?;
    m.add_class::<ArrowTable>()?;
    m.add_function(wrap_pyfunction!(analyze_file, m)?)?;
    Ok(())
}
