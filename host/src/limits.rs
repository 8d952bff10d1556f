//! The documented maxima of everything that enters Weft from outside — HTTP
//! bodies, node registrations and heartbeats, scenarios and event logs — and
//! the one check each is put through, so a refusal always names the field
//! and the limit (docs/security.md lists them).
//!
//! The maxima are chosen so that sums over a whole cluster cannot overflow
//! their types: 100,000 nodes of 4,096 vcores is 2^29 vcores (a `u32` holds
//! 2^32), of 1 PiB of memory is 2^47 MB (a `u64` holds 2^64), and a time
//! plus a duration stays below 2^48 ms. Aggregates of *demand* (pending
//! containers across apps) are not bounded by the cluster, so resource
//! vectors add saturating (see `resources::Resources`).

use std::fmt::Display;

/// Memory one node may offer, and one container may ask for: 1 PiB.
pub const MAX_MEMORY_MB: u64 = 1 << 30;
/// Vcores one node may offer, and one container may ask for.
pub const MAX_VCORES: u32 = 4096;
/// GPUs one node may offer, and one container may ask for.
pub const MAX_GPUS: u32 = 1024;
/// Nodes in one cluster.
pub const MAX_NODES: usize = 100_000;
/// Asks (container sizes) in one application.
pub const MAX_ASKS_PER_APP: usize = 100;
/// Containers one ask may ask for.
pub const MAX_CONTAINERS_PER_ASK: u32 = 100_000;
/// How long a simulated container may run: 30 days.
pub const MAX_DURATION_MS: u64 = 30 * 24 * 3600 * 1000;
/// An app's lifetime, and a queue's maximum or default one, in seconds: 10
/// years (YARN's `maximum-application-lifetime`, `default-application-lifetime`
/// and an app's LIFETIME timeout).
pub const MAX_APP_LIFETIME_S: u64 = 10 * 365 * 24 * 3600;
/// A node's rack path (YARN's network location, `/dc1/rack7`): bytes.
pub const MAX_RACK_BYTES: usize = 256;
/// Levels in a rack path.
pub const MAX_RACK_LEVELS: usize = 8;
/// Attributes one node may carry (YARN's node attributes, key=value).
pub const MAX_NODE_ATTRIBUTES: usize = 64;
/// Bytes in a node attribute's key, and in its value (YARN's limit).
pub const MAX_NODE_ATTRIBUTE_BYTES: usize = 255;
/// Users whose fading use is kept (`weft.scheduler.usage.half-life-ms`):
/// beyond, those holding nothing with the least use are let go.
pub const MAX_USAGE_USERS: usize = 50_000;
/// The latest time Weft accepts: 9999-12-31T23:59:59.999Z, in ms since the epoch.
pub const MAX_TIME_MS: u64 = 253_402_300_799_999;
/// Names and ids: apps, users, projects, queues, nodes, containers.
pub const MAX_NAME_BYTES: usize = 256;
/// Bytes in a queue's full path (`root.a.b`): what the quota event log and
/// a pricing policy's contexts carry.
pub const MAX_QUEUE_PATH_BYTES: usize = 1024;
/// Tags one app may carry (YARN's own limit).
pub const MAX_APP_TAGS: usize = 10;
/// Bytes in one app tag (YARN's own limit).
pub const MAX_APP_TAG_BYTES: usize = 100;
/// Containers one heartbeat may report as finished (or as running).
pub const MAX_FINISHED_PER_HEARTBEAT: usize = 100_000;
/// Opportunistic containers one agent's queue holds at the most, and so
/// the most `yarn.nodemanager.opportunistic-containers-max-queue-length`
/// may be.
pub const MAX_OPPORTUNISTIC_QUEUE: usize = 10_000;
/// How often one container of an ask may run (`max_attempts`).
pub const MAX_ATTEMPTS: u32 = 100;
/// Words in a container's command (argv, or one shell line).
pub const MAX_COMMAND_WORDS: usize = 4096;
/// Bytes in a container's command, all its words together: 1 MiB.
pub const MAX_COMMAND_BYTES: usize = 1 << 20;
/// One word of a command (or a shell line): Linux's MAX_ARG_STRLEN less one.
pub const MAX_COMMAND_WORD_BYTES: usize = (128 << 10) - 1;
/// Environment variables a container may set of its own.
pub const MAX_ENV_VARS: usize = 1000;
/// Bytes in the value of one of a container's environment variables: 64 KiB.
pub const MAX_ENV_VALUE_BYTES: usize = 64 << 10;
/// A container end's diagnostics as an agent reports them (longer ones
/// are cut).
pub const MAX_DIAGNOSTICS_BYTES: usize = 16 << 10;
/// The longest a node's decommission waits for its containers: a year.
pub const MAX_DECOMMISSION_TIMEOUT_S: u64 = 365 * 24 * 3600;
/// A node's health report (what its health checks found), in bytes.
pub const MAX_HEALTH_REPORT_BYTES: usize = 2048;

