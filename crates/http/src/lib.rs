//! The monitor's HTTP endpoint, apart from what it serves: a small, bounded HTTP/1.1 server
//! (`server`) with TLS and basic authentication configured in the exporter-toolkit format
//! (`webconfig`). It knows nothing of latency; the monitor hands it a handler.

pub mod server;
pub mod webconfig;
