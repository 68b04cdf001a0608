//! A change out of a model's answer: each file as its path followed by a
//! fenced block holding its new content.
//!
//! Small models write code far better in a fenced block than escaped inside
//! a JSON string (where a small model drifts into repeating itself until the
//! token limit), so CODE and FIX answer in this plain shape:
//!
//! ````text
//! intervals.py
//! ```python
//! def merge(intervals): ...
//! ```
//! ````
//!
//! Deliberate choices for the awkward cases:
//! - The path is taken from the fence's info string (```` ```python a.py ````)
//!   or else from the nearest non-empty line above the fence ("Here is the
//!   updated `a.py`:"), preferring a word that names a file that exists.
//! - A block with no path goes to the existing file sharing the most
//!   top-level definitions with it; with none shared it is not applied.
//! - A Python block that redefines only some of a file's top-level functions
//!   and classes replaces just those (the model often answers with the one
//!   function it changed); anything else replaces the whole file.
//! - Blocks of other kinds (`text`, `output`, `sh`, `console`) are not files.

use std::collections::BTreeSet;

use agentloop_codemap::Region;

use super::hunks;
use super::state::EditFormat;
use agentloop_agent::fence::fences;

/// The change format as a grammar (llguidance's Lark dialect), so a model
/// that can be held to it always answers with blocks `read` can place: at
/// most two lines of prose first (held to prose — they need a space, do
/// not open with an edit marker and do not declare a new file — so a path
/// line is never taken for one), then each file as a path — one of `files`
/// (those it may change, with their content) or, where `new_files` allows,
/// declared as `new file PATH`, a new relative path that cannot climb out
/// of the root — on its own line and a fenced block. No block without a
/// path, nothing after the last block.
///
/// In `EditFormat::Whole` the block is the file's new content, running to
/// the first closing fence; in `EditFormat::Hunks` a block for an existing
/// file holds search/replace hunks whose lines to find are the file's own
/// (`hunks::grammar_rules`), and only a new file is given whole.
///
/// A new file has to be declared because a bare new path is the easiest
/// way for a small model to go wrong: a heading or a numbered step
/// ("File_a.py", "2.2.0") taken as a path writes a stray file while the
/// file that needed the change is left as it was.
///
/// The answer is as long as a change can need and no longer: one block per
/// file it may change (and one new file), at most `MAX_HUNKS` hunks a
/// block, and no marker line inside a new file's body. A small model that
/// loses its place otherwise repeats a block or a marker until its token
/// limit, the costliest answer there is and one that is refused anyway.
/// For the same reason a prose line ends in one blank line at most, and
/// blocks are apart by two: a tokenizer holds long runs of newlines as
/// single tokens, and a model that has lost its place emits them.
pub fn grammar(files: &[(&str, &str)], format: EditFormat, new_files: NewFiles) -> String {
    let files: Vec<&(&str, &str)> = files.iter().filter(|(p, _)| !p.chars().any(char::is_control)).collect();
    let mut rules = String::new();
    let mut alternatives = Vec::new();
    match format {
        EditFormat::Whole if !files.is_empty() => {
            let named: Vec<String> = files.iter().map(|(p, _)| format!("{p:?}")).collect();
            rules.push_str(&format!("whole_file: ({}) \"\\n```\" LANG \"\\n\" BODY\n", named.join(" | ")));
            alternatives.push("whole_file".to_string());
        }
        EditFormat::Whole => {}
        EditFormat::Hunks => {
            for (i, (path, content)) in files.iter().enumerate() {
                rules.push_str(&format!("edit_{i}: {path:?} \"\\n```\" LANG \"\\n\" hunk_{i}{{1,{MAX_HUNKS}}} \"```\"\n"));
                rules.push_str(&hunks::grammar_rules(&format!("hunk_{i}"), content));
                alternatives.push(format!("edit_{i}"));
            }
            rules.push_str(&hunks::replaced_terminal());
            rules.push('\n');
        }
    }
    let mut blocks = files.len();
    if let NewFiles::Except(taken) = new_files {
        alternatives.push("new_file".into());
        blocks += 1;
        rules.push_str("new_file: \"new file \" new_path \"\\n```\" LANG \"\\n\" BODY\n");
        rules.push_str(&format!("new_path[max_tokens={PATH_TOKENS}]: /{NEW_PATH}/{}\n", taken_paths(taken)));
    }
    if alternatives.is_empty() {
        // Nothing may be changed: an answer of prose alone, which `read` refuses with its reason.
        return "start: PROSE\nPROSE: /[^`]+/\n".into();
    }
    let more = match blocks.saturating_sub(1) {
        0 => String::new(),
        n => format!(" (SEP file){{0,{n}}}"),
    };
    format!(
        r#"start: intro? intro? file{more} SEP?
file: {alternatives}
{rules}intro[max_tokens={PROSE_LINE_TOKENS}]: /[^`\n]* [^`\n]*\n\n?/ & ~/(new file |<<<<<<<|=======|>>>>>>>)(?s:.*)/
LANG: /[a-z0-9+]{{0,12}}/
BODY: /(?s:.*)\n```/ & ~/(?s:.*)\n```(?s:.+)/ & ~/{marker_line}/
SEP: /\n\n?\n?/
"#,
        alternatives = alternatives.join(" | "),
        marker_line = hunks::MARKER_LINE,
    )
}

