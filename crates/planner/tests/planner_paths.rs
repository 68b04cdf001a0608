//! The planner's graph driven through each of its paths by scripted models,
//! in a real root folder with real tools and a real shell.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentloop_agent::Wiring;
use agentloop_core::{ChatModel, ChatRequest, ChatResponse, Models, Outcome, SessionStatus, StartOptions, Store};
use agentloop_llm::{FallbackChain, ScriptedModel};
use agentloop_planner::{self as planner, ApproveMode, PlannerSettings, PlannerState, Rule, FAST_ROLE, PLANNER_ROLE, VERIFY_ROLE};
use agentloop_store::SqliteStore;
use agentloop_tools::mcp_client::McpServerConfig;
use agentloop_tools::{Sandbox, Workspace};
use serde_json::{json, Value};

/// What the scripted models answer, per phase, in order.
#[derive(Default)]
struct Script {
    phases: BTreeMap<&'static str, VecDeque<String>>,
    /// The user's goal; "make some files" unless set.
    goal: Option<&'static str>,
    /// The home folder whose secrets the sandbox keeps out (none unless set).
    home: Option<std::path::PathBuf>,
    /// MCP servers whose tools CALL_TOOL may name (none unless set).
    mcp: BTreeMap<String, McpServerConfig>,
}

impl Script {
    fn goal(mut self, goal: &'static str) -> Self {
        self.goal = Some(goal);
        self
    }

    /// The test MCP server (`mcp-fixture`, built beside the test binaries) as `fx`.
    fn with_fixture_server(mut self) -> Self {
        let deps = std::env::current_exe().unwrap();
        let fixture = deps.parent().and_then(|d| d.parent()).unwrap().join("mcp-fixture");
        assert!(fixture.exists(), "{} is missing: build the test binaries with `cargo test --workspace`", fixture.display());
        self.mcp.insert("fx".into(), McpServerConfig { command: Some(fixture.display().to_string()), ..McpServerConfig::default() });
        self
    }

    fn with(mut self, phase: &'static str, answer: impl Into<String>) -> Self {
        self.phases.entry(phase).or_default().push_back(answer.into());
        self
    }
}

fn phase_of(req: &ChatRequest) -> &'static str {
    let system = &req.messages[0].content;
    let prompt = &req.messages.last().unwrap().content;
    if prompt.contains("Restate the goal") {
        "restate"
    } else if system.contains("You turn a goal into a checklist") {
        "checklist"
    } else if system.contains("You check finished work") {
        "verify"
    } else if system.contains("fix broken JSON") {
        "repair"
    } else if prompt.contains("was rejected for these reasons") {
        "diagnose"
    } else {
        "plan"
    }
}

fn restatement() -> String {
    json!({"who": "the user", "what": "files", "when": "now", "where": "the root", "why": "to test"}).to_string()
}

/// A checklist of (the goal's words, requirement) items.
fn checklist(items: &[(&str, &str)]) -> String {
    let items: Vec<Value> = items.iter().map(|(from, r)| json!({"from_goal": from, "requirement": r, "check": ""})).collect();
    json!({ "requirements": items }).to_string()
}

fn met() -> String {
    json!({"evidence": "it is there", "done": true}).to_string()
}

fn not_met() -> String {
    json!({"evidence": "", "done": false}).to_string()
}

/// The verifier's answer to either of its questions.
fn judge(req: &ChatRequest) -> String {
    let asks_checklist = req.json_schema.as_ref().is_some_and(|s| s["properties"].get("requirements").is_some());
    if asks_checklist {
        checklist(&[])
    } else {
        met()
    }
}

fn diagnosis() -> String {
    json!({"diagnosis": "the plan broke a rule", "hints": ["keep paths inside the root"]}).to_string()
}

/// A plan answer in the contract, wrapped in `<json>` tags.
fn plan(actions: &[&str]) -> String {
    let steps: Vec<Value> = actions.iter().enumerate().map(|(i, a)| json!({"step": i + 1, "action": a, "expects": "it worked"})).collect();
    format!("<json>{}</json>", json!({"goal": "g", "thinking_summary": "t", "reflection": "", "ready": true, "plan": steps}))
}

struct Run {
    out: Outcome,
    store: Arc<dyn Store>,
    root: tempfile::TempDir,
    asked: Arc<Mutex<Vec<&'static str>>>,
    prompts: Arc<Mutex<Vec<String>>>,
    /// The action pattern each plan request held the model to.
    patterns: Arc<Mutex<Vec<String>>>,
    script: Arc<Mutex<Script>>,
}

impl Run {
    fn state(&self) -> PlannerState {
        serde_json::from_value(self.store.load(&self.out.session_id).unwrap().state).unwrap()
    }

    fn file(&self, path: &str) -> Option<String> {
        std::fs::read_to_string(self.root.path().join(path)).ok()
    }

    fn entries(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.root.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        names
    }

    /// Answers the pending question and runs on until the next one or the end.
    async fn answer(&mut self, reply: Value) {
        let pending = self.out.pending.clone().expect("a pending question");
        self.store.answer(&self.out.session_id, &pending.id, &reply).unwrap();
        let workspace = Workspace::new(self.root.path()).unwrap();
        let sandbox = Sandbox::new(workspace.root(), &Default::default(), None, None).unwrap();
        let mcp = self.script.lock().unwrap().mcp.clone();
        let runner =
            planner::runner(&Wiring { mcp_servers: mcp, ..Wiring::new(self.models(), self.store.clone()) }, &workspace, &sandbox, Duration::from_secs(30))
                .unwrap();
        self.out = runner.resume(&self.out.session_id, true).unwrap().wait().await.unwrap();
    }
}

/// The pattern a plan request's schema sets for each action.
fn action_pattern(req: &ChatRequest) -> String {
    let schema = req.json_schema.as_ref().expect("a plan request carries its schema");
    let step = schema["properties"]["plan"]["items"]["$ref"].as_str().unwrap().trim_start_matches('#');
    schema.pointer(&format!("{step}/properties/action/pattern")).and_then(Value::as_str).unwrap().to_string()
}

