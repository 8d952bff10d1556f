//! Compiled policy code kept on disk: a restarted server reads its policies
//! back instead of compiling them, a damaged entry is compiled again (never
//! fatal), an engine of another configuration never reads another's code,
//! the directory stays within its bound, and `weft policy check` compiles a
//! component once.

use std::path::Path;
use std::sync::Arc;

use sha2::Digest;
use weft_host::clock::VirtualClock;
use weft_host::config::CallLimits;
use weft_host::config::Settings;
use weft_host::policy::{CompileCache, PolicyEngine, builtin, inspect};

use crate::support::{Server, weft};

/// The value of the counter `name` in a /metrics text.
fn counter(metrics: &str, name: &str) -> u64 {
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in\n{metrics}"))
}

/// (hits, misses, discarded) of the server's compile cache since it started.
fn cache_counts(server: &Server) -> (u64, u64, u64) {
    let text = server.metrics();
    (
        counter(&text, "weft_policy_compile_cache_hits_total"),
        counter(&text, "weft_policy_compile_cache_misses_total"),
        counter(&text, "weft_policy_compile_cache_discarded_total"),
    )
}

/// The entries of a compile cache directory.
fn entries(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "cwasm"))
        .collect();
    entries.sort();
    entries
}

/// Every kind has an active policy.
fn assert_all_active(server: &Server) {
    let (status, body) = server.get("/ws/v1/policies");
    assert_eq!(status, 200, "{body}");
    for kind in ["scheduling", "pricing", "sharing"] {
        assert!(
            body[kind]["active"]["name"].is_string(),
            "no active {kind} policy: {body}"
        );
    }
}

#[test]
fn a_restarted_server_reads_its_policies_compiled_from_the_data_dir() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let cache = data.join("compiled");

    let server = Server::start_in(&data, &[]);
    assert_all_active(&server);
    let (hits, misses, _) = cache_counts(&server);
    assert_eq!(hits, 0, "a new data dir has nothing cached");
    assert!(misses >= 3, "the three default policies were compiled");
    let written = entries(&cache);
    assert_eq!(written.len(), 3, "one entry per component: {written:?}");
    server.stop();

    let server = Server::start_in(&data, &[]);
    assert_all_active(&server);
    let (hits, misses, discarded) = cache_counts(&server);
    assert_eq!(
        (hits, misses, discarded),
        (3, 0, 0),
        "the restart compiled nothing"
    );
    assert_eq!(entries(&cache), written);
}

#[test]
fn a_damaged_cache_entry_is_compiled_again_and_the_server_starts() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let cache = data.join("compiled");
    Server::start_in(&data, &[]).stop();
    let written = entries(&cache);
    assert_eq!(written.len(), 3, "{written:?}");

    // One entry with a flipped byte, one truncated, one replaced by junk.
    let mut flipped = std::fs::read(&written[0]).unwrap();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0xff;
    std::fs::write(&written[0], flipped).unwrap();
    let truncated = std::fs::read(&written[1]).unwrap();
    std::fs::write(&written[1], &truncated[..truncated.len() / 3]).unwrap();
    std::fs::write(&written[2], b"not compiled code").unwrap();

    let server = Server::start_in(&data, &[]);
    assert_all_active(&server);
    let (hits, _, discarded) = cache_counts(&server);
    assert_eq!(
        (hits, discarded),
        (0, 3),
        "every damaged entry was discarded"
    );
    server.stop();

    // Compiled again and written again, intact.
    let server = Server::start_in(&data, &[]);
    assert_all_active(&server);
    assert_eq!(cache_counts(&server), (3, 0, 0));
}

