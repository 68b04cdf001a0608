//! The files and folders a goal names, what it calls them, where it puts
//! them and the text it gives them: what the goal's own checks (`goal.rs`)
//! and the names listed in the plan prompt are read from. A small model
//! often writes a valid plan for a different goal; these readings let the
//! outcome be checked against the goal's own words, not only a judge's.

/// Extensions that mark a name as a file. A bare `.txt` in a goal ("count
/// the .txt files") is a kind of file, not a file's name; `.gitignore` is a
/// name.
const FILE_EXTENSIONS: [&str; 24] = [
    "txt", "md", "py", "json", "log", "csv", "sh", "rs", "toml", "yaml", "yml", "html", "css", "js", "ts", "xml", "ini", "cfg", "conf", "gz", "tar", "zip",
    "c", "h",
];

/// Paths the goal names: words with a file extension (`README.md`,
/// `.gitignore`, `backup.tar.gz`), a slash (`assets/images`) or a number
/// after an underscore (`run_0`), in order.
pub fn named_paths(goal: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in goal.split(|c: char| c.is_whitespace() || c == ',' || c == ';') {
        let word = word.trim_matches(|c: char| matches!(c, '\'' | '"' | '`' | '(' | ')' | ':' | '!' | '?')).trim_end_matches('.');
        if !word.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '/')) || word.contains("..") {
            continue;
        }
        if (has_extension(word) || is_relative_path(word) || is_numbered_name(word)) && !out.iter().any(|w| w == word) {
            out.push(word.to_string());
        }
    }
    out
}

/// `name.ext` with a letter-led extension of two or more characters, or a
/// dot-file such as `.gitignore` that is not a bare extension.
pub fn has_extension(word: &str) -> bool {
    let Some((stem, ext)) = word.rsplit_once('.') else { return false };
    let ext_ok = ext.len() >= 2 && ext.starts_with(|c: char| c.is_ascii_alphabetic()) && ext.chars().all(|c| c.is_ascii_alphanumeric());
    if stem.is_empty() {
        return ext_ok && !FILE_EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str());
    }
    ext_ok && !stem.ends_with('/')
}

/// An archive (`backup.tar.gz`, `site.zip`): a command makes it, not
/// WRITE_FILE.
pub fn is_archive(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    [".tar", ".tar.gz", ".tgz", ".gz", ".zip", ".bz2", ".xz", ".7z"].iter().any(|ext| name.ends_with(ext))
}

/// `run_0`, `week_12`: prose has no such words, so it is a name.
fn is_numbered_name(word: &str) -> bool {
    let Some((stem, number)) = word.rsplit_once('_') else { return false };
    word.starts_with(|c: char| c.is_ascii_alphabetic()) && !stem.contains('.') && !number.is_empty() && number.chars().all(|c| c.is_ascii_digit())
}

/// `a/b` made of names (not `/etc`, not `and/or`-style prose would pass, but
/// goals rarely write those).
fn is_relative_path(word: &str) -> bool {
    word.contains('/') && !word.starts_with('/') && word.split('/').all(|part| !part.is_empty())
}

/// Words a goal puts before a file's name ("a file LICENSE").
pub const FILE_WORDS: [&str; 3] = ["file", "files", "script"];
/// Words a goal puts before a folder's name ("a folder site.v1").
pub const FOLDER_WORDS: [&str; 4] = ["folder", "folders", "directory", "directories"];

/// The goal calls `path`, whole, by one of `words` ("folder site.v1";
/// "script hello.sh" does not call `hello` a script).
pub fn goal_calls(goal: &str, path: &str, words: &[&str]) -> bool {
    let goal = goal.to_lowercase();
    let path = path.to_lowercase();
    words.iter().any(|w| {
        let called = format!("{w} {path}");
        goal.match_indices(&called).any(|(at, _)| !continues_name(&goal[at + called.len()..]))
    })
}

