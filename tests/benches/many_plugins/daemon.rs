//! wink as the operator runs it: `wink run` as a child process on a
//! directory of N copies of the `bench-many` component, each beside its
//! own config, read back through the admin server's `/debug/plugins`
//! (every plugin's `synced` and `calls`: the calls into its guest).

use super::set::Spec;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A directory of one plugin per spec: `many-NNN.wasm` and `many-NNN.json`.
pub fn plugin_dir(dir: &Path, component: &Path, specs: &[Spec]) -> PathBuf {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).unwrap();
    let bytes = std::fs::read(component).unwrap();
    for (i, spec) in specs.iter().enumerate() {
        std::fs::write(dir.join(format!("many-{i:03}.wasm")), distinct(&bytes, i)).unwrap();
        std::fs::write(dir.join(format!("many-{i:03}.json")), spec.config().to_string()).unwrap();
    }
    dir.to_path_buf()
}

/// The component with a custom section naming copy `i` appended: the
/// same code, but a component of its own (its own digest), so each copy is
/// compiled and precompiled as a different plugin's would be.
fn distinct(component: &[u8], i: usize) -> Vec<u8> {
    fn leb(mut n: usize, out: &mut Vec<u8>) {
        loop {
            let byte = (n & 0x7f) as u8;
            n >>= 7;
            if n == 0 {
                out.push(byte);
                return;
            }
            out.push(byte | 0x80);
        }
    }
    let name = b"bench-many-copy";
    let payload = i.to_le_bytes();
    let mut body = Vec::new();
    leb(name.len(), &mut body);
    body.extend_from_slice(name);
    body.extend_from_slice(&payload);
    let mut out = component.to_vec();
    out.push(0);
    leb(body.len(), &mut out);
    out.extend_from_slice(&body);
    out
}

pub struct Daemon {
    child: Child,
    admin: String,
    pub started: Instant,
}

impl Daemon {
    /// `wink run` on `plugins`, its precompiled components in
    /// `precompiled`, its output in `log`.
    pub fn run(bin: &Path, plugins: &Path, kubeconfig: &str, precompiled: &Path, log: &Path) -> Daemon {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let admin = format!("127.0.0.1:{port}");
        let out = std::fs::File::create(log).unwrap();
        let started = Instant::now();
        let child = Command::new(bin)
            .args(["run", "--no-reload", "--plugins"])
            .arg(plugins)
            .args([
                "--kubeconfig",
                kubeconfig,
                "--admin-addr",
                &admin,
                "--precompiled",
            ])
            .arg(precompiled)
            .env("RUST_LOG", "info")
            .env_remove("KUBECONFIG")
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .stdin(Stdio::null())
            .spawn()
            .expect("spawn wink");
        Daemon {
            child,
            admin,
            started,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `/debug/plugins`'s plugins, or none while the server is not up.
    fn plugins(&self) -> Option<Vec<serde_json::Value>> {
        let mut s = std::net::TcpStream::connect(&self.admin).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
        write!(
            s,
            "GET /debug/plugins HTTP/1.1\r\nHost: wink\r\nConnection: close\r\n\r\n"
        )
        .ok()?;
        let mut text = String::new();
        s.read_to_string(&mut text).ok()?;
        let (_, body) = text.split_once("\r\n\r\n")?;
        let v: serde_json::Value = serde_json::from_str(body).ok()?;
        v["plugins"].as_array().cloned()
    }

    /// Wait until all `n` plugins are synced; the time since the spawn.
    pub fn wait_synced(&mut self, n: usize, log: &Path) -> Duration {
        let deadline = Instant::now() + Duration::from_secs(600);
        loop {
            if let Some(ps) = self.plugins()
                && ps.len() == n
                && ps.iter().all(|p| p["synced"] == true)
            {
                return self.started.elapsed();
            }
            if Instant::now() > deadline || self.child.try_wait().unwrap().is_some() {
                panic!(
                    "wink did not sync {n} plugins; its log:\n{}",
                    std::fs::read_to_string(log).unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Calls into every plugin's guest so far.
    pub fn calls(&self) -> u64 {
        self.plugins()
            .expect("/debug/plugins answers")
            .iter()
            .map(|p| p["calls"].as_u64().unwrap_or(0))
            .sum()
    }

    pub fn terminate(mut self) {
        // SAFETY: kill has no preconditions; the pid is our own child's.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
