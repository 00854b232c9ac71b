//! Bounded listening sockets for wink's HTTP surfaces (the admin server,
//! the cache view): whatever clients do, a surface costs at most
//! [`ListenOptions::max_connections`] file descriptors (plus
//! [`ListenOptions::probe_reserve`] kept for health probes), no connection
//! outlives [`ListenOptions::idle_timeout`] without traffic, and a request's
//! head and body must arrive within their deadlines however slowly a client
//! dribbles them ([`serve`]). None of these surfaces authenticates, so a
//! non-loopback address is refused unless the operator allows it
//! explicitly. A bind failure is the caller's error to return, never a
//! background log line.
//!
//! Owns the socket, its connections' lifetimes and the HTTP/1.1 server on
//! them; knows nothing of the surfaces' routes.

mod peers;
mod serve;

use peers::{PeerSlot, Peers};

pub use serve::serve;

use axum::serve::Listener;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};

/// Bounds of a listening socket.
#[derive(Debug, Clone)]
pub struct ListenOptions {
    /// Open connections at most; one more is accepted and closed at once
    /// (so the kernel's backlog does not fill and hide the refusal).
    pub max_connections: usize,
    /// A connection with no bytes read or written for this long is closed.
    pub idle_timeout: Duration,
    /// A request's head (request line and headers) must arrive within this
    /// long, counted from when the server waits for it (a new connection,
    /// or a kept-alive one after its last answer).
    pub header_timeout: Duration,
    /// A request's body must arrive within this long of its head.
    pub body_timeout: Duration,
    /// Connections kept beyond the cap for health probes: one accepted
    /// while the cap is reached answers only the probe routes the surface
    /// names (e.g. `/healthz`, `/readyz`), one request each.
    pub probe_reserve: usize,
    /// Allow an address other than loopback (the surfaces have no
    /// authentication).
    pub allow_non_loopback: bool,
    /// Open connections from one peer address at most (none: only the
    /// overall cap); one more from it is accepted and closed at once, so
    /// one client cannot take every place.
    pub max_per_peer: Option<usize>,
}

impl Default for ListenOptions {
    fn default() -> Self {
        ListenOptions {
            max_connections: 256,
            idle_timeout: Duration::from_secs(10),
            header_timeout: Duration::from_secs(5),
            body_timeout: Duration::from_secs(10),
            probe_reserve: 8,
            allow_non_loopback: false,
            max_per_peer: None,
        }
    }
}

/// Bind `addr` for the surface `what` (e.g. "the cache view"), bounded by
/// `options`. Refuses a non-loopback address unless allowed.
pub async fn bind(addr: SocketAddr, what: &str, options: &ListenOptions) -> anyhow::Result<BoundedListener> {
    if !addr.ip().is_loopback() && !options.allow_non_loopback {
        anyhow::bail!(
            "{what} has no authentication: refusing to listen on {addr}, which is not a loopback address \
             (use 127.0.0.1 or [::1], or pass --allow-non-loopback to expose it anyway)"
        );
    }
    let inner = TcpListener::bind(addr)
        .await
        .map_err(|e| anyhow::anyhow!("{what} cannot listen on {addr}: {e}"))?;
    if !addr.ip().is_loopback() {
        tracing::warn!(%addr, "{what} listens on a non-loopback address with no authentication");
    }
    Ok(BoundedListener {
        inner,
        permits: Arc::new(Semaphore::new(options.max_connections)),
        reserve: Arc::new(Semaphore::new(options.probe_reserve)),
        peers: Arc::default(),
        options: options.clone(),
        refused: 0,
    })
}

/// A listener that holds at most its cap of connections open, and its
/// reserve for probes.
pub struct BoundedListener {
    inner: TcpListener,
    permits: Arc<Semaphore>,
    reserve: Arc<Semaphore>,
    peers: Peers,
    options: ListenOptions,
    refused: u64,
}