/// Words that follow "folder" or "file" in a goal without being a name
/// ("every file in the folder", "files are").
const NOT_NAMES: [&str; 24] = [
    "a", "an", "the", "in", "of", "to", "and", "or", "with", "that", "which", "is", "are", "for", "each", "every", "from", "into", "inside", "at", "on", "it",
    "its", "this",
];

/// The word right after each "folder", "file", "script" … in the goal
/// ("named" and "called" skipped): `docs` in "a folder named docs",
/// `target` in "ignores the folder target".
pub fn called_names(goal: &str) -> Vec<String> {
    let words: Vec<&str> = goal.split_whitespace().collect();
    let mut out = Vec::new();
    for (i, word) in words.iter().enumerate() {
        let word = word.to_lowercase();
        if !FOLDER_WORDS.contains(&word.as_str()) && !FILE_WORDS.contains(&word.as_str()) {
            continue;
        }
        out.extend(next_name(&words[i + 1..].join(" ")));
    }
    out
}

/// Words after which a goal's quoted text is what a file holds ("with the
/// line 'started'", "saying 'My project'"); not "prints 'hi'" (a program's
/// output) nor "of 'ls'" (a command).
const TEXT_WORDS: [&str; 6] = ["line", "text", "saying", "says", "containing", "reads"];
/// Words before a "with" that makes the quote after it a file's text
/// ("starting with '# Notes'"); a bare "with" may give a replacement
/// ("replace 'a' with 'b'") or an argument.
const OPENING_WORDS: [&str; 8] = ["starting", "starts", "beginning", "begins", "opening", "opens", "ending", "ends"];

/// The text the goal quotes as a file's content, when it quotes exactly one.
pub fn given_text(goal: &str) -> Option<String> {
    let mut found = Vec::new();
    for (open, _) in goal.match_indices(" '") {
        let mut words = goal[..open].rsplit(' ').map(str::to_lowercase);
        let before = words.next().unwrap_or_default();
        let gives_text = TEXT_WORDS.contains(&before.as_str()) || (before == "with" && words.next().is_some_and(|w| OPENING_WORDS.contains(&w.as_str())));
        let after = &goal[open + 2..];
        let close =
            after.match_indices('\'').map(|(at, _)| at).find(|&at| after[at + 1..].chars().next().is_none_or(|c| c.is_whitespace() || ".,;:!?".contains(c)));
        if let (true, Some(close)) = (gives_text, close) {
            found.push(after[..close].to_string());
        }
    }
    // "containing the text Hello, world!": unquoted, the rest of the goal.
    let lower = goal.to_lowercase();
    if let Some(at) = lower.find(" the text ").filter(|_| found.is_empty()) {
        let rest = goal[at + " the text ".len()..].trim().trim_end_matches('.');
        if !rest.starts_with(['\'', '"']) {
            found.push(rest.to_string());
        }
    }
    match found.as_slice() {
        [text] if !text.trim().is_empty() => Some(text.clone()),
        _ => None,
    }
}

/// Words that put the file after a folder's name inside it ("a folder src
/// with a file main.py", "a folder notes and inside it a file todo.txt").
const INSIDE_WORDS: [&str; 5] = ["with", "inside", "containing", "holding", "in it"];