/// Hunks one block may hold: more than a change to the regions of one file
/// needs, far fewer than a model repeating itself writes.
pub const MAX_HUNKS: usize = 6;

/// A new file's path: relative, under the root (no part starts with a
/// dot, so none climbs out), with an extension.
///
/// Neither this nor the prose lines count characters (`{0,63}`): the
/// grammar engine builds a lexer state per count, and with a real
/// vocabulary a counted path or line, beside the exclusions, runs it out
/// of states at the first token — after which nothing is held. Prose is
/// bounded in tokens (`PROSE_LINE_TOKENS`) instead.
const NEW_PATH: &str = r"[A-Za-z0-9_][A-Za-z0-9_.\-]*(\/[A-Za-z0-9_][A-Za-z0-9_.\-]*)*\.[A-Za-z0-9]+";

/// Tokens a new file's path may take: more than any real project's path
/// needs, and a stop for a model that repeats a word in a path until its
/// answer's limit (which, in a batch, every other candidate waits on).
const PATH_TOKENS: usize = 40;

/// Tokens a line of prose before the blocks may take: a sentence or two.
const PROSE_LINE_TOKENS: usize = 80;

/// Which new files an answer may add.
#[derive(Debug, Clone, Copy)]
pub enum NewFiles<'a> {
    /// None: the answer changes what it was shown and nothing else.
    Never,
    /// Any path under the root but these: the workspace's own files, which
    /// a "new" file would replace whole, unseen.
    Except(&'a [&'a str]),
}

/// The grammar's exclusion of `taken` from new paths (` & ~/(a|b)(\/.*)?/`):
/// neither a taken file nor a path under one, as if it were a folder; or
/// nothing when none is taken.
fn taken_paths(taken: &[&str]) -> String {
    let escaped: Vec<String> = taken.iter().filter(|p| !p.chars().any(char::is_control)).map(|p| regex::escape(p).replace('/', "\\/")).collect();
    if escaped.is_empty() {
        return String::new();
    }
    format!(" & ~/({})(\\/.*)?/", escaped.join("|"))
}

/// The files a change writes: (path, new content), in answer order, one
/// entry per path (a later block for the same path wins).
pub type Files = Vec<(String, String)>;

