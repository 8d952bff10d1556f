//! The development trigger: watch a directory and load every policy written
//! into it. A file's kind is in its name — `NAME.pricing.wasm` or
//! `NAME.scheduling.wasm` — so `cp target/…/my_policy.wasm dir/my.pricing.wasm`
//! swaps the pricing policy of a running host.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use notify::{EventKind, RecursiveMode, Watcher};

use super::policy_load::{Component, LoadRight, PolicyLoad, Target};
use crate::policy::{PolicyKind, PolicyRuntime, PolicySource};

/// Writes often arrive as several events; wait this long for them to settle.
const SETTLE: Duration = Duration::from_millis(300);

/// The kind a watched file is loaded as, from its name.
pub fn kind_of(path: &Path) -> Option<PolicyKind> {
    let name = path.file_name()?.to_str()?;
    let stem = name.strip_suffix(".wasm")?;
    PolicyKind::ALL
        .into_iter()
        .find(|kind| stem.ends_with(&format!(".{kind}")) || stem == kind.as_str())
}

/// Watches `dir` on a thread of its own until the process ends. Files already
/// there are loaded first, in name order.
pub fn watch(runtime: Arc<PolicyRuntime>, dir: PathBuf) -> notify::Result<()> {
    std::fs::create_dir_all(&dir).map_err(notify::Error::io)?;
    let (events, changes) = mpsc::channel();
    let mut watcher = notify::recommended_watcher(events)?;
    watcher.watch(&dir, RecursiveMode::NonRecursive)?;
    let mut existing: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(notify::Error::io)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| kind_of(p).is_some())
        .collect();
    existing.sort();
    std::thread::Builder::new()
        .name("weft-policy-watch".into())
        .spawn(move || {
            let _watcher = watcher; // dropped, and the watch ends, with this thread
            for path in existing {
                load(&runtime, &path);
            }
            while let Ok(first) = changes.recv() {
                let mut touched = Vec::new();
                let mut collect = |event: notify::Result<notify::Event>| {
                    if let Ok(event) = event
                        && matches!(event.kind, EventKind::Create(_) | EventKind::Modify(_))
                    {
                        touched.extend(event.paths.into_iter().filter(|p| kind_of(p).is_some()));
                    }
                };
                collect(first);
                while let Ok(more) = changes.recv_timeout(SETTLE) {
                    collect(more);
                }
                touched.sort();
                touched.dedup();
                for path in touched {
                    load(&runtime, &path);
                }
            }
        })
        .map_err(notify::Error::io)?;
    tracing::info!(dir = %dir.display(), "watching for policies (NAME.pricing.wasm, NAME.scheduling.wasm)");
    Ok(())
}

fn load(runtime: &PolicyRuntime, path: &Path) {
    let Some(kind) = kind_of(path) else { return };
    let load = PolicyLoad {
        kind,
        component: Component::Source(PolicySource::File(path.to_path_buf())),
        params: Vec::new(),
        target: Target::Active,
    };
    // The load logs and counts its own outcome; a refused file changes nothing.
    let _ = load.run(runtime, LoadRight::operator());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_comes_from_the_file_name() {
        let cases = [
            ("my.pricing.wasm", Some(PolicyKind::Pricing)),
            ("pricing.wasm", Some(PolicyKind::Pricing)),
            ("fifo-v2.scheduling.wasm", Some(PolicyKind::Scheduling)),
            ("notes.txt", None),
            ("policy.wasm", None),
        ];
        for (name, kind) in cases {
            assert_eq!(kind_of(Path::new(name)), kind, "{name}");
        }
    }
}
