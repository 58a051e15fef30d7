//! The tweets dataset: tweets of 10,000 users shaped like the Twitter API's (v1.1 with v2's
//! long-form `note_tweet` text), about 8 KiB a line as in the paper. Authors are drawn with
//! Zipf weights (rank^-0.9), the paper's queried users at fixed ranks, and each user's
//! embedded profile is the same in all its tweets.

use crate::records::{DatasetError, Records};
use crate::text::{capitalize, line_target, pick, pseudo_word, rng_for, round, Text};
use crate::timestamp::utc_timestamp;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::Rng;
use serde::Serialize;
use serde_json::{json, Value};

/// Mean size of a line, newline included: the paper's "approximately 8KB".
pub const MEAN_LINE: usize = 8192;
/// Lines are drawn between MEAN_LINE - SPREAD and MEAN_LINE + SPREAD bytes.
const SPREAD: usize = 2000;
/// Users, with ids 1..=USERS.
pub const USERS: u32 = 10_000;
/// Exponent of the authors' Zipf law.
const ZIPF: f64 = 0.9;
/// The users the paper's queries select (Q4-Q6) and their ranks among authors (from 0), most
/// frequent first: 2.4 %, 1.1 % and 0.56 % of the tweets.
pub const QUERIED: [(u32, usize); 3] = [(2517, 2), (3161, 6), (1153, 14)];
/// 2022-01-01T00:00:00Z; the n-th tweet is about n x STEP seconds later.
const START: i64 = 1_640_995_200;
const STEP: i64 = 20;

/// The tables, one row a line (hence not formatted).
#[rustfmt::skip]
mod tables {
    pub const LANG: &[(&str, u32)] = &[
        ("en", 55), ("ja", 12), ("es", 8), ("pt", 5), ("ar", 4), ("ko", 3), ("fr", 3), ("tr", 2),
        ("in", 2), ("und", 6),
    ];
    /// (app, its address, weight): the `source` is a link to the app, as Twitter's.
    pub const SOURCE: &[((&str, &str), u32)] = &[
        (("Twitter for iPhone", "http://twitter.com/download/iphone"), 40),
        (("Twitter for Android", "http://twitter.com/download/android"), 30),
        (("Twitter Web App", "https://mobile.twitter.com"), 20),
        (("TweetDeck", "https://about.twitter.com/products/tweetdeck"), 4),
        (("Buffer", "https://buffer.com"), 2),
        (("IFTTT", "https://ifttt.com"), 2),
        (("Hootsuite Inc.", "https://www.hootsuite.com"), 2),
    ];
    /// Drawn with the first ones more often.
    pub const HASHTAGS: &[&str] = &[
        "news", "music", "love", "travel", "photography", "ai", "football", "nba", "crypto",
        "climate", "art", "books", "gaming", "tech", "food", "fashion", "science", "health",
        "politics", "movies", "tbt", "repost", "summer", "nature", "fitness", "motivation",
        "election", "worldcup", "bitcoin", "startup", "jobs", "weather", "olympics", "kpop",
        "anime", "rustlang", "space",
    ];
    /// (city, region, country code, country, longitude, latitude).
    pub type City = (&'static str, &'static str, &'static str, &'static str, f64, f64);
    pub const CITIES: &[City] = &[
        ("New York", "NY", "US", "United States", -73.99, 40.73),
        ("Los Angeles", "CA", "US", "United States", -118.24, 34.05),
        ("Chicago", "IL", "US", "United States", -87.63, 41.88),
        ("Toronto", "Ontario", "CA", "Canada", -79.38, 43.65),
        ("Mexico City", "CDMX", "MX", "Mexico", -99.13, 19.43),
        ("Sao Paulo", "Brazil", "BR", "Brazil", -46.63, -23.55),
        ("Buenos Aires", "Argentina", "AR", "Argentina", -58.38, -34.60),
        ("London", "England", "GB", "United Kingdom", -0.13, 51.51),
        ("Paris", "France", "FR", "France", 2.35, 48.86),
        ("Madrid", "Spain", "ES", "Spain", -3.70, 40.42),
        ("Berlin", "Germany", "DE", "Germany", 13.40, 52.52),
        ("Istanbul", "Turkey", "TR", "Turkey", 28.98, 41.01),
        ("Lagos", "Nigeria", "NG", "Nigeria", 3.38, 6.52),
        ("Riyadh", "Saudi Arabia", "SA", "Saudi Arabia", 46.68, 24.71),
        ("Mumbai", "India", "IN", "India", 72.88, 19.08),
        ("Jakarta", "Indonesia", "ID", "Indonesia", 106.85, -6.21),
        ("Manila", "Philippines", "PH", "Philippines", 120.98, 14.60),
        ("Seoul", "South Korea", "KR", "South Korea", 126.98, 37.57),
        ("Tokyo", "Japan", "JP", "Japan", 139.69, 35.69),
        ("Sydney", "New South Wales", "AU", "Australia", 151.21, -33.87),
    ];
}
use tables::{City, CITIES, HASHTAGS, LANG, SOURCE};

