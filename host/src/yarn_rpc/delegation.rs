//! RM delegation tokens: how a YARN client proves who it is on the client
//! port in token mode. A user with a bearer token asks for one over REST
//! (YARN's `POST /ws/v1/cluster/delegation-token`, or `weft token yarn`,
//! which writes it into a Hadoop credentials file); Hadoop's client, given
//! that file in `HADOOP_TOKEN_FILE_LOCATION`, authenticates with it (SASL
//! DIGEST-MD5) and its calls are the token's owner's, under the same ACLs,
//! projects and limits as that user's REST calls.
//!
//! As YARN's, a token stands for a day after it is issued or renewed
//! (`yarn.resourcemanager.delegation.token.renew-interval`), its renewer
//! may renew it up to a week after its issue (`…max-lifetime`), and its
//! owner or renewer may cancel it (REST's `…/delegation-token/expiration`
//! and `DELETE …/delegation-token`). It lapses too when the server restarts
//! (its key and the tokens standing are the process's), and when its
//! owner's bearer tokens are revoked: it stands only while the owner holds
//! a bearer token created no later than it was issued. Whether it stands
//! is asked only of a client that proved it holds the token, at
//! authentication and before each call, so an open connection loses it too
//! and no one else learns anything from the answer.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, PoisonError};

use prost::Message;

use super::credentials::Token;
use super::messages::tokens::{RM_DELEGATION_TOKEN_KIND, YARNDelegationTokenIdentifierProto};
use super::sasl::TokenPasswords;
use crate::clock::Clock;
use crate::security::TokenVerifier;
use crate::security::yarn_tokens::{TokenKeys, same_password};

/// How long a token stands after it is issued or renewed: a day, YARN's
/// `yarn.resourcemanager.delegation.token.renew-interval`.
pub const RENEW_INTERVAL_MS: i64 = 24 * 60 * 60 * 1000;

/// How long after its issue renewals may keep a token: a week, YARN's
/// `yarn.resourcemanager.delegation.token.max-lifetime`.
pub const MAX_LIFETIME_MS: i64 = 7 * RENEW_INTERVAL_MS;

/// The most tokens that may stand at once: issuing more is refused until
/// some lapse, are cancelled or their owners' bearer tokens are revoked.
pub const MAX_STANDING: usize = 100_000;

/// The most tokens of one owner that may stand at once, so that no one
/// user holds the server's room.
pub const MAX_STANDING_PER_OWNER: usize = 1_000;

/// The least time between two sweeps of a full ledger: asking again and
/// again while it is full does not scan it each time.
const SWEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// The HTTP header that names the token to renew or cancel, as YARN's.
pub const TOKEN_HEADER: &str = "Hadoop-YARN-RM-Delegation-Token";

/// The id tokens name as their key's (one key per process).
const MASTER_KEY_ID: i32 = 1;

/// A token issued to a user.
#[derive(Debug, Clone)]
pub struct Issued {
    /// The token, its service empty: the client names the address it is
    /// for (`weft token yarn`, or Hadoop's `SecurityUtil.setTokenService`).
    pub token: Token,
    /// Its owner.
    pub owner: String,
    /// Who may renew it (none: no one).
    pub renewer: String,
    /// When it lapses unless renewed, ms since the epoch.
    pub expires_ms: i64,
    /// When it lapses however often it is renewed.
    pub max_date: i64,
}

/// Why a token was not issued, renewed or cancelled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// The token does not read as one of this server's RM delegation
    /// tokens, or was never issued or no longer stands.
    #[error("{0}")]
    Invalid(String),
    /// The caller may not do this to it (or, issuing, holds their share).
    #[error("{0}")]
    NotAllowed(String),
    /// Too many stand on the server.
    #[error("{0}")]
    Full(String),
}

/// A token standing: issued, not cancelled, not lapsed when last looked.
#[derive(Debug)]
struct Standing {
    /// Its identifier's issue date: a token of the same sequence number
    /// from before they wrapped is not this one.
    issued_ms: i64,
    owner: String,
    renewer: String,
    expires_ms: i64,
    max_date: i64,
}

