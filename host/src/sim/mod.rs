//! The tools that run on virtual time: `weft replay` and `weft simulate`.

pub mod replay;
pub mod simulate;
pub mod sls;
