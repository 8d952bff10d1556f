//! The store's schema history: numbered migrations, applied in order, each
//! in one transaction with its number recorded, the same for SQLite and
//! PostgreSQL (the few types that differ are written as placeholders).
//!
//! A migration is never edited once released: a change is a new one.

use super::Dialect;

/// One step of the schema: its number, what it does, and its SQL.
#[derive(Debug, Clone, Copy)]
pub struct Migration {
    /// Its number: one more than the previous migration's.
    pub version: i64,
    /// What it adds, recorded with its number in `weft_schema` when applied.
    pub description: &'static str,
    /// Statements separated by `;`, with `{int}`, `{real}` and `{blob}`
    /// standing for the dialect's 64-bit integer, double and byte types.
    pub sql: &'static str,
}

/// Every migration, oldest first; their numbers are 1, 2, 3, ….
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        description: "the ledger, multiplicators, reservations and counters (as before versioning)",
        sql: "
            CREATE TABLE IF NOT EXISTS project_quota (
                project TEXT PRIMARY KEY,
                remaining {real} NOT NULL,
                total_used {real} NOT NULL
            );
            CREATE TABLE IF NOT EXISTS daily_usage (
                project TEXT NOT NULL,
                \"user\" TEXT NOT NULL,
                day TEXT NOT NULL,
                credits {real} NOT NULL,
                PRIMARY KEY (project, \"user\", day)
            );
            CREATE TABLE IF NOT EXISTS price_multiplicator (
                resource TEXT PRIMARY KEY,
                value {real} NOT NULL
            );
            CREATE TABLE IF NOT EXISTS reservation (
                id TEXT PRIMARY KEY,
                queue TEXT NOT NULL,
                record TEXT NOT NULL
            );
            CREATE TABLE IF NOT EXISTS counter (
                name TEXT PRIMARY KEY,
                value {int} NOT NULL
            )
        ",
    },
    Migration {
        version: 2,
        description: "work-preserving restart: apps, containers, nodes, owed usage, \
                      settings in force, policy versions, the leader's lease and the writers' audit",
        sql: "
            CREATE TABLE app (
                id TEXT PRIMARY KEY,
                number {int} NOT NULL,
                record TEXT NOT NULL
            );
            CREATE TABLE container (
                id TEXT PRIMARY KEY,
                app TEXT NOT NULL,
                seq {int} NOT NULL,
                running {int} NOT NULL,
                record TEXT NOT NULL,
                charged_until_ms {int}
            );
            CREATE INDEX container_by_app ON container (app, seq);
            CREATE TABLE node (
                id TEXT PRIMARY KEY,
                record TEXT NOT NULL
            );
            CREATE TABLE owed_usage (
                seq {int} PRIMARY KEY,
                record TEXT NOT NULL
            );
            CREATE TABLE setting (
                name TEXT PRIMARY KEY,
                value TEXT NOT NULL
            );
            CREATE TABLE policy_blob (
                sha256 TEXT PRIMARY KEY,
                bytes {blob} NOT NULL
            );
            CREATE TABLE weft_leader (
                id {int} PRIMARY KEY,
                holder TEXT NOT NULL,
                epoch {int} NOT NULL,
                expires_at_ms {int} NOT NULL
            );
            INSERT INTO weft_leader (id, holder, epoch, expires_at_ms) VALUES (1, '', 0, 0);
            CREATE TABLE write_audit (
                epoch {int} PRIMARY KEY,
                holder TEXT NOT NULL,
                first_commit_ms {int} NOT NULL,
                last_commit_ms {int} NOT NULL,
                commits {int} NOT NULL
            )
        ",
    },
    Migration {
        version: 3,
        description: "accounting records of ended apps, and credits granted to projects",
        sql: "
            CREATE TABLE accounting (
                app_id TEXT PRIMARY KEY,
                finished_ms {int} NOT NULL,
                project TEXT NOT NULL,
                \"user\" TEXT NOT NULL,
                is_final {int} NOT NULL,
                final_seq {int},
                record TEXT NOT NULL
            );
            CREATE UNIQUE INDEX accounting_by_seq ON accounting (final_seq);
            CREATE INDEX accounting_by_project ON accounting (project, final_seq);
            CREATE INDEX accounting_by_user ON accounting (\"user\", final_seq);
            CREATE INDEX accounting_by_time ON accounting (finished_ms);
            CREATE INDEX accounting_pending ON accounting (is_final);
            CREATE TABLE quota_grant (
                seq {int} PRIMARY KEY,
                project TEXT NOT NULL,
                at_ms {int} NOT NULL,
                credits {real} NOT NULL,
                granted_by TEXT NOT NULL
            );
            CREATE INDEX quota_grant_by_project ON quota_grant (project, seq)
        ",
    },
    Migration {
        version: 4,
        description: "who owns each node id, kept after the node is lost until an administrator releases it",
        sql: "
            CREATE TABLE node_owner (
                id TEXT PRIMARY KEY,
                owner TEXT NOT NULL
            )
        ",
    },
];

/// The newest schema this build knows.
pub fn latest() -> i64 {
    MIGRATIONS.last().map_or(0, |m| m.version)
}

/// `migration`'s statements in `dialect`.
pub fn statements(migration: &Migration, dialect: Dialect) -> Vec<String> {
    let (int, real, blob) = match dialect {
        Dialect::Sqlite => ("INTEGER", "REAL", "BLOB"),
        Dialect::Postgres => ("BIGINT", "DOUBLE PRECISION", "BYTEA"),
    };
    migration
        .sql
        .split(';')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.replace("{int}", int)
                .replace("{real}", real)
                .replace("{blob}", blob)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_count_up_from_one_and_every_placeholder_is_replaced() {
        for (i, migration) in MIGRATIONS.iter().enumerate() {
            assert_eq!(migration.version, i as i64 + 1);
            for dialect in [Dialect::Sqlite, Dialect::Postgres] {
                for statement in statements(migration, dialect) {
                    assert!(!statement.contains('{'), "{statement}");
                }
            }
        }
    }
}