/// The tokens standing, by sequence number, by expiry and by owner, and
/// the last number given. The two orders make a sweep cost what it drops:
/// lapsed tokens are the first by expiry, and an owner's tokens issued
/// before their bearer tokens were (re)created the first by issue date.
#[derive(Debug, Default)]
struct Ledger {
    standing: HashMap<i32, Standing>,
    /// (expiry, sequence) of every token standing.
    by_expiry: BTreeSet<(i64, i32)>,
    /// Each owner's tokens as (issue date, sequence).
    by_owner: HashMap<String, BTreeSet<(i64, i32)>>,
    last_sequence: i32,
    /// When every owner was last swept for revoked bearer tokens
    /// (monotonic: a wall clock set back does not hold the next off).
    swept_at: Option<std::time::Instant>,
}

impl Ledger {
    fn insert(&mut self, sequence: i32, token: Standing) {
        self.by_expiry.insert((token.expires_ms, sequence));
        self.by_owner
            .entry(token.owner.clone())
            .or_default()
            .insert((token.issued_ms, sequence));
        self.standing.insert(sequence, token);
    }

    fn remove(&mut self, sequence: i32) {
        let Some(token) = self.standing.remove(&sequence) else {
            return;
        };
        self.by_expiry.remove(&(token.expires_ms, sequence));
        if let Some(theirs) = self.by_owner.get_mut(&token.owner) {
            theirs.remove(&(token.issued_ms, sequence));
            if theirs.is_empty() {
                self.by_owner.remove(&token.owner);
            }
        }
    }

    /// Token `sequence` (standing) now lapses at `expires_ms`.
    fn set_expiry(&mut self, sequence: i32, expires_ms: i64) {
        if let Some(token) = self.standing.get_mut(&sequence) {
            self.by_expiry.remove(&(token.expires_ms, sequence));
            token.expires_ms = expires_ms;
            self.by_expiry.insert((expires_ms, sequence));
        }
    }

    /// How many of `owner`'s tokens stand.
    fn owned_by(&self, owner: &str) -> usize {
        self.by_owner.get(owner).map_or(0, BTreeSet::len)
    }

    /// Drops the tokens lapsed by `now`.
    fn drop_lapsed(&mut self, now: i64) {
        while let Some(&(expires_ms, sequence)) = self.by_expiry.first()
            && expires_ms <= now
        {
            self.remove(sequence);
        }
    }

    /// Drops `owner`'s tokens issued before the bearer tokens they hold
    /// now were created (`since`: each holder's creation time), all of
    /// them if they hold none.
    fn drop_revoked(&mut self, owner: &str, since: &HashMap<String, i64>) {
        let revoked: Vec<i32> = self
            .by_owner
            .get(owner)
            .map(|theirs| revoked(owner, theirs, since).collect())
            .unwrap_or_default();
        for sequence in revoked {
            self.remove(sequence);
        }
    }

    /// [`Ledger::drop_revoked`] for every owner: one look-up per owner.
    fn drop_every_revoked(&mut self, since: &HashMap<String, i64>) {
        let revoked: Vec<i32> = self
            .by_owner
            .iter()
            .flat_map(|(owner, theirs)| revoked(owner, theirs, since))
            .collect();
        for sequence in revoked {
            self.remove(sequence);
        }
    }

    /// The entry of the token `identifier` names, if it stands.
    fn of(&mut self, identifier: &YARNDelegationTokenIdentifierProto) -> Option<&mut Standing> {
        self.standing
            .get_mut(&identifier.sequence_number?)
            .filter(|t| Some(t.issued_ms) == identifier.issue_date)
    }
}

/// The sequence numbers of `owner`'s tokens (`theirs`, by issue date)
/// that no longer stand under the bearer tokens `since` says they hold.
fn revoked<'a>(
    owner: &str,
    theirs: &'a BTreeSet<(i64, i32)>,
    since: &HashMap<String, i64>,
) -> impl Iterator<Item = i32> + 'a {
    // Those issued before their bearer tokens were created come first;
    // all of them, if they hold none.
    let created = since.get(owner).copied();
    theirs
        .iter()
        .take_while(move |&&(issued_ms, _)| created.is_none_or(|created| issued_ms < created))
        .map(|&(_, sequence)| sequence)
}

