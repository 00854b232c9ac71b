//! The paced benchmark's child processes (the simulated server, the
//! consumers), driven over their stdin and stdout, and what `/proc` says of
//! them: CPU time, context switches, resident memory.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Duration;

/// A child process of the benchmark's own binary, in a role.
pub struct Proc {
    child: Child,
    stdin: ChildStdin,
    lines: std::io::Lines<BufReader<std::process::ChildStdout>>,
}

impl Proc {
    pub fn spawn(args: &[&str]) -> Proc {
        Proc::spawn_with(&[], args)
    }

    /// [`spawn`](Self::spawn), with `env` set in the child's environment.
    pub fn spawn_with(env: &[(&str, String)], args: &[&str]) -> Proc {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .envs(env.iter().map(|(k, v)| (k, v)))
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Proc { child, stdin, lines }
    }

    /// A consumer process (see `role_consume`).
    pub fn consumer(variant: &str, n: usize, kind: &str, kubeconfig: &str) -> Proc {
        Proc::consumer_with(&[], variant, n, kind, kubeconfig)
    }

    /// [`consumer`](Self::consumer), with `env` set in its environment.
    pub fn consumer_with(
        env: &[(&str, String)],
        variant: &str,
        n: usize,
        kind: &str,
        kubeconfig: &str,
    ) -> Proc {
        let n = n.to_string();
        Proc::spawn_with(
            env,
            &[
                "--role",
                "consume",
                "--variant",
                variant,
                "--n",
                &n,
                "--kind",
                kind,
                "--kubeconfig",
                kubeconfig,
            ],
        )
    }

    pub fn expect(&mut self, prefix: &str) -> String {
        loop {
            let line = self.lines.next().expect("the child answers").unwrap();
            if line.starts_with(prefix) {
                return line;
            }
        }
    }

    pub fn say(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// CPU time (user + system) of a process, from `/proc/PID/stat` (counted
/// in clock ticks, 10 ms here).
pub fn cpu(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<u64> = after.split_whitespace().map(|x| x.parse().unwrap_or(0)).collect();
    // Fields 14 and 15 (utime, stime), counted from `state` as field 3.
    let ticks = f[11] + f[12];
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    Duration::from_secs_f64(ticks as f64 / hz as f64)
}

/// CPU time of a process's live threads in nanoseconds, from the scheduler
/// (`/proc/PID/task/*/schedstat`, first field: time on a CPU, user and
/// system alike). Unlike [`cpu`]'s ticks it does not round a window of ten
/// seconds at 1,000 events/s to whole microseconds per event.
pub fn cpu_ns(pid: u32) -> Duration {
    let mut ns = 0u64;
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap().flatten() {
        let stat = std::fs::read_to_string(task.path().join("schedstat")).unwrap_or_default();
        ns += stat
            .split_whitespace()
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
    }
    Duration::from_nanos(ns)
}

/// Context switches of every thread of a process.
pub fn context_switches(pid: u32) -> u64 {
    let mut total = 0;
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap().flatten() {
        let status = std::fs::read_to_string(task.path().join("status")).unwrap_or_default();
        for line in status.lines() {
            if line.starts_with("voluntary_ctxt_switches") || line.starts_with("nonvoluntary_ctxt_switches") {
                total += line
                    .split_whitespace()
                    .nth(1)
                    .and_then(|v| v.parse::<u64>().ok())
                    .unwrap_or(0);
            }
        }
    }
    total
}

/// A field of `/proc/PID/status` in bytes (`VmRSS`, `VmHWM`).
pub fn status_bytes(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        .unwrap_or(0)
        * 1024
}

/// Wait until a process stops using CPU (under 1% of a core over 300 ms),
/// at most a minute. (The paced bench itself does not wait so.)
#[allow(dead_code)]
pub fn quiesce(pid: u32) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let mut last = cpu_ns(pid);
    while std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(300));
        let now = cpu_ns(pid);
        if now - last < Duration::from_millis(3) {
            return;
        }
        last = now;
    }
}