/// One line of the dataset; its sub-objects are JSON values (their keys in alphabetical order).
#[derive(Serialize)]
struct Tweet<'a> {
    id: &'a str,
    user_id: u32,
    created_at: String,
    text: &'a str,
    lang: &'static str,
    retweet_count: u64,
    favorite_count: u64,
    reply_count: u64,
    hashtags: &'a [&'static str],
    mentions: Vec<&'a str>,
    source: String,
    place: Option<&'a Value>,
    user: &'a Value,
    entities: Value,
    /// Its keys in alphabetical order, so that `note_text` (long-form text, as the API's
    /// `note_tweet`) is the line's last string: serialized empty, then filled.
    extended: Value,
}

/// A user as embedded in its tweets.
struct User {
    screen_name: String,
    doc: Value,
}

/// Generates tweets one after the other.
pub struct Tweets {
    seed: u64,
    rng: SmallRng,
    text: Text,
    /// Cumulative Zipf weights of the author ranks, and the user at each rank.
    cumulative: Vec<f64>,
    by_rank: Vec<u32>,
    /// Users by id, made when first drawn from an rng of their own (so the same in all their
    /// tweets).
    users: Vec<Option<User>>,
    places: Vec<Value>,
    tweets_of: Vec<u64>,
    n: i64,
}

impl Tweets {
    pub fn new(seed: u64) -> Tweets {
        let mut rng = rng_for(seed, 2);
        let text = Text::new(&mut rng);
        let mut by_rank: Vec<u32> = (1..=USERS).collect();
        by_rank.shuffle(&mut rng);
        for (user, rank) in QUERIED {
            let at = by_rank.iter().position(|&u| u == user).unwrap_or(rank);
            by_rank.swap(at, rank);
        }
        let cumulative = (1..=USERS)
            .scan(0.0, |sum, rank| {
                *sum += (rank as f64).powf(-ZIPF);
                Some(*sum)
            })
            .collect();
        Tweets {
            seed,
            rng,
            text,
            cumulative,
            by_rank,
            users: (0..=USERS).map(|_| None).collect(),
            places: CITIES.iter().enumerate().map(place).collect(),
            tweets_of: vec![0; USERS as usize + 1],
            n: 0,
        }
    }

    /// A user drawn by the Zipf law, made if new.
    fn draw_user(&mut self) -> u32 {
        let total = self.cumulative[self.cumulative.len() - 1];
        let x = self.rng.gen::<f64>() * total;
        let rank = self
            .cumulative
            .partition_point(|&c| c <= x)
            .min(self.by_rank.len() - 1);
        let id = self.by_rank[rank];
        if self.users[id as usize].is_none() {
            let user = make_user(self.seed, id, rank, &self.text);
            self.users[id as usize] = Some(user);
        }
        id
    }
}