/// The files the goal puts in a folder it names, as (file, folder): every
/// bare file name of a goal that works "in a folder X" ("note_00.txt to
/// note_09.txt in a folder notes", "In a folder days, create day_001.txt"),
/// and the file right after "folder X with …" or "folder X and inside it …".
/// A file two folders claim is left out: where it goes is not known.
pub fn placed_files(goal: &str) -> Vec<(String, String)> {
    let lower = goal.to_lowercase();
    let files: Vec<String> = named_paths(goal).into_iter().filter(|n| !n.contains('/') && has_extension(n)).collect();
    let mut placed: Vec<(String, String)> = Vec::new();
    fn claim(file: &str, folder: &str, placed: &mut Vec<(String, String)>) {
        if !placed.iter().any(|(f, d)| f == file && d == folder) {
            placed.push((file.to_string(), folder.to_string()));
        }
    }
    for phrase in ["in a folder ", "inside a folder ", "in a directory "] {
        for (at, _) in lower.match_indices(phrase) {
            if let Some(folder) = next_name(&goal[at + phrase.len()..]) {
                for file in &files {
                    claim(file, &folder, &mut placed);
                }
            }
        }
    }
    for (at, _) in lower.match_indices("folder ") {
        let rest = &goal[at + "folder ".len()..];
        let Some(folder) = next_name(rest) else { continue };
        let after = &rest[rest.find(folder.as_str()).map_or(0, |i| i + folder.len())..];
        // The first file named after the folder, and the words between.
        let Some((file, between)) =
            files.iter().filter_map(|f| after.find(f.as_str()).map(|i| (f, after[..i].to_lowercase()))).min_by_key(|(_, between)| between.len())
        else {
            continue;
        };
        let words: Vec<&str> = between.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
        let inside =
            INSIDE_WORDS.iter().any(|w| between.contains(&format!(" {w} ")) || words.first() == Some(w)) && !words.iter().any(|w| FOLDER_WORDS.contains(w));
        if inside {
            claim(file, &folder, &mut placed);
        }
    }
    let claimed_twice = |file: &str| placed.iter().filter(|(f, _)| f == file).count() > 1;
    placed.iter().filter(|(file, folder)| !claimed_twice(file) && !has_extension(folder)).cloned().collect()
}

/// The first name-like word of `text` ("named" and "called" skipped), as
/// the goal spells it.
fn next_name(text: &str) -> Option<String> {
    let mut words =
        text.split_whitespace().map(|w| w.trim_matches(|c: char| matches!(c, '\'' | '"' | '`' | ',' | ';' | ':' | '(' | ')')).trim_end_matches('.'));
    let name = words.find(|w| !matches!(w.to_lowercase().as_str(), "named" | "called"))?;
    let name_like = !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '/'))
        && !name.contains("..")
        && !name.starts_with('/');
    (name_like && !NOT_NAMES.contains(&name.to_lowercase().as_str())).then(|| name.to_string())
}

/// `name` inside the folder the goal puts it in (`notes/todo.txt`), or as
/// it is.
pub fn in_its_folder(goal: &str, name: &str) -> String {
    placed_files(goal).into_iter().find(|(file, _)| file == name).map_or_else(|| name.to_string(), |(file, folder)| format!("{folder}/{file}"))
}

/// What a name the goal gives may be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Folder,
    File,
    Either,
}

/// Whether `name` is a folder or a file in the goal: what the goal calls
/// it, else a common extension makes it a file, any other extension
/// (`site.v2`, `.gitignore`) either, and no extension a folder.
pub fn kind_in_goal(goal: &str, name: &str) -> Kind {
    if goal_calls(goal, name, &FOLDER_WORDS) {
        Kind::Folder
    } else if goal_calls(goal, name, &FILE_WORDS) || looks_like_file(name) {
        Kind::File
    } else if has_extension(name) {
        Kind::Either
    } else {
        Kind::Folder
    }
}

/// True when the last part of `path` ends in a common file extension, so
/// `CREATE_DIR path` almost surely meant a file.
pub fn looks_like_file(path: &str) -> bool {
    let name = path.trim_end_matches('/').rsplit('/').next().unwrap_or(path);
    match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => FILE_EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str()),
        _ => false,
    }
}

/// Whether `text` holds `name` as a whole name: not inside a longer word
/// (`run_0.html`, `my_run_0`), though a folder may be part of a longer path
/// (`run_0/a.txt`, `2024/q1`).
pub fn mentions(text: &str, name: &str) -> bool {
    first_mention(text, name).is_some()
}

/// Where `text` first holds `name` as a whole name (as `mentions`).
pub fn first_mention(text: &str, name: &str) -> Option<usize> {
    text.match_indices(name).map(|(at, _)| at).find(|&at| {
        let before = text[..at].chars().next_back();
        !before.is_some_and(is_name_char) && !continues_name(&text[at + name.len()..])
    })
}