/// The RM delegation tokens this server issued: issued, renewed and
/// cancelled over REST, checked by the client port's SASL in token mode.
#[derive(Debug)]
pub struct DelegationTokens {
    keys: Arc<TokenKeys>,
    bearer_tokens: Arc<TokenVerifier>,
    clock: Arc<dyn Clock>,
    ledger: Mutex<Ledger>,
}

impl DelegationTokens {
    /// Tokens under `keys`, standing while their owners' bearer tokens in
    /// `bearer_tokens` do, lapsing by `clock`.
    pub fn new(
        keys: Arc<TokenKeys>,
        bearer_tokens: Arc<TokenVerifier>,
        clock: Arc<dyn Clock>,
    ) -> DelegationTokens {
        DelegationTokens {
            keys,
            bearer_tokens,
            clock,
            ledger: Mutex::new(Ledger::default()),
        }
    }

    fn now_ms(&self) -> i64 {
        i64::try_from(self.clock.now_ms()).unwrap_or(i64::MAX)
    }

    fn ledger(&self) -> std::sync::MutexGuard<'_, Ledger> {
        // Nothing is left half-changed under the lock: a panic elsewhere
        // does not make the ledger wrong.
        self.ledger.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new token for `owner`, renewable by `renewer` (empty: no one).
    /// Refused while `owner` has [`MAX_STANDING_PER_OWNER`] standing or the
    /// server [`MAX_STANDING`], those lapsed or revoked not counted.
    pub fn issue(&self, owner: &str, renewer: &str) -> Result<Issued, TokenError> {
        let now = self.now_ms();
        let mut ledger = self.ledger();
        ledger.drop_lapsed(now);
        let owner_full = ledger.owned_by(owner) >= MAX_STANDING_PER_OWNER;
        let sweep_all = ledger.standing.len() >= MAX_STANDING
            && ledger.swept_at.is_none_or(|at| at.elapsed() >= SWEEP_EVERY);
        if owner_full || sweep_all {
            if sweep_all {
                ledger.swept_at = Some(std::time::Instant::now());
            }
            // The bearer tokens are read (a copy of who holds them) without
            // the ledger's lock, which every call on the client port takes.
            // Revoked owners' tokens go only while the tokens file reads (an
            // unreadable one revokes no one for good).
            drop(ledger);
            let since = self.bearer_tokens.holders_since();
            ledger = self.ledger();
            if let Some(since) = since {
                match sweep_all {
                    true => ledger.drop_every_revoked(&since),
                    false => ledger.drop_revoked(owner, &since),
                }
            }
        }
        if ledger.owned_by(owner) >= MAX_STANDING_PER_OWNER {
            return Err(TokenError::NotAllowed(format!(
                "{owner} has {MAX_STANDING_PER_OWNER} RM delegation tokens standing, the most one user may: cancel some (weft token cancel FILE) or wait for them to lapse"
            )));
        }
        if ledger.standing.len() >= MAX_STANDING {
            return Err(TokenError::Full(format!(
                "{MAX_STANDING} RM delegation tokens stand, the most this server keeps (at most {MAX_STANDING_PER_OWNER} a user): ask again when some lapse, or ask an administrator (revoking a user's bearer tokens drops theirs)"
            )));
        }
        // A number no token standing has (they wrap after 2^31 issues).
        let mut sequence = ledger.last_sequence;
        loop {
            sequence = sequence.wrapping_add(1);
            if !ledger.standing.contains_key(&sequence) {
                break;
            }
        }
        ledger.last_sequence = sequence;
        let expires_ms = now.saturating_add(RENEW_INTERVAL_MS);
        let max_date = now.saturating_add(MAX_LIFETIME_MS);
        let identifier = YARNDelegationTokenIdentifierProto {
            owner: Some(owner.to_string()),
            renewer: Some(renewer.to_string()),
            real_user: Some(String::new()),
            issue_date: Some(now),
            max_date: Some(max_date),
            sequence_number: Some(sequence),
            master_key_id: Some(MASTER_KEY_ID),
        }
        .encode_to_vec();
        let password = self.keys.rm_delegation_password(&identifier);
        ledger.insert(
            sequence,
            Standing {
                issued_ms: now,
                owner: owner.to_string(),
                renewer: renewer.to_string(),
                expires_ms,
                max_date,
            },
        );
        Ok(Issued {
            token: Token {
                alias: String::new(),
                identifier,
                password,
                kind: RM_DELEGATION_TOKEN_KIND.to_string(),
                service: String::new(),
            },
            owner: owner.to_string(),
            renewer: renewer.to_string(),
            expires_ms,
            max_date,
        })
    }

