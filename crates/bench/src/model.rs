//! `agentloop-bench model`: the embedded model's speeds on this machine.
//! The last line is one JSON object: `prompt_tps`, `gen_tps`,
//! `constrained_gen_tps`, `cold_prefill_ms`, `warm_prefill_ms`, the plain
//! greedy loop's `plain_loop_gen_tps` on the same file and threads, and
//! `together`: the tokens per second of 1 to N answers decoded in one batch
//! (medians).

use std::time::Duration;

use agentloop_core::{ChatRequest, Message, DEFAULT_ROLE};
use agentloop_llm::catalog::{KnownModel, DEFAULT_MODEL};
use agentloop_llm::roles::Drafting;
use agentloop_llm::{plain_greedy_loop, Generation, LlamaConfig, LlamaModel, ModelSpec};
use anyhow::Result;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;

use crate::harness::median;
use crate::BenchEnv;

/// `agentloop-bench model`.
#[derive(clap::Args, Debug)]
pub struct ModelArgs {
    /// CPU threads (default: all cores).
    #[arg(long)]
    pub threads: Option<u32>,
    /// Tokens to generate per measurement.
    #[arg(long, default_value_t = 128)]
    pub tokens: u32,
    /// Measurements of each kind; the report gives medians.
    #[arg(long, default_value_t = 3)]
    pub runs: u32,
    /// Answers decoded together at most: each count from 1 to this is measured.
    #[arg(long, default_value_t = 4)]
    pub together: u32,
    /// Also measure the model drafted ahead by this one (a known model's
    /// name or a GGUF path of the same tokenizer), or by its prompt
    /// (`prompt`): free and schema-held generation, an edit that quotes a
    /// file, the share of drafted tokens kept, and whether the answers came
    /// out as the model's alone.
    #[arg(long, value_name = "MODEL")]
    pub draft: Option<String>,
}

/// The temperature of answers decoded together, as a search's candidates are.
const CANDIDATE_TEMPERATURE: f32 = 0.8;

