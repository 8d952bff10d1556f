//! `weft policy new`, end to end: one pricing project per language, made in a
//! clean temporary directory outside the repo, its unit tests run, built with
//! the command it printed, tested against the contract (`weft policy test`),
//! hot-loaded into a running server and replayed against the events that
//! server logged (the README's path); and the Python and JavaScript SDKs'
//! own unit tests.
//!
//! The tools come from `.ci/run` (componentize-py and pytest from PyPI,
//! componentize-qjs from the npm registry); a missing tool fails the test
//! with the command that installs it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::support::{Server, WEFT, weft, weft_command};

/// The repo's root, where `sdk/` is.
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Runs `sh -c LINE` in `dir`, in a process group of its own that is killed
/// whole (by its id) if it runs past `limit`; `weft` at the start of the line
/// is the binary under test (with the tests' cache of compiled policies).
fn shell(dir: &Path, line: &str, limit: Duration) -> Output {
    use std::os::unix::process::CommandExt as _;
    let line = match line.strip_prefix("weft ") {
        Some(rest) => format!(
            "XDG_CACHE_HOME='{}' {WEFT} {rest}",
            env!("CARGO_TARGET_TMPDIR")
        ),
        None => line.to_string(),
    };
    let child = Command::new("sh")
        .args(["-c", &line])
        .current_dir(dir)
        // The npm registry is asked only for what the cache lacks.
        .env("npm_config_prefer_offline", "true")
        .env("npm_config_audit", "false")
        .env("npm_config_fund", "false")
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("sh -c {line:?} did not start: {error}"));
    let group = format!("-{}", child.id());
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || done.send(child.wait_with_output()));
    match finished.recv_timeout(limit) {
        Ok(output) => output.expect("the command ran"),
        Err(_) => {
            let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
            panic!(
                "{line:?} in {} did not finish within {limit:?}",
                dir.display()
            );
        }
    }
}

/// `shell`, failing the test with the command's output unless it succeeds.
fn shell_ok(dir: &Path, line: &str, limit: Duration) -> String {
    let output = shell(dir, line, limit);
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{line:?} in {} failed ({}):\n{stdout}\n{}",
        dir.display(),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// A tool a test needs: the command that shows it, what that prints, and
/// how to install it.
struct Tool {
    probe: &'static str,
    prints: &'static str,
    install: &'static str,
}

/// The Python SDK's own tests need pytest, pinned as the templates pin it.
const PIP_TOOLS: &str = "python3 -m pip install --quiet --disable-pip-version-check componentize-py==0.25.1 pytest==9.2.0";
const NODE_TOOLS: &str =
    "install Node.js 20 or later with npm (Debian: apt-get install nodejs npm)";
const PYTHON: Tool = Tool {
    probe: "python3 -m pip --version",
    prints: "pip",
    install: "install Python 3.10 or later with pip (Debian: apt-get install python3-pip)",
};
const NODE: Tool = Tool {
    probe: "node --version && npm --version",
    prints: "v",
    install: NODE_TOOLS,
};

/// Fails the test, saying how to install it, unless each tool is there.
fn require(tools: &[Tool]) {
    for tool in tools {
        let output = shell(Path::new("/"), tool.probe, Duration::from_secs(60));
        let printed = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success() && printed.contains(tool.prints),
            "{:?} printed {printed:?}, not {:?}: this test needs it; install it with `{}` (.ci/run does)",
            tool.probe,
            tool.prints,
            tool.install
        );
    }
}

/// What `weft policy new` printed: the command labelled `label`.
fn step<'a>(printed: &'a str, label: &str) -> &'a str {
    let prefix = format!("{label}:");
    printed
        .lines()
        .find_map(|line| line.trim().strip_prefix(prefix.as_str()))
        .map(str::trim)
        .unwrap_or_else(|| panic!("weft policy new printed no {label} step:\n{printed}"))
}

