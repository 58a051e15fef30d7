//! A find's records as a `pyarrow.Table` built in Rust: every page fetched here (the
//! continuation followed without a trip through Python), the JSON values decoded into Arrow
//! columns (`arrow_columns`), the table handed to pyarrow through the Arrow C data interface. No
//! Python object is made per record.

use crate::errors;
use arrow_array::ffi::{to_ffi, FFI_ArrowArray};
use arrow_array::{Array, ArrayRef, BinaryArray, RecordBatch, StringArray, StructArray};
use arrow_schema::ffi::FFI_ArrowSchema;
use arrow_schema::{ArrowError, DataType, Field, Schema};
use bytes::Bytes;
use pyo3::prelude::*;
use std::sync::Arc;

/// Rows per record batch handed to pyarrow.
const BATCH_ROWS: usize = 64 << 10;

/// Most columns times rows a table is built with in Rust. Every column gets a slot in every
/// row, so records each with attributes of their own (`{"k0":0}`, `{"k1":0}`, ...) would grow
/// the table with the square of their number; past this the rows are built in Python, which
/// grows with the records.
const MAX_CELLS: usize = 1 << 25;

/// What a whole find fetched: its records, its pages and the last page's summary.
pub struct Found {
    pub records: Vec<(Bytes, Bytes)>,
    pub pages: u64,
    pub summary: serde_json::Value,
}

/// Runs the query `doc` page after page with `run` (one page: its records and summary)
/// until a summary has no continuation.
pub fn all_pages(
    mut doc: serde_json::Value,
    mut run: impl FnMut(&serde_json::Value) -> PyResult<(Vec<(Bytes, Bytes)>, serde_json::Value)>,
) -> PyResult<Found> {
    let mut found = Found {
        records: Vec::new(),
        pages: 0,
        summary: serde_json::Value::Null,
    };
    loop {
        let (records, summary) = run(&doc)?;
        found.records.extend(records);
        found.pages += 1;
        let cont = summary.get("continuation").cloned();
        found.summary = summary;
        match cont {
            Some(c) if !c.is_null() && c.as_str() != Some("") => {
                doc["continuation"] = c;
            }
            _ => return Ok(found),
        }
    }
}

/// The records as a `pyarrow.Table`: `_pk` first (utf8 where every key is UTF-8, else
/// binary), then a column per attribute of the JSON objects (types inferred over every
/// record). `None` where a value is not a JSON object or already has a `_pk` attribute: the
/// caller then builds the rows in Python.
pub fn table(
    py: Python<'_>,
    records: &[(Bytes, Bytes)],
    keys_only: bool,
) -> PyResult<Option<PyObject>> {
    let batches = match py.allow_threads(|| batches(records, keys_only)) {
        Ok(Some(b)) => b,
        Ok(None) | Err(_) => return Ok(None),
    };
    let pyarrow = py.import("pyarrow")?;
    let record_batch = pyarrow.getattr("RecordBatch")?;
    let mut out = Vec::with_capacity(batches.len());
    for batch in &batches {
        let data = StructArray::from(batch.clone()).into_data();
        let (array, schema) =
            to_ffi(&data).map_err(|e| errors::InternalError::new_err(e.to_string()))?;
        let (array, schema) = (Box::new(array), Box::new(schema));
        let array_ptr = &*array as *const FFI_ArrowArray as usize;
        let schema_ptr = &*schema as *const FFI_ArrowSchema as usize;
        // pyarrow moves the structs' contents out (their release callbacks are cleared), so
        // dropping the boxes afterwards frees nothing twice.
        out.push(record_batch.call_method1("_import_from_c", (array_ptr, schema_ptr))?);
    }
    let schema = match out.first() {
        Some(b) => b.getattr("schema")?,
        None => return Ok(None),
    };
    let table = pyarrow
        .getattr("Table")?
        .call_method1("from_batches", (out, schema))?;
    Ok(Some(table.unbind()))
}