/// What a judge is shown, less the requirement: the view it judges.
fn view_of(req: &ChatRequest) -> String {
    let prompt = &req.messages.last().unwrap().content;
    prompt.split("\nREQUIREMENT:").next().unwrap_or_default().to_string()
}

/// Tells the judge's view of the root before the plan from its views of
/// outcomes: the first view a judge is shown is the root as it was, and so
/// is every later one that shows the same.
#[derive(Default)]
struct RootBefore(Mutex<Option<String>>);

impl RootBefore {
    fn shows(&self, req: &ChatRequest) -> bool {
        let view = view_of(req);
        self.0.lock().unwrap().get_or_insert_with(|| view.clone()) == &view
    }
}

fn scripted(
    script: Arc<Mutex<Script>>,
    asked: Arc<Mutex<Vec<&'static str>>>,
    prompts: Arc<Mutex<Vec<String>>>,
    patterns: Arc<Mutex<Vec<String>>>,
) -> ScriptedModel {
    // The first view a judge is shown is the root as it was, and so is
    // every later one that shows the same: those are judged "before" (by
    // default not done, as the root before the plan is not the goal).
    let root_before = RootBefore::default();
    ScriptedModel::with(move |req| {
        let mut phase = phase_of(req);
        if phase == "verify" && root_before.shows(req) {
            phase = "before";
        }
        asked.lock().unwrap().push(phase);
        if phase == "plan" {
            patterns.lock().unwrap().push(action_pattern(req));
            // The last three turns: a retry shows the rejected plan as the
            // model's turn before the rejection reasons.
            let tail: Vec<&str> = req.messages.iter().rev().take(3).rev().map(|m| m.content.as_str()).collect();
            prompts.lock().unwrap().push(tail.join("\n---\n"));
        }
        let answer = script.lock().unwrap().phases.get_mut(phase).and_then(|q| q.pop_front());
        Ok(ChatResponse::text(answer.unwrap_or_else(|| match phase {
            "restate" => restatement(),
            "diagnose" => diagnosis(),
            "checklist" => checklist(&[]),
            "verify" => met(),
            "before" => not_met(),
            other => panic!("no scripted answer for {other}"),
        })))
    })
}

impl Run {
    /// The default model for a (re)started runner: answers from the script
    /// this run shares across restarts.
    fn models(&self) -> Models {
        Models::new(Arc::new(scripted(self.script.clone(), self.asked.clone(), self.prompts.clone(), self.patterns.clone())))
    }
}

async fn run_with(script: Script, approve: ApproveMode, config: PlannerSettings, models_for: impl FnOnce(Models) -> Models) -> Run {
    run_in(tempfile::tempdir().unwrap(), script, approve, config, models_for).await
}

async fn run_in(root: tempfile::TempDir, script: Script, approve: ApproveMode, config: PlannerSettings, models_for: impl FnOnce(Models) -> Models) -> Run {
    let workspace = Workspace::new(root.path()).unwrap();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::in_memory().unwrap());
    let goal = script.goal.unwrap_or("make some files");
    let sandbox = Sandbox::new(workspace.root(), &Default::default(), script.home.as_deref(), None).unwrap();
    let mcp = script.mcp.clone();
    let (asked, prompts, patterns, script) = (Arc::default(), Arc::default(), Arc::default(), Arc::new(Mutex::new(script)));
    let models = Models::new(Arc::new(scripted(Arc::clone(&script), Arc::clone(&asked), Arc::clone(&prompts), Arc::clone(&patterns))));
    let runner =
        planner::runner(&Wiring { mcp_servers: mcp, ..Wiring::new(models_for(models), store.clone()) }, &workspace, &sandbox, Duration::from_secs(30)).unwrap();
    let state = PlannerState::new(workspace.root().display().to_string(), goal, approve, config.clone());
    let mut options = StartOptions::new(planner::termination(&config));
    options.exit_when_paused = true;
    let out = runner.start(state, options).unwrap().wait().await.unwrap();
    Run { out, store, root, asked, prompts, patterns, script }
}

async fn run(script: Script, approve: ApproveMode) -> Run {
    run_with(script, approve, PlannerSettings::default(), |m| m).await
}

#[tokio::test]
async fn a_valid_plan_runs_every_step_with_all() {
    let r = run(
        Script::default().with(
            "plan",
            plan(&[
                "CREATE_DIR notes",
                "WRITE_FILE notes/a.txt first\\nsecond",
                "REPEAT 3 WRITE_FILE notes/day_{index:02d}.txt day {index}",
                "LIST_DIR notes AS files",
                "FOR_EACH files RUN_COMMAND wc -c {item}",
            ]),
        ),
        ApproveMode::All,
    )
    .await;
    assert_eq!(r.out.status, SessionStatus::Completed, "{:?}", r.out);
    assert_eq!(r.out.finish_reason.as_deref(), Some("goal_verified"));
    assert_eq!(r.file("notes/a.txt").unwrap(), "first\nsecond");
    assert_eq!(r.file("notes/day_02.txt").unwrap(), "day 2");
    let s = r.state();
    assert_eq!(s.runs.len(), 5);
    assert!(s.runs.iter().all(|run| run.ok), "{:?}", s.runs);
    assert!(s.runs[4].output.starts_with("4 items"), "{}", s.runs[4].output);
    assert_eq!(*r.asked.lock().unwrap(), vec!["restate", "plan", "checklist", "before", "verify", "verify"], "each item judged twice");
}

