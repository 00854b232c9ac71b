//! A scripted registry on loopback: HTTP/1.1, one request per connection,
//! each answered as a test's handler says: bytes, an endless body (1 GiB,
//! made as it is read, so a client that stops reading costs nothing), or
//! bytes dribbled one at a time. What hostile registries do, without a
//! real registry.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

/// What an endless body offers in all.
pub const HUGE: u64 = 1 << 30;

/// A body.
pub enum Body {
    /// These bytes, with their `Content-Length`.
    Bytes(Vec<u8>),
    /// [`HUGE`] bytes of this one, no `Content-Length`, made lazily.
    Endless(u8),
    /// These bytes, one each interval, no `Content-Length`.
    Dribble(Vec<u8>, Duration),
}

/// One answer.
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Body,
}

impl Answer {
    pub fn new(status: u16, body: Body) -> Answer {
        Answer {
            status,
            headers: Vec::new(),
            body,
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Answer {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }
}

/// A request as the handler sees it.
pub struct Request {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

type Handler = dyn Fn(&Request) -> Answer + Send + Sync;

/// A running scripted registry; dropped, it stops accepting.
pub struct Scripted {
    pub port: u16,
    stop: Arc<AtomicBool>,
    /// How many requests it took.
    pub requests: Arc<AtomicUsize>,
}

impl Scripted {
    pub fn start(handler: impl Fn(&Request) -> Answer + Send + Sync + 'static) -> Scripted {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let requests = Arc::new(AtomicUsize::new(0));
        let handler: Arc<Handler> = Arc::new(handler);
        let (s, n) = (stop.clone(), requests.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(conn) = conn else { continue };
                let (handler, n) = (handler.clone(), n.clone());
                std::thread::spawn(move || {
                    let _ = serve(conn, &*handler, &n);
                });
            }
        });
        Scripted { port, stop, requests }
    }

    /// `host:port`, as references and `--plain-http` name it.
    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}

impl Drop for Scripted {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn serve(conn: TcpStream, handler: &Handler, n: &AtomicUsize) -> std::io::Result<()> {
    conn.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let (method, path) = (
        parts.next().unwrap_or("").to_string(),
        parts.next().unwrap_or("").to_string(),
    );
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    n.fetch_add(1, Ordering::SeqCst);
    let request = Request {
        method,
        path,
        headers,
    };
    let answer = handler(&request);
    let mut out = conn;
    let mut head = format!("HTTP/1.1 {} X\r\nConnection: close\r\n", answer.status);
    for (k, v) in &answer.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if let Body::Bytes(b) = &answer.body {
        head.push_str(&format!("Content-Length: {}\r\n", b.len()));
    }
    head.push_str("\r\n");
    out.write_all(head.as_bytes())?;
    if request.method == "HEAD" {
        return Ok(());
    }
    match answer.body {
        Body::Bytes(b) => out.write_all(&b)?,
        Body::Endless(byte) => {
            let chunk = vec![byte; 64 << 10];
            let mut sent = 0u64;
            while sent < HUGE {
                out.write_all(&chunk)?;
                sent += chunk.len() as u64;
            }
        }
        Body::Dribble(bytes, every) => {
            for b in bytes {
                out.write_all(&[b])?;
                out.flush()?;
                std::thread::sleep(every);
            }
        }
    }
    out.flush()
}
