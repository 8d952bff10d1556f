//! Shared by the bench targets (included with `#[path]`, not a bench itself):
//! where criterion writes its results, and reading back the medians this
//! process measured, so a bench can print ratios from one run.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Criterion's results directory; pass it to `Criterion::output_directory`
/// so the bench and this reader agree: `$CRITERION_HOME`, else
/// `$CARGO_TARGET_DIR/criterion`, else the workspace's `target/criterion`.
pub(crate) fn criterion_dir() -> PathBuf {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return home.into();
    }
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"))
        .join("criterion")
}

/// Results of this process only: files older than `started` are from an
/// earlier run (or from a bench this run filtered out) and are ignored.
#[derive(Debug)]
pub(crate) struct Results {
    dir: PathBuf,
    started: SystemTime,
}

impl Results {
    pub(crate) fn new(dir: PathBuf, started: SystemTime) -> Results {
        Results { dir, started }
    }

    /// The median, in nanoseconds per iteration, of the bench whose full id
    /// is `group/id…/param` (each part as given to criterion).
    pub(crate) fn median_ns(&self, parts: &[&str]) -> Option<f64> {
        let mut file = self.dir.clone();
        for part in parts {
            // criterion's own escaping of ids into directory names
            file.push(part.replace(['?', '"', '/', '\\', '*', '<', '>', ':', '|', '^'], "_"));
        }
        file.push("new/estimates.json");
        let modified = std::fs::metadata(&file).ok()?.modified().ok()?;
        if modified < self.started {
            return None;
        }
        let text = std::fs::read_to_string(&file).ok()?;
        let estimates: serde_json::Value = serde_json::from_str(&text).ok()?;
        estimates["median"]["point_estimate"].as_f64()
    }
}

/// `1234567.0` ns as `1.23 ms`, and so on.
pub(crate) fn duration(ns: f64) -> String {
    match ns {
        ns if ns >= 1e6 => format!("{:.2} ms", ns / 1e6),
        ns if ns >= 1e3 => format!("{:.2} µs", ns / 1e3),
        ns => format!("{ns:.0} ns"),
    }
}