#[tokio::test]
async fn a_rejected_plan_runs_nothing_and_its_reasons_and_hints_reach_the_next_prompt() {
    let r = run(
        Script::default()
            .with("plan", plan(&["CREATE_DIR ok", "WRITE_FILE ../escape.txt hello"]))
            .with("plan", plan(&["CREATE_DIR ok", "WRITE_FILE inside.txt hello"])),
        ApproveMode::All,
    )
    .await;
    assert_eq!(r.out.status, SessionStatus::Completed, "{:?}", r.out);
    assert!(!r.root.path().parent().unwrap().join("escape.txt").exists());
    let s = r.state();
    assert_eq!(s.proposals.len(), 2);
    assert!(!s.proposals[0].valid());
    assert!(s.runs.iter().all(|run| run.proposal == 1), "nothing ran from the rejected plan: {:?}", s.runs);
    let second = &r.prompts.lock().unwrap()[1];
    assert!(second.contains("RECENT REJECTIONS") && second.contains("outside the workspace"), "{second}");
    assert!(second.contains("RETRY_HINTS") && second.contains("keep paths inside the root"), "{second}");
    assert!(second.contains("That plan was REJECTED") && second.contains("../escape.txt"), "{second}");
    assert_eq!(*r.asked.lock().unwrap(), vec!["restate", "plan", "diagnose", "plan", "checklist", "before", "verify", "verify"]);
}

#[tokio::test]
async fn a_slip_the_rules_name_exactly_is_mended_without_asking_again() {
    let r = run(Script::default().with("plan", plan(&["REPEAT 3 WRITE_FILE notes.txt hello"])), ApproveMode::All).await;
    assert_eq!(r.out.status, SessionStatus::Completed, "{:?}", r.out);
    assert_eq!(r.file("notes.txt").unwrap(), "hello");
    let s = r.state();
    assert_eq!(s.proposals.len(), 1);
    let p = &s.proposals[0];
    assert!(p.valid() && p.plan.as_ref().unwrap().actions() == ["WRITE_FILE notes.txt hello"], "{p:?}");
    assert!(p.mends[0].contains("runs once") && p.mended_from[0].rule == planner::Rule::LoopPath, "{p:?}");
    assert_eq!(s.runs.len(), 1, "the write ran once: {:?}", s.runs);
    assert!(planner::confidence(&s) < 0.9);
    let events = r.store.events(&r.out.session_id, 0, usize::MAX).unwrap();
    let shown = &events.iter().find(|e| e.name == "planner:plan").unwrap().payload;
    assert!(
        shown["valid"] == true && shown["mends"][0].as_str().unwrap().contains("REPEAT 3") && shown["mendedFrom"][0].as_str().unwrap().contains("loop-path"),
        "{shown}"
    );
    assert_eq!(*r.asked.lock().unwrap(), vec!["restate", "plan", "checklist", "before", "verify", "verify"], "no diagnosis and no second plan");
}

#[tokio::test]
async fn broken_json_gets_a_repair_pass_before_it_counts_as_a_rejection() {
    let r = run(Script::default().with("plan", "Sure! Here is my plan: CREATE_DIR a").with("repair", plan(&["CREATE_DIR a"])), ApproveMode::All).await;
    assert_eq!(r.out.status, SessionStatus::Completed, "{:?}", r.out);
    assert!(r.root.path().join("a").is_dir());
    let s = r.state();
    assert_eq!(s.proposals.len(), 1);
    assert!(s.proposals[0].repaired && s.proposals[0].valid());
    assert_eq!(*r.asked.lock().unwrap(), vec!["restate", "plan", "repair", "checklist", "before", "verify", "verify"]);
}

#[tokio::test]
async fn the_planner_chain_moves_to_the_next_model_after_n_rejects() {
    let bad = Arc::new(ScriptedModel::with(|_| Ok(ChatResponse::text(plan(&["DELETE_FILE everything"])))).named("strong"));
    let good = Arc::new(ScriptedModel::with(|_| Ok(ChatResponse::text(plan(&["CREATE_DIR made_by_fallback"])))).named("fallback"));
    let chain: Arc<dyn ChatModel> = Arc::new(FallbackChain::new("planner-chain", vec![bad.clone() as Arc<dyn ChatModel>, good.clone()], 2).unwrap());
    let r = run_with(Script::default(), ApproveMode::All, PlannerSettings::default(), |m| m.with_role(PLANNER_ROLE, chain)).await;
    assert_eq!(r.out.status, SessionStatus::Completed, "{:?}", r.out);
    assert_eq!((bad.calls(), good.calls()), (2, 1), "two rejects on the strong model, then the fallback");
    assert!(r.root.path().join("made_by_fallback").is_dir());
    let s = r.state();
    assert_eq!(s.proposals.iter().filter(|p| !p.valid()).count(), 2);
    assert!(s.proposals[0].rejections[0].reason.contains("not an allowed action"));
    let events = r.store.events(&r.out.session_id, 0, usize::MAX).unwrap();
    let switched = events.iter().find(|e| e.name == "agent:model:switched").expect("the escalation is an event");
    assert_eq!(switched.payload, json!({"role": "planner", "from": "strong", "to": "fallback"}));
    assert_eq!((r.out.progress.served["strong"], r.out.progress.served["fallback"]), (2, 1), "{:?}", r.out.progress.served);
}

#[tokio::test]
async fn declining_the_plan_with_a_reason_replans_with_that_feedback() {
    let mut r = run(Script::default().with("plan", plan(&["CREATE_DIR misc"])).with("plan", plan(&["CREATE_DIR docs"])), ApproveMode::Ask).await;
    assert_eq!(r.out.status, SessionStatus::Paused);
    let question = r.out.pending.clone().unwrap().request;
    assert_eq!(question["kind"], "planner_plan");
    assert_eq!(question["steps"][0]["action"], "CREATE_DIR misc");
    assert_eq!(question["confidence"], 0.9);
    assert!(question["restatement"].as_str().unwrap().contains("WHO: the user"));
    r.answer(json!("call the folder docs instead")).await;
    assert_eq!(r.out.status, SessionStatus::Paused, "the new plan is shown again");
    r.answer(json!("all")).await;
    assert_eq!(r.out.status, SessionStatus::Completed, "{:?}", r.out);
    assert_eq!(r.entries(), vec!["docs"]);
    let second = r.prompts.lock().unwrap()[1].clone();
    assert!(second.contains("USER FEEDBACK") && second.contains("call the folder docs instead"), "{second}");
    let events = r.store.events(&r.out.session_id, 0, usize::MAX).unwrap();
    let diff = events.iter().rev().find(|e| e.name == "planner:plan").unwrap().payload["diff"].clone();
    assert_eq!(diff, json!(["- CREATE_DIR misc", "+ CREATE_DIR docs"]));
}

