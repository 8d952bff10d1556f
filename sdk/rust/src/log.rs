//! Writing to the host's log (`weft:policy/host.log`): [`write`] and the
//! macros [`trace!`](crate::trace), [`debug!`](crate::debug),
//! [`info!`](crate::info), [`warn!`](crate::warn) and
//! [`error!`](crate::error), which format like `format!`.
//!
//! In WebAssembly a line goes to the host, which tags it with the policy's
//! name; `weft policy check`, `test` and `bench` show it when a call fails.
//! Natively (unit tests) there is no host, so it goes to stderr.

pub use crate::bindings::pricing::weft::policy::host::Level;

/// Writes one line at `level`.
pub fn write(level: Level, message: &str) {
    #[cfg(target_arch = "wasm32")]
    crate::bindings::pricing::weft::policy::host::log(level, message);
    #[cfg(not(target_arch = "wasm32"))]
    eprintln!("{}: {message}", name(level));
}

/// How a level is written natively.
#[cfg_attr(target_arch = "wasm32", allow(dead_code))]
fn name(level: Level) -> &'static str {
    match level {
        Level::Trace => "TRACE",
        Level::Debug => "DEBUG",
        Level::Info => "INFO",
        Level::Warn => "WARN",
        Level::Error => "ERROR",
    }
}

/// Logs at trace level: `weft_policy::trace!("{n} candidates")`.
#[macro_export]
macro_rules! trace {
    ($($arg:tt)*) => {
        $crate::log::write($crate::log::Level::Trace, &::std::format!($($arg)*))
    };
}

/// Logs at debug level: `weft_policy::debug!("{n} candidates")`.
#[macro_export]
macro_rules! debug {
    ($($arg:tt)*) => {
        $crate::log::write($crate::log::Level::Debug, &::std::format!($($arg)*))
    };
}

/// Logs at info level: `weft_policy::info!("configured with {n} keys")`.
#[macro_export]
macro_rules! info {
    ($($arg:tt)*) => {
        $crate::log::write($crate::log::Level::Info, &::std::format!($($arg)*))
    };
}

/// Logs at warn level: `weft_policy::warn!("queue {q} has no guarantee")`.
#[macro_export]
macro_rules! warn {
    ($($arg:tt)*) => {
        $crate::log::write($crate::log::Level::Warn, &::std::format!($($arg)*))
    };
}

/// Logs at error level: `weft_policy::error!("cannot price row {i}")`.
#[macro_export]
macro_rules! error {
    ($($arg:tt)*) => {
        $crate::log::write($crate::log::Level::Error, &::std::format!($($arg)*))
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_level_has_a_native_name() {
        let levels = [
            (Level::Trace, "TRACE"),
            (Level::Debug, "DEBUG"),
            (Level::Info, "INFO"),
            (Level::Warn, "WARN"),
            (Level::Error, "ERROR"),
        ];
        for (level, expected) in levels {
            assert_eq!(name(level), expected);
        }
        // The macros compile and write (to stderr, natively).
        crate::info!("{} and {}", 1, "two");
        crate::error!("plain");
    }
}
