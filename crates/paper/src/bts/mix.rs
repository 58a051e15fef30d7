//! `cerberus-paper bts --mix tweets|files`: the dedup service on data with known
//! duplication. The values are loaded into a device with dedup on; once its backlog has
//! drained, the ratio it reports is set beside one recomputed here from the values read back
//! over the wire, by code of this file (fixed chunks and SHA-1 computed with the `sha1` crate
//! directly; content-defined boundaries from the device's chunker, counted here).

use anyhow::{bail, Context, Result};
use bytes::Bytes;
use cerberus_bench_engines::local_device::{self, LocalDevice};
use cerberus_device::{ChunkHash, Chunker, Chunking};
use cerberus_host::ScanOptions;
use rand::{Rng, RngCore, SeedableRng};
use sha1::{Digest, Sha1};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// The values of a mix.
fn values(mix: &str, records: u64) -> Result<Vec<Vec<u8>>> {
    match mix {
        "tweets" => {
            let mut buf = Vec::new();
            cerberus_datasets::generate(cerberus_datasets::Kind::Tweets, records, 42, &mut buf)?;
            Ok(buf
                .split(|&b| b == b'\n')
                .filter(|l| !l.is_empty())
                .map(<[u8]>::to_vec)
                .collect())
        }
        "files" => Ok(files(records)),
        m => bail!("unknown mix {m:?} (tweets or files)"),
    }
}

/// A file set with repeated blocks: files of 16-256 KiB made of 4 KiB blocks, half of them
/// drawn from a pool of 64 shared blocks and half fresh; one file in five is a copy of an
/// earlier one with a few bytes inserted near its start (shifting what follows, which fixed
/// chunks cannot match and content-defined chunks can).
fn files(n: u64) -> Vec<Vec<u8>> {
    let mut rng = rand::rngs::SmallRng::seed_from_u64(9);
    let pool: Vec<Vec<u8>> = (0..64)
        .map(|_| {
            let mut b = vec![0u8; 4096];
            rng.fill_bytes(&mut b);
            b
        })
        .collect();
    let mut out: Vec<Vec<u8>> = Vec::new();
    for _ in 0..n {
        if !out.is_empty() && rng.gen_bool(0.2) {
            let mut f = out[rng.gen_range(0..out.len())].clone();
            let at = rng.gen_range(0..f.len().min(512));
            let ins: Vec<u8> = (0..rng.gen_range(1..40)).map(|_| rng.gen()).collect();
            f.splice(at..at, ins);
            out.push(f);
            continue;
        }
        let blocks = rng.gen_range(4..=64);
        let mut f = Vec::with_capacity(blocks * 4096);
        for _ in 0..blocks {
            if rng.gen_bool(0.5) {
                f.extend_from_slice(&pool[rng.gen_range(0..pool.len())]);
            } else {
                let mut b = vec![0u8; 4096];
                rng.fill_bytes(&mut b);
                f.extend_from_slice(&b);
            }
        }
        out.push(f);
    }
    out
}

/// Logical and unique bytes of `values`, counted here.
fn recompute<'a>(values: impl Iterator<Item = &'a [u8]>, c: Chunker) -> (u64, u64, u64) {
    let mut unique: HashMap<Vec<u8>, u64> = HashMap::new();
    let (mut logical, mut chunks) = (0u64, 0u64);
    let mut add = |name: Vec<u8>, len: usize| {
        logical += len as u64;
        chunks += 1;
        unique.insert(name, len as u64);
    };
    for v in values {
        match (c.chunking, c.hash) {
            (Chunking::Fixed, ChunkHash::Sha1) => {
                for ch in v.chunks(c.chunk_bytes as usize) {
                    add(Sha1::digest(ch).to_vec(), ch.len());
                }
            }
            _ => {
                // The boundaries (and the fast hash) as the device draws them; the chunk's
                // bytes themselves name it here.
                let mut at = 0;
                let mut lens = Vec::new();
                c.chunks(v, |_, n| lens.push(n as usize));
                for n in lens {
                    add(v[at..at + n].to_vec(), n);
                    at += n;
                }
            }
        }
    }
    (logical, unique.values().sum(), chunks)
}

pub fn main(mix: &str, records: u64, chunker: Chunker) -> Result<()> {
    let values = values(mix, records)?;
    let dir = tempfile::tempdir()?;
    let mut c = local_device::config(dir.path());
    c.dedup.enabled = true;
    c.dedup.chunking = chunker.chunking;
    c.dedup.hash = chunker.hash;
    c.dedup.chunk_bytes = chunker.chunk_bytes;
    let local = LocalDevice::start(c)?;
    let (ns, secret) = local.create_namespace(mix)?;
    let client = local_device::client(&local.addr, ns, &secret)?;
    let dev = &local.device;
    let t = Instant::now();
    for (i, v) in values.iter().enumerate() {
        client.put(Bytes::from(format!("{i:08}")), Bytes::copy_from_slice(v))?;
    }
    let load = t.elapsed();
    while dev.dedup_stats().map_or(0, |d| d.backlog) > 0 {
        if t.elapsed() > Duration::from_secs(1800) {
            bail!("the dedup backlog did not drain");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let drained = t.elapsed();
    let stats = dev.dedup_stats().context("dedup is on")?;
    let mine = stats.namespaces.get(&ns).copied().unwrap_or_default();
    let stored: Vec<Bytes> = client
        .scan(ScanOptions::default())?
        .map(|e| e.map(|(_, v)| v))
        .collect::<Result<_, _>>()?;
    let (logical, unique, chunks) = recompute(stored.iter().map(|v| v.as_ref()), chunker);
    let ratio = logical as f64 / unique.max(1) as f64;
    println!(
        "| {mix} | {:?} {:?} {} B | {} values, {:.1} MB | {} chunks, {} unique | device {:.4} | \
         recomputed {:.4} ({} chunks, {:.1} MB unique) | {} | loaded in {:.1} s, indexed by {:.1} s | \
         hashing {:.0} MB/s on one core |",
        chunker.chunking,
        chunker.hash,
        chunker.chunk_bytes,
        stored.len(),
        logical as f64 / 1e6,
        mine.chunks,
        mine.unique_chunks,
        mine.dedup_ratio,
        ratio,
        chunks,
        unique as f64 / 1e6,
        if mine.logical_bytes == logical && mine.unique_bytes == unique && mine.chunks == chunks {
            "equal"
        } else {
            "DIFFERENT"
        },
        load.as_secs_f64(),
        drained.as_secs_f64(),
        stats.hash_mb_per_s
    );
    drop(client);
    local.device.shutdown()?;
    if mine.logical_bytes != logical || mine.unique_bytes != unique {
        bail!("the device's index differs from the recomputation");
    }
    Ok(())
}
