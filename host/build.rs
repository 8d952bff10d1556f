//! Builds the bundled policies (policies/*) and the test guests (tests/guests/*)
//! for wasm32-wasip2 with a nested cargo, embeds the bundled ones in the binary,
//! and tells tests where the guests are.
//!
//! The nested cargo uses its own target directory: sharing the outer one would
//! wait forever on the build lock the outer cargo holds.

use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const WASM_TARGET: &str = "wasm32-wasip2";
const PROFILE: &str = "policy";

fn main() {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let workspace = manifest_dir.parent().unwrap().to_path_buf();
    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap());

    for watched in [
        "policies",
        "sdk",
        "tests/guests",
        "wit",
        "Cargo.toml",
        "Cargo.lock",
        ".cargo/config.toml",
    ] {
        println!(
            "cargo:rerun-if-changed={}",
            workspace.join(watched).display()
        );
    }

    let bundled = guest_crates(&workspace.join("policies"));
    let test_guests = guest_crates(&workspace.join("tests/guests"));

    ensure_wasm_target();

    // target/debug/build/weft-host-HASH/out -> target/wasm-guests, shared by all profiles.
    let target_dir = out_dir.ancestors().nth(4).unwrap().join("wasm-guests");
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut build = Command::new(cargo);
    build
        .current_dir(&workspace)
        .args(["build", "--profile", PROFILE, "--target", WASM_TARGET])
        .arg("--target-dir")
        .arg(&target_dir);
    for name in bundled.iter().chain(&test_guests) {
        build.args(["-p", name]);
    }
    // The outer build's flags and wrappers are for the host, not the guests.
    for (key, _) in env::vars() {
        let keep = matches!(key.as_str(), "CARGO_HOME" | "CARGO_MAKEFLAGS");
        if (key.starts_with("CARGO_") && !keep)
            || matches!(
                key.as_str(),
                "RUSTFLAGS" | "RUSTC_WORKSPACE_WRAPPER" | "RUSTDOCFLAGS"
            )
        {
            build.env_remove(key);
        }
    }
    let status = build
        .status()
        .expect("could not start the nested cargo build");
    assert!(
        status.success(),
        "building the wasm policies failed: {status}"
    );

    let artifacts = target_dir.join(WASM_TARGET).join(PROFILE);
    let mut builtins = String::from(
        "/// The bundled policies: (name, component bytes), named `builtin:NAME`.\n\
         pub(super) const BUILTINS: &[(&str, &[u8])] = &[\n",
    );
    for name in &bundled {
        let wasm = copy_artifact(&artifacts, name, &out_dir);
        writeln!(
            builtins,
            "    ({name:?}, include_bytes!({:?})),",
            wasm.display()
        )
        .unwrap();
    }
    builtins.push_str("];\n");
    fs::write(out_dir.join("builtins.rs"), builtins).unwrap();

    for name in &test_guests {
        let wasm = copy_artifact(&artifacts, name, &out_dir);
        let var = format!("WEFT_GUEST_{}", name.to_uppercase().replace('-', "_"));
        println!("cargo:rustc-env={var}={}", wasm.display());
    }
}

/// Names of the crates directly under `dir` (one folder per crate).
fn guest_crates(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|entry| entry.ok())
        .filter(|entry| entry.path().join("Cargo.toml").is_file())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn copy_artifact(artifacts: &Path, crate_name: &str, out_dir: &Path) -> PathBuf {
    let file = format!("{}.wasm", crate_name.replace('-', "_"));
    let from = artifacts.join(&file);
    let to = out_dir.join(&file);
    fs::copy(&from, &to).unwrap_or_else(|e| panic!("missing guest {}: {e}", from.display()));
    to
}

/// A toolchain that was installed before rust-toolchain.toml listed the wasm
/// target does not get it automatically; add it once, and say so.
fn ensure_wasm_target() {
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let sysroot = Command::new(&rustc)
        .args(["--print", "sysroot"])
        .output()
        .expect("could not run rustc --print sysroot");
    let sysroot = String::from_utf8_lossy(&sysroot.stdout).trim().to_string();
    if Path::new(&sysroot)
        .join("lib/rustlib")
        .join(WASM_TARGET)
        .is_dir()
    {
        return;
    }
    println!(
        "cargo:warning=installing the {WASM_TARGET} target with rustup (needed once to build the bundled policies)"
    );
    let status = Command::new("rustup")
        .args(["target", "add", WASM_TARGET])
        .status()
        .expect("the wasm32-wasip2 target is missing and rustup could not be run to add it");
    assert!(
        status.success(),
        "rustup target add {WASM_TARGET} failed: {status}"
    );
}