/// Makes a pricing project named `my-pricing` in `language` in a fresh
/// temporary directory, runs its install (when `install`), unit tests and
/// build as printed, tests the component against the contract and hot-loads
/// it into a server.
fn pricing_project_end_to_end(language: &str, install: bool, build_limit: Duration) {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("my-pricing");
    let made = weft(&[
        "policy",
        "new",
        "my-pricing",
        "--kind",
        "pricing",
        "--lang",
        language,
        "--dir",
        dir.to_str().unwrap(),
    ]);
    let printed = String::from_utf8_lossy(&made.stdout).into_owned();
    assert!(
        made.status.success(),
        "weft policy new --lang {language} failed: {printed}{}",
        String::from_utf8_lossy(&made.stderr)
    );
    assert!(dir.join("wit/pricing.wit").is_file(), "{printed}");

    if install {
        shell_ok(&dir, step(&printed, "install"), Duration::from_secs(600));
        if language == "python" {
            // Into the project's own environment, not the system's Python.
            assert!(dir.join(".venv/bin/python").is_file(), "{printed}");
        }
    }
    let tests = shell(&dir, step(&printed, "test"), Duration::from_secs(600));
    assert!(
        tests.status.success(),
        "{language} unit tests failed:\n{}\n{}",
        String::from_utf8_lossy(&tests.stdout),
        String::from_utf8_lossy(&tests.stderr)
    );
    shell_ok(&dir, step(&printed, "build"), build_limit);
    // The contract as properties, through the host's own checks.
    let contract = step(&printed, "contract");
    let tested = shell_ok(&dir, contract, Duration::from_secs(600));
    assert!(
        tested.contains("my-pricing") && tested.contains("checks passed"),
        "{contract}: {tested}"
    );

    // The README's server for this path logs what it charges, for the
    // replay at the end.
    let events = root.path().join("weft-events.jsonl");
    let server = Server::start(&[
        "--sim-nodes",
        "1x8192mb,8vcores",
        "--set",
        &format!("weft.quota.event-log={}", events.display()),
    ]);
    // Project ml pays twice the others, nights half price: the template's
    // context pricing, switched on by its parameters.
    let pricing_params = "--param project.ml=2 --param night.factor=0.5";
    let load = format!(
        "{} {pricing_params} --server {}",
        step(&printed, "load"),
        server.base
    );
    let loaded = shell(&dir, &load, Duration::from_secs(300));
    let (stdout, stderr) = (
        String::from_utf8_lossy(&loaded.stdout),
        String::from_utf8_lossy(&loaded.stderr),
    );
    // The client waits for the server to compile the component (tens of
    // seconds for a Python one on a busy machine) and answer.
    assert!(loaded.status.success(), "{load} failed: {stdout}{stderr}");
    assert!(stdout.contains("my-pricing"), "{load}: {stdout}");
    let (status, body) = server.get("/ws/v1/policies/pricing");
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["active"]["name"], "my-pricing", "{body}");
    assert_eq!(body["active"]["version"], "0.1.0", "{body}");

    // Two apps alike but for their project: ml pays twice as much (both
    // run at the same time of day, so any night discount is the same).
    let ids = [server.submit("demo", 2, 200), server.submit("ml", 2, 200)];
    for id in &ids {
        server.wait_for(
            &format!("/ws/v1/cluster/apps/{id}"),
            "the app to end",
            |b| b["app"]["state"] == "FINISHED",
        );
    }
    let (_, ledger) = server.get("/ws/v1/quota/projects");
    let used = |project: &str| ledger[project]["total_used"].as_f64().unwrap_or(0.0);
    assert!(
        used("demo") > 0.0 && (used("ml") / used("demo") - 2.0).abs() < 1e-6,
        "ml pays twice demo: {ledger}"
    );
    server.stop();
    let artifact = contract
        .strip_prefix("weft policy test ")
        .unwrap_or_else(|| panic!("the contract step names the component: {contract}"));
    // The server's log replayed by the same policy gives the server's ledger.
    // `weft replay LOG` with this policy and its parameters, as JSON.
    let replay_with_policy = |log: &Path| -> serde_json::Value {
        let command = format!(
            "weft replay {} --pricing {artifact} {pricing_params}",
            log.display()
        );
        serde_json::from_str(&shell_ok(&dir, &command, Duration::from_secs(300))).unwrap()
    };
    let replayed = replay_with_policy(&events);
    for project in ["demo", "ml"] {
        let again = replayed["projects"][project]["total_used"]
            .as_f64()
            .unwrap_or(-1.0);
        assert!(
            (again - used(project)).abs() < 1e-6 * used(project).max(1.0),
            "{project}: the server charged {}, its replay {again}",
            used(project)
        );
    }
    // Nights at half price: an hour of one container by day and by night.
    let night_log = root.path().join("night.jsonl");
    let hour = 3_600_000u64;
    let day0 = 1_700_006_400_000u64; // a midnight, UTC
    let line = |t: u64, event: &str, c: &str| match event {
        "start" => format!(
            r#"{{"t": {t}, "event": "start", "container": "{c}", "app": "application_1_0001", "project": "{c}", "user": "u", "memory_mb": 1024, "vcores": 1}}"#
        ),
        _ => format!(r#"{{"t": {t}, "event": "finish", "container": "{c}"}}"#),
    };
    let lines = [
        line(day0 + 2 * hour, "start", "night"),
        line(day0 + 3 * hour, "finish", "night"),
        line(day0 + 12 * hour, "start", "day"),
        line(day0 + 13 * hour, "finish", "day"),
    ];
    std::fs::write(&night_log, lines.join("\n")).unwrap();
    let nights = replay_with_policy(&night_log);
    let (night, day) = (
        nights["projects"]["night"]["total_used"]
            .as_f64()
            .unwrap_or(0.0),
        nights["projects"]["day"]["total_used"]
            .as_f64()
            .unwrap_or(0.0),
    );
    assert!(
        day > 0.0 && (night / day - 0.5).abs() < 1e-9,
        "night {night}, day {day}: {nights}"
    );
    let replay = format!(
        "weft replay {} --pricing {artifact} --baseline builtin:flat-pricing",
        events.display()
    );
    let table = shell_ok(&dir, &replay, Duration::from_secs(300));
    assert!(
        table.contains(&format!("B = {artifact} (--pricing)"))
            && table.lines().any(|line| line.starts_with("demo ")),
        "{replay}: {table}"
    );
}