#[tokio::test]
async fn a_step_failing_in_the_copy_feeds_the_replan_and_the_approval_shows_the_observed_outcome() {
    let mut r = run(
        Script::default()
            .with("plan", plan(&["CREATE_DIR out", "RUN_COMMAND ls missing_folder", "CREATE_DIR never"]))
            .with("plan", plan(&["CREATE_DIR out", "WRITE_FILE out/ok.txt recovered"])),
        ApproveMode::Ask,
    )
    .await;
    assert!(r.entries().is_empty(), "a failed trial leaves the root untouched: {:?}", r.entries());
    let q = r.out.pending.clone().unwrap().request;
    assert_eq!(q["kind"], "planner_plan");
    assert_eq!(q["steps"][1]["action"], "WRITE_FILE out/ok.txt recovered", "only the plan that ran through is offered");
    let changes = &q["outcome"]["changes"];
    assert_eq!(changes[0]["line"], "+ out/");
    assert_eq!((changes[1]["line"].as_str(), changes[1]["after"].as_str()), (Some("+ out/ok.txt"), Some("recovered")));
    let shown = planner::question_text(&q).unwrap();
    assert!(shown.contains("observed in a copy of the root") && shown.contains("+ out/ok.txt") && shown.contains("recovered"), "{shown}");
    r.answer(json!("yes")).await;
    assert_eq!(r.out.status, SessionStatus::Completed, "{:?}", r.out);
    assert_eq!(r.out.finish_reason.as_deref(), Some("goal_verified"));
    assert_eq!(r.file("out/ok.txt").unwrap(), "recovered");
    assert!(!r.root.path().join("never").exists());
    let second = r.prompts.lock().unwrap()[1].clone();
    assert!(second.contains("THE LAST STEP FAILED") && second.contains("missing_folder"), "{second}");
    let s = r.state();
    assert_eq!(s.runs.iter().map(|run| run.ok).collect::<Vec<_>>(), vec![true, false, true, true]);
    let events = r.store.events(&r.out.session_id, 0, usize::MAX).unwrap();
    let applied = events.iter().find(|e| e.name == "planner:applied").expect("applying is an event");
    assert_eq!(applied.payload["ok"], true, "{}", applied.payload);
}

#[tokio::test]
async fn a_truncating_redirect_never_reaches_the_root_and_a_failed_session_leaves_it_as_it_was() {
    let root = tempfile::tempdir().unwrap();
    let original = "the OLD cat\nan OLD dog\n";
    std::fs::write(root.path().join("notes.txt"), original).unwrap();
    let script = Script::default()
        .goal("replace OLD with NEW in notes.txt")
        .with("plan", plan(&["RUN_COMMAND sed 's/OLD/NEW/g' notes.txt > notes.txt"]))
        .with("verify", not_met())
        .with("verify", not_met())
        .with("plan", plan(&["RUN_COMMAND sed 's/OLD/NEW/g' notes.txt > notes.txt; echo done"]))
        .with("verify", not_met())
        .with("verify", not_met());
    let r = run_in(root, script, ApproveMode::All, PlannerSettings { max_iterations: 2, ..PlannerSettings::default() }, |m| m).await;
    assert_eq!(r.out.status, SessionStatus::Completed, "{:?}", r.out);
    assert_eq!(r.out.finish_reason.as_deref(), Some("unverified"));
    assert_eq!(r.file("notes.txt").unwrap(), original, "the root holds exactly what it held");
    let trial = r.state().trial.unwrap();
    assert_eq!(trial.change_lines(), ["~ notes.txt"], "the copy was emptied, and that was seen");
}

#[tokio::test]
async fn cancel_leaves_nothing_written() {
    let mut r = run(Script::default().with("plan", plan(&["CREATE_DIR a", "WRITE_FILE a/b.txt hello"])), ApproveMode::Ask).await;
    r.answer(json!("cancel")).await;
    assert_eq!(r.out.status, SessionStatus::Completed, "{:?}", r.out);
    assert_eq!(r.out.finish_reason.as_deref(), Some("cancelled"));
    assert!(r.entries().is_empty(), "the plan ran in a copy only");
    assert_eq!(r.state().runs.len(), 2);
}

#[tokio::test]
async fn paths_out_of_the_root_are_rejected_before_anything_runs() {
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("x.txt");
    let script = Script::default()
        .with("plan", plan(&["CREATE_DIR first", "WRITE_FILE ../x.txt a"]))
        .with("plan", plan(&["CREATE_DIR first", &format!("WRITE_FILE {} a", target.display())]))
        .with("plan", plan(&["CREATE_DIR first", "WRITE_FILE link/x.txt a"]))
        .with("plan", plan(&["CREATE_DIR done"]));
    let root = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), root.path().join("link")).unwrap();
    let r = run_in(root, script, ApproveMode::All, PlannerSettings::default(), |m| m).await;
    assert_eq!(r.out.status, SessionStatus::Completed, "{:?}", r.out);
    assert!(!target.exists());
    let s = r.state();
    assert_eq!(s.proposals.len(), 4);
    for p in &s.proposals[..3] {
        assert!(p.rejections.iter().any(|r| r.rule == planner::Rule::Path), "{:?}", p.rejections);
    }
    assert!(!r.root.path().join("first").exists(), "no step of a rejected plan ran");
    assert!(r.root.path().join("done").is_dir());
}

