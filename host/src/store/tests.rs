//! The store contract, checked against both backends.

use std::sync::Arc;

use super::*;

fn head(state: &str, terminal: bool, at_ms: i64) -> Head {
    Head {
        context_id: "ctx".into(),
        state: state.into(),
        terminal,
        active: state == "working",
        status_at_ms: at_ms,
        status_changed: true,
        document: format!("{{\"state\":\"{state}\"}}"),
    }
}

fn message(position: u64, id: &str) -> StoredMessage {
    StoredMessage {
        position,
        message_id: id.into(),
        document: format!("{{\"messageId\":\"{id}\"}}"),
    }
}

pub(super) fn entry(position: u64, seq: Option<u64>) -> LogEntry {
    LogEntry {
        position,
        at_ms: 1,
        kind: "status".into(),
        document: "{}".into(),
        event: seq.map(|seq| StoredEvent {
            seq,
            document: format!("{{\"seq\":{seq}}}"),
        }),
    }
}

/// Task `id` created by `who`, with its first message `first`.
pub(super) fn create(id: &str, who: &str, first: &str) -> TaskWrite {
    TaskWrite {
        task_id: id.into(),
        created: Some(Created {
            created_by: Some(who.into()),
            parent_id: None,
        }),
        head: head("working", false, 10),
        entries: vec![entry(0, None), entry(1, Some(1))],
        messages: vec![message(0, first)],
        artifacts: Vec::new(),
        participants: Some(vec![who.into()]),
    }
}

/// An update of `id` to `state`.
fn update(id: &str, state: &str, at_ms: i64) -> TaskWrite {
    TaskWrite {
        task_id: id.into(),
        created: None,
        head: head(state, matches!(state, "completed" | "canceled"), at_ms),
        entries: Vec::new(),
        messages: Vec::new(),
        artifacts: Vec::new(),
        participants: None,
    }
}

/// Every backend, each empty: memory, SQLite and (built with the feature)
/// PostgreSQL, in a new database of the test process's local server.
async fn backends() -> Vec<(&'static str, Arc<dyn TaskStore>, Option<tempfile::TempDir>)> {
    let dir = tempfile::tempdir().expect("tempdir");
    let sqlite = SqliteStore::open(&dir.path().join("t.db"), Synchronous::Normal).expect("opens");
    let backends: Vec<(&'static str, Arc<dyn TaskStore>, Option<tempfile::TempDir>)> = vec![
        ("memory", Arc::new(MemoryStore::new()), None),
        ("sqlite", Arc::new(sqlite), Some(dir)),
    ];
    #[cfg(feature = "postgres")]
    let backends = {
        let mut backends = backends;
        backends.push(("postgres", Arc::new(postgres_store(false).await), None));
        backends
    };
    backends
}

/// A PostgreSQL store on a new database.
#[cfg(feature = "postgres")]
pub(crate) async fn postgres_store(shared: bool) -> postgres::PostgresStore {
    let url = postgres_database().await;
    let mut options = postgres::PostgresOptions::new(url);
    options.shared = shared;
    open_postgres(options).await
}

/// A new database of the local server.
#[cfg(feature = "postgres")]
pub(crate) async fn postgres_database() -> String {
    let server = postgres::local::LocalPostgres::shared().expect("the local PostgreSQL starts");
    server.database().await.expect("a database")
}

/// Opening blocks on the store's own runtime: off the test's.
#[cfg(feature = "postgres")]
pub(crate) async fn open_postgres(options: postgres::PostgresOptions) -> postgres::PostgresStore {
    try_open_postgres(options).await.expect("opens")
}

#[cfg(feature = "postgres")]
pub(crate) async fn try_open_postgres(
    options: postgres::PostgresOptions,
) -> Result<postgres::PostgresStore, StoreError> {
    tokio::task::spawn_blocking(move || postgres::PostgresStore::open(&options))
        .await
        .expect("joined")
}

#[tokio::test]
async fn a_commit_reads_back_with_history_limits_and_events() {
    for (name, store, _dir) in backends().await {
        store
            .commit(vec![create("t1", "alice", "m1")])
            .await
            .expect(name);
        let mut more = update("t1", "input-required", 20);
        more.messages = vec![message(1, "r1"), message(2, "m2")];
        more.entries = vec![entry(2, None), entry(3, Some(2))];
        more.artifacts = vec![StoredArtifact {
            position: 0,
            document: "{\"artifactId\":\"a\"}".into(),
        }];
        store.commit(vec![more]).await.expect(name);

        let task = store
            .load("t1".into(), None)
            .await
            .expect(name)
            .expect(name);
        assert_eq!(task.head, "{\"state\":\"input-required\"}", "{name}");
        assert_eq!(task.history.len(), 3, "{name}");
        assert_eq!(task.artifacts.len(), 1, "{name}");
        let last_two = store
            .load("t1".into(), Some(2))
            .await
            .expect(name)
            .expect(name);
        assert_eq!(
            last_two.history,
            ["{\"messageId\":\"r1\"}", "{\"messageId\":\"m2\"}"],
            "{name}"
        );
        assert!(store.load("nope".into(), None).await.expect(name).is_none());

        let events = store.events_after("t1".into(), 1).await.expect(name);
        assert_eq!(
            events.iter().map(|e| e.seq).collect::<Vec<_>>(),
            [2],
            "{name}"
        );
        assert_eq!(store.log("t1".into()).await.expect(name).len(), 4, "{name}");
    }
}

