//! The wasmtime engine every policy runs on: one `Engine` with epoch
//! interruption, the linker each world is instantiated with, the per-call
//! limits, the guest's store state (a WASI context that grants nothing and
//! whose clocks and randomness are the host's, deterministic per call), and
//! compilation, reusing code compiled before (in memory, then on disk).

use std::convert::Infallible;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{
    Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store, StoreContextMut,
    StoreLimits, StoreLimitsBuilder,
};
use wasmtime_wasi::{HostMonotonicClock, HostWallClock, WasiCtx, WasiCtxView, WasiView};

use super::CallError;
use super::bindings;
use super::cache::CompileCache;
use super::output::{GuestOutputTail, Stream};
use super::stats::{CompileCounters, CompileCounts};
use crate::clock::Clock;
use crate::config::{CallLimits, PolicySettings};

/// How often the epoch advances. A call's deadline is counted in these ticks,
/// so a runaway policy is stopped within one tick of its deadline.
const EPOCH_TICK: Duration = Duration::from_millis(1);

/// The most random bytes a guest may ask for in one call to wasi:random.
const MAX_RANDOM_BYTES: u64 = 64 << 10;

/// How many policy instances live at once by default: each version in a
/// slot keeps one warm instance (the active one, up to five standbys, a
/// shadow), so this covers the three kinds and a few dozen queues' own
/// sharing slots. Each instance's linear memory reserves 4 GiB of address
/// space (none of it resident until used), so 256 reserve 1 TiB.
pub(super) const INSTANCE_POOL_DEFAULT: u32 = 256;

/// Core instances a component may bring on average (a Rust policy has one
/// or two, a Python one about ten): they cost no memory until used, so the
/// pool allows plenty.
const CORE_INSTANCES_PER_COMPONENT: u32 = 32;

/// The bytes of a pooled instance's tables kept mapped when it is dropped:
/// reset in place, so the next instance in its slot starts without page
/// faults.
const TABLE_KEEP_RESIDENT_BYTES: usize = 2 << 20;

/// The same for its linear memory: the first bytes, set back to the
/// module's image with `memset` and `memcpy`; the rest is unmapped. A
/// bundled policy's memory starts at one 64 KiB page (its stack is 32 KiB,
/// see .cargo/config.toml), so this covers it and its first growth. Linux's
/// PAGEMAP_SCAN (finding only the pages written) costs more than copying
/// that much: about 2 µs a reset against 1. The price is paid by policies
/// with memories of many MiB (Python, JavaScript): the pages beyond this
/// come back by page faults at the next instantiation, about 0.2 ms more
/// for a Python one (BENCHMARKS.md). wasmtime sets this per engine.
const MEMORY_KEEP_RESIDENT_BYTES: usize = 128 << 10;

/// What a policy's store holds: its name for the log, a WASI context that
/// grants nothing, what the guest reads of time and chance in the current
/// call, its memory limits, and what it wrote lately.
pub struct GuestState {
    pub policy_name: Arc<str>,
    /// Made at the guest's first WASI call: most calls make none, and
    /// building one (its default random generators seeded, then replaced)
    /// was most of a new store's cost, paid at every instantiation.
    wasi: Option<WasiCtx>,
    call: Arc<CallInputs>,
    table: ResourceTable,
    limits: StoreLimits,
    output: GuestOutputTail,
}

impl GuestState {
    /// Keeps a `host::log` message with the guest's recent output.
    pub(super) fn capture_log(&self, level: impl std::fmt::Debug, message: &str) {
        self.output.log(level, message);
    }
}

impl WasiView for GuestState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        let (output, call) = (&self.output, &self.call);
        WasiCtxView {
            ctx: self.wasi.get_or_insert_with(|| guest_wasi(output, call)),
            table: &mut self.table,
        }
    }
}