/// The place of city `i`, with a box of 0.4 degrees around it.
fn place((i, &(name, region, cc, country, lon, lat)): (usize, &City)) -> Value {
    let (w, s, e, n) = (lon - 0.2, lat - 0.2, lon + 0.2, lat + 0.2);
    let corners = [[w, s], [w, n], [e, n], [e, s]].map(|p| p.map(|x| round(x, 6)));
    json!({
        "id": format!("{:016x}", (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)),
        "name": name, "full_name": format!("{name}, {region}"), "country_code": cc,
        "country": country, "place_type": "city",
        "bounding_box": { "type": "Polygon", "coordinates": [corners] },
    })
}

/// User `id` of `rank` among authors, from an rng of its own.
fn make_user(seed: u64, id: u32, rank: usize, text: &Text) -> User {
    let mut rng = rng_for(seed, 1000 + u64::from(id));
    let rng = &mut rng;
    let handle = pseudo_word(rng, 2);
    // Letters then the id: unique, and at most 15 characters as Twitter's.
    let screen_name = format!("{}{id}", &handle[..handle.len().min(10)]);
    let syllables = [rng.gen_range(1..=2), rng.gen_range(1..=3)];
    let name = syllables
        .map(|n| capitalize(&pseudo_word(rng, n)))
        .join(" ");
    let popular = if rank < 100 { 1.5 } else { 0.0 };
    let mut description = String::new();
    let len = rng.gen_range(0..=160);
    text.words_into(rng, len, &mut description);
    let city = CITIES[rng.gen_range(0..CITIES.len())].0;
    let mut color = || format!("{:06X}", rng.gen_range(0..0x100_0000));
    let colors = [color(), color(), color(), color()];
    let doc = json!({
        "id": id, "screen_name": screen_name, "name": name,
        "followers_count": 10f64.powf(rng.gen_range(0.5..4.5) + popular) as u64,
        "friends_count": 10f64.powf(rng.gen_range(0.7..3.5)) as u64,
        "statuses_count": 10f64.powf(rng.gen_range(1.0..4.5) + popular) as u64,
        "verified": rng.gen_ratio(1, 50) || (rank < 20 && rng.gen_ratio(1, 2)),
        "description": description,
        "location": pick(rng, &[("", 30), (city, 70)]),
        "created_at": utc_timestamp(rng.gen_range(1_170_000_000..START)),
        "profile": {
            "background_color": colors[0], "link_color": colors[1], "text_color": colors[2],
            "sidebar_fill_color": colors[3],
            "image_url": format!("https://pbs.twimg.com/profile_images/{}/{}_normal.jpg",
                rng.gen_range(10u64.pow(18)..10u64.pow(19)), short_code(rng, 8)),
            "banner_url": format!("https://pbs.twimg.com/profile_banners/{id}/{}",
                rng.gen_range(1_300_000_000..START)),
            "url": rng.gen_ratio(2, 5).then(|| format!("https://t.co/{}", short_code(rng, 10))),
        },
    });
    User { screen_name, doc }
}

/// `len` random letters and digits, as t.co and media codes.
fn short_code(rng: &mut SmallRng, len: usize) -> String {
    const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    (0..len)
        .map(|_| char::from(ALNUM[rng.gen_range(0..ALNUM.len())]))
        .collect()
}

/// A count most tweets have small: up to `max`, log-uniform of a cubed uniform draw.
fn skewed(rng: &mut SmallRng, max: f64) -> u64 {
    let u: f64 = rng.gen();
    ((max + 1.0).powf(u * u * u) - 1.0) as u64
}