#[tokio::test]
async fn a_history_larger_than_a_quick_read_comes_back_whole() {
    for (name, store, _dir) in backends().await {
        store
            .commit(vec![create("t1", "alice", "m0")])
            .await
            .expect(name);
        // 60 messages of 10 KB: more than SQLite reads on the asking task.
        let mut more = update("t1", "input-required", 20);
        more.messages = (1..=60)
            .map(|position| StoredMessage {
                position,
                message_id: format!("m{position}"),
                document: format!("{{\"text\":\"{}\"}}", "y".repeat(10_000)),
            })
            .collect();
        store.commit(vec![more]).await.expect(name);
        // A first read leaves a connection idle, so the next starts on this
        // task and must go elsewhere to finish.
        assert!(store.head("t1".into()).await.expect(name).is_some());
        let whole = store
            .load("t1".into(), None)
            .await
            .expect(name)
            .expect(name);
        assert_eq!(whole.history.len(), 61, "{name}");
        assert_eq!(whole.history[0], "{\"messageId\":\"m0\"}", "{name}");
        let newest = store
            .load("t1".into(), Some(2))
            .await
            .expect(name)
            .expect(name);
        assert_eq!(newest.history.len(), 2, "{name}");
        assert_eq!(newest.history_len, 61, "{name}");
        let big = store.message("t1".into(), "m60".into()).await.expect(name);
        assert!(
            big.is_some_and(|document| document.len() > 10_000),
            "{name}"
        );
    }
}

#[tokio::test]
async fn a_repeated_message_id_refuses_the_whole_commit() {
    for (name, store, _dir) in backends().await {
        store
            .commit(vec![create("t1", "alice", "m1")])
            .await
            .expect(name);
        let mut again = update("t1", "completed", 30);
        again.messages = vec![message(1, "m1")];
        let other = create("t2", "bob", "x");
        let refused = store.commit(vec![other, again]).await;
        assert!(
            matches!(refused, Err(StoreError::Conflict(_))),
            "{name}: {refused:?}"
        );
        // Neither write of the refused commit is there.
        assert!(
            store.head("t2".into()).await.expect(name).is_none(),
            "{name}"
        );
        let task = store
            .load("t1".into(), None)
            .await
            .expect(name)
            .expect(name);
        assert_eq!(task.history.len(), 1, "{name}");
        assert!(task.head.contains("working"), "{name}");
        // Creating a task twice is a conflict too.
        let twice = store.commit(vec![create("t1", "alice", "m9")]).await;
        assert!(matches!(twice, Err(StoreError::Conflict(_))), "{name}");
    }
}

#[tokio::test]
async fn listing_orders_by_status_change_filters_and_pages() {
    for (name, store, _dir) in backends().await {
        for (id, who) in [("a", "alice"), ("b", "alice"), ("c", "bob")] {
            store
                .commit(vec![create(id, who, &format!("{id}-1"))])
                .await
                .expect(name);
        }
        // `a` changes status last; a write without a status change does not
        // move `b`.
        store
            .commit(vec![update("a", "input-required", 50)])
            .await
            .expect(name);
        let mut quiet = update("b", "working", 10);
        quiet.head.status_changed = false;
        store.commit(vec![quiet]).await.expect(name);

        let all = |limit| ListQuery {
            limit,
            ..ListQuery::default()
        };
        let page = store.list(all(10)).await.expect(name);
        let ids: Vec<&str> = page.tasks.iter().map(|t| t.head.as_str()).collect();
        assert_eq!(page.total, 3, "{name}");
        assert_eq!(ids.len(), 3, "{name}");
        assert!(ids[0].contains("input-required"), "{name}: {ids:?}");
        assert!(!page.more, "{name}");

        let alice = ListQuery {
            participant: Some("alice".into()),
            limit: 1,
            ..ListQuery::default()
        };
        let first = store.list(alice.clone()).await.expect(name);
        assert_eq!(
            (first.tasks.len(), first.total, first.more),
            (1, 2, true),
            "{name}"
        );
        let second = store
            .list(ListQuery {
                before_revision: Some(first.tasks[0].revision),
                ..alice
            })
            .await
            .expect(name);
        assert_eq!((second.tasks.len(), second.more), (1, false), "{name}");
        assert!(second.tasks[0].revision < first.tasks[0].revision, "{name}");

        let by_state = ListQuery {
            state: Some("input-required".into()),
            limit: 10,
            ..ListQuery::default()
        };
        assert_eq!(store.list(by_state).await.expect(name).total, 1, "{name}");
        let recent = ListQuery {
            status_after_ms: Some(40),
            limit: 10,
            ..ListQuery::default()
        };
        assert_eq!(store.list(recent).await.expect(name).total, 1, "{name}");
    }
}

