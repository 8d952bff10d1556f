//! The checks of a launch order: ids, user, command and environment within
//! bounds (the server checks too; the agent must never trust it).

use super::*;

// The bounds are the server's own (`limits.rs`), checked again here: the
// agent must never trust an order.
use crate::limits::{
    MAX_COMMAND_BYTES, MAX_COMMAND_WORDS, MAX_ENV_VALUE_BYTES, MAX_ENV_VARS, MAX_NAME_BYTES,
};

/// The longest environment variable name an order may set.
pub(super) const MAX_ENV_KEY_BYTES: usize = 256;

/// Ids become path components: `[A-Za-z0-9_.-]+`, at most 256 bytes, not
/// `.` or `..`.
pub(super) fn check_id(field: &str, id: &str) -> Result<(), String> {
    if !crate::agent::logs::is_safe_id(id) {
        return Err(format!(
            "{field} {:?} is not valid: 1 to {MAX_NAME_BYTES} bytes of [A-Za-z0-9_.-], not . or ..",
            shorten(id)
        ));
    }
    Ok(())
}

pub(super) fn check_user(user: &str) -> Result<(), String> {
    if user.is_empty() || user.len() > MAX_NAME_BYTES || user.contains('\0') {
        return Err(format!(
            "user {:?} is not valid: 1 to {MAX_NAME_BYTES} bytes, no NUL",
            shorten(user)
        ));
    }
    Ok(())
}

pub(super) fn check_command(command: &ContainerCommand) -> Result<(), String> {
    match command {
        ContainerCommand::Argv(argv) => {
            if argv.is_empty() || argv.len() > MAX_COMMAND_WORDS {
                return Err(format!(
                    "command: argv has {} arguments, must have 1 to {MAX_COMMAND_WORDS}",
                    argv.len()
                ));
            }
            if let Some(index) = argv.iter().position(|arg| arg.contains('\0')) {
                return Err(format!("command: argument {index} contains a NUL byte"));
            }
            let total: usize = argv.iter().map(String::len).sum();
            if total > MAX_COMMAND_BYTES {
                return Err(format!(
                    "command: argv is {total} bytes, at most {MAX_COMMAND_BYTES}"
                ));
            }
        }
        ContainerCommand::Shell(line) => {
            if line.trim().is_empty() {
                return Err("command: the shell line is empty".to_owned());
            }
            if line.contains('\0') {
                return Err("command: the shell line contains a NUL byte".to_owned());
            }
            if line.len() > MAX_COMMAND_BYTES {
                return Err(format!(
                    "command: the shell line is {} bytes, at most {MAX_COMMAND_BYTES}",
                    line.len()
                ));
            }
        }
    }
    Ok(())
}

pub(super) fn check_env(env: &BTreeMap<String, String>) -> Result<(), String> {
    if env.len() > MAX_ENV_VARS {
        return Err(format!(
            "env: {} variables, at most {MAX_ENV_VARS}",
            env.len()
        ));
    }
    for (key, value) in env {
        let mut bytes = key.bytes();
        let well_formed = bytes
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
            && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if !well_formed || key.len() > MAX_ENV_KEY_BYTES {
            return Err(format!(
                "env: key {:?} is not a variable name ([A-Za-z_][A-Za-z0-9_]*, at most {MAX_ENV_KEY_BYTES} bytes)",
                shorten(key)
            ));
        }
        if value.len() > MAX_ENV_VALUE_BYTES {
            return Err(format!(
                "env: the value of {key} is {} bytes, at most {MAX_ENV_VALUE_BYTES}",
                value.len()
            ));
        }
        if value.contains('\0') {
            return Err(format!("env: the value of {key} contains a NUL byte"));
        }
    }
    Ok(())
}

/// At most 64 characters of something from outside, for messages.
pub(super) fn shorten(text: &str) -> String {
    match text.char_indices().nth(64) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}