/// The WASI context of a guest: its output captured, its clocks and
/// randomness the call's (see [`CallInputs`]), nothing else granted.
fn guest_wasi(output: &GuestOutputTail, call: &Arc<CallInputs>) -> WasiCtx {
    WasiCtx::builder()
        .stdout(output.stream(Stream::Stdout))
        .stderr(output.stream(Stream::Stderr))
        .wall_clock(GuestWallClock(call.clone()))
        .monotonic_clock(GuestMonotonicClock(call.clone()))
        .secure_random(GuestRandom(call.clone()))
        .insecure_random(GuestRandom(call.clone()))
        // One request for random bytes may not make the host allocate
        // more than a policy needs (wasmtime-wasi's default is 64 MiB).
        .max_random_size(MAX_RANDOM_BYTES)
        .build()
}

/// The error of a call on `store` that failed with `error`, telling what the
/// guest wrote before it failed.
pub(super) fn call_failed(store: &Store<GuestState>, error: wasmtime::Error) -> CallError {
    store
        .data()
        .output
        .attach_to(CallError::from_wasmtime(error))
}

/// The shared engine and linker. Cheap to clone.
#[derive(Clone)]
pub struct PolicyEngine {
    engine: Engine,
    linker: Arc<Linker<GuestState>>,
    limits: CallLimits,
    /// The time guests read: the host's own clock (the wall clock in
    /// `serve`, virtual time in `replay` and `simulate`).
    clock: Arc<dyn Clock>,
    /// Components compiled lately, by their bytes' sha256, newest last: a
    /// standby compiles what it will put in force while it waits, so a
    /// takeover does not wait for the compiler; a load of bytes seen before
    /// skips it too.
    compiled: Arc<Mutex<Compiled>>,
    /// Compiled components on disk, which outlive the process.
    disk: Option<Arc<CompileCache>>,
    counters: Arc<CompileCounters>,
}

/// A compiled component and the sha256 of the bytes it was compiled from,
/// which names its version and seeds its calls (hashed once per load: a
/// Python policy is 19 MB, about 50 ms of sha256 on these machines).
#[derive(Clone)]
pub struct CompiledComponent {
    /// The compiled code, ready to type-check and instantiate.
    pub component: Component,
    /// The sha256 of the component's bytes (raw, not hex).
    pub sha256: [u8; 32],
}

/// Compiled components by their bytes' sha256, newest last.
type Compiled = std::collections::VecDeque<([u8; 32], Component)>;

/// How many compiled components the engine keeps in memory for reuse, and
/// how many bytes of code at most (the newest is kept whatever its size).
const COMPILED_KEPT: usize = 8;
const COMPILED_KEPT_BYTES: usize = 256 << 20;

impl std::fmt::Debug for PolicyEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyEngine")
            .field("limits", &self.limits)
            .field("clock", &self.clock)
            .field("disk", &self.disk)
            .finish_non_exhaustive()
    }
}

/// The bytes of compiled code `component` holds in memory.
pub(super) fn code_bytes(component: &Component) -> usize {
    let image = component.image_range();
    image.end.addr().saturating_sub(image.start.addr())
}

impl PolicyEngine {
    /// Creates the engine, whose guests read `clock`, and starts the thread
    /// that advances its epoch. Where the host has no clock of its own
    /// (`weft policy check`, `bench`), pass a `VirtualClock` that stays at 0.
    /// It keeps compiled code in memory only.
    pub fn new(limits: CallLimits, clock: Arc<dyn Clock>) -> anyhow::Result<Self> {
        PolicyEngine::build(limits, clock, None, INSTANCE_POOL_DEFAULT)
    }

    /// The engine `settings` describe: their call limits, and compiled code
    /// kept on disk in `compile_cache_dir`, or the user's cache directory
    /// when that is not set. A cache that cannot be opened is logged and
    /// left out: it only saves time.
    pub fn from_settings(settings: &PolicySettings, clock: Arc<dyn Clock>) -> anyhow::Result<Self> {
        let dir = settings
            .compile_cache_dir
            .clone()
            .or_else(CompileCache::user_dir);
        let cache = match dir {
            Some(dir) if settings.compile_cache_bytes > 0 => {
                Some((dir, settings.compile_cache_bytes))
            }
            _ => None,
        };
        let cache = cache.as_ref().map(|(dir, bytes)| (dir.as_path(), *bytes));
        PolicyEngine::build(settings.limits, clock, cache, settings.instance_pool)
    }