#[tokio::test]
async fn messages_are_found_in_their_task_or_as_a_first_message() {
    for (name, store, _dir) in backends().await {
        store
            .commit(vec![create("t1", "alice", "m1")])
            .await
            .expect(name);
        let found = |lookup| store.find_message(lookup);
        let in_task = |task: &str, id: &str| MessageLookup::InTask {
            task_id: task.into(),
            message_id: id.into(),
        };
        assert_eq!(
            found(in_task("t1", "m1")).await.expect(name).as_deref(),
            Some("t1")
        );
        assert_eq!(found(in_task("t1", "m2")).await.expect(name), None);
        let started = |who: &str| MessageLookup::Started {
            created_by: who.into(),
            message_id: "m1".into(),
        };
        assert_eq!(
            found(started("alice")).await.expect(name).as_deref(),
            Some("t1")
        );
        assert_eq!(found(started("bob")).await.expect(name), None, "{name}");
    }
}

#[tokio::test]
async fn recovery_finds_running_tasks_and_parents_behind_their_sub_tasks() {
    for (name, store, _dir) in backends().await {
        store
            .commit(vec![create("parent", "alice", "p1")])
            .await
            .expect(name);
        store
            .commit(vec![update("parent", "input-required", 20)])
            .await
            .expect(name);
        let mut child = create("child", "alice", "c1");
        child.created = Some(Created {
            created_by: None,
            parent_id: Some("parent".into()),
        });
        store.commit(vec![child]).await.expect(name);
        store
            .commit(vec![create("busy", "bob", "b1")])
            .await
            .expect(name);
        let mut found = store.recovery_candidates().await.expect(name);
        found.sort();
        assert_eq!(found, ["busy", "child"], "{name}");

        // The child finished after the parent's last write: the parent may
        // have missed it.
        store
            .commit(vec![update("child", "completed", 30)])
            .await
            .expect(name);
        let mut found = store.recovery_candidates().await.expect(name);
        found.sort();
        assert_eq!(found, ["busy", "parent"], "{name}");
        store
            .commit(vec![update("parent", "input-required", 40)])
            .await
            .expect(name);
        assert_eq!(
            store.recovery_candidates().await.expect(name),
            ["busy"],
            "{name}"
        );
    }
}

#[tokio::test]
async fn retention_purges_old_terminal_tasks_only() {
    for (name, store, _dir) in backends().await {
        for id in ["old", "new", "open"] {
            store
                .commit(vec![create(id, "alice", "m")])
                .await
                .expect(name);
        }
        store
            .commit(vec![update("old", "completed", 100)])
            .await
            .expect(name);
        store
            .commit(vec![update("new", "canceled", 300)])
            .await
            .expect(name);
        store
            .commit(vec![update("open", "input-required", 50)])
            .await
            .expect(name);
        let config = StoredPushConfig {
            task_id: "old".into(),
            config_id: "c".into(),
            document: "{}".into(),
        };
        store.put_push_config(config).await.expect(name);
        assert_eq!(
            store.purge_terminal(200).await.expect(name),
            ["old"],
            "{name}"
        );
        assert!(
            store.head("old".into()).await.expect(name).is_none(),
            "{name}"
        );
        assert!(
            store.head("new".into()).await.expect(name).is_some(),
            "{name}"
        );
        assert!(
            store.head("open".into()).await.expect(name).is_some(),
            "{name}"
        );
        assert!(store.push_configs().await.expect(name).is_empty(), "{name}");
        assert!(
            store.log("old".into()).await.expect(name).is_empty(),
            "{name}"
        );
    }
}

#[tokio::test]
async fn push_configs_are_stored_replaced_and_deleted() {
    for (name, store, _dir) in backends().await {
        let config = |document: &str| StoredPushConfig {
            task_id: "t".into(),
            config_id: "c".into(),
            document: document.into(),
        };
        store
            .put_push_config(config("{\"v\":1}"))
            .await
            .expect(name);
        store
            .put_push_config(config("{\"v\":2}"))
            .await
            .expect(name);
        assert_eq!(
            store.push_configs().await.expect(name),
            [PushConfigRecord {
                config: config("{\"v\":2}"),
                delivered_seq: 0
            }],
            "{name}"
        );
        let delete = || store.delete_push_config("t".into(), "c".into());
        assert!(delete().await.expect(name), "{name}");
        assert!(
            !delete().await.expect(name),
            "{name}: deleting twice is fine"
        );
    }
}