pub async fn run(config: &BenchEnv, args: ModelArgs) -> Result<()> {
    let name = match config.models.get(DEFAULT_ROLE) {
        Some(ModelSpec::Llama { model: Some(m), .. }) => m.clone(),
        _ => DEFAULT_MODEL.name.to_string(),
    };
    let path = KnownModel::resolve(&name, &config.data_dir);
    let bar = spinner();
    bar.set_message(format!("loading {}", path.display()));
    let mut llama = LlamaConfig::new(&path).context(4096);
    llama.threads = args.threads;
    let threads = args.threads.unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(2));
    let model = LlamaModel::load(llama)?;

    let shared = shared_context();
    let first = request(&shared, "Which of these functions could panic? Name them and say in one sentence each why, so that a reviewer can find the risky ones quickly and fix them before the release goes out.");
    let second = request(&shared, "Explain in detail what each of the functions above does, one paragraph per function, covering its inputs, its outputs, its edge cases and how it could be tested well.");
    // Generation speed depends on how much context precedes it; measure it,
    // free, constrained, together and by the plain loop, after one short prompt.
    let mut free = ChatRequest::new(vec![Message::user("Explain in detail how a hash map works, with examples.")]);
    free.max_tokens = Some(args.tokens);
    let mut constrained = free.clone();
    constrained.json_schema = Some(json!({
        "type": "object",
        "properties": {"concepts": {"type": "array", "minItems": 12, "items": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "explanation": {"type": "string"}, "example": {"type": "string"}},
            "required": ["name", "explanation", "example"], "additionalProperties": false}}},
        "required": ["concepts"], "additionalProperties": false
    }));

    // An answer that quotes its prompt, as an edit does: the file again,
    // one function changed.
    let mut quoting = request(&shared, "Write the whole file again with `parse_port` returning an Option instead of panicking; change nothing else.");
    quoting.max_tokens = Some(args.tokens);

    let mut candidate = free.clone();
    candidate.temperature = Some(CANDIDATE_TEMPERATURE);
    let together = args.together.max(1) as usize;

    let (mut cold, mut warm, mut free_gen, mut json_gen) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut plain, mut batched, mut quote_gen) = (Vec::new(), vec![Vec::new(); together], Vec::new());
    // The provider's free generation and the plain loop run back to back,
    // so that a shared machine's passing load falls on both alike.
    for r in 1..=args.runs.max(1) {
        bar.set_message(format!("run {r}/{}: free generation", args.runs));
        free_gen.push(model.generate_cold(&free).await?);
        bar.set_message(format!("run {r}/{}: the plain greedy loop", args.runs));
        let (file, messages, tokens) = (path.clone(), free.messages.clone(), args.tokens);
        plain.push(tokio::task::spawn_blocking(move || plain_greedy_loop(&file, &messages, tokens, threads)).await??);
        for n in 1..=together {
            bar.set_message(format!("run {r}/{}: {n} answers together", args.runs));
            batched[n - 1].push(aggregate_tps(&model.generate_many(&vec![candidate.clone(); n]).await)?);
        }
        bar.set_message(format!("run {r}/{}: cold prompt", args.runs));
        cold.push(model.generate_cold(&one_token(&second)).await?);
        bar.set_message(format!("run {r}/{}: shared-prefix prompt", args.runs));
        model.generate(&one_token(&first)).await?;
        warm.push(model.generate(&one_token(&second)).await?);
        bar.set_message(format!("run {r}/{}: JSON-constrained generation", args.runs));
        json_gen.push(model.generate_cold(&constrained).await?);
        if args.draft.is_some() {
            bar.set_message(format!("run {r}/{}: an answer quoting its prompt", args.runs));
            quote_gen.push(model.generate_cold(&quoting).await?);
        }
    }

    let gen_tps = median(free_gen.iter().map(Generation::gen_tps));
    let constrained_gen_tps = median(json_gen.iter().map(Generation::gen_tps));
    let cold_ms = median(cold.iter().map(|g| ms(g.prefill)));
    let warm_ms = median(warm.iter().map(|g| ms(g.prefill)));
    let plain_tps = median(plain.iter().map(|p| p.gen_tps));
    let alone = median(batched[0].iter().copied());
    let together: Vec<_> = batched
        .iter()
        .enumerate()
        .map(|(i, runs)| {
            let tps = median(runs.iter().copied());
            json!({"answers": i + 1, "gen_tps": round(tps), "vs_one": round(tps / alone.max(f64::MIN_POSITIVE))})
        })
        .collect();
    let mut report = json!({
        "model": path.file_name().map(|f| f.to_string_lossy().into_owned()),
        "threads": threads,
        "runs": args.runs,
        "prompt_tokens": cold.first().map(|g| g.prompt_tokens),
        "new_tokens_warm": warm.first().map(|g| g.prompt_tokens - g.reused_tokens),
        "generated_tokens": free_gen.first().map(|g| g.completion_tokens),
        "constrained_tokens": json_gen.first().map(|g| g.completion_tokens),
        "prompt_tps": round(median(cold.iter().map(Generation::prompt_tps))),
        "gen_tps": round(gen_tps),
        "constrained_gen_tps": round(constrained_gen_tps),
        "cold_prefill_ms": round(cold_ms),
        "warm_prefill_ms": round(warm_ms),
        "constrained_vs_gen": round(constrained_gen_tps / gen_tps.max(f64::MIN_POSITIVE)),
        "warm_vs_cold_prefill": round(warm_ms / cold_ms.max(f64::MIN_POSITIVE)),
        "plain_loop_gen_tps": round(plain_tps),
        "gen_vs_plain_loop": round(gen_tps / plain_tps.max(f64::MIN_POSITIVE)),
        "together": together,
    });
    if let Some(draft) = &args.draft {
        drop(model);
        bar.set_message(format!("loading {} drafted by {draft}", path.display()));
        let mut llama = LlamaConfig::new(&path).context(4096);
        llama.draft = Some(Drafting::named(draft, &config.data_dir));
        llama.threads = args.threads;
        let drafted = LlamaModel::load(llama)?;
        let (mut free_d, mut json_d, mut quote_d) = (Vec::new(), Vec::new(), Vec::new());
        for r in 1..=args.runs.max(1) {
            bar.set_message(format!("run {r}/{}: drafted generation", args.runs));
            free_d.push(drafted.generate_cold(&free).await?);
            json_d.push(drafted.generate_cold(&constrained).await?);
            quote_d.push(drafted.generate_cold(&quoting).await?);
        }
        let tps_of = |runs: &[Generation]| median(runs.iter().map(Generation::gen_tps));
        let (tps, json_tps, quote_tps) = (tps_of(&free_d), tps_of(&json_d), tps_of(&quote_d));
        let (proposed, kept) = free_d.iter().chain(&json_d).chain(&quote_d).fold((0, 0), |(p, k), g| (p + g.drafted_tokens, k + g.accepted_tokens));
        let same_as = |drafted: &[Generation], alone: &[Generation]| drafted.iter().all(|g| Some(&g.text) == alone.first().map(|f| &f.text));
        let same = same_as(&free_d, &free_gen) && same_as(&json_d, &json_gen) && same_as(&quote_d, &quote_gen);
        let quote_alone = tps_of(&quote_gen);
        report["drafted"] = json!({
            "draft": draft,
            "gen_tps": round(tps),
            "constrained_gen_tps": round(json_tps),
            "quoting_gen_tps": round(quote_tps),
            "quoting_alone_gen_tps": round(quote_alone),
            "vs_alone": round(tps / gen_tps.max(f64::MIN_POSITIVE)),
            "constrained_vs_alone": round(json_tps / constrained_gen_tps.max(f64::MIN_POSITIVE)),
            "quoting_vs_alone": round(quote_tps / quote_alone.max(f64::MIN_POSITIVE)),
            "acceptance": if proposed == 0 { 0.0 } else { round(kept as f64 / proposed as f64) },
            "same_answers": same,
        });
    }
    bar.finish_and_clear();
    println!("{report}");
    Ok(())
}

