//! What Weft's parts say to each other across a process boundary.

pub mod node;
