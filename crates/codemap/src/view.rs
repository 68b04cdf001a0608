//! What the model is shown of a repository larger than its context: the
//! best-ranked definitions whole, as regions with their line numbers; the
//! test that explains a failure; and a map of every other definition, by
//! file, most relevant file first — all within a budget the caller counts
//! in the model's own tokens. Files without definitions (licences,
//! manifests, lock files, prose) are only named in the map, never shown.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::evidence::Evidence;
use crate::rank::{enclosing, Ranked};
use crate::symbols::{Definition, Kind};
use crate::test_files::is_test_path;

/// A span of a file shown whole, lines `start..=end` (1-based).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Region {
    pub path: String,
    pub start: usize,
    pub end: usize,
    /// The definition it holds (`Cache.get`), for people.
    pub name: String,
}

impl Region {
    /// The whole of a definition.
    pub fn of(d: &Definition) -> Self {
        Self { path: d.path.clone(), start: d.start, end: d.end, name: d.qualified.clone() }
    }

    /// Whether lines `start..=end` of `path` lie inside it.
    pub fn covers(&self, path: &str, start: usize, end: usize) -> bool {
        self.path == path && self.start <= start && end <= self.end
    }
}

/// How the budget is shared.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ViewOptions {
    /// Everything shown, in tokens.
    pub budget: usize,
    /// The part of it the ranked regions may take, the failing tests, and
    /// the map of the rest. The map is kept small: every token of it is
    /// prefill paid at each call, and a small model reads a long list of
    /// names as a list of things to do.
    pub regions_share: f64,
    pub tests_share: f64,
    pub map_share: f64,
    /// Regions shown at most.
    pub max_regions: usize,
}

impl ViewOptions {
    pub fn new(budget: usize) -> Self {
        Self { budget, regions_share: 0.65, tests_share: 0.15, map_share: 0.2, max_regions: 6 }
    }
}

/// The view, its regions and the cost it came to.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct View {
    pub text: String,
    /// The code regions shown, best first (tests apart).
    pub regions: Vec<Region>,
    /// The test regions shown.
    pub tests: Vec<Region>,
    pub cost: usize,
}

