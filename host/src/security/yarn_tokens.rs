//! The secrets behind the tokens YARN's application masters carry: an
//! AMRMToken (the master to the scheduler port), an NMToken (the master to
//! a node's ContainerManagementProtocol) and a container token (leave to
//! start one container); and behind the RM delegation token a YARN client
//! carries to the client port in token mode. Each password is an HMAC of the token's
//! identifier, so a token cannot be forged or moved to another identifier;
//! nothing outside Weft checks these passwords (Hadoop's clients only carry
//! them).
//!
//! The resource manager keeps one random master key (in memory: a restart
//! invalidates the tokens of masters still running); each node gets a key
//! of its own derived from it, sent at registration, with which its agent
//! checks NMTokens and container tokens without asking the server.
//!
//! NMTokens' and container tokens' passwords are of their identifier's
//! bytes (made where the master is answered, checked by the agent). An
//! AMRMToken's is of the attempt it names (`appattempt_…`): the cluster
//! gives the password with the master's launch, the agent writes the
//! identifier, and the scheduler port accepts only that identifier's one
//! encoding.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// An HMAC-SHA256 key.
type Key = [u8; 32];

fn hmac(key: &Key, domain: &[u8], message: &[u8]) -> Vec<u8> {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC takes any key");
    // The domain keeps one kind's password from passing for another's.
    mac.update(domain);
    mac.update(&[0]);
    mac.update(message);
    mac.finalize().into_bytes().to_vec()
}

/// Whether `given` is `expected`, in time that does not depend on where they
/// differ.
pub fn same_password(given: &[u8], expected: &[u8]) -> bool {
    given.len() == expected.len()
        && given
            .iter()
            .zip(expected)
            .fold(0u8, |diff, (a, b)| diff | (a ^ b))
            == 0
}

/// The resource manager's master key.
#[derive(Clone)]
pub struct TokenKeys {
    master: Key,
}

impl std::fmt::Debug for TokenKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenKeys(…)")
    }
}

impl TokenKeys {
    /// A fresh random master key.
    pub fn random() -> anyhow::Result<TokenKeys> {
        let mut master = [0u8; 32];
        getrandom::fill(&mut master)
            .map_err(|e| anyhow::anyhow!("no randomness for the YARN token key: {e}"))?;
        Ok(TokenKeys { master })
    }

    /// The password of the AMRMToken of application attempt `attempt`.
    pub fn amrm_password(&self, attempt: &str) -> Vec<u8> {
        hmac(&self.master, b"amrm", attempt.as_bytes())
    }

    /// The password of the RM delegation token with these identifier
    /// bytes (a YARN client's proof of its user on the client port in
    /// token mode).
    pub fn rm_delegation_password(&self, identifier: &[u8]) -> Vec<u8> {
        hmac(&self.master, b"rm-delegation", identifier)
    }

    /// Node `node_id`'s key.
    pub fn node_key(&self, node_id: &str) -> NodeTokenKey {
        let derived = hmac(&self.master, b"node", node_id.as_bytes());
        let mut key = [0u8; 32];
        key.copy_from_slice(&derived);
        NodeTokenKey { key }
    }
}

/// One node's key: the passwords of its NMTokens and container tokens.
#[derive(Clone, PartialEq, Eq)]
pub struct NodeTokenKey {
    key: Key,
}

impl std::fmt::Debug for NodeTokenKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NodeTokenKey(…)")
    }
}

impl NodeTokenKey {
    /// The key as the registration's answer carries it (hex).
    pub fn to_hex(&self) -> String {
        hex::encode(self.key)
    }

    /// The key from its hex form, if it is one.
    pub fn from_hex(text: &str) -> Option<NodeTokenKey> {
        let bytes = hex::decode(text).ok()?;
        let key: Key = bytes.try_into().ok()?;
        Some(NodeTokenKey { key })
    }

    /// The password of the NMToken with these identifier bytes.
    pub fn nm_password(&self, identifier: &[u8]) -> Vec<u8> {
        hmac(&self.key, b"nm", identifier)
    }

    /// The password of the container token with these identifier bytes.
    pub fn container_password(&self, identifier: &[u8]) -> Vec<u8> {
        hmac(&self.key, b"container", identifier)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_depend_on_the_kind_the_identifier_and_the_node() {
        let keys = TokenKeys::random().unwrap();
        let a = keys.node_key("a");
        let b = keys.node_key("b");
        assert_eq!(a, keys.node_key("a"));
        assert_ne!(a.nm_password(b"x"), b.nm_password(b"x"));
        assert_ne!(a.nm_password(b"x"), a.container_password(b"x"));
        assert_ne!(a.nm_password(b"x"), a.nm_password(b"y"));
        assert_ne!(
            keys.amrm_password("x"),
            TokenKeys::random().unwrap().amrm_password("x")
        );
        assert_eq!(NodeTokenKey::from_hex(&a.to_hex()), Some(a));
        assert_eq!(NodeTokenKey::from_hex("00"), None);
        assert!(same_password(b"abc", b"abc"));
        assert!(!same_password(b"abc", b"abd"));
        assert!(!same_password(b"abc", b"ab"));
    }
}
