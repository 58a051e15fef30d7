//! The glacier dataset: records shaped like the World Glacier Inventory's (WGI), one glacier
//! each, about 963 B a line as in the paper. A record's political unit is drawn from 40 with
//! Zipf weights (1/rank), and its place, heights and names from that unit's ranges.

use crate::records::{DatasetError, Records};
use crate::text::{capitalize, line_target, pick, pseudo_word, rng_for, round, Text};

use rand::rngs::SmallRng;
use rand::Rng;
use serde::Serialize;

/// Mean size of a line, newline included: the paper's mean value size (0.963 KB).
pub const MEAN_LINE: usize = 963;
/// Lines are drawn between MEAN_LINE - SPREAD and MEAN_LINE + SPREAD bytes.
const SPREAD: usize = 200;

/// The political units the paper's queries select (Q1-Q3, Q7), most frequent first.
pub const QUERIED: [&str; 4] = ["AUST", "FRAN", "BOLI", "BHUT"];

/// A political unit: where its glaciers are and how they are named.
struct Unit {
    code: &'static str,
    /// Two-letter code that starts its WGI ids.
    iso: &'static str,
    /// Continent digit (1 Africa, 2 North America, 3 South America, 4 Europe, 5 Asia,
    /// 6 Oceania, 7 Antarctica).
    continent: &'static str,
    lat: (f64, f64),
    lon: (f64, f64),
    /// Lowest glacier front and highest summit, in metres.
    elev: (i32, i32),
    /// Name prefix and suffix ("Glacier de " + name, name + "ferner").
    name: (&'static str, &'static str),
}

#[allow(clippy::too_many_arguments)]
const fn u(
    code: &'static str,
    iso: &'static str,
    continent: &'static str,
    lat: (f64, f64),
    lon: (f64, f64),
    elev: (i32, i32),
    name: (&'static str, &'static str),
) -> Unit {
    Unit {
        code,
        iso,
        continent,
        lat,
        lon,
        elev,
        name,
    }
}

/// The tables, one row a line (hence not formatted).
#[rustfmt::skip]
mod tables {
    use super::{u, Unit};

