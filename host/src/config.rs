//! Settings, by YARN's property names (and `weft.*` for what YARN lacks):
//! defaults, a TOML config file, and `--set KEY=VALUE` overrides, in that order.
//!
//! A config file may nest keys as TOML tables or write them dotted and quoted;
//! both flatten to the same property name. An unknown property or a value of
//! the wrong type is refused with the property's name.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use crate::queues::{QueueError, QueueProperties, QueueTree};

/// What values a property takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueType {
    Flag,
    /// A whole number (milliseconds, megabytes, counts).
    Whole,
    /// A finite number at least 0.
    Number,
    Text,
}

/// Every property Weft knows: (name, type, default, meaning).
pub const PROPERTIES: &[(&str, ValueType, &str, &str)] = &[
    (
        "yarn.resourcemanager.quota.enabled",
        ValueType::Flag,
        "true",
        "charge projects for container usage (HopsYARN's default is false)",
    ),
    (
        "yarn.resourcemanager.quota.price.base.general",
        ValueType::Number,
        "1",
        "credits per second for one unit of CPU or memory",
    ),
    (
        "yarn.resourcemanager.quota.price.base.gpu",
        ValueType::Number,
        "1",
        "credits per second for one GPU unit",
    ),
    (
        "yarn.resourcemanager.quota.min.runtime",
        ValueType::Whole,
        "10000",
        "ms a container is charged for at least",
    ),
    (
        "yarn.resourcemanager.quota.scheduling.period",
        ValueType::Whole,
        "10000",
        "ms between two QUOTA_COMPUTE events",
    ),
    (
        "yarn.resourcemanager.quota.variable.price.enabled",
        ValueType::Flag,
        "false",
        "let the multiplicators follow cluster utilization",
    ),
    (
        "yarn.resourcemanager.quota.multiplicator.interval",
        ValueType::Whole,
        "10000",
        "ms between two multiplicator computations",
    ),
    (
        "yarn.resourcemanager.quota.multiplicator.threshold.general",
        ValueType::Number,
        "0.2",
        "utilization (0..1) above which CPU/memory prices rise",
    ),
    (
        "yarn.resourcemanager.quota.multiplicator.threshold.gpu",
        ValueType::Number,
        "0.2",
        "utilization (0..1) above which GPU prices rise",
    ),
    (
        "yarn.resourcemanager.quota.multiplicator.increment.general",
        ValueType::Number,
        "1",
        "price increase per unit of utilization above the threshold",
    ),
    (
        "yarn.resourcemanager.quota.multiplicator.increment.gpu",
        ValueType::Number,
        "1",
        "GPU price increase per unit of utilization above the threshold",
    ),
    (
        "yarn.resourcemanager.quota.minimum.charged.mb",
        ValueType::Whole,
        "1024",
        "MB of memory that make one charged unit",
    ),
    (
        "yarn.resourcemanager.quota.minimum.charged.gpu",
        ValueType::Whole,
        "1",
        "GPUs that make one charged unit",
    ),
    (
        "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms",
        ValueType::Whole,
        "1000",
        "ms between two heartbeats of a node, told to nodes at registration",
    ),
    (
        "yarn.nm.liveness-monitor.expiry-interval-ms",
        ValueType::Whole,
        "600000",
        "ms without a heartbeat after which a node is lost",
    ),
    (
        "yarn.admin.acl",
        ValueType::Text,
        "*",
        "who administers the cluster: changes queues and policies (YARN ACL syntax)",
    ),
    (
        "weft.security.default-user",
        ValueType::Text,
        "anonymous",
        "the caller of a request without an X-Weft-User header",
    ),
    (
        "weft.security.users-file",
        ValueType::Text,
        "",
        "a TOML file of [users] NAME = [\"group\", …] (empty: no groups)",
    ),
    (
        "yarn.resourcemanager.reservation-system.enable",
        ValueType::Flag,
        "true",
        "accept reservations in reservable queues (YARN's default is false)",
    ),
    (
        "yarn.resourcemanager.reservation-system.max-periodicity",
        ValueType::Whole,
        "86400000",
        "ms; the period of every recurring reservation must divide it",
    ),
    (
        "yarn.resourcemanager.reservation-system.planfollower.time-step",
        ValueType::Whole,
        "1000",
        "ms; the plan's time step: reservations are placed on multiples of it",
    ),
    (
        "yarn.resourcemanager.scheduler.monitor.enable",
        ValueType::Flag,
        "false",
        "reclaim: preempt containers of queues above their guarantee for starved ones",
    ),
    (
        "weft.reclaim.starvation-ms",
        ValueType::Whole,
        "15000",
        "ms a queue below its guarantee waits with unmet demand before reclaim starts",
    ),
    (
        "weft.quota.default-credits",
        ValueType::Number,
        "0",
        "credits a project starts with",
    ),
    (
        "weft.scheduler.interval-ms",
        ValueType::Whole,
        "100",
        "ms between two scheduling rounds",
    ),
    (
        "weft.policy.scheduling",
        ValueType::Text,
        "builtin:capacity",
        "the scheduling policy loaded at start",
    ),
    (
        "weft.policy.pricing",
        ValueType::Text,
        "builtin:hops-pricing",
        "the pricing policy loaded at start",
    ),
    (
        "weft.policy.sharing",
        ValueType::Text,
        "builtin:capacity-over-time",
        "the reservation sharing policy loaded at start",
    ),
    (
        "weft.policy.call-timeout-ms",
        ValueType::Whole,
        "500",
        "ms one policy call may take before it is interrupted",
    ),
    (
        "weft.policy.memory-limit-mb",
        ValueType::Whole,
        "256",
        "MB of linear memory one policy instance may use",
    ),
    (
        "weft.policy.max-consecutive-failures",
        ValueType::Whole,
        "3",
        "failed calls in a row after which a new version is rolled back",
    ),
    (
        "weft.policy.watch-dir",
        ValueType::Text,
        "",
        "a directory whose NAME.KIND.wasm files are loaded when written (empty: off)",
    ),
];

