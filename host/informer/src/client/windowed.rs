//! Watch connections read in windows: under a steady stream, one wake-up
//! per window instead of one per event.
//!
//! A watch delivers small chunks at the rate objects change. Read the usual
//! way, every chunk makes the socket readable, which wakes a runtime worker
//! out of `epoll_wait`: one wake-up per event, which on a busy stream costs
//! more than decoding the event. A [`Windowed`] connection notices such a
//! trickle (the reader drained the socket again within a window of the last
//! time, [`ENGAGE`] times in a row) and then sets the socket's receive
//! low-water mark (`SO_RCVLOWAT`): arrivals below it wake nobody, and the
//! reader looks once per window, reading all that came meanwhile. A window
//! with nothing in it, or a request written on the connection, puts it back
//! to reading each arrival. So a lone event is read at once, an event in a
//! stream at most one window late (plus the timer's granularity: tokio
//! rounds a deadline up to the next millisecond), and a bulk transfer
//! (above the mark) as fast as ever.
//!
//! Owns the connection's read mode ([`Mode`]) and the connector that makes
//! such connections; it does not know HTTP: the client decides which
//! requests go over these connections.

use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::rt::TokioIo;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::{Instant, Sleep};

/// How many drains in a row, each within a window of the previous, make a
/// trickle worth reading in windows.
pub const ENGAGE: u32 = 4;

/// The low-water mark while reading in windows: a bulk transfer reaches it at once
/// and is read as it comes; a watch's trickle stays under it for a window.
pub const LOW_WATER: usize = 32 * 1024;

/// How a [`Windowed`] connection is read. Transitions are all in
/// [`Windowed::poll_read`] and [`Windowed::poll_write`]:
///
/// - `Direct` → `Windowed`: the reader found the socket empty for the
///   [`ENGAGE`]th time in a row, each less than a window after the last.
/// - `Windowed` → `Direct`: a whole window passed with nothing to read
///   (the stream went quiet), or a request is written (request/response
///   traffic expects its answer at once).
enum Mode {
    /// Every arrival wakes the reader (the socket's mark is 1 byte).
    Direct {
        /// Drains in a row, each within a window of the previous.
        streak: u32,
        /// When the reader last found the socket empty.
        drained: Option<Instant>,
    },
    /// Arrivals under [`LOW_WATER`] wake nobody; the reader looks when
    /// `due` fires (armed when it finds the socket empty), or when the mark
    /// is reached.
    Windowed { due: Option<Pin<Box<Sleep>>> },
}

/// A TCP connection read in windows under a steady trickle.
pub struct Windowed {
    stream: TcpStream,
    window: Duration,
    mode: Mode,
}

impl Windowed {
    pub fn new(stream: TcpStream, window: Duration) -> Windowed {
        Windowed {
            stream,
            window,
            mode: Mode::direct(),
        }
    }

    /// Whether the connection is read in windows now.
    pub fn is_windowed(&self) -> bool {
        matches!(self.mode, Mode::Windowed { .. })
    }

    fn read_directly(&mut self) {
        if self.is_windowed() {
            // A failure leaves the mark where it was: reads still complete,
            // at worst one window late.
            let _ = low_water::set(&self.stream, 1);
            self.mode = Mode::direct();
        }
    }

    fn open_windows(&mut self) {
        if low_water::set(&self.stream, LOW_WATER).is_ok() {
            self.mode = Mode::Windowed { due: None };
        } else {
            self.mode = Mode::direct();
        }
    }
}

impl Mode {
    fn direct() -> Mode {
        Mode::Direct {
            streak: 0,
            drained: None,
        }
    }
}

