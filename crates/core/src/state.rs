//! Typed agent state and how a step's change becomes a JSON Patch without
//! diffing the whole state.
//!
//! A state lists its top-level fields once, as either a `value` (small:
//! re-serialized and compared each step) or a `log` (append-only: only the
//! items added since the last step are serialized). The cost of computing a
//! step's patch therefore depends on what the step changed and on the small
//! fields, never on the length of the history held in logs.

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::{Error, Result};

/// State an agent graph runs over.
///
/// ```
/// use agentloop_core::{Fields, State};
/// #[derive(serde::Serialize, serde::Deserialize)]
/// struct Chat { turn: u32, messages: Vec<String> }
/// impl State for Chat {
///     fn fields(&self, f: &mut Fields<'_>) {
///         f.value("turn", &self.turn);
///         f.log("messages", &self.messages);
///     }
/// }
/// ```
pub trait State: Serialize + DeserializeOwned + Send + 'static {
    /// Visit every top-level field under its serialized name. A field not
    /// visited is never journaled, so list them all; `log` fields may only
    /// grow (shrinking is detected and journaled as a replacement; editing an
    /// older item is not — declare such a field as a `value`).
    fn fields(&self, fields: &mut Fields<'_>);
}

#[derive(Clone, Debug, PartialEq)]
enum Mark {
    Value(Vec<u8>),
    Log(usize),
}

/// What the journal last recorded of each field.
#[derive(Clone, Debug, Default)]
pub struct Marks(Vec<Mark>);

impl Marks {
    /// Marks for a state as it is now (after load or a snapshot). Fails when
    /// the state serializes a top-level field its `fields` never visits: such
    /// a field would silently never be journaled, so a resumed session would
    /// lose it. Checked here, once per session start, for every agent alike.
    pub fn of<S: State>(state: &S) -> Result<Self> {
        let mut marks = Marks::default();
        let mut patch = Vec::new();
        let mut visited = Vec::new();
        let mut f = Fields { marks: &mut marks, patch: &mut patch, index: 0, error: None, visited: Some(&mut visited) };
        state.fields(&mut f);
        if let Some(e) = f.error {
            return Err(e);
        }
        if let serde_json::Value::Object(map) = serde_json::to_value(state)? {
            if let Some(missed) = map.keys().find(|k| !visited.contains(*k)) {
                return Err(Error::State(format!(
                    "field `{missed}` is part of the state but `State::fields` never visits it, so it would never be journaled; list it there"
                )));
            }
        }
        Ok(marks)
    }

    /// The JSON Patch (as text) from the marked state to `state`, updating the
    /// marks; `None` when nothing changed.
    pub fn patch<S: State>(&mut self, state: &S) -> Result<Option<String>> {
        let mut patch = vec![b'['];
        let mut f = Fields { marks: self, patch: &mut patch, index: 0, error: None, visited: None };
        state.fields(&mut f);
        if let Some(e) = f.error {
            return Err(e);
        }
        if patch.len() == 1 {
            return Ok(None);
        }
        patch.push(b']');
        // Only JSON that serde_json wrote and ASCII went in.
        String::from_utf8(patch).map(Some).map_err(|e| Error::State(format!("a step's patch is not UTF-8 ({e})")))
    }
}

/// The visitor `State::fields` fills in.
pub struct Fields<'a> {
    marks: &'a mut Marks,
    /// The patch so far: `[` and the operations, comma-separated.
    patch: &'a mut Vec<u8>,
    index: usize,
    error: Option<Error>,
    /// The names visited, when marking a state afresh (`Marks::of`): then
    /// nothing is journaled, only remembered. `None` when computing a patch.
    visited: Option<&'a mut Vec<String>>,
}

