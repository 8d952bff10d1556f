//! What a failing guest wrote reaches the author: `weft policy check` and
//! `weft policy bench` end their error with the guest's last lines (its
//! panic message here; a Python traceback the same way).

use crate::support::{FAULTY_PRICING, weft};

/// No compile cache: what a cache says (a warning about a damaged entry)
/// is not what these tests are about.
const NO_CACHE: [&str; 2] = ["--set", "weft.policy.compile-cache-mb=0"];

/// The guest's panic message, as its stderr carries it.
const PANIC_LINE: &str = "[stderr] faulty-pricing: trapping on purpose (fault=trap)";

#[test]
fn check_shows_what_a_trapping_guest_wrote() {
    let output = weft(
        &[
            &["policy", "check", FAULTY_PRICING, "--param", "fault=trap"][..],
            &NO_CACHE,
        ]
        .concat(),
    );
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert!(stderr.contains("self-check"), "{stderr}");
    assert_eq!(stderr.matches("wasm trap:").count(), 1, "{stderr}");
    assert!(stderr.contains(PANIC_LINE), "{stderr}");
}

#[test]
fn bench_shows_what_a_guest_wrote_when_a_measured_call_traps() {
    // The load's self-check and the warm-up pass; the fifth charge traps.
    let output = weft(&[
        "policy",
        "bench",
        FAULTY_PRICING,
        "--param",
        "fault=trap",
        "--param",
        "after=5",
        "--seconds",
        "0.1",
        NO_CACHE[0],
        NO_CACHE[1],
    ]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("failed while measured"), "{stderr}");
    assert!(stderr.contains(PANIC_LINE), "{stderr}");
}
