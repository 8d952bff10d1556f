//! RM delegation tokens as a use case: a user authenticated by a bearer
//! token gets a token a YARN client carries to the client port in token
//! mode (`yarn_rpc/delegation.rs` says what it stands for).

use super::ResourceManager;
use crate::security::Caller;
use crate::yarn_rpc::delegation::{self, Issued};

impl ResourceManager {
    /// An RM delegation token for `caller`, naming `renewer`, under the
    /// process's YARN token keys.
    pub fn issue_delegation_token(&self, caller: &Caller, renewer: &str) -> Result<Issued, String> {
        if !renewer.is_empty() {
            crate::limits::name("renewer", renewer).map_err(|e| e.to_string())?;
        }
        let keys = self
            .cluster
            .token_keys()
            .ok_or("this server has no key for YARN's tokens")?;
        let now = i64::try_from(self.now()).unwrap_or(i64::MAX);
        tracing::info!(owner = %caller.user, %renewer, "RM delegation token issued");
        Ok(delegation::issue(keys, &caller.user, renewer, now))
    }
}
