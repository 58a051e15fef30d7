//! The Arrow schema of flat JSON objects, found in one light pass: each value's top-level
//! attributes and the JSON kind of each (nothing allocated but the names), merged over every
//! record. A record with an array or object attribute makes it give up (`None`): the caller
//! then infers through arrow-json, which builds each document.

use arrow_schema::{DataType, Field, Schema};
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::fmt;

const NULL: u8 = 1;
const BOOL: u8 = 2;
const INT: u8 = 4;
const FLOAT: u8 = 8;
const STR: u8 = 16;
const NESTED: u8 = 32;

/// The kind of one JSON value, its content skipped.
struct Kind(u8);

impl<'de> serde::Deserialize<'de> for Kind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Kind, D::Error> {
        d.deserialize_any(KindVisitor)
    }
}

struct KindVisitor;

impl<'de> Visitor<'de> for KindVisitor {
    type Value = Kind;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Kind, E> {
        Ok(Kind(NULL))
    }
    fn visit_none<E>(self) -> Result<Kind, E> {
        Ok(Kind(NULL))
    }
    fn visit_bool<E>(self, _: bool) -> Result<Kind, E> {
        Ok(Kind(BOOL))
    }
    fn visit_i64<E>(self, _: i64) -> Result<Kind, E> {
        Ok(Kind(INT))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Kind, E> {
        // Past i64, arrow-json's Int64 would refuse it.
        Ok(Kind(if v > i64::MAX as u64 { FLOAT } else { INT }))
    }
    fn visit_f64<E>(self, _: f64) -> Result<Kind, E> {
        Ok(Kind(FLOAT))
    }
    fn visit_str<E>(self, _: &str) -> Result<Kind, E> {
        Ok(Kind(STR))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Kind, A::Error> {
        while a.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Kind(NESTED))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Kind, A::Error> {
        while a.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Kind(NESTED))
    }
}

/// Attribute names in first-seen order, with the kinds seen under each.
#[derive(Default)]
pub struct Kinds {
    fields: Vec<(String, u8)>,
    index: std::collections::HashMap<String, usize>,
}

struct Merge<'a>(&'a mut Kinds);

impl<'de> Visitor<'de> for Merge<'_> {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<bool, A::Error> {
        while let Some(name) = a.next_key::<Cow<'de, str>>()? {
            let Kind(k) = a.next_value::<Kind>()?;
            if k == NESTED {
                return Ok(false);
            }
            let kinds = &mut *self.0;
            match kinds.index.get(name.as_ref()) {
                Some(&i) => kinds.fields[i].1 |= k,
                None => {
                    kinds.index.insert(name.to_string(), kinds.fields.len());
                    kinds.fields.push((name.into_owned(), k));
                }
            }
        }
        Ok(true)
    }
}

impl Kinds {
    /// Adds `other`'s attributes after this one's (the kinds of shared ones merged).
    pub fn merge(&mut self, other: Kinds) {
        for (name, k) in other.fields {
            match self.index.get(&name) {
                Some(&i) => self.fields[i].1 |= k,
                None => {
                    self.index.insert(name.clone(), self.fields.len());
                    self.fields.push((name, k));
                }
            }
        }
    }

    /// Adds one record's attributes; false if it is not a flat JSON object.
    pub fn add(&mut self, value: &[u8]) -> bool {
        let mut de = serde_json::Deserializer::from_slice(value);
        matches!(de.deserialize_map(Merge(self)), Ok(true)) && de.end().is_ok()
    }

    /// The schema: per attribute the type its kinds allow (numbers mixed with strings or
    /// booleans go to strings, as arrow-json's inference does), every field nullable.
    pub fn schema(&self) -> Schema {
        let fields: Vec<Field> = self
            .fields
            .iter()
            .map(|(name, k)| {
                let k = k & !NULL;
                let ty = match k {
                    0 => DataType::Null,
                    BOOL => DataType::Boolean,
                    INT => DataType::Int64,
                    FLOAT => DataType::Float64,
                    _ if k & !(INT | FLOAT) == 0 => DataType::Float64,
                    _ => DataType::Utf8,
                };
                Field::new(name, ty, true)
            })
            .collect();
        Schema::new(fields)
    }
}
