//! Documents read from files: Markdown, plain text, HTML, JSON and JSON
//! lines, each as (id, title, text) ready to be cut into passages.

use std::path::Path;

use serde_json::Value;

use crate::{Error, Result};

/// One document of a corpus.
#[derive(Clone, Debug, PartialEq)]
pub struct Document {
    /// Stable across re-adding the same file: the file's path, and for a
    /// record of a JSON file, the path and its title.
    pub id: String,
    pub title: String,
    pub text: String,
}

/// Which fields of a JSON record hold its title and text.
#[derive(Clone, Debug)]
pub struct JsonFields {
    pub title: String,
    /// Tried in order; the first present is the body.
    pub text: Vec<String>,
    /// Added after the body when present (a summary's description).
    pub extra: Vec<String>,
}

impl Default for JsonFields {
    fn default() -> Self {
        Self { title: "title".into(), text: ["text", "article", "extract", "content"].map(String::from).to_vec(), extra: vec!["description".into()] }
    }
}

/// The documents in `path`, by its extension. A JSON file may be an array
/// of records, a map of title → record, or one record per line.
pub fn read(path: &Path, fields: &JsonFields) -> Result<Vec<Document>> {
    let fail = |why: String| Error::Document { path: path.display().to_string(), why };
    let raw = std::fs::read_to_string(path).map_err(|e| fail(e.to_string()))?;
    // The whole path: two files of one name in different folders stay apart.
    let name = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()).display().to_string();
    let short = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let stem = path.file_stem().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let ext = path.extension().map(|e| e.to_string_lossy().to_lowercase()).unwrap_or_default();
    match ext.as_str() {
        "md" | "markdown" | "txt" | "text" => {
            let title = raw.lines().find_map(|l| l.strip_prefix('#').map(|t| t.trim_start_matches('#').trim().to_string())).unwrap_or(stem);
            Ok(vec![Document { id: name, title, text: raw }])
        }
        "html" | "htm" => {
            let title = between(&raw, "<title>", "</title>").map(|t| text_of_html(t).trim().to_string()).filter(|t| !t.is_empty()).unwrap_or(stem);
            Ok(vec![Document { id: name, title, text: text_of_html(&raw) }])
        }
        "json" => {
            let value: Value = serde_json::from_str(&raw).map_err(|e| fail(format!("it is not JSON ({e})")))?;
            let records: Vec<(Option<String>, Value)> = match value {
                Value::Array(items) => items.into_iter().map(|v| (None, v)).collect(),
                Value::Object(map) if map.values().all(Value::is_object) => map.into_iter().map(|(k, v)| (Some(k), v)).collect(),
                one @ Value::Object(_) => vec![(None, one)],
                _ => return Err(fail("a JSON corpus is an array of records, a map of title → record, or one record".into())),
            };
            Ok(records.into_iter().enumerate().filter_map(|(i, (key, v))| record(&name, &short, i, key, &v, fields)).collect())
        }
        "jsonl" | "ndjson" => raw
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| {
                let v: Value = serde_json::from_str(l).map_err(|e| fail(format!("line {} is not JSON ({e})", i + 1)))?;
                Ok(record(&name, &short, i, None, &v, fields))
            })
            .filter_map(Result::transpose)
            .collect(),
        other => Err(fail(format!("`.{other}` files are not read: use Markdown, text, HTML, JSON or JSON lines"))),
    }
}

/// A JSON record as a document; `None` when it has no text. A record with
/// no title is called by its file's name and place.
fn record(file: &str, short: &str, index: usize, key: Option<String>, v: &Value, fields: &JsonFields) -> Option<Document> {
    let field = |name: &str| v.get(name).and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty());
    let body = fields.text.iter().find_map(|f| field(f))?;
    let title = field(&fields.title).map(String::from).or(key).unwrap_or_else(|| format!("{short} #{index}"));
    let mut text = body.to_string();
    for extra in fields.extra.iter().filter_map(|f| field(f)) {
        text.push_str("\n\n");
        text.push_str(extra);
    }
    Some(Document { id: format!("{file}/{title}"), title, text })
}

fn between<'a>(text: &'a str, open: &str, close: &str) -> Option<&'a str> {
    let lower = text.to_lowercase();
    let from = lower.find(open)? + open.len();
    let to = from + lower[from..].find(close)?;
    text.get(from..to)
}

