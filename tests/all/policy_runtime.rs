//! The policy runtime with real guests: every bad input is refused with a
//! clear error and the active version stays; a failing version falls back to
//! the last good one and is rolled back by itself.

use std::sync::Arc;
use std::time::{Duration, Instant};

use weft_host::clock::VirtualClock;
use weft_host::config::CallLimits;
use weft_host::config::Settings;
use weft_host::policy::{
    CallError, LoadError, PolicyEngine, PolicyKind, PolicyRuntime, PolicySlot, PolicySource,
    STANDBY_KEPT, VersionState, builtin, prepare,
};
use weft_host::policy::{PriceMultiplicators, Usage, Utilization};

use crate::support::{CLOCK_PRICING, FAULTY_PRICING, FAULTY_SCHEDULING};

fn runtime() -> PolicyRuntime {
    let limits = CallLimits {
        timeout: Duration::from_millis(200),
        memory_bytes: 32 << 20,
    };
    let engine = PolicyEngine::new(limits, Arc::new(VirtualClock::default())).unwrap();
    let runtime = PolicyRuntime::new(engine, Settings::default().pricing_params.clone(), 3);
    runtime
        .load(
            PolicyKind::Pricing,
            &PolicySource::Builtin("hops-pricing".into()),
            &[],
        )
        .unwrap();
    runtime
        .load(
            PolicyKind::Scheduling,
            &PolicySource::Builtin("fifo".into()),
            &[],
        )
        .unwrap();
    runtime
}