/// What one ask's containers run — its command, environment and YARN
/// launch context together, in bytes: a launch order must reach a remote
/// agent within its answer's limit (10 MiB), even escaped as JSON.
pub const MAX_LAUNCH_BYTES: usize = 1 << 20;
/// The launch orders one heartbeat answer carries, by their JSON size at
/// worst (six bytes a byte, all escaped); the rest follow in the next
/// answers (an order repeats until its container runs). One order always
/// goes.
pub const MAX_ANSWER_LAUNCH_BYTES: usize = 8 << 20;

/// Request bodies, per kind of route.
pub const MAX_BODY_BYTES: usize = 1 << 20;
/// The longest Hadoop RPC frame a client may send: a YARN call (a
/// submission with its launch context, an allocate of many asks) is far
/// smaller, so a larger length prefix is refused before anything is read.
pub const MAX_RPC_FRAME_BYTES: usize = 8 << 20;
/// A policy upload (a WebAssembly component) may be larger.
pub const MAX_POLICY_BODY_BYTES: usize = 64 << 20;

/// Apps one GET /ws/v1/cluster/apps answers when no `limit` is given.
pub const DEFAULT_APPS_PAGE: usize = 1000;
/// The most apps any `limit` of GET /ws/v1/cluster/apps may ask for (each
/// answer is built on the event loop).
pub const MAX_APPS_PAGE: usize = 1000;

/// The most credits one grant may add (a top-up, not a way to overflow).
pub const MAX_GRANT_CREDITS: f64 = 1e12;

/// Credits a grant adds: a finite number above 0, at most [`MAX_GRANT_CREDITS`].
pub fn grant_credits(field: impl Display, credits: f64) -> Result<f64, OutOfBounds> {
    if credits.is_finite() && credits > 0.0 && credits <= MAX_GRANT_CREDITS {
        return Ok(credits);
    }
    Err(OutOfBounds {
        field: field.to_string(),
        value: if credits.abs() < 1e15 {
            credits.to_string()
        } else {
            format!("{credits:e}")
        },
        rule: format!("but must be a number above 0 and at most {MAX_GRANT_CREDITS:e}"),
    })
}

/// A value that was out of bounds: which field, what it was, and the limit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field} is {value}, {rule}")]
pub struct OutOfBounds {
    /// The field as the caller named it, e.g. `asks[0].count`.
    pub field: String,
    /// The value given, as the refusal shows it (a long text cut short).
    pub value: String,
    /// The limit it broke, worded to follow the value: "but must be from 1 to
    /// 100000".
    pub rule: String,
}

/// `value` must be in `min..=max`; `field` names it in the refusal.
pub fn within<T: PartialOrd + Display>(
    field: impl Display,
    value: T,
    min: T,
    max: T,
) -> Result<T, OutOfBounds> {
    if value < min || value > max {
        return Err(OutOfBounds {
            field: field.to_string(),
            value: value.to_string(),
            rule: format!("but must be from {min} to {max}"),
        });
    }
    Ok(value)
}

/// `text` cut to at most `max` bytes, on a character boundary.
pub fn cut(text: &str, max: usize) -> String {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}

/// A queue's full path: not empty, at most [`MAX_QUEUE_PATH_BYTES`], no
/// control characters.
pub fn queue_path(field: impl Display, text: &str) -> Result<(), OutOfBounds> {
    let rule = if text.trim().is_empty() {
        "but must not be empty".to_string()
    } else if text.len() > MAX_QUEUE_PATH_BYTES {
        format!("but may be at most {MAX_QUEUE_PATH_BYTES} bytes long")
    } else if text.chars().any(char::is_control) {
        "but must not contain control characters".to_string()
    } else {
        return Ok(());
    };
    Err(OutOfBounds {
        field: field.to_string(),
        value: format!("{:?}", text.chars().take(40).collect::<String>()),
        rule,
    })
}