impl Records for Tweets {
    fn write(&mut self, id: &str, buf: &mut Vec<u8>) -> Result<(), DatasetError> {
        self.n += 1;
        let n = self.n;
        let target = line_target(&mut self.rng, MEAN_LINE, SPREAD);
        let author = self.draw_user();
        self.tweets_of[author as usize] += 1;
        let mentioned: Vec<u32> = (0..pick(&mut self.rng, &[(0, 70), (1, 22), (2, 8)]))
            .map(|_| self.draw_user())
            .collect();
        let (rng, words, users) = (&mut self.rng, &self.text, &self.users);
        let user = |id: u32| users[id as usize].as_ref().expect("made when drawn");
        let tags: Vec<&str> = (0..pick(rng, &[(0, 60), (1, 25), (2, 10), (3, 5)]))
            .map(|_| HASHTAGS[(rng.gen::<f64>().powi(2) * HASHTAGS.len() as f64) as usize])
            .collect();
        let link = rng.gen_ratio(1, 4).then(|| short_code(rng, 10));

        // The text: mentions, words, hashtags, then the link; at most 280 characters.
        let mut text = String::new();
        let mut user_mentions = Vec::new();
        for &m in &mentioned {
            let screen_name = user(m).screen_name.as_str();
            let start = text.len();
            text.push_str(&format!("@{screen_name} "));
            let indices = [start, text.len() - 1];
            user_mentions.push(json!({"screen_name": screen_name, "id": m, "indices": indices}));
        }
        let tail =
            tags.iter().map(|t| t.len() + 2).sum::<usize>() + 24 * usize::from(link.is_some());
        let len = rng.gen_range(20..=280usize);
        words.words_into(rng, len.saturating_sub(text.len() + tail).max(8), &mut text);
        text.truncate(text.trim_end().len());
        let mut hashtags = Vec::new();
        for &t in &tags {
            let start = text.len() + 1;
            text.push_str(&format!(" #{t}"));
            hashtags.push(json!({"text": t, "indices": [start, text.len()]}));
        }
        let mut urls = Vec::new();
        if let Some(code) = link {
            let start = text.len() + 1;
            text.push_str(&format!(" https://t.co/{code}"));
            let site = pseudo_word(rng, 2);
            urls.push(json!({
                "url": text[start..], "indices": [start, text.len()],
                "expanded_url": format!("https://www.{site}.com/{}", short_code(rng, 12)),
                "display_url": format!("{site}.com/{}...", short_code(rng, 6)),
            }));
        }
        let screen_name = &user(author).screen_name;
        let media: Vec<Value> = (0..pick(rng, &[(0usize, 60), (1, 25), (2, 7), (3, 4), (4, 4)]))
            .map(|k| media(rng, words, screen_name, n, k))
            .collect();
        let places = &self.places;
        let place = rng
            .gen_ratio(1, 5)
            .then(|| &places[rng.gen_range(0..places.len())]);
        let source = pick(rng, SOURCE);
        let tweet = Tweet {
            id,
            user_id: author,
            created_at: utc_timestamp(START + 60 + n * STEP + rng.gen_range(-60..=60)),
            text: &text,
            lang: pick(rng, LANG),
            retweet_count: skewed(rng, 100_000.0),
            favorite_count: skewed(rng, 500_000.0),
            reply_count: skewed(rng, 20_000.0),
            hashtags: &tags,
            mentions: mentioned
                .iter()
                .map(|&m| user(m).screen_name.as_str())
                .collect(),
            source: format!("<a href=\"{}\" rel=\"nofollow\">{}</a>", source.1, source.0),
            place,
            user: &user(author).doc,
            entities: json!({"hashtags": hashtags, "user_mentions": user_mentions, "urls": urls}),
            extended: json!({
                "full_text": text, "display_text_range": [0, text.len()], "media": media,
                "note_text": "",
            }),
        };
        serde_json::to_writer(&mut *buf, &tweet)?;
        self.text.fill_last_string(&mut self.rng, buf, 2, target);
        Ok(())
    }

    fn key_counts(&self) -> Vec<(String, u64)> {
        QUERIED
            .iter()
            .map(|&(user, _)| (format!("user_id={user}"), self.tweets_of[user as usize]))
            .collect()
    }
}

