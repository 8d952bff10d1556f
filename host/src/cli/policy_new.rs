//! `weft policy new`: writes a standalone policy project — the template of one
//! kind and language, the SDK that language needs and the WIT, all embedded
//! in the binary from the repo's `sdk/` and `wit/` when it was built — into a
//! new directory, and prints how to build, test and load it.

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use include_dir::{Dir, include_dir};

use crate::policy::PolicyKind;

/// The repo's `wit/`, the one source of truth for the WIT a project builds
/// against.
static WIT: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/../wit");

/// The repo's `sdk/`: each language's SDK (`python/weft_policy`,
/// `js/weft-policy.js`, `rust/`) and `templates/LANGUAGE/{common,KIND}`.
static SDK: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/../sdk");

/// The longest policy name accepted.
pub(super) const MAX_NAME_CHARS: usize = 64;

/// Where the Rust SDK (the repo's `sdk/rust`) goes in a Rust project: the
/// same place, so its `wit/` path (two levels up) and the template's
/// dependency on it hold.
const RUST_SDK_DIR: &str = "sdk/rust";

/// Folders of build and test output that never belong in a project, should
/// a developer's checkout have them next to the SDK when `weft` was built.
const SKIPPED_NAMES: &[&str] = &["__pycache__", ".pytest_cache", "node_modules", "target"];

/// The language a policy project is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(super) enum Language {
    Rust,
    Python,
    Js,
}

impl Language {
    fn as_str(self) -> &'static str {
        match self {
            Language::Rust => "rust",
            Language::Python => "python",
            Language::Js => "js",
        }
    }

    fn title(self) -> &'static str {
        match self {
            Language::Rust => "Rust",
            Language::Python => "Python",
            Language::Js => "JavaScript",
        }
    }
}

#[derive(Debug, Args)]
pub(super) struct NewArgs {
    /// The policy's name: lowercase letters, digits and `-`, starting with a
    /// letter, at most 64 characters.
    pub name: String,
    /// pricing, scheduling or sharing.
    #[arg(long)]
    pub kind: PolicyKind,
    /// rust, python or js.
    #[arg(long = "lang")]
    pub language: Language,
    /// Where to write the project (default ./NAME); it must not exist, or be empty.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// One file of a project: its path inside the project and its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ProjectFile {
    pub path: PathBuf,
    pub contents: Vec<u8>,
}

impl ProjectFile {
    /// Scripts are written executable.
    fn executable(&self) -> bool {
        self.path.extension().is_some_and(|ext| ext == "sh")
    }
}

/// The commands that install a project's tools, run its unit tests and build
/// it; `run` adds the contract test and the load, which name the artifact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Steps {
    pub install: String,
    pub test: String,
    pub build: String,
    /// The component the build writes, relative to the project.
    pub artifact: String,
}

impl Steps {
    pub(super) fn new(language: Language, name: &str) -> Steps {
        let crate_name = snake_case(name);
        let (install, test, build, artifact) = match language {
            Language::Rust => (
                "rustup target add wasm32-wasip2",
                "cargo test",
                "cargo build --release --target wasm32-wasip2",
                format!("target/wasm32-wasip2/release/{crate_name}.wasm"),
            ),
            // The project's own virtual environment: nothing goes into the
            // system's Python. It sees the system's packages, so tools
            // installed there at the pinned versions are not fetched again.
            Language::Python => (
                "python3 -m venv --system-site-packages .venv && .venv/bin/python -m pip install -r requirements.txt",
                ".venv/bin/python -m pytest",
                "./build.sh",
                format!("{name}.wasm"),
            ),
            Language::Js => (
                "npm install",
                "npm test",
                "npm run build",
                format!("{name}.wasm"),
            ),
        };
        Steps {
            install: install.into(),
            test: test.into(),
            build: build.into(),
            artifact,
        }
    }
}

/// Why a project cannot be made; each names what to change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum NewError {
    BadName(String),
    NoTemplate {
        language: Language,
        kind: PolicyKind,
    },
    NoSdk {
        language: Language,
        path: &'static str,
    },
}