    /// As [`new`](Self::new), keeping compiled code also in `cache`: a
    /// directory and the most bytes it may hold.
    pub fn with_compile_cache(
        limits: CallLimits,
        clock: Arc<dyn Clock>,
        cache: Option<(&Path, u64)>,
    ) -> anyhow::Result<Self> {
        PolicyEngine::build(limits, clock, cache, INSTANCE_POOL_DEFAULT)
    }

    /// The engine, instances allocated from a pool of `instance_pool`
    /// (0: each on demand).
    fn build(
        limits: CallLimits,
        clock: Arc<dyn Clock>,
        cache: Option<(&Path, u64)>,
        instance_pool: u32,
    ) -> anyhow::Result<Self> {
        let mut config = Config::new();
        config.epoch_interruption(true);
        config.wasm_component_model(true);
        // Policies are called synchronously. The data structures for
        // concurrent guests (component-model-async) made every synchronous
        // component call 50 to 100 times slower in wasmtime 43+: off, even
        // if a dependency turns the Cargo feature on.
        config.concurrency_support(false);
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
        let engine = engine_with_pool(config, limits, instance_pool)?;

        let mut linker = Linker::new(&engine);
        // WASI is linked so std-built guests instantiate; the context grants
        // no files, network or environment, and its clocks and randomness
        // are the host's (see `guest_wasi`).
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)
            .and_then(|()| bindings::add_host_imports(&mut linker))
            .and_then(|()| shadow_wasi_imports(&mut linker))
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

        let disk = cache.and_then(|(dir, max_bytes)| {
            CompileCache::open(dir, max_bytes, &engine)
                .inspect_err(|error| tracing::warn!(%error, "policies are compiled at every load"))
                .ok()
                .map(Arc::new)
        });

