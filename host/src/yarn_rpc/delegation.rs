//! RM delegation tokens: how a YARN client proves who it is on the client
//! port in token mode. A user with a bearer token asks for one over REST
//! (YARN's `POST /ws/v1/cluster/delegation-token`, or `weft token yarn`,
//! which writes it into a Hadoop credentials file); Hadoop's client, given
//! that file in `HADOOP_TOKEN_FILE_LOCATION`, authenticates with it (SASL
//! DIGEST-MD5) and its calls are the token's owner's, under the same ACLs,
//! projects and limits as that user's REST calls.
//!
//! A token lapses a day after it is issued (YARN's renew interval; Weft
//! does not renew), when the server restarts (its key is the process's),
//! and when its owner's bearer tokens are revoked: it stands only while
//! the owner holds a bearer token created no later than it was issued.
//! Whether it stands is asked only of a client that proved it holds the
//! token, at authentication and before each call, so an open connection
//! loses it too and no one else learns anything from the answer.

use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};

use prost::Message;

use super::credentials::Token;
use super::messages::tokens::{RM_DELEGATION_TOKEN_KIND, YARNDelegationTokenIdentifierProto};
use super::sasl::TokenPasswords;
use crate::clock::Clock;
use crate::security::TokenVerifier;
use crate::security::yarn_tokens::TokenKeys;

/// How long a token stands after it is issued: a day, YARN's
/// `yarn.resourcemanager.delegation.token.renew-interval`.
pub const LIFETIME_MS: i64 = 24 * 60 * 60 * 1000;

/// The id tokens name as their key's (one key per process).
const MASTER_KEY_ID: i32 = 1;

/// Tokens issued by this process, for their sequence numbers.
static ISSUED: AtomicI32 = AtomicI32::new(0);

/// A token issued to a user.
#[derive(Debug, Clone)]
pub struct Issued {
    /// The token, its service empty: the client names the address it is
    /// for (`weft token yarn`, or Hadoop's `SecurityUtil.setTokenService`).
    pub token: Token,
    /// Its owner.
    pub owner: String,
    /// Who may renew it (recorded; Weft does not renew).
    pub renewer: String,
    /// When it lapses, ms since the epoch.
    pub max_date: i64,
}

/// A token for `owner` under `keys`, issued at `now_ms`.
pub fn issue(keys: &TokenKeys, owner: &str, renewer: &str, now_ms: i64) -> Issued {
    let max_date = now_ms.saturating_add(LIFETIME_MS);
    let identifier = YARNDelegationTokenIdentifierProto {
        owner: Some(owner.to_string()),
        renewer: Some(renewer.to_string()),
        real_user: Some(String::new()),
        issue_date: Some(now_ms),
        max_date: Some(max_date),
        sequence_number: Some(ISSUED.fetch_add(1, Ordering::Relaxed).wrapping_add(1)),
        master_key_id: Some(MASTER_KEY_ID),
    }
    .encode_to_vec();
    let password = keys.rm_delegation_password(&identifier);
    Issued {
        token: Token {
            alias: String::new(),
            identifier,
            password,
            kind: RM_DELEGATION_TOKEN_KIND.to_string(),
            service: String::new(),
        },
        owner: owner.to_string(),
        renewer: renewer.to_string(),
        max_date,
    }
}

/// The RM delegation tokens this server issued: checked by the client
/// port's SASL in token mode.
#[derive(Debug)]
pub struct DelegationPasswords {
    keys: Arc<TokenKeys>,
    bearer_tokens: Arc<TokenVerifier>,
    clock: Arc<dyn Clock>,
}

impl DelegationPasswords {
    /// Tokens under `keys`, standing while their owners' bearer tokens in
    /// `bearer_tokens` do, lapsing by `clock`.
    pub fn new(
        keys: Arc<TokenKeys>,
        bearer_tokens: Arc<TokenVerifier>,
        clock: Arc<dyn Clock>,
    ) -> DelegationPasswords {
        DelegationPasswords {
            keys,
            bearer_tokens,
            clock,
        }
    }
}

impl TokenPasswords for DelegationPasswords {
    fn password(&self, identifier: &[u8]) -> Result<(Vec<u8>, Arc<str>), String> {
        let token = YARNDelegationTokenIdentifierProto::decode(identifier)
            .map_err(|_| "the token is not an RM delegation token".to_string())?;
        let owner = token.owner.unwrap_or_default();
        crate::limits::name("the token's owner", &owner).map_err(|e| e.to_string())?;
        Ok((
            self.keys.rm_delegation_password(identifier),
            Arc::from(owner),
        ))
    }

