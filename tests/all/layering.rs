//! The layering of host/src holds: every `crate::…` path in a module names
//! its own floor or one below it (the floors are the block in
//! docs/ARCHITECTURE.md, "Layers"), and no import circle spans more than
//! one folder.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The floors, lowest first, as docs/ARCHITECTURE.md states them.
fn floors(architecture: &str) -> Vec<(String, Vec<String>)> {
    let block = architecture
        .split("<!-- layers: read by tests/all/layering.rs -->")
        .nth(1)
        .expect("docs/ARCHITECTURE.md has the layers block")
        .split("```")
        .nth(1)
        .expect("the layers block is fenced");
    block
        .lines()
        .filter_map(|line| line.split_once(':'))
        .map(|(floor, modules)| {
            let modules = modules.split_whitespace().map(String::from).collect();
            (floor.trim().to_string(), modules)
        })
        .collect()
}

/// One `crate::module` path in a file: (line number, module named).
fn crate_paths(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            let after = &rest[at + "crate::".len()..];
            let name: String = after
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            // `crate::{a, b}` names several; Weft writes one path per `use`.
            if !name.is_empty() {
                found.push((index + 1, name));
            }
            rest = after;
        }
    }
    found
}

/// The top-level module a file of host/src belongs to.
fn module_of(relative: &Path) -> String {
    let first = relative.components().next().expect("a path in host/src");
    let first = first.as_os_str().to_string_lossy();
    first.trim_end_matches(".rs").to_string()
}

fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("host/src is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

/// Every broken rule, one line each: (file, text) pairs against `floors`.
fn violations(files: &[(PathBuf, String)], floors: &[(String, Vec<String>)]) -> Vec<String> {
    let floor_of: BTreeMap<&str, (usize, &str)> = floors
        .iter()
        .enumerate()
        .flat_map(|(level, (floor, modules))| {
            modules
                .iter()
                .map(move |m| (m.as_str(), (level, floor.as_str())))
        })
        .collect();
    let mut broken = Vec::new();
    let mut edges: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for (relative, text) in files {
        let module = module_of(relative);
        if module == "lib" || module == "main" {
            continue;
        }
        let Some(&(level, floor)) = floor_of.get(module.as_str()) else {
            broken.push(format!(
                "host/src/{}: module {module} is on no floor: place it in the layers block of \
                 docs/ARCHITECTURE.md",
                relative.display()
            ));
            continue;
        };
        for (line, named) in crate_paths(text) {
            if named == module {
                continue;
            }
            let Some(&(named_level, named_floor)) = floor_of.get(named.as_str()) else {
                continue; // not a top-level module (a macro or a crate-level item)
            };
            let at = format!("host/src/{}:{line}", relative.display());
            if named_level > level {
                broken.push(format!(
                    "{at}: {module} (floor {floor}) imports {named} (floor {named_floor}, \
                     above it): a module imports only its own floor and those below"
                ));
            }
            edges
                .entry(module.clone())
                .or_default()
                .entry(named)
                .or_insert(at);
        }
    }
    broken.extend(circles(&edges));
    broken
}

/// Import circles between folders: each as the path round it, with where
/// each step is imported.
fn circles(edges: &BTreeMap<String, BTreeMap<String, String>>) -> Vec<String> {
    let mut found = BTreeSet::new();
    for start in edges.keys() {
        // Depth-first from `start`, looking for a way back to it.
        let mut stack = vec![(start.clone(), vec![start.clone()])];
        let mut seen = BTreeSet::new();
        while let Some((at, path)) = stack.pop() {
            for next in edges.get(&at).into_iter().flat_map(|e| e.keys()) {
                if next == start {
                    let mut round = path.clone();
                    // The same circle from each of its folders: keep one.
                    let smallest = (0..round.len()).min_by_key(|&i| &round[i]).unwrap_or(0);
                    round.rotate_left(smallest);
                    found.insert(round);
                } else if seen.insert(next.clone()) {
                    let mut longer = path.clone();
                    longer.push(next.clone());
                    stack.push((next.clone(), longer));
                }
            }
        }
    }
    found
        .into_iter()
        .map(|round| {
            let steps: Vec<String> = round
                .iter()
                .zip(round.iter().cycle().skip(1))
                .map(|(from, to)| format!("{from} → {to} ({})", edges[from][to]))
                .collect();
            format!(
                "an import circle spans {} folders: {}: no circle may span more than one folder",
                round.len(),
                steps.join(", ")
            )
        })
        .collect()
}

fn host_sources() -> Vec<(PathBuf, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut paths = Vec::new();
    rust_files(&src, &mut paths);
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("a readable source file");
            let relative = path
                .strip_prefix(&src)
                .expect("under host/src")
                .to_path_buf();
            (relative, text)
        })
        .collect()
}

fn architecture() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/ARCHITECTURE.md");
    std::fs::read_to_string(path).expect("docs/ARCHITECTURE.md is readable")
}

#[test]
fn host_src_keeps_its_floors() {
    let floors = floors(&architecture());
    let broken = violations(&host_sources(), &floors);
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

/// `host_sources()` with one more file.
fn with_file(path: &str, text: &str) -> Vec<String> {
    let mut files = host_sources();
    files.push((PathBuf::from(path), text.into()));
    violations(&files, &floors(&architecture()))
}

#[test]
fn an_upward_import_is_named() {
    let broken = with_file(
        "store/upward.rs",
        "// crate::rm in a comment is no import\nuse crate::rm::ResourceManager;\n",
    );
    assert_eq!(
        broken[0],
        "host/src/store/upward.rs:2: store (floor ground) imports rm (floor rm, above it): a \
         module imports only its own floor and those below"
    );
    // Reaching up closes circles through the modules above, named too.
    assert!(
        broken[1..]
            .iter()
            .all(|b| b.starts_with("an import circle"))
    );
}

#[test]
fn a_circle_on_one_floor_is_named() {
    let broken = with_file("cluster/circle.rs", "use crate::scheduler::diagnostics;\n");
    assert!(
        broken[0].starts_with(
            "an import circle spans 2 folders: cluster → scheduler \
             (host/src/cluster/circle.rs:1), scheduler → cluster (host/src/scheduler/"
        ),
        "{}",
        broken.join("\n")
    );
    assert!(
        broken
            .iter()
            .all(|b| b.contains("host/src/cluster/circle.rs:1"))
    );
}

#[test]
fn a_module_on_no_floor_is_named() {
    let broken = with_file("newfloor/mod.rs", "");
    assert_eq!(
        broken,
        [
            "host/src/newfloor/mod.rs: module newfloor is on no floor: place it in the layers \
          block of docs/ARCHITECTURE.md"
        ]
    );
}
