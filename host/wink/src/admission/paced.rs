//! A connection's pacing on the admission port: a request head must
//! arrive within its deadline of the first byte, and the answer start
//! within its own of the head's end; between requests the connection may
//! wait. Owns only the timing of one stream; the server decides what is
//! read and answered.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

/// Where a connection is in its exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Between requests: only the listener's idle timeout applies (and,
    /// before the first, the first request's deadline).
    Waiting,
    /// A request's head is arriving; `matched` bytes of its blank line seen.
    Head { matched: u8 },
    /// Its body is arriving, or its answer being made.
    Rest,
}

/// A connection whose request head must arrive within `head` of its first
/// byte, and whose answer must start within `rest` of the head's end
/// (the body's deadline is the service's); between requests it may wait
/// (up to the listener's idle timeout), so a kept-alive connection is not
/// closed under a client about to reuse it.
pub struct Paced<S> {
    inner: S,
    head: Duration,
    rest: Duration,
    stage: Stage,
    deadline: Option<Pin<Box<Sleep>>>,
}

impl<S> Paced<S> {
    pub fn new(inner: S, head: Duration, rest: Duration) -> Self {
        Paced {
            inner,
            head,
            rest,
            stage: Stage::Waiting,
            deadline: None,
        }
    }

    /// A new connection: its first request must begin within `within`
    /// (between later requests only the idle timeout applies).
    pub fn first_request_within(mut self, within: Duration) -> Self {
        self.start(within);
        self
    }

    fn start(&mut self, within: Duration) {
        self.deadline = Some(Box::pin(tokio::time::sleep(within)));
    }

    /// Follow the request through bytes just read.
    fn follow(&mut self, bytes: &[u8]) {
        const BLANK: &[u8; 4] = b"\r\n\r\n";
        if bytes.is_empty() {
            return;
        }
        if self.stage == Stage::Waiting {
            self.stage = Stage::Head { matched: 0 };
            self.start(self.head);
        }
        if let Stage::Head { mut matched } = self.stage {
            for &b in bytes {
                matched = match b {
                    _ if b == BLANK[matched as usize] => matched + 1,
                    b'\r' => 1,
                    _ => 0,
                };
                if matched == 4 {
                    self.stage = Stage::Rest;
                    self.start(self.rest);
                    return;
                }
            }
            self.stage = Stage::Head { matched };
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Paced<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        match Pin::new(&mut self.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                let this = &mut *self;
                this.follow(&buf.filled()[before..]);
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => match self.deadline.as_mut().map(|d| d.as_mut().poll(cx)) {
                Some(Poll::Ready(())) => Poll::Ready(Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "the request did not arrive in time",
                ))),
                _ => Poll::Pending,
            },
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Paced<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let written = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(written, Poll::Ready(Ok(n)) if n > 0) {
            // An answer: the exchange is over; the next byte starts another.
            self.stage = Stage::Waiting;
            self.deadline = None;
        }
        written
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A paced server end of a pipe that answers each head with one byte.
    fn paced(head_ms: u64) -> tokio::io::DuplexStream {
        paced_first(head_ms, None)
    }

    /// [`paced`], its first request due within `first_ms` when given.
    fn paced_first(head_ms: u64, first_ms: Option<u64>) -> tokio::io::DuplexStream {
        let (client, server) = tokio::io::duplex(1024);
        let mut server = Paced::new(server, Duration::from_millis(head_ms), Duration::from_secs(5));
        if let Some(ms) = first_ms {
            server = server.first_request_within(Duration::from_millis(ms));
        }
        tokio::spawn(async move {
            let mut buf = [0u8; 64];
            loop {
                match server.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) if server.stage == Stage::Rest => {
                        let _ = server.write_all(b"!").await;
                    }
                    Ok(_) => {}
                }
            }
        });
        client
    }

    #[tokio::test]
    async fn a_kept_alive_connection_may_wait_but_a_head_must_arrive_in_time() {
        let mut c = paced(300);
        let mut one = [0u8; 1];
        c.write_all(b"POST / HTTP/1.1\r\nhost: x\r\n\r\n").await.unwrap();
        c.read_exact(&mut one).await.unwrap();
        // Waiting between requests is no head.
        tokio::time::sleep(Duration::from_millis(600)).await;
        c.write_all(b"POST / HTTP/1.1\r\n\r\n").await.unwrap();
        c.read_exact(&mut one).await.expect("kept alive");
        // A head dribbled in is cut.
        c.write_all(b"POST / HTT").await.unwrap();
        tokio::time::sleep(Duration::from_millis(600)).await;
        let _ = c.write_all(b"P/1.1\r\n\r\n").await;
        let got = tokio::time::timeout(Duration::from_secs(2), c.read(&mut one))
            .await
            .unwrap();
        assert!(matches!(got, Ok(0) | Err(_)), "closed: {got:?}");
    }

    #[tokio::test]
    async fn a_new_connection_that_sends_nothing_is_closed_at_the_first_request_deadline() {
        let mut one = [0u8; 1];
        let mut silent = paced_first(300, Some(400));
        let got = tokio::time::timeout(Duration::from_secs(3), silent.read(&mut one))
            .await
            .expect("closed well before the idle timeout");
        assert!(matches!(got, Ok(0) | Err(_)), "closed: {got:?}");
        // One that begins in time is served, and may then wait between requests.
        let mut prompt = paced_first(300, Some(400));
        prompt.write_all(b"POST / HTTP/1.1\r\n\r\n").await.unwrap();
        prompt.read_exact(&mut one).await.unwrap();
        tokio::time::sleep(Duration::from_millis(600)).await;
        prompt.write_all(b"POST / HTTP/1.1\r\n\r\n").await.unwrap();
        prompt
            .read_exact(&mut one)
            .await
            .expect("kept alive past the first deadline");
    }
}