/// The visible text of an HTML page: tags dropped (script and style with
/// their content), the common entities decoded, block ends as line breaks.
fn text_of_html(html: &str) -> String {
    let mut out = String::with_capacity(html.len() / 2);
    let mut rest = html;
    while let Some(open) = rest.find('<') {
        out.push_str(&rest[..open]);
        let after = &rest[open..];
        let Some(close) = after.find('>') else { break };
        let tag = after[1..close].trim().to_lowercase();
        let name: String = tag.trim_start_matches('/').chars().take_while(|c| c.is_ascii_alphanumeric()).collect();
        rest = &after[close + 1..];
        if !tag.starts_with('/') && (name == "script" || name == "style") {
            let end = format!("</{name}");
            rest = rest.to_lowercase().find(&end).and_then(|i| rest.get(i..)).and_then(|r| r.find('>').map(|j| &r[j + 1..])).unwrap_or("");
        } else if matches!(name.as_str(), "p" | "br" | "div" | "li" | "h1" | "h2" | "h3" | "h4" | "tr" | "title") {
            out.push('\n');
        }
    }
    out.push_str(rest);
    let decoded = out.replace("&nbsp;", " ").replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&#39;", "'").replace("&amp;", "&");
    let lines: Vec<&str> = decoded.lines().map(str::trim).collect();
    lines.split(|l| l.is_empty()).filter(|p| !p.is_empty()).map(|p| p.join(" ")).collect::<Vec<_>>().join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn each_format_reads_as_titled_documents() {
        let dir = tempfile::tempdir().unwrap();
        let f = JsonFields::default();
        let md = read(&write(dir.path(), "notes.md", "# Tides\n\nThe moon pulls the sea."), &f).unwrap();
        assert!(md[0].id.ends_with("/notes.md") && md[0].title == "Tides", "{:?}", md[0]);
        let html = read(&write(dir.path(), "p.html", "<html><head><title>Owls &amp; Larks</title><style>p{}</style></head><body><p>Owls hunt at night.</p><script>x()</script><p>Larks sing.</p></body></html>"), &f).unwrap();
        assert_eq!(html[0].title, "Owls & Larks");
        assert!(
            html[0].text.contains("Owls hunt at night.")
                && html[0].text.contains("Larks sing.")
                && !html[0].text.contains("x()")
                && !html[0].text.contains("p{}"),
            "{:?}",
            html[0].text
        );
        let map = read(
            &write(
                dir.path(),
                "s.json",
                r#"{"Ada": {"title": "Ada Lovelace", "extract": "A mathematician.", "description": "English writer"}, "Empty": {"title": "E"}}"#,
            ),
            &f,
        )
        .unwrap();
        assert_eq!(map.len(), 1, "a record without text is skipped");
        assert_eq!((map[0].title.as_str(), map[0].text.as_str()), ("Ada Lovelace", "A mathematician.\n\nEnglish writer"));
        let arr = read(&write(dir.path(), "a.json", r#"[{"title": "X", "text": "x text"}, {"name": "Y", "content": "y text"}]"#), &f).unwrap();
        assert_eq!(arr.iter().map(|d| d.title.as_str()).collect::<Vec<_>>(), ["X", "a.json #1"]);
        let lines =
            read(&write(dir.path(), "l.jsonl", "{\"title\": \"L1\", \"article\": \"one\"}\n\n{\"title\": \"L2\", \"article\": \"two\"}\n"), &f).unwrap();
        assert_eq!(lines.len(), 2);
        let custom = JsonFields { title: "name".into(), text: vec!["body".into()], extra: vec![] };
        assert_eq!(read(&write(dir.path(), "c.json", r#"[{"name": "N", "body": "b"}]"#), &custom).unwrap()[0].title, "N");
    }

    #[test]
    fn what_cannot_be_read_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let f = JsonFields::default();
        let e = read(&write(dir.path(), "x.pdf", "%PDF"), &f).unwrap_err().to_string();
        assert!(e.contains("`.pdf` files are not read"), "{e}");
        let e = read(&write(dir.path(), "bad.json", "{nope"), &f).unwrap_err().to_string();
        assert!(e.contains("not JSON"), "{e}");
        let e = read(&write(dir.path(), "bad.jsonl", "{\"a\": 1}\n[oops"), &f).unwrap_err().to_string();
        assert!(e.contains("line 2"), "{e}");
        assert!(read(&dir.path().join("missing.md"), &f).is_err());
    }
}
