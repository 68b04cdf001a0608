//! What the benchmarks share: a results file of JSON lines, a progress bar,
//! a scratch folder, fractions, medians, rounding and the calls per model.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::Value;

/// One JSON object per benchmark item, in a file.
pub struct Results {
    file: std::fs::File,
    pub path: PathBuf,
}

impl Results {
    /// `given`, or `<data dir>/benchmarks/<name>-results.jsonl`, emptied.
    pub fn create(given: Option<&Path>, data_dir: &Path, name: &str) -> Result<Self> {
        let path = Self::path(given, data_dir, name)?;
        let file = std::fs::File::create(&path).with_context(|| format!("cannot write {}", path.display()))?;
        Ok(Self { file, path })
    }

    /// Like `create`, but keeps the items an earlier run wrote to the same
    /// file and that `keep` accepts, and returns them: a run too long for
    /// one sitting can go on where it stopped. A line that does not parse
    /// (an item cut off mid-write) is dropped, so its item runs again. The
    /// kept lines are written aside and moved in, so a stop here loses none.
    pub fn resume(given: Option<&Path>, data_dir: &Path, name: &str, keep: impl Fn(&Value) -> bool) -> Result<(Self, Vec<Value>)> {
        let path = Self::path(given, data_dir, name)?;
        let earlier: Vec<Value> = match std::fs::read_to_string(&path) {
            Ok(text) => records(&text).into_iter().filter(|v| keep(v)).collect(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e).with_context(|| format!("cannot read {} to resume from it", path.display())),
        };
        Ok((Self::replaced(path, &earlier)?, earlier))
    }

    /// Puts `items` in place of what the file holds, as a resumed run
    /// amends an item it had kept.
    pub fn rewrite(&mut self, items: &[Value]) -> Result<()> {
        *self = Self::replaced(self.path.clone(), items)?;
        Ok(())
    }

    /// The file at `path` holding `items` and open to append more. They are
    /// written aside and moved in, so a stop at any point leaves either the
    /// old items or the new, never fewer.
    fn replaced(path: PathBuf, items: &[Value]) -> Result<Self> {
        let aside = path.with_extension("resuming");
        let kept: String = items.iter().map(|v| format!("{v}\n")).collect();
        std::fs::write(&aside, kept).with_context(|| format!("cannot write {}", aside.display()))?;
        std::fs::rename(&aside, &path).with_context(|| format!("cannot move {} to {}", aside.display(), path.display()))?;
        let file = std::fs::OpenOptions::new().append(true).open(&path).with_context(|| format!("cannot write {}", path.display()))?;
        Ok(Self { file, path })
    }

    fn path(given: Option<&Path>, data_dir: &Path, name: &str) -> Result<PathBuf> {
        let path = given.map(Path::to_path_buf).unwrap_or_else(|| data_dir.join(format!("benchmarks/{name}-results.jsonl")));
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
        }
        Ok(path)
    }

    pub fn write(&mut self, record: &Value) -> Result<()> {
        writeln!(self.file, "{record}").with_context(|| format!("cannot write {}", self.path.display()))
    }
}

/// The records of a results file's text, one JSON object a line; a line
/// cut off by a killed run is passed over.
fn records(text: &str) -> Vec<Value> {
    text.lines().filter_map(|line| serde_json::from_str::<Value>(line).ok()).collect()
}

/// A bar over `len` items with the current item's name (hidden when stderr
/// is not a terminal).
/// A file of the benchmarks' data (`crates/bench/data/NAME`), read from
/// the checkout when the bench runs: the sets are never compiled into a
/// binary.
pub fn data(name: &str) -> Result<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("data").join(name);
    std::fs::read_to_string(&path)
        .with_context(|| format!("the benchmark data {} cannot be read: run agentloop-bench from a checkout of agentloop", path.display()))
}

pub fn bar(len: usize) -> ProgressBar {
    let bar = ProgressBar::new(len as u64);
    bar.set_style(ProgressStyle::with_template("{bar:30} {pos}/{len} {msg} {elapsed}").unwrap_or_else(|_| ProgressStyle::default_bar()));
    bar
}

/// The first `n` characters of an item's text, for the bar.
pub fn label(text: &str) -> String {
    text.chars().take(40).collect()
}

/// A fresh scratch folder for a benchmark run, under the system's temp dir.
pub fn scratch_dir(name: &str) -> Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("agentloop-{name}-{}", std::process::id()));
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("cannot clear {}", dir.display()))?;
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    Ok(dir)
}

pub fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

