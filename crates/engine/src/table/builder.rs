//! Writes a table from entries given in internal-key order.

use super::block::BlockBuilder;
use super::filter;
use super::format::{encode_nstable, table_name, BlockHandle, Footer, NsRange, FOOTER_LEN};
use super::point_index::PointIndexBuilder;
use crate::error::{IoContext, Result};
use crate::key::{ikey_nsid, split_ikey, Kind, NSID_LEN};
use crate::storage::{IoPurpose, Storage, WritableFile};

/// What a finished table holds; goes into the manifest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableProps {
    pub id: u64,
    pub size: u64,
    pub entries: u64,
    pub smallest: Vec<u8>,
    pub largest: Vec<u8>,
    pub min_seq: u64,
    pub max_seq: u64,
    /// Bytes of `size` that hold no entries: the point index block (crc included). Level
    /// sizes leave them out, so that the index does not make the tree deeper.
    pub aux_bytes: u64,
}

impl TableProps {
    /// The bytes of entries, filter and index blocks: what a level's size counts.
    pub fn entry_bytes(&self) -> u64 {
        self.size.saturating_sub(self.aux_bytes)
    }
}

pub struct TableBuilder {
    id: u64,
    name: String,
    file: Box<dyn WritableFile>,
    offset: u64,
    block_size: usize,
    bits_per_key: u32,
    data: BlockBuilder,
    index: BlockBuilder,
    hashes: Vec<u64>,
    /// The point index's keys (`None`: the table gets none).
    point: Option<PointIndexBuilder>,
    last_user: Vec<u8>,
    smallest: Option<Vec<u8>>,
    entries: u64,
    min_seq: u64,
    max_seq: u64,
    ns: Vec<NsRange>,
    scratch: Vec<u8>,
}

impl TableBuilder {
    pub fn new(
        storage: &dyn Storage,
        id: u64,
        block_size: usize,
        bits_per_key: u32,
    ) -> Result<TableBuilder> {
        let name = table_name(id);
        let file = storage.create(&name).ctx(&name)?;
        Ok(TableBuilder {
            id,
            name,
            file,
            offset: 0,
            block_size,
            bits_per_key,
            data: BlockBuilder::with_hash_index(),
            index: BlockBuilder::for_index(),
            hashes: Vec::new(),
            point: Some(PointIndexBuilder::default()),
            last_user: Vec::new(),
            smallest: None,
            entries: 0,
            min_seq: u64::MAX,
            max_seq: 0,
            ns: Vec::new(),
            scratch: Vec::new(),
        })
    }

    /// Data blocks with a hash index over their user keys (the default) or without
    /// (`Options::block_hash_index`).
    pub fn with_hash_index(mut self, on: bool) -> Self {
        if !on {
            self.data = BlockBuilder::new();
        }
        self
    }

    /// A table with a point index whose fingerprints keep `bits` bits of the key's hash (the
    /// default: 32), or without one (`None`; `Options::point_index`).
    pub fn with_point_index(mut self, bits: Option<u32>) -> Self {
        self.point = bits.map(PointIndexBuilder::with_fingerprint_bits);
        self
    }

