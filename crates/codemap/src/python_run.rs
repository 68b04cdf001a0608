//! A test command that is a plain pytest or unittest run, taken apart so
//! that a script of ours can run the same suite the same way: the same
//! environment words, interpreter, runner and arguments, with the script
//! in between (`python3 -c SCRIPT pytest FLAGS… ARGS…`). The line tracer
//! and the run of the failing tests alone are both such scripts.

/// `NAME=value` words, interpreter, runner (`pytest` or `unittest`) and the
/// user's arguments, as the test command gave them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PythonRun {
    env: Vec<String>,
    python: String,
    runner: String,
    args: Vec<String>,
}

impl PythonRun {
    /// The parts of `test_command` when it is a plain pytest or unittest
    /// run (`python3 -m pytest -q`, `pytest tests`, `python -m unittest
    /// -q`, with `NAME=value` before it); `None` for anything else, and for
    /// a command with shell syntax in it, whose words cannot be taken apart
    /// safely.
    pub fn parse(test_command: &str) -> Option<Self> {
        if test_command.chars().any(|c| "|&;<>()$`\\\"'*?[]{}~#\n".contains(c)) {
            return None;
        }
        let words: Vec<&str> = test_command.split_whitespace().collect();
        let env = words.iter().take_while(|w| w.contains('=')).count();
        let (prefix, rest) = words.split_at(env);
        let is_python = |w: &str| w == "python" || w.strip_prefix("python3").is_some_and(|v| v.is_empty() || v.starts_with('.'));
        let (python, runner, args) = match rest {
            [py, "-m", runner, args @ ..] if is_python(py) => (*py, *runner, args),
            [runner, args @ ..] if matches!(*runner, "pytest" | "py.test") => ("python3", "pytest", args),
            _ => return None,
        };
        if !matches!(runner, "pytest" | "unittest") {
            return None;
        }
        let owned = |ws: &[&str]| ws.iter().map(|w| w.to_string()).collect();
        Some(Self { env: owned(prefix), python: python.into(), runner: runner.into(), args: owned(args) })
    }

    /// The command that runs `script` (Python source) on this suite, with
    /// `flags` for the script before the user's arguments. Each flag is
    /// quoted for the shell.
    pub fn with_script(&self, script: &str, flags: &[String]) -> String {
        let mut out = self.env.clone();
        out.extend([self.python.clone(), "-c".into(), quoted(script), self.runner.clone()]);
        out.extend(flags.iter().map(|f| quoted_if_needed(f)));
        out.extend(self.args.iter().cloned());
        out.join(" ")
    }
}

/// `text` as one word for a POSIX shell.
fn quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// `text` as it is when the shell would leave it alone, else quoted.
fn quoted_if_needed(text: &str) -> String {
    if text.chars().all(|c| c.is_ascii_alphanumeric() || "_./,=:-+@%".contains(c)) {
        text.to_string()
    } else {
        quoted(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_runs_are_taken_apart_and_anything_else_is_not() {
        let run = PythonRun::parse("PYTHONHASHSEED=0 python -m unittest -q").unwrap_or_else(|| panic!("a plain unittest run"));
        assert_eq!(run.with_script("print(1)", &["--x=1".into()]), "PYTHONHASHSEED=0 python -c 'print(1)' unittest --x=1 -q");
        let run = PythonRun::parse("pytest tests").unwrap_or_else(|| panic!("a plain pytest run"));
        assert_eq!(run.with_script("print('a')", &["--ids=[\"t.py::a b\"]".into()]), r#"python3 -c 'print('\''a'\'')' pytest '--ids=["t.py::a b"]' tests"#);
        for other in ["cargo test", "python3 -m pytest; rm -rf /", "python3 -m mypkg.tests", "make test"] {
            assert_eq!(PythonRun::parse(other), None, "{other}");
        }
    }
}
