//! Entry points for the fuzz targets in `crates/proto/fuzz`, here so that the stable corpus
//! test (`tests/fuzz_corpus.rs`) runs exactly what the fuzzer runs. Each panics if a promise
//! of the decoders breaks, and says whether the bytes got past them (something decoded) so
//! that the corpus test can tell it reached the decoders. Not part of the stable API.

use crate::nvme::{split_pdu, Digests, PduLimits};
use crate::{split_frame, Command, Response, HEADER_LEN};
use bytes::{BufMut, BytesMut};

/// The body limit the `frames` target splits with.
const MAX_BODY: u32 = 64 << 10;

/// Bytes from the network: split into frames in pieces of the first byte's size and decode
/// each as a command and as a response. A panic is a bug; so is a buffer grown past what
/// arrived plus the body limit, and a command that does not survive being encoded again.
/// True when some frame decoded as a command.
pub fn frames(data: &[u8]) -> bool {
    let Some((&chunk, wire)) = data.split_first() else {
        return false;
    };
    let mut decoded = false;
    let mut buf = BytesMut::new();
    for piece in wire.chunks(usize::from(chunk).max(1)) {
        buf.put_slice(piece);
        loop {
            match split_frame(&mut buf, MAX_BODY) {
                Ok(Some(frame)) => {
                    if let Ok(cmd) = Command::decode(&frame) {
                        // What decodes re-encodes to a frame that decodes the same.
                        let mut again = BytesMut::new();
                        cmd.encode(&mut again).expect("re-encode");
                        let f = split_frame(&mut again, u32::MAX)
                            .expect("split")
                            .expect("whole");
                        assert_eq!(Command::decode(&f).expect("decode again"), cmd);
                        decoded = true;
                    }
                    let _ = Response::decode(&frame);
                }
                Ok(None) => break,
                Err(_) => return decoded,
            }
            assert!(buf.capacity() <= wire.len() + HEADER_LEN + MAX_BODY as usize);
        }
    }
    decoded
}

/// The PDU limits the `nvme_pdus` target splits with.
const PDU_LIMITS: PduLimits = PduLimits::uniform(16 << 10);

/// Bytes from an NVMe/TCP connection: split into PDUs in pieces of the first byte's size,
/// with the digests the second byte's low bits say. A panic is a bug; so is a buffer grown
/// past what arrived; every PDU taken re-encodes to bytes that split back to it. True when
/// some PDU was taken.
pub fn nvme_pdus(data: &[u8]) -> bool {
    let [chunk, dg, wire @ ..] = data else {
        return false;
    };
    let digests = Digests {
        header: dg & 1 != 0,
        data: dg & 2 != 0,
    };
    let mut taken = false;
    let mut buf = BytesMut::new();
    for piece in wire.chunks(usize::from(*chunk).max(1)) {
        buf.put_slice(piece);
        loop {
            match split_pdu(&mut buf, digests, PDU_LIMITS) {
                Ok(Some(pdu)) => {
                    taken = true;
                    let mut again = BytesMut::new();
                    pdu.encode(digests, &mut again);
                    // IC PDUs go without digests whatever was negotiated.
                    if let Ok(Some(back)) = split_pdu(&mut again, digests, PDU_LIMITS) {
                        assert_eq!(back, pdu);
                    }
                }
                Ok(None) => break,
                Err(_) => return taken,
            }
            assert!(buf.capacity() <= 2 * wire.len() + 64);
        }
    }
    taken
}

/// A command capsule's bytes (entry, then in-capsule data) through every command decoder
/// (`nvme::check_command_decoders` says what it checks). True when one of them decoded it.
pub fn nvme_commands(data: &[u8]) -> bool {
    crate::nvme::check_command_decoders(data)
}

/// Deterministic mutations of seed inputs, for the stable corpus tests of every crate: a
/// fixed xorshift stream picks a seed and changes it as a fuzzer would (bit flips, bytes set
/// to edge values, truncations, insertions, splices with another seed, repeated slices).
pub struct Mutator<'a> {
    seeds: &'a [Vec<u8>],
    state: u64,
}

impl<'a> Mutator<'a> {
    /// Mutations of `seeds` (at least one) from the stream `seed` starts.
    pub fn new(seeds: &'a [Vec<u8>], seed: u64) -> Mutator<'a> {
        assert!(!seeds.is_empty(), "mutations need a seed input");
        Mutator {
            seeds,
            state: seed | 1,
        }
    }

    /// The next number of the stream.
    pub fn next_u64(&mut self) -> u64 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        self.state
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        match n {
            0 => 0,
            n => (self.next_u64() % n as u64) as usize,
        }
    }