    /// Renews `token` for `caller`, its renewer: it stands a renew interval
    /// from now, never past its max date. Answers its new expiry.
    pub fn renew(&self, token: &Token, caller: &str) -> Result<i64, TokenError> {
        let (sequence, identifier) = self.authentic(token)?;
        let now = self.now_ms();
        let mut ledger = self.ledger();
        let standing = ledger
            .of(&identifier)
            .filter(|t| t.expires_ms > now)
            .ok_or_else(|| gone(&identifier, sequence))?;
        if standing.renewer.is_empty() {
            return Err(TokenError::NotAllowed(format!(
                "{caller} may not renew the RM delegation token of {} (sequenceNumber={sequence}): it names no renewer",
                standing.owner
            )));
        }
        if standing.renewer != caller {
            return Err(TokenError::NotAllowed(format!(
                "{caller} may not renew the RM delegation token of {} (sequenceNumber={sequence}): its renewer is {}",
                standing.owner, standing.renewer
            )));
        }
        if !self
            .bearer_tokens
            .holds_token_since(&standing.owner, standing.issued_ms)
        {
            return Err(TokenError::Invalid(format!(
                "the RM delegation token of {} (sequenceNumber={sequence}) no longer stands: the bearer tokens it was issued under were revoked",
                standing.owner
            )));
        }
        if standing.max_date <= now {
            return Err(TokenError::Invalid(format!(
                "the RM delegation token of {} (sequenceNumber={sequence}) passed its max date ({} ms): ask for a new one (weft token yarn)",
                standing.owner, standing.max_date
            )));
        }
        let expires_ms = now.saturating_add(RENEW_INTERVAL_MS).min(standing.max_date);
        ledger.set_expiry(sequence, expires_ms);
        Ok(expires_ms)
    }

    /// Cancels `token` for `caller`, its owner or renewer: it stands no
    /// more, on connections already open too.
    pub fn cancel(&self, token: &Token, caller: &str) -> Result<(), TokenError> {
        let (sequence, identifier) = self.authentic(token)?;
        let mut ledger = self.ledger();
        let standing = ledger
            .of(&identifier)
            .ok_or_else(|| gone(&identifier, sequence))?;
        if standing.owner != caller && (standing.renewer.is_empty() || standing.renewer != caller) {
            return Err(TokenError::NotAllowed(format!(
                "{caller} may not cancel the RM delegation token of {} (sequenceNumber={sequence}): only its owner or renewer may",
                standing.owner
            )));
        }
        ledger.remove(sequence);
        Ok(())
    }

    /// The sequence number and identifier of `token`, if this server made
    /// it (its password is the one this server's key gives).
    fn authentic(
        &self,
        token: &Token,
    ) -> Result<(i32, YARNDelegationTokenIdentifierProto), TokenError> {
        let not_ours = || {
            TokenError::Invalid(
                "the token is not an RM delegation token of this server (or the server restarted since it was issued)".to_string(),
            )
        };
        if token.kind != RM_DELEGATION_TOKEN_KIND
            || !same_password(
                &token.password,
                &self.keys.rm_delegation_password(&token.identifier),
            )
        {
            return Err(not_ours());
        }
        let identifier = YARNDelegationTokenIdentifierProto::decode(token.identifier.as_slice())
            .map_err(|_| not_ours())?;
        let sequence = identifier.sequence_number.ok_or_else(not_ours)?;
        Ok((sequence, identifier))
    }
}

/// The refusal of a token that no longer stands.
fn gone(identifier: &YARNDelegationTokenIdentifierProto, sequence: i32) -> TokenError {
    TokenError::Invalid(format!(
        "the RM delegation token of {} (sequenceNumber={sequence}) no longer stands: it lapsed or was cancelled; ask for a new one (weft token yarn)",
        identifier.owner.as_deref().unwrap_or_default()
    ))
}