const QUOTA_PREFIX: &str = "yarn.resourcemanager.quota.";

/// The pricing parameters passed to every pricing policy's `configure`.
const PRICING_PARAMETERS: &[&str] = &[
    "price.base.general",
    "price.base.gpu",
    "multiplicator.threshold.general",
    "multiplicator.threshold.gpu",
    "multiplicator.increment.general",
    "multiplicator.increment.gpu",
    "minimum.charged.mb",
    "minimum.charged.gpu",
];

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ConfigError {
    #[error("unknown property {0:?} (see `weft config` for the known ones)")]
    Unknown(String),
    #[error("property {key} must be {expected}, not {value:?}")]
    BadValue {
        key: String,
        expected: &'static str,
        value: String,
    },
    #[error("--set takes KEY=VALUE, not {0:?}")]
    BadOverride(String),
    #[error("cannot read config file {path}: {reason}")]
    File { path: String, reason: String },
}

/// All settings in force: defaults overlaid by the file and `--set`s.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    values: BTreeMap<&'static str, String>,
    /// `yarn.scheduler.capacity.*` properties, checked when the queue tree is built.
    queue_properties: QueueProperties,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            values: PROPERTIES
                .iter()
                .map(|(key, _, default, _)| (*key, default.to_string()))
                .collect(),
            queue_properties: QueueProperties::default(),
        }
    }
}

impl Settings {
    /// Defaults, then `file` if given, then each `KEY=VALUE` override.
    pub fn load(file: Option<&Path>, overrides: &[String]) -> Result<Settings, ConfigError> {
        let mut settings = Settings::default();
        if let Some(path) = file {
            settings.apply_file(path)?;
        }
        for assignment in overrides {
            let (key, value) = assignment
                .split_once('=')
                .ok_or_else(|| ConfigError::BadOverride(assignment.clone()))?;
            // Values as given: a leading space means something in an ACL.
            settings.set(key.trim(), value)?;
        }
        Ok(settings)
    }