/// Where an accepted connection holds its place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    /// Under the cap: every route.
    Main,
    /// In the reserve for probes: the probe routes only.
    Reserve,
}

impl BoundedListener {
    /// Count a refused connection; said at the 1st, 2nd, 4th, 8th, ...
    fn refuse(&mut self, addr: SocketAddr, why: &str) {
        self.refused += 1;
        if self.refused.is_power_of_two() {
            tracing::warn!(peer = %addr, refused = self.refused, "connection refused: {why}");
        }
    }

    /// The address the listener is bound to.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }

    /// The next connection and its place; past the cap (and past the
    /// reserve, or without one when `reserve` is false) a connection is
    /// accepted and closed at once.
    pub(crate) async fn next(&mut self, reserve: bool) -> (Bounded<TcpStream>, SocketAddr, Place) {
        let idle = self.options.idle_timeout;
        loop {
            // TcpListener's own accept logs and backs off on errors (EMFILE).
            let (stream, addr) = Listener::accept(&mut self.inner).await;
            // An answer goes out as soon as it is written, as Go's servers
            // (the API server's among them) do: with Nagle's algorithm, a
            // response written in two parts waits for the client's delayed
            // ACK (up to 40 ms) before its second part leaves.
            let _ = stream.set_nodelay(true);
            let slot = match self.options.max_per_peer {
                Some(max) => match PeerSlot::take(&self.peers, addr.ip(), max) {
                    Some(slot) => Some(slot),
                    None => {
                        self.refuse(addr, "the peer's connection cap is reached");
                        continue;
                    }
                },
                None => None,
            };
            if let Ok(permit) = self.permits.clone().try_acquire_owned() {
                return (Bounded::new(stream, permit, slot, idle), addr, Place::Main);
            }
            let spare = reserve.then(|| self.reserve.clone().try_acquire_owned().ok());
            if let Some(permit) = spare.flatten() {
                return (Bounded::new(stream, permit, slot, idle), addr, Place::Reserve);
            }
            self.refuse(addr, "the connection cap is reached");
            drop(stream);
        }
    }
}

/// A connection that holds one place under the cap (and its peer's) until
/// it is dropped, and fails with `TimedOut` after its idle timeout without
/// traffic.
pub struct Bounded<S> {
    inner: S,
    _permit: OwnedSemaphorePermit,
    _peer: Option<PeerSlot>,
    idle: Duration,
    deadline: Pin<Box<Sleep>>,
}

impl<S> Bounded<S> {
    fn new(inner: S, permit: OwnedSemaphorePermit, peer: Option<PeerSlot>, idle: Duration) -> Self {
        Bounded {
            inner,
            _permit: permit,
            _peer: peer,
            idle,
            deadline: Box::pin(tokio::time::sleep(idle)),
        }
    }

    /// After progress: the idle clock starts again.
    fn progressed(&mut self) {
        let at = Instant::now() + self.idle;
        self.deadline.as_mut().reset(at);
    }