impl TokenPasswords for DelegationTokens {
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
        let owner = token.owner.clone().unwrap_or_default();
        let sequence = token.sequence_number.unwrap_or_default();
        let (Some(issued), Some(_)) = (token.issue_date, token.max_date) else {
            return Err(format!(
                "the RM delegation token of {owner} has no issue or expiry date"
            ));
        };
        let now = self.now_ms();
        match self.ledger().of(&token) {
            None => return Err(gone(&token, sequence).to_string()),
            Some(standing) if now >= standing.expires_ms => {
                return Err(format!(
                    "the RM delegation token of {owner} (sequenceNumber={sequence}) is expired: it lapsed at {} ms, the time is {now} ms; renew it or ask for a new one (weft token yarn)",
                    standing.expires_ms
                ));
            }
            Some(_) => {}
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
        Arc<VirtualClock>,
        DelegationTokens,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.toml");
        TokensFile::update(&path, |file| file.create("alice")).unwrap();
        let keys = Arc::new(TokenKeys::random().unwrap());
        let now = chrono::Utc::now().timestamp_millis() as u64;
        let clock = Arc::new(VirtualClock::starting_at(now));
        let tokens = DelegationTokens::new(
            keys,
            Arc::new(
                TokenVerifier::open(path.clone())
                    .unwrap()
                    .rereading_every_time(),
            ),
            clock.clone(),
        );
        (dir, path, clock, tokens)
    }

    #[test]
    fn an_issued_token_names_its_owner_until_it_lapses() {
        let (_dir, _path, clock, tokens) = setup();
        let issued = tokens.issue("alice", "yarn").unwrap();
        let (password, owner) = tokens.password(&issued.token.identifier).unwrap();
        assert_eq!(password, issued.token.password);
        assert_eq!(&*owner, "alice");
        // Another process's tokens make other passwords, and are not its.
        let (_dir2, _path2, _clock2, other) = setup();
        let theirs = other.issue("alice", "").unwrap();
        assert_ne!(
            tokens.password(&theirs.token.identifier).unwrap().0,
            theirs.token.password
        );
        let refusal = tokens.cancel(&theirs.token, "alice").unwrap_err();
        assert!(
            refusal
                .to_string()
                .contains("not an RM delegation token of this server"),
            "{refusal}"
        );
        tokens.standing(&issued.token.identifier).unwrap();
        clock.advance_to(clock.now_ms() + RENEW_INTERVAL_MS as u64);
        let lapsed = tokens.standing(&issued.token.identifier).unwrap_err();
        assert!(lapsed.contains("expired"), "{lapsed}");
        // Lapsed: not renewed either.
        assert!(matches!(
            tokens.renew(&issued.token, "yarn"),
            Err(TokenError::Invalid(_))
        ));
    }

