//! A record's value as a JSON document, read as little as a query needs: the attributes it
//! checks or returns are taken off the bytes in one pass (`index::extract`), and the document
//! is built only where a projected value will not parse alone.

use crate::index::{locate, AttrPath, AttrValue, PathSet};
use bytes::Bytes;
use serde_json::Value;

/// A record's document, parsed on first use: a find of whole records through an exact index
/// range never parses it, and a filter or aggregate never builds it.
pub struct Doc {
    value: Bytes,
    /// `None`: the value is not JSON.
    parsed: std::cell::OnceCell<Option<Value>>,
}

impl Doc {
    /// The document of `value`, not parsed yet.
    pub fn new(value: Bytes) -> Doc {
        Doc {
            value,
            parsed: std::cell::OnceCell::new(),
        }
    }

    /// The value as stored.
    pub fn value(&self) -> &Bytes {
        &self.value
    }

    /// The document (`null` if the value is not JSON).
    pub fn get(&self) -> &Value {
        self.parse().unwrap_or(&Value::Null)
    }

    /// The document, `None` if the value is not JSON (no record a filter can meet).
    pub fn parse(&self) -> Option<&Value> {
        self.parsed
            .get_or_init(|| serde_json::from_slice(&self.value).ok())
            .as_ref()
    }

    /// What the document holds at each of `paths` (`None`: missing); `None` if the value is
    /// not JSON. From the document if it was built, else read off the bytes in one pass that
    /// builds nothing but the scalars found (`PathSet::attrs`).
    pub fn attrs(&self, paths: &PathSet) -> Option<Vec<Option<AttrValue>>> {
        match self.parsed.get() {
            Some(Some(v)) => Some(paths.attrs_of(v)),
            Some(None) => None,
            None => paths.attrs(&self.value),
        }
    }

    /// The attributes at `projection` as an object keyed by path (those missing left out):
    /// from the document if it was built, else each value parsed alone from where it lies in
    /// the bytes (`index::locate`), the rest of the record skipped as it is read.
    pub fn project(&self, projection: &[AttrPath]) -> Value {
        if self.parsed.get().is_some() {
            return project(self.get(), projection);
        }
        let paths: Vec<&AttrPath> = projection.iter().collect();
        let mut out = serde_json::Map::new();
        if let Some(spans) = locate(&self.value, &paths) {
            for (p, span) in projection.iter().zip(spans) {
                let Some(span) = span else { continue };
                match serde_json::from_slice::<Value>(&self.value[span]) {
                    Ok(v) => {
                        out.insert(p.as_str().to_string(), v);
                    }
                    // The scanner took what the parser refuses: trust the parser.
                    Err(_) => return project(self.get(), projection),
                }
            }
        }
        Value::Object(out)
    }
}

/// The attributes of `doc` named by `projection`, as an object keyed by path.
pub fn project(doc: &Value, projection: &[AttrPath]) -> Value {
    let mut out = serde_json::Map::new();
    for p in projection {
        if let Some(v) = p.lookup(doc) {
            out.insert(p.as_str().to_string(), v.clone());
        }
    }
    Value::Object(out)
}