    /// While waiting: an error once the connection has idled too long.
    fn idled(&mut self, cx: &mut Context<'_>) -> Poll<io::Error> {
        self.deadline
            .as_mut()
            .poll(cx)
            .map(|()| io::Error::new(io::ErrorKind::TimedOut, "idle connection closed"))
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Bounded<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match Pin::new(&mut self.inner).poll_read(cx, buf) {
            Poll::Ready(r) => {
                self.progressed();
                Poll::Ready(r)
            }
            Poll::Pending => self.idled(cx).map(Err),
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Bounded<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match Pin::new(&mut self.inner).poll_write(cx, buf) {
            Poll::Ready(r) => {
                self.progressed();
                Poll::Ready(r)
            }
            Poll::Pending => self.idled(cx).map(Err),
        }
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match Pin::new(&mut self.inner).poll_write_vectored(cx, bufs) {
            Poll::Ready(r) => {
                self.progressed();
                Poll::Ready(r)
            }
            Poll::Pending => self.idled(cx).map(Err),
        }
    }

    /// As the socket's: a server then queues its answer's buffers as they
    /// are (no copy into one of its own), so they are freed once written.
    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn options(max_connections: usize, idle_ms: u64) -> ListenOptions {
        ListenOptions {
            max_connections,
            idle_timeout: Duration::from_millis(idle_ms),
            ..ListenOptions::default()
        }
    }

    async fn serve(options: ListenOptions) -> SocketAddr {
        serve_with_probes(options, None).await
    }

    /// `/` answers "ok", `/echo` the request's body; `probes` (if any) are
    /// what the reserve answers.
    async fn serve_with_probes(options: ListenOptions, probes: Option<axum::Router>) -> SocketAddr {
        let listener = bind("127.0.0.1:0".parse().unwrap(), "test", &options)
            .await
            .unwrap();
        let addr = listener.local_addr().unwrap();
        let router = axum::Router::new()
            .route("/", axum::routing::get(|| async { "ok" }))
            .route("/echo", axum::routing::post(|body: String| async move { body }));
        tokio::spawn(super::serve(listener, router, probes));
        addr
    }

    /// Whether the server closes `stream` (EOF or reset) within `within`.
    async fn closed(stream: &mut TcpStream, within: Duration) -> bool {
        let mut byte = [0u8; 1];
        matches!(
            tokio::time::timeout(within, stream.read(&mut byte)).await,
            Ok(Ok(0)) | Ok(Err(_))
        )
    }

    async fn get(addr: SocketAddr) -> io::Result<String> {
        let mut s = TcpStream::connect(addr).await?;
        s.write_all(b"GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
            .await?;
        let mut out = String::new();
        s.read_to_string(&mut out).await?;
        Ok(out)
    }

    #[tokio::test]
    async fn connections_past_the_cap_are_closed_and_idle_ones_time_out() {
        let addr = serve(options(4, 300)).await;
        let mut idle = Vec::new();
        for _ in 0..4 {
            idle.push(TcpStream::connect(addr).await.unwrap());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        let mut extra = TcpStream::connect(addr).await.unwrap();
        assert!(
            closed(&mut extra, Duration::from_millis(200)).await,
            "past the cap: closed at once"
        );
        for s in &mut idle {
            assert!(
                closed(s, Duration::from_secs(3)).await,
                "idle: closed after the timeout"
            );
        }
        let answer = get(addr).await.unwrap();
        assert!(
            answer.starts_with("HTTP/1.1 200") && answer.ends_with("ok"),
            "{answer}"
        );
    }

    #[tokio::test]
    async fn a_connection_that_talks_is_not_idle() {
        let addr = serve(options(4, 300)).await;
        let mut s = TcpStream::connect(addr).await.unwrap();
        for _ in 0..3 {
            tokio::time::sleep(Duration::from_millis(200)).await;
            s.write_all(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n").await.unwrap();
            let mut buf = [0u8; 256];
            let n = s.read(&mut buf).await.unwrap();
            assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
        }
    }

    /// Writes `bytes` one at a time every `every` until the server closes
    /// the connection; whether it did within `within`. What the server
    /// answers meanwhile is read and returned.
    async fn dribble(addr: SocketAddr, bytes: &[u8], every: Duration, within: Duration) -> Option<String> {
        let mut s = TcpStream::connect(addr).await.unwrap();
        let mut answer = Vec::new();
        let mut next = bytes.iter().cycle();
        let until = Instant::now() + within;
        loop {
            let mut buf = [0u8; 512];
            tokio::select! {
                r = s.read(&mut buf) => match r {
                    Ok(0) | Err(_) => return Some(String::from_utf8_lossy(&answer).into_owned()),
                    Ok(n) => answer.extend_from_slice(&buf[..n]),
                },
                () = tokio::time::sleep(every) => {
                    if Instant::now() > until {
                        return None;
                    }
                    let _ = s.write_all(&[*next.next().unwrap()]).await;
                }
            }
        }
    }

    #[tokio::test]
    async fn a_request_head_dribbled_in_is_cut_at_its_deadline() {
        let options = ListenOptions {
            header_timeout: Duration::from_millis(500),
            ..options(4, 10_000)
        };
        let addr = serve(options).await;
        let head = b"GET / HTTP/1.1\r\nhost: x\r\nx-slow: ";
        let cut = dribble(addr, head, Duration::from_millis(100), Duration::from_secs(5)).await;
        assert!(cut.is_some(), "a head dribbled in stays open");
        // A kept-alive connection gets the same deadline for its next head.
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n").await.unwrap();
        let mut buf = [0u8; 256];
        let n = s.read(&mut buf).await.unwrap();
        assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
        assert!(
            closed(&mut s, Duration::from_secs(3)).await,
            "kept alive past the head deadline"
        );
    }

    #[tokio::test]
    async fn a_request_body_dribbled_in_is_cut_at_its_deadline() {
        let options = ListenOptions {
            body_timeout: Duration::from_millis(500),
            ..options(4, 10_000)
        };
        let addr = serve(options).await;
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(b"POST /echo HTTP/1.1\r\nhost: x\r\ncontent-length: 100000\r\n\r\n")
            .await
            .unwrap();
        let started = Instant::now();
        let answer = loop {
            let mut buf = [0u8; 512];
            tokio::select! {
                r = s.read(&mut buf) => break r.map(|n| String::from_utf8_lossy(&buf[..n]).into_owned()),
                () = tokio::time::sleep(Duration::from_millis(100)) => {
                    assert!(started.elapsed() < Duration::from_secs(5), "a body dribbled in is waited for");
                    let _ = s.write_all(b"x").await;
                }
            }
        };
        let answer = answer.unwrap_or_default();
        assert!(
            answer.is_empty() || answer.starts_with("HTTP/1.1 400"),
            "{answer}"
        );
    }

    #[tokio::test]
    async fn probes_answer_past_the_cap_from_the_reserve() {
        let options = ListenOptions {
            probe_reserve: 1,
            ..options(2, 10_000)
        };
        let probes = axum::Router::new().route("/healthz", axum::routing::get(|| async { "healthy" }));
        let addr = serve_with_probes(options, Some(probes)).await;
        let mut full = Vec::new();
        for _ in 0..2 {
            full.push(TcpStream::connect(addr).await.unwrap());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        for _ in 0..3 {
            let mut s = TcpStream::connect(addr).await.unwrap();
            s.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
                .await
                .unwrap();
            let mut out = String::new();
            s.read_to_string(&mut out).await.unwrap();
            assert!(
                out.starts_with("HTTP/1.1 200") && out.ends_with("healthy"),
                "{out}"
            );
        }
        let other = get(addr).await.unwrap();
        assert!(other.starts_with("HTTP/1.1 503"), "{other}");
        assert!(other.to_lowercase().contains("retry-after: 1"), "{other}");
    }

    #[tokio::test]
    async fn a_non_loopback_address_needs_an_explicit_allowance() {
        let err = bind("0.0.0.0:0".parse().unwrap(), "the cache view", &options(4, 300))
            .await
            .err()
            .expect("refused");
        assert!(err.to_string().contains("not a loopback address"), "{err}");
        let allowed = ListenOptions {
            allow_non_loopback: true,
            ..options(4, 300)
        };
        assert!(
            bind("0.0.0.0:0".parse().unwrap(), "the cache view", &allowed)
                .await
                .is_ok()
        );
    }

    #[tokio::test]
    async fn a_port_in_use_is_an_error() {
        let taken = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = taken.local_addr().unwrap();
        let err = bind(addr, "the cache view", &options(4, 300))
            .await
            .err()
            .expect("in use");
        assert!(
            err.to_string().starts_with("the cache view cannot listen on"),
            "{err}"
        );
    }
}