    fn apply_file(&mut self, path: &Path) -> Result<(), ConfigError> {
        let file_error = |reason: String| ConfigError::File {
            path: path.display().to_string(),
            reason,
        };
        let text = std::fs::read_to_string(path).map_err(|e| file_error(e.to_string()))?;
        let table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| file_error(e.to_string()))?;
        let mut flat = Vec::new();
        flatten("", &toml::Value::Table(table), &mut flat);
        for (key, value) in flat {
            self.set(&key, &value)?;
        }
        Ok(())
    }

    /// Sets one property, checking its name and the type of its value.
    /// Text values are kept as given; the others are trimmed.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), ConfigError> {
        if key.starts_with(crate::queues::PREFIX) {
            self.queue_properties.set(key, value);
            return Ok(());
        }
        let (name, value_type, ..) = PROPERTIES
            .iter()
            .find(|(name, ..)| *name == key)
            .ok_or_else(|| ConfigError::Unknown(key.into()))?;
        let value = if *value_type == ValueType::Text {
            value
        } else {
            value.trim()
        };
        let bad = |expected| ConfigError::BadValue {
            key: key.into(),
            expected,
            value: value.into(),
        };
        match value_type {
            ValueType::Flag => value
                .parse::<bool>()
                .map(drop)
                .map_err(|_| bad("true or false"))?,
            ValueType::Whole => value
                .parse::<u64>()
                .map(drop)
                .map_err(|_| bad("a whole number"))?,
            ValueType::Number => match value.parse::<f64>() {
                Ok(number) if number.is_finite() && number >= 0.0 => {}
                _ => return Err(bad("a number at least 0")),
            },
            ValueType::Text => {}
        }
        self.values.insert(name, value.to_string());
        Ok(())
    }

    pub fn get(&self, key: &str) -> &str {
        self.values
            .get(key)
            .map(String::as_str)
            .unwrap_or_else(|| panic!("{key} is not a known property"))
    }

    fn number<T: std::str::FromStr>(&self, key: &str) -> T {
        self.get(key)
            .parse()
            .unwrap_or_else(|_| panic!("{key} was checked when set"))
    }

    /// A whole-number property.
    pub fn whole(&self, key: &str) -> u64 {
        self.number(key)
    }

    pub fn flag(&self, key: &str) -> bool {
        self.number(key)
    }

    pub fn millis(&self, key: &str) -> Duration {
        Duration::from_millis(self.number(key))
    }

    pub fn quota(&self) -> QuotaSettings {
        let q = |name: &str| format!("{QUOTA_PREFIX}{name}");
        QuotaSettings {
            enabled: self.flag(&q("enabled")),
            variable_price: self.flag(&q("variable.price.enabled")),
            min_runtime_ms: self.number(&q("min.runtime")),
            scheduling_period_ms: self.number(&q("scheduling.period")),
            multiplicator_interval_ms: self.number(&q("multiplicator.interval")),
            default_credits: self.number("weft.quota.default-credits"),
            unit_memory_mb: self.number(&q("minimum.charged.mb")),
            unit_gpus: self.number(&q("minimum.charged.gpu")),
        }
    }

    /// The standard parameters every pricing policy receives: the quota
    /// properties that shape prices, without the `yarn.resourcemanager.quota.` prefix.
    pub fn pricing_params(&self) -> Vec<(String, String)> {
        PRICING_PARAMETERS
            .iter()
            .map(|name| {
                (
                    name.to_string(),
                    self.get(&format!("{QUOTA_PREFIX}{name}")).to_string(),
                )
            })
            .collect()
    }

    pub fn call_limits(&self) -> crate::policy::CallLimits {
        crate::policy::CallLimits {
            timeout: self.millis("weft.policy.call-timeout-ms"),
            memory_bytes: self.number::<usize>("weft.policy.memory-limit-mb") << 20,
        }
    }

    /// The queue tree: the `--queues` file's properties (or, when nothing
    /// declares `root.queues`, the default root.default at 100 %) overlaid with
    /// those of the config file and `--set`.
    pub fn queue_tree(&self, queues_file: Option<&Path>) -> Result<QueueTree, QueueError> {
        let mut properties = match queues_file {
            Some(path) => QueueProperties::from_file(path)?,
            None => QueueProperties::default(),
        };
        properties.extend(&self.queue_properties);
        if properties
            .get(&format!("{}root.queues", crate::queues::PREFIX))
            .is_none()
        {
            let mut defaults = QueueProperties::defaults();
            defaults.extend(&properties);
            properties = defaults;
        }
        QueueTree::from_properties(&properties)
    }

    /// Access control from `yarn.admin.acl` and the `weft.security.*` properties.
    pub fn security(&self) -> Result<crate::security::Security, String> {
        let users_file = self.get("weft.security.users-file");
        let directory = if users_file.is_empty() {
            crate::security::Directory::default()
        } else {
            crate::security::Directory::from_file(Path::new(users_file))?
        };
        Ok(crate::security::Security {
            directory,
            default_user: self.get("weft.security.default-user").to_string(),
            admins: crate::security::AccessControlList::parse(self.get("yarn.admin.acl")),
        })
    }

    /// Every property and its value, for `weft config`.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, &str)> {
        self.values
            .iter()
            .map(|(key, value)| (*key, value.as_str()))
    }
}

