//! Time and what runs on virtual time: the clock abstraction, `weft replay`
//! and `weft simulate`.

pub mod clock;
pub mod replay;
pub mod simulate;
pub mod sls;

pub use clock::{Clock, VirtualClock, WallClock};
