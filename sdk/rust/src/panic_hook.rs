//! The panic hook the export glue installs before a policy's first call: it
//! writes the panic's message and location to the host's log at error level,
//! then runs the hook that was there before (std's, which prints to stderr).
//! A panic in WebAssembly is a trap, and without this the host would only
//! see "wasm `unreachable` instruction executed".

use std::panic::{self, PanicHookInfo};
use std::sync::Once;

use crate::log::{self, Level};

static INSTALLED: Once = Once::new();

/// Installs the hook; later calls do nothing.
pub fn install() {
    INSTALLED.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            log::write(Level::Error, &describe(info));
            previous(info);
        }));
    });
}

/// `panicked at src/lib.rs:12:5: the message`.
fn describe(info: &PanicHookInfo<'_>) -> String {
    let message = info.payload_as_str().unwrap_or("(a panic with no message)");
    match info.location() {
        Some(at) => format!(
            "panicked at {}:{}:{}: {message}",
            at.file(),
            at.line(),
            at.column()
        ),
        None => format!("panicked: {message}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[test]
    fn a_panic_is_described_with_its_message_and_location() {
        // Catch what the hook would log, through a hook of the same shape.
        // The hook is the process's: only this thread's panic is kept, as
        // other tests may panic on purpose meanwhile.
        let seen = Arc::new(Mutex::new(String::new()));
        let previous = panic::take_hook();
        let sink = Arc::clone(&seen);
        let this_test = std::thread::current().id();
        panic::set_hook(Box::new(move |info| {
            if std::thread::current().id() == this_test {
                *sink.lock().unwrap() = describe(info);
            }
        }));
        let outcome = panic::catch_unwind(|| panic!("bad input: {}", 42));
        panic::set_hook(previous);
        assert!(outcome.is_err());
        let line = seen.lock().unwrap().clone();
        assert!(line.starts_with("panicked at "), "{line}");
        assert!(line.contains("panic_hook.rs:"), "{line}");
        assert!(line.ends_with(": bad input: 42"), "{line}");
        // Installing twice is harmless.
        install();
        install();
    }
}
