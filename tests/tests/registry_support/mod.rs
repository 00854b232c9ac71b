//! A real OCI registry for the tests: CNCF distribution (Debian's
//! `docker-registry`, installed by [`debian_support`] where missing), serving plain
//! HTTP on a free loopback port from a scratch storage directory; a raw
//! HTTP/1.0 client to read what it holds as any other client would; and
//! `wink push` / `wink pull` run as commands.
#![allow(dead_code)]

pub mod scripted;

use crate::common::{self, scratch};
use crate::debian_support;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The registry binary, installed on first use.
pub fn registry_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| debian_support::ensure("docker-registry", "docker-registry"))
}

/// skopeo, a second OCI client independent of wink's, installed on first use.
pub fn skopeo_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| debian_support::ensure("skopeo", "skopeo"))
}

/// `skopeo copy` over plain HTTP; panics with its output when it fails.
pub fn skopeo_copy(from: &str, to: &str) {
    let out = Command::new(skopeo_bin())
        .args([
            "copy",
            "--src-tls-verify=false",
            "--dest-tls-verify=false",
            from,
            to,
        ])
        .output()
        .expect("run skopeo");
    assert!(
        out.status.success(),
        "skopeo copy {from} {to} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A free loopback port (bound, read, released).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A running registry; dropped, it is stopped.
pub struct Registry {
    child: Option<Child>,
    pub port: u16,
    pub dir: PathBuf,
    /// An htpasswd file: only its users may pull and push.
    htpasswd: Option<PathBuf>,
}

impl Registry {
    /// A new registry with empty storage under target/e2e/<test>.
    pub fn start(test: &str) -> Registry {
        let dir = scratch(test).join("registry");
        std::fs::create_dir_all(dir.join("data")).unwrap();
        let mut r = Registry {
            child: None,
            port: free_port(),
            dir,
            htpasswd: None,
        };
        r.restart();
        r
    }

    /// A registry that only `user` with `password` may use (HTTP Basic,
    /// the password bcrypt-hashed by Python's crypt with few rounds).
    pub fn start_private(test: &str, user: &str, password: &str) -> Registry {
        let dir = scratch(test).join("registry");
        std::fs::create_dir_all(dir.join("data")).unwrap();
        let hash = Command::new("python3")
            .args(["-W", "ignore", "-c"])
            .arg("import crypt, sys; print(crypt.crypt(sys.argv[1], crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16)))")
            .arg(password)
            .output()
            .expect("python3");
        assert!(
            hash.status.success(),
            "bcrypt: {}",
            String::from_utf8_lossy(&hash.stderr)
        );
        let htpasswd = dir.join("htpasswd");
        std::fs::write(
            &htpasswd,
            format!("{user}:{}", String::from_utf8_lossy(&hash.stdout)),
        )
        .unwrap();
        let mut r = Registry {
            child: None,
            port: free_port(),
            dir,
            htpasswd: Some(htpasswd),
        };
        r.restart();
        r
    }

    /// `host:port`, as references and `--plain-http` name it.
    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Start (again) on the same port and storage.
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "already running");
        let config = self.dir.join("config.yml");
        let auth = match &self.htpasswd {
            Some(file) => format!(
                "auth:\n  htpasswd:\n    realm: wink-test\n    path: {}\n",
                file.display()
            ),
            None => String::new(),
        };
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\n{auth}http:\n  addr: 127.0.0.1:{}\n",
                self.dir.join("data").display(),
                self.port
            ),
        )
        .unwrap();
        let log = std::fs::File::create(self.dir.join("registry.log")).unwrap();
        let child = Command::new(registry_bin())
            .arg("serve")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start docker-registry");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        let ready = |r: Response| r.status == 200 || (self.htpasswd.is_some() && r.status == 401);
        while !get(self.port, "/v2/", &[]).is_some_and(ready) {
            assert!(
                Instant::now() < deadline,
                "the registry did not answer on {}",
                self.host()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Stop it (its storage stays).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Where the registry keeps the blob `sha256:<hex>`.
    pub fn blob_file(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").unwrap();
        self.dir
            .join("data/docker/registry/v2/blobs/sha256")
            .join(&hex[..2])
            .join(hex)
            .join("data")
    }

    /// GET `path` from it.
    pub fn get(&self, path: &str, accept: &[&str]) -> Response {
        get(self.port, path, accept).expect("the registry answers")
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        self.stop();
    }
}

/// An HTTP answer.
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }
}

/// One HTTP/1.0 GET (the server closes after the body); None when
/// nothing answers.
fn get(port: u16, path: &str, accept: &[&str]) -> Option<Response> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut req = format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n");
    for a in accept {
        req.push_str(&format!("Accept: {a}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).ok()?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).ok()?;
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let mut lines = head.lines();
    let status = lines.next()?.split_whitespace().nth(1)?.parse().ok()?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
        .collect();
    Some(Response {
        status,
        headers,
        body: raw[split + 4..].to_vec(),
    })
}

/// `wink <args>` to its end.
pub fn wink(args: &[&str]) -> Output {
    Command::new(common::wink_bin())
        .args(args)
        .env_remove("KUBECONFIG")
        .env("RUST_LOG", "info")
        .output()
        .expect("run wink")
}

/// stdout of a successful `wink <args>`, trimmed; panics with both streams otherwise.
pub fn wink_ok(args: &[&str]) -> String {
    let out = wink(args);
    assert!(
        out.status.success(),
        "wink {args:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// `wink push` of `file` to `reference` (`host/repository:tag`) in `reg`,
/// over plain HTTP: the digest it prints after the repository it names.
pub fn push(reg: &Registry, reference: &str, file: &Path) -> String {
    let out = wink_ok(&[
        "push",
        reference,
        file.to_str().unwrap(),
        "--plain-http",
        &reg.host(),
    ]);
    let (pushed, digest) = out.split_once('@').expect("REF@DIGEST");
    assert_eq!(pushed, reference.rsplit_once(':').unwrap().0, "{out}");
    digest.to_string()
}

/// stderr of a failing `wink <args>`; panics if it succeeded.
pub fn wink_err(args: &[&str]) -> String {
    let out = wink(args);
    assert!(
        !out.status.success(),
        "wink {args:?} should have failed:\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stderr).to_string()
}

/// The sha256 digest of `bytes`, `sha256:<hex>`, computed by `sha256sum`
/// (an implementation independent of wink's).
pub fn sha256(bytes: &[u8]) -> String {
    let mut child = Command::new("sha256sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("sha256sum");
    child.stdin.take().unwrap().write_all(bytes).unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    format!("sha256:{}", text.split_whitespace().next().unwrap())
}

/// A valid component of `size` bytes or a little more: the component
/// preamble and one custom section of filler.
pub fn big_component(size: usize) -> Vec<u8> {
    let mut out = b"\0asm\x0d\0\x01\0".to_vec();
    let name = b"filler";
    let payload = size;
    let mut section = vec![name.len() as u8];
    section.extend_from_slice(name);
    section.extend(std::iter::repeat_n(0x5a, payload));
    out.push(0);
    let mut len = section.len();
    loop {
        let byte = (len & 0x7f) as u8;
        len >>= 7;
        if len == 0 {
            out.push(byte);
            break;
        }
        out.push(byte | 0x80);
    }
    out.extend(section);
    out
}
