//! Time and what runs on virtual time: the clock abstraction and `weft replay`.

pub mod clock;
pub mod replay;

pub use clock::{Clock, VirtualClock, WallClock};