impl Fields<'_> {
    /// A field journaled whole whenever its serialized form changes.
    pub fn value<T: Serialize + ?Sized>(&mut self, name: &str, value: &T) {
        self.visit(name);
        let bytes = match serde_json::to_vec(value) {
            Ok(b) => b,
            Err(e) => return self.fail(name, e),
        };
        let changed = match self.marks.0.get(self.index) {
            Some(Mark::Value(old)) => *old != bytes,
            _ => true,
        };
        if changed && !self.fresh() {
            self.op_head(name, false);
            self.patch.extend_from_slice(&bytes);
            self.patch.push(b'}');
        }
        self.set_mark(Mark::Value(bytes));
    }

    /// An append-only list: only items added since the last step are journaled.
    pub fn log<T: Serialize>(&mut self, name: &str, items: &[T]) {
        self.visit(name);
        let seen = match self.marks.0.get(self.index) {
            Some(Mark::Log(n)) => Some(*n),
            _ => None,
        };
        if !self.fresh() {
            match seen {
                Some(n) if n <= items.len() => {
                    for item in &items[n..] {
                        if let Err(e) = self.op(name, true, item) {
                            return self.fail(name, e);
                        }
                    }
                }
                _ => {
                    if let Err(e) = self.op(name, false, items) {
                        return self.fail(name, e);
                    }
                }
            }
        }
        self.set_mark(Mark::Log(items.len()));
    }

    fn fresh(&self) -> bool {
        self.visited.is_some()
    }

    fn visit(&mut self, name: &str) {
        if let Some(visited) = self.visited.as_deref_mut() {
            visited.push(name.to_string());
        }
    }

    fn set_mark(&mut self, mark: Mark) {
        if self.index < self.marks.0.len() {
            self.marks.0[self.index] = mark;
        } else {
            self.marks.0.push(mark);
        }
        self.index += 1;
    }

    /// Appends an `add` operation of `value`, serialized straight into the patch.
    fn op<T: Serialize + ?Sized>(&mut self, name: &str, append: bool, value: &T) -> serde_json::Result<()> {
        let start = self.patch.len();
        self.op_head(name, append);
        if let Err(e) = serde_json::to_writer(&mut *self.patch, value) {
            self.patch.truncate(start);
            return Err(e);
        }
        self.patch.push(b'}');
        Ok(())
    }

    /// An `add` operation up to its value.
    fn op_head(&mut self, name: &str, append: bool) {
        if self.patch.len() > 1 {
            self.patch.push(b',');
        }
        self.patch.extend_from_slice(b"{\"op\":\"add\",\"path\":\"/");
        // JSON Pointer escaping (RFC 6901) and JSON string escaping of the
        // name, which field names seldom need: they are written as they are.
        if name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
            self.patch.extend_from_slice(name.as_bytes());
        } else {
            let pointer = name.replace('~', "~0").replace('/', "~1");
            let quoted = serde_json::to_string(&pointer).unwrap_or_default();
            self.patch.extend_from_slice(quoted.trim_matches('"').as_bytes());
        }
        if append {
            self.patch.extend_from_slice(b"/-");
        }
        self.patch.extend_from_slice(b"\",\"value\":");
    }

    fn fail(&mut self, name: &str, e: serde_json::Error) {
        self.index += 1;
        if self.error.is_none() {
            self.error = Some(Error::State(format!("field `{name}` could not be serialized ({e})")));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
    struct S {
        n: u32,
        note: String,
        log: Vec<String>,
    }
    impl State for S {
        fn fields(&self, f: &mut Fields<'_>) {
            f.value("n", &self.n);
            f.value("note", &self.note);
            f.log("log", &self.log);
        }
    }

    fn apply(doc: &mut serde_json::Value, patch: &str) {
        let p: json_patch::Patch = serde_json::from_str(patch).unwrap();
        json_patch::patch(doc, &p).unwrap();
    }

    #[test]
    fn patch_covers_only_what_changed_and_replays_to_the_same_state() {
        let mut s = S { n: 0, note: "a/b~c\"".into(), log: vec!["x".into()] };
        let mut doc = serde_json::to_value(&s).unwrap();
        let mut marks = Marks::of(&s).unwrap();
        assert_eq!(marks.patch(&s).unwrap(), None);

        s.log.push("y".into());
        s.log.push("z".into());
        let p = marks.patch(&s).unwrap().unwrap();
        assert!(!p.contains("\"x\""), "old log items must not be re-journaled: {p}");
        assert!(!p.contains("/n"), "unchanged values are not journaled: {p}");
        apply(&mut doc, &p);
        assert_eq!(doc, serde_json::to_value(&s).unwrap());

        s.n = 7;
        s.note = "new".into();
        s.log.clear();
        s.log.push("only".into());
        let p = marks.patch(&s).unwrap().unwrap();
        apply(&mut doc, &p);
        assert_eq!(doc, serde_json::to_value(&s).unwrap());
    }

    #[derive(Serialize, Deserialize)]
    struct Forgot {
        n: u32,
        later: String,
    }
    impl State for Forgot {
        fn fields(&self, f: &mut Fields<'_>) {
            f.value("n", &self.n);
        }
    }

    #[test]
    fn a_field_the_visitor_never_lists_is_refused_not_silently_left_out_of_the_journal() {
        let err = Marks::of(&Forgot { n: 1, later: String::new() }).unwrap_err().to_string();
        assert!(err.contains("`later`") && err.contains("State::fields"), "{err}");
        assert!(Marks::of(&S { n: 0, note: String::new(), log: vec![] }).is_ok());
    }
}