    /// The next mutated input: a seed changed one to four times.
    pub fn mutate(&mut self) -> Vec<u8> {
        let mut v = self.seeds[self.below(self.seeds.len())].clone();
        for _ in 0..1 + self.below(4) {
            self.change(&mut v);
        }
        v
    }

    fn change(&mut self, v: &mut Vec<u8>) {
        let at = self.below(v.len());
        match self.below(7) {
            0 if !v.is_empty() => v[at] ^= 1 << self.below(8),
            1 if !v.is_empty() => v[at] = [0, 1, 0x7f, 0x80, 0xff][self.below(5)],
            2 => v.truncate(at),
            3 => {
                let n = 1 + self.below(8);
                let bytes: Vec<u8> = (0..n).map(|_| self.next_u64() as u8).collect();
                v.splice(at..at, bytes);
            }
            4 => {
                // Splice: this one's head and another seed's tail.
                let other = &self.seeds[self.below(self.seeds.len())];
                let from = self.below(other.len());
                v.truncate(at);
                v.extend_from_slice(&other[from..]);
            }
            5 if !v.is_empty() => {
                let n = 1 + self.below((v.len() - at).min(64));
                let piece = v[at..at + n].to_vec();
                v.splice(at..at, piece);
            }
            _ if v.len() >= 4 => {
                // A little-endian length or count field set to an edge value.
                let at = self.below(v.len() - 3);
                let edge = [0u32, 1, 0xffff, 0x8000_0000, u32::MAX][self.below(5)];
                v[at..at + 4].copy_from_slice(&edge.to_le_bytes());
            }
            _ => v.push(self.next_u64() as u8),
        }
    }
}

/// The files of a committed seed corpus directory (`crates/<crate>/fuzz/corpus/<target>`),
/// sorted by name; none when it does not exist.
pub fn corpus_files(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            std::fs::read(e.path()).ok().map(|bytes| (name, bytes))
        })
        .collect();
    files.sort();
    files
}

/// Writes `seeds` into `dir` as `seed-NN` files (a test does it when `FUZZ_WRITE_SEEDS` is
/// set, to refresh the committed corpus from the encoders).
pub fn write_seeds(dir: &std::path::Path, seeds: &[Vec<u8>]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for (i, s) in seeds.iter().enumerate() {
        std::fs::write(dir.join(format!("seed-{i:02}")), s)?;
    }
    Ok(())
}

/// What a corpus run saw: inputs the decoders took and inputs they refused.
#[derive(Debug, Default, Clone, Copy)]
pub struct Tally {
    /// Inputs the entry point said got past the decoders.
    pub taken: usize,
    /// Inputs refused.
    pub refused: usize,
}

impl Tally {
    /// Runs `entry` on the committed corpus of `dir`, on `seeds`, and on `mutations`
    /// mutations of both; panics (as the fuzz target would) on the first input that makes
    /// `entry` panic, naming it, and unless some inputs were taken and some refused.
    pub fn run(
        dir: &std::path::Path,
        seeds: Vec<Vec<u8>>,
        mutations: usize,
        entry: impl Fn(&[u8]) -> bool,
    ) -> Tally {
        if std::env::var_os("FUZZ_WRITE_SEEDS").is_some() {
            write_seeds(dir, &seeds).expect("write the seed corpus");
        }
        let files = corpus_files(dir);
        assert!(!files.is_empty(), "no seed corpus in {}", dir.display());
        let mut all: Vec<Vec<u8>> = files.into_iter().map(|(_, b)| b).collect();
        all.extend(seeds);
        let mut t = Tally::default();
        let mut run = |input: &[u8]| {
            let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| entry(input)));
            match ran {
                Ok(true) => t.taken += 1,
                Ok(false) => t.refused += 1,
                Err(_) => panic!("{}", crash_report(dir, input)),
            }
        };
        for input in &all {
            run(input);
        }
        let mut m = Mutator::new(&all, 0x9e37_79b9_7f4a_7c15);
        for _ in 0..mutations {
            run(&m.mutate());
        }
        assert!(
            t.taken > 0 && t.refused > 0,
            "{}: a corpus run that took {} and refused {} inputs tests nothing",
            dir.display(),
            t.taken,
            t.refused
        );
        t
    }
}

/// Saves an input that made a target panic where a developer finds it (to add to the
/// corpus once fixed), and says so.
fn crash_report(dir: &std::path::Path, input: &[u8]) -> String {
    let target = dir.file_name().map(|n| n.to_string_lossy().into_owned());
    let name = format!(
        "fuzz-crash-{}-{:016x}",
        target.unwrap_or_default(),
        crc32fast::hash(input)
    );
    let path = std::env::temp_dir().join(name);
    let saved = std::fs::write(&path, input).is_ok();
    format!(
        "a corpus input of {} bytes made the target panic (saved: {saved}, {})",
        input.len(),
        path.display()
    )
}
