//! Accounting records in and out of the store, and as CSV or JSON lines:
//! what GET /ws/v1/accounting and `weft accounting export` give.

use crate::limits::MAX_ACCOUNTING_PAGE;
use serde::Serialize;
use utoipa::ToSchema;

use crate::cluster::AccountingRecord;
use crate::limits::{MAX_TIME_MS, OutOfBounds};
use crate::store::{AccountingRange, Batch, Store, StoreError};

/// Which records: finished in `[from, to)` (ms since the epoch), of a
/// project and a user, made final after record number `after` (a page's
/// `next`), at most `limit`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Query {
    /// Finished at or after this (ms since the epoch); None: from the start.
    pub from: Option<u64>,
    /// Finished before this (ms since the epoch); None: up to [`MAX_TIME_MS`].
    pub to: Option<u64>,
    /// Only this project's records; None: every project's.
    pub project: Option<String>,
    /// Only this user's records; None: every user's.
    pub user: Option<String>,
    /// Only records made final after this number (the cursor a page's
    /// `next` gives); None: from the first.
    pub after: Option<u64>,
    /// At most this many records, 1 to [`MAX_ACCOUNTING_PAGE`]; None: [`MAX_ACCOUNTING_PAGE`].
    pub limit: Option<usize>,
}

/// One page of records, in the order they became final (nearly the order
/// apps finished: an app whose end an agent reported late, or whose charges
/// came in late, comes when it is final, so a cursor never misses one).
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct Page {
    /// The page's final records.
    pub records: Vec<AccountingRecord>,
    /// The cursor of the next page (`after=`), when this one is full.
    pub next: Option<u64>,
}

/// Writes `record` into `batch`: pending (`final_seq` none) or final, the
/// `final_seq`th.
pub fn put(batch: &mut Batch, record: &AccountingRecord, final_seq: Option<u64>) {
    batch.put_accounting(
        &record.app_id,
        record.finished_time,
        &record.project,
        &record.user,
        final_seq,
        serde_json::to_string(record).expect("a record serializes"),
    );
}

fn decode(store: &Store, rows: Vec<String>) -> Result<Vec<AccountingRecord>, StoreError> {
    rows.iter()
        .map(|row| {
            serde_json::from_str(row).map_err(|e| StoreError::Corrupt {
                target: store.target().to_string(),
                what: "an accounting row".into(),
                why: e.to_string(),
            })
        })
        .collect()
}

/// The records still waiting for charges.
pub fn pending(store: &Store) -> Result<Vec<AccountingRecord>, StoreError> {
    decode(store, store.pending_accounting()?)
}

/// One page of final records.
pub fn query(store: &Store, query: &Query) -> Result<Page, StoreError> {
    let limit = query
        .limit
        .unwrap_or(MAX_ACCOUNTING_PAGE)
        .clamp(1, MAX_ACCOUNTING_PAGE);
    let range = AccountingRange {
        from: query.from.unwrap_or(0),
        to: query.to.unwrap_or(MAX_TIME_MS + 1),
        project: query.project.clone(),
        user: query.user.clone(),
        after: query.after.unwrap_or(0),
        limit,
    };
    let rows = store.accounting(&range)?;
    let next = (rows.len() == limit)
        .then(|| rows.last().map(|(seq, _)| *seq))
        .flatten();
    let records = decode(store, rows.into_iter().map(|(_, record)| record).collect())?;
    Ok(Page { records, next })
}

/// A time a query names: ms since the epoch, a day (YYYY-MM-DD, its
/// midnight UTC) or an RFC 3339 time.
pub fn parse_time(field: &str, text: &str) -> Result<u64, OutOfBounds> {
    let text = text.trim();
    let refuse = |rule: &str| OutOfBounds {
        field: field.into(),
        value: format!("{:?}", crate::limits::cut(text, 60)),
        rule: rule.into(),
    };
    let ms = if let Ok(ms) = text.parse::<u64>() {
        ms
    } else if let Ok(day) = chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        let midnight = day.and_hms_opt(0, 0, 0).expect("midnight exists");
        u64::try_from(midnight.and_utc().timestamp_millis())
            .map_err(|_| refuse("but must not be before 1970"))?
    } else if let Ok(time) = chrono::DateTime::parse_from_rfc3339(text) {
        u64::try_from(time.timestamp_millis()).map_err(|_| refuse("but must not be before 1970"))?
    } else {
        return Err(refuse(
            "but must be ms since the epoch, a day (YYYY-MM-DD) or an RFC 3339 time",
        ));
    };
    crate::limits::within(field, ms, 0, MAX_TIME_MS)
}

/// The CSV columns, in order (the JSON fields' names).
pub const CSV_COLUMNS: [&str; 16] = [
    "appId",
    "appName",
    "user",
    "queue",
    "project",
    "applicationType",
    "memorySeconds",
    "vcoreSeconds",
    "gpuSeconds",
    "containersRun",
    "containersFailed",
    "submittedTime",
    "startedTime",
    "finishedTime",
    "finalStatus",
    "credits",
];

