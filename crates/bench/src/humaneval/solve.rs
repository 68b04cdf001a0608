//! The loop HumanEval measures, as a graph on the engine:
//!
//! ```text
//! GENERATE → TEST ─examples pass→ END
//!              └─fail→ GENERATE   (until the attempts run out)
//! ```
//!
//! The first answer is greedy (it is also the single-shot answer); while
//! the docstring's examples fail, fresh samples at temperature 0.8, since a
//! small model asked to repair its failure repeats itself. The samples are
//! asked `together` at a time (decoded in one batch on the embedded model,
//! each journaled as its own call) and tested in order until one passes;
//! the answers never exceed the attempts. Code already tried is not tested
//! again. TEST runs the examples written in the prompt
//! (`visible.py`) in the session's Python tool; the package's hidden tests
//! are never seen here. Every problem is a journaled session.

use std::sync::Arc;
use std::time::Duration;

use agentloop_agent::fence::fences;
use agentloop_core::{ChatRequest, CompiledGraph, Fields, Graph, Message, Models, Result, Runner, State, Step, Store, Termination, Tools, DEFAULT_ROLE, END};
use agentloop_tools::{Python, Sandbox};
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

pub const AGENT: &str = "humaneval";

/// The temperature of every answer after the first greedy one.
const SAMPLED_TEMPERATURE: f32 = 0.8;

/// Seconds the examples of one candidate may take in all.
const VISIBLE_TIMEOUT_SECS: u64 = 20;

/// The script that runs a candidate against its prompt's docstring examples.
const VISIBLE_SCRIPT: &str = include_str!("visible.py");

/// What the docstring's examples said of one candidate.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Visible {
    pub examples: u32,
    pub passed: u32,
    pub defined: bool,
}

impl Visible {
    pub fn all_pass(&self) -> bool {
        self.defined && self.passed == self.examples
    }

    /// Defining the function at all counts for something.
    pub fn score(&self) -> u32 {
        if self.defined {
            self.passed + 1
        } else {
            0
        }
    }
}

/// One answer and what its examples said (`None`: the same code was tested before).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Candidate {
    pub code: String,
    pub tokens: u64,
    pub visible: Option<Visible>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SolveState {
    pub task_id: String,
    pub prompt: String,
    pub entry_point: String,
    pub candidates: Vec<Candidate>,
    /// Answers the loop may draw in all.
    #[serde(default = "one")]
    pub attempts: u32,
    /// Samples asked at once after the greedy answer.
    #[serde(default = "one")]
    pub together: u32,
}

fn one() -> u32 {
    1
}

impl State for SolveState {
    fn fields(&self, f: &mut Fields<'_>) {
        f.value("taskId", &self.task_id);
        f.value("prompt", &self.prompt);
        f.value("entryPoint", &self.entry_point);
        f.value("candidates", &self.candidates);
        f.value("attempts", &self.attempts);
        f.value("together", &self.together);
    }
}

impl SolveState {
    /// The answer the loop stands by: the first that passed every example,
    /// else the one that passed the most (the earliest on a tie).
    pub fn chosen(&self) -> Option<&Candidate> {
        let tested = || self.candidates.iter().filter(|c| c.visible.is_some());
        tested().find(|c| c.visible.as_ref().is_some_and(Visible::all_pass)).or_else(|| {
            tested().fold(None, |best: Option<&Candidate>, c| match best {
                Some(b) if score(b) >= score(c) => Some(b),
                _ => Some(c),
            })
        })
    }

    fn passed(&self) -> bool {
        self.candidates.iter().filter_map(|c| c.visible.as_ref()).any(Visible::all_pass)
    }

    /// Samples the next GENERATE asks for: `together`, within the attempts
    /// left.
    fn next_batch(&self) -> usize {
        let left = (self.attempts.max(1) as usize).saturating_sub(self.candidates.len());
        left.min(self.together.max(1) as usize)
    }
}

fn score(c: &Candidate) -> u32 {
    c.visible.as_ref().map(Visible::score).unwrap_or(0)
}

pub fn graph() -> Result<CompiledGraph<SolveState>> {
    Graph::new(AGENT)
        .node("generate", generate)
        .node("test", test)
        .entry("generate")
        .edge("generate", "test")
        .route("test", &["generate", END], |s: &SolveState| if s.passed() { END.into() } else { "generate".into() })
        .compile()
}

/// A runner whose Python session lives in the sandbox's folder, confined.
pub fn runner(models: Models, store: Arc<dyn Store>, sandbox: Sandbox) -> Result<Runner<SolveState>> {
    let python = Arc::new(Python::new(sandbox, Duration::from_secs(VISIBLE_TIMEOUT_SECS)));
    let mut tools = Tools::new();
    tools.add(python);
    Ok(agentloop_agent::Wiring::new(models, store).runner(graph()?, tools, None))
}