#[tokio::test]
async fn the_fast_and_verifier_roles_can_be_different_models() {
    let fast = Arc::new(ScriptedModel::with(|_| Ok(ChatResponse::text(restatement()))).named("fast"));
    let root_before = RootBefore::default();
    let judge = Arc::new(
        ScriptedModel::with(move |req| {
            let asks_checklist = req.json_schema.as_ref().is_some_and(|s| s["properties"].get("requirements").is_some());
            Ok(ChatResponse::text(if !asks_checklist && root_before.shows(req) { not_met() } else { judge(req) }))
        })
        .named("judge"),
    );
    let r = run_with(Script::default().with("plan", plan(&["CREATE_DIR a"])), ApproveMode::All, PlannerSettings::default(), |m| {
        m.with_role(FAST_ROLE, fast.clone()).with_role(VERIFY_ROLE, judge.clone())
    })
    .await;
    assert_eq!(r.out.status, SessionStatus::Completed);
    assert_eq!(fast.calls(), 1, "the restatement came from the fast model");
    assert_eq!(judge.calls(), 4, "the checklist and its one item's verdicts (before, and twice after) came from the verifier");
    assert_eq!(r.state().proposals[0].actions, vec![planner::Action::CreateDir { path: "a".into() }], "the valid plan is kept as typed actions");
    assert_eq!(*r.asked.lock().unwrap(), vec!["plan"]);
}

#[tokio::test]
async fn what_validation_saw_of_the_root_and_the_commands_is_journaled() {
    let r = run(
        Script::default().with("plan", plan(&["RUN_COMMAND no-such-tool-here --now"])).with("plan", plan(&["CREATE_DIR ok", "RUN_COMMAND ls ok"])),
        ApproveMode::All,
    )
    .await;
    assert_eq!(r.out.status, SessionStatus::Completed, "{:?}", r.out);
    let s = r.state();
    assert!(s.proposals[0].rejections.iter().any(|x| x.rule == planner::Rule::Shell && x.reason.contains("no-such-tool-here")), "{:?}", s.proposals[0]);
    let calls = r.store.calls(&r.out.session_id).unwrap();
    let checked: Vec<&Value> = calls.iter().filter(|c| c.name == "check_command").filter_map(|c| c.output.as_ref()).collect();
    assert!(checked.iter().any(|o| o["problem"].as_str().is_some_and(|p| p.contains("no-such-tool-here"))), "{checked:?}");
    assert!(calls.iter().any(|c| c.name == "observe_root"));
    assert_eq!(s.observed.commands.get("ls ok"), Some(&None), "the last plan's command as checked");
}

#[tokio::test]
async fn a_goal_whose_outcome_checks_out_ends_verified_with_its_checks() {
    let goal = "Create a folder plans and inside it a file week.md with the text 'monday first'.";
    let r = run(Script::default().goal(goal).with("plan", plan(&["CREATE_DIR plans", "WRITE_FILE plans/week.md Monday   first"])), ApproveMode::All).await;
    assert_eq!((r.out.status, r.out.finish_reason.as_deref()), (SessionStatus::Completed, Some("goal_verified")), "{:?}", r.out);
    assert!(r.out.message.as_deref().unwrap().contains("goal_verified"), "{:?}", r.out.message);
    let s = r.state();
    let v = s.verifications.last().unwrap();
    assert!(v.met && v.checks.len() == 3 && v.checks.iter().all(|c| c.held), "{v:?}");
    assert!(s.outcome.files.iter().any(|f| f.path == "plans/week.md"), "the new file was read: {:?}", s.outcome.files);
    let calls = r.store.calls(&r.out.session_id).unwrap();
    assert!(calls.iter().any(|c| c.name == "read_file" && c.input["path"] == "plans/week.md"), "observed through the journaled tools");
}

#[tokio::test]
async fn a_failed_check_sends_the_planner_back_with_what_is_missing() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("old.txt"), "stale").unwrap();
    let script = Script::default().goal("Delete old.txt.").with("plan", plan(&["RUN_COMMAND cat old.txt"])).with("plan", plan(&["RUN_COMMAND rm old.txt"]));
    let r = run_in(root, script, ApproveMode::All, PlannerSettings::default(), |m| m).await;
    assert_eq!(r.out.finish_reason.as_deref(), Some("goal_verified"), "{:?}", r.out);
    assert!(!r.root.path().join("old.txt").exists());
    let s = r.state();
    assert_eq!(s.verifications.len(), 2);
    assert!(!s.verifications[0].met && s.verifications[0].judged.is_empty(), "a failed check needs no verdict: {:?}", s.verifications[0]);
    let second = r.prompts.lock().unwrap()[1].clone();
    assert!(second.contains("THE GOAL IS NOT MET") && second.contains("old.txt is gone (it is still there)"), "{second}");
    assert_eq!(*r.asked.lock().unwrap(), vec!["restate", "plan", "checklist", "plan", "before", "verify", "verify"]);
    let events = r.store.events(&r.out.session_id, 0, usize::MAX).unwrap();
    assert!(events.iter().any(|e| e.name == "planner:reflection"));
}

#[tokio::test]
async fn an_unmet_goal_ends_unverified_when_the_plans_run_out_and_never_says_complete() {
    let script = Script::default()
        .with("plan", plan(&["CREATE_DIR a"]))
        .with("checklist", checklist(&[("make some files", "a file b.txt")]))
        .with("verify", not_met())
        .with("verify", not_met())
        .with("plan", plan(&["CREATE_DIR c"]))
        .with("verify", not_met())
        .with("verify", not_met());
    let r = run_with(script, ApproveMode::All, PlannerSettings { max_iterations: 2, ..PlannerSettings::default() }, |m| m).await;
    assert_eq!((r.out.status, r.out.finish_reason.as_deref()), (SessionStatus::Completed, Some("unverified")), "{:?}", r.out);
    assert!(!agentloop_core::metrics::reached_goal(r.out.status, r.out.finish_reason.as_deref()));
    let s = r.state();
    assert_eq!(s.verifications.len(), 2);
    assert!(s.verifications.iter().all(|v| !v.met));
    assert!(r.prompts.lock().unwrap()[1].contains("- a file b.txt"), "the verdict's gap reached the next plan");
    let events = r.store.events(&r.out.session_id, 0, usize::MAX).unwrap();
    let verdicts: Vec<&Value> = events.iter().filter(|e| e.name == "planner:verified").map(|e| &e.payload).collect();
    assert!(verdicts.iter().all(|v| v["met"] == false && v["summary"].as_str().unwrap().starts_with("not verified")), "{verdicts:?}");
}