/// Whether `rest` goes on with the same name: more of its characters, or a
/// dot that starts an extension (not one that ends a sentence).
pub fn continues_name(rest: &str) -> bool {
    let mut chars = rest.chars();
    match chars.next() {
        Some('.') => chars.next().is_some_and(is_name_char),
        Some(c) => is_name_char(c),
        None => false,
    }
}

pub fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '.')
}

/// The ranges the goal gives as "`first` to `last`" (`note_00.txt to
/// note_09.txt`), as (first, last).
pub fn ranges(goal: &str) -> Vec<(String, String)> {
    named_paths(goal).windows(2).filter(|pair| goal.contains(&format!("{} to {}", pair[0], pair[1]))).map(|pair| (pair[0].clone(), pair[1].clone())).collect()
}

/// Every name of a range the goal gives as "`first` to `last`"
/// (`note_00.txt` to `note_09.txt`: ten names, padded as the first is);
/// none when the names differ in more than their last number or the range
/// is longer than a hundred.
pub fn range_names(first: &str, last: &str) -> Vec<String> {
    let (Some((head, from, tail)), Some((head_last, to, tail_last))) = (split_last_number(first), split_last_number(last)) else { return Vec::new() };
    let (Ok(a), Ok(b)) = (from.parse::<u32>(), to.parse::<u32>()) else { return Vec::new() };
    if head != head_last || tail != tail_last || b < a || b - a >= 100 {
        return Vec::new();
    }
    let width = if from.len() > 1 && from.starts_with('0') { from.len() } else { 0 };
    (a..=b).map(|n| format!("{head}{n:0width$}{tail}")).collect()
}

