//! The web UI through the real binary: the page and every module it
//! imports are served from the binary without credentials, whoami says who
//! the caller is, and the live stream (GET /ws/v1/events) sends each topic
//! as its endpoint's body, then a price change as it happens, across a
//! policy hot swap. (The browser test, .ci/ui-check, drives the page.)

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::Server;

/// The `from '…'` specifiers of a module's imports, resolved against `dir`.
fn imports(dir: &str, text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| {
            let rest = line.split(" from '").nth(1)?;
            let spec = rest.split('\'').next()?;
            let mut parts: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
            for part in spec.split('/') {
                match part {
                    "." => {}
                    ".." => {
                        parts.pop();
                    }
                    name => parts.push(name),
                }
            }
            Some(format!("/{}", parts.join("/")))
        })
        .collect()
}

#[test]
fn the_page_and_all_its_modules_are_served_and_whoami_says_who_asks() {
    let server = Server::start(&[
        "--sim-nodes",
        "1x8192mb,8vcores",
        "--set",
        "yarn.admin.acl=admin",
    ]);
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let fetch = |path: &str| {
        let mut response = agent.get(&format!("{}{path}", server.base)).call().unwrap();
        let kind = response
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default();
        let csp = response.headers().get("content-security-policy").is_some();
        let text = response.body_mut().read_to_string().unwrap_or_default();
        (response.status().as_u16(), kind, csp, text)
    };
    let (status, kind, csp, page) = fetch("/");
    assert_eq!(status, 200);
    assert!(kind.starts_with("text/html") && csp, "{kind}");
    assert!(page.contains("/ui/main.js"), "{page}");

    // Every module the page imports, transitively, is there as JavaScript.
    let mut todo = vec!["/ui/main.js".to_string()];
    let mut seen = std::collections::BTreeSet::new();
    while let Some(path) = todo.pop() {
        if !seen.insert(path.clone()) {
            continue;
        }
        let (status, kind, _, text) = fetch(&path);
        assert_eq!(status, 200, "{path}");
        assert!(kind.starts_with("text/javascript"), "{path}: {kind}");
        let dir = &path[..path.rfind('/').unwrap()];
        todo.extend(imports(dir, &text));
    }
    assert!(seen.len() > 10, "{seen:?}");
    assert_eq!(fetch("/ui/style.css").1, "text/css; charset=utf-8");
    assert_eq!(fetch("/ui/no-such.js").0, 404);
    assert_eq!(fetch("/ui/../Cargo.toml").0, 404);

    let (_, alice) = server.get_as("/ws/v1/whoami", Some("alice"));
    assert_eq!(alice["user"], "alice");
    assert_eq!(alice["admin"], false);
    assert_eq!(alice["authentication"], "simple");
    assert_eq!(
        server.get_as("/ws/v1/whoami", Some("admin")).1["admin"],
        true
    );
    server.stop();
}

/// Server-sent events read off a plain HTTP/1.0 connection (no chunking).
struct Events {
    lines: BufReader<TcpStream>,
}

impl Events {
    fn open(base: &str) -> Events {
        let address = base.trim_start_matches("http://");
        let mut stream = TcpStream::connect(address).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        write!(
            stream,
            "GET /ws/v1/events HTTP/1.0\r\nhost: {address}\r\naccept: text/event-stream\r\n\r\n"
        )
        .unwrap();
        let mut lines = BufReader::new(stream);
        let mut status = String::new();
        lines.read_line(&mut status).unwrap();
        assert!(status.contains(" 200 "), "{status}");
        loop {
            let mut header = String::new();
            lines.read_line(&mut header).unwrap();
            if header.trim().is_empty() {
                break;
            }
        }
        Events { lines }
    }

    /// The next event: (topic, data).
    fn next(&mut self) -> (String, Value) {
        let (mut topic, mut data) = (String::new(), String::new());
        loop {
            let mut line = String::new();
            let read = self
                .lines
                .read_line(&mut line)
                .expect("an event within 20 s");
            assert!(read > 0, "the stream ended");
            let line = line.trim_end_matches(['\r', '\n']);
            if line.is_empty() {
                if !topic.is_empty() {
                    return (topic, serde_json::from_str(&data).unwrap());
                }
            } else if let Some(name) = line.strip_prefix("event:") {
                topic = name.trim().to_string();
            } else if let Some(text) = line.strip_prefix("data:") {
                data.push_str(text.trim_start());
            }
        }
    }
}

#[test]
fn live_events_carry_each_endpoints_body_and_a_price_change_across_a_hot_swap() {
    let server = Server::start(&["--sim-nodes", "1x8192mb,8vcores"]);
    // Streams dropped as soon as they open (a reloaded tab) leave the
    // sampler running for the next.
    for _ in 0..10 {
        let address = server.base.trim_start_matches("http://");
        let mut stream = TcpStream::connect(address).unwrap();
        write!(
            stream,
            "GET /ws/v1/events HTTP/1.0\r\nhost: {address}\r\n\r\n"
        )
        .unwrap();
        drop(stream);
    }
    std::thread::sleep(Duration::from_millis(700));
    let mut events = Events::open(&server.base);
    let mut opening = std::collections::BTreeMap::new();
    while opening.len() < 8 {
        let (topic, data) = events.next();
        opening.insert(topic, data);
    }
    let topics: Vec<&str> = opening.keys().map(String::as_str).collect();
    assert_eq!(
        topics,
        [
            "apps",
            "budgets",
            "cut",
            "metrics",
            "nodes",
            "policies",
            "prices",
            "scheduler"
        ]
    );
    // Nothing cut: every topic is within its bound, all apps are there.
    assert_eq!(
        opening["cut"],
        serde_json::json!({"max_bytes": 1 << 20, "apps_limit": 1000, "left_out": []})
    );
    // Figures that stand still are the endpoints' own bodies.
    for (topic, path) in [
        ("prices", "/ws/v1/quota/prices"),
        ("budgets", "/ws/v1/quota/budgets"),
        ("apps", "/ws/v1/cluster/apps"),
    ] {
        assert_eq!(opening[topic], server.get(path).1, "{topic}");
    }
    assert_eq!(opening["prices"]["price_per_second"]["vcore"], 1.0);

    // A hot swap to dearer pricing: the new price arrives on the same stream.
    let (status, body) = server.request(
        "PUT",
        "/ws/v1/policies/pricing?builtin=hops-pricing&price.base.general=3",
        &[],
        None,
    );
    assert_eq!(status, 200, "{body}");
    let started = Instant::now();
    loop {
        let (topic, data) = events.next();
        if topic == "prices" {
            assert_eq!(data["price_per_second"]["vcore"], 3.0, "{data}");
            assert_eq!(data, server.get("/ws/v1/quota/prices").1);
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no price change"
        );
    }
    server.stop();
}
