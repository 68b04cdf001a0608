//! TLS for the HTTP clients that take rustls's process-wide crypto
//! provider (reqwest 0.13's, under the MCP client and the trace exporter):
//! the ring provider, which the rest of the build already uses, installed
//! once. Without one such a client panics as it is built.

/// Installs the ring provider unless one is installed already.
pub fn ready() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
