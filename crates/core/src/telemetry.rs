//! OpenTelemetry spans for sessions, following the GenAI semantic
//! conventions: `invoke_agent {agent}` for each run of a session, one span
//! per iteration under it, `chat {model}` for each model call and
//! `execute_tool {name}` for each tool call.
//!
//! Spans go to the global tracer provider, which the application installs
//! (the CLI does, with an OTLP exporter, when `[telemetry] otlp_endpoint`
//! is set) before calling [`enable`]; until then nothing here costs more
//! than one relaxed load. A session keeps the `traceparent` of its first
//! run, so a run that resumes it (on another worker, after a crash)
//! continues the same trace, with a link to that first run. Calls are
//! recorded as spans only where they really run: a step replayed from the
//! journal returns recorded answers and emits no span, so tokens are never
//! counted twice.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::SystemTime;

use chrono::{DateTime, Utc};
use opentelemetry::trace::{Link, Span, SpanContext, SpanKind, Status, TraceContextExt, TraceFlags, TraceId, TraceState, Tracer};
use opentelemetry::{global, Context, KeyValue};

use crate::event::{Event, ITERATION_COMPLETE, ITERATION_START};
use crate::model::ChatResponse;
use crate::Result;

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Sessions from now on emit spans to the global tracer provider.
pub fn enable() {
    ENABLED.store(true, Ordering::Relaxed);
}

fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// The spans of one run of a session.
pub(crate) struct RunTrace {
    tracer: global::BoxedTracer,
    run: Context,
    /// The open iteration's span, under the run's.
    iteration: Mutex<Option<Context>>,
}

impl RunTrace {
    /// Opens the run's span: in the trace `traceparent` names (a resumed
    /// session), linked to that first run, or in a new trace. Returns the
    /// traceparent to keep with the session. `None` when spans are off.
    pub(crate) fn start(agent: &str, session_id: &str, traceparent: Option<&str>) -> Option<(Self, String)> {
        if !enabled() {
            return None;
        }
        let earlier = traceparent.and_then(parse_traceparent);
        let parent = earlier.clone().map(|sc| Context::new().with_remote_span_context(sc)).unwrap_or_default();
        let tracer = global::tracer("agentloop");
        let mut builder = tracer.span_builder(format!("invoke_agent {agent}")).with_kind(SpanKind::Internal).with_attributes([
            KeyValue::new("gen_ai.operation.name", "invoke_agent"),
            KeyValue::new("gen_ai.agent.name", agent.to_string()),
            KeyValue::new("gen_ai.conversation.id", session_id.to_string()),
        ]);
        if let Some(sc) = earlier {
            builder = builder.with_links(vec![Link::with_context(sc)]);
        }
        let span = builder.start_with_context(&tracer, &parent);
        let kept = traceparent.map(str::to_string).unwrap_or_else(|| format_traceparent(span.span_context()));
        Some((Self { tracer, run: parent.with_span(span), iteration: Mutex::new(None) }, kept))
    }

    /// Opens and closes iteration spans as the run commits its events.
    pub(crate) fn on_event(&self, event: &Event) {
        let Ok(mut open) = self.iteration.lock() else { return };
        match event.name.as_str() {
            ITERATION_START => {
                if let Some(cx) = open.take() {
                    cx.span().end();
                }
                let n = event.payload.get("iteration").and_then(|v| v.as_u64()).unwrap_or(0);
                let span = self.tracer.span_builder(format!("iteration {n}")).with_kind(SpanKind::Internal).start_with_context(&self.tracer, &self.run);
                *open = Some(self.run.with_span(span));
            }
            ITERATION_COMPLETE => {
                if let Some(cx) = open.take() {
                    cx.span().end();
                }
            }
            _ => {}
        }
    }

    /// The span a call belongs under: the open iteration's, else the run's.
    fn parent(&self) -> Context {
        self.iteration.lock().ok().and_then(|o| o.clone()).unwrap_or_else(|| self.run.clone())
    }

    /// A model call that really ran, from `started_at` until now.
    pub(crate) fn chat(&self, provider: &str, requested: &str, started_at: DateTime<Utc>, result: &Result<ChatResponse>) {
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", "chat"),
            KeyValue::new("gen_ai.provider.name", provider.to_string()),
            KeyValue::new("gen_ai.request.model", requested.to_string()),
        ];
        if let Ok(r) = result {
            let answered = if r.model.is_empty() { requested } else { r.model.as_str() };
            attributes.push(KeyValue::new("gen_ai.response.model", answered.to_string()));
            attributes.push(KeyValue::new("gen_ai.usage.input_tokens", i64::try_from(r.usage.prompt_tokens).unwrap_or(i64::MAX)));
            attributes.push(KeyValue::new("gen_ai.usage.output_tokens", i64::try_from(r.usage.completion_tokens).unwrap_or(i64::MAX)));
            let reason = serde_json::to_value(r.finish_reason).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default();
            attributes
                .push(KeyValue::new("gen_ai.response.finish_reasons", opentelemetry::Value::Array(vec![opentelemetry::StringValue::from(reason)].into())));
        }
        self.call(format!("chat {requested}"), SpanKind::Client, attributes, started_at, result.as_ref().err().map(ToString::to_string));
    }

    /// A tool call that really ran, from `started_at` until now.
    pub(crate) fn tool(&self, name: &str, started_at: DateTime<Utc>, failed: Option<String>) {
        let attributes = vec![KeyValue::new("gen_ai.operation.name", "execute_tool"), KeyValue::new("gen_ai.tool.name", name.to_string())];
        self.call(format!("execute_tool {name}"), SpanKind::Internal, attributes, started_at, failed);
    }

    fn call(&self, name: String, kind: SpanKind, attributes: Vec<KeyValue>, started_at: DateTime<Utc>, failed: Option<String>) {
        let mut span = self
            .tracer
            .span_builder(name)
            .with_kind(kind)
            .with_start_time(SystemTime::from(started_at))
            .with_attributes(attributes)
            .start_with_context(&self.tracer, &self.parent());
        if let Some(why) = failed {
            span.set_status(Status::error(why));
        }
        span.end();
    }

    /// Closes the open iteration and the run, with how the run ended.
    pub(crate) fn end(&self, failed: Option<String>) {
        if let Some(cx) = self.iteration.lock().ok().and_then(|mut o| o.take()) {
            cx.span().end();
        }
        let span = self.run.span();
        if let Some(why) = failed {
            span.set_status(Status::error(why));
        }
        span.end();
    }
}

/// `00-{trace id}-{span id}-{flags}` (W3C Trace Context).
fn format_traceparent(sc: &SpanContext) -> String {
    format!("00-{}-{}-{:02x}", sc.trace_id(), sc.span_id(), sc.trace_flags().to_u8())
}

fn parse_traceparent(text: &str) -> Option<SpanContext> {
    let mut parts = text.split('-');
    let (_version, trace, span, flags) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let trace = TraceId::from_hex(trace).ok()?;
    let span = opentelemetry::trace::SpanId::from_hex(span).ok()?;
    let flags = u8::from_str_radix(flags, 16).ok()?;
    let sc = SpanContext::new(trace, span, TraceFlags::new(flags), true, TraceState::default());
    sc.is_valid().then_some(sc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_traceparent_reads_back_and_nonsense_is_none() {
        let tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        assert_eq!(format_traceparent(&parse_traceparent(tp).unwrap()), tp);
        assert!(parse_traceparent("00-zz-yy-01").is_none());
        assert!(parse_traceparent("00-00000000000000000000000000000000-b7ad6b7169203331-01").is_none());
    }
}