    #[test]
    fn its_renewer_renews_it_up_to_its_max_date_and_its_owner_or_renewer_cancels_it() {
        let (_dir, _path, clock, tokens) = setup();
        let start = clock.now_ms() as i64;
        let issued = tokens.issue("alice", "oozie").unwrap();
        assert_eq!(issued.expires_ms, start + RENEW_INTERVAL_MS);
        assert_eq!(issued.max_date, start + MAX_LIFETIME_MS);
        // Only its renewer renews it.
        for caller in ["alice", "mallory"] {
            let refusal = tokens.renew(&issued.token, caller).unwrap_err();
            assert!(
                matches!(&refusal, TokenError::NotAllowed(m) if m.contains("its renewer is oozie")),
                "{refusal}"
            );
        }
        // Renewed a little less than a day apart, it stands for the week,
        // never past its max date.
        for day in 1..=7 {
            let now = start + day * (RENEW_INTERVAL_MS - 1000);
            clock.advance_to(now as u64);
            let until = tokens.renew(&issued.token, "oozie").unwrap();
            assert_eq!(until, (now + RENEW_INTERVAL_MS).min(issued.max_date));
            tokens.standing(&issued.token.identifier).unwrap();
        }
        assert_eq!(
            tokens.renew(&issued.token, "oozie").unwrap(),
            issued.max_date
        );
        clock.advance_to(issued.max_date as u64);
        assert!(tokens.standing(&issued.token.identifier).is_err());
        assert!(tokens.renew(&issued.token, "oozie").is_err());

        // A token without a renewer is renewed by no one.
        let plain = tokens.issue("alice", "").unwrap();
        let refusal = tokens.renew(&plain.token, "alice").unwrap_err();
        assert!(
            refusal.to_string().contains("names no renewer"),
            "{refusal}"
        );
        // Cancelled by its owner or renewer only; then it stands no more.
        let refusal = tokens.cancel(&plain.token, "mallory").unwrap_err();
        assert!(matches!(refusal, TokenError::NotAllowed(_)), "{refusal}");
        tokens.standing(&plain.token.identifier).unwrap();
        tokens.cancel(&plain.token, "alice").unwrap();
        let gone = tokens.standing(&plain.token.identifier).unwrap_err();
        assert!(gone.contains("lapsed or was cancelled"), "{gone}");
        assert!(tokens.cancel(&plain.token, "alice").is_err(), "not twice");
        let renewable = tokens.issue("alice", "oozie").unwrap();
        tokens.cancel(&renewable.token, "oozie").unwrap();
        assert!(tokens.renew(&renewable.token, "oozie").is_err());

        // A forged token (its identifier changed, its password kept) is
        // not this server's: nothing of another's can be renewed or
        // cancelled by naming its sequence number.
        let victim = tokens.issue("alice", "oozie").unwrap();
        let mut forged = victim.token.clone();
        let mut identifier =
            YARNDelegationTokenIdentifierProto::decode(forged.identifier.as_slice()).unwrap();
        identifier.renewer = Some("mallory".into());
        forged.identifier = identifier.encode_to_vec();
        for refusal in [
            tokens.renew(&forged, "mallory").unwrap_err(),
            tokens.cancel(&forged, "mallory").unwrap_err(),
        ] {
            assert!(
                refusal
                    .to_string()
                    .contains("not an RM delegation token of this server"),
                "{refusal}"
            );
        }
        let wrong_kind = Token {
            kind: "HDFS_DELEGATION_TOKEN".into(),
            ..victim.token.clone()
        };
        assert!(tokens.cancel(&wrong_kind, "alice").is_err());
        tokens.standing(&victim.token.identifier).unwrap();
    }

    #[test]
    fn unreadable_tokens_and_revoked_bearers_are_refused() {
        let (_dir, path, _clock, tokens) = setup();
        // Refused before any password: what names no one.
        let nobody = YARNDelegationTokenIdentifierProto::default().encode_to_vec();
        for (identifier, why) in [
            (nobody, "the token's owner"),
            (b"\xff\xff".to_vec(), "not an RM delegation token"),
        ] {
            let refusal = tokens.password(&identifier).unwrap_err();
            assert!(refusal.contains(why), "{refusal} (wanted {why})");
        }
        let issued = tokens.issue("alice", "alice").unwrap();
        tokens.standing(&issued.token.identifier).unwrap();
        // Revoked, then a new bearer token made: the old token stays dead,
        // and is not renewed back to life.
        TokensFile::update(&path, |file| Ok(file.revoke("alice"))).unwrap();
        let refusal = tokens.standing(&issued.token.identifier).unwrap_err();
        assert!(refusal.contains("revoked"), "{refusal}");
        std::thread::sleep(std::time::Duration::from_millis(2));
        TokensFile::update(&path, |file| file.create("alice")).unwrap();
        let refusal = tokens.standing(&issued.token.identifier).unwrap_err();
        assert!(refusal.contains("revoked"), "{refusal}");
        let refusal = tokens.renew(&issued.token, "alice").unwrap_err();
        assert!(refusal.to_string().contains("revoked"), "{refusal}");
        // Bob never had a bearer token: his token (were it issued) does
        // not stand.
        let bobs = tokens.issue("bob", "").unwrap();
        assert!(tokens.standing(&bobs.token.identifier).is_err());
    }