/// `day_003.txt` → (`day_`, `003`, `.txt`): the name around its last run of digits.
pub fn split_last_number(name: &str) -> Option<(&str, &str, &str)> {
    let end = name.rfind(|c: char| c.is_ascii_digit())? + 1;
    let start = name[..end].rfind(|c: char| !c.is_ascii_digit()).map_or(0, |i| i + 1);
    Some((&name[..start], &name[start..end], &name[end..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_with_extensions_and_slashes_are_paths_prose_is_not() {
        assert_eq!(named_paths("Write a README.md with a title line '# Inventory'."), ["README.md"]);
        assert_eq!(named_paths("Create a file .gitignore that ignores the folder target."), [".gitignore"]);
        assert_eq!(named_paths("Count how many .txt files are in the folder docs."), Vec::<String>::new());
        assert_eq!(named_paths("Create folders 2024/q1, 2024/q2 and assets/fonts."), ["2024/q1", "2024/q2", "assets/fonts"]);
        assert_eq!(named_paths("Make a tar archive backup.tar.gz, e.g. with tar. Version 3.5 is fine"), ["backup.tar.gz"]);
        assert_eq!(named_paths("Create a Python file add.py defining add(a, b) that returns a + b"), ["add.py"]);
        assert_eq!(named_paths("Create three folders run_0, run_1 and run_2."), ["run_0", "run_1", "run_2"]);
    }

    #[test]
    fn a_range_gives_every_name_padded_as_the_first() {
        assert_eq!(ranges("Create note_00.txt to note_09.txt and b.txt."), [("note_00.txt".to_string(), "note_09.txt".to_string())]);
        assert_eq!(range_names("note_00.txt", "note_03.txt"), ["note_00.txt", "note_01.txt", "note_02.txt", "note_03.txt"]);
        assert_eq!(range_names("chapter_1.md", "chapter_3.md"), ["chapter_1.md", "chapter_2.md", "chapter_3.md"]);
        assert!(range_names("a_1.txt", "b_3.txt").is_empty() && range_names("x_0", "x_500").is_empty());
    }

    #[test]
    fn the_word_after_folder_or_file_is_a_name_unless_it_is_prose() {
        assert_eq!(called_names("Create a folder named docs."), ["docs"]);
        assert_eq!(called_names("Create a folder src with a file main.py that prints 'hi'."), ["src", "main.py"]);
        assert_eq!(called_names("Count how many .txt files are in the folder docs."), ["docs"]);
        assert_eq!(called_names("For every file in the folder inbox, make a copy in the folder archive."), ["inbox", "archive"]);
        assert!(called_names("Show the current date.").is_empty());
    }

    #[test]
    fn a_name_is_a_folder_or_a_file_as_the_goal_calls_it() {
        let goal = "Create a folder site.v2 and a file LICENSE, then hello.txt, .gitignore and run_0.";
        assert_eq!(kind_in_goal(goal, "site.v2"), Kind::Folder);
        assert_eq!(kind_in_goal(goal, "LICENSE"), Kind::File);
        assert_eq!(kind_in_goal(goal, "hello.txt"), Kind::File);
        assert_eq!(kind_in_goal(goal, ".gitignore"), Kind::Either);
        assert_eq!(kind_in_goal(goal, "run_0"), Kind::Folder);
        assert_eq!(kind_in_goal("Create a shell script hello.sh.", "hello"), Kind::Folder, "the script is hello.sh, not hello");
    }

    #[test]
    fn file_like_folder_names_are_spotted() {
        assert!(looks_like_file("hello.txt"));
        assert!(looks_like_file("notes/todo.md"));
        assert!(!looks_like_file("docs"));
        assert!(!looks_like_file("site.v2"));
        assert!(!looks_like_file(".config"));
    }

    #[test]
    fn files_the_goal_puts_in_a_folder_are_found() {
        let placed = |goal| placed_files(goal).into_iter().map(|(f, d)| format!("{d}/{f}")).collect::<Vec<_>>();
        assert_eq!(placed("Create a folder notes and inside it a file todo.txt listing two tasks: buy milk and call Anna."), ["notes/todo.txt"]);
        assert_eq!(placed("Create a folder src with a file main.py that prints 'hi'."), ["src/main.py"]);
        assert_eq!(
            placed("In a folder days, create day_001.txt, day_002.txt and day_003.txt, each saying 'log'."),
            ["days/day_001.txt", "days/day_002.txt", "days/day_003.txt"]
        );
        assert_eq!(
            placed("Create ten empty-ish files note_00.txt to note_09.txt in a folder notes, each with the text 'note'.").len(),
            2,
            "the range's two ends"
        );
        assert!(placed("Create a folder logs and a file logs/app.log with the line 'started'.").is_empty(), "the path already says where");
        assert!(placed("Create a folder docs and a file README.md.").is_empty(), "'and' alone does not put it inside");
        assert_eq!(placed("Create a folder alpha with a file x.txt, and a folder beta with a file y.txt."), ["alpha/x.txt", "beta/y.txt"]);
        assert!(placed("Copy report.txt into the folder backup.").is_empty());
        assert!(placed("Create a folder site.v2 with an index.html").is_empty(), "a folder with an extension is left alone");
    }

    #[test]
    fn the_text_a_goal_quotes_for_a_file_is_found() {
        assert_eq!(given_text("Create a folder logs and a file logs/app.log with the line 'started'.").as_deref(), Some("started"));
        assert_eq!(given_text("Create project/README.md saying 'My project'.").as_deref(), Some("My project"));
        assert_eq!(given_text("Write a file a.txt with the text 'it's here' now").as_deref(), Some("it's here"), "an apostrophe inside is not the end");
        assert_eq!(given_text("Create main.py that prints 'hi'."), None, "what a program prints is not the file's text");
        assert_eq!(given_text("Write the output of 'ls' into listing.txt."), None);
        assert_eq!(given_text("Files a.txt saying 'x' and b.txt saying 'y'."), None, "two texts: which is whose is not known");
        assert_eq!(
            given_text("Create a file hello.txt containing the text Hello, world!").as_deref(),
            Some("Hello, world!"),
            "unquoted after 'the text': the rest"
        );
        assert_eq!(given_text("Write a.txt with the text 'note' and more."), Some("note".to_string()));
        assert_eq!(given_text("Make notes.md, starting with '## Notes' on top.").as_deref(), Some("## Notes"), "what a file starts with is its text");
        assert_eq!(given_text("In a.txt replace 'cat' with 'dog'."), None, "a bare with gives a replacement");
    }
}