#[tokio::test]
async fn push_cursors_start_at_the_latest_event_and_only_move_forward() {
    for (name, store, _dir) in backends().await {
        let config = |id: &str| StoredPushConfig {
            task_id: "t".into(),
            config_id: id.into(),
            document: "{}".into(),
        };
        store
            .commit(vec![create("t", "alice", "m1")])
            .await
            .expect(name);
        let mut more = update("t", "input-required", 20);
        more.entries = vec![entry(2, Some(2)), entry(3, Some(3))];
        store.commit(vec![more]).await.expect(name);

        // Created after event 3: owed nothing before it.
        let cursor = store.put_push_config(config("a")).await.expect(name);
        assert_eq!(cursor, 3, "{name}");
        let mut more = update("t", "working", 30);
        more.entries = vec![entry(4, Some(4)), entry(5, Some(5))];
        store.commit(vec![more]).await.expect(name);
        for (config, seq) in [("a", 4), ("gone", 4), ("a", 2)] {
            store
                .push_delivered("t".into(), config.into(), seq)
                .await
                .expect(name);
        }
        // Replacing the document keeps the cursor.
        assert_eq!(
            store.put_push_config(config("a")).await.expect(name),
            4,
            "{name}"
        );
        let records = store.push_configs().await.expect(name);
        assert_eq!(
            records.len(),
            1,
            "{name}: a cursor for an unknown config creates nothing"
        );
        assert_eq!(records[0].delivered_seq, 4, "{name}");
        let owed = store.events_after("t".into(), 4).await.expect(name);
        assert_eq!(
            owed.iter().map(|event| event.seq).collect::<Vec<_>>(),
            [5],
            "{name}"
        );
    }
}

/// A database of schema version 5 at `path`, holding what `rows` (SQL)
/// writes into its tables, then changed by `older` (SQL) into an earlier
/// version if that is what the test needs.
fn legacy_database(path: &std::path::Path, rows: &str, older: &str) {
    drop(SqliteStore::open(path, Synchronous::Normal).expect("opens"));
    rusqlite::Connection::open(path)
        .expect("opens")
        .execute_batch(&format!(
            "DROP INDEX tasks_by_first_message;
             DROP TABLE commits;
             DROP TABLE history;
             DROP TABLE message_ids;
             ALTER TABLE tasks DROP COLUMN first_message_id;
             ALTER TABLE tasks DROP COLUMN log_len;
             ALTER TABLE tasks DROP COLUMN history_len;
             ALTER TABLE tasks DROP COLUMN event_seq;
             {}
             {rows}
             PRAGMA user_version = 5;
             {older}",
            schema::LEGACY_TABLES,
        ))
        .expect("the older database is written");
}

/// The tables SQLite keeps, besides its own.
fn tables(path: &std::path::Path) -> Vec<String> {
    rusqlite::Connection::open(path)
        .expect("opens")
        .prepare(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'
             ORDER BY name",
        )
        .expect("prepares")
        .query_map([], |row| row.get(0))
        .expect("lists")
        .collect::<Result<_, _>>()
        .expect("reads")
}

fn version(path: &std::path::Path) -> i64 {
    rusqlite::Connection::open(path)
        .expect("opens")
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .expect("reads")
}

/// Task `t1` as version 5 kept it: created by alice, `messages` messages
/// (`m0`, `r1`, `m2`, ...) and `entries` log entries, every other one with
/// an event.
fn legacy_task(messages: u64, entries: u64) -> String {
    let mut rows = String::from(
        "INSERT INTO tasks (id, context_id, parent_id, created_by, state, terminal, active,
             status_at_ms, status_rev, write_rev, head)
         VALUES ('t1', 'ctx', NULL, 'alice', 'input-required', 0, 0, 10, 1, 1,
             '{\"state\":\"input-required\"}');",
    );
    for position in 0..messages {
        let id = legacy_message_id(position);
        rows.push_str(&format!(
            "INSERT INTO messages VALUES ('t1', {position}, '{id}', '{{\"messageId\":\"{id}\"}}');"
        ));
    }
    for position in 0..entries {
        let event = match position % 2 {
            1 => {
                let seq = position.div_ceil(2);
                format!("{seq}, '{{\"seq\":{seq}}}'")
            }
            _ => "NULL, NULL".into(),
        };
        rows.push_str(&format!(
            "INSERT INTO task_log VALUES ('t1', {position}, 1, 'status', '{{}}', {event});"
        ));
    }
    rows
}

fn legacy_message_id(position: u64) -> String {
    match position % 2 {
        0 => format!("m{position}"),
        _ => format!("r{position}"),
    }
}

