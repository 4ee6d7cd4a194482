//! Hands a DataFrame to Python through the Arrow C stream interface (the
//! `__arrow_c_stream__` PyCapsule protocol): polars (`pl.DataFrame(obj)`),
//! pyarrow (`pa.table(obj)`) and others import its buffers without a copy,
//! whatever their version.

use polars::prelude::*;
use polars_arrow::array::{Array, StructArray};
use polars_arrow::datatypes::{ArrowDataType, Field};
use polars_arrow::ffi::{export_iterator, ArrowArrayStream};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

/// The stream, made `Send` for the capsule: its batches are immutable
/// Arrow arrays (reference counted, never written after export).
#[repr(transparent)]
struct Stream(ArrowArrayStream);
// SAFETY: the stream's private data owns boxed arrays of Arc'd buffers that
// nothing mutates; Arrow consumers may read it from any thread.
unsafe impl Send for Stream {}

/// One table, ready to be read by any Arrow consumer.
#[pyclass(frozen, module = "gapscope._gapscope")]
pub struct ArrowTable {
    df: DataFrame,
}

impl ArrowTable {
    /// Wraps `df`.
    pub fn new(mut df: DataFrame) -> Self {
        df.rechunk_mut_par();
        ArrowTable { df }
    }
}

#[pymethods]
impl ArrowTable {
    /// The Arrow PyCapsule protocol: a stream of record batches as struct
    /// arrays. `requested_schema` is ignored (the schema is fixed).
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let compat = CompatLevel::newest();
        let fields: Vec<Field> = self
            .df
            .columns()
            .iter()
            .map(|c| c.field().to_arrow(compat))
            .collect();
        let dtype = ArrowDataType::Struct(fields);
        let batches: Vec<PolarsResult<Box<dyn Array>>> = self
            .df
            .iter_chunks(compat, false)
            .map(|batch| {
                let height = batch.height();
                let arrays = batch.into_arrays();
                Ok(StructArray::try_new(dtype.clone(), height, arrays, None)?.boxed())
            })
            .collect();
        let stream = export_iterator(Box::new(batches.into_iter()), Field::new("".into(), dtype, false));
        PyCapsule::new_with_value(py, Stream(stream), c"arrow_array_stream")
    }

    /// Rows.
    fn __len__(&self) -> usize {
        self.df.height()
    }
}