    fn standing(&self, identifier: &[u8]) -> Result<(), String> {
        let token = YARNDelegationTokenIdentifierProto::decode(identifier)
            .map_err(|_| "the token is not an RM delegation token".to_string())?;
        let owner = token.owner.unwrap_or_default();
        let sequence = token.sequence_number.unwrap_or_default();
        let (Some(issued), Some(max_date)) = (token.issue_date, token.max_date) else {
            return Err(format!(
                "the RM delegation token of {owner} has no issue or expiry date"
            ));
        };
        let now = i64::try_from(self.clock.now_ms()).unwrap_or(i64::MAX);
        if now >= max_date {
            return Err(format!(
                "the RM delegation token of {owner} (sequenceNumber={sequence}) is expired: it lapsed at {max_date} ms, the time is {now} ms; ask for a new one (weft token yarn)"
            ));
        }
        if !self.bearer_tokens.holds_token_since(&owner, issued) {
            return Err(format!(
                "the RM delegation token of {owner} (sequenceNumber={sequence}) no longer stands: the bearer tokens it was issued under were revoked"
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::VirtualClock;
    use crate::security::TokensFile;

    fn setup() -> (
        tempfile::TempDir,
        std::path::PathBuf,
        Arc<TokenKeys>,
        Arc<VirtualClock>,
        DelegationPasswords,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.toml");
        TokensFile::update(&path, |file| file.create("alice")).unwrap();
        let keys = Arc::new(TokenKeys::random().unwrap());
        let now = chrono::Utc::now().timestamp_millis() as u64;
        let clock = Arc::new(VirtualClock::starting_at(now));
        let passwords = DelegationPasswords::new(
            keys.clone(),
            Arc::new(
                TokenVerifier::open(path.clone())
                    .unwrap()
                    .rereading_every_time(),
            ),
            clock.clone(),
        );
        (dir, path, keys, clock, passwords)
    }

    #[test]
    fn an_issued_token_names_its_owner_until_it_lapses() {
        let (_dir, _path, keys, clock, passwords) = setup();
        let issued = issue(&keys, "alice", "yarn", clock.now_ms() as i64);
        let (password, owner) = passwords.password(&issued.token.identifier).unwrap();
        assert_eq!(password, issued.token.password);
        assert_eq!(&*owner, "alice");
        // Another process's key makes another password.
        let other = issue(
            &TokenKeys::random().unwrap(),
            "alice",
            "",
            clock.now_ms() as i64,
        );
        assert_ne!(
            passwords.password(&other.token.identifier).unwrap().0,
            other.token.password
        );
        passwords.standing(&issued.token.identifier).unwrap();
        clock.advance_to(clock.now_ms() + LIFETIME_MS as u64);
        let lapsed = passwords.standing(&issued.token.identifier).unwrap_err();
        assert!(lapsed.contains("expired"), "{lapsed}");
    }

    #[test]
    fn unreadable_tokens_and_revoked_bearers_are_refused() {
        let (_dir, path, keys, clock, passwords) = setup();
        let now = clock.now_ms() as i64;
        // Refused before any password: what names no one.
        let nobody = YARNDelegationTokenIdentifierProto::default().encode_to_vec();
        for (identifier, why) in [
            (nobody, "the token's owner"),
            (b"\xff\xff".to_vec(), "not an RM delegation token"),
        ] {
            let refusal = passwords.password(&identifier).unwrap_err();
            assert!(refusal.contains(why), "{refusal} (wanted {why})");
        }
        let issued = issue(&keys, "alice", "", now);
        passwords.standing(&issued.token.identifier).unwrap();
        // Revoked, then a new bearer token made: the old token stays dead.
        TokensFile::update(&path, |file| Ok(file.revoke("alice"))).unwrap();
        let refusal = passwords.standing(&issued.token.identifier).unwrap_err();
        assert!(refusal.contains("revoked"), "{refusal}");
        std::thread::sleep(std::time::Duration::from_millis(2));
        TokensFile::update(&path, |file| file.create("alice")).unwrap();
        let refusal = passwords.standing(&issued.token.identifier).unwrap_err();
        assert!(refusal.contains("revoked"), "{refusal}");
        // Bob never had a bearer token: his token (were it issued) does
        // not stand.
        let bobs = issue(&keys, "bob", "", now);
        assert!(passwords.standing(&bobs.token.identifier).is_err());
    }

    #[test]
    fn a_token_survives_its_url_string() {
        let keys = TokenKeys::random().unwrap();
        let mut issued = issue(&keys, "alice", "yarn", 1_700_000_000_000).token;
        issued.service = "127.0.0.1:8032".into();
        let text = issued.to_url_string();
        assert!(!text.contains(['+', '/', '=']), "{text}");
        assert_eq!(
            Token::from_url_string(&text, String::new()).unwrap(),
            issued
        );
        assert!(Token::from_url_string("AAAA!", String::new()).is_err());
        assert!(Token::from_url_string(&format!("{text}AA"), String::new()).is_err());
    }
}
