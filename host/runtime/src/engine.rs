//! [`WinkEngine`]: the one wasmtime engine every plugin shares, configured for
//! cheap calls (no component-model concurrency), with its epoch ticker
//! ([`super::ticker`]) that makes long calls yield and enforces call
//! deadlines; and its metered twin ([`WinkEngine::metered`]), whose code
//! counts fuel, for plugins under a fuel cap. Owns engine configuration and
//! [`Limits`]; knows nothing about plugins or informers.

use super::language::Language;
use super::ticker::{EpochTicker, RunningCall};
use std::sync::Arc;
use std::time::Duration;
use wasmtime::{Config, Engine, Strategy};

pub use super::ticker::EPOCH_TICK;

/// Per-plugin resource limits.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Wall-clock budget of one call into the guest.
    pub call_deadline: Duration,
    /// Linear memory cap of one instance, bytes.
    pub memory_bytes: usize,
    /// Whether `memory_bytes` is the default rather than the operator's
    /// choice: a language whose runtime needs more then gets its own
    /// default ([`Limits::for_language`]).
    pub memory_is_default: bool,
    /// The fuel of one call (about one unit per WebAssembly instruction),
    /// when capped; only an engine that [`WinkEngine::meters_fuel`] runs
    /// a plugin under such a cap.
    pub fuel: Option<u64>,
}

/// The memory cap of an instance unless the operator sets one.
pub const DEFAULT_MEMORY_BYTES: usize = 64 << 20;

/// The default for JavaScript. StarlingMonkey's SpiderMonkey collects its
/// heap only once it has grown well past what the handler keeps: a plugin
/// that `JSON.parse`s every ~4 KiB Pod levels off at ~150 MiB of linear
/// memory, and under a 64 MiB (128 MiB) cap it runs out after ~200,000
/// (~400,000) events (`tests/lang_memory.rs`).
pub const JAVASCRIPT_MEMORY_BYTES: usize = 256 << 20;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            call_deadline: Duration::from_secs(1),
            memory_bytes: DEFAULT_MEMORY_BYTES,
            memory_is_default: true,
            fuel: None,
        }
    }
}

impl Limits {
    /// These limits for a component in `language`: the language's own
    /// memory default where the operator set none. CPython frees as it
    /// goes (reference counting) and fits the common default.
    pub fn for_language(self, language: Language) -> Limits {
        match language {
            Language::JavaScript if self.memory_is_default => Limits {
                memory_bytes: self.memory_bytes.max(JAVASCRIPT_MEMORY_BYTES),
                ..self
            },
            _ => self,
        }
    }

    /// These limits, each made the tighter of it and `caps`' (a plugin's
    /// grant, [`crate::grants::PluginLimits`]): a memory cap given there
    /// holds whatever the language's default.
    pub fn with_caps(self, caps: crate::grants::Caps) -> Limits {
        Limits {
            call_deadline: caps
                .call_deadline
                .map_or(self.call_deadline, |d| d.min(self.call_deadline)),
            memory_bytes: caps
                .memory_bytes
                .map_or(self.memory_bytes, |m| m.min(self.memory_bytes)),
            memory_is_default: self.memory_is_default && caps.memory_bytes.is_none(),
            fuel: match (self.fuel, caps.fuel) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
        }
    }
}

/// Which compiler turns components into machine code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compiler {
    /// Optimizing: slow to compile (~0.6 s for a 1.7 MB Rust component on 2
    /// cores), fast code. What plugins run on.
    Cranelift,
    /// Baseline: ~5x faster to compile, code ~2.3x slower. Used to bring a
    /// changed plugin up at once while Cranelift works in the background.
    Winch,
}

/// What code compiled by an engine needs to run: the engine's compiler,
/// and whether it counts fuel. A component compiled for an engine of one
/// kind runs only on an engine of the same kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeKind {
    pub compiler: Compiler,
    pub fuel: bool,
}

/// The shared engine and its epoch ticker (which stops when the last clone
/// is dropped).
#[derive(Clone)]
pub struct WinkEngine {
    engine: Engine,
    compiler: Compiler,
    fuel: bool,
    ticker: Arc<EpochTicker>,
}