#[tokio::test]
async fn a_version_1_database_gets_delivery_cursors_at_its_latest_events() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("v1.db");
    // Version 1 is version 2 without the cursors.
    legacy_database(
        &path,
        "INSERT INTO task_log VALUES ('t', 0, 1, 'created', '{}', NULL, NULL);
         INSERT INTO task_log VALUES ('t', 1, 1, 'status', '{}', 7, '{}');
         INSERT INTO push_configs VALUES ('t', 'c', '{}', 0);
         INSERT INTO push_configs VALUES ('quiet', 'c', '{}', 0);",
        "ALTER TABLE push_configs DROP COLUMN delivered_seq;
         DROP INDEX messages_first;
         CREATE INDEX messages_by_id ON messages (message_id);
         DROP TABLE counters;
         PRAGMA user_version = 1;",
    );
    let store = SqliteStore::open(&path, Synchronous::Normal).expect("upgrades");
    let mut cursors: Vec<(String, u64)> = store
        .push_configs()
        .await
        .expect("reads")
        .into_iter()
        .map(|record| (record.config.task_id, record.delivered_seq))
        .collect();
    cursors.sort();
    assert_eq!(cursors, [("quiet".to_owned(), 0), ("t".to_owned(), 7)]);
    assert_eq!(store.log("t".into()).await.expect("reads").len(), 2);
    drop(store);
    assert_eq!(version(&path), schema::VERSION);
    // Opening again finds the current version and changes nothing.
    let again = SqliteStore::open(&path, Synchronous::Normal).expect("reopens");
    assert_eq!(again.push_configs().await.expect("reads").len(), 2);
}

#[tokio::test]
async fn a_version_2_database_still_finds_a_resent_first_message() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("v2.db");
    // Version 2 indexed every message's id.
    legacy_database(
        &path,
        &legacy_task(1, 2),
        "DROP INDEX messages_first;
         CREATE INDEX messages_by_id ON messages (message_id);
         DROP TABLE counters;
         PRAGMA user_version = 2;",
    );
    let store = SqliteStore::open(&path, Synchronous::Normal).expect("upgrades");
    let found = store
        .find_message(MessageLookup::Started {
            created_by: "alice".into(),
            message_id: "m0".into(),
        })
        .await
        .expect("reads");
    assert_eq!(found.as_deref(), Some("t1"));
    drop(store);
    assert_eq!(version(&path), schema::VERSION);
}

#[tokio::test]
async fn a_version_4_database_keeps_its_events_and_starts_a_webhook_after_the_latest() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("v4.db");
    // Version 4 indexed the log's events.
    legacy_database(
        &path,
        &legacy_task(1, 7),
        "CREATE INDEX task_log_events ON task_log (task_id, event_seq)
             WHERE event_seq IS NOT NULL;
         PRAGMA user_version = 4;",
    );
    let store = SqliteStore::open(&path, Synchronous::Normal).expect("upgrades");
    let seqs = |events: Vec<StoredEvent>| events.iter().map(|e| e.seq).collect::<Vec<_>>();
    let all = store.events_after("t1".into(), 0).await.expect("reads");
    assert_eq!(seqs(all), [1, 2, 3]);
    let owed = store.events_after("t1".into(), 1).await.expect("reads");
    assert_eq!(seqs(owed), [2, 3]);
    let config = StoredPushConfig {
        task_id: "t1".into(),
        config_id: "c".into(),
        document: "{}".into(),
    };
    assert_eq!(store.put_push_config(config).await.expect("writes"), 3);
    drop(store);
    assert_eq!(version(&path), schema::VERSION);
}

