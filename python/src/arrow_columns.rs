//! JSON objects decoded into Arrow columns of a known schema (from
//! [`crate::arrow_schema_scan`]): a builder per column, nested for structs and lists. A
//! number or boolean in a string column is written as its JSON text.

use arrow_array::builder::{BooleanBuilder, Float64Builder, Int64Builder, StringBuilder};
use arrow_array::{Array, ArrayRef, ListArray, NullArray, StructArray};
use arrow_buffer::{NullBufferBuilder, OffsetBufferBuilder};
use arrow_schema::{ArrowError, DataType, FieldRef, Fields};
use serde_json::Value;
use std::sync::Arc;

/// One column being built.
enum Column {
    Null(usize),
    Bool(BooleanBuilder),
    Int(Int64Builder),
    Float(Float64Builder),
    Str(StringBuilder),
    List {
        field: FieldRef,
        offsets: OffsetBufferBuilder<i32>,
        nulls: NullBufferBuilder,
        items: Box<Column>,
    },
    Struct {
        fields: Fields,
        children: Vec<Column>,
        nulls: NullBufferBuilder,
        len: usize,
    },
}

fn mismatch(ty: &DataType, v: &Value) -> ArrowError {
    ArrowError::JsonError(format!("a {ty} column met {v}"))
}

impl Column {
    /// A column of `ty` with room for `capacity` rows (its nested columns start small: how
    /// many items or present values they get is not known).
    fn new(ty: &DataType, capacity: usize) -> Result<Column, ArrowError> {
        let room = if ty_width(ty) <= 64 { capacity } else { 0 };
        Ok(match ty {
            DataType::Null => Column::Null(0),
            DataType::Boolean => Column::Bool(BooleanBuilder::with_capacity(capacity)),
            DataType::Int64 => Column::Int(Int64Builder::with_capacity(capacity)),
            DataType::Float64 => Column::Float(Float64Builder::with_capacity(capacity)),
            DataType::Utf8 => Column::Str(StringBuilder::with_capacity(capacity, capacity * 8)),
            DataType::List(field) => Column::List {
                field: field.clone(),
                offsets: OffsetBufferBuilder::new(capacity),
                nulls: NullBufferBuilder::new(capacity),
                items: Box::new(Column::new(field.data_type(), 0)?),
            },
            // Room up front for a struct's columns only when they are few: a wide struct's
            // columns mostly hold nulls, and grow as needed.
            DataType::Struct(fields) => Column::Struct {
                fields: fields.clone(),
                children: fields
                    .iter()
                    .map(|f| Column::new(f.data_type(), room))
                    .collect::<Result<_, _>>()?,
                nulls: NullBufferBuilder::new(capacity),
                len: 0,
            },
            other => {
                return Err(ArrowError::NotYetImplemented(format!(
                    "a column of {other}"
                )))
            }
        })
    }

    /// Appends one value (`None`: absent, as null).
    fn push(&mut self, v: Option<&Value>) -> Result<(), ArrowError> {
        let v = v.filter(|v| !v.is_null());
        match self {
            Column::Null(n) => match v {
                None => *n += 1,
                Some(v) => return Err(mismatch(&DataType::Null, v)),
            },
            Column::Bool(b) => match v {
                None => b.append_null(),
                Some(Value::Bool(x)) => b.append_value(*x),
                Some(v) => return Err(mismatch(&DataType::Boolean, v)),
            },
            Column::Int(b) => match v {
                None => b.append_null(),
                Some(v) => b.append_value(v.as_i64().ok_or_else(|| mismatch(&DataType::Int64, v))?),
            },
            Column::Float(b) => match v {
                None => b.append_null(),
                Some(v) => {
                    b.append_value(v.as_f64().ok_or_else(|| mismatch(&DataType::Float64, v))?)
                }
            },
            Column::Str(b) => match v {
                None => b.append_null(),
                Some(Value::String(s)) => b.append_value(s),
                Some(v @ (Value::Number(_) | Value::Bool(_))) => b.append_value(v.to_string()),
                Some(v) => return Err(mismatch(&DataType::Utf8, v)),
            },
            Column::List {
                offsets,
                nulls,
                items,
                ..
            } => match v {
                None => {
                    offsets.push_length(0);
                    nulls.append_null();
                }
                Some(Value::Array(a)) => {
                    for item in a {
                        items.push(Some(item))?;
                    }
                    offsets.push_length(a.len());
                    nulls.append_non_null();
                }
                Some(v) => return Err(ArrowError::JsonError(format!("a list column met {v}"))),
            },
            Column::Struct {
                fields,
                children,
                nulls,
                len,
            } => {
                match v {
                    None => {
                        for c in children.iter_mut() {
                            c.push(None)?;
                        }
                        nulls.append_null();
                    }
                    Some(Value::Object(o)) => {
                        for (f, c) in fields.iter().zip(children.iter_mut()) {
                            c.push(o.get(f.name()))?;
                        }
                        nulls.append_non_null();
                    }
                    Some(v) => {
                        return Err(ArrowError::JsonError(format!("a struct column met {v}")))
                    }
                }
                *len += 1;
            }
        }
        Ok(())
    }

    fn finish(self) -> Result<ArrayRef, ArrowError> {
        Ok(match self {
            Column::Null(n) => Arc::new(NullArray::new(n)),
            Column::Bool(mut b) => Arc::new(b.finish()),
            Column::Int(mut b) => Arc::new(b.finish()),
            Column::Float(mut b) => Arc::new(b.finish()),
            Column::Str(mut b) => Arc::new(b.finish()),
            Column::List {
                field,
                offsets,
                mut nulls,
                items,
            } => Arc::new(ListArray::try_new(
                field,
                offsets.finish(),
                items.finish()?,
                nulls.finish(),
            )?),
            Column::Struct {
                fields,
                children,
                mut nulls,
                len,
            } => {
                let nulls = nulls.finish();
                if fields.is_empty() {
                    Arc::new(StructArray::new_empty_fields(len, nulls))
                } else {
                    let arrays = children
                        .into_iter()
                        .map(Column::finish)
                        .collect::<Result<Vec<_>, _>>()?;
                    Arc::new(StructArray::try_new(fields, arrays, nulls)?)
                }
            }
        })
    }
}

/// A struct's number of fields (0 for other types).
fn ty_width(ty: &DataType) -> usize {
    match ty {
        DataType::Struct(fields) => fields.len(),
        _ => 0,
    }
}

/// The columns of `fields` from `values` (each a JSON object), one row a value.
pub fn decode<'a>(
    fields: &Fields,
    values: impl ExactSizeIterator<Item = &'a [u8]>,
) -> Result<Vec<ArrayRef>, ArrowError> {
    let mut root = Column::new(&DataType::Struct(fields.clone()), values.len())?;
    for v in values {
        let value: Value =
            serde_json::from_slice(v).map_err(|e| ArrowError::JsonError(e.to_string()))?;
        if !value.is_object() {
            return Err(ArrowError::JsonError("a value is not a JSON object".into()));
        }
        root.push(Some(&value))?;
    }
    let array = root.finish()?;
    let Some(s) = array.as_any().downcast_ref::<StructArray>() else {
        return Err(ArrowError::JsonError("the record columns".into()));
    };
    Ok(s.columns().to_vec())
}
