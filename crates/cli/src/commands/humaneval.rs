//! `agentloop bench humaneval`: the 164 HumanEval problems, single-shot and
//! with a test-and-retry loop that may only use the examples in each
//! prompt's docstring. The package's own `check` tests score each final
//! answer once. Per-problem results go to a JSON-lines file; the last line
//! printed is one JSON object.

use std::io::{BufRead, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use agentloop_core::{ChatModel, ChatRequest, Message, DEFAULT_ROLE};
use agentloop_llm::build_models;
use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Deserialize;
use serde_json::json;

use crate::cli::HumanEvalBench;
use crate::config::Config;

#[derive(Deserialize)]
struct Problem {
    task_id: String,
    prompt: String,
    entry_point: String,
    test: String,
}

/// What one problem came to.
struct Solved {
    code: String,
    tokens: u64,
}

pub async fn run(config: &Config, args: HumanEvalBench) -> Result<ExitCode> {
    let path = config.data_dir.join("benchmarks/HumanEval.jsonl.gz");
    let mut problems = load(&path)?;
    if let Some(n) = args.limit {
        problems.truncate(n);
    }
    let (single, looped) = match args.mode.as_str() {
        "single" => (true, false),
        "loop" => (false, true),
        _ => (true, true),
    };
    let models = build_models(&config.models, &config.data_dir, config.debug_log.as_deref())?;
    let model = models.get(DEFAULT_ROLE)?.clone();
    let out_path = args.out.clone().unwrap_or_else(|| config.data_dir.join("benchmarks/humaneval-results.jsonl"));
    let mut out = std::fs::File::create(&out_path).with_context(|| format!("cannot write {}", out_path.display()))?;
    let scratch = super::scratch_dir("humaneval")?;

    let bar = ProgressBar::new(problems.len() as u64);
    bar.set_style(ProgressStyle::with_template("{bar:30} {pos}/{len} {msg} {elapsed}").unwrap_or_else(|_| ProgressStyle::default_bar()));
    let (mut single_pass, mut loop_pass, mut tokens, mut loop_iterations_of_successes) = (0u32, 0u32, 0u64, 0u32);
    let started = Instant::now();
    for p in &problems {
        bar.set_message(p.task_id.clone());
        let mut record = json!({"task_id": p.task_id});
        let mut greedy = None;
        if single {
            let s = solve_single(&*model, p).await?;
            let passed = check(&scratch, p, &s.code)?;
            single_pass += u32::from(passed);
            tokens += s.tokens;
            record["single"] = json!({"passed": passed, "code": s.code});
            greedy = Some(s);
        }
        if looped {
            // The loop's first answer is the same greedy answer: reuse it.
            let s = solve_loop(&*model, p, &scratch, args.attempts, greedy).await?;
            let passed = check(&scratch, p, &s.code)?;
            loop_pass += u32::from(passed);
            if passed {
                loop_iterations_of_successes += s.attempts;
            }
            tokens += s.new_tokens;
            record["loop"] = json!({"passed": passed, "attempts": s.attempts, "tokens": s.tokens, "visible": s.visible, "code": s.code});
        }
        writeln!(out, "{record}")?;
        bar.inc(1);
    }
    bar.finish_and_clear();
    let n = problems.len().max(1) as f64;
    let mut report = json!({"problems": problems.len(), "tokens": tokens, "seconds": started.elapsed().as_secs(), "results": out_path});
    if single {
        report["single_pass_at_1"] = json!(round(f64::from(single_pass) / n));
    }
    if looped {
        report["loop_pass_at_1"] = json!(round(f64::from(loop_pass) / n));
        report["iterations_per_success"] =
            json!((loop_pass > 0).then(|| round(f64::from(loop_iterations_of_successes) / f64::from(loop_pass))));
    }
    println!("{report}");
    Ok(ExitCode::SUCCESS)
}

fn load(path: &Path) -> Result<Vec<Problem>> {
    let file = std::fs::File::open(path)
        .with_context(|| format!("the HumanEval problems are missing at {}: run `bash scripts/fetch-models.sh`", path.display()))?;
    let reader = std::io::BufReader::new(flate2::read::GzDecoder::new(file));
    let mut problems = Vec::new();
    for (i, line) in reader.lines().enumerate() {
        let line = line.with_context(|| format!("{} is not a readable gzip file", path.display()))?;
        if line.trim().is_empty() {
            continue;
        }
        problems.push(serde_json::from_str(&line).with_context(|| format!("line {} of {} is not a HumanEval problem", i + 1, path.display()))?);
    }
    if problems.is_empty() {
        bail!("{} holds no problems: fetch it again with `bash scripts/fetch-models.sh`", path.display());
    }
    Ok(problems)
}

fn request(p: &Problem, temperature: Option<f32>) -> ChatRequest {
    let mut r = ChatRequest::new(vec![
        Message::system("You are an expert Python programmer."),
        Message::user(format!(
            "Complete the following Python function. Reply with the whole function, imports included, in one ```python code block.\n\n```python\n{}```",
            p.prompt
        )),
    ]);
    r.temperature = temperature;
    r.max_tokens = Some(512);
    r
}

async fn solve_single(model: &dyn ChatModel, p: &Problem) -> Result<Solved> {
    let answer = model.chat(&request(p, None)).await?;
    Ok(Solved { code: program(p, &answer.content), tokens: answer.usage.total() })
}

/// What the loop came to: the answer it stands by, how many answers it
/// drew, and what the visible examples said of the answer.
struct Looped {
    code: String,
    attempts: u32,
    /// Tokens of every answer, the reused greedy one included.
    tokens: u64,
    /// Tokens this loop spent beyond the reused greedy answer.
    new_tokens: u64,
    visible: serde_json::Value,
}

/// The greedy answer first; while the docstring's examples fail, fresh
/// samples at temperature 0.8 (repairing with the failure as feedback does
/// not help a small model: it repeats itself). Code already tried is never
/// tested again. If nothing passes every visible example, the answer that
/// passed the most stands (the earliest on a tie).
async fn solve_loop(model: &dyn ChatModel, p: &Problem, scratch: &Path, attempts: u32, mut greedy: Option<Solved>) -> Result<Looped> {
    let mut tried: Vec<String> = Vec::new();
    let (mut tokens, mut new_tokens) = (0, 0);
    let mut best: Option<(Visible, String)> = None;
    let attempts = attempts.max(1);
    for attempt in 1..=attempts {
        let code = match greedy.take() {
            Some(s) => {
                tokens += s.tokens;
                s.code
            }
            None => {
                let temperature = if attempt == 1 { None } else { Some(0.8) };
                let answer = model.chat(&request(p, temperature)).await?;
                tokens += answer.usage.total();
                new_tokens += answer.usage.total();
                program(p, &answer.content)
            }
        };
        if tried.contains(&code) {
            continue;
        }
        tried.push(code.clone());
        let seen = visible(scratch, p, &code)?;
        if seen.all_pass() {
            return Ok(Looped { code, attempts: attempt, tokens, new_tokens, visible: seen.to_json() });
        }
        if best.as_ref().is_none_or(|(b, _)| seen.score() > b.score()) {
            best = Some((seen, code));
        }
    }
    let (seen, code) = best.unwrap_or_else(|| (Visible::default(), String::new()));
    Ok(Looped { code, attempts, tokens, new_tokens, visible: seen.to_json() })
}

/// The code of the answer's first Python block (or the whole answer), with
/// the prompt prepended when the answer did not define the function.
fn program(p: &Problem, answer: &str) -> String {
    let code = extract_code(answer);
    if code.contains(&format!("def {}", p.entry_point)) {
        // Keep the prompt's imports and helpers: answers often drop them.
        let imports: String = p.prompt.lines().filter(|l| l.starts_with("import ") || l.starts_with("from ")).map(|l| format!("{l}\n")).collect();
        format!("{imports}{code}")
    } else {
        format!("{}{code}", p.prompt)
    }
}

fn extract_code(answer: &str) -> String {
    for fence in ["```python", "```py", "```"] {
        if let Some(start) = answer.find(fence) {
            let body = &answer[start + fence.len()..];
            let end = body.find("```").unwrap_or(body.len());
            return body[..end].trim_start_matches('\n').to_string();
        }
    }
    answer.to_string()
}

/// The script that runs a candidate against its prompt's docstring
/// examples (every shape HumanEval writes them in); it never sees the
/// package's tests.
const VISIBLE_SCRIPT: &str = include_str!("humaneval_visible.py");

/// What the docstring's examples said of one candidate.
#[derive(Default, Deserialize)]
struct Visible {
    examples: u32,
    passed: u32,
    defined: bool,
}

impl Visible {
    fn all_pass(&self) -> bool {
        self.defined && self.passed == self.examples
    }

    /// Defining the function at all counts for something.
    fn score(&self) -> u32 {
        if self.defined {
            self.passed + 1
        } else {
            0
        }
    }

    fn to_json(&self) -> serde_json::Value {
        json!({"examples": self.examples, "passed": self.passed, "defined": self.defined})
    }
}

/// Runs the candidate against the docstring's examples. A candidate that
/// hangs or kills the interpreter passes nothing.
fn visible(scratch: &Path, p: &Problem, code: &str) -> Result<Visible> {
    let write = |name: &str, text: &str| -> Result<PathBuf> {
        let path = scratch.join(name);
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
        Ok(path)
    };
    let script = write("visible.py", VISIBLE_SCRIPT)?;
    let prompt = write("prompt.txt", &p.prompt)?;
    let candidate = write("candidate.py", code)?;
    let output = std::process::Command::new("timeout")
        .args(["20", "python3"])
        .args([&script, &prompt])
        .arg(&p.entry_point)
        .arg(&candidate)
        .current_dir(scratch)
        .stdin(std::process::Stdio::null())
        .output()
        .context("cannot start python3 (with coreutils' timeout)")?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    Ok(stdout.lines().last().and_then(|l| serde_json::from_str(l).ok()).unwrap_or_default())
}

/// The package's own tests, run once per final answer.
fn check(scratch: &Path, p: &Problem, code: &str) -> Result<bool> {
    run_python(scratch, &format!("{code}\n\n{}\n\ncheck({})\n", p.test, p.entry_point))
}

/// Runs a script with a 10 s limit; true when it exits 0.
fn run_python(scratch: &Path, script: &str) -> Result<bool> {
    let file = scratch.join("candidate.py");
    std::fs::write(&file, script).with_context(|| format!("cannot write {}", file.display()))?;
    let mut child = std::process::Command::new("timeout")
        .args(["10", "python3"])
        .arg(&file)
        .current_dir(scratch)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .context("cannot start python3 (with coreutils' timeout)")?;
    Ok(child.wait()?.success())
}

fn round(x: f64) -> f64 {
    (x * 10000.0).round() / 10000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(prompt: &str, entry: &str) -> Problem {
        Problem { task_id: "t".into(), prompt: prompt.into(), entry_point: entry.into(), test: String::new() }
    }

    fn seen(p: &Problem, code: &str) -> Visible {
        let dir = std::env::temp_dir().join(format!("agentloop-visible-{}-{}", std::process::id(), p.entry_point));
        std::fs::create_dir_all(&dir).unwrap();
        visible(&dir, p, code).unwrap()
    }

    #[test]
    fn doctest_examples_judge_a_candidate() {
        let p = problem("def f(x):\n    \"\"\" Double.\n    >>> f(2)\n    4\n    >>> f([1])\n    [1, 1]\n    \"\"\"\n", "f");
        let right = seen(&p, "def f(x):\n    return x * 2\n");
        assert_eq!((right.examples, right.passed, right.all_pass()), (2, 2, true));
        let wrong = seen(&p, "def f(x):\n    return x\n");
        assert_eq!((wrong.examples, wrong.passed, wrong.all_pass()), (2, 0, false));
    }

    #[test]
    fn arrow_and_prose_examples_count_too() {
        let p = problem(
            "def add(a, b):\n    \"\"\"Add.\n    add(1, 2) ➞ 3\n    add(2, 2) => 4\n    add(3, 3) = 6\n    For a = 5, b = 1 the output should be 6\n    Example:\n        Input: a = 0, b = 0\n        Output: 0\n    \"\"\"\n",
            "add",
        );
        let right = seen(&p, "def add(a, b):\n    return a + b\n");
        assert_eq!((right.examples, right.passed), (5, 5));
        assert!(seen(&p, "def add(a, b):\n    return a * b\n").passed < 5);
    }

    #[test]
    fn a_candidate_that_crashes_or_hangs_passes_nothing() {
        let p = problem("def g(x):\n    \"\"\"g(1) == 1\"\"\"\n", "g");
        let broken = seen(&p, "def g(x) return x\n");
        assert!(!broken.defined && broken.score() == 0);
        let hangs = seen(&p, "def g(x):\n    while True:\n        pass\n");
        assert!(hangs.defined && hangs.passed == 0 && hangs.examples == 1);
    }

    #[test]
    fn code_comes_out_of_the_fence_and_gets_the_prompt_when_needed() {
        let p = Problem { task_id: "t".into(), prompt: "from typing import List\n\ndef f(x):\n    \"\"\"doc\"\"\"\n".into(), entry_point: "f".into(), test: String::new() };
        assert_eq!(program(&p, "Sure:\n```python\ndef f(x):\n    return x\n```\nDone."), "from typing import List\ndef f(x):\n    return x\n");
        assert!(program(&p, "    return x\n").starts_with("from typing import List\n\ndef f(x):"));
    }
}
