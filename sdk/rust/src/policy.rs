//! What every policy is, whatever its kind: a name, a version, and a value
//! built from its parameters.

use crate::Params;

/// The base of every policy (the WIT's `policy` world).
///
/// The export glue answers `describe` from [`Policy::NAME`] and
/// [`Policy::VERSION`], and on `configure` builds the policy value with
/// [`Policy::configure`] and keeps it for every later call on that instance.
/// The host configures each new instance with the same parameters before
/// any other call, so `configure` must give the same value every time it is
/// given the same parameters (no clocks, no randomness).
///
/// `Send` because the glue keeps the value in a `static`.
pub trait Policy: Sized + Send + 'static {
    /// The policy's name, kebab-case: `flat-pricing`. `env!("CARGO_PKG_NAME")`
    /// is the usual choice.
    const NAME: &'static str;

    /// Its version, shown in `weft policy list` and the policy history:
    /// usually `env!("CARGO_PKG_VERSION")`.
    const VERSION: &'static str;

    /// Builds the policy from its parameters, or refuses them with a message
    /// the host shows the operator (the load then changes nothing). Read each
    /// key with [`Params`]' typed getters; keys never asked for are refused
    /// afterwards by the glue, except the standard keys of the policy's kind.
    fn configure(params: &Params) -> Result<Self, String>;
}
