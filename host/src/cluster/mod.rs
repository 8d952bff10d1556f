//! The cluster model: nodes, applications (with their asks) and containers,
//! and the bookkeeping that keeps them consistent. Pure state, no I/O and no
//! clock of its own: every change is given the time it happens.

mod accounting_record;
mod active;
mod agent_link;
mod app;
mod constraints;
mod deadlines;
mod decayed_usage;
mod durable;
mod gang;
mod labels;
mod lifetime;
mod locality;
mod master;
mod model;
mod node;
mod preemption_marks;
mod queue_move;
mod table;

pub use accounting_record::AccountingRecord;
pub use agent_link::{AgentReport, HeartbeatOutcome, TakenReport};
pub use app::{
    App, AppFilter, AppState, Ask, AskSpec, ContainerRecord, ExecutionType, Gang, GangSpec,
    GangTimeout, Launch, OTHER_YARN_APP_STATES, SIMULATED_COMMAND_MS, SubmitApp,
};
pub use constraints::{PlacementConstraint, Scope, TagCounts};
pub use decayed_usage::{DecayedUsage, Fading};
pub use durable::{Changes, RestoreError, Restored, StoredCluster};
pub use gang::without_gangs;
pub use labels::{LabelError, NodeLabels};
pub use lifetime::LifetimeRefusal;
#[cfg(test)]
pub(crate) use locality::waiting_for_b;
pub use locality::{Level, Locality, LocalitySpec, MAX_PLACES};
pub use master::{
    AttemptView, BlacklistChange, Completed, FinalStatus, MAX_BLACKLIST, MAX_MASTER_ASK_CONTAINERS,
    MAX_MASTER_ASKS, Master, MasterAsk, MasterAskKey, MasterError, MasterFinish, MasterNews,
    MasterPlaces, attempt_id,
};
pub use model::{
    Allocation, Cluster, ClusterError, Container, EndCause, LOST_NODES_KEPT, LostNode, Placement,
};
pub use node::{AgentInfo, ExcludedRefresh, Node, NodeCounts, NodeKind, NodeState};
pub use table::AppTable;