/// `text` must not be empty (after trimming) nor longer than [`MAX_NAME_BYTES`].
pub fn name(field: impl Display, text: &str) -> Result<(), OutOfBounds> {
    let rule = if text.trim().is_empty() {
        "but must not be empty".to_string()
    } else if text.len() > MAX_NAME_BYTES {
        format!("but may be at most {MAX_NAME_BYTES} bytes long")
    } else if text.chars().any(char::is_control) {
        "but must not contain control characters".to_string()
    } else {
        return Ok(());
    };
    let shown: String = text.chars().take(40).collect();
    Err(OutOfBounds {
        field: field.to_string(),
        value: format!(
            "{shown:?}{}",
            if shown.len() < text.len() { "…" } else { "" }
        ),
        rule,
    })
}

/// A list must hold at most `max` items.
pub fn at_most(field: impl Display, count: usize, max: usize) -> Result<(), OutOfBounds> {
    if count > max {
        return Err(OutOfBounds {
            field: field.to_string(),
            value: format!("{count} items"),
            rule: format!("but may hold at most {max}"),
        });
    }
    Ok(())
}

/// A rack path as YARN's NetworkTopology takes it: `/` then at most
/// [`MAX_RACK_LEVELS`] levels of `[A-Za-z0-9._-]` separated by `/`, at most
/// [`MAX_RACK_BYTES`] in all.
pub fn rack(field: impl Display, text: &str) -> Result<(), OutOfBounds> {
    let levels: Vec<&str> = text.strip_prefix('/').unwrap_or("").split('/').collect();
    let rule = if !text.starts_with('/') {
        Some("but a rack path starts with / (e.g. /dc1/rack7)".to_string())
    } else if text.len() > MAX_RACK_BYTES {
        Some(format!("but may be at most {MAX_RACK_BYTES} bytes long"))
    } else if levels.len() > MAX_RACK_LEVELS {
        Some(format!("but may have at most {MAX_RACK_LEVELS} levels"))
    } else if levels.iter().any(|l| {
        l.is_empty()
            || !l
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
    }) {
        Some("but each level is one or more of A-Z a-z 0-9 . _ -".to_string())
    } else {
        None
    };
    match rule {
        None => Ok(()),
        Some(rule) => Err(OutOfBounds {
            field: field.to_string(),
            value: format!("{:?}", text.chars().take(40).collect::<String>()),
            rule,
        }),
    }
}

/// YARN's prefix of the attributes a node's own agent reports (`rm.yarn.io`
/// is the resource manager's, set centrally).
pub const AGENT_ATTRIBUTE_PREFIX: &str = "nm.yarn.io";

/// An agent's node attributes as YARN takes them from a NodeManager, with
/// their keys in full (`nm.yarn.io/name`): at most [`MAX_NODE_ATTRIBUTES`];
/// a key is a name `[A-Za-z0-9][A-Za-z0-9._-]*`, with YARN's prefix
/// [`AGENT_ATTRIBUTE_PREFIX`] before a `/` or none (then it is given it),
/// each name once; a value is empty or of the same form; each at most
/// [`MAX_NODE_ATTRIBUTE_BYTES`].
pub fn node_attributes<'a>(
    field: impl Display,
    attributes: impl ExactSizeIterator<Item = (&'a String, &'a String)>,
) -> Result<std::collections::BTreeMap<String, String>, OutOfBounds> {
    at_most(&field, attributes.len(), MAX_NODE_ATTRIBUTES)?;
    let word = |text: &str| {
        text.bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphanumeric())
            && text
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
    };
    let mut full = std::collections::BTreeMap::new();
    for (key, value) in attributes {
        let refuse = |rule: String| OutOfBounds {
            field: format!("{field}.{}", key.chars().take(40).collect::<String>()),
            value: format!(
                "{:?}",
                format!("{key}={value}")
                    .chars()
                    .take(80)
                    .collect::<String>()
            ),
            rule,
        };
        let (prefix, name) = key
            .split_once('/')
            .unwrap_or((AGENT_ATTRIBUTE_PREFIX, key.as_str()));
        // The key as kept, prefix and all, within the bound.
        let key_ok =
            prefix.len() + 1 + name.len() <= MAX_NODE_ATTRIBUTE_BYTES && word(prefix) && word(name);
        let value_ok = value.len() <= MAX_NODE_ATTRIBUTE_BYTES && (value.is_empty() || word(value));
        if !(key_ok && value_ok) {
            return Err(refuse(format!(
                "but a key is [prefix/]name and a value empty or one word, each of A-Z a-z 0-9 . _ - \
                 starting with a letter or digit, at most {MAX_NODE_ATTRIBUTE_BYTES} bytes"
            )));
        }
        if prefix != AGENT_ATTRIBUTE_PREFIX {
            return Err(refuse(format!(
                "but an agent's attributes have YARN's prefix {AGENT_ATTRIBUTE_PREFIX} (or none)"
            )));
        }
        if full
            .insert(format!("{prefix}/{name}"), value.clone())
            .is_some()
        {
            return Err(refuse("but it names an attribute given already".into()));
        }
    }
    Ok(full)
}