/// At most `attempts` answers: the greedy one, then rounds of `together`
/// samples (the last round only what is left).
pub fn termination(attempts: u32, together: u32) -> Termination {
    let sampled = attempts.max(1) - 1;
    Termination::max_iterations(1 + sampled.div_ceil(together.max(1)))
}

fn generate<'a>(s: &'a mut SolveState, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        step.begin_iteration()?;
        let asked = if s.candidates.is_empty() { vec![request(&s.prompt, None)] } else { vec![request(&s.prompt, Some(SAMPLED_TEMPERATURE)); s.next_batch()] };
        let answers = step.chat_all_as(DEFAULT_ROLE, asked).await?;
        for answer in answers {
            let code = program(&s.prompt, &s.entry_point, &answer.content);
            s.candidates.push(Candidate { code, tokens: answer.usage.total(), visible: None });
        }
        Ok(())
    })
}

/// Runs the docstring's examples on the candidates not yet tested, in
/// order, until one passes every example; one whose code an earlier
/// candidate has is not run again (and stays untested).
fn test<'a>(s: &'a mut SolveState, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        for i in 0..s.candidates.len() {
            let code = &s.candidates[i].code;
            if s.candidates[i].visible.is_some() || s.candidates[..i].iter().any(|c| &c.code == code) {
                continue;
            }
            let seen = examples(step, s, code).await?;
            let passed = seen.all_pass();
            s.candidates[i].visible = Some(seen);
            if passed {
                step.signal(|sig| {
                    sig.tests_passing = Some(true);
                    sig.agent_signalled_completion = true;
                });
                step.finish("examples_pass");
                break;
            }
        }
        Ok(())
    })
}

/// What the docstring's examples say of `code`, run in the session's
/// Python tool; a candidate that hangs or kills the interpreter passes
/// nothing.
async fn examples(step: &mut Step, s: &SolveState, code: &str) -> Result<Visible> {
    let script = format!(
        "{VISIBLE_SCRIPT}\nprint(json.dumps(visible({}, {}, {})))\n",
        Value::String(s.prompt.clone()),
        Value::String(s.entry_point.clone()),
        Value::String(code.to_string())
    );
    let out = step.tool("python", json!({"code": script})).await?;
    Ok(out["stdout"].as_str().and_then(|o| o.lines().last()).and_then(|l| serde_json::from_str(l).ok()).unwrap_or_default())
}

fn request(prompt: &str, temperature: Option<f32>) -> ChatRequest {
    let mut r = ChatRequest::new(vec![
        Message::system("You are an expert Python programmer."),
        Message::user(format!(
            "Complete the following Python function. Reply with the whole function, imports included, in one ```python code block.\n\n```python\n{prompt}```"
        )),
    ]);
    r.temperature = temperature;
    r.max_tokens = Some(512);
    r
}

/// The code of the answer's first Python block (or first block, or the
/// whole answer), with the prompt prepended when the answer did not define
/// the function.
pub fn program(prompt: &str, entry_point: &str, answer: &str) -> String {
    let blocks = fences(answer);
    let block = blocks.iter().find(|f| matches!(f.info, "python" | "py")).or(blocks.first());
    let code = block.map(|f| f.body()).unwrap_or_else(|| answer.to_string());
    if code.contains(&format!("def {entry_point}")) {
        // Keep the prompt's imports and helpers: answers often drop them.
        let imports: String = prompt.lines().filter(|l| l.starts_with("import ") || l.starts_with("from ")).map(|l| format!("{l}\n")).collect();
        format!("{imports}{code}")
    } else {
        format!("{prompt}{code}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_comes_out_of_the_fence_and_gets_the_prompt_when_needed() {
        let prompt = "from typing import List\n\ndef f(x):\n    \"\"\"doc\"\"\"\n";
        assert_eq!(program(prompt, "f", "Sure:\n```python\ndef f(x):\n    return x\n```\nDone."), "from typing import List\ndef f(x):\n    return x\n");
        assert!(program(prompt, "f", "    return x\n").starts_with("from typing import List\n\ndef f(x):"));
    }

    #[test]
    fn the_loop_stands_by_the_first_full_pass_else_the_most_examples() {
        let c = |code: &str, passed: Option<u32>| Candidate {
            code: code.into(),
            tokens: 1,
            visible: passed.map(|p| Visible { examples: 3, passed: p, defined: true }),
        };
        let s = SolveState { candidates: vec![c("a", Some(1)), c("b", Some(2)), c("a", None), c("d", Some(2))], ..SolveState::default() };
        assert_eq!(s.chosen().map(|c| c.code.as_str()), Some("b"));
        let s = SolveState { candidates: vec![c("a", Some(1)), c("b", Some(3)), c("c", Some(3))], ..SolveState::default() };
        assert_eq!(s.chosen().map(|c| c.code.as_str()), Some("b"));
    }
}