/// The record batches, or `None` where the values do not make a table (see [`table`]).
fn batches(
    records: &[(Bytes, Bytes)],
    keys_only: bool,
) -> Result<Option<Vec<RecordBatch>>, ArrowError> {
    let objects = !keys_only && records.iter().any(|(_, v)| !v.is_empty());
    if objects && !records.iter().all(|(_, v)| first_byte(v) == Some(b'{')) {
        return Ok(None);
    }
    let parts = parts(records);
    let values_schema = if objects {
        match scan(&parts) {
            Some(schema) if columns(schema.fields()).saturating_mul(records.len()) <= MAX_CELLS => {
                schema
            }
            _ => return Ok(None),
        }
    } else {
        Schema::empty()
    };
    if values_schema.field_with_name("_pk").is_ok() {
        return Ok(None);
    }
    let utf8 = records.iter().all(|(k, _)| std::str::from_utf8(k).is_ok());
    let pk_type = if utf8 {
        DataType::Utf8
    } else {
        DataType::Binary
    };
    let mut fields = vec![Arc::new(Field::new("_pk", pk_type, false))];
    fields.extend(values_schema.fields().iter().cloned());
    let schema = Arc::new(Schema::new(fields));
    // Each part on a thread of its own, its batches in order.
    let per_part: Vec<Result<Option<Vec<RecordBatch>>, ArrowError>> = std::thread::scope(|s| {
        let handles: Vec<_> = parts
            .iter()
            .map(|part| {
                let (schema, values_schema) = (&schema, &values_schema);
                s.spawn(move || part_batches(part, schema, values_schema, utf8, objects))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(ArrowError::ComputeError("a decoder panicked".into())))
            })
            .collect()
    });
    let mut out = Vec::new();
    for part in per_part {
        match part? {
            Some(batches) => out.extend(batches),
            None => return Ok(None),
        }
    }
    if out.is_empty() {
        out.push(RecordBatch::new_empty(schema));
    }
    Ok(Some(out))
}

/// The records cut into one part per core (at least 4,096 records a part).
fn parts(records: &[(Bytes, Bytes)]) -> Vec<&[(Bytes, Bytes)]> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let n = cores.min(records.len() / 4096).max(1);
    records.chunks(records.len().div_ceil(n).max(1)).collect()
}

/// The values' schema, each part scanned on a thread of its own (`None`: a value is not a
/// JSON object, or one place holds an object or array beside another kind).
fn scan(parts: &[&[(Bytes, Bytes)]]) -> Option<Schema> {
    use crate::arrow_schema_scan::Shape;
    let scanned: Vec<Option<Shape>> = std::thread::scope(|s| {
        let handles: Vec<_> = parts
            .iter()
            .map(|part| {
                s.spawn(move || {
                    let mut shape = Shape::default();
                    part.iter().all(|(_, v)| shape.add(v)).then_some(shape)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().ok().flatten())
            .collect()
    });
    let mut all = Shape::default();
    for shape in scanned {
        all.merge(shape?);
    }
    all.schema()
}

/// One part's record batches (`None`: a value did not decode to one row).
fn part_batches(
    part: &[(Bytes, Bytes)],
    schema: &Arc<Schema>,
    values_schema: &Schema,
    utf8: bool,
    objects: bool,
) -> Result<Option<Vec<RecordBatch>>, ArrowError> {
    let mut out = Vec::new();
    for chunk in part.chunks(BATCH_ROWS.max(1)) {
        let pk: ArrayRef = if utf8 {
            Arc::new(StringArray::from_iter_values(
                chunk
                    .iter()
                    .map(|(k, _)| std::str::from_utf8(k).unwrap_or_default()),
            ))
        } else {
            Arc::new(BinaryArray::from_iter_values(
                chunk.iter().map(|(k, _)| k.as_ref()),
            ))
        };
        let mut columns = vec![pk];
        if objects {
            let values = chunk.iter().map(|(_, v)| v.as_ref());
            columns.extend(crate::arrow_columns::decode(
                values_schema.fields(),
                values,
            )?);
        }
        out.push(RecordBatch::try_new(schema.clone(), columns)?);
    }
    Ok(Some(out))
}

/// The columns of `fields`, nested ones counted (a struct's fields, a list's items' columns).
fn columns(fields: &arrow_schema::Fields) -> usize {
    fields
        .iter()
        .map(|f| 1 + nested_columns(f.data_type()))
        .sum()
}

fn nested_columns(ty: &DataType) -> usize {
    match ty {
        DataType::Struct(fields) => columns(fields),
        DataType::List(item) => 1 + nested_columns(item.data_type()),
        _ => 0,
    }
}

fn first_byte(v: &[u8]) -> Option<u8> {
    v.iter().copied().find(|b| !b.is_ascii_whitespace())
}