/// Reads the files out of `answer`. `existing` lists the workspace's files
/// with their current content; `shown`, the regions shown when the files
/// were not shown whole: a hunk whose lines recur in its file applies at
/// the one place among them. Errs with a sentence for REFLECT (and the
/// next prompt) when nothing usable was found.
pub fn read(answer: &str, existing: &[(String, String)], shown: Option<&[Region]>) -> Result<Files, String> {
    let mut files: Files = Vec::new();
    let mut unplaced = 0;
    for block in blocks(answer) {
        // Output and commands are not files; but a block of edit hunks is an
        // edit whatever its tag (a model tags one `diff` as readily as `python`).
        if matches!(block.tag.as_str(), "text" | "output" | "console" | "sh" | "bash" | "shell" | "diff") && hunks::parse(&block.body).is_none() {
            continue;
        }
        let path = block.path(existing).or_else(|| owner_by_definitions(&block.body, existing));
        let Some(path) = path else {
            unplaced += 1;
            continue;
        };
        if block.declares_new_file() && existing.iter().any(|(p, _)| *p == path) {
            return Err(format!("{path} already exists, so it cannot be a new file: change it with edits to its lines as shown"));
        }
        if let Some(file) = existing.iter().map(|(p, _)| p).find(|p| path.strip_prefix(p.as_str()).is_some_and(|rest| rest.starts_with('/'))) {
            return Err(format!("{file} is a file, so {path} cannot be made under it: give a path beside the workspace's files"));
        }
        if existing.iter().any(|(p, _)| p.strip_prefix(path.as_str()).is_some_and(|rest| rest.starts_with('/'))) {
            return Err(format!("{path} is a folder of the workspace, so it cannot be a file: give a file's path"));
        }
        // Hunks edit the file as an earlier block of this answer left it.
        let current = files.iter().chain(existing).find(|(p, _)| *p == path).map(|(_, c)| c.as_str());
        let content = match (current, hunks::parse(&block.body)) {
            (Some(old), Some(edits)) => {
                let shown_here =
                    |first: usize, last: usize| shown.is_none_or(|regions| regions.iter().any(|r| r.path == path && r.start <= first && last <= r.end));
                agentloop_tools::apply_edits_where(old, &edits?, &shown_here).map_err(|why| format!("the edits to {path}: {why}"))?
            }
            (None, Some(_)) => return Err(format!("{path} does not exist, so it cannot be edited: give a new file's whole content")),
            (Some(old), None) if path.ends_with(".py") => splice_python(old, &block.body).unwrap_or_else(|| block.body.clone()),
            (_, None) => block.body.clone(),
        };
        // A block cut off by the token limit never replaces a whole one.
        if !block.closed && files.iter().any(|(p, _)| *p == path) {
            continue;
        }
        files.retain(|(p, _)| *p != path);
        files.push((path, content));
    }
    if files.is_empty() {
        return Err(if unplaced > 0 {
            "the answer had code but no file path: put the file's path on the line before its fenced block".into()
        } else {
            "the answer had no fenced code block: give each changed file as its path on a line of its own, then its change in a ``` block".into()
        });
    }
    Ok(files)
}

struct Block {
    tag: String,
    /// Words of the fence's info string after the language.
    info_words: Vec<String>,
    /// The nearest non-empty line above the fence.
    above: String,
    body: String,
    /// The closing fence was there (not cut off by the token limit).
    closed: bool,
}

impl Block {
    /// Whether the block was declared `new file PATH` (the grammar's way to add a file).
    fn declares_new_file(&self) -> bool {
        self.above.trim_start().starts_with("new file ")
    }

    fn path(&self, existing: &[(String, String)]) -> Option<String> {
        let mut words: Vec<String> = self.info_words.clone();
        if looks_like_path(&self.tag) {
            words.insert(0, self.tag.clone());
        }
        words.extend(self.above.split_whitespace().map(clean_word));
        let exists = |w: &String| existing.iter().any(|(p, _)| p == w || p.ends_with(&format!("/{w}")));
        if let Some(w) = words.iter().find(|w| exists(w)) {
            // A bare file name that exists deeper in the tree means that file.
            return existing.iter().find(|(p, _)| p == w || p.ends_with(&format!("/{w}"))).map(|(p, _)| p.clone());
        }
        words.into_iter().find(|w| looks_like_path(w))
    }
}

