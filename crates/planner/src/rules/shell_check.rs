//! RUN_COMMAND's check: the command is valid for the configured shell and
//! calls only commands this machine has.

use std::process::{Command, Stdio};

use agentloop_tools::Sandbox;

use agentloop_agent::known_programs;

use crate::action::Shell;

/// Words that start a command but are not commands.
const SH_KEYWORDS: [&str; 18] =
    ["if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac", "in", "!", "{", "}", "time", "function"];

/// The command is valid for `shell` and every command it calls exists here.
/// A session's checks run in its `sandbox`.
pub fn shell_check(command: &str, shell: Shell, sandbox: Option<&Sandbox>) -> Result<(), String> {
    match shell {
        Shell::Sh => {
            let mut check = Command::new("sh");
            check.args(["-n", "-c", command]).stdin(Stdio::null());
            if let Some(sandbox) = sandbox {
                sandbox.confine(&mut check);
            }
            let syntax = check.output().map_err(|e| format!("sh cannot be started to check the command ({e})"))?;
            if !syntax.status.success() {
                let err = String::from_utf8_lossy(&syntax.stderr).trim().to_string();
                return Err(format!("the command is not valid POSIX sh ({err})"));
            }
            let missing = known_programs::unknown_to_sh(&command_words(command), sandbox)?;
            if missing.is_empty() {
                Ok(())
            } else {
                Err(format!("this machine has no `{}` command: use commands that exist here (POSIX sh)", missing.join("`, `")))
            }
        }
        Shell::Powershell => {
            let words = command_words(command);
            let script = "foreach ($c in $args) { if (-not (Get-Command $c -ErrorAction SilentlyContinue)) { $c } }";
            let missing = known_programs::unknown_to("pwsh", &["-NoProfile", "-Command", script], &words, sandbox)
                .map_err(|_| "PowerShell is the configured shell but `pwsh` is not installed here: install it or set shell = \"sh\"".to_string())?;
            if missing.is_empty() {
                Ok(())
            } else {
                Err(format!("PowerShell here has no `{}` command", missing.join("`, `")))
            }
        }
    }
}

/// Not an assignment (`LANG=C`), a keyword, a redirection or a file descriptor.
fn names_a_command(word: &str) -> bool {
    let assignment = word.contains('=') && !word.starts_with('=');
    !assignment && !SH_KEYWORDS.contains(&word) && !word.starts_with(['>', '<']) && !word.chars().all(|c| c.is_ascii_digit())
}

/// The first word of each simple command in a command line (after variable
/// assignments and keywords); words built from `$` expansions are skipped.
fn command_words(command: &str) -> Vec<String> {
    let mut words = Vec::new();
    let separated = command.replace("&&", ";").replace("||", ";").replace(['|', '&', '\n', '(', ')', '`'], ";");
    for part in separated.split(';') {
        // `for x in ...` and `case x in` name a variable and words, not commands.
        if matches!(part.split_whitespace().next(), Some("for" | "case" | "select")) {
            continue;
        }
        let first = part.split_whitespace().find(|w| names_a_command(w));
        if let Some(w) = first {
            let w = w.trim_matches(|c| c == '"' || c == '\'');
            if !w.is_empty() && !w.contains('$') && !words.iter().any(|x| x == w) {
                words.push(w.to_string());
            }
        }
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_words_skip_assignments_keywords_and_redirections() {
        assert_eq!(command_words("LANG=C sort a.txt | uniq -c > out.txt && echo done"), ["sort", "uniq", "echo"]);
        assert_eq!(command_words("for f in *.txt; do wc -l \"$f\"; done"), ["wc"]);
    }
}