    /// In rank order: the unit at rank r (from 1) has weight 1/r, so AUST (5) gets 4.7 % of
    /// the records, FRAN (9) 2.6 %, BOLI (14) 1.7 % and BHUT (20) 1.2 %.
    pub const UNITS: [Unit; 40] = [
        u("SU", "SU", "5", (39.0, 81.0), (40.0, 178.0), (300, 7400), ("Lednik ", "")),
        u("CHIN", "CN", "5", (28.0, 49.0), (74.0, 104.0), (3800, 8000), ("", " Glacier")),
        u("CANA", "CA", "2", (49.0, 82.5), (-141.0, -62.0), (0, 5900), ("", " Glacier")),
        u("US", "US", "2", (36.5, 70.0), (-165.0, -105.0), (0, 6190), ("", " Glacier")),
        u("AUST", "AT", "4", (46.6, 47.6), (9.8, 13.9), (1900, 3790), ("", "ferner")),
        u("GL", "GL", "2", (59.8, 83.0), (-73.0, -12.0), (0, 3700), ("", " Glacier")),
        u("NEPL", "NP", "5", (26.5, 30.4), (80.1, 88.2), (3500, 8848), ("", " Glacier")),
        u("INDI", "IN", "5", (27.0, 36.0), (73.0, 95.0), (3000, 8500), ("", " Glacier")),
        u("FRAN", "FR", "4", (44.8, 46.0), (6.0, 7.1), (1500, 4808), ("Glacier de ", "")),
        u("PAKI", "PK", "5", (34.5, 37.1), (71.0, 77.8), (2500, 8611), ("", " Glacier")),
        u("NORW", "NO", "4", (59.5, 70.5), (5.0, 31.0), (0, 2469), ("", "breen")),
        u("ARGE", "AR", "3", (-55.0, -22.0), (-73.5, -65.0), (0, 6960), ("Glaciar ", "")),
        u("CHIL", "CL", "3", (-55.5, -17.5), (-75.5, -67.0), (0, 6890), ("Glaciar ", "")),
        u("BOLI", "BO", "3", (-22.0, -14.5), (-69.5, -66.5), (4500, 6540), ("Glaciar ", "")),
        u("SWIT", "CH", "4", (45.8, 47.0), (6.8, 10.5), (1700, 4634), ("", "gletscher")),
        u("PERU", "PE", "3", (-16.0, -8.0), (-78.5, -69.0), (4400, 6768), ("Nevado ", "")),
        u("ICEL", "IS", "4", (63.3, 66.5), (-24.0, -13.5), (0, 2110), ("", "jokull")),
        u("SWED", "SE", "4", (66.0, 68.5), (16.0, 18.5), (900, 2100), ("", "glaciaren")),
        u("ITAL", "IT", "4", (45.8, 47.0), (6.8, 13.0), (1900, 4600), ("Ghiacciaio ", "")),
        u("BHUT", "BT", "5", (27.3, 28.3), (89.0, 92.1), (4200, 7570), ("", " Glacier")),
        u("NZ", "NZ", "6", (-46.0, -39.2), (166.5, 176.0), (200, 3724), ("", " Glacier")),
        u("KAZA", "KZ", "5", (42.5, 50.5), (75.0, 88.0), (2800, 6995), ("Lednik ", "")),
        u("KYRG", "KG", "5", (39.3, 43.0), (69.0, 80.2), (3000, 7439), ("Lednik ", "")),
        u("TAJI", "TJ", "5", (36.7, 40.0), (67.5, 75.0), (3000, 7495), ("Lednik ", "")),
        u("MONG", "MN", "5", (45.0, 50.5), (87.5, 99.5), (2800, 4374), ("", " Glacier")),
        u("ECUA", "EC", "3", (-2.5, 0.5), (-79.0, -77.5), (4600, 6263), ("Glaciar ", "")),
        u("COLO", "CO", "3", (2.5, 11.0), (-76.5, -72.0), (4500, 5775), ("Glaciar ", "")),
        u("SPAI", "ES", "4", (42.5, 42.8), (-0.5, 0.8), (2700, 3404), ("Glaciar de ", "")),
        u("GERM", "DE", "4", (47.4, 47.6), (10.9, 13.0), (2000, 2962), ("", "ferner")),
        u("AFGH", "AF", "5", (34.5, 37.5), (69.0, 74.9), (3500, 7492), ("", " Glacier")),
        u("IRAN", "IR", "5", (35.8, 36.6), (50.5, 52.2), (3500, 5610), ("", " Glacier")),
        u("TURK", "TR", "5", (37.3, 39.8), (40.0, 44.4), (3000, 5137), ("", " Buzulu")),
        u("MEXI", "MX", "2", (18.9, 19.2), (-98.7, -97.2), (4600, 5636), ("Glaciar ", "")),
        u("VENE", "VE", "3", (8.4, 8.7), (-71.2, -70.8), (4700, 4978), ("Glaciar ", "")),
        u("KENY", "KE", "1", (-0.2, -0.1), (37.25, 37.35), (4500, 5199), ("", " Glacier")),
        u("TANZ", "TZ", "1", (-3.1, -3.0), (37.3, 37.4), (5000, 5895), ("", " Glacier")),
        u("UGAN", "UG", "1", (0.3, 0.45), (29.85, 29.95), (4400, 5109), ("", " Glacier")),
        u("INDO", "ID", "6", (-4.1, -4.0), (137.1, 137.3), (4400, 4884), ("", " Glacier")),
        u("ANT", "AQ", "7", (-80.0, -62.0), (-180.0, 180.0), (0, 4892), ("", " Glacier")),
        u("SJ", "SJ", "4", (76.5, 80.8), (10.5, 33.5), (0, 1717), ("", "breen")),
    ];

    pub const COMPASS: [&str; 8] = ["N", "NE", "E", "SE", "S", "SW", "W", "NW"];

    // The WGI's code tables, spelled out, with made-up frequencies.
    pub const SOURCE_NOURISH: &[(&str, u32)] = &[
        ("unknown", 25), ("snow and drift snow", 50), ("avalanche ice and snow", 20),
        ("superimposed ice", 5),
    ];
    pub const ACTIVITY: &[(&str, u32)] = &[
        ("active", 60), ("inactive", 10), ("stagnant", 8), ("uncertain", 22),
    ];
    pub const PRIMARY_CLASS: &[(&str, u32)] = &[
        ("miscellaneous", 3), ("ice field", 2), ("ice cap", 3), ("outlet glacier", 6),
        ("valley glacier", 14), ("mountain glacier", 45), ("glacieret and snowfield", 22),
        ("rock glacier", 5),
    ];
    pub const FORM: &[(&str, u32)] = &[
        ("miscellaneous", 5), ("compound basins", 4), ("compound basin", 8),
        ("simple basin", 30), ("cirque", 35), ("niche", 10), ("crater", 1), ("ice apron", 4),
        ("group", 2), ("remnant", 1),
    ];
    pub const FRONTAL_CHARS: &[(&str, u32)] = &[
        ("normal or miscellaneous", 70), ("piedmont", 3), ("expanded foot", 6), ("lobed", 8),
        ("calving", 5), ("coalescing, non-contributing", 8),
    ];
    pub const TONGUE_ACTIVITY: &[(&str, u32)] = &[
        ("uncertain", 45), ("marked retreat", 20), ("slight retreat", 15), ("stationary", 10),
        ("slight advance", 5), ("marked advance", 2), ("possible surge", 1), ("known surge", 1),
        ("oscillating", 1),
    ];
}
use tables::*;