/// The fenced blocks of `answer`, in order; an unterminated last block runs
/// to the end (the answer hit its token limit; the tests will say so).
fn blocks(answer: &str) -> Vec<Block> {
    fences(answer)
        .into_iter()
        .filter(|f| f.lines.iter().any(|l| !l.trim().is_empty()))
        .map(|f| {
            let mut words = f.info.split_whitespace().map(str::to_string);
            let tag = words.next().unwrap_or_default().to_ascii_lowercase();
            let info_words = words.map(|w| clean_word(&w)).collect();
            Block { tag, info_words, above: f.above.to_string(), body: f.body(), closed: f.closed }
        })
        .collect()
}

/// Whether `path` is a test file by the usual conventions: `test_*.py`,
/// `*_test.{py,go,rs}`, `*.test.*`, `*.spec.*`, or anything under a `tests`,
/// `test` or `__tests__` folder.
pub fn is_test_file(path: &str) -> bool {
    let mut parts: Vec<&str> = path.split('/').collect();
    let name = parts.pop().unwrap_or_default();
    let stem = name.split('.').next().unwrap_or_default();
    parts.iter().any(|p| matches!(*p, "tests" | "test" | "__tests__"))
        || stem.starts_with("test_")
        || stem.ends_with("_test")
        || name.contains(".test.")
        || name.contains(".spec.")
}

/// Whether `path` is a document for people (Markdown, reStructuredText,
/// AsciiDoc, a licence), which no test runs: a change to one makes no
/// failing test pass, so it is offered only when the task or the tests
/// name it.
pub fn is_document(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    matches!(ext.as_deref(), Some("md" | "markdown" | "rst" | "adoc")) || ["LICENSE", "LICENCE", "COPYING"].iter().any(|l| name.starts_with(l))
}

/// A word of prose stripped of markdown and punctuation: "`a.py`:" → "a.py".
fn clean_word(word: &str) -> String {
    let word = word.trim_matches(|c: char| "`*'\"()[]<>,;".contains(c));
    let word = word.trim_end_matches([':', '.']);
    let word = word.trim_matches(|c: char| "`*'\"".contains(c));
    word.strip_prefix("./").unwrap_or(word).to_string()
}

/// `src/a.py`, `Cargo.toml`: a name with an extension of letters, no spaces.
pub fn looks_like_path(word: &str) -> bool {
    let Some((stem, ext)) = word.rsplit_once('.') else { return false };
    !stem.is_empty()
        && !stem.ends_with('/')
        && (1..=5).contains(&ext.len())
        && ext.chars().all(|c| c.is_ascii_alphanumeric())
        && ext.chars().any(|c| c.is_ascii_alphabetic())
        && word.chars().all(|c| c.is_ascii_alphanumeric() || "._-/".contains(c))
}

/// The names a file defines at top level: Python `def`/`class`, Rust `fn`,
/// `struct`, `enum`, `impl`, JavaScript `function`.
fn definitions(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for line in text.lines() {
        if line.starts_with(char::is_whitespace) {
            continue;
        }
        let mut words = line.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|w| !w.is_empty());
        while let Some(w) = words.next() {
            if matches!(w, "def" | "class" | "fn" | "struct" | "enum" | "impl" | "function" | "trait") {
                if let Some(name) = words.next() {
                    names.insert(name.to_string());
                }
                break;
            }
            if !matches!(w, "pub" | "async" | "export" | "crate" | "unsafe") {
                break;
            }
        }
    }
    names
}

/// The existing file sharing the most top-level definitions with `body`.
fn owner_by_definitions(body: &str, existing: &[(String, String)]) -> Option<String> {
    let defined = definitions(body);
    existing
        .iter()
        .map(|(path, text)| (definitions(text).intersection(&defined).count(), path))
        .filter(|(shared, _)| *shared > 0)
        .max_by_key(|(shared, _)| *shared)
        .map(|(_, path)| path.clone())
}