/// The header line of the CSV.
pub fn csv_header() -> String {
    let mut line = CSV_COLUMNS.join(",");
    line.push_str("\r\n");
    line
}

/// `record` as one CSV line (RFC 4180). Credits are written in full (the
/// shortest decimal that reads back as the same number), so sums match the
/// ledger. A text that a spreadsheet would run as a formula (starting with
/// `=`, `+`, `-`, `@`, tab or CR) gets a leading `'`.
pub fn csv_line(record: &AccountingRecord) -> String {
    let fields = [
        text(&record.app_id),
        text(&record.app_name),
        text(&record.user),
        text(&record.queue),
        text(&record.project),
        text(&record.application_type),
        record.memory_seconds.to_string(),
        record.vcore_seconds.to_string(),
        record.gpu_seconds.to_string(),
        record.containers_run.to_string(),
        record.containers_failed.to_string(),
        record.submitted_time.to_string(),
        record.started_time.map_or(String::new(), |t| t.to_string()),
        record.finished_time.to_string(),
        text(&record.final_status),
        record.credits.to_string(),
    ];
    let mut line = fields.join(",");
    line.push_str("\r\n");
    line
}

fn text(value: &str) -> String {
    let value = if value.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{value}")
    } else {
        value.to_string()
    };
    // `;` too: spreadsheets set to split on it keep a quoted field whole.
    if value.contains([',', ';', '"', '\n', '\r']) {
        format!("\"{}\"", value.replace('"', "\"\""))
    } else {
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: &str, finished: u64, project: &str) -> AccountingRecord {
        AccountingRecord {
            app_id: id.into(),
            app_name: "etl, \"nightly\"".into(),
            user: "alice".into(),
            queue: "default".into(),
            project: project.into(),
            application_type: "SPARK".into(),
            memory_seconds: 2048,
            vcore_seconds: 2,
            gpu_seconds: 0,
            containers_run: 3,
            containers_failed: 1,
            submitted_time: 10,
            started_time: None,
            finished_time: finished,
            final_status: "FAILED".into(),
            credits: 0.1 + 0.2,
        }
    }

    #[test]
    fn csv_quotes_what_needs_it_defuses_formulas_and_keeps_credits_exact() {
        let line = csv_line(&record("application_1_0001", 20, "=cmd"));
        assert_eq!(
            line,
            "application_1_0001,\"etl, \"\"nightly\"\"\",alice,default,'=cmd,SPARK,2048,2,0,3,1,10,,20,FAILED,0.30000000000000004\r\n"
        );
        assert_eq!(csv_header().split(',').count(), CSV_COLUMNS.len());
        let credits: f64 = line.trim_end().rsplit(',').next().unwrap().parse().unwrap();
        assert_eq!(credits, 0.1 + 0.2);
    }

    #[test]
    fn pages_follow_the_cursor_and_filters_hold() {
        let store = Store::in_memory();
        let mut batch = Batch::default();
        // Made final in this order; the third finished first (reported late).
        for (seq, (id, finished, project)) in [
            ("app_0", 100, "a"),
            ("app_1", 100, "b"),
            ("app_2", 90, "a"),
            ("app_3", 101, "a"),
            ("app_4", 102, "b"),
        ]
        .into_iter()
        .enumerate()
        {
            put(
                &mut batch,
                &record(id, finished, project),
                Some(seq as u64 + 1),
            );
        }
        put(&mut batch, &record("pending", 100, "a"), None);
        store.commit(&batch).unwrap();
        let ids = |page: &Page| {
            page.records
                .iter()
                .map(|r| r.app_id.clone())
                .collect::<Vec<_>>()
        };

        let mut query = Query {
            limit: Some(2),
            ..Query::default()
        };
        let mut seen = Vec::new();
        loop {
            let page = super::query(&store, &query).unwrap();
            seen.extend(ids(&page));
            match page.next {
                Some(next) => query.after = Some(next),
                None => break,
            }
        }
        assert_eq!(seen, ["app_0", "app_1", "app_2", "app_3", "app_4"]);
        assert_eq!(store.last_accounting_seq().unwrap(), 5);

        let only_a = Query {
            project: Some("a".into()),
            from: Some(95),
            to: Some(102),
            ..Query::default()
        };
        assert_eq!(
            ids(&super::query(&store, &only_a).unwrap()),
            ["app_0", "app_3"]
        );
        let nobody = Query {
            user: Some("bob".into()),
            ..Query::default()
        };
        assert!(super::query(&store, &nobody).unwrap().records.is_empty());
    }

    #[test]
    fn times_are_ms_days_or_rfc3339_and_bad_ones_are_refused_by_name() {
        assert_eq!(parse_time("from", "1500").unwrap(), 1500);
        assert_eq!(parse_time("from", "1970-01-02").unwrap(), 86_400_000);
        assert_eq!(parse_time("to", "1970-01-01T00:00:01Z").unwrap(), 1000);
        for bad in ["yesterday", "-5", "1969-12-31", "99999999999999999999"] {
            let error = parse_time("from", bad).unwrap_err();
            assert_eq!(error.field, "from", "{bad}");
        }
    }
}