#[tokio::test]
async fn a_plan_that_already_ran_without_meeting_the_goal_is_refused_when_offered_again() {
    let script = Script::default()
        .goal("Write the word ready into status.txt.")
        .with("plan", plan(&["WRITE_FILE status.txt starting"]))
        .with("checklist", checklist(&[("the word ready into status.txt", "status.txt holds the word ready")]))
        .with("verify", json!({"evidence": "status.txt holds starting", "done": false}).to_string())
        .with("plan", plan(&["WRITE_FILE status.txt starting"]))
        .with("plan", plan(&["WRITE_FILE status.txt ready"]))
        .with("verify", json!({"evidence": "status.txt holds ready", "done": true}).to_string());
    let r = run_with(script, ApproveMode::All, PlannerSettings::default(), |m| m).await;
    assert_eq!(r.out.finish_reason.as_deref(), Some("goal_verified"), "{:?}", r.out);
    let s = r.state();
    assert!(s.proposals[1].rejections.iter().any(|r| r.rule == Rule::AlreadyRan), "{:?}", s.proposals[1]);
    assert_eq!(s.runs.iter().filter(|r| r.action == "WRITE_FILE status.txt starting").count(), 1, "the same steps ran once");
}

#[tokio::test]
async fn a_requirement_judged_not_done_sends_the_planner_back_with_what_was_seen_and_the_checklist_is_written_once() {
    let script = Script::default()
        .goal("Write the word ready into status.txt.")
        .with("plan", plan(&["WRITE_FILE status.txt starting"]))
        .with("checklist", checklist(&[("the word ready into status.txt", "status.txt holds the word ready")]))
        .with("verify", json!({"evidence": "status.txt holds starting", "done": false}).to_string())
        .with("plan", plan(&["WRITE_FILE status.txt ready"]))
        .with("verify", json!({"evidence": "status.txt holds ready", "done": true}).to_string());
    let r = run_with(script, ApproveMode::All, PlannerSettings::default(), |m| m).await;
    assert_eq!(r.out.finish_reason.as_deref(), Some("goal_verified"), "{:?}", r.out);
    let s = r.state();
    assert_eq!(s.checklist.iter().map(|i| i.requirement.as_str()).collect::<Vec<_>>(), vec!["status.txt holds the word ready"]);
    assert!(!s.verifications[0].met && s.verifications[1].met, "{:?}", s.verifications);
    let second = r.prompts.lock().unwrap()[1].clone();
    assert!(second.contains("status.txt holds the word ready (status.txt holds starting)"), "{second}");
    assert_eq!(
        *r.asked.lock().unwrap(),
        vec!["restate", "plan", "checklist", "before", "verify", "verify", "plan", "before", "verify", "verify"],
        "one checklist for the session"
    );
    let events = r.store.events(&r.out.session_id, 0, usize::MAX).unwrap();
    let lines: Vec<&Value> = events.iter().filter(|e| e.name == "planner:verified").map(|e| &e.payload["checks"]).collect();
    assert!(lines[1].to_string().contains("✓ status.txt holds the word ready ("), "{lines:?}");
}

#[tokio::test]
async fn without_anyone_asked_an_items_failed_command_outranks_the_judges_and_no_command_changes_the_root() {
    let items = json!({"requirements": [
        {"from_goal": "the word ready into status.txt", "requirement": "status.txt holds the word ready", "check": "grep -qx ready status.txt"},
        {"from_goal": "Write the word ready", "requirement": "status.txt is kept", "check": "rm -f status.txt; true"},
    ]});
    let script = Script::default()
        .goal("Write the word ready into status.txt.")
        .with("plan", plan(&["WRITE_FILE status.txt starting"]))
        .with("checklist", items.to_string())
        .with("verify", met())
        .with("plan", plan(&["WRITE_FILE status.txt ready"]))
        .with("verify", met())
        .with("verify", met());
    let r = run_with(script, ApproveMode::All, PlannerSettings::default(), |m| m).await;
    assert_eq!(r.out.finish_reason.as_deref(), Some("goal_verified"), "{:?}", r.out);
    let s = r.state();
    let first = &s.verifications[0];
    assert!(!first.met, "the judge said done, the command said no: {first:?}");
    assert!(first.judged[0].evidence.contains("`grep -qx ready status.txt` failed"), "{first:?}");
    assert!(first.judged[0].disputed && first.disputed(), "both judgments disagreed with the command, which still stands: {first:?}");
    assert_eq!(first.judged[1].check.as_ref().map(|c| c.held), Some(None), "a command that tried to change the root is set aside");
    assert!(s.verifications[1].met, "{:?}", s.verifications[1]);
    assert_eq!(r.file("status.txt").unwrap(), "ready", "a check cannot change the root");
    let judged_before_and_twice_after = ["before", "verify", "verify", "before", "verify", "verify"];
    let asked = [&["restate", "plan", "checklist"][..], &judged_before_and_twice_after, &["plan"], &judged_before_and_twice_after].concat();
    assert_eq!(*r.asked.lock().unwrap(), asked, "a failed command stands whatever the judgments say");
    let calls = r.store.calls(&r.out.session_id).unwrap();
    assert_eq!(calls.iter().filter(|c| c.name == "try_plan").count(), 2, "each trial, with its checks, journaled");
    assert_eq!(s.trial.as_ref().unwrap().checks.len(), 2, "each item's command ran on the trial");
}