impl WinkEngine {
    /// Build the engine: component model, Cranelift, epoch interruption,
    /// concurrency support off (measured here: ~120 ns instead of ~450 ns per
    /// call).
    pub fn new() -> anyhow::Result<Self> {
        Self::with_compiler(Compiler::Cranelift)
    }

    /// An engine compiling with `compiler`, configured like [`WinkEngine::new`].
    pub fn with_compiler(compiler: Compiler) -> anyhow::Result<Self> {
        Self::build(compiler, false)
    }

    /// A Cranelift engine like [`WinkEngine::new`] whose code also counts
    /// fuel (wasmtime's `consume_fuel`): every guest of it runs each call
    /// on the fuel its [`Limits::fuel`] gives, and traps when it is spent.
    /// Counting costs every call of every guest compiled for it, so only
    /// plugins under a fuel cap are; a component compiled for one engine
    /// does not run on the other.
    pub fn metered() -> anyhow::Result<Self> {
        Self::build(Compiler::Cranelift, true)
    }

    fn build(compiler: Compiler, fuel: bool) -> anyhow::Result<Self> {
        let mut config = Config::new();
        config.consume_fuel(fuel);
        config.strategy(match compiler {
            Compiler::Cranelift => Strategy::Cranelift,
            Compiler::Winch => Strategy::Winch,
        });
        config.wasm_component_model(true);
        config.concurrency_support(false);
        config.epoch_interruption(true);
        // `WINK_PERFMAP=1` names guest functions for `perf` (see the README).
        if std::env::var_os("WINK_PERFMAP").is_some() {
            config.profiler(wasmtime::ProfilingStrategy::PerfMap);
        }
        let engine = Engine::new(&config)?;
        let ticker = Arc::new(EpochTicker::start(&engine)?);
        Ok(WinkEngine {
            engine,
            compiler,
            fuel,
            ticker,
        })
    }

    /// A call into a guest of this engine starts: its epoch ticks until the
    /// returned guard is dropped (every call must hold one, or it is never
    /// interrupted).
    pub fn call_started(&self) -> RunningCall<'_> {
        self.ticker.call_started()
    }

    /// Whether the epoch ticker sleeps (no call in progress).
    pub fn ticker_is_parked(&self) -> bool {
        self.ticker.is_parked()
    }

    /// The wasmtime engine.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The compiler it uses.
    pub fn compiler(&self) -> Compiler {
        self.compiler
    }

    /// The kind of code it compiles.
    pub fn code_kind(&self) -> CodeKind {
        CodeKind {
            compiler: self.compiler,
            fuel: self.fuel,
        }
    }

    /// Whether its guests count fuel ([`WinkEngine::metered`]).
    pub fn meters_fuel(&self) -> bool {
        self.fuel
    }

    /// Make `store` ready for a call of at most `limits`: its epoch
    /// deadline at the next tick (where the deadline callback decides),
    /// and, on a metered engine, its fuel refilled to the cap (none: as
    /// good as unlimited). Every call into a guest starts here.
    pub fn arm<T>(&self, store: &mut wasmtime::Store<T>, limits: &Limits) {
        store.set_epoch_deadline(1);
        if self.fuel {
            // Fails only on an engine without fuel, which this is not.
            let _ = store.set_fuel(limits.fuel.unwrap_or(u64::MAX));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn javascript_gets_its_own_default_and_an_operators_cap_holds_for_all() {
        let default = Limits::default();
        assert_eq!(
            default.for_language(Language::JavaScript).memory_bytes,
            JAVASCRIPT_MEMORY_BYTES
        );
        for language in [Language::Python, Language::Rust, Language::Unknown] {
            assert_eq!(default.for_language(language).memory_bytes, DEFAULT_MEMORY_BYTES);
        }
        let set = Limits {
            memory_bytes: 32 << 20,
            memory_is_default: false,
            ..Limits::default()
        };
        for language in [
            Language::JavaScript,
            Language::Python,
            Language::Rust,
            Language::Unknown,
        ] {
            assert_eq!(set.for_language(language).memory_bytes, 32 << 20, "{language:?}");
        }
    }
}
