//! What a model may ask to see beyond the ranked regions: a definition by
//! name, a line range, or the lines that hold a word. Ranking misses; a
//! model that can name what it lacks (a helper the shown code calls, a
//! class the map lists) need not guess at code it was never shown.

use crate::symbols::Definition;
use crate::test_files::is_test_path;
use crate::view::Region;

/// Lines a region opened by range holds at most.
pub const MAX_OPEN_LINES: usize = 80;

/// The region `asked` names, in `files` with their `defs`:
/// - `path:start-end`: those lines (at most `MAX_OPEN_LINES`);
/// - `path:line`: the definition around that line, else the lines near it;
/// - a definition's name, qualified (`Cache.get`) or not (`get`): the first
///   such definition outside the tests, else in them.
///
/// `None` when nothing matches.
pub fn resolve(files: &[(String, String)], defs: &[Definition], asked: &str) -> Option<Region> {
    let asked = asked.trim().trim_matches('`');
    if let Some((path, lines)) = asked.rsplit_once(':').filter(|(_, l)| l.trim().starts_with(|c: char| c.is_ascii_digit())) {
        let path = path.trim();
        let (_, source) = files.iter().find(|(p, _)| p == path)?;
        let total = source.lines().count().max(1);
        let (start, end) = match lines.split_once('-') {
            Some((a, b)) => (a.trim().parse::<usize>().ok()?, b.trim().parse::<usize>().ok()?),
            None => {
                let line = lines.trim().parse::<usize>().ok()?;
                if let Some(d) = defs.iter().filter(|d| d.path == path && d.contains(line)).min_by_key(|d| d.lines()) {
                    if d.lines() <= MAX_OPEN_LINES {
                        return Some(Region::of(d));
                    }
                }
                (line.saturating_sub(MAX_OPEN_LINES / 2), line + MAX_OPEN_LINES / 2)
            }
        };
        let start = start.clamp(1, total);
        let end = end.clamp(start, total).min(start + MAX_OPEN_LINES - 1);
        return Some(Region { path: path.to_string(), start, end, name: format!("lines {start}-{end}") });
    }
    let named = |d: &&Definition| d.qualified == asked || d.name == asked;
    let code = defs.iter().filter(|d| !is_test_path(&d.path)).find(named);
    code.or_else(|| defs.iter().find(named)).map(Region::of)
}

/// The lines of `files` holding `word` (case-sensitive), as
/// `path:line: text`, code before tests, at most `limit`.
pub fn search(files: &[(String, String)], word: &str, limit: usize) -> Vec<String> {
    let word = word.trim();
    if word.is_empty() {
        return Vec::new();
    }
    let mut hits: Vec<(bool, String)> = Vec::new();
    for (path, source) in files {
        for (i, line) in source.lines().enumerate() {
            if line.contains(word) {
                let text: String = line.trim().chars().take(160).collect();
                hits.push((is_test_path(path), format!("{path}:{}: {text}", i + 1)));
            }
        }
    }
    hits.sort_by_key(|(test, _)| *test);
    hits.into_iter().take(limit).map(|(_, h)| h).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::symbols::definitions;

    fn files() -> Vec<(String, String)> {
        vec![
            ("pkg/cache.py".to_string(), "class Cache:\n    def get(self, k):\n        return self.d[k]\n\ndef helper(x):\n    return x\n".to_string()),
            ("tests/test_cache.py".to_string(), "def helper(x):\n    return Cache().get(x)\n".to_string()),
        ]
    }

    #[test]
    fn names_lines_and_ranges_each_open_a_region() {
        let files = files();
        let defs: Vec<Definition> = files.iter().flat_map(|(p, c)| definitions(p, c)).collect();
        let got = |asked: &str| resolve(&files, &defs, asked).map(|r| (r.path, r.start, r.end));
        assert_eq!(got("Cache.get"), Some(("pkg/cache.py".into(), 2, 3)));
        assert_eq!(got("helper"), Some(("pkg/cache.py".into(), 5, 6)), "code before tests");
        assert_eq!(got("pkg/cache.py:3"), Some(("pkg/cache.py".into(), 2, 3)), "the definition around a line");
        assert_eq!(got("pkg/cache.py:4-99"), Some(("pkg/cache.py".into(), 4, 6)), "a range, clamped to the file");
        assert_eq!(got("nowhere"), None);
        assert_eq!(got("Cache::get"), None, "a Rust path is a name, not a file and line");
        assert_eq!(got("missing.py:1-3"), None);
    }

    #[test]
    fn a_search_lists_code_before_tests() {
        let hits = search(&files(), "get", 10);
        assert_eq!(hits, vec!["pkg/cache.py:2: def get(self, k):", "tests/test_cache.py:2: return Cache().get(x)"]);
        assert_eq!(search(&files(), "get", 1).len(), 1);
        assert!(search(&files(), "  ", 5).is_empty());
    }
}