#[tokio::test]
async fn without_assists_the_prompt_lists_no_names_and_the_outcome_is_still_checked() {
    let goal = "Create a file hello.txt containing the text Hello, world!";
    let script = Script::default().goal(goal).with("plan", plan(&["CREATE_DIR stuff"])).with("plan", plan(&["WRITE_FILE hello.txt Hello, world!"]));
    let r = run_with(script, ApproveMode::All, PlannerSettings { assist: false, ..PlannerSettings::default() }, |m| m).await;
    assert_eq!(r.out.finish_reason.as_deref(), Some("goal_verified"), "{:?}", r.out);
    let s = r.state();
    assert!(s.proposals.iter().all(|p| p.valid()), "no goal-reading refusal: {:?}", s.proposals);
    assert!(!s.verifications[0].met && s.verifications[0].checks.iter().any(|c| c.expected == "file hello.txt exists" && !c.held));
    let first = r.prompts.lock().unwrap()[0].clone();
    assert!(!first.contains("NAMES THE GOAL GIVES"), "{first}");
    assert_eq!(r.file("hello.txt").unwrap(), "Hello, world!");
}

#[tokio::test]
async fn a_hidden_file_the_goal_names_is_observed_and_checked() {
    let goal = "Create a file .env with the line 'PORT=8080'.";
    let r = run(Script::default().goal(goal).with("plan", plan(&["WRITE_FILE .env PORT=8080"])), ApproveMode::All).await;
    assert_eq!(r.out.finish_reason.as_deref(), Some("goal_verified"), "{:?} {:?}", r.out, r.state().verifications);
    let v = r.state().verifications.last().cloned().unwrap();
    assert!(v.checks.iter().any(|c| c.expected == "file .env exists" && c.held), "{v:?}");
    assert!(v.checks.iter().any(|c| c.expected.starts_with(".env holds") && c.held), "{v:?}");
}

#[tokio::test]
async fn a_plan_whose_script_tries_to_escape_is_confined_and_the_refusals_are_recorded() {
    let outer = tempfile::tempdir().unwrap();
    let (outside, home) = (outer.path().join("outside.txt"), outer.path().join("home"));
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), "PRIVATE").unwrap();
    let attempt =
        |name: &str, code: &str| format!("WRITE_FILE {name}.py import socket, traceback\\ntry:\\n    {code}\\nexcept OSError:\\n    traceback.print_exc()");
    let write = attempt("write", &format!("open({:?}, 'w').write('escaped')", outside.display().to_string()));
    let read = attempt("read", &format!("print(open({:?}).read())", home.join(".ssh/id_ed25519").display().to_string()));
    let connect = attempt("connect", "socket.create_connection(('127.0.0.1', 9), timeout=2)");
    let plan = plan(&[&write, &read, &connect, "RUN_COMMAND python3 write.py", "RUN_COMMAND python3 read.py", "RUN_COMMAND python3 connect.py"]);
    let script = Script { home: Some(home.clone()), ..Script::default() }.with("plan", plan);
    let r = run(script, ApproveMode::All).await;
    assert!(!outside.exists(), "the plan wrote outside the root");
    let s = r.state();
    let outputs: Vec<&str> = s.runs.iter().map(|run| run.output.as_str()).collect();
    assert_eq!(outputs.len(), 6, "{outputs:?}");
    assert!(outputs[3].starts_with(&format!("the sandbox refused a write to {}", outside.display())), "{}", outputs[3]);
    assert!(outputs[4].starts_with("the sandbox refused access to") && !outputs[4].contains("PRIVATE"), "{}", outputs[4]);
    assert!(outputs[5].starts_with("the sandbox refused a network connection"), "{}", outputs[5]);
}

#[tokio::test]
async fn a_path_the_plan_gives_inside_the_root_by_its_absolute_name_is_the_same_path_in_the_copy() {
    let root = tempfile::tempdir().unwrap();
    let absolute = root.path().canonicalize().unwrap().join("abs.txt").display().to_string();
    let write = format!("WRITE_FILE {absolute} hi");
    let command = format!("RUN_COMMAND cat {absolute}");
    let script = Script::default().with("plan", plan(&[write.as_str(), command.as_str()]));
    let mut r = run_in(root, script, ApproveMode::Ask, PlannerSettings::default(), |m| m).await;
    let q = r.out.pending.clone().expect("the outcome is offered").request;
    assert_eq!(q["outcome"]["changes"][0]["line"], "+ abs.txt", "{q}");
    let printed = q["outcome"]["outputs"][0].as_str().unwrap_or_default().to_string();
    assert!(printed.contains("hi") && !printed.contains("agentloop-scratch"), "the copy's own path is not shown: {printed}");
    assert!(r.file("abs.txt").is_none(), "nothing in the root before approval");
    r.answer(json!("yes")).await;
    assert_eq!(r.file("abs.txt").unwrap(), "hi");
}

#[tokio::test]
async fn an_approved_outcome_is_refused_whole_when_the_root_changed_since_its_trial() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("notes.txt"), "v1").unwrap();
    let script = Script::default().with("plan", plan(&["WRITE_FILE notes.txt v2", "WRITE_FILE more.txt more"])).with("plan", plan(&["WRITE_FILE other.txt x"]));
    let mut r = run_in(root, script, ApproveMode::Ask, PlannerSettings::default(), |m| m).await;
    assert!(r.out.pending.is_some(), "{:?}", r.out);
    std::fs::write(r.root.path().join("notes.txt"), "edited by hand").unwrap();
    r.answer(json!("yes")).await;
    assert_eq!(r.file("notes.txt").unwrap(), "edited by hand", "the user's edit stands");
    assert!(r.file("more.txt").is_none(), "nothing of the patch was applied");
    let events = r.store.events(&r.out.session_id, 0, usize::MAX).unwrap();
    let refused = events.iter().find(|e| e.name == "planner:applied").expect("applying is an event");
    assert_eq!(refused.payload["ok"], false);
    assert!(refused.payload["problems"][0].as_str().unwrap().contains("`notes.txt` changed since the plan was tried"), "{}", refused.payload);
    let second = r.prompts.lock().unwrap()[1].clone();
    assert!(second.contains("changed since the plan was tried"), "the next plan is told why: {second}");
    assert_eq!(
        r.out.pending.as_ref().map(|p| p.request["steps"][0]["action"].clone()),
        Some(json!("WRITE_FILE other.txt x")),
        "planned again from the root as it is"
    );
    r.answer(json!("cancel")).await;
    assert_eq!(r.out.finish_reason.as_deref(), Some("cancelled"));
    assert!(r.file("other.txt").is_none());
}