#[tokio::test]
async fn a_version_5_conversation_moves_to_commits_whole_and_goes_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("v5.db");
    // Long enough for several chunks of each, of different numbers.
    let (messages, entries) = (41, 100);
    legacy_database(&path, &legacy_task(messages, entries), "");
    let store = SqliteStore::open(&path, Synchronous::Normal).expect("upgrades");
    let names = tables(&path);
    assert!(
        !names
            .iter()
            .any(|name| name == "task_log" || name == "messages"),
        "{names:?}"
    );
    let ids = |history: &[String]| {
        history
            .iter()
            .map(|document| {
                let message: serde_json::Value = serde_json::from_str(document).expect("JSON");
                message["messageId"].as_str().expect("an id").to_owned()
            })
            .collect::<Vec<_>>()
    };
    let whole = store
        .load("t1".into(), None)
        .await
        .expect("reads")
        .expect("t1");
    assert_eq!(whole.history_len, messages);
    assert_eq!(
        ids(&whole.history),
        (0..messages).map(legacy_message_id).collect::<Vec<_>>()
    );
    let newest = store
        .load("t1".into(), Some(3))
        .await
        .expect("reads")
        .expect("t1");
    assert_eq!(ids(&newest.history), ["m38", "r39", "m40"]);
    let log = store.log("t1".into()).await.expect("reads");
    assert_eq!(
        log.iter().map(|e| e.position).collect::<Vec<_>>(),
        (0..entries).collect::<Vec<_>>()
    );
    let owed = store.events_after("t1".into(), 47).await.expect("reads");
    assert_eq!(owed.iter().map(|e| e.seq).collect::<Vec<_>>(), [48, 49, 50]);
    assert_eq!(
        store
            .message("t1".into(), "r17".into())
            .await
            .expect("reads")
            .as_deref(),
        Some("{\"messageId\":\"r17\"}")
    );
    let lookup = |id: &str| MessageLookup::InTask {
        task_id: "t1".into(),
        message_id: id.into(),
    };
    assert!(
        store
            .find_message(lookup("m40"))
            .await
            .expect("reads")
            .is_some()
    );
    // The conversation goes on where it stopped, and only there.
    let mut next = update("t1", "input-required", 20);
    next.messages = vec![message(messages, "m41")];
    next.entries = vec![entry(entries, Some(51))];
    store.commit(vec![next.clone()]).await.expect("continues");
    let again = store.commit(vec![next]).await;
    assert!(matches!(again, Err(StoreError::Conflict(_))), "{again:?}");
    let task = store
        .load("t1".into(), Some(1))
        .await
        .expect("reads")
        .expect("t1");
    assert_eq!(task.history, ["{\"messageId\":\"m41\"}"]);
    assert_eq!(task.history_len, messages + 1);
}

#[tokio::test]
async fn a_sqlite_write_that_does_not_continue_the_log_is_refused_and_changes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SqliteStore::open(&dir.path().join("t.db"), Synchronous::Normal).expect("opens");
    store
        .commit(vec![create("t1", "alice", "m1")])
        .await
        .expect("creates");
    // Log entries only, no message: a step the Temporal engine retried.
    let mut step = update("t1", "working", 20);
    step.entries = vec![entry(2, Some(2)), entry(3, None)];
    store.commit(vec![step.clone()]).await.expect("continues");
    let again = store.commit(vec![step]).await;
    assert!(matches!(again, Err(StoreError::Conflict(_))), "{again:?}");
    // A gap is refused too.
    let mut gap = update("t1", "working", 30);
    gap.entries = vec![entry(9, None)];
    let refused = store.commit(vec![gap]).await;
    assert!(
        matches!(refused, Err(StoreError::Conflict(_))),
        "{refused:?}"
    );
    let log = store.log("t1".into()).await.expect("reads");
    assert_eq!(
        log.iter().map(|e| e.position).collect::<Vec<_>>(),
        [0, 1, 2, 3]
    );
}

#[tokio::test]
async fn a_database_of_a_newer_version_is_refused_untouched() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("t.db");
    drop(SqliteStore::open(&path, Synchronous::Normal).expect("opens"));
    let newer = schema::VERSION + 1;
    rusqlite::Connection::open(&path)
        .expect("opens")
        .execute_batch(&format!("PRAGMA user_version = {newer};"))
        .expect("marks it newer");
    let refused = SqliteStore::open(&path, Synchronous::Normal);
    let Err(StoreError::Unavailable(reason)) = &refused else {
        panic!("a newer database was opened");
    };
    assert!(
        reason.contains(&format!("schema version {newer}")),
        "{reason}"
    );
    assert_eq!(version(&path), newer, "the refusal changed the database");
}

#[tokio::test]
async fn a_resent_first_message_is_found_through_the_first_message_index() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("t.db");
    drop(SqliteStore::open(&path, Synchronous::Normal).expect("opens"));
    let connection = rusqlite::Connection::open(&path).expect("opens");
    let plan: Vec<String> = connection
        .prepare(&format!("EXPLAIN QUERY PLAN {}", sqlite::STARTED_BY))
        .expect("prepares")
        .query_map(["m1", "alice"], |row| row.get::<_, String>(3))
        .expect("plans")
        .collect::<Result<_, _>>()
        .expect("reads");
    assert!(
        plan.iter()
            .any(|step| step.contains("tasks_by_first_message")),
        "the lookup does not use tasks_by_first_message: {plan:?}"
    );
}

