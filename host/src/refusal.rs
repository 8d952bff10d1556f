//! What kind of "no" a call to the resource manager got, in its own terms.
//! Each domain error (`RequestError`, `ReservationError`, `SystemError`)
//! says which kind it is; the REST API alone turns a kind into an HTTP
//! status (`api/error.rs`), so the domain knows nothing of HTTP.

/// Why a call was not carried out: a refusal of the request as things stand,
/// or (`Fault`) a failure of the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Malformed, out of bounds or impossible as asked: the request must change.
    Invalid,
    /// The caller has no right to do it.
    NotAllowed,
    /// It names a queue, app, node, container or reservation there is none of.
    Unknown,
    /// It clashes with what is there now: a limit reached, something done already.
    Conflict,
    /// The service it needs is switched off.
    Off,
    /// Not the caller's doing: the store, a policy or the host failed.
    Fault,
}