#[tokio::test]
async fn a_plan_calls_an_mcp_tool_after_approval_with_arguments_its_schema_accepts() {
    let script = Script::default()
        .with_fixture_server()
        .with("plan", plan(&["CREATE_DIR alpha", "CALL_TOOL fx count {\"file\": 3}"]))
        .with("plan", plan(&["CREATE_DIR alpha", "CALL_TOOL fx count {\"file\": \"calls.txt\"}"]));
    let mut r = run(script, ApproveMode::Ask).await;
    let s = r.state();
    // The first plan named the tool with arguments its schema refuses.
    assert!(s.proposals[0].rejections.iter().any(|j| j.rule == Rule::ToolCall && j.reason.contains("do not fit its schema")), "{:?}", s.proposals[0]);
    // The plan was held to calls of the tools offered.
    let pattern = r.patterns.lock().unwrap()[0].clone();
    assert!(pattern.starts_with("^(CALL_TOOL (fx count|fx crash|fx echo|"), "{pattern}");
    // The second ran in a copy without the call, and waits for approval.
    assert!(r.out.pending.is_some(), "{:?}", r.out);
    assert_eq!(r.file("calls.txt"), None, "the call was made before approval");
    r.answer(json!("yes")).await;
    assert_eq!(r.out.status, SessionStatus::Completed, "{:?}", r.out);
    assert!(r.root.path().join("alpha").is_dir());
    assert_eq!(r.file("calls.txt").as_deref(), Some("called\n"), "the call is made once, after approval");
    assert_eq!(r.state().tool_results, ["1"]);
}

/// A checklist whose items carry commands (and kinds).
fn checklist_with(items: &[(&str, &str, &str, &str)]) -> String {
    let items: Vec<Value> = items.iter().map(|(from, r, kind, check)| json!({"from_goal": from, "requirement": r, "kind": kind, "check": check})).collect();
    json!({ "requirements": items }).to_string()
}

/// `sed` without `-i` prints the replaced text and changes nothing; the one
/// derived check is the wrong way round (the old word must still be
/// there), so the untouched file passes it. Before and after say the same:
/// no evidence, and a plan that changed nothing is never a success.
#[tokio::test]
async fn a_plan_that_prints_instead_of_writing_with_an_inverted_check_never_completes() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("words.txt"), "the cat sat\nthe cat ran\n").unwrap();
    let script = Script::default()
        .goal("Replace the word cat with dog in words.txt.")
        .with(
            "checklist",
            checklist_with(&[(
                "Replace the word cat with dog in words.txt",
                "words.txt must contain the text 'cat' at least once",
                "target",
                "grep -q cat words.txt",
            )]),
        )
        .with("plan", plan(&["RUN_COMMAND sed 's/cat/dog/g' words.txt"]));
    let r = run_in(root, script, ApproveMode::All, PlannerSettings { max_iterations: 1, ..PlannerSettings::default() }, |m| m).await;
    assert_eq!(r.out.finish_reason.as_deref(), Some("unverified"), "{:?}", r.out);
    assert_eq!(r.file("words.txt").unwrap(), "the cat sat\nthe cat ran\n");
    let v = &r.state().verifications[0];
    assert!(!v.met && !v.changed, "{v:?}");
    assert!(v.lines().iter().any(|l| l.contains("`grep -q cat words.txt`: before ✓ → after ✓")), "{:?}", v.lines());
}

/// The one derived check was already true before anything ran (the input
/// file has a line); the plan wrote an empty file elsewhere. A check that
/// passes before says nothing, and the judges of the outcome decide.
#[tokio::test]
async fn a_check_already_true_before_the_plan_is_no_evidence() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("input.txt"), "one\ntwo\nthree\n").unwrap();
    let script = Script::default()
        .goal("Write the number of lines of input.txt into results/count.txt.")
        .with("checklist", checklist_with(&[("the number of lines of input.txt", "input.txt exists and has a line", "target", "test -s input.txt")]))
        .with("plan", plan(&["WRITE_FILE results/count.txt lines"]))
        .with("verify", not_met())
        .with("verify", not_met());
    let r = run_in(root, script, ApproveMode::All, PlannerSettings { max_iterations: 1, ..PlannerSettings::default() }, |m| m).await;
    assert_ne!(r.out.finish_reason.as_deref(), Some("goal_verified"), "{:?}", r.out);
    assert!(!agentloop_core::metrics::reached_goal(r.out.status, r.out.finish_reason.as_deref()), "{:?}", r.out);
    let s = r.state();
    let v = s.verifications.first().unwrap_or_else(|| panic!("no verification: {:?}", s.proposals));
    assert!(!v.met, "{v:?}");
    assert!(!r.root.path().join("results").exists(), "an unverified outcome never reaches the root");
}

/// The file the goal asks for was never made. Its derived checks fail: one
/// with "No such file", one that cannot run (a broken pattern). Both
/// judgments say done. A disputed check may stop refusing, but a failing
/// fact is never overruled into a success.
#[tokio::test]
async fn a_failing_check_marked_disputed_never_turns_a_miss_into_a_success() {
    let script = Script::default()
        .goal("Create a config file settings.ini with a [server] section.")
        .with(
            "checklist",
            checklist_with(&[
                ("a config file settings.ini", "settings.ini exists", "target", "ls settings.ini"),
                ("with a [server] section", "settings.ini has a [server] section", "target", "grep -q '\\[server\\' settings.ini"),
            ]),
        )
        .with("plan", plan(&["CREATE_DIR conf"]));
    let r = run_with(script, ApproveMode::All, PlannerSettings { max_iterations: 1, ..PlannerSettings::default() }, |m| m).await;
    assert_eq!(r.out.finish_reason.as_deref(), Some("unverified"), "{:?}", r.out);
    let v = &r.state().verifications[0];
    assert!(!v.met, "{v:?}");
    assert!(!r.root.path().join("conf").exists());
}
