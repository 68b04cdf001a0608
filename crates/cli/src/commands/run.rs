//! `agentloop run AGENT …` and the conversation commands (`agentloop repl`),
//! for every agent in the registry: the flags come from the agent, the
//! session runs in the live view, and the summary comes from the agent.

use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;

use agentloop_agent::registry::{Agent, Launch, Registry, Summary};
use agentloop_core::{Outcome, SessionHandle, Store, TokenSink};
use anyhow::{Context, Result};
use clap::{Arg, ArgAction, ArgMatches, Command};

use crate::app::App;
use crate::{exit, live, render};

/// `run` with a subcommand per agent, and a top-level command for each
/// agent that answers questions one after another.
pub fn commands(registry: &Registry, cli: Command) -> Command {
    let mut run = Command::new("run").about("Run an agent on a task").subcommand_required(true).arg_required_else_help(true);
    for agent in registry.agents() {
        let json = Arg::new("json").long("json").action(ArgAction::SetTrue).help("Print the outcome and the summary as JSON instead of the live view");
        let detach = Arg::new("detach")
            .long("detach")
            .action(ArgAction::SetTrue)
            .help("Store the session and queue it for a worker (`agentloop worker`) instead of running it here; prints its id");
        run = run.subcommand(agent.flags(Command::new(agent.name())).about(agent.about()).arg(json).arg(detach));
    }
    let mut cli = cli.subcommand(run);
    for agent in registry.agents().filter(|a| a.converses()) {
        let about = format!("Ask the {} agent questions at a prompt: one session each, every question seeing the ones before.", agent.name());
        cli = cli.subcommand(agent.flags(Command::new(agent.name())).about(about));
    }
    cli
}

/// Prints the model's text as it arrives.
fn stream_to_terminal() -> TokenSink {
    TokenSink::new(|piece: &str| {
        eprint!("{piece}");
        let _ = std::io::stderr().flush();
    })
}

fn input(app: &App, agent: &dyn Agent, flags: &ArgMatches) -> Result<serde_json::Value> {
    Ok(agent.input(flags, app.config.agents.get(agent.name()), &app.config.data_dir)?)
}

pub async fn run(app: &App, name: &str, flags: &ArgMatches) -> Result<ExitCode> {
    let agent = app.registry.get(name)?;
    let json = flags.get_flag("json");
    let input = input(app, agent, flags)?;
    if !json {
        // A weakened sandbox is said before anything else.
        for line in app.config.sandbox.weakened() {
            eprintln!("warning: {line}");
        }
        for line in agent.intro(&input)? {
            eprintln!("{line}");
        }
    }
    let store = app.store()?;
    if flags.get_flag("detach") {
        let id = agent.create(&*store, &input, None)?;
        store.enqueue(&id)?;
        if json {
            println!("{}", serde_json::json!({"sessionId": id, "queued": true, "sandboxWeakened": app.config.sandbox.weakened()}));
        } else {
            println!("{id}");
            eprintln!("queued: a worker (`agentloop worker`) runs it; `agentloop sessions events {id} --follow` follows it");
        }
        return Ok(ExitCode::SUCCESS);
    }
    let env = app.env(agent, store.clone(), (!json).then(stream_to_terminal))?;
    let handle = agent.start(&env, &input, Launch { session_id: None, exit_when_paused: !live::interactive() })?;
    finish(app, &*store, handle, json).await
}

/// Runs the session in the terminal (or quietly with `json`), then prints
/// the outcome and the agent's summary.
pub async fn finish(app: &App, store: &dyn Store, handle: SessionHandle, json: bool) -> Result<ExitCode> {
    let outcome = live::drive(app.registry.clone(), handle, live::Drive { show_events: !json }).await?;
    report(app, store, &outcome, json)
}

/// Prints the outcome and the agent's summary; the exit code says how it ended.
pub fn report(app: &App, store: &dyn Store, outcome: &Outcome, json: bool) -> Result<ExitCode> {
    let summary = app.registry.summary(&store.load(&outcome.session_id)?);
    if json {
        let mut v = serde_json::to_value(outcome)?;
        v["sandboxWeakened"] = serde_json::to_value(app.config.sandbox.weakened())?;
        v["summary"] = serde_json::to_value(&summary)?;
        println!("{v}");
    } else {
        println!("{}", render::outcome(&app.registry, outcome));
        for line in summary.lines() {
            println!("{line}");
        }
    }
    Ok(exit::for_outcome(outcome))
}

async fn drive(app: &App, store: &dyn Store, handle: SessionHandle, json: bool) -> Result<(Outcome, Summary)> {
    let outcome = live::drive(app.registry.clone(), handle, live::Drive { show_events: !json }).await?;
    let summary = app.registry.summary(&store.load(&outcome.session_id)?);
    Ok((outcome, summary))
}

/// The prompt: one line, one question, one session; an empty line or
/// end of input ends it.
pub async fn converse(app: &App, name: &str, flags: &ArgMatches) -> Result<ExitCode> {
    let agent = app.registry.get(name)?;
    let input = input(app, agent, flags)?;
    let store = app.store()?;
    let env = app.env(agent, store.clone(), Some(stream_to_terminal()))?;
    let mut conversation =
        agent.conversation(&env, &input)?.with_context(|| format!("the {name} agent does not take questions at a prompt: use `agentloop run {name}`"))?;
    for line in agent.intro(&input)? {
        eprintln!("{line}");
    }
    eprintln!("agentloop {name} — an empty line or Ctrl-D ends it");
    let mut first = flags.try_get_one::<String>("prompt").ok().flatten().cloned();
    let mut last = ExitCode::SUCCESS;
    loop {
        let question = match first.take() {
            Some(q) => q,
            None => {
                if std::io::stdin().is_terminal() {
                    eprint!("\n? ");
                    let _ = std::io::stderr().flush();
                }
                let mut line = String::new();
                if std::io::stdin().lock().read_line(&mut line)? == 0 || line.trim().is_empty() {
                    break;
                }
                line.trim().to_string()
            }
        };
        let handle = conversation.ask(&env, &question, Launch { session_id: None, exit_when_paused: !live::interactive() })?;
        let (outcome, summary) = drive(app, &*store, handle, false).await?;
        println!("{}", summary.answer.clone().unwrap_or_else(|| summary.lines().join("\n")));
        conversation.answered(&question, &summary);
        last = exit::for_outcome(&outcome);
    }
    Ok(last)
}
