//! Candidates spread over the places the tests point at. When a real
//! project is shown as ranked regions, a small model asked for several
//! changes at once tends to write them all to the same region, often not
//! the first-ranked one. As Agentless samples repairs per localized place,
//! some candidates are each held to one region — its lines alone in the
//! answer's grammar, and told so in one line at the end of the prompt (so
//! the shared prompt stays one cached prefix) — while one stays free to
//! change any region shown, for a fix that needs more than one place.

use agentloop_codemap::Region;
use agentloop_core::ChatRequest;

use super::change;
use super::context;
use super::state::EditFormat;

/// The region candidate `n` (counted from 0 in the search) is held to:
/// the first-ranked for the first, none for the second (free), the
/// second-ranked for the third, then round again. `None` when the files
/// were shown whole or as a single region.
pub fn region_of(n: usize, shown: Option<&[Region]>) -> Option<&Region> {
    let shown = shown.filter(|s| s.len() > 1)?;
    match n % 3 {
        0 => shown.first(),
        1 => None,
        _ => shown.get(1),
    }
}

/// Tokens a held answer may take beyond twice its region: the path, the
/// fences and markers, a line or two of prose.
const ANSWER_SLACK_TOKENS: usize = 200;

/// `request` held to `region`: its grammar offers only the region's lines
/// to change (and no new file), its last message says which region that
/// is, and its answer may be about twice the region long (its lines to
/// find and their replacement) — so a model that loses its place in a
/// replacement, which the grammar cannot tell from code, stops there
/// rather than at the model's whole answer budget.
pub fn hold(request: &mut ChatRequest, region: &Region, files: &[(String, String)], format: EditFormat) {
    let editable = context::editable(files, Some(std::slice::from_ref(region)));
    let writable: Vec<(&str, &str)> = editable.iter().map(|(p, c)| (p.as_str(), c.as_str())).collect();
    request.grammar = Some(change::grammar(&writable, format, change::NewFiles::Never));
    let region_tokens: usize = editable.iter().map(|(_, c)| context::estimate(c)).sum();
    let answer = u32::try_from(2 * region_tokens + ANSWER_SLACK_TOKENS).unwrap_or(u32::MAX);
    request.max_tokens = Some(request.max_tokens.map_or(answer, |m| m.min(answer)));
    if let Some(last) = request.messages.last_mut() {
        last.content.push_str(&format!("\n\nThis answer changes `{}` ({} lines {}-{}) and nothing else.", region.name, region.path, region.start, region.end));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentloop_core::Message;

    fn region(path: &str, start: usize, end: usize, name: &str) -> Region {
        Region { path: path.into(), start, end, name: name.into() }
    }

    #[test]
    fn candidates_take_the_first_region_then_any_then_the_second() {
        let shown = [region("a.py", 1, 2, "f"), region("b.py", 3, 4, "g"), region("c.py", 1, 9, "h")];
        let held: Vec<Option<&str>> = (0..4).map(|n| region_of(n, Some(&shown)).map(|r| r.name.as_str())).collect();
        assert_eq!(held, [Some("f"), None, Some("g"), Some("f")]);
        assert_eq!(region_of(0, None), None, "files shown whole hold no candidate");
        assert_eq!(region_of(0, Some(&shown[..1])), None, "one region shown: nothing to spread over");
    }

    #[test]
    fn a_held_candidate_may_find_only_its_regions_lines_and_is_told_which() {
        let files = vec![("a.py".to_string(), "def f():\n    return 1\n\ndef g():\n    return 2\n".to_string())];
        let mut request = ChatRequest::new(vec![Message::user("Fix it.")]);
        hold(&mut request, &region("a.py", 4, 5, "g"), &files, EditFormat::Hunks);
        let grammar = request.grammar.unwrap_or_default();
        assert!(grammar.contains(r#""    return 2\n""#) && !grammar.contains(r#""    return 1\n""#), "{grammar}");
        assert!(request.messages[0].content.ends_with("This answer changes `g` (a.py lines 4-5) and nothing else."));
        let answer = request.max_tokens.unwrap_or(u32::MAX) as usize;
        assert!((ANSWER_SLACK_TOKENS..ANSWER_SLACK_TOKENS + 20).contains(&answer), "about twice the region's tokens and the slack: {answer}");
    }
}