/// The quota service's timing and switches.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QuotaSettings {
    pub enabled: bool,
    pub variable_price: bool,
    pub min_runtime_ms: u64,
    pub scheduling_period_ms: u64,
    pub multiplicator_interval_ms: u64,
    pub default_credits: f64,
    /// The units prices are quoted in (one vcore is always one unit).
    pub unit_memory_mb: u64,
    pub unit_gpus: u32,
}

pub(crate) fn flatten(prefix: &str, value: &toml::Value, out: &mut Vec<(String, String)>) {
    match value {
        toml::Value::Table(table) => {
            for (key, value) in table {
                let key = if prefix.is_empty() {
                    key.clone()
                } else {
                    format!("{prefix}.{key}")
                };
                flatten(&key, value, out);
            }
        }
        toml::Value::String(text) => out.push((prefix.to_string(), text.clone())),
        other => out.push((prefix.to_string(), other.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_hopsyarn_except_quota_enabled() {
        let settings = Settings::default();
        let quota = settings.quota();
        assert!(quota.enabled);
        assert!(!quota.variable_price);
        assert_eq!(
            (
                quota.min_runtime_ms,
                quota.scheduling_period_ms,
                quota.multiplicator_interval_ms
            ),
            (10000, 10000, 10000)
        );
        assert_eq!(
            settings.get("yarn.resourcemanager.quota.minimum.charged.mb"),
            "1024"
        );
        assert_eq!(settings.pricing_params().len(), 8);
    }

    #[test]
    fn file_then_overrides() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("weft.toml");
        std::fs::write(
            &path,
            "\"weft.scheduler.interval-ms\" = 50\n\n[yarn.resourcemanager.quota]\nmin.runtime = 5000\n\"price.base.gpu\" = 3.5\n",
        )
        .unwrap();
        let settings = Settings::load(
            Some(&path),
            &["yarn.resourcemanager.quota.price.base.gpu=4".into()],
        )
        .unwrap();
        assert_eq!(settings.quota().min_runtime_ms, 5000);
        assert_eq!(
            settings.get("yarn.resourcemanager.quota.price.base.gpu"),
            "4"
        );
        assert_eq!(settings.get("weft.scheduler.interval-ms"), "50");
    }

    #[test]
    fn bad_settings_name_the_property() {
        type Expect = fn(&ConfigError) -> bool;
        let cases: [(&str, Expect); 5] = [
            (
                "yarn.resourcemanager.quota.nope=1",
                |e| matches!(e, ConfigError::Unknown(k) if k.ends_with("nope")),
            ),
            ("yarn.resourcemanager.quota.enabled=yes", |e| {
                matches!(e, ConfigError::BadValue { .. })
            }),
            ("yarn.resourcemanager.quota.min.runtime=1.5", |e| {
                matches!(e, ConfigError::BadValue { .. })
            }),
            ("yarn.resourcemanager.quota.price.base.general=-2", |e| {
                matches!(e, ConfigError::BadValue { .. })
            }),
            ("no-equals-sign", |e| {
                matches!(e, ConfigError::BadOverride(_))
            }),
        ];
        for (assignment, expected) in cases {
            let error = Settings::load(None, &[assignment.into()]).unwrap_err();
            assert!(expected(&error), "{assignment}: {error}");
        }
    }
}
