//! The wasmtime engine every policy runs on: one `Engine` with epoch
//! interruption, the linker each world is instantiated with, the per-call
//! limits, and the guest's store state (a WASI context that grants nothing).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use wasmtime::component::{Linker, ResourceTable};
use wasmtime::{Config, Engine, Store, StoreLimits, StoreLimitsBuilder};
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use super::bindings;

/// How often the epoch advances. A call's deadline is counted in these ticks,
/// so a runaway policy is stopped within one tick of its deadline.
const EPOCH_TICK: Duration = Duration::from_millis(1);

/// Limits applied to every policy call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallLimits {
    /// Wall time one call may take before it is interrupted.
    pub timeout: Duration,
    /// The most linear memory one policy instance may grow to, in bytes.
    pub memory_bytes: usize,
}

impl Default for CallLimits {
    /// 500 ms and 256 MiB: far above what a well-behaved policy needs for a
    /// 10,000-node snapshot, low enough that a runaway one is caught quickly.
    fn default() -> Self {
        CallLimits {
            timeout: Duration::from_millis(500),
            memory_bytes: 256 << 20,
        }
    }
}

/// What a policy's store holds: its name for the log, a WASI context that
/// grants nothing, and its memory limits.
pub struct GuestState {
    pub policy_name: Arc<str>,
    wasi: WasiCtx,
    table: ResourceTable,
    limits: StoreLimits,
}

impl WasiView for GuestState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// The shared engine and linker. Cheap to clone.
#[derive(Clone)]
pub struct PolicyEngine {
    engine: Engine,
    linker: Arc<Linker<GuestState>>,
    limits: CallLimits,
}

impl std::fmt::Debug for PolicyEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyEngine")
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl PolicyEngine {
    /// Creates the engine and starts the thread that advances its epoch.
    pub fn new(limits: CallLimits) -> anyhow::Result<Self> {
        let mut config = Config::new();
        config.epoch_interruption(true);
        config.wasm_component_model(true);
        // For `perf`: WEFT_POLICY_PROFILER=perfmap names the policies'
        // compiled functions in /tmp/perf-PID.map (jitdump: for perf inject).
        match std::env::var("WEFT_POLICY_PROFILER").as_deref() {
            Ok("perfmap") => {
                config.profiler(wasmtime::ProfilingStrategy::PerfMap);
            }
            Ok("jitdump") => {
                config.profiler(wasmtime::ProfilingStrategy::JitDump);
            }
            _ => {}
        }
        let engine = Engine::new(&config)
            .map_err(|e| anyhow::anyhow!("cannot create the wasmtime engine: {e:#}"))?;

        let mut linker = Linker::new(&engine);
        // WASI is linked so std-built guests instantiate; the context grants
        // no files, network, environment or clock beyond what WASI cannot omit.
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)
            .and_then(|()| bindings::add_host_imports(&mut linker))
            .map_err(|e| anyhow::anyhow!("cannot link the policy imports: {e:#}"))?;

        let ticker = engine.weak();
        std::thread::Builder::new()
            .name("weft-policy-epoch".into())
            .spawn(move || {
                while let Some(engine) = ticker.upgrade() {
                    engine.increment_epoch();
                    drop(engine);
                    std::thread::sleep(EPOCH_TICK);
                }
            })?;

        Ok(PolicyEngine {
            engine,
            linker: Arc::new(linker),
            limits,
        })
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    pub fn linker(&self) -> &Linker<GuestState> {
        &self.linker
    }

    pub fn limits(&self) -> CallLimits {
        self.limits
    }

    /// A fresh store for one instance of the policy `policy_name`.
    pub fn new_store(&self, policy_name: Arc<str>) -> Store<GuestState> {
        let wasi = WasiCtx::builder()
            .stdout(GuestOutput {
                policy: policy_name.clone(),
                stream: "stdout",
            })
            .stderr(GuestOutput {
                policy: policy_name.clone(),
                stream: "stderr",
            })
            .build();
        let limits = StoreLimitsBuilder::new()
            .memory_size(self.limits.memory_bytes)
            .trap_on_grow_failure(true)
            .build();
        let mut store = Store::new(
            &self.engine,
            GuestState {
                policy_name,
                wasi,
                table: ResourceTable::new(),
                limits,
            },
        );
        store.limiter(|state| &mut state.limits);
        store.epoch_deadline_trap();
        store
    }

    /// Arms the deadline for the next call on `store`.
    pub fn arm_deadline(&self, store: &mut Store<GuestState>) {
        let ticks = (self.limits.timeout.as_millis() / EPOCH_TICK.as_millis()).max(1);
        store.set_epoch_deadline(ticks as u64);
    }
}

/// A guest's stdout or stderr, written line by line into tracing.
#[derive(Clone)]
struct GuestOutput {
    policy: Arc<str>,
    stream: &'static str,
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
}

impl tokio::io::AsyncWrite for GuestOutput {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        for line in String::from_utf8_lossy(buf)
            .lines()
            .filter(|line| !line.trim().is_empty())
        {
            tracing::info!(target: "weft::policy::guest", policy = &*self.policy, stream = self.stream, "{line}");
        }
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