        Ok(PolicyEngine {
            engine,
            linker: Arc::new(linker),
            limits,
            clock,
            compiled: Default::default(),
            disk,
            counters: Default::default(),
        })
    }

    /// `bytes` compiled: the component compiled from the same bytes lately
    /// if this engine still holds it, else the one the disk cache holds,
    /// else compiled now (and kept in both).
    pub fn compile(&self, bytes: &[u8]) -> wasmtime::Result<CompiledComponent> {
        use sha2::Digest;
        let sha256: [u8; 32] = sha2::Sha256::digest(bytes).into();
        if let Some(component) = self.compiled_lately(&sha256) {
            self.counters.record_memory_hit();
            return Ok(CompiledComponent { component, sha256 });
        }
        // Outside the lock: reading takes milliseconds, compiling seconds.
        let component = match self
            .disk
            .as_ref()
            .and_then(|disk| disk.load(&self.engine, &sha256))
        {
            Some(component) => {
                self.counters.record_disk_hit();
                component
            }
            None => {
                let started = Instant::now();
                let component = Component::new(&self.engine, bytes)?;
                self.counters.record_compiled();
                tracing::info!(
                    ms = started.elapsed().as_millis() as u64,
                    code_bytes = code_bytes(&component),
                    "policy component compiled"
                );
                if let Some(disk) = &self.disk {
                    disk.store(&sha256, &component);
                }
                component
            }
        };
        self.keep_compiled(sha256, &component);
        Ok(CompiledComponent { component, sha256 })
    }

    fn compiled_lately(&self, sha256: &[u8; 32]) -> Option<Component> {
        let compiled = self.compiled.lock().unwrap_or_else(|p| p.into_inner());
        compiled
            .iter()
            .find(|(sha, _)| sha == sha256)
            .map(|(_, component)| component.clone())
    }

    /// Keeps `component` as the newest in memory, letting the oldest go
    /// beyond [`COMPILED_KEPT`] components or [`COMPILED_KEPT_BYTES`].
    fn keep_compiled(&self, sha256: [u8; 32], component: &Component) {
        let mut compiled = self.compiled.lock().unwrap_or_else(|p| p.into_inner());
        if compiled.iter().any(|(sha, _)| *sha == sha256) {
            return;
        }
        compiled.push_back((sha256, component.clone()));
        let mut bytes: usize = compiled.iter().map(|(_, c)| code_bytes(c)).sum();
        while compiled.len() > 1 && (compiled.len() > COMPILED_KEPT || bytes > COMPILED_KEPT_BYTES)
        {
            if let Some((_, oldest)) = compiled.pop_front() {
                bytes = bytes.saturating_sub(code_bytes(&oldest));
            }
        }
    }

    /// How this engine came by the components it compiled so far.
    pub fn compile_counts(&self) -> CompileCounts {
        self.counters.read()
    }

    /// The disk cache of compiled code, if this engine keeps one.
    pub fn compile_cache_dir(&self) -> Option<&Path> {
        self.disk.as_deref().map(CompileCache::dir)
    }

    /// The wasmtime engine every component is compiled for and run on.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The linker every world is instantiated with: WASI that grants
    /// nothing, the host's clocks and randomness, and the `host` import.
    pub fn linker(&self) -> &Linker<GuestState> {
        &self.linker
    }

    /// The time and memory each call may take
    /// (`weft.policy.call-timeout-ms`, `weft.policy.memory-limit-mb`).
    pub fn limits(&self) -> CallLimits {
        self.limits
    }

    /// A fresh store for one instance of the policy `policy_name`. Its WASI
    /// context is made at the guest's first WASI call (`guest_wasi`); its
    /// clocks and random generators read the store's [`CallInputs`], which
    /// [`begin_call`](Self::begin_call) sets before every call.
    pub fn new_store(&self, policy_name: Arc<str>) -> Store<GuestState> {
        let call = Arc::new(CallInputs::default());
        let output = GuestOutputTail::new(policy_name.clone());
        let limits = StoreLimitsBuilder::new()
            .memory_size(self.limits.memory_bytes)
            .trap_on_grow_failure(true)
            .build();
        let mut store = Store::new(
            &self.engine,
            GuestState {
                policy_name,
                wasi: None,
                call,
                table: ResourceTable::new(),
                limits,
                output,
            },
        );
        store.limiter(|state| &mut state.limits);
        store.epoch_deadline_trap();
        store
    }

    /// Prepares `store` for its next call: arms the deadline, freezes the
    /// guest's clocks at the host clock's time now, and seeds its random
    /// generator with `seed` (see [`call_seed`]).
    pub fn begin_call(&self, store: &mut Store<GuestState>, seed: u64) {
        let ticks = (self.limits.timeout.as_millis() / EPOCH_TICK.as_millis()).max(1);
        store.set_epoch_deadline(ticks as u64);
        store.data().call.begin(self.clock.now_ms(), seed);
    }
}

/// The engine `config` describes, its instances allocated from a pool of
/// `instance_pool` (0: on demand). Pooled, an instance takes memory and
/// tables prepared before (a Rust policy instantiates in microseconds, not
/// tens of them); a host whose address space cannot hold the pool (a low
/// `ulimit -v`) gets instances on demand instead, with a warning.
fn engine_with_pool(
    mut config: Config,
    limits: CallLimits,
    instance_pool: u32,
) -> anyhow::Result<Engine> {
    let cannot = |e: wasmtime::Error| anyhow::anyhow!("cannot create the wasmtime engine: {e:#}");
    if instance_pool > 0 {
        let mut pool = PoolingAllocationConfig::new();
        pool.total_component_instances(instance_pool)
            .total_core_instances(instance_pool.saturating_mul(CORE_INSTANCES_PER_COMPONENT))
            .total_memories(instance_pool)
            .total_tables(instance_pool.saturating_mul(4))
            // Calls are synchronous: no fiber stacks are taken from the pool.
            .total_stacks(1)
            // The store's own limit (`memory-limit-mb`, at most 4096) is
            // the one a guest meets; the pool's slots are that big.
            .max_memory_size(limits.memory_bytes)
            // A reused slot is reset in place rather than unmapped: no page
            // faults and no TLB shootdowns on the next instantiation.
            .linear_memory_keep_resident(MEMORY_KEEP_RESIDENT_BYTES)
            .table_keep_resident(TABLE_KEEP_RESIDENT_BYTES)
            .pagemap_scan(wasmtime::Enabled::No);
        config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        match Engine::new(&config) {
            Ok(engine) => return Ok(engine),
            Err(error) => tracing::warn!(
                error = format!("{error:#}"),
                instance_pool,
                "the policy instance pool cannot be reserved; instances are allocated on demand (weft.policy.instance-pool=0 says so without trying)"
            ),
        }
        config.allocation_strategy(InstanceAllocationStrategy::OnDemand);
    }
    Engine::new(&config).map_err(cannot)
}