impl fmt::Display for NewError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NewError::BadName(reason) => write!(f, "policy name: {reason}"),
            NewError::NoTemplate { language, kind } => write!(
                f,
                "this weft carries no {} template for {kind} policies: sdk/templates/{}/{kind} was absent when it was built",
                language.title(),
                language.as_str()
            ),
            NewError::NoSdk { language, path } => write!(
                f,
                "this weft carries no {} SDK: sdk/{path} was absent when it was built",
                language.title()
            ),
        }
    }
}

impl std::error::Error for NewError {}

/// Checks a policy name: lowercase letters, digits and `-`, starting with a
/// letter, at most MAX_NAME_CHARS characters.
pub(super) fn check_name(name: &str) -> Result<(), NewError> {
    let shown: String = name.chars().take(MAX_NAME_CHARS).collect();
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(NewError::BadName(format!(
            "{shown:?}… is longer than {MAX_NAME_CHARS} characters"
        )));
    }
    if !name.starts_with(|c: char| c.is_ascii_lowercase()) {
        return Err(NewError::BadName(format!(
            "{name:?} must start with a lowercase letter (a-z)"
        )));
    }
    if let Some(bad) = name
        .chars()
        .find(|&c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'))
    {
        return Err(NewError::BadName(format!(
            "{name:?} may hold only lowercase letters, digits and '-', not {bad:?}"
        )));
    }
    Ok(())
}

/// `my-pricing` as a Rust crate or Python module name: `my_pricing`.
fn snake_case(name: &str) -> String {
    name.replace('-', "_")
}

/// Every file of a new project, in the order they are written: the template
/// (its language's common files, then its kind's) with placeholders filled,
/// the WIT under `wit/`, and the SDK the language needs.
pub(super) fn project_files(
    name: &str,
    kind: PolicyKind,
    language: Language,
) -> Result<Vec<ProjectFile>, NewError> {
    check_name(name)?;
    let lang = language.as_str();
    let template = SDK
        .get_dir(format!("templates/{lang}/{kind}"))
        .ok_or(NewError::NoTemplate { language, kind })?;
    let placeholders = [
        ("{{name}}", name.to_string()),
        ("{{crate_name}}", snake_case(name)),
        ("{{module_name}}", snake_case(name)),
        ("{{kind}}", kind.as_str().to_string()),
    ];
    let fill = |text: &str| {
        placeholders
            .iter()
            .fold(text.to_string(), |text, (key, value)| {
                text.replace(key, value)
            })
    };

    let mut files = Vec::new();
    let common = SDK.get_dir(format!("templates/{lang}/common"));
    for dir in common.iter().chain([&template]) {
        for (path, contents) in files_under(dir) {
            let path = PathBuf::from(fill(&path.to_string_lossy()));
            let contents = match std::str::from_utf8(contents) {
                Ok(text) => fill(text).into_bytes(),
                Err(_) => contents.to_vec(),
            };
            // A kind's file replaces a common one of the same path.
            files.retain(|file: &ProjectFile| file.path != path);
            files.push(ProjectFile { path, contents });
        }
    }
    for (path, contents) in files_under(&WIT) {
        files.push(ProjectFile {
            path: Path::new("wit").join(path),
            contents: contents.to_vec(),
        });
    }
    files.extend(sdk_files(language)?);
    Ok(files)
}

/// The SDK files a language's project carries, at their place in it.
fn sdk_files(language: Language) -> Result<Vec<ProjectFile>, NewError> {
    let (source, target) = match language {
        Language::Python => ("python/weft_policy", "weft_policy"),
        Language::Rust => ("rust", RUST_SDK_DIR),
        Language::Js => {
            let path = "js/weft-policy.js";
            let file = SDK
                .get_file(path)
                .ok_or(NewError::NoSdk { language, path })?;
            return Ok(vec![ProjectFile {
                path: PathBuf::from("weft-policy.js"),
                contents: file.contents().to_vec(),
            }]);
        }
    };
    let dir = SDK.get_dir(source).ok_or(NewError::NoSdk {
        language,
        path: source,
    })?;
    Ok(files_under(dir)
        .into_iter()
        .map(|(path, contents)| ProjectFile {
            path: Path::new(target).join(path),
            contents: contents.to_vec(),
        })
        .collect())
}

