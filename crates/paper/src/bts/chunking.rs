//! `cerberus-paper bts --chunking-only`: what one core chunks and hashes per second, for each
//! chunking and hash the dedup service offers, over values of the bench's size.

use anyhow::Result;
use cerberus_device::{ChunkHash, Chunker, Chunking};
use cerberus_figures::Table;
use rand::{RngCore, SeedableRng};
use std::time::Instant;

pub fn main(value_size: usize) -> Result<()> {
    let total = 256usize << 20;
    let mut data = vec![0u8; total];
    rand::rngs::SmallRng::seed_from_u64(7).fill_bytes(&mut data);
    let mut t = Table::new(&[
        "chunking",
        "hash",
        "chunk bytes",
        "MB/s on one core",
        "chunks/s",
    ]);
    // Each row as it is measured.
    print!("{}", t.render());
    for chunking in [Chunking::Fixed, Chunking::Cdc] {
        for hash in [ChunkHash::Sha1, ChunkHash::Xxh3] {
            let c = Chunker {
                chunking,
                hash,
                chunk_bytes: 128,
            };
            // Best of three passes: this machine's neighbours come and go.
            let mut best = f64::MAX;
            let mut chunks = 0u64;
            for _ in 0..3 {
                let t = Instant::now();
                let mut n = 0u64;
                let mut x = 0u8;
                for v in data.chunks(value_size.max(1)) {
                    c.chunks(v, |d, _| {
                        n += 1;
                        x ^= d[0];
                    });
                }
                std::hint::black_box(x);
                best = best.min(t.elapsed().as_secs_f64());
                chunks = n;
            }
            t.row([
                format!("{chunking:?}"),
                format!("{hash:?}"),
                "128".into(),
                format!("{:.0}", total as f64 / best / 1e6),
                format!("{:.0}", chunks as f64 / best),
            ]);
            print!("{}", t.render().lines().last().unwrap_or_default());
            println!();
        }
    }
    Ok(())
}
