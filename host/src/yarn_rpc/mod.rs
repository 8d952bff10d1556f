//! YARN's own RPC protocols over Hadoop IPC (version 9): clients submit and
//! watch apps (ApplicationClientProtocol), application masters ask for
//! containers (ApplicationMasterProtocol), as a YARN ResourceManager serves
//! them. ../../docs/yarn-applications.md says what a client may expect.

pub mod client_protocol;
pub mod connection;
pub mod credentials;
pub mod delegation;
pub mod error;
pub mod frame;
pub mod master_protocol;
pub mod messages;
pub mod reports;
pub mod sasl;
pub mod server;
