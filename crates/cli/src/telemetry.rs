//! Traces out over OTLP/HTTP when `[telemetry] otlp_endpoint` names a
//! collector: the engine's spans (`agentloop_core::telemetry`) go through a
//! batch exporter, flushed when the command ends. Off by default.

use anyhow::{Context, Result};
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;

/// Flushes and stops the exporter when dropped.
pub struct Telemetry(Option<SdkTracerProvider>);

/// Installs the exporter when an endpoint is configured.
pub fn install(endpoint: Option<&str>) -> Result<Telemetry> {
    let Some(endpoint) = endpoint else { return Ok(Telemetry(None)) };
    agentloop_tools::tls::ready();
    let endpoint = endpoint.trim_end_matches('/');
    let url = if endpoint.ends_with("/v1/traces") { endpoint.to_string() } else { format!("{endpoint}/v1/traces") };
    // The exporter's blocking HTTP client must be made (and dropped) off
    // the async runtime.
    let provider = std::thread::spawn(move || -> Result<SdkTracerProvider> {
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpJson)
            .with_endpoint(&url)
            .build()
            .with_context(|| format!("[telemetry] otlp_endpoint: cannot export traces to {url}"))?;
        Ok(SdkTracerProvider::builder().with_batch_exporter(exporter).with_resource(Resource::builder().with_service_name("agentloop").build()).build())
    })
    .join()
    .map_err(|_| anyhow::anyhow!("setting up the trace exporter panicked"))??;
    opentelemetry::global::set_tracer_provider(provider.clone());
    agentloop_core::telemetry::enable();
    Ok(Telemetry(Some(provider)))
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        if let Some(provider) = self.0.take() {
            // Sends what is still batched; a collector that is down costs
            // the spans, never the command.
            let _ = std::thread::spawn(move || {
                if let Err(e) = provider.shutdown() {
                    eprintln!("warning: traces not all sent to the collector: {e}");
                }
            })
            .join();
        }
    }
}