#[test]
fn an_engine_of_another_configuration_never_reads_anothers_code() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = builtin("flat-pricing").unwrap();
    let sha256: [u8; 32] = sha2::Sha256::digest(bytes).into();
    let weft_engine = PolicyEngine::with_compile_cache(
        CallLimits::default(),
        Arc::new(VirtualClock::default()),
        Some((dir.path(), 64 << 20)),
    )
    .unwrap();
    weft_engine.compile(bytes).unwrap();
    assert_eq!(weft_engine.compile_counts().compiled, 1);
    assert_eq!(entries(dir.path()).len(), 1);

    // The same cache read by an engine that generates other code (fuel
    // metering instruments every function).
    let mut config = wasmtime::Config::new();
    config.wasm_component_model(true).consume_fuel(true);
    let other = wasmtime::Engine::new(&config).unwrap();
    let cache = CompileCache::open(dir.path(), 64 << 20, &other).unwrap();
    assert!(
        cache.load(&other, &sha256).is_none(),
        "another configuration must miss"
    );
    let compiled = wasmtime::component::Component::new(&other, bytes).unwrap();
    cache.store(&sha256, &compiled);
    assert_eq!(
        entries(dir.path()).len(),
        2,
        "each configuration has its own entry"
    );
    assert!(cache.load(&other, &sha256).is_some());

    // And weft's own engine still reads its own.
    let again = PolicyEngine::with_compile_cache(
        CallLimits::default(),
        Arc::new(VirtualClock::default()),
        Some((dir.path(), 64 << 20)),
    )
    .unwrap();
    again.compile(bytes).unwrap();
    let counts = again.compile_counts();
    assert_eq!((counts.compiled, counts.disk_hits), (0, 1));
}

#[test]
fn the_cache_stays_within_its_bound() {
    let dir = tempfile::tempdir().unwrap();
    let engine = PolicyEngine::new(CallLimits::default(), Arc::new(VirtualClock::default()))
        .unwrap()
        .engine()
        .clone();
    let names = ["flat-pricing", "hops-pricing", "fifo"];
    let compiled: Vec<_> = names
        .iter()
        .map(|name| {
            let bytes = builtin(name).unwrap();
            let sha256: [u8; 32] = sha2::Sha256::digest(bytes).into();
            let component = wasmtime::component::Component::new(&engine, bytes).unwrap();
            let size = component.serialize().unwrap().len() as u64;
            (sha256, component, size)
        })
        .collect();
    // Room for the two largest entries (with their headers), not three.
    let mut sizes: Vec<u64> = compiled.iter().map(|c| c.2 + 64).collect();
    sizes.sort();
    let bound = sizes[1] + sizes[2];
    let cache = CompileCache::open(dir.path(), bound, &engine).unwrap();
    for (sha256, component, _) in &compiled {
        cache.store(sha256, component);
        // Distinct modification times, so "least recently used" is defined.
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let total: u64 = entries(dir.path())
        .iter()
        .map(|path| std::fs::metadata(path).unwrap().len())
        .sum();
    assert!(total <= bound, "{total} bytes cached, bound {bound}");
    assert!(
        cache.load(&engine, &compiled[0].0).is_none(),
        "the oldest went first"
    );
    assert!(cache.load(&engine, &compiled[2].0).is_some());
}

#[test]
fn check_compiles_a_component_once() {
    let engine =
        PolicyEngine::new(CallLimits::default(), Arc::new(VirtualClock::default())).unwrap();
    let settings = Settings::default();
    let version = inspect(
        &engine,
        "builtin:capacity",
        builtin("capacity").unwrap(),
        &settings.pricing_params,
        &[],
    )
    .unwrap();
    assert_eq!(version.info.name, "capacity");
    let counts = engine.compile_counts();
    assert_eq!(counts.compiled, 1, "{counts:?}");
    // Prepared from the compiled component itself: no second lookup (nor
    // a second sha256 of the bytes).
    assert_eq!(counts.memory_hits, 0, "{counts:?}");
}

#[test]
fn check_says_when_it_read_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let at = format!("weft.policy.compile-cache-dir={}", dir.path().display());
    let check = || weft(&["policy", "check", "builtin:flat-pricing", "--set", &at]);
    let first = check();
    assert!(first.status.success(), "{first:?}");
    let stdout = String::from_utf8_lossy(&first.stdout);
    assert!(stdout.contains("(compiled,"), "{stdout}");
    let second = check();
    assert!(second.status.success(), "{second:?}");
    let stdout = String::from_utf8_lossy(&second.stdout);
    assert!(stdout.contains("read compiled from the cache"), "{stdout}");
}
