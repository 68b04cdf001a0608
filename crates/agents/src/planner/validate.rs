//! Every check a plan must pass before any of it runs, each with its own
//! rejection reason; a plan with one rejection runs nothing. The plan is
//! parsed once into typed actions, which `rules` (well-formedness any user
//! wants, whatever the goal) and — behind the assist switch — `assist`
//! (checks against the goal's words) then judge.

use super::plan::parse;
use super::plan::Plan;
use super::rejection::{Context, Rejection};
use super::{assist, rules};

/// All the rejections of a plan; empty when it may run.
pub fn validate(plan: &Plan, cx: &Context<'_>) -> Vec<Rejection> {
    let actions = parse(plan);
    let mut out = rules::check(plan, &actions, cx);
    if cx.assist {
        out.extend(assist::check(plan, &actions, cx));
    }
    out
}