#[test]
fn python_pricing_project_builds_tests_and_loads() {
    require(&[PYTHON]);
    // The project's install step fetches its pinned tools from PyPI (a
    // quick no-op where .ci/run has put them already), so `cargo test`
    // needs nothing installed beforehand.
    pricing_project_end_to_end("python", true, Duration::from_secs(600));
}

#[test]
fn js_pricing_project_builds_tests_and_loads() {
    require(&[NODE]);
    // The install step fetches componentize-qjs 0.4.5 into the project, from
    // the npm cache that .ci/run fills.
    pricing_project_end_to_end("js", true, Duration::from_secs(300));
}

#[test]
fn rust_pricing_project_builds_tests_and_loads() {
    pricing_project_end_to_end("rust", true, Duration::from_secs(900));
}

#[test]
fn new_refuses_bad_names_and_used_directories() {
    let root = tempfile::tempdir().unwrap();
    let taken = root.path().join("taken");
    std::fs::create_dir(&taken).unwrap();
    std::fs::write(taken.join("keep.txt"), "mine").unwrap();
    // (arguments, words of the refusal)
    let cases: [(&[&str], &str); 4] = [
        (&["My-Pricing"], "must start with a lowercase letter"),
        (&["my_pricing"], "not '_'"),
        (
            &["my-pricing", "--dir", taken.to_str().unwrap()],
            "is not empty",
        ),
        (&[&"a".repeat(65)], "longer than 64 characters"),
    ];
    for (args, words) in cases {
        let mut full = vec!["policy", "new"];
        full.extend_from_slice(args);
        full.extend_from_slice(&["--kind", "pricing", "--lang", "python"]);
        let out = weft_command()
            .args(&full)
            .current_dir(root.path())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{full:?} succeeded");
        assert!(stderr.contains(words), "{full:?}: {stderr}");
    }
    assert_eq!(
        std::fs::read_to_string(taken.join("keep.txt")).unwrap(),
        "mine"
    );
    assert_eq!(std::fs::read_dir(&taken).unwrap().count(), 1);
}

#[test]
fn python_and_js_sdks_pass_their_own_tests() {
    require(&[PYTHON, NODE]);
    let sdk = repo().join("sdk");
    shell_ok(Path::new("/"), PIP_TOOLS, Duration::from_secs(600));
    // -p no:cacheprovider: no .pytest_cache left in the repo.
    shell_ok(
        &sdk.join("python"),
        "python3 -B -m pytest -q -p no:cacheprovider tests",
        Duration::from_secs(300),
    );
    shell_ok(&sdk.join("js"), "node --test", Duration::from_secs(300));
}
