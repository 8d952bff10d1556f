//! `weft-policy`: the SDK for writing Weft policies in Rust.
//!
//! A Weft policy is a WebAssembly component of one of three worlds
//! (`wit/`): pricing, scheduling or reservation sharing. With this crate a
//! policy is plain Rust:
//!
//! 1. a type implementing [`Policy`] (its name, version, and how it is built
//!    from its parameters with [`Params`]) and the trait of its kind —
//!    [`PricingPolicy`], [`SchedulingPolicy`] or [`SharingPolicy`];
//! 2. one line of glue at the top of the crate, which does nothing outside
//!    WebAssembly: `weft_policy::export_pricing!(MyPricing);` (or
//!    [`export_scheduling!`], [`export_sharing!`]).
//!
//! The crate is a `cdylib` (the component) and an `rlib` (the same code,
//! native, for unit tests): `cargo test` natively, `cargo build --target
//! wasm32-wasip2` for the component.
//!
//! What the glue does for you:
//!
//! - keeps the value `configure` built and calls your trait methods on it;
//! - checks every input into a view ([`scheduling::Snapshot`],
//!   [`pricing::Usage`], [`sharing::Admission`]…): columns of one length,
//!   finite numbers, indices in range, every documented sentinel given its
//!   meaning. A malformed input traps with a message in the host's log; your
//!   code never sees one;
//! - refuses parameters your `configure` never asked for, except the
//!   standard keys of your kind;
//! - installs a panic hook that writes a panic's message and location to the
//!   host's log (level error) before the trap.
//!
//! Log with [`info!`], [`warn!`], [`error!`], [`debug!`] and [`trace!`]. The
//! helpers the bundled policies share are here too: [`Resources`] and
//! [`Cluster`] (dominant shares), [`scheduling::FreeNodes`] and
//! [`scheduling::NoRoom`] (finding room on nodes), and the timeline walks
//! and integrals of [`sharing`].

pub mod bindings;
#[doc(hidden)]
pub mod glue;
pub mod log;
mod malformed;
mod panic_hook;
pub mod params;
mod policy;
pub mod pricing;
pub mod resources;
pub mod scheduling;
pub mod sharing;

/// The WIT types every world shares: `Resources`, `PolicyInfo`,
/// `PolicyKind`, `Params`.
pub use bindings::pricing::weft::policy::types;

pub use malformed::Malformed;
pub use params::Params;
pub use policy::Policy;
pub use pricing::PricingPolicy;
pub use resources::{Cluster, DIMENSIONS, Dimension, Resources};
pub use scheduling::SchedulingPolicy;
pub use sharing::SharingPolicy;
pub use types::PolicyKind;
