//! The bundled policies, built by `build.rs` and embedded in the binary, and
//! how an operator names a policy: `builtin:NAME` or a path to a `.wasm`.

use std::fmt;
use std::path::PathBuf;

mod generated {
    include!(concat!(env!("OUT_DIR"), "/builtins.rs"));
}

/// Where a policy's component comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicySource {
    /// A policy bundled in the binary, by name (`builtin:NAME`, as in
    /// `builtin:drf`).
    Builtin(String),
    /// A `.wasm` component file on this machine, read when loaded.
    File(PathBuf),
}

impl PolicySource {
    /// `builtin:NAME` names a bundled policy; anything else is a file path.
    pub fn parse(text: &str) -> PolicySource {
        match text.strip_prefix("builtin:") {
            Some(name) => PolicySource::Builtin(name.to_string()),
            None => PolicySource::File(PathBuf::from(text)),
        }
    }

    /// The component's bytes.
    pub fn read(&self) -> Result<Vec<u8>, String> {
        match self {
            PolicySource::Builtin(name) => builtin(name).map(<[u8]>::to_vec).ok_or_else(|| {
                format!(
                    "there is no bundled policy {name:?}; the bundled ones are {}",
                    builtin_names().join(", ")
                )
            }),
            PolicySource::File(path) => std::fs::read(path)
                .map_err(|e| format!("cannot read policy file {}: {e}", path.display())),
        }
    }
}

impl fmt::Display for PolicySource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PolicySource::Builtin(name) => write!(f, "builtin:{name}"),
            PolicySource::File(path) => write!(f, "{}", path.display()),
        }
    }
}

/// The bytes of the bundled policy `name`.
pub fn builtin(name: &str) -> Option<&'static [u8]> {
    generated::BUILTINS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, bytes)| *bytes)
}

/// The names of all bundled policies.
pub fn builtin_names() -> Vec<&'static str> {
    generated::BUILTINS.iter().map(|(name, _)| *name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_parse() {
        assert_eq!(
            PolicySource::parse("builtin:fifo"),
            PolicySource::Builtin("fifo".into())
        );
        assert_eq!(
            PolicySource::parse("./p.wasm"),
            PolicySource::File("./p.wasm".into())
        );
    }

    #[test]
    fn every_bundled_policy_is_embedded() {
        for name in ["hops-pricing", "flat-pricing", "fifo"] {
            let bytes = builtin(name).unwrap_or_else(|| panic!("{name} is not bundled"));
            assert!(bytes.starts_with(b"\0asm"), "{name} is not wasm");
        }
        assert!(
            PolicySource::Builtin("nope".into())
                .read()
                .unwrap_err()
                .contains("hops-pricing")
        );
    }
}