    #[test]
    fn no_user_holds_more_than_their_share_and_lapsed_or_revoked_ones_make_room() {
        let (_dir, path, clock, tokens) = setup();
        for _ in 0..MAX_STANDING_PER_OWNER {
            tokens.issue("alice", "").unwrap();
        }
        let refusal = tokens.issue("alice", "").unwrap_err();
        assert!(
            matches!(&refusal, TokenError::NotAllowed(m) if m.contains("alice has 1000 RM delegation tokens standing")),
            "{refusal}"
        );
        // A tokens file that does not read revokes no one for good: the
        // sweep keeps alice's, which stand again once it reads.
        let good = std::fs::read(&path).unwrap();
        std::fs::write(&path, b"not toml [").unwrap();
        assert!(matches!(
            tokens.issue("alice", ""),
            Err(TokenError::NotAllowed(_))
        ));
        std::fs::write(&path, &good).unwrap();
        let kept = tokens.issue("alice", "").unwrap_err();
        assert!(kept.to_string().contains("alice has 1000"), "{kept}");
        clock.advance_to(clock.now_ms() + RENEW_INTERVAL_MS as u64);
        let fresh = tokens.issue("alice", "").unwrap();
        tokens.standing(&fresh.token.identifier).unwrap();
        tokens.cancel(&fresh.token, "alice").unwrap();

        // A hundred users at their share fill the server; one more user is
        // refused, until a user's bearer tokens are revoked (swept at most
        // once a second).
        let users: Vec<String> = (0..MAX_STANDING / MAX_STANDING_PER_OWNER)
            .map(|n| format!("u{n}"))
            .collect();
        TokensFile::update(&path, |file| {
            for user in users.iter().map(String::as_str).chain(["late"]) {
                file.create(user)?;
            }
            Ok(())
        })
        .unwrap();
        clock.advance_to(clock.now_ms() + 1);
        for user in &users {
            for _ in 0..MAX_STANDING_PER_OWNER {
                tokens.issue(user, "").unwrap();
            }
        }
        let refusal = tokens.issue("late", "").unwrap_err();
        assert!(
            matches!(&refusal, TokenError::Full(m) if m.contains("100000 RM delegation tokens stand")),
            "{refusal}"
        );
        TokensFile::update(&path, |file| Ok(file.revoke("u7"))).unwrap();
        assert!(tokens.issue("late", "").is_err(), "not swept again at once");
        std::thread::sleep(SWEEP_EVERY);
        let late = tokens.issue("late", "").unwrap();
        tokens.standing(&late.token.identifier).unwrap();
    }

    /// Lapsed tokens are let go at the next issue; a renewed one lapses at
    /// its new expiry, not its first.
    #[test]
    fn lapsed_tokens_go_at_the_next_issue_and_a_renewal_moves_the_lapse() {
        let (_dir, _path, clock, tokens) = setup();
        let renewed = tokens.issue("alice", "yarn").unwrap();
        let lapsing = tokens.issue("alice", "").unwrap();
        let issued = clock.now_ms();
        let day = RENEW_INTERVAL_MS as u64;
        clock.advance_to(issued + day / 2);
        tokens.renew(&renewed.token, "yarn").unwrap();
        clock.advance_to(issued + day);
        assert!(
            tokens
                .standing(&lapsing.token.identifier)
                .unwrap_err()
                .contains("is expired"),
            "lapsed, not yet let go"
        );
        tokens.issue("alice", "").unwrap();
        let gone = tokens.standing(&lapsing.token.identifier).unwrap_err();
        assert!(gone.contains("it lapsed or was cancelled"), "{gone}");
        tokens.standing(&renewed.token.identifier).unwrap();
        assert_eq!(tokens.ledger().standing.len(), 2);
        clock.advance_to(issued + day / 2 + day);
        tokens.issue("bob", "").unwrap();
        let gone = tokens.standing(&renewed.token.identifier).unwrap_err();
        assert!(gone.contains("it lapsed or was cancelled"), "{gone}");
        let ledger = tokens.ledger();
        assert_eq!(ledger.standing.len(), ledger.by_expiry.len());
        assert_eq!(
            ledger.by_owner.values().map(BTreeSet::len).sum::<usize>(),
            2
        );
    }

    #[test]
    fn a_token_survives_its_url_string() {
        let (_dir, _path, _clock, tokens) = setup();
        let mut issued = tokens.issue("alice", "yarn").unwrap().token;
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