impl AsyncRead for Windowed {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        loop {
            match &mut this.mode {
                Mode::Direct { streak, drained } => {
                    let read = Pin::new(&mut this.stream).poll_read(cx, buf);
                    if read.is_ready() {
                        return read;
                    }
                    let now = Instant::now();
                    *streak = match drained {
                        Some(t) if now.duration_since(*t) < this.window => *streak + 1,
                        _ => 0,
                    };
                    *drained = Some(now);
                    if *streak + 1 < ENGAGE {
                        return Poll::Pending;
                    }
                    this.open_windows();
                    // The reader is registered for readiness; the loop
                    // arms the window too.
                }
                Mode::Windowed { due } => {
                    match low_water::read_now(&this.stream, buf) {
                        Ok(()) => {
                            *due = None;
                            return Poll::Ready(Ok(()));
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                        Err(e) => return Poll::Ready(Err(e)),
                    }
                    let timer = due.get_or_insert_with(|| Box::pin(tokio::time::sleep(this.window)));
                    if timer.as_mut().poll(cx).is_ready() {
                        // A whole window without a byte: the stream is quiet.
                        this.read_directly();
                        continue;
                    }
                    ready!(this.stream.poll_read_ready(cx))?;
                    // Readable (the mark was reached, or tokio's flag is
                    // stale because the last read bypassed it): clear the
                    // flag and read again; new data sets it again.
                    let _ = this.stream.try_io(tokio::io::Interest::READABLE, || {
                        Err::<(), _>(io::ErrorKind::WouldBlock.into())
                    });
                }
            }
        }
    }
}

impl AsyncWrite for Windowed {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        self.read_directly();
        Pin::new(&mut self.stream).poll_write(cx, data)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.read_directly();
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

impl Connection for Windowed {
    fn connected(&self) -> Connected {
        self.stream.connected()
    }
}

/// Makes [`Windowed`] connections: hyper's own connector underneath.
#[derive(Clone)]
pub struct WindowedConnector {
    inner: HttpConnector,
    window: Duration,
}

impl WindowedConnector {
    pub fn new(inner: HttpConnector, window: Duration) -> WindowedConnector {
        WindowedConnector { inner, window }
    }
}

impl tower::Service<http::Uri> for WindowedConnector {
    type Response = TokioIo<Windowed>;
    type Error = <HttpConnector as tower::Service<http::Uri>>::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, uri: http::Uri) -> Self::Future {
        let connecting = self.inner.call(uri);
        let window = self.window;
        Box::pin(async move {
            let stream = connecting.await?.into_inner();
            Ok(TokioIo::new(Windowed::new(stream, window)))
        })
    }
}

/// The socket calls tokio does not make: the receive low-water mark, and a
/// read that does not wait for tokio's readiness flag (arrivals under the
/// mark never set it).
mod low_water {
    use std::io;
    use std::os::fd::AsRawFd;
    use tokio::io::ReadBuf;
    use tokio::net::TcpStream;

    /// Sets `SO_RCVLOWAT`: the socket is readable once `bytes` are queued.
    pub fn set(stream: &TcpStream, bytes: usize) -> io::Result<()> {
        let value = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
        // SAFETY: a valid socket, and a pointer to a c_int with its size.
        let rc = unsafe {
            libc::setsockopt(
                stream.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVLOWAT,
                (&value as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// Reads what is queued, without waiting: `WouldBlock` when nothing is.
    /// A nonblocking read returns what is there even below the mark.
    pub fn read_now(stream: &TcpStream, buf: &mut ReadBuf<'_>) -> io::Result<()> {
        // SAFETY: recv writes at most `unfilled.len()` bytes into the
        // buffer's unfilled part, and only the `n` it reports are marked
        // filled.
        unsafe {
            let unfilled = buf.unfilled_mut();
            let n = libc::recv(
                stream.as_raw_fd(),
                unfilled.as_mut_ptr().cast(),
                unfilled.len(),
                libc::MSG_DONTWAIT,
            );
            if n < 0 {
                return Err(io::Error::last_os_error());
            }
            let n = n as usize;
            buf.assume_init(n);
            buf.advance(n);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