#[tokio::test]
async fn sqlite_keeps_everything_across_a_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("nested").join("t.db");
    {
        let store = SqliteStore::open(&path, Synchronous::Full).expect("opens");
        store
            .commit(vec![create("t1", "alice", "m1")])
            .await
            .expect("commit");
    }
    let store = SqliteStore::open(&path, Synchronous::Normal).expect("reopens");
    assert!(store.head("t1".into()).await.expect("read").is_some());
    // Revisions continue after the stored ones.
    store
        .commit(vec![create("t2", "alice", "m1")])
        .await
        .expect("commit");
    let page = store
        .list(ListQuery {
            limit: 10,
            ..ListQuery::default()
        })
        .await
        .expect("list");
    assert!(page.tasks[0].revision > page.tasks[1].revision);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_commits_share_transactions_and_all_land() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store: Arc<dyn TaskStore> =
        Arc::new(SqliteStore::open(&dir.path().join("t.db"), Synchronous::Full).expect("opens"));
    let mut writers = tokio::task::JoinSet::new();
    for n in 0..200 {
        let store = Arc::clone(&store);
        writers.spawn(async move {
            let id = format!("t{n}");
            store.commit(vec![create(&id, "alice", "m")]).await
        });
    }
    while let Some(done) = writers.join_next().await {
        done.expect("joined").expect("committed");
    }
    let page = store
        .list(ListQuery {
            limit: 1,
            ..ListQuery::default()
        })
        .await
        .expect("list");
    assert_eq!(page.total, 200);
}

#[tokio::test]
async fn a_locked_database_refuses_writes_as_unavailable() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("t.db");
    let store = SqliteStore::open(&path, Synchronous::Normal).expect("opens");
    store
        .commit(vec![create("t1", "alice", "m1")])
        .await
        .expect("commit");
    // Another process (here: another connection) holds the write lock.
    let other = rusqlite::Connection::open(&path).expect("opens");
    other.execute_batch("BEGIN EXCLUSIVE").expect("locks");
    let refused = store.commit(vec![update("t1", "completed", 5)]).await;
    let Err(StoreError::Unavailable(reason)) = &refused else {
        panic!("expected unavailable, got {refused:?}");
    };
    assert!(reason.contains("locked"), "{reason}");
    other.execute_batch("ROLLBACK").expect("unlocks");
    // Nothing of the refused write is there, and the store works again.
    let task = store
        .load("t1".into(), None)
        .await
        .expect("read")
        .expect("task");
    assert!(task.head.contains("working"));
    store
        .commit(vec![update("t1", "completed", 6)])
        .await
        .expect("commit");
}

#[tokio::test]
async fn a_full_database_refuses_writes_as_unavailable() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("t.db");
    let store = SqliteStore::open(&path, Synchronous::Normal).expect("opens");
    store
        .commit(vec![create("t1", "alice", "m1")])
        .await
        .expect("commit");
    // One store per database at a time.
    drop(store);
    // The same error SQLite reports for a full disk: cap the file's size.
    let other = rusqlite::Connection::open(&path).expect("opens");
    let pages: i64 = other
        .query_row("PRAGMA page_count", [], |row| row.get(0))
        .expect("page count");
    drop(other);
    let mut big = update("t1", "working", 7);
    big.messages = vec![StoredMessage {
        position: 1,
        message_id: "big".into(),
        document: format!("\"{}\"", "x".repeat(1 << 20)),
    }];
    let capped =
        SqliteStore::open_with_pragmas(&path, &format!("PRAGMA max_page_count = {};", pages + 2))
            .expect("opens");
    let refused = capped.commit(vec![big]).await;
    let Err(StoreError::Unavailable(reason)) = &refused else {
        panic!("expected unavailable, got {refused:?}");
    };
    assert!(reason.contains("full"), "{reason}");
    capped
        .commit(vec![update("t1", "completed", 8)])
        .await
        .expect("small writes fit");
}

#[tokio::test]
async fn a_read_only_database_refuses_writes_as_unavailable() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("t.db");
    SqliteStore::open(&path, Synchronous::Normal).expect("creates");
    let store = SqliteStore::open_with_pragmas(&path, "PRAGMA query_only = ON;").expect("opens");
    let refused = store.commit(vec![create("t1", "alice", "m1")]).await;
    let Err(StoreError::Unavailable(reason)) = &refused else {
        panic!("expected unavailable, got {refused:?}");
    };
    assert!(reason.contains("read-only"), "{reason}");
    assert!(store.head("t1".into()).await.expect("reads").is_none());
}

/// Two processes writing one shared store (two stores on one file stand for
/// them: each has its own writer connection and revision counter).
#[tokio::test]
async fn writers_sharing_a_store_hand_out_revisions_in_commit_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("shared.db");
    let shared = SqliteOptions::new(Synchronous::Normal).shared();
    let one = SqliteStore::open_with_options(&path, shared).expect("opens");
    let two = SqliteStore::open_with_options(&path, shared).expect("opens beside it");
    // Alternating writers: each status change must come after the last one
    // either made, or a ListTasks cursor would skip it.
    for (n, store) in [&one, &two, &one, &two].into_iter().enumerate() {
        let id = format!("t{n}");
        store
            .commit(vec![create(&id, "alice", &format!("{id}-1"))])
            .await
            .expect("commit");
    }
    one.commit(vec![update("t1", "input-required", 50)])
        .await
        .expect("commit");
    let page = two
        .list(ListQuery {
            limit: 10,
            ..ListQuery::default()
        })
        .await
        .expect("lists");
    let revisions: Vec<u64> = page.tasks.iter().map(|task| task.revision).collect();
    assert_eq!(
        revisions,
        [5, 4, 3, 1],
        "newest status change first, t1 moved up"
    );
    assert!(page.tasks[0].head.contains("input-required"));
    // An owner would run the tasks' turns itself: it is kept off.
    drop(one);
    let refused = SqliteStore::open(&path, Synchronous::Normal).err();
    assert!(refused.is_some(), "owned alone while shared");
    drop(two);
    // Reopened by one owner, its counter starts above what the writers used.
    let owner = SqliteStore::open(&path, Synchronous::Normal).expect("owned now");
    owner
        .commit(vec![update("t0", "input-required", 60)])
        .await
        .expect("commit");
    let page = owner
        .list(ListQuery {
            limit: 1,
            ..ListQuery::default()
        })
        .await
        .expect("lists");
    assert_eq!(page.tasks[0].revision, 6);
}

