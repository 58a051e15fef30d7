//! The Arrow schema of JSON objects, found in one streaming pass: the shape of each value
//! (its attributes in first-seen order, the JSON kinds seen under each, the items of its
//! arrays) merged over every record, with nothing allocated but the names. Types follow the
//! usual JSON inference: integers with floats are floats, scalars of mixed kinds strings.

use arrow_schema::{DataType, Field, Fields, Schema};
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;

const NULL: u8 = 1;
const BOOL: u8 = 2;
const INT: u8 = 4;
const FLOAT: u8 = 8;
const STR: u8 = 16;
const OBJECT: u8 = 32;
const ARRAY: u8 = 64;

/// Nesting past this depth is not made into columns (the caller builds rows instead).
const MAX_DEPTH: usize = 32;

/// What was seen at one place of the records: its kinds, an object's attributes, an array's
/// items.
#[derive(Default)]
pub struct Shape {
    kinds: u8,
    fields: Vec<(String, Shape)>,
    index: HashMap<String, usize>,
    item: Option<Box<Shape>>,
}

struct Seed<'a> {
    shape: &'a mut Shape,
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for Seed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        self.shape.kinds |= NULL;
        Ok(())
    }
    fn visit_none<E>(self) -> Result<(), E> {
        self.shape.kinds |= NULL;
        Ok(())
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        self.shape.kinds |= BOOL;
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        self.shape.kinds |= INT;
        Ok(())
    }
    fn visit_u64<E>(self, v: u64) -> Result<(), E> {
        // Past i64 a column of Int64 cannot hold it.
        self.shape.kinds |= if v > i64::MAX as u64 { FLOAT } else { INT };
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        self.shape.kinds |= FLOAT;
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        self.shape.kinds |= STR;
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<(), A::Error> {
        if self.depth >= MAX_DEPTH {
            return Err(serde::de::Error::custom("nested too deep for columns"));
        }
        self.shape.kinds |= ARRAY;
        let item = self.shape.item.get_or_insert_with(Box::default);
        while a
            .next_element_seed(Seed {
                shape: item,
                depth: self.depth + 1,
            })?
            .is_some()
        {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<(), A::Error> {
        if self.depth >= MAX_DEPTH {
            return Err(serde::de::Error::custom("nested too deep for columns"));
        }
        let shape = self.shape;
        shape.kinds |= OBJECT;
        while let Some(name) = a.next_key::<Cow<'de, str>>()? {
            let child = shape.child(name);
            a.next_value_seed(Seed {
                shape: child,
                depth: self.depth + 1,
            })?;
        }
        Ok(())
    }
}

impl Shape {
    fn child(&mut self, name: Cow<'_, str>) -> &mut Shape {
        let i = match self.index.get(name.as_ref()) {
            Some(&i) => i,
            None => {
                self.index.insert(name.to_string(), self.fields.len());
                self.fields.push((name.into_owned(), Shape::default()));
                self.fields.len() - 1
            }
        };
        &mut self.fields[i].1
    }

    /// Adds one record; false if it is not a JSON object (or nests past [`MAX_DEPTH`]).
    pub fn add(&mut self, value: &[u8]) -> bool {
        let mut de = serde_json::Deserializer::from_slice(value);
        let seed = Seed {
            shape: self,
            depth: 0,
        };
        seed.deserialize(&mut de).is_ok() && de.end().is_ok() && self.kinds == OBJECT
    }

    /// Adds `other`'s attributes after this one's (the shapes of shared ones merged).
    pub fn merge(&mut self, other: Shape) {
        self.kinds |= other.kinds;
        for (name, shape) in other.fields {
            self.child(Cow::Owned(name)).merge(shape);
        }
        if let Some(item) = other.item {
            self.item.get_or_insert_with(Box::default).merge(*item);
        }
    }

    /// The records' schema (every field nullable), or `None` where a place holds both an
    /// object or array and something else: no column type holds both.
    pub fn schema(&self) -> Option<Schema> {
        match self.data_type()? {
            DataType::Struct(fields) => Some(Schema::new(fields)),
            _ => None,
        }
    }

    fn data_type(&self) -> Option<DataType> {
        let k = self.kinds & !NULL;
        Some(match k {
            0 => DataType::Null,
            OBJECT => DataType::Struct(
                self.fields
                    .iter()
                    .map(|(name, shape)| Some(Field::new(name, shape.data_type()?, true)))
                    .collect::<Option<Fields>>()?,
            ),
            ARRAY => {
                let item = match &self.item {
                    Some(item) => item.data_type()?,
                    None => DataType::Null,
                };
                DataType::new_list(item, true)
            }
            _ if k & (OBJECT | ARRAY) != 0 => return None,
            BOOL => DataType::Boolean,
            INT => DataType::Int64,
            FLOAT => DataType::Float64,
            _ if k & !(INT | FLOAT) == 0 => DataType::Float64,
            _ => DataType::Utf8,
        })
    }
}