/// `old` with the top-level functions and classes `new` redefines replaced
/// by `new`'s versions, when `new` redefines only some of them; `None` when
/// `new` should replace the whole file.
fn splice_python(old: &str, new: &str) -> Option<String> {
    let old_defs = definitions(old);
    let new_defs = definitions(new);
    if new_defs.is_empty() || !new_defs.is_subset(&old_defs) || new_defs == old_defs {
        return None;
    }
    let new_units = top_level_units(new);
    let mut out = String::new();
    // Imports the fragment needs that the file lacks go first.
    for line in new.lines().filter(|l| l.starts_with("import ") || l.starts_with("from ")) {
        if !old.lines().any(|o| o == line) {
            out.push_str(line);
            out.push('\n');
        }
    }
    for (name, text) in top_level_units(old) {
        match name.as_ref().and_then(|n| new_units.iter().find(|(m, _)| m.as_ref() == Some(n))) {
            // The old unit's trailing blank lines keep the file's spacing.
            Some((_, replacement)) => {
                let blank_lines = text.len() - text.trim_end_matches('\n').len();
                out.push_str(replacement.trim_end_matches('\n'));
                out.push_str(&"\n".repeat(blank_lines.max(1)));
            }
            None => out.push_str(&text),
        }
    }
    Some(out)
}

