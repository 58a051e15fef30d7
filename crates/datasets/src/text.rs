//! The words, sizes and draws both generators share: a vocabulary of common and made-up
//! words, the soup long fillers are cut from, weighted picks and the line sizes.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// Common English words, put first in the vocabulary so that they are the most frequent.
const COMMON: &[&str] = &[
    "the", "of", "and", "to", "in", "is", "was", "on", "for", "with", "at", "by", "from", "this",
    "that", "it", "as", "be", "are", "not", "but", "or", "all", "new", "one", "two", "more",
    "north", "south", "east", "west", "upper", "lower", "ice", "snow", "rock", "valley", "ridge",
    "lake", "river", "peak", "map", "survey", "data", "year", "time", "day", "today", "people",
    "good", "great", "first", "last", "big", "small", "see", "know", "think", "love", "make",
    "just", "like", "now", "here", "there", "what", "when", "where", "why", "how", "we", "you",
];

const ONSETS: &[&str] = &[
    "b", "br", "c", "ch", "d", "dr", "f", "g", "gr", "h", "k", "l", "m", "n", "p", "pl", "r", "s",
    "sh", "st", "t", "tr", "v", "w", "z",
];
const VOWELS: &[&str] = &["a", "e", "i", "o", "u", "a", "e", "o", "ai", "ou", "ea"];
const CODAS: &[&str] = &["", "", "", "n", "r", "l", "s", "m", "t", "nd", "rk"];

/// Made-up words that contain one of these are drawn again.
const UNWANTED: &[&str] = &[
    "shit", "cunt", "fuck", "nazi", "rape", "slut", "cum", "fag", "nig", "dick", "cock", "tit",
    "piss", "sex", "porn", "kill", "dead",
];

/// A pronounceable made-up word of `syllables` syllables, lowercase ASCII (none of UNWANTED).
pub(crate) fn pseudo_word(rng: &mut SmallRng, syllables: usize) -> String {
    loop {
        let mut w = String::new();
        for _ in 0..syllables {
            w.push_str(ONSETS[rng.gen_range(0..ONSETS.len())]);
            w.push_str(VOWELS[rng.gen_range(0..VOWELS.len())]);
            w.push_str(CODAS[rng.gen_range(0..CODAS.len())]);
        }
        if !UNWANTED.iter().any(|u| w.contains(u)) {
            return w;
        }
    }
}

pub(crate) fn capitalize(w: &str) -> String {
    let mut c = w.chars();
    match c.next() {
        Some(f) => f.to_ascii_uppercase().to_string() + c.as_str(),
        None => String::new(),
    }
}

/// `x` rounded to `decimals` places (and never -0, which would print as `-0.0`).
pub(crate) fn round(x: f64, decimals: i32) -> f64 {
    let p = 10f64.powi(decimals);
    (x * p).round() / p + 0.0
}

/// One of `table`'s items, with the probability of its weight.
pub(crate) fn pick<T: Copy>(rng: &mut SmallRng, table: &[(T, u32)]) -> T {
    let total: u32 = table.iter().map(|(_, w)| w).sum();
    let mut r = rng.gen_range(0..total);
    for &(item, w) in table {
        if r < w {
            return item;
        }
        r -= w;
    }
    table[table.len() - 1].0
}

/// A line size drawn around `mean` (the sum of two uniform draws: a triangle `mean +- spread`).
pub(crate) fn line_target(rng: &mut SmallRng, mean: usize, spread: usize) -> usize {
    mean - spread + rng.gen_range(0..=spread) + rng.gen_range(0..=spread)
}

/// Bytes of the text the generators cut their filler from.
const SOUP_BYTES: usize = 1 << 18;

/// The generated words: a vocabulary (common words first, then made-up ones) and a long run
/// of sentences of it (the soup) that long fillers are cut from, which is much faster than
/// drawing each of their words.
pub(crate) struct Text {
    words: Vec<String>,
    soup: Vec<u8>,
}

impl Text {
    pub(crate) fn new(rng: &mut SmallRng) -> Text {
        let mut words: Vec<String> = COMMON.iter().map(|w| w.to_string()).collect();
        while words.len() < 2000 {
            let syllables = rng.gen_range(1..=3);
            words.push(pseudo_word(rng, syllables));
        }
        let mut text = Text {
            words,
            soup: Vec::new(),
        };
        let mut soup = String::with_capacity(SOUP_BYTES + 256);
        while soup.len() < SOUP_BYTES {
            let n = rng.gen_range(6..=18);
            soup.push_str(&capitalize(text.word(rng)));
            for _ in 1..n {
                soup.push(' ');
                soup.push_str(text.word(rng));
            }
            soup.push_str(". ");
        }
        text.soup = soup.into_bytes();
        text
    }

    /// A word, the first ones of the vocabulary more often (over a third of the draws are
    /// among the first 100).
    pub(crate) fn word(&self, rng: &mut SmallRng) -> &str {
        let u: f64 = rng.gen();
        &self.words[((u * u * u) * self.words.len() as f64) as usize]
    }

    /// Appends words separated by spaces while they fit in `max` more bytes.
    pub(crate) fn words_into(&self, rng: &mut SmallRng, max: usize, out: &mut String) {
        let end = out.len() + max;
        loop {
            let w = self.word(rng);
            let sep = usize::from(!out.is_empty() && !out.ends_with(' '));
            if out.len() + sep + w.len() > end {
                return;
            }
            if sep == 1 {
                out.push(' ');
            }
            out.push_str(w);
        }
    }

    /// Fills the last string of the JSON object in `buf` (serialized empty, `""`, and
    /// followed by `closing` bytes such as `}}`) with a cut of the soup from the start of a
    /// random sentence (letters, spaces and `.`: nothing a JSON string escapes), so that the
    /// line, with its newline, is `target` bytes long; left empty when it is that long already.
    pub(crate) fn fill_last_string(
        &self,
        rng: &mut SmallRng,
        buf: &mut Vec<u8>,
        closing: usize,
        target: usize,
    ) {
        let at = buf.len() - closing - 1;
        debug_assert_eq!(&buf[at - 1..=at], b"\"\"");
        let len = target
            .saturating_sub(buf.len() + 1)
            .min(self.soup.len() / 2);
        if len == 0 {
            return;
        }
        let mut start = rng.gen_range(0..self.soup.len() - len - 1024);
        while !self.soup[start..].starts_with(b". ") {
            start += 1;
        }
        let tail = buf.split_off(at);
        buf.extend_from_slice(&self.soup[start + 2..start + 2 + len]);
        if buf.last() == Some(&b' ') {
            buf.pop();
            buf.push(b'.');
        }
        buf.extend_from_slice(&tail);
    }
}

/// The rng of a generator: `seed` mixed with a constant per use, so that two uses of one seed
/// do not draw the same numbers.
pub(crate) fn rng_for(seed: u64, stream: u64) -> SmallRng {
    SmallRng::seed_from_u64(seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}