fn params(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn file(path: &str) -> PolicySource {
    PolicySource::File(path.into())
}

fn active_sha(runtime: &PolicyRuntime, kind: PolicyKind) -> String {
    runtime.slot(kind).active().unwrap().info.sha256.clone()
}

fn usage() -> Usage {
    Usage::of_columns(vec![10.0, 5.0], vec![2048, 1024], vec![1, 4], vec![0, 0])
}

const UNIT: PriceMultiplicators = PriceMultiplicators {
    general: 1.0,
    gpu: 1.0,
};

#[test]
fn every_bad_policy_is_refused_and_the_active_version_stays() {
    let runtime = runtime();
    let core_module: &[u8] = b"\0asm\x01\0\0\0";
    let wrong_world = builtin("flat-pricing").unwrap();
    type Check = fn(&LoadError) -> bool;
    type Input = Result<Vec<u8>, PolicySource>;
    type Case = (
        &'static str,
        PolicyKind,
        Input,
        Vec<(String, String)>,
        Check,
    );
    let cases: Vec<Case> = vec![
        (
            "not wasm",
            PolicyKind::Pricing,
            Ok(b"hello, I am not wasm".to_vec()),
            vec![],
            |e| matches!(e, LoadError::NotWasm),
        ),
        (
            "core module",
            PolicyKind::Pricing,
            Ok(core_module.to_vec()),
            vec![],
            |e| matches!(e, LoadError::CoreModule),
        ),
        (
            "truncated component",
            PolicyKind::Pricing,
            Ok(wrong_world[..wrong_world.len() / 2].to_vec()),
            vec![],
            |e| matches!(e, LoadError::Compile(_)),
        ),
        (
            "another world",
            PolicyKind::Scheduling,
            Ok(wrong_world.to_vec()),
            vec![],
            |e| matches!(e, LoadError::WrongWorld { .. }),
        ),
        (
            "configure refuses",
            PolicyKind::Pricing,
            Err(file(FAULTY_PRICING)),
            params(&[("fault", "refuse")]),
            |e| matches!(e, LoadError::Configure(m) if m.contains("fault=refuse")),
        ),
        (
            "bad parameter",
            PolicyKind::Pricing,
            Err(PolicySource::Builtin("hops-pricing".into())),
            params(&[("multiplicator.increment.gpu", "steep")]),
            |e| matches!(e, LoadError::Configure(m) if m.contains("steep")),
        ),
        (
            "traps",
            PolicyKind::Pricing,
            Err(file(FAULTY_PRICING)),
            params(&[("fault", "trap")]),
            |e| matches!(e, LoadError::SelfCheck(CallError::Trap(_))),
        ),
        (
            "loops forever",
            PolicyKind::Pricing,
            Err(file(FAULTY_PRICING)),
            params(&[("fault", "loop")]),
            |e| matches!(e, LoadError::SelfCheck(CallError::Timeout)),
        ),
        (
            "allocates past the cap",
            PolicyKind::Pricing,
            Err(file(FAULTY_PRICING)),
            params(&[("fault", "alloc")]),
            |e| {
                matches!(
                    e,
                    LoadError::SelfCheck(CallError::MemoryLimit(_) | CallError::Trap(_))
                )
            },
        ),
        (
            "NaN charges",
            PolicyKind::Pricing,
            Err(file(FAULTY_PRICING)),
            params(&[("fault", "nan")]),
            |e| matches!(e, LoadError::SelfCheck(CallError::InvalidOutput(_))),
        ),
        (
            "too few charges",
            PolicyKind::Pricing,
            Err(file(FAULTY_PRICING)),
            params(&[("fault", "short")]),
            |e| matches!(e, LoadError::SelfCheck(CallError::InvalidOutput(_))),
        ),
        (
            "negative charges",
            PolicyKind::Pricing,
            Err(file(FAULTY_PRICING)),
            params(&[("fault", "negative")]),
            |e| matches!(e, LoadError::SelfCheck(CallError::InvalidOutput(_))),
        ),
        (
            "places on a node that does not exist",
            PolicyKind::Scheduling,
            Err(file(FAULTY_SCHEDULING)),
            params(&[("fault", "ghost-node")]),
            |e| matches!(e, LoadError::SelfCheck(CallError::InvalidOutput(m)) if m.contains("node")),
        ),
        (
            "places an ask that does not exist",
            PolicyKind::Scheduling,
            Err(file(FAULTY_SCHEDULING)),
            params(&[("fault", "ghost-ask")]),
            |e| matches!(e, LoadError::SelfCheck(CallError::InvalidOutput(m)) if m.contains("ask")),
        ),
        (
            "over-allocates a node",
            PolicyKind::Scheduling,
            Err(file(FAULTY_SCHEDULING)),
            params(&[("fault", "over-allocate")]),
            |e| matches!(e, LoadError::SelfCheck(CallError::InvalidOutput(m)) if m.contains("over-allocated")),
        ),
        (
            "places more than pending",
            PolicyKind::Scheduling,
            Err(file(FAULTY_SCHEDULING)),
            params(&[("fault", "over-pending")]),
            |e| matches!(e, LoadError::SelfCheck(CallError::InvalidOutput(m)) if m.contains("pending")),
        ),
        (
            "scheduler loops",
            PolicyKind::Scheduling,
            Err(file(FAULTY_SCHEDULING)),
            params(&[("fault", "loop")]),
            |e| matches!(e, LoadError::SelfCheck(CallError::Timeout)),
        ),
    ];
    for (case, kind, input, params, expected) in cases {
        let before = active_sha(&runtime, kind);
        let result = match input {
            Ok(bytes) => runtime.load_bytes(kind, case, &bytes, &params),
            Err(source) => runtime.load(kind, &source, &params),
        };
        let error = result.err().unwrap_or_else(|| panic!("{case}: was loaded"));
        assert!(expected(&error), "{case}: unexpected error {error:?}");
        assert!(
            !error.to_string().is_empty(),
            "{case}: the error says nothing"
        );
        assert_eq!(
            active_sha(&runtime, kind),
            before,
            "{case}: the active version changed"
        );
    }
    // The good versions still answer.
    let charges = runtime.pricing().charge(&usage(), UNIT).unwrap();
    assert_eq!(charges, vec![20.0, 20.0]);
}

#[test]
fn a_failing_version_falls_back_then_rolls_back_by_itself() {
    let runtime = runtime();
    let slot = runtime.pricing();
    let good = slot.charge(&usage(), UNIT).unwrap();
    // The self-check makes one charge call; from the 3rd call on every
    // answer is NaN (invalid output, so the instance is kept and the
    // failures are consecutive).
    runtime
        .load(
            PolicyKind::Pricing,
            &file(FAULTY_PRICING),
            &params(&[("fault", "nan"), ("after", "2")]),
        )
        .unwrap();
    assert_eq!(slot.active().unwrap().info.name, "faulty-pricing");
    // 2nd call: still fine, priced by faulty-pricing (flat-like).
    slot.charge(&usage(), UNIT).unwrap();
    // Each failing call is answered by the last good version instead.
    for _ in 0..3 {
        assert_eq!(slot.charge(&usage(), UNIT).unwrap(), good);
    }
    let status = slot.status();
    assert_eq!(status.active.as_ref().unwrap().info.name, "hops-pricing");
    let faulty = status
        .history
        .iter()
        .find(|e| e.info.name == "faulty-pricing")
        .unwrap();
    assert_eq!(faulty.state, VersionState::RolledBack);
    assert!(
        faulty.note.as_ref().unwrap().contains("3 calls in a row"),
        "{:?}",
        faulty.note
    );
}

#[test]
fn a_runaway_call_is_stopped_and_answered_by_the_last_good_version() {
    let runtime = runtime();
    let slot = runtime.pricing();
    runtime
        .load(
            PolicyKind::Pricing,
            &file(FAULTY_PRICING),
            &params(&[("fault", "loop"), ("after", "1")]),
        )
        .unwrap();
    let started = Instant::now();
    let charges = slot.charge(&usage(), UNIT).unwrap();
    assert_eq!(charges, vec![20.0, 20.0], "hops-pricing's answer");
    // Not a timing test: the 200 ms deadline has to have ended the loop at all.
    assert!(started.elapsed() < Duration::from_secs(20));
    let charges = {
        runtime
            .load(
                PolicyKind::Pricing,
                &file(FAULTY_PRICING),
                &params(&[("fault", "alloc"), ("after", "1")]),
            )
            .unwrap();
        slot.charge(&usage(), UNIT).unwrap()
    };
    assert_eq!(charges, vec![20.0, 20.0]);
}

#[test]
fn rollback_by_the_operator_and_history() {
    let runtime = runtime();
    let slot = runtime.pricing();
    runtime
        .load(
            PolicyKind::Pricing,
            &PolicySource::Builtin("flat-pricing".into()),
            &[],
        )
        .unwrap();
    let status = slot.status();
    assert_eq!(status.history.len(), 2);
    assert_eq!(status.history[0].state, VersionState::Standby);
    assert_eq!(status.history[1].state, VersionState::Active);
    assert_eq!(status.history[1].number, 2);
    assert_eq!(status.history[1].info.sha256.len(), 64);
    assert_eq!(slot.rollback("test").unwrap().info.name, "hops-pricing");
    let error = slot.rollback("again").unwrap_err();
    assert!(error.contains("no earlier good"), "{error}");
    assert_eq!(slot.active().unwrap().info.name, "hops-pricing");
}

#[test]
fn a_slot_keeps_the_newest_standbys_ready_and_retires_older_ones() {
    let runtime = runtime();
    let engine = runtime.engine();
    let slot = PolicySlot::new(PolicyKind::Pricing, 3);
    let names = ["hops-pricing", "flat-pricing"];
    let versions: Vec<_> = names
        .iter()
        .map(|name| {
            prepare(
                engine,
                PolicyKind::Pricing,
                &format!("builtin:{name}"),
                builtin(name).unwrap(),
                Settings::default().pricing_params.clone(),
            )
            .unwrap()
        })
        .collect();
    let published = STANDBY_KEPT + 3;
    for i in 0..published {
        slot.publish(versions[i % 2].clone());
    }
    let history = slot.status().history;
    assert_eq!(history.len(), published, "every version stays listed");
    let count = |state| history.iter().filter(|e| e.state == state).count();
    assert_eq!(count(VersionState::Active), 1);
    assert_eq!(count(VersionState::Standby), STANDBY_KEPT);
    assert_eq!(count(VersionState::Retired), 2);
    assert_eq!(
        history[0].state,
        VersionState::Retired,
        "the oldest go first"
    );
    // Every kept standby is a rollback target; a retired one is not.
    for _ in 0..STANDBY_KEPT {
        slot.rollback("test").unwrap();
    }
    let error = slot.rollback("once more").unwrap_err();
    assert!(error.contains("no earlier good"), "{error}");
}

#[test]
fn hot_swap_during_calls_fails_no_call() {
    let runtime = Arc::new(runtime());
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let caller = {
        let runtime = runtime.clone();
        let stop = stop.clone();
        std::thread::spawn(move || {
            let (mut ok, mut failed) = (0u64, 0u64);
            while !stop.load(std::sync::atomic::Ordering::Relaxed) || ok == 0 {
                let slot = runtime.pricing();
                let mut market = weft_host::policy::sample_market();
                market.utilization = Utilization {
                    memory: 0.9,
                    vcores: 0.1,
                    gpus: 0.0,
                };
                let m = slot.multiplicators(&market);
                match m.and_then(|m| slot.charge(&usage(), m)) {
                    Ok(_) => ok += 1,
                    Err(_) => failed += 1,
                }
            }
            (ok, failed)
        })
    };
    for round in 0..6 {
        let name = if round % 2 == 0 {
            "flat-pricing"
        } else {
            "hops-pricing"
        };
        runtime
            .load(
                PolicyKind::Pricing,
                &PolicySource::Builtin(name.into()),
                &[],
            )
            .unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (ok, failed) = caller.join().unwrap();
    assert!(ok > 0);
    assert_eq!(
        failed,
        0,
        "{failed} of {} calls failed during swaps",
        ok + failed
    );
}

#[test]
fn the_watched_directory_loads_policies_written_into_it() {
    let runtime = Arc::new(runtime());
    let dir = tempfile::tempdir().unwrap();
    weft_host::rm::policy_watch::watch(runtime.clone(), dir.path().to_path_buf()).unwrap();
    std::fs::write(dir.path().join("readme.txt"), "ignored").unwrap();
    std::fs::write(
        dir.path().join("mine.pricing.wasm"),
        builtin("flat-pricing").unwrap(),
    )
    .unwrap();
    let started = Instant::now();
    while runtime.pricing().active().unwrap().info.name != "flat-pricing" {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the watched policy was never loaded"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // A bad file written there is refused; the active version stays.
    std::fs::write(dir.path().join("broken.pricing.wasm"), b"not wasm").unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    assert_eq!(
        runtime.pricing().active().unwrap().info.name,
        "flat-pricing"
    );
}

/// A runtime on `clock` with `clock-pricing` loaded with `params`.
fn clock_pricing(clock: &VirtualClock, pairs: &[(&str, &str)]) -> Result<PolicyRuntime, LoadError> {
    let engine = PolicyEngine::new(CallLimits::default(), Arc::new(clock.clone())).unwrap();
    let runtime = PolicyRuntime::new(engine, Settings::default().pricing_params.clone(), 3);
    runtime.load(PolicyKind::Pricing, &file(CLOCK_PRICING), &params(pairs))?;
    Ok(runtime)
}

/// One container that owes nothing: its charge is the guest's reading alone.
fn nothing_owed() -> Usage {
    Usage::of_columns(vec![0.0], vec![1024], vec![1], vec![0])
}

#[test]
fn a_guest_reads_the_host_clock_as_it_was_when_the_call_began() {
    for read in ["wall", "monotonic"] {
        let clock = VirtualClock::starting_at(90_500);
        let runtime = clock_pricing(&clock, &[("read", read)]).unwrap();
        let slot = runtime.pricing();
        // The charge is the time in seconds.
        assert_eq!(
            slot.charge(&nothing_owed(), UNIT).unwrap(),
            [90.5],
            "{read}"
        );
        clock.advance_to(3_600_000);
        assert_eq!(
            slot.charge(&nothing_owed(), UNIT).unwrap(),
            [3600.0],
            "{read}"
        );
    }
}

#[test]
fn a_guests_randomness_is_the_same_for_the_same_calls() {
    for read in ["random", "insecure", "hashed"] {
        let answers = || {
            let runtime = clock_pricing(&VirtualClock::default(), &[("read", read)]).unwrap();
            let slot = runtime.pricing();
            (0..3)
                .map(|_| slot.charge(&nothing_owed(), UNIT).unwrap()[0])
                .collect::<Vec<f64>>()
        };
        let first = answers();
        assert_eq!(
            first,
            answers(),
            "{read}: two runtimes drew different bytes"
        );
        if read != "hashed" {
            // Seeded per call: each call draws new bytes (a hash's keys are
            // drawn once per instance).
            assert!(
                first[0] != first[1] && first[1] != first[2],
                "{read}: {first:?}"
            );
        }
    }
}

#[test]
fn a_guest_that_sleeps_is_stopped_at_once_with_a_clear_error() {
    let started = Instant::now();
    // A minute's sleep in the self-check's charge call.
    let refused = clock_pricing(&VirtualClock::default(), &[("sleep-ms", "60000")]);
    match refused {
        Err(LoadError::SelfCheck(CallError::Trap(message))) => {
            assert!(message.contains("may not sleep"), "{message}")
        }
        other => panic!("a sleeping guest was not refused: {:?}", other.map(|_| ())),
    }
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the sleep blocked the host for {:?}",
        started.elapsed()
    );
}

#[test]
fn a_load_beyond_the_instance_pool_is_refused_naming_the_setting_and_the_active_version_stays() {
    let mut settings = Settings::default();
    settings.policies.instance_pool = 2;
    settings.policies.compile_cache_bytes = 0;
    let runtime =
        PolicyRuntime::from_settings(&settings, Arc::new(VirtualClock::default())).unwrap();
    let load = |name: &str| {
        runtime.load(
            PolicyKind::Pricing,
            &PolicySource::Builtin(name.into()),
            &[],
        )
    };
    // Each version keeps one warm instance: the active one and a standby.
    load("hops-pricing").unwrap();
    load("flat-pricing").unwrap();
    let before = active_sha(&runtime, PolicyKind::Pricing);
    let error = load("hops-pricing").unwrap_err();
    assert!(
        matches!(error, LoadError::NoInstance(CallError::InstancePoolFull(_))),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("weft.policy.instance-pool"),
        "{error}"
    );
    assert_eq!(active_sha(&runtime, PolicyKind::Pricing), before);
    assert_eq!(runtime.pricing().charge(&usage(), UNIT).unwrap().len(), 2);
}

/// Where the address space cannot hold the instance pool (a low `ulimit
/// -v`), the engine allocates instances on demand, says so, and works.
#[test]
fn without_address_space_for_the_pool_instances_are_allocated_on_demand() {
    // 16 GiB: far below the pool's 1 TiB reservation, enough for the binary
    // and a few instances on demand (each reserves 4 GiB of its own).
    let line = format!(
        "ulimit -v 16777216 && exec '{}' policy check builtin:flat-pricing",
        crate::support::WEFT
    );
    let output = std::process::Command::new("sh")
        .args(["-c", &line])
        .env("XDG_CACHE_HOME", env!("CARGO_TARGET_TMPDIR"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("flat-pricing"), "{stdout}");
    assert!(
        stderr.contains("instances are allocated on demand"),
        "{stderr}"
    );
}
