//! The fuzz targets of `fuzz/` on stable: each target's committed seed corpus
//! (`fuzz/corpus/<target>`), the seeds the crate makes with its own encoders, and
//! deterministic mutations of them, through exactly the function the target calls. Each run
//! must see inputs taken and inputs refused, so that it cannot pass by reaching nothing.
//! `FUZZ_WRITE_SEEDS=1` rewrites the committed seeds.

use cerberus_device::fuzzing;
use cerberus_proto::fuzzing::Tally;
use std::path::PathBuf;

fn corpus(target: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("fuzz/corpus/{target}"))
}

#[test]
fn dedup_index_corpus() {
    let seeds = fuzzing::dedup_index_seeds();
    assert!(
        seeds.iter().all(|s| fuzzing::dedup_index(s)),
        "a seed the encoder made is refused"
    );
    let t = Tally::run(&corpus("dedup_index"), seeds, 3000, fuzzing::dedup_index);
    eprintln!("dedup_index: {t:?}");
}

/// Sessions against a real device: every seed gets its queue connected but the garbage's
/// (a stranger connects too, as `require_host_auth = false` lets it, and is granted
/// nothing), then 200 mutations; after each input the
/// device must still serve a fresh host (`nvme_session` checks it).
#[test]
fn nvme_session_corpus() {
    let seeds = fuzzing::nvme_session_seeds();
    let connected: Vec<bool> = seeds.iter().map(|s| fuzzing::nvme_session(s)).collect();
    assert_eq!(
        connected,
        [true, true, true, true, true, false],
        "the seeds' sessions"
    );
    let t = Tally::run(&corpus("nvme_session"), seeds, 200, fuzzing::nvme_session);
    eprintln!("nvme_session: {t:?}");
    fuzzing::nvme_session_stop();
}
