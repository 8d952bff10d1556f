//! The cluster model: nodes, applications (with their asks) and containers,
//! and the bookkeeping that keeps them consistent. Pure state, no I/O and no
//! clock of its own: every change is given the time it happens.

mod app;
mod model;
mod node;
mod resources;
mod table;

pub use app::{App, AppFilter, AppState, Ask, AskSpec, OTHER_YARN_APP_STATES, SubmitApp};
pub use model::{Allocation, Cluster, ClusterError, Container, EndCause, Placement};
pub use node::{Node, NodeKind};
pub use resources::Resources;
pub use table::AppTable;