/// A Python file cut into top-level units: each `def`/`class` (with its
/// decorators and body) named, everything between them unnamed.
fn top_level_units(text: &str) -> Vec<(Option<String>, String)> {
    let mut units: Vec<(Option<String>, String)> = Vec::new();
    let mut pending_decorators = String::new();
    for line in text.lines() {
        let top = !line.starts_with(char::is_whitespace) && !line.trim().is_empty();
        let defined = if top { definitions(line).into_iter().next() } else { None };
        if top && line.starts_with('@') {
            pending_decorators.push_str(line);
            pending_decorators.push('\n');
            continue;
        }
        if defined.is_some() {
            units.push((defined, std::mem::take(&mut pending_decorators)));
        } else if top && units.last().is_some_and(|(name, _)| name.is_some()) {
            // Top-level code after a definition ends it.
            units.push((None, std::mem::take(&mut pending_decorators)));
        } else if units.is_empty() {
            units.push((None, std::mem::take(&mut pending_decorators)));
        }
        if let Some((_, unit)) = units.last_mut() {
            unit.push_str(line);
            unit.push('\n');
        }
    }
    units
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter().map(|(p, c)| (p.to_string(), c.to_string())).collect()
    }

    #[test]
    fn path_on_the_line_above() {
        let got = read("intervals.py\n```python\ndef merge(x):\n    return x\n```", &[], None).unwrap();
        assert_eq!(got, files(&[("intervals.py", "def merge(x):\n    return x\n")]));
    }

    #[test]
    fn path_in_prose_or_the_info_string_preferring_existing_files() {
        let existing = files(&[("src/lib.rs", "fn a() {}\n")]);
        let got = read("Here is the fixed `lib.rs`:\n```rust\nfn a() { 1; }\n```", &existing, None).unwrap();
        assert_eq!(got[0].0, "src/lib.rs");
        let got = read("```python calc.py\nx = 1\n```", &[], None).unwrap();
        assert_eq!(got[0].0, "calc.py");
    }

    #[test]
    fn no_path_goes_to_the_file_with_the_same_definitions() {
        let existing = files(&[("a.py", "def f():\n    pass\n"), ("b.py", "def g():\n    pass\n")]);
        let got = read("The fix:\n```python\ndef g():\n    return 2\n```", &existing, None).unwrap();
        assert_eq!(got[0].0, "b.py");
    }

    #[test]
    fn a_fragment_replaces_only_its_functions() {
        let old = "import os\n\n\ndef f():\n    return 1\n\n\ndef g():\n    return 2\n\n\nX = 3\n";
        let existing = files(&[("m.py", old)]);
        let got = read("m.py\n```python\nimport re\n\ndef g():\n    return 20\n```", &existing, None).unwrap();
        assert_eq!(got[0].1, "import re\nimport os\n\n\ndef f():\n    return 1\n\n\ndef g():\n    return 20\n\n\nX = 3\n");
    }

    #[test]
    fn a_whole_file_replaces_the_file() {
        let existing = files(&[("m.py", "def f():\n    return 1\n")]);
        let got = read("m.py\n```python\ndef f():\n    return 2\n```", &existing, None).unwrap();
        assert_eq!(got[0].1, "def f():\n    return 2\n");
    }

    #[test]
    fn nothing_usable_says_what_to_do() {
        assert!(read("I would sort the list first.", &[], None).unwrap_err().contains("no fenced code block"));
        assert!(read("```python\nx = 1\n```", &[], None).unwrap_err().contains("no file path"));
        assert!(read("a.py\n```text\nsome output\n```", &[], None).is_err());
    }

    #[test]
    fn later_blocks_for_a_path_win_unless_cut_off() {
        let got = read("a.py\n```python\nx = 1\n```\na.py\n```python\nx = 2\n```", &[], None).unwrap();
        assert_eq!(got, files(&[("a.py", "x = 2\n")]));
        let got = read("a.py\n```python\nx = 1\n```\na.py\n```python\nx = 2\n", &[], None).unwrap();
        assert_eq!(got, files(&[("a.py", "x = 1\n")]), "a cut-off block does not replace a whole one");
        let got = read("a.py\n```python\nx = 3\n", &[], None).unwrap();
        assert_eq!(got, files(&[("a.py", "x = 3\n")]), "a cut-off block alone is still tried");
    }

    #[test]
    fn test_files_by_convention() {
        for path in ["test_intervals.py", "tests/lib.rs", "pkg/a_test.go", "src/app.test.ts", "web/__tests__/x.js", "b.spec.js"] {
            assert!(is_test_file(path), "{path}");
        }
        for path in ["intervals.py", "src/lib.rs", "contest.py", "latest_tests.md"] {
            assert!(!is_test_file(path), "{path}");
        }
    }

    #[test]
    fn documents_by_their_kind() {
        for path in ["README.md", "docs/usage.rst", "LICENSE", "LICENSE.txt", "guide.adoc"] {
            assert!(is_document(path), "{path}");
        }
        for path in ["intervals.py", "requirements.txt", "setup.cfg", "data/readme.json"] {
            assert!(!is_document(path), "{path}");
        }
    }

    #[test]
    fn a_declared_new_file_is_read_by_its_path() {
        let existing = files(&[("a.py", "x = 1\n")]);
        let got = read("new file pkg/b.py\n```python\ny = 2\n```", &existing, None).unwrap();
        assert_eq!(got, files(&[("pkg/b.py", "y = 2\n")]));
        let lark = grammar(&[("a.py", "x = 1\n")], EditFormat::Whole, NewFiles::Except(&["a.py"]));
        assert!(lark.contains(r#"whole_file: ("a.py") "\n```" LANG "\n" BODY"#) && lark.contains("file: whole_file | new_file"), "{lark}");
        let err = read("new file a.py\n```python\nx = 2\n```", &existing, None).unwrap_err();
        assert!(err.contains("a.py already exists, so it cannot be a new file"), "{err}");
        let err = read("new file a.py/fix/b.py\n```python\nx = 2\n```", &existing, None).unwrap_err();
        assert!(err.contains("a.py is a file, so a.py/fix/b.py cannot be made under it"), "{err}");
        let nested = files(&[("pkg.v2/a.py", "x = 1\n")]);
        let err = read("new file pkg.v2\n```python\nx = 2\n```", &nested, None).unwrap_err();
        assert!(err.contains("pkg.v2 is a folder of the workspace"), "{err}");
        assert!(read("new file pkg.v2/b.py\n```python\nx = 2\n```", &nested, None).is_ok(), "a new file beside one");
    }

    /// Whether llguidance, fed `text` a byte at a time, takes it whole as
    /// an answer `lark` allows.
    fn accepts(lark: &str, text: &str) -> bool {
        use llguidance::{api::TopLevelGrammar, toktrie::ApproximateTokEnv, Matcher, ParserFactory};
        let env = ApproximateTokEnv::single_byte_env();
        let factory = ParserFactory::new_simple(&env).unwrap();
        let mut matcher = Matcher::new(factory.create_parser(TopLevelGrammar::from_lark(lark.to_string())));
        assert_eq!(matcher.get_error(), None, "{lark}");
        matcher.consume_tokens(&env.tokenize_bytes(text.as_bytes())).is_ok() && matcher.is_accepting().unwrap_or(false)
    }

    #[test]
    fn an_answer_holds_no_more_than_a_change_can_need() {
        let file = [("a.py", "def f(a, b):\n    return a < b\n")];
        let hunk = "<<<<<<< SEARCH\n    return a < b\n=======\n    return a <= b\n>>>>>>> REPLACE\n";
        let edit = format!("a.py\n```python\n{hunk}```");
        let open = grammar(&file, EditFormat::Hunks, NewFiles::Except(&["a.py", "b.py"]));
        assert!(accepts(&open, &format!("Fix the bound.\n{edit}")), "{open}");
        assert!(accepts(&open, &format!("{edit}\nnew file c.py\n```python\nx = 1\n```")), "one new file beside the edit");
        assert!(!accepts(&open, &format!("{edit}\n{edit}\n{edit}")), "more blocks than the files it may change and one new file");
        assert!(!accepts(&open, &format!("a.py\n```python\n{}```", hunk.repeat(MAX_HUNKS + 1))), "more hunks than a change needs");
        assert!(accepts(&open, &format!("a.py\n```python\n{}```", hunk.repeat(MAX_HUNKS))));
        assert!(!accepts(&open, "new file b.py\n```python\nx = 1\n```"), "a file that exists is not new");
        assert!(!accepts(&open, "new file b.py/c.py\n```python\nx = 1\n```"), "nor a folder");
        let endless = format!("new file c{}.py\n```python\nx = 1\n```", "_oneline".repeat(8));
        assert!(!accepts(&open, &endless), "a path longer than any project's");
        assert!(accepts(&open, "new file b.pyc.py\n```python\nx = 1\n```"), "a name that only begins like one is new");
        assert!(!accepts(&open, "new file c.py\n```python\nx = 1\n=======\nx = 2\n```"), "a marker line is not a new file's content");
        assert!(!accepts(&open, &format!("<<<<<<< SEARCH here\n{edit}")), "prose does not open with a marker");
        assert!(accepts(&open, &format!("Fix the bound.\n\n{edit}\n\n\nnew file c.py\n```python\nx = 1\n```")), "a blank line after prose, two between blocks");
        assert!(!accepts(&open, &format!("Fix the bound.\n\n\n{edit}")), "no run of blank lines after prose");
        assert!(!accepts(&open, &format!("{edit}\n\n\n\nnew file c.py\n```python\nx = 1\n```")), "nor between blocks");

        let held = grammar(&file, EditFormat::Hunks, NewFiles::Never);
        assert!(accepts(&held, &edit), "{held}");
        assert!(!accepts(&held, "new file c.py\n```python\nx = 1\n```"), "a held answer adds no file");
        assert!(!accepts(&held, &format!("{edit}\n{edit}")), "nor repeats its block");
    }

    #[test]
    fn the_grammar_holds_answers_with_a_real_vocabulary() {
        let model = agentloop_llm::catalog::DEFAULT_MODEL.path(&agentloop_llm::catalog::default_data_dir());
        assert!(model.is_file(), "the default model is missing at {}: run `bash scripts/fetch-models.sh`", model.display());
        let files = [("src/pkg/a.py", "def f(a, b):\n    return a < b\n")];
        let taken: Vec<String> = (0..300).map(|i| format!("src/pkg/module_{i}.py")).collect();
        let taken: Vec<&str> = taken.iter().map(String::as_str).collect();
        let lark = grammar(&files, EditFormat::Hunks, NewFiles::Except(&taken));
        let edit = "src/pkg/a.py\n```python\n<<<<<<< SEARCH\n    return a < b\n=======\n    return a <= b\n>>>>>>> REPLACE\n```";
        let prose = "To make f include its upper bound, the comparison in its return statement has to allow equal values, so it becomes <=.";
        let probe = agentloop_llm::GrammarProbe::load(&model).unwrap();
        for answer in [format!("{prose}\n{edit}"), format!("{edit}\nnew file src/pkg/helpers/bounds.py\n```python\ndef below(a, b):\n    return a <= b\n```")] {
            probe.follow(&lark, &answer).unwrap_or_else(|e| panic!("{e}\n{answer}"));
        }
        let taken_path = probe.follow(&lark, "new file src/pkg/module_7.py\n```python\nx = 1\n```").unwrap_err();
        assert!(taken_path.contains("is not allowed"), "{taken_path}");
    }

    #[test]
    fn hunks_edit_an_existing_file_in_place() {
        let existing = files(&[("a.py", "def f(a, b):\n    return a < b\n")]);
        let answer = "a.py\n```python\n<<<<<<< SEARCH\n    return a < b\n=======\n    return a <= b\n>>>>>>> REPLACE\n```";
        assert_eq!(read(answer, &existing, None).unwrap(), files(&[("a.py", "def f(a, b):\n    return a <= b\n")]));
        let missing = "a.py\n```python\n<<<<<<< SEARCH\n    return b\n=======\n    return a\n>>>>>>> REPLACE\n```";
        let err = read(missing, &existing, None).unwrap_err();
        assert!(err.contains("the edits to a.py: block 1 did not match"), "{err}");
        let new = "b.py\n```python\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n```";
        assert!(read(new, &existing, None).unwrap_err().contains("b.py does not exist"));
        let tagged = answer.replace("```python", "```diff");
        assert_eq!(read(&tagged, &existing, None).unwrap(), files(&[("a.py", "def f(a, b):\n    return a <= b\n")]), "hunks tagged `diff` are still hunks");
        let twice = files(&[("a.py", "def f(a, b):\n    return a < b\n\ndef g(a, b):\n    return a < b\n")]);
        assert!(read(answer, &twice, None).unwrap_err().contains("matches 2 places"), "shown whole: which one is not known");
        let g = [Region { path: "a.py".into(), start: 4, end: 5, name: "g".into() }];
        let got = read(answer, &twice, Some(&g)).unwrap();
        assert_eq!(got, files(&[("a.py", "def f(a, b):\n    return a < b\n\ndef g(a, b):\n    return a <= b\n")]), "the place that was shown");
    }

    #[test]
    fn the_hunks_grammar_names_each_file_with_its_own_lines() {
        let lark = grammar(&[("a.py", "x = 1\n"), ("b.py", "y = 2\n")], EditFormat::Hunks, NewFiles::Except(&[]));
        assert!(lark.contains("file: edit_0 | edit_1 | new_file"), "{lark}");
        assert!(lark.contains(r#"edit_1: "b.py" "\n```" LANG "\n" hunk_1{1,6} "```""#), "{lark}");
        assert!(lark.contains(r#"hunk_1_from_0: "y = 2\n""#) && lark.contains("REPLACED: "), "{lark}");
    }

    #[test]
    fn paths_that_leave_the_root_are_still_read_so_the_jail_can_refuse_them() {
        let got = read("../escaped.py\n```python\nx = 1\n```", &[], None).unwrap();
        assert_eq!(got[0].0, "../escaped.py");
    }
}