/// The most allocation tags one ask's containers carry.
pub const MAX_ALLOCATION_TAGS: usize = 10;
/// Bytes in one allocation tag.
pub const MAX_ALLOCATION_TAG_BYTES: usize = 128;

/// The most node labels (YARN's partitions) a cluster has.
pub const MAX_NODE_LABELS: usize = 256;

/// The longest node label name, in bytes (YARN's NodeLabelUtil).
pub const MAX_NODE_LABEL_BYTES: usize = 255;

/// A node label's name as YARN's NodeLabelUtil checks it: one to
/// [`MAX_NODE_LABEL_BYTES`] bytes of A-Z a-z 0-9 _ -, starting with a
/// letter or digit.
pub fn node_label(field: impl Display, text: &str) -> Result<(), OutOfBounds> {
    let ok = text.len() <= MAX_NODE_LABEL_BYTES
        && text
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphanumeric())
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-".contains(&b));
    if ok {
        return Ok(());
    }
    Err(OutOfBounds {
        field: field.to_string(),
        value: format!("{:?}", text.chars().take(40).collect::<String>()),
        rule: format!(
            "but a node label is 1 to {MAX_NODE_LABEL_BYTES} of A-Z a-z 0-9 _ - starting with a letter or digit"
        ),
    })
}

/// A node label expression as YARN takes it on an app or an ask: one
/// label, or empty for the default partition (surrounding spaces are
/// dropped). YARN accepts no `&&` or `||` between labels; neither does Weft.
pub fn node_label_expression(field: impl Display, text: &str) -> Result<String, OutOfBounds> {
    let label = text.trim();
    if label.contains("&&") || label.contains("||") {
        return Err(OutOfBounds {
            field: field.to_string(),
            value: format!("{:?}", text.chars().take(40).collect::<String>()),
            rule: "but an expression names one label: && and || are not supported (as in YARN)"
                .into(),
        });
    }
    if !label.is_empty() {
        node_label(field, label)?;
    }
    Ok(label.to_string())
}

/// The largest quota event log `weft replay` reads (it holds the whole log
/// in memory, parsed, before charging anything): 1 GiB.
/// `weft.quota.event-log-max-mb` is bounded by it, so every log a server
/// writes can be replayed.
pub const MAX_LOG_BYTES: u64 = 1 << 30;

/// How far ahead of now a reservation's deadline may be: 31 days.
pub const MAX_RESERVATION_AHEAD_MS: u64 = 31 * 24 * 3600 * 1000;

/// The most gangs (num-containers ÷ min-concurrency, over all requests) one
/// reservation may have: the agent places one at a time.
pub const MAX_RESERVATION_GANGS: u64 = 100_000;

/// The most reservations one plan holds.
pub const MAX_RESERVATIONS_PER_QUEUE: usize = 10_000;

/// The most reservations one user holds in one plan.
pub const MAX_RESERVATIONS_PER_USER: usize = 1_000;

/// The most records one page holds (and the default).
pub const MAX_ACCOUNTING_PAGE: usize = 10_000;

/// The most instants a run visits (each a submission, an observation or
/// timers due): a step costs microseconds to milliseconds with the
/// scenario's size; beyond it a scenario is refused rather than left to run.
pub const MAX_SIMULATION_STEPS: u64 = 10_000_000;

/// The most rows (a running container at a QUOTA_COMPUTE; containers of
/// one project, user and size share theirs, so this counts high) one replay
/// may charge: its cost grows with rows, not only firings. A million rows
/// (1,000 containers × 1,000 firings) took 21 s in a dev build on a busy
/// 2-core machine, so the maximum is minutes.
pub const MAX_REPLAY_CHARGED_ROWS: u64 = 10_000_000;