/// The 95% Wilson score interval of `k` successes in `n`, as [low, high]
/// with four digits: honest at the small counts benchmarks have.
pub fn wilson(k: u32, n: usize) -> [f64; 2] {
    if n == 0 {
        return [0.0, 1.0];
    }
    let (k, n, z) = (f64::from(k), n as f64, 1.96_f64);
    let p = k / n;
    let centre = (p + z * z / (2.0 * n)) / (1.0 + z * z / n);
    let half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / (1.0 + z * z / n);
    let round = |x: f64| (x.clamp(0.0, 1.0) * 10_000.0).round() / 10_000.0;
    [round(centre - half), round(centre + half)]
}

/// `k` of `n` as a fraction with four digits.
pub fn fraction(k: u32, n: usize) -> f64 {
    round(f64::from(k) / n.max(1) as f64, 4)
}

/// Model calls per model name, summed over a run: with a chain, how much of
/// the work each model did.
#[derive(Default)]
pub struct Served(BTreeMap<String, u64>);

impl Served {
    pub fn add(&mut self, served: &BTreeMap<String, u64>) {
        for (model, calls) in served {
            *self.0.entry(model.clone()).or_default() += calls;
        }
    }

    /// `{"calls": {model: n}, "share": {model: fraction}}`.
    pub fn report(&self) -> Value {
        let total: u64 = self.0.values().sum();
        let share: BTreeMap<&String, f64> = self.0.iter().map(|(m, n)| (m, round(*n as f64 / total.max(1) as f64, 4))).collect();
        serde_json::json!({ "calls": self.0, "share": share })
    }
}

pub fn median(values: impl Iterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.collect();
    v.sort_by(|a, b| a.total_cmp(b));
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// The words of a text that carry its meaning: not the articles,
/// prepositions and question words any two goals or questions share. Tests
/// use it to keep worked examples apart from bench items.
#[cfg(test)]
pub fn content_words(text: &str) -> std::collections::BTreeSet<String> {
    const COMMON: [&str; 48] = [
        "a", "an", "the", "and", "or", "to", "of", "in", "on", "with", "each", "every", "that", "it", "its", "into", "as", "for", "from", "then", "is", "are",
        "be", "by", "at", "this", "these", "those", "one", "two", "three", "all", "new", "same", "just", "only", "no", "not", "per", "up", "your", "what",
        "which", "how", "who", "was", "where", "when",
    ];
    text.split_whitespace()
        .map(|w| w.trim_matches(|c: char| ".,;:'\"!?()`".contains(c)).to_lowercase())
        .filter(|w| !w.is_empty() && !COMMON.contains(&w.as_str()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_fractions_and_rounding() {
        assert_eq!(median([3.0, 1.0, 2.0].into_iter()), 2.0);
        assert_eq!(median([4.0, 1.0].into_iter()), 2.5);
        assert_eq!(median(std::iter::empty()), 0.0);
        assert_eq!(fraction(2, 3), 0.6667);
        assert_eq!(wilson(8, 10), [0.4902, 0.9433]);
        let mut served = Served::default();
        served.add(&BTreeMap::from([("small".to_string(), 3)]));
        served.add(&BTreeMap::from([("small".to_string(), 3), ("strong".to_string(), 2)]));
        assert_eq!(served.report(), serde_json::json!({"calls": {"small": 6, "strong": 2}, "share": {"small": 0.75, "strong": 0.25}}));
        assert_eq!(fraction(1, 0), 1.0);
        assert_eq!(round(1.23456, 2), 1.23);
    }

    #[test]
    fn a_resumed_file_keeps_what_it_accepts_and_an_amended_item_takes_its_place() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.jsonl");
        std::fs::write(&path, "{\"case\":\"a\"}\n{\"case\":\"b\",\"drop\":true}\n{\"case\":\"c\"").unwrap();
        let (mut results, mut kept) = Results::resume(Some(&path), dir.path(), "run", |v| v["drop"] != true).unwrap();
        assert_eq!(kept, vec![serde_json::json!({"case": "a"})], "the unaccepted item and the line cut off mid-write are dropped");
        kept[0]["peer"] = serde_json::json!({"solved": false});
        results.rewrite(&kept).unwrap();
        results.write(&serde_json::json!({"case": "d"})).unwrap();
        let lines = records(&std::fs::read_to_string(&path).unwrap());
        assert_eq!(lines, vec![serde_json::json!({"case": "a", "peer": {"solved": false}}), serde_json::json!({"case": "d"})]);
    }
}