    /// Adds an entry; internal keys must be strictly increasing.
    pub fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        let Some((user, seq, kind)) = split_ikey(ikey) else {
            return Err(crate::error::Error::InvalidArgument(
                "malformed internal key".into(),
            ));
        };
        if self.smallest.is_none() {
            self.smallest = Some(ikey.to_vec());
        }
        if user != self.last_user.as_slice() || self.entries == 0 {
            if self.bits_per_key > 0 || self.point.is_some() {
                let hash = filter::filter_hash(user);
                if self.bits_per_key > 0 {
                    self.hashes.push(hash);
                }
                if let Some(p) = &mut self.point {
                    // The first entry of a user key is its newest version.
                    p.add_key(hash, Kind::from_u8(kind).unwrap_or(Kind::Delete), value);
                }
            }
            let nsid = ikey_nsid(user);
            let ukey = &user[NSID_LEN..];
            match self.ns.last_mut() {
                Some(r) if r.nsid == nsid => {
                    r.max_key = ukey.to_vec();
                }
                _ => self.ns.push(NsRange {
                    nsid,
                    min_key: ukey.to_vec(),
                    max_key: ukey.to_vec(),
                    count: 0,
                }),
            }
            self.last_user.clear();
            self.last_user.extend_from_slice(user);
        }
        if let Some(r) = self.ns.last_mut() {
            r.count += 1;
        }
        self.min_seq = self.min_seq.min(seq);
        self.max_seq = self.max_seq.max(seq);
        if let Some(p) = &mut self.point {
            p.add_seq(seq);
        }
        self.entries += 1;
        self.data.add(ikey, value);
        if self.data.estimated_size() >= self.block_size {
            self.flush_data_block()?;
        }
        Ok(())
    }

    /// Bytes written so far plus the open block.
    pub fn estimated_size(&self) -> u64 {
        self.offset + self.data.estimated_size() as u64
    }

    fn write_block(&mut self, block: &[u8], purpose: IoPurpose) -> Result<BlockHandle> {
        self.scratch.clear();
        self.scratch.extend_from_slice(block);
        self.scratch
            .extend_from_slice(&crc32c::crc32c(block).to_le_bytes());
        self.file.append(&self.scratch, purpose).ctx(&self.name)?;
        let handle = BlockHandle {
            offset: self.offset,
            len: block.len() as u32,
        };
        self.offset += self.scratch.len() as u64;
        Ok(handle)
    }

    fn flush_data_block(&mut self) -> Result<()> {
        if self.data.is_empty() {
            return Ok(());
        }
        let last = self.data.last_key().to_vec();
        let block = self.data.finish();
        let handle = self.write_block(&block, IoPurpose::Data)?;
        let mut h = Vec::new();
        handle.encode(&mut h);
        self.index.add(&last, &h);
        Ok(())
    }

    /// Writes filter, point index, index, NSTable and footer, and syncs the file.
    pub fn finish(mut self) -> Result<TableProps> {
        self.flush_data_block()?;
        let largest = self.data_last_key();
        let filter_handle = if self.bits_per_key > 0 {
            let f = filter::build(&self.hashes, self.bits_per_key);
            self.write_block(&f, IoPurpose::Filter)?
        } else {
            BlockHandle::default()
        };
        // The point index right before the index block: the footer gives its length only.
        let point_handle = match self.point.take().and_then(PointIndexBuilder::finish) {
            Some(p) => self.write_block(&p, IoPurpose::Filter)?,
            None => BlockHandle::default(),
        };
        let index = self.index.finish();
        let index_handle = self.write_block(&index, IoPurpose::Index)?;
        let ns = encode_nstable(&self.ns);
        let ns_handle = self.write_block(&ns, IoPurpose::Index)?;
        let footer = Footer {
            filter: filter_handle,
            index: index_handle,
            nstable: ns_handle,
            entries: self.entries,
            point: point_handle,
        };
        let point_bytes = match point_handle.len {
            0 => 0,
            len => u64::from(len) + super::format::BLOCK_TRAILER_LEN as u64,
        };
        self.file
            .append(&footer.encode(), IoPurpose::Index)
            .ctx(&self.name)?;
        self.offset += FOOTER_LEN as u64;
        self.file.sync().ctx(&self.name)?;
        Ok(TableProps {
            id: self.id,
            size: self.offset,
            entries: self.entries,
            smallest: self.smallest.unwrap_or_default(),
            largest,
            min_seq: if self.entries == 0 { 0 } else { self.min_seq },
            max_seq: self.max_seq,
            aux_bytes: point_bytes,
        })
    }

    fn data_last_key(&self) -> Vec<u8> {
        // The index block's last key is the table's largest key.
        self.index.last_key().to_vec()
    }
}