/// The files below `dir`, with paths relative to it, leaving out build and
/// test output (SKIPPED_NAMES, `*.pyc`).
fn files_under(dir: &'static Dir<'static>) -> Vec<(PathBuf, &'static [u8])> {
    let mut found = Vec::new();
    let mut pending = vec![dir];
    while let Some(current) = pending.pop() {
        for file in current.files() {
            if file.path().extension().is_some_and(|ext| ext == "pyc") {
                continue;
            }
            let relative = file.path().strip_prefix(dir.path()).unwrap_or(file.path());
            found.push((relative.to_path_buf(), file.contents()));
        }
        for sub in current.dirs() {
            let skipped = sub
                .path()
                .file_name()
                .is_some_and(|name| SKIPPED_NAMES.iter().any(|skip| name == *skip));
            if !skipped {
                pending.push(sub);
            }
        }
    }
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found
}

/// Writes `files` into `dir`, which must not exist or be empty. A directory
/// this made is removed again if a write fails.
pub(super) fn write_project(dir: &Path, files: &[ProjectFile]) -> anyhow::Result<()> {
    let made = match fs::read_dir(dir) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                bail!(
                    "{} is not empty: weft policy new writes only into a new or empty directory",
                    dir.display()
                );
            }
            false
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
            true
        }
        Err(error) => {
            return Err(error)
                .with_context(|| format!("cannot use {} as the project directory", dir.display()));
        }
    };
    let written = files.iter().try_for_each(|file| write_file(dir, file));
    if written.is_err() && made {
        // Leave nothing half-written behind in a directory this made.
        let _ = fs::remove_dir_all(dir);
    }
    written
}

fn write_file(dir: &Path, file: &ProjectFile) -> anyhow::Result<()> {
    let path = dir.join(&file.path);
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    fs::write(&path, &file.contents).with_context(|| format!("cannot write {}", path.display()))?;
    #[cfg(unix)]
    if file.executable() {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755))
            .with_context(|| format!("cannot make {} executable", path.display()))?;
    }
    Ok(())
}