/// A prompt like a coding agent's: instructions and a source file, the
/// part a loop's turns share.
fn shared_context() -> String {
    let mut code = String::from("Here is the file src/util.rs of the project under review:\n\n```rust\n");
    for (i, (name, body)) in [
        ("parse_port", "s.trim().parse::<u16>().unwrap()"),
        ("average", "xs.iter().sum::<f64>() / xs.len() as f64"),
        ("first_word", "s.split_whitespace().next().unwrap_or(\"\")"),
        ("percent", "(part * 100) / total"),
        ("last_line", "s.lines().last().expect(\"empty input\")"),
        ("clamp_index", "i.min(len.saturating_sub(1))"),
        ("join_paths", "format!(\"{}/{}\", a.trim_end_matches('/'), b)"),
        ("nth_char", "s.chars().nth(n).unwrap()"),
        ("is_even", "n % 2 == 0"),
        ("double_all", "xs.iter().map(|x| x * 2).collect()"),
        ("header_value", "line.split_once(':').map(|(_, v)| v.trim())"),
        ("checked_ratio", "if b == 0 { None } else { Some(a / b) }"),
    ]
    .iter()
    .enumerate()
    {
        code.push_str(&format!(
            "/// Helper {i}: used by the request handlers and by the command-line tool.\npub fn {name}(/* arguments */) {{\n    {body}\n}}\n\n"
        ));
    }
    code.push_str("```\n");
    code
}

fn request(shared: &str, question: &str) -> ChatRequest {
    ChatRequest::new(vec![
        Message::system("You are a careful senior Rust reviewer. You read code closely and answer precisely."),
        Message::user(format!("{shared}\n{question}")),
    ])
}

fn one_token(r: &ChatRequest) -> ChatRequest {
    let mut r = r.clone();
    r.max_tokens = Some(1);
    r
}

fn spinner() -> ProgressBar {
    let bar = ProgressBar::new_spinner();
    bar.set_style(ProgressStyle::with_template("{spinner} {msg} {elapsed}").unwrap_or_else(|_| ProgressStyle::default_spinner()));
    bar.enable_steady_tick(Duration::from_millis(120));
    bar
}

/// All the answers' tokens over the time the batch took to generate them
/// (the longest answer's, since they are decoded side by side).
fn aggregate_tps(answers: &[agentloop_core::Result<Generation>]) -> Result<f64> {
    let mut tokens = 0;
    let mut longest = Duration::ZERO;
    for answer in answers {
        let g = answer.as_ref().map_err(|e| anyhow::anyhow!("{e}"))?;
        tokens += g.completion_tokens;
        longest = longest.max(g.generate);
    }
    Ok(if longest.is_zero() { 0.0 } else { tokens as f64 / longest.as_secs_f64() })
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn round(x: f64) -> f64 {
    crate::harness::round(x, 2)
}