/// Builds the view of `files` (path, content) with their `defs` ranked by
/// `ranked`, the regions the model asked for (`opened`, see `open.rs`)
/// first; `cost(text)` is the text's length in the model's tokens.
pub fn build(
    files: &[(String, String)],
    defs: &[Definition],
    ranked: &[Ranked],
    opened: &[Region],
    evidence: &Evidence,
    options: ViewOptions,
    cost: &dyn Fn(&str) -> usize,
) -> View {
    let sources: BTreeMap<&str, &str> = files.iter().map(|(p, c)| (p.as_str(), c.as_str())).collect();
    let mut view = View::default();
    let mut spent = 0;

    let region_budget = (options.budget as f64 * options.regions_share) as usize;
    let mut code = String::new();
    for o in opened {
        let Some(source) = sources.get(o.path.as_str()) else { continue };
        if view.regions.iter().any(|g| g.covers(&o.path, o.start, o.end)) {
            continue;
        }
        let block = region_text(&o.path, source, o.start, o.end, &format!("{}, as asked", o.name));
        let c = cost(&block);
        if spent + c <= region_budget / 2 {
            spent += c;
            code.push_str(&block);
            view.regions.push(o.clone());
        }
    }
    for r in ranked {
        if view.regions.len() >= options.max_regions {
            break;
        }
        // A definition no signal points at is only in the map.
        if r.score <= 0.0 {
            break;
        }
        let d = &defs[r.index];
        // A class whose methods are definitions of their own is shown
        // through them; a region inside one already shown adds nothing.
        if d.kind == Kind::Class && defs.iter().any(|m| m.kind == Kind::Method && m.path == d.path && d.contains(m.start)) {
            continue;
        }
        if view.regions.iter().any(|g| g.covers(&d.path, d.start, d.end)) {
            continue;
        }
        let Some(source) = sources.get(d.path.as_str()) else { continue };
        let block = region_text(&d.path, source, d.start, d.end, &d.qualified);
        let c = cost(&block);
        if spent + c > region_budget {
            // The first region must be shown even when it is long: a window
            // of it around its middle, as much as fits.
            if view.regions.is_empty() {
                if let Some((block, region)) = window(d, source, region_budget, cost) {
                    spent += cost(&block);
                    code.push_str(&block);
                    view.regions.push(region);
                }
            }
            continue;
        }
        spent += c;
        code.push_str(&block);
        view.regions.push(Region::of(d));
    }

    let test_budget = (options.budget as f64 * options.tests_share) as usize;
    let mut tests = String::new();
    let mut test_spent = 0;
    for t in &evidence.failing {
        let Some(f) = t.frames.iter().find(|f| is_test_path(&f.path)) else { continue };
        let Some((_, d)) = enclosing(defs, &f.path, f.line) else { continue };
        if view.tests.iter().any(|g| g.covers(&d.path, d.start, d.end)) {
            continue;
        }
        let Some(source) = sources.get(d.path.as_str()) else { continue };
        let block = region_text(&d.path, source, d.start, d.end, &d.qualified);
        let c = cost(&block);
        if test_spent + c > test_budget {
            continue;
        }
        test_spent += c;
        tests.push_str(&block);
        view.tests.push(Region::of(d));
    }
    spent += test_spent;

    let map_budget = ((options.budget as f64 * options.map_share) as usize).min(options.budget.saturating_sub(spent));
    let map = map_text(files, defs, ranked, &view.regions, map_budget, cost);
    spent += cost(&map);

    let mut text = String::new();
    if !code.is_empty() {
        text.push_str("The code most likely involved, each region whole with its line numbers (change only these regions):\n\n");
        text.push_str(&code);
    }
    if !tests.is_empty() {
        text.push_str("Tests that fail, as written:\n\n");
        text.push_str(&tests);
    }
    text.push_str(&map);
    view.text = text;
    view.cost = spent;
    view
}

/// A region as shown: its path, lines and name, then its lines in a fence.
fn region_text(path: &str, source: &str, start: usize, end: usize, name: &str) -> String {
    let body: Vec<&str> = source.lines().skip(start.saturating_sub(1)).take(end + 1 - start).collect();
    format!("{path} lines {start}-{end} ({name})\n```{}\n{}\n```\n\n", fence(path), body.join("\n"))
}

/// The fence tag for a file, by extension: the shape a model's answer for
/// that file should take, so what the prompt shows and what it asks for agree.
pub fn fence(path: &str) -> &'static str {
    match path.rsplit_once('.').map(|(_, ext)| ext) {
        Some("py") => "python",
        Some("rs") => "rust",
        Some("js") => "javascript",
        Some("ts") => "typescript",
        Some("go") => "go",
        Some("toml") => "toml",
        Some("json") => "json",
        Some("md") => "markdown",
        _ => "",
    }
}

/// The largest run of whole lines of `d`, centred on its middle, whose
/// region fits in `budget`.
fn window(d: &Definition, source: &str, budget: usize, cost: &dyn Fn(&str) -> usize) -> Option<(String, Region)> {
    let (mut lo, mut hi) = (1usize, d.lines());
    let mut best = None;
    while lo <= hi {
        let len = (lo + hi) / 2;
        let start = d.start + (d.lines() - len) / 2;
        let end = start + len - 1;
        let block = region_text(&d.path, source, start, end, &format!("part of {}", d.qualified));
        if cost(&block) <= budget {
            best = Some((block, Region { start, end, ..Region::of(d) }));
            lo = len + 1;
        } else {
            hi = len - 1;
        }
    }
    best
}

