//! Guest stdout/stderr: line-buffered into the host's `tracing` output,
//! prefixed with the plugin's name. Owns nothing else of WASI.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

/// Which stream a line came from.
#[derive(Clone, Copy, Debug)]
pub enum Channel {
    Stdout,
    Stderr,
}

/// A guest output stream that logs complete lines.
#[derive(Clone)]
pub struct GuestOutput {
    plugin: Arc<str>,
    channel: Channel,
    pending: Arc<Mutex<Vec<u8>>>,
}

impl GuestOutput {
    pub fn new(plugin: Arc<str>, channel: Channel) -> Self {
        GuestOutput {
            plugin,
            channel,
            pending: Arc::new(Mutex::new(Vec::new())),
        }
    }

    fn emit(&self, line: &[u8]) {
        let line = String::from_utf8_lossy(line);
        let line = line.trim_end_matches('\r');
        match self.channel {
            Channel::Stdout => tracing::info!(target: "wink::plugin", "[{}] {}", self.plugin, line),
            Channel::Stderr => tracing::warn!(target: "wink::plugin", "[{}] {}", self.plugin, line),
        }
    }

    fn write_bytes(&self, bytes: &[u8]) {
        let mut pending = self.pending.lock().unwrap();
        pending.extend_from_slice(bytes);
        while let Some(pos) = pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = pending.drain(..=pos).collect();
            self.emit(&line[..line.len() - 1]);
        }
        // Bound a guest that never writes a newline.
        if pending.len() > 64 * 1024 {
            let line = std::mem::take(&mut *pending);
            self.emit(&line);
        }
    }
}

impl IsTerminal for GuestOutput {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for GuestOutput {
    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }

    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for GuestOutput {
    async fn ready(&mut self) {}
}

impl OutputStream for GuestOutput {
    fn write(&mut self, bytes: bytes::Bytes) -> StreamResult<()> {
        self.write_bytes(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(1 << 20)
    }
}

impl tokio::io::AsyncWrite for GuestOutput {
    fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        self.write_bytes(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