/// One line of the dataset; `remarks` is serialized empty, then filled to the line's size.
#[derive(Serialize)]
struct Glacier<'a> {
    id: &'a str,
    political_unit: &'static str,
    wgi_glacier_id: String,
    glacier_name: String,
    basin_code: String,
    continent_code: &'static str,
    lat: f64,
    lon: f64,
    max_elev: i32,
    mean_elev: i32,
    min_elev: i32,
    total_area: f64,
    mean_length: f64,
    mean_width: f64,
    orientation_acc: &'static str,
    orientation_abl: &'static str,
    source_nourish: &'static str,
    activity: &'static str,
    primary_class: &'static str,
    form: &'static str,
    frontal_chars: &'static str,
    tongue_activity: &'static str,
    topo_year: u16,
    photo_year: u16,
    remarks: &'static str,
}

/// Generates glaciers one after the other.
pub struct Glaciers {
    rng: SmallRng,
    text: Text,
    /// Cumulative weights of UNITS.
    cumulative: Vec<f64>,
    /// Records so far of each unit (their number in the unit gives the WGI id's last digits).
    counts: Vec<u64>,
}

impl Glaciers {
    pub fn new(seed: u64) -> Glaciers {
        let mut rng = rng_for(seed, 1);
        let text = Text::new(&mut rng);
        let cumulative = (1..=UNITS.len())
            .scan(0.0, |sum, rank| {
                *sum += 1.0 / rank as f64;
                Some(*sum)
            })
            .collect();
        Glaciers {
            rng,
            text,
            cumulative,
            counts: vec![0; UNITS.len()],
        }
    }

    fn unit(&mut self) -> usize {
        let total = self.cumulative[self.cumulative.len() - 1];
        let x = self.rng.gen::<f64>() * total;
        self.cumulative
            .partition_point(|&c| c <= x)
            .min(UNITS.len() - 1)
    }
}

impl Records for Glaciers {
    fn write(&mut self, id: &str, buf: &mut Vec<u8>) -> Result<(), DatasetError> {
        let target = line_target(&mut self.rng, MEAN_LINE, SPREAD);
        let ui = self.unit();
        let unit = &UNITS[ui];
        self.counts[ui] += 1;
        let rng = &mut self.rng;

        // Drainage: one of three letters of the unit and a number below 3000, whose first three
        // digits make the basin code (300 basins a letter).
        let letter = char::from(b'A' + ((ui * 7 + rng.gen_range(0..3)) % 26) as u8);
        let drainage = rng.gen_range(0..3000u32);
        let seq = self.counts[ui] % 10_000;
        let name = if rng.gen_ratio(3, 10) {
            String::new()
        } else {
            let syllables = rng.gen_range(2..=3);
            let base = capitalize(&pseudo_word(rng, syllables));
            format!("{}{}{}", unit.name.0, base, unit.name.1)
        };

        // Areas from 0.01 to 100 km2, most of them small; length and width to match.
        let u: f64 = rng.gen();
        let area = 0.01 * 10f64.powf(4.0 * u * u);
        let length = (area.sqrt() * rng.gen_range(1.2..3.0)).max(0.1);
        let width = (area / length).max(0.01);

        // Heights: the summit in the upper three quarters of the unit's range, mostly around
        // its middle (the mean of two draws), the front a drop below it that grows with the
        // length, the mean in between.
        let (lo, hi) = unit.elev;
        let quarter = (hi - lo) / 4;
        let max_elev =
            lo + quarter + rng.gen_range(0..=quarter * 3 / 2) + rng.gen_range(0..=quarter * 3 / 2);
        let drop = ((150.0 + 600.0 * length.sqrt()) as i32).min(max_elev - lo);
        let min_elev = max_elev - rng.gen_range(drop / 4..=drop);
        let mean_elev =
            min_elev + ((max_elev - min_elev) as f64 * rng.gen_range(0.35..0.65)) as i32;

        let acc = rng.gen_range(0..COMPASS.len());
        let abl = (acc + rng.gen_range(COMPASS.len() - 1..=COMPASS.len() + 1)) % COMPASS.len();
        let photo_year = rng.gen_range(1948..=2004u16);
        let glacier = Glacier {
            id,
            political_unit: unit.code,
            wgi_glacier_id: format!(
                "{}{}{letter}{drainage:04}{seq:04}",
                unit.iso, unit.continent
            ),
            glacier_name: name,
            basin_code: format!("{}{letter}{:03}", unit.continent, drainage / 10),
            continent_code: unit.continent,
            lat: round(rng.gen_range(unit.lat.0..unit.lat.1), 3),
            lon: round(rng.gen_range(unit.lon.0..unit.lon.1), 3),
            max_elev,
            mean_elev,
            min_elev,
            total_area: round(area, 3),
            mean_length: round(length, 2),
            mean_width: round(width, 2),
            orientation_acc: COMPASS[acc],
            orientation_abl: COMPASS[abl],
            source_nourish: pick(rng, SOURCE_NOURISH),
            activity: pick(rng, ACTIVITY),
            primary_class: pick(rng, PRIMARY_CLASS),
            form: pick(rng, FORM),
            frontal_chars: pick(rng, FRONTAL_CHARS),
            tongue_activity: pick(rng, TONGUE_ACTIVITY),
            topo_year: photo_year + rng.gen_range(0..=6),
            photo_year,
            remarks: "",
        };
        serde_json::to_writer(&mut *buf, &glacier)?;
        self.text.fill_last_string(&mut self.rng, buf, 1, target);
        Ok(())
    }