/// The seed of call number `call` of the code whose seed is `code_seed` (the
/// first bytes of its sha256): the same code making the same calls gets the
/// same random bytes, so two replays of one log agree to the credit.
pub(super) fn call_seed(code_seed: u64, call: u64) -> u64 {
    splitmix64_mix(code_seed ^ splitmix64_mix(call))
}

/// What a guest reads of time and chance during one call. The host sets it
/// at the start of every call ([`PolicyEngine::begin_call`]); the store's
/// WASI clocks and random generators read it. It is shared (`Arc`) because
/// the WASI context owns those and offers no way to reach them afterwards.
#[derive(Debug, Default)]
struct CallInputs {
    /// The host clock when the call began, in ms since the Unix epoch.
    /// Frozen for the call, so a call is a function of its inputs.
    wall_ms: AtomicU64,
    /// The monotonic clock, in ns: the same time, but never below what an
    /// earlier call of this instance read (the wall clock may step back).
    monotonic_ns: AtomicU64,
    /// The state of the call's SplitMix64 generator.
    random: AtomicU64,
}

/// SplitMix64's increment (Steele, Lea and Flood, 2014).
const SPLITMIX64_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

impl CallInputs {
    fn begin(&self, now_ms: u64, seed: u64) {
        self.wall_ms.store(now_ms, Ordering::Relaxed);
        self.monotonic_ns
            .fetch_max(now_ms.saturating_mul(1_000_000), Ordering::Relaxed);
        self.random.store(seed, Ordering::Relaxed);
    }

    /// The next number of the call's generator: SplitMix64, whose whole
    /// state is one u64 that the host sets before each call, so the bytes a
    /// guest draws depend only on the seed and on how many it drew before.
    /// It is statistically good and NOT secure: anyone who knows the code
    /// and the call can compute it. Policies hold no secrets, so they need
    /// none; what they need is that a replay gives the same answer.
    fn next_random(&self) -> u64 {
        let state = self
            .random
            .fetch_add(SPLITMIX64_GAMMA, Ordering::Relaxed)
            .wrapping_add(SPLITMIX64_GAMMA);
        splitmix64_mix(state)
    }
}

/// SplitMix64's output function: a bijection of u64 that scatters its input.
fn splitmix64_mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// `wasi:clocks/wall-clock` for a guest: the host clock, frozen per call.
struct GuestWallClock(Arc<CallInputs>);

impl HostWallClock for GuestWallClock {
    fn resolution(&self) -> Duration {
        Duration::from_millis(1)
    }

    fn now(&self) -> Duration {
        Duration::from_millis(self.0.wall_ms.load(Ordering::Relaxed))
    }
}

/// `wasi:clocks/monotonic-clock` for a guest: the host clock in ns, frozen
/// per call and never going back.
struct GuestMonotonicClock(Arc<CallInputs>);

impl HostMonotonicClock for GuestMonotonicClock {
    fn resolution(&self) -> u64 {
        1_000_000
    }

    fn now(&self) -> u64 {
        self.0.monotonic_ns.load(Ordering::Relaxed)
    }
}

/// `wasi:random/random` and `wasi:random/insecure` for a guest: both draw
/// from the call's seeded generator ([`CallInputs::next_random`]).
struct GuestRandom(Arc<CallInputs>);