/// Every source file and its definitions' first lines, files ranked by
/// their best definition, as many as fit; then the other files by name.
/// Test files are left out: a change is to the code, and the tests that
/// explain a failure are shown whole above.
fn map_text(files: &[(String, String)], defs: &[Definition], ranked: &[Ranked], shown: &[Region], budget: usize, cost: &dyn Fn(&str) -> usize) -> String {
    let mut order: Vec<&str> = Vec::new();
    for r in ranked {
        let p = defs[r.index].path.as_str();
        if !order.contains(&p) {
            order.push(p);
        }
    }
    for (p, _) in files {
        if !order.contains(&p.as_str()) && defs.iter().any(|d| &d.path == p) {
            order.push(p);
        }
    }
    order.retain(|p| !is_test_path(p));
    let head = "Map of the repository (each file's definitions: line, first line; regions shown above are marked *):\n";
    let mut out = head.to_string();
    // Room kept for the line that says how many files were left out.
    let budget = budget.saturating_sub(cost("(1000 more file(s) not listed: over budget)\n"));
    let mut spent = cost(head);
    let mut left_out = 0;
    for p in &order {
        let mut block = format!("{p}\n");
        for d in defs.iter().filter(|d| d.path == *p) {
            let mark = if shown.iter().any(|g| g.path == d.path && g.start <= d.start && d.start <= g.end) { "*" } else { " " };
            let indent = if d.kind == Kind::Method { "    " } else { "  " };
            block.push_str(&format!("{indent}{mark}{}: {}\n", d.start, d.signature));
        }
        let c = cost(&block);
        if spent + c > budget {
            left_out += 1;
            continue;
        }
        spent += c;
        out.push_str(&block);
    }
    let others: Vec<&str> = files.iter().map(|(p, _)| p.as_str()).filter(|p| !order.contains(p) && !is_test_path(p)).collect();
    if !others.is_empty() {
        let line = format!("Other files (not code, or in a language not mapped): {}\n", others.join(", "));
        if spent + cost(&line) <= budget {
            out.push_str(&line);
        } else {
            left_out += others.len();
        }
    }
    if left_out > 0 {
        out.push_str(&format!("({left_out} more file(s) not listed: over budget)\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rank::{rank, Weights};
    use crate::symbols::definitions;

    fn chars(text: &str) -> usize {
        text.len() / 4 + 1
    }

    /// A package whose faulty function sits in a file that sorts after a
    /// dozen larger ones, with licences and manifests beside it.
    fn package() -> Vec<(String, String)> {
        let mut files = vec![
            ("LICENSE.txt".to_string(), "Permission is hereby granted ".repeat(200)),
            ("MANIFEST.in".to_string(), "include *.rst\n".repeat(50)),
            ("README.rst".to_string(), "A library of helpers.\n".repeat(200)),
        ];
        for i in 0..12 {
            let body: String = (0..40).map(|j| format!("def helper_{i}_{j}(x):\n    return x + {j}\n\n")).collect();
            files.push((format!("pkg/a{i:02}_helpers.py"), body));
        }
        files.push(("pkg/zz_ranges.py".to_string(), "def parse_ranges(spec):\n    out = []\n    for part in spec.split(','):\n        lo, hi = part.split('-')\n        out.extend(range(int(lo), int(hi)))\n    return out\n".to_string()));
        files.push((
            "tests/test_ranges.py".to_string(),
            "from pkg.zz_ranges import parse_ranges\n\ndef test_parse_ranges():\n    assert parse_ranges('1-3') == [1, 2, 3]\n".to_string(),
        ));
        files
    }

    #[test]
    fn the_faulty_function_in_a_file_sorting_after_a_dozen_larger_ones_is_shown_and_licences_never_are() {
        let files = package();
        let defs: Vec<Definition> = files.iter().flat_map(|(p, c)| definitions(p, c)).collect();
        let out = "tests/test_ranges.py:4: in test_parse_ranges\n";
        let evidence = Evidence::read(
            &format!("=== FAILURES ===\n___ test_parse_ranges ___\n{out}pkg/zz_ranges.py:5: in parse_ranges\nE   AssertionError: assert [1, 2] == [1, 2, 3]\n=== short test summary info ===\nFAILED tests/test_ranges.py::test_parse_ranges - AssertionError\n"),
            "/ws",
        );
        let body = |d: &Definition| {
            files
                .iter()
                .find(|(p, _)| *p == d.path)
                .map(|(_, c)| c.lines().skip(d.start - 1).take(d.lines()).collect::<Vec<_>>().join("\n"))
                .unwrap_or_default()
        };
        let ranked = rank(&defs, body, &evidence, "parse_ranges drops the last number", None, Weights::default());
        let view = build(&files, &defs, &ranked, &[], &evidence, ViewOptions::new(1500), &chars);
        assert_eq!(view.regions[0].name, "parse_ranges");
        assert!(view.text.contains("pkg/zz_ranges.py lines 1-6 (parse_ranges)"), "{}", view.text);
        assert_eq!(view.tests.first().map(|t| t.name.as_str()), Some("test_parse_ranges"));
        assert!(!view.text.contains("Permission is hereby granted"));
        assert!(view.cost <= 1500, "{}", view.cost);
        assert!(chars(&view.text) <= 1500 + 50);
    }

    #[test]
    fn the_map_keeps_to_its_share_and_leaves_the_tests_out() {
        let files = package();
        let defs: Vec<Definition> = files.iter().flat_map(|(p, c)| definitions(p, c)).collect();
        let ranked = rank(&defs, |_| String::new(), &Evidence::default(), "parse_ranges", None, Weights::default());
        let options = ViewOptions::new(4000);
        let view = build(&files, &defs, &ranked, &[], &Evidence::default(), options, &chars);
        let map = &view.text[view.text.find("Map of the repository").unwrap()..];
        assert!(chars(map) <= (4000.0 * options.map_share) as usize, "{} tokens of map", chars(map));
        assert!(map.contains("pkg/zz_ranges.py") && map.contains("more file(s) not listed"), "{map}");
        assert!(!map.contains("tests/test_ranges.py"), "{map}");
    }

    #[test]
    fn a_function_longer_than_the_budget_is_shown_as_a_window_of_it() {
        let body: String = (0..2000).map(|i| format!("    x{i} = {i}\n")).collect();
        let files = vec![("big.py".to_string(), format!("def huge():\n{body}    return 0\n"))];
        let defs = definitions("big.py", &files[0].1);
        let ranked = rank(&defs, |_| String::new(), &Evidence::default(), "huge", None, Weights::default());
        let view = build(&files, &defs, &ranked, &[], &Evidence::default(), ViewOptions::new(800), &chars);
        let r = &view.regions[0];
        assert!(r.start > 1 && r.end < 2002 && r.end > r.start, "{r:?}");
        assert!(view.cost <= 800);
    }

    #[test]
    fn a_region_asked_for_is_shown_first_and_not_twice() {
        let files = package();
        let defs: Vec<Definition> = files.iter().flat_map(|(p, c)| definitions(p, c)).collect();
        let ranked = rank(&defs, |_| String::new(), &Evidence::default(), "parse_ranges", None, Weights::default());
        let asked = Region { path: "pkg/a03_helpers.py".into(), start: 4, end: 5, name: "helper_3_1".into() };
        let ranges = Region { path: "pkg/zz_ranges.py".into(), start: 1, end: 6, name: "parse_ranges".into() };
        let view = build(&files, &defs, &ranked, &[asked.clone(), ranges], &Evidence::default(), ViewOptions::new(1500), &chars);
        assert_eq!(view.regions[0], asked);
        assert!(view.text.contains("pkg/a03_helpers.py lines 4-5 (helper_3_1, as asked)"), "{}", view.text);
        assert_eq!(view.regions.iter().filter(|r| r.path == "pkg/zz_ranges.py").count(), 1, "a ranked region already opened is not shown again");
    }
}
