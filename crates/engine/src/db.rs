//! The database facade. (Stub.)
use crate::{DbStats, Options, Result, WriteBatch};
use bytes::Bytes;
use std::path::Path;

pub struct Db {}

impl Db {
    pub fn open(_path: impl AsRef<Path>, _options: Options) -> Result<Db> {
        todo!()
    }
    pub fn open_with_storage(_s: crate::storage::StorageRef, _options: Options) -> Result<Db> {
        todo!()
    }
    pub fn put(&self, _key: &[u8], _value: &[u8]) -> Result<()> {
        todo!()
    }
    pub fn get(&self, _key: &[u8]) -> Result<Option<Bytes>> {
        todo!()
    }
    pub fn delete(&self, _key: &[u8]) -> Result<()> {
        todo!()
    }
    pub fn write(&self, _batch: WriteBatch) -> Result<()> {
        todo!()
    }
    pub fn flush(&self) -> Result<()> {
        todo!()
    }
    pub fn compact_range(&self, _start: Option<&[u8]>, _end: Option<&[u8]>) -> Result<()> {
        todo!()
    }
    pub fn compact_all(&self) -> Result<()> {
        todo!()
    }
    pub fn close(&self) -> Result<()> {
        todo!()
    }
    pub fn stats(&self) -> DbStats {
        todo!()
    }
}
