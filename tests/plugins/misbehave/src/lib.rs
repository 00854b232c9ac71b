//! A deliberately bad plugin for the runtime's limit and recovery tests.
//! It logs every pod event like `pod-logger`, and when the event's pod is
//! named `trigger` (and the event kind matches `on`) it misbehaves:
//!
//! config: `{"mode": "loop" | "alloc" | "panic" | "stack" | "leak" | "escape" | "flood", "trigger": "bomb", "on": "add" | "update" | "any", "target": "127.0.0.1:6443"}`
//!
//! `escape` tries to leave the sandbox (read a file, read the environment,
//! open a socket to `target`) and prints what each attempt got; `flood`
//! prints 20,000 lines of 100 bytes in one call.
//!
//! `leak` keeps every object handle the cache gives it (clones of the pods it
//! lists, forever), until the host's handle cap stops it.

use wink_sdk::{Handler, Object, Registration, Watch};

struct Misbehave {
    mode: String,
    trigger: String,
    on: String,
    target: String,
}

#[inline(never)]
#[allow(unconditional_recursion)]
fn recurse(depth: u64, buf: &mut [u8; 1024]) -> u64 {
    let mut local = [0u8; 1024];
    local[(depth % 1024) as usize] = buf[0].wrapping_add(1);
    std::hint::black_box(&mut local);
    recurse(depth + 1, &mut local) + local[3] as u64
}

impl Misbehave {
    fn maybe_misbehave(&self, event: &str, obj: &Object) {
        if obj.name() != self.trigger || (self.on != "any" && self.on != event) {
            return;
        }
        match self.mode.as_str() {
            "loop" => {
                let mut x: u64 = 0;
                loop {
                    x = std::hint::black_box(x.wrapping_add(1));
                }
            }
            "alloc" => {
                let mut hog: Vec<Vec<u8>> = Vec::new();
                for _ in 0..1024 {
                    hog.push(vec![1u8; 1 << 20]);
                }
                std::hint::black_box(&hog);
            }
            "panic" => panic!("misbehave: panicking on {}", obj.name()),
            "stack" => {
                let mut buf = [0u8; 1024];
                std::hint::black_box(recurse(0, &mut buf));
            }
            "leak" => {
                // Raw handles (4 bytes each in guest memory), so the handle
                // cap, not the memory cap, is what stops it.
                use wink_sdk::bindings::wink::plugin::{cache, types};
                let pods = types::ResourceType {
                    api_version: "v1".into(),
                    kind: "Pod".into(),
                };
                loop {
                    let answer = cache::list(&pods, None, None).expect("list answers");
                    for i in 0..answer.objects.len() {
                        std::mem::forget(answer.objects.get(i));
                    }
                    std::mem::forget(answer.objects);
                }
            }
            "escape" => {
                match std::fs::read_to_string("/etc/passwd") {
                    Ok(text) => println!("escape: file read, {} bytes", text.len()),
                    Err(e) => println!("escape: file refused: {e}"),
                }
                match std::env::var("HOME") {
                    Ok(v) => println!("escape: env read, HOME={v}"),
                    Err(e) => println!(
                        "escape: env refused: {e} ({} variables)",
                        std::env::vars().count()
                    ),
                }
                match std::net::TcpStream::connect(self.target.as_str()) {
                    Ok(_) => println!("escape: socket connected to {}", self.target),
                    Err(e) => println!("escape: socket refused: {e}"),
                }
            }
            "flood" => {
                let line = "x".repeat(100);
                for i in 0..20_000 {
                    println!("flood {i} {line}");
                }
            }
            _ => {}
        }
    }
}

impl Handler for Misbehave {
    fn init(config: &str) -> Result<(Self, Registration), String> {
        // No config (e.g. under `wink dev`): defaults.
        let v: serde_json::Value = if config.trim().is_empty() {
            serde_json::Value::Object(Default::default())
        } else {
            serde_json::from_str(config).map_err(|e| format!("bad config: {e}"))?
        };
        let get = |k: &str, d: &str| v.get(k).and_then(|x| x.as_str()).unwrap_or(d).to_string();
        let me = Misbehave {
            mode: get("mode", "panic"),
            trigger: get("trigger", "bomb"),
            on: get("on", "any"),
            target: get("target", "127.0.0.1:6443"),
        };
        Ok((me, Registration::new().watch(Watch::new("v1", "Pod"))))
    }

    fn on_add(&mut self, obj: &Object, _in_initial_list: bool) {
        self.maybe_misbehave("add", obj);
        println!("OnAdd: {}", obj.name());
    }

    fn on_update(&mut self, _old: &Object, new: &Object) {
        self.maybe_misbehave("update", new);
        println!("OnUpdate: {}", new.name());
    }

    fn on_delete(&mut self, obj: &Object, _final_state_unknown: bool) {
        self.maybe_misbehave("delete", obj);
        println!("OnDelete: {}", obj.name());
    }
}

wink_sdk::export_plugin!(Misbehave);