pub(super) fn run(args: NewArgs) -> anyhow::Result<()> {
    let files = project_files(&args.name, args.kind, args.language)?;
    let dir = args.dir.unwrap_or_else(|| PathBuf::from(&args.name));
    write_project(&dir, &files)?;
    let steps = Steps::new(args.language, &args.name);
    let kind = args.kind;
    println!(
        "Wrote a {kind} policy in {} to {} ({} files). In that directory:",
        args.language.title(),
        dir.display(),
        files.len()
    );
    println!();
    println!("  install:  {}", steps.install);
    println!("  test:     {}", steps.test);
    println!("  build:    {}", steps.build);
    println!("  contract: weft policy test {}", steps.artifact);
    println!("  load:     weft policy load {kind} {}", steps.artifact);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        let longest = format!("a{}", "b".repeat(MAX_NAME_CHARS - 1));
        // (name, the refusal's words or None)
        let cases = [
            ("my-pricing", None),
            ("p2", None),
            (longest.as_str(), None),
            ("", Some("must start with a lowercase letter")),
            ("2fast", Some("must start with a lowercase letter")),
            ("-x", Some("must start with a lowercase letter")),
            ("My-pricing", Some("must start with a lowercase letter")),
            ("my_pricing", Some("not '_'")),
            ("my pricing", Some("not ' '")),
            ("../escape", Some("must start with a lowercase letter")),
            ("a/b", Some("not '/'")),
            ("prïcing", Some("not 'ï'")),
        ];
        for (name, refusal) in cases {
            match (check_name(name), refusal) {
                (Ok(()), None) => {}
                (Err(error), Some(words)) => {
                    let message = error.to_string();
                    assert!(message.contains(words), "{name:?}: {message}");
                }
                (outcome, expected) => panic!("{name:?}: {outcome:?}, expected {expected:?}"),
            }
        }
        let long = format!("{longest}c");
        let message = check_name(&long).unwrap_err().to_string();
        assert!(message.contains("longer than 64 characters"), "{message}");
    }

    fn paths(files: &[ProjectFile]) -> Vec<String> {
        files
            .iter()
            .map(|file| file.path.to_string_lossy().into_owned())
            .collect()
    }

    fn text<'a>(files: &'a [ProjectFile], path: &str) -> &'a str {
        let file = files
            .iter()
            .find(|file| file.path == Path::new(path))
            .unwrap_or_else(|| panic!("no {path} in {:?}", paths(files)));
        std::str::from_utf8(&file.contents).unwrap()
    }

    #[test]
    fn python_and_js_projects_carry_template_sdk_and_wit() {
        for kind in PolicyKind::ALL {
            for (language, policy, sdk) in [
                (Language::Python, "policy.py", "weft_policy/__init__.py"),
                (Language::Js, "policy.js", "weft-policy.js"),
            ] {
                let files = project_files("my-policy", kind, language).unwrap();
                let all = paths(&files);
                for wit in ["wit/policy.wit", "wit/types.wit", "wit/host.wit"] {
                    assert!(
                        all.contains(&wit.to_string()),
                        "{kind} {language:?}: {all:?}"
                    );
                }
                assert!(all.contains(&sdk.to_string()), "{all:?}");
                assert!(text(&files, policy).contains("\"my-policy\""));
                let readme = text(&files, "README.md");
                assert!(readme.starts_with("# my-policy"), "{readme}");
                assert!(readme.contains(&format!("weft policy load {kind} my-policy.wasm")));
                for file in &files {
                    let contents = String::from_utf8_lossy(&file.contents);
                    for placeholder in ["{{name}}", "{{kind}}", "{{crate_name}}", "{{module_name}}"]
                    {
                        assert!(
                            !contents.contains(placeholder),
                            "{:?} keeps {placeholder}",
                            file.path
                        );
                    }
                }
                assert!(
                    !all.iter().any(|path| path.contains("__pycache__")
                        || path.contains(".test.js") && path.starts_with("weft")),
                    "{all:?}"
                );
            }
        }
        let js = project_files("my-policy", PolicyKind::Pricing, Language::Js).unwrap();
        assert!(text(&js, "package.json").contains("--world pricing-policy"));
        let python = project_files("my-policy", PolicyKind::Sharing, Language::Python).unwrap();
        assert!(text(&python, "build.sh").contains("-w sharing-policy"));
    }

    #[test]
    fn a_project_goes_only_into_a_new_or_empty_directory() {
        let root = tempfile::tempdir().unwrap();
        let files = project_files("my-pricing", PolicyKind::Pricing, Language::Python).unwrap();
        let dir = root.path().join("my-pricing");
        write_project(&dir, &files).unwrap();
        let script = dir.join("build.sh");
        assert!(
            fs::read_to_string(&script)
                .unwrap()
                .contains("my-pricing.wasm")
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(&script).unwrap().permissions().mode();
            assert_eq!(mode & 0o111, 0o111, "build.sh is executable");
        }
        let again = write_project(&dir, &files).unwrap_err().to_string();
        assert!(again.contains("is not empty"), "{again}");
        let empty = root.path().join("empty");
        fs::create_dir(&empty).unwrap();
        write_project(&empty, &files).unwrap();
        assert!(empty.join("weft_policy/pricing.py").is_file());
    }

    #[test]
    fn steps_name_the_artifact() {
        assert_eq!(
            Steps::new(Language::Js, "my-pricing").artifact,
            "my-pricing.wasm"
        );
        assert_eq!(
            Steps::new(Language::Rust, "my-pricing").artifact,
            "target/wasm32-wasip2/release/my_pricing.wasm"
        );
    }
}