/// The most timer firings (QUOTA_COMPUTE and multiplicator steps while
/// containers run) one replay may need: a bound on its running time. Each
/// QUOTA_COMPUTE while containers run prices what is owed in one policy call
/// and writes the ledger. Measured with one container and both timers every
/// second (`builtin:hops-pricing`, dev build, a busy 2-core machine): a
/// million firings take 39 s, 56 s with variable pricing on (a policy call
/// per multiplicator step too), so the maximum is some 7 to 9 minutes.
pub const MAX_REPLAY_TIMER_FIRINGS: u64 = 10_000_000;

/// The most bytes a case file may hold (16 MiB).
pub const MAX_POLICY_CASES_BYTES: usize = 16 << 20;

/// The most cases a case file may hold; blank and `#` lines do not count.
pub const MAX_POLICY_CASES: usize = 10_000;

/// The most one request returns; a client reads on from where it stopped.
pub const MAX_LOG_CHUNK: u64 = 4 << 20;

/// Streams open at once (each holds a connection).
pub const MAX_EVENT_STREAMS: usize = 64;

/// Streams one caller may hold at once (a page, a few tabs): no one user
/// takes every place.
pub const MAX_EVENT_STREAMS_PER_CALLER: usize = 4;

/// The most one topic's event may hold. The apps topic is built with a
/// smaller `limit` until it fits (the `cut` topic says so); another topic
/// beyond it is left out of the stream (its endpoint still answers).
pub const MAX_EVENT_TOPIC_BYTES: usize = 1 << 20;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_wide_sums_of_the_maxima_fit_their_types() {
        assert!((MAX_NODES as u64) * u64::from(MAX_VCORES) <= u64::from(u32::MAX));
        assert!((MAX_NODES as u64) * u64::from(MAX_GPUS) <= u64::from(u32::MAX));
        assert!((MAX_NODES as u64).checked_mul(MAX_MEMORY_MB).is_some());
        assert!(MAX_TIME_MS.checked_add(MAX_DURATION_MS).is_some());
        assert!(MAX_TIME_MS.checked_add(MAX_APP_LIFETIME_S * 1000).is_some());
        const { assert!(MAX_TIME_MS < 1 << 48) };
    }

    #[test]
    fn racks_and_node_attributes_follow_yarns_rules() {
        for good in ["/default-rack", "/dc1/rack-7", "/a.b/c_d/1/2/3/4/5/6"] {
            assert!(rack("rack", good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "/",
            "rack",
            "/a//b",
            "/a/",
            "/a b",
            "/1/2/3/4/5/6/7/8/9",
        ] {
            let error = rack("rack", bad).unwrap_err().to_string();
            assert!(error.starts_with("rack is"), "{bad}: {error}");
        }
        assert!(rack("rack", &format!("/{}", "r".repeat(256))).is_err());
        let check = |pairs: &[(&str, &str)]| {
            let map: std::collections::BTreeMap<String, String> = pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            node_attributes("attributes", map.iter())
        };
        assert!(
            check(&[
                ("gpu-model", "a100"),
                ("nm.yarn.io/os", "linux"),
                ("ssd", "")
            ])
            .is_ok()
        );
        for (key, value) in [
            ("gpu model", "a"),
            ("-gpu", "a"),
            ("a/b/c", "x"),
            ("/os", "x"),
            ("os/", "x"),
            ("os", "-x"),
            ("os", "a b"),
        ] {
            let error = check(&[(key, value)]).unwrap_err().to_string();
            assert!(
                error.starts_with(&format!("attributes.{key}")),
                "{key}={value}: {error}"
            );
        }
        assert!(check(&[("k", &"v".repeat(256))]).is_err());
        let many: Vec<(String, String)> = (0..65).map(|i| (format!("k{i}"), "v".into())).collect();
        let refs: Vec<(&str, &str)> = many.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert!(check(&refs).unwrap_err().to_string().contains("at most 64"));
    }

    #[test]
    fn refusals_name_the_field_and_the_limit() {
        let error = within("asks[0].count", 0u32, 1, MAX_CONTAINERS_PER_ASK).unwrap_err();
        assert_eq!(
            error.to_string(),
            "asks[0].count is 0, but must be from 1 to 100000"
        );
        assert!(name("user", "").is_err());
        assert!(name("user", &"x".repeat(MAX_NAME_BYTES + 1)).is_err());
        assert!(name("user", "a\nb").is_err());
        assert!(name("user", "alice").is_ok());
        assert!(
            at_most("asks", 101, MAX_ASKS_PER_APP)
                .unwrap_err()
                .to_string()
                .contains("at most 100")
        );
    }
}