/// Two servers on one database: an embedded one owns it alone, the
/// Temporal engine's processes share it, and neither kind joins the other.
#[cfg(feature = "postgres")]
#[tokio::test]
async fn a_postgres_database_is_owned_by_one_server_or_shared_and_keeps_everything() {
    let url = postgres_database().await;
    let owner = open_postgres(postgres::PostgresOptions::new(&url)).await;
    owner
        .commit(vec![create("t1", "alice", "m1")])
        .await
        .expect("commit");
    for options in [
        postgres::PostgresOptions::new(&url),
        postgres::PostgresOptions::new(&url).shared(),
    ] {
        let refused = try_open_postgres(options).await.err();
        let Some(StoreError::Unavailable(reason)) = &refused else {
            panic!("expected a refusal, got {refused:?}");
        };
        assert!(reason.contains("in use by another"), "{reason}");
    }
    drop(owner);
    let one = open_postgres(postgres::PostgresOptions::new(&url).shared()).await;
    let two = open_postgres(postgres::PostgresOptions::new(&url).shared()).await;
    let refused = try_open_postgres(postgres::PostgresOptions::new(&url))
        .await
        .err();
    assert!(
        matches!(&refused, Some(StoreError::Unavailable(reason)) if reason.contains("in use")),
        "owned alone while shared: {refused:?}"
    );
    // What the owner stored is there for the sharers.
    assert!(one.head("t1".into()).await.expect("reads").is_some());
    // Alternating writers: each status change comes after the last one
    // either made, or a ListTasks cursor would skip it.
    for (n, store) in [&one, &two, &one].into_iter().enumerate() {
        let id = format!("s{n}");
        store
            .commit(vec![create(&id, "alice", &format!("{id}-1"))])
            .await
            .expect("commit");
    }
    two.commit(vec![update("t1", "input-required", 50)])
        .await
        .expect("commit");
    let page = one
        .list(ListQuery {
            limit: 10,
            ..ListQuery::default()
        })
        .await
        .expect("lists");
    let revisions: Vec<u64> = page.tasks.iter().map(|task| task.revision).collect();
    assert_eq!(
        revisions,
        [5, 4, 3, 2],
        "newest status change first, t1 moved up"
    );
    assert!(page.tasks[0].head.contains("input-required"));
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_postgres_commits_all_land_with_distinct_revisions() {
    let store: Arc<dyn TaskStore> = Arc::new(postgres_store(false).await);
    let mut writers = tokio::task::JoinSet::new();
    for n in 0..200 {
        let store = Arc::clone(&store);
        writers.spawn(async move {
            let id = format!("t{n}");
            store.commit(vec![create(&id, "alice", "m")]).await
        });
    }
    while let Some(done) = writers.join_next().await {
        done.expect("joined").expect("committed");
    }
    let page = store
        .list(ListQuery {
            limit: 500,
            ..ListQuery::default()
        })
        .await
        .expect("list");
    assert_eq!(page.total, 200);
    let mut revisions: Vec<u64> = page.tasks.iter().map(|task| task.revision).collect();
    revisions.dedup();
    assert_eq!(revisions, (1..=200).rev().collect::<Vec<u64>>());
}

/// A write to a task never created fails alone, as a conflict, and leaves
/// the rest of its commit unstored.
#[cfg(feature = "postgres")]
#[tokio::test]
async fn a_postgres_commit_with_an_unknown_task_stores_nothing() {
    let store = postgres_store(false).await;
    let refused = store
        .commit(vec![
            create("t1", "alice", "m1"),
            update("ghost", "completed", 5),
        ])
        .await;
    assert!(
        matches!(refused, Err(StoreError::Conflict(_))),
        "{refused:?}"
    );
    assert!(store.head("t1".into()).await.expect("reads").is_none());
    // The connection is usable again.
    store
        .commit(vec![create("t1", "alice", "m1")])
        .await
        .expect("commit");
}