    fn key_counts(&self) -> Vec<(String, u64)> {
        QUERIED
            .iter()
            .map(|code| {
                let i = UNITS.iter().position(|u| u.code == *code).unwrap_or(0);
                (format!("political_unit={code}"), self.counts[i])
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::{generate, Kind};
    use serde_json::Value;

    fn lines(records: u64, seed: u64) -> Vec<Value> {
        let mut out = Vec::new();
        generate(Kind::Glacier, records, seed, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        // `remarks`, the filler, is the last field.
        assert!(text
            .lines()
            .all(|l| l.ends_with("\"}") && l.contains(",\"remarks\":\"")));
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[test]
    fn units_are_distinct_and_queried_ones_listed() {
        for (i, a) in UNITS.iter().enumerate() {
            assert!((2..=4).contains(&a.code.len()), "{}", a.code);
            assert!(a.lat.0 < a.lat.1 && a.lon.0 < a.lon.1 && a.elev.0 < a.elev.1);
            assert!(
                UNITS[i + 1..].iter().all(|b| b.code != a.code),
                "{}",
                a.code
            );
        }
        let ranks: Vec<usize> = QUERIED
            .iter()
            .map(|q| UNITS.iter().position(|u| u.code == *q).unwrap())
            .collect();
        assert!(ranks.windows(2).all(|w| w[0] < w[1]), "{ranks:?}");
    }

    #[test]
    fn glacier_fields_are_plausible() {
        for doc in lines(2000, 7) {
            let o = doc.as_object().unwrap();
            let unit = UNITS
                .iter()
                .find(|u| u.code == o["political_unit"].as_str().unwrap())
                .unwrap();
            let (max, mean, min) = (
                o["max_elev"].as_i64().unwrap(),
                o["mean_elev"].as_i64().unwrap(),
                o["min_elev"].as_i64().unwrap(),
            );
            assert!(min <= mean && mean <= max, "{doc}");
            assert!(
                min >= unit.elev.0 as i64 && max <= unit.elev.1 as i64,
                "{doc}"
            );
            let lat = o["lat"].as_f64().unwrap();
            assert!(lat >= unit.lat.0 && lat <= unit.lat.1, "{doc}");
            assert_eq!(o["basin_code"].as_str().unwrap().len(), 5);
            assert_eq!(o["wgi_glacier_id"].as_str().unwrap().len(), 12);
            assert!(o["total_area"].as_f64().unwrap() > 0.0);
            assert!(o["topo_year"].as_u64() >= o["photo_year"].as_u64());
            assert!(!o["remarks"].as_str().unwrap().is_empty(), "{doc}");
        }
    }

    #[test]
    fn glacier_queried_units_have_the_documented_order() {
        let docs = lines(5000, 42);
        let count = |code: &str| docs.iter().filter(|d| d["political_unit"] == code).count();
        let counts: Vec<usize> = QUERIED.iter().map(|q| count(q)).collect();
        assert!(counts.windows(2).all(|w| w[0] > w[1]), "{counts:?}");
        // Q7 takes FRAN's 50 highest.
        assert!(counts[1] >= 50, "{counts:?}");
    }
}