/// The `k`-th photo or video of tweet `n`.
fn media(rng: &mut SmallRng, text: &Text, screen_name: &str, n: i64, k: usize) -> Value {
    let id = 1_480_000_000_000_000_000 + n as u64 * 1000 + k as u64;
    let code = short_code(rng, 10);
    let kind = pick(rng, &[("photo", 85), ("video", 10), ("animated_gif", 5)]);
    let shapes = [
        ((1200, 900), 3),
        ((1080, 1350), 2),
        ((1920, 1080), 3),
        ((900, 1200), 2),
    ];
    let (w, h): (u32, u32) = pick(rng, &shapes);
    let fit = |max: u32| json!({"w": w * max / w.max(h), "h": h * max / w.max(h), "resize": "fit"});
    let alt_text = rng.gen_ratio(1, 5).then(|| {
        let mut alt = String::new();
        let len = rng.gen_range(20..=200);
        text.words_into(rng, len, &mut alt);
        alt
    });
    json!({
        "id": id, "media_key": format!("3_{id}"), "type": kind,
        "url": format!("https://t.co/{code}"), "display_url": format!("pic.twitter.com/{code}"),
        "expanded_url": format!("https://twitter.com/{screen_name}/status/{id}/photo/{}", k + 1),
        "media_url": format!("https://pbs.twimg.com/media/{}.jpg", short_code(rng, 15)),
        "sizes": {
            "thumb": {"w": 150, "h": 150, "resize": "crop"}, "small": fit(680),
            "medium": fit(1200), "large": fit(w.max(h)),
        },
        "alt_text": alt_text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::{generate, Kind};
    use std::collections::HashMap;

    #[test]
    fn tweets_are_consistent_and_the_queried_users_ordered() {
        assert_eq!(utc_timestamp(START), "2022-01-01T00:00:00Z");
        assert_eq!(utc_timestamp(951_827_696), "2000-02-29T12:34:56Z");
        let mut out = Vec::new();
        generate(Kind::Tweets, 3000, 42, &mut out).unwrap();
        let (mut counts, mut names) = (HashMap::new(), HashMap::new());
        for line in out.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            let d: Value = serde_json::from_slice(line).unwrap();
            let user = d["user_id"].as_u64().unwrap();
            *counts.entry(user).or_insert(0) += 1;
            // The embedded user is the author, the same in all its tweets.
            assert_eq!(d["user"]["id"].as_u64(), Some(user));
            let name = d["user"]["screen_name"].as_str().unwrap();
            assert!(
                name.len() <= 15 && name.ends_with(&user.to_string()),
                "{name}"
            );
            assert_eq!(names.entry(user).or_insert_with(|| name.to_string()), name);
            let text = d["text"].as_str().unwrap();
            assert!(!text.is_empty() && text.len() <= 280, "{text:?}");
            assert_eq!(d["extended"]["full_text"], text);
            for (list, field, sign) in [
                ("hashtags", "text", '#'),
                ("user_mentions", "screen_name", '@'),
            ] {
                for x in d["entities"][list].as_array().unwrap() {
                    let [s, e] = [0, 1].map(|i| x["indices"][i].as_u64().unwrap() as usize);
                    assert_eq!(text[s..e], format!("{sign}{}", x[field].as_str().unwrap()));
                }
            }
            let created = d["created_at"].as_str().unwrap();
            assert!(
                created.len() == 20 && created.starts_with("2022-01-"),
                "{created}"
            );
            assert!(d["place"].is_null() || d["place"]["country_code"].is_string());
        }
        let queried: Vec<usize> = QUERIED
            .iter()
            .map(|(u, _)| counts[&u64::from(*u)])
            .collect();
        assert!(queried.windows(2).all(|w| w[0] > w[1]), "{queried:?}");
        // Among the users with many tweets: each has more than 3 x the mean per author.
        let mean = 3000 / counts.len();
        assert!(
            queried.iter().all(|&c| c > 3 * mean),
            "{queried:?} vs {mean}"
        );
    }
}