impl rand_core::TryRng for GuestRandom {
    type Error = Infallible;

    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        Ok((self.0.next_random() >> 32) as u32)
    }

    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        Ok(self.0.next_random())
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        for chunk in dst.chunks_mut(8) {
            let bytes = self.0.next_random().to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
        Ok(())
    }
}

/// The version of the WASI interfaces wasmtime-wasi links (its
/// `src/p2/wit/deps`). Guests built against any 0.2.x resolve to these.
/// If an upgrade changes it and this is not updated, the shadows below no
/// longer apply: the tests of deterministic seeds and of sleeping fail.
const WASI_VERSION: &str = "0.2.12";

/// Replaces the WASI imports the context cannot configure:
///
/// - `wasi:random/insecure-seed` draws from the call's generator, like the
///   other random sources (the context's own is a fixed random number), so
///   hash maps seeded from it (Rust's `RandomState`) are deterministic too.
/// - `wasi:clocks/monotonic-clock`'s `subscribe-duration` and
///   `subscribe-instant` (how a guest sleeps) trap: a sleep would block the
///   host's thread in real time where the epoch deadline cannot stop it,
///   and a policy has nothing to wait for.
fn shadow_wasi_imports(linker: &mut Linker<GuestState>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    linker
        .instance(&format!("wasi:random/insecure-seed@{WASI_VERSION}"))?
        .func_wrap(
            "insecure-seed",
            |store: StoreContextMut<'_, GuestState>, (): ()| {
                let call = &store.data().call;
                Ok(((call.next_random(), call.next_random()),))
            },
        )?;
    let mut monotonic = linker.instance(&format!("wasi:clocks/monotonic-clock@{WASI_VERSION}"))?;
    for name in ["subscribe-duration", "subscribe-instant"] {
        monotonic.func_new(name, move |store, _, _, _| {
            Err(wasmtime::Error::msg(format!(
                "policy {} tried to sleep (wasi:clocks/monotonic-clock.{name}); policies may not sleep or wait",
                store.data().policy_name
            )))
        })?;
    }
    linker.allow_shadowing(false);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concurrency_support_is_off() {
        let clock: Arc<dyn Clock> = Arc::new(crate::clock::VirtualClock::default());
        let engine = PolicyEngine::new(CallLimits::default(), clock).unwrap();
        assert!(!engine.engine().get_concurrency_support());
    }

    #[test]
    fn the_monotonic_clock_never_goes_back() {
        let inputs = CallInputs::default();
        inputs.begin(5_000, 1);
        // The wall clock stepped back between calls.
        inputs.begin(3_000, 1);
        assert_eq!(inputs.wall_ms.load(Ordering::Relaxed), 3_000);
        assert_eq!(inputs.monotonic_ns.load(Ordering::Relaxed), 5_000_000_000);
    }

    #[test]
    fn the_generator_depends_only_on_its_seed() {
        let draw =
            |inputs: &CallInputs| -> Vec<u64> { (0..4).map(|_| inputs.next_random()).collect() };
        let (one, two) = (CallInputs::default(), CallInputs::default());
        one.begin(0, call_seed(7, 0));
        two.begin(99, call_seed(7, 0));
        let first = draw(&one);
        assert_eq!(first, draw(&two));
        // Seeding again starts the same sequence again.
        one.begin(0, call_seed(7, 0));
        assert_eq!(first, draw(&one));
        // Another call, or other code, draws other numbers.
        one.begin(0, call_seed(7, 1));
        assert_ne!(first, draw(&one));
        one.begin(0, call_seed(8, 0));
        assert_ne!(first, draw(&one));
    }

    #[test]
    fn random_bytes_are_the_generators_numbers_in_order() {
        let inputs = Arc::new(CallInputs::default());
        inputs.begin(0, 42);
        let words: Vec<u64> = (0..2).map(|_| inputs.next_random()).collect();
        inputs.begin(0, 42);
        let mut bytes = [0u8; 12];
        rand_core::TryRng::try_fill_bytes(&mut GuestRandom(inputs.clone()), &mut bytes).unwrap();
        assert_eq!(bytes[..8], words[0].to_le_bytes());
        assert_eq!(bytes[8..], words[1].to_le_bytes()[..4]);
    }
}
