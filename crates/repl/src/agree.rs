//! AGREE: instead of a judge reading its own model's output, the turn's
//! program and up to `candidates - 1` more — sampled in a fresh
//! conversation, each run in a namespace of its own — vote with the value
//! they print. The value most of them print (at least two, and more than
//! any other) is the answer. When no value has that, the repl says so and
//! shows the alternatives rather than guess.

use agentloop_core::{Message, Result, Step};
use futures::future::BoxFuture;

use super::events::ReplEvent;
use super::judge;
use super::nodes::{run_check, write_checks};
use super::prompts;
use super::state::{ReplState, Vote};

/// The values printed, most votes first (ties in the order first printed).
pub fn tally(answers: &[String]) -> Vec<Vote> {
    let mut out: Vec<Vote> = Vec::new();
    for a in answers {
        match out.iter_mut().find(|v| judge::same_answer(&v.value, a)) {
            Some(v) => v.votes += 1,
            None => out.push(Vote { value: a.clone(), votes: 1 }),
        }
    }
    out.sort_by_key(|v| std::cmp::Reverse(v.votes));
    out
}

/// The value with at least two votes and more than any other.
pub fn majority(votes: &[Vote]) -> Option<&Vote> {
    let first = votes.first().filter(|v| v.votes >= 2)?;
    (votes.get(1).is_none_or(|second| second.votes < first.votes)).then_some(first)
}

pub fn agree<'a>(s: &'a mut ReplState, step: &'a mut Step) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        // A turn that failed, printed nothing or computed nothing is sent
        // back with what went wrong, as REFLECT does; it casts no vote.
        let main = match judge::plain_failure(s) {
            Some(v) => {
                step.emit(ReplEvent::Verdict { turn: s.turn_count, is_complete: false, reasoning: v.reasoning.clone(), next_action: v.next_action.clone() });
                if s.turn_count < s.config.max_turns {
                    s.messages.push(Message::user(prompts::continue_with(&v.reasoning, &v.next_action)));
                    s.verdicts.push(v);
                    return Ok(());
                }
                s.verdicts.push(v);
                None
            }
            None => s.execution_results.last().map(|r| judge::last_line(&r.0).to_string()),
        };
        let mut answers: Vec<String> = main.iter().cloned().collect();
        // The other programs are written together, then each is run.
        let others = usize::try_from(s.config.candidates.saturating_sub(1)).unwrap_or(0);
        for reply in write_checks(s, step, others).await? {
            if let Some((value, _code)) = run_check(s, step, main.as_deref().unwrap_or_default(), &reply).await? {
                answers.push(value);
            }
        }
        let votes = tally(&answers);
        let chosen = majority(&votes).map(|v| v.value.clone());
        step.emit(ReplEvent::Agreement { turn: s.turn_count, votes: votes.clone(), chosen: chosen.clone() });
        match chosen {
            Some(value) => {
                s.agreed = Some(value);
                step.signal(|sig| sig.agent_signalled_completion = true);
                step.finish("agreed");
            }
            // Only one program ran to an answer: it is given, unconfirmed.
            None if votes.len() == 1 => step.finish("unconfirmed"),
            None => step.finish("no_agreement"),
        }
        s.votes = votes;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn votes(answers: &[&str]) -> Vec<Vote> {
        tally(&answers.iter().map(|a| a.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn the_value_most_programs_print_wins_and_a_tie_or_a_lone_value_does_not() {
        let v = votes(&["42", "41", "42.0"]);
        assert_eq!(majority(&v).map(|v| (v.value.as_str(), v.votes)), Some(("42", 2)), "{v:?}");
        assert_eq!(majority(&votes(&["1", "2", "3"])), None, "all different");
        assert_eq!(majority(&votes(&["1", "1", "2", "2"])), None, "a tie");
        assert_eq!(majority(&votes(&["7"])), None, "one program is not an agreement");
    }
}
