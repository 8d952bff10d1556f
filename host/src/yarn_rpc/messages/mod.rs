//! The protobuf messages of Hadoop IPC and of YARN's protocols that Weft
//! reads and writes, as Weft's own prost definitions: field names, numbers,
//! types and proto2 defaults are the protocol's (Hadoop 3.4.1's .proto
//! files); only the fields Weft uses are declared, the rest a decoder skips.

/// The request and response messages of YARN's three protocols.
pub mod calls;
/// Hadoop IPC's messages (`hadoop.common`): headers, context, SASL, tokens.
pub mod ipc;
/// YARN's records (yarn_protos.proto): ids, resources, reports, contexts.
pub mod records;
/// YARN's token identifiers (yarn_security_token.proto) and token kinds.
pub mod tokens;
