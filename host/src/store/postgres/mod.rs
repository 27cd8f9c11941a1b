//! A task store in a PostgreSQL database: what the Temporal engine's
//! servers and workers share when they run on several machines (a SQLite
//! file serves the processes of one machine only).
//!
//! * The tables are the SQLite store's (`schema`), and so is the contract:
//!   a commit is one transaction, a repeated message id fails it with
//!   [`StoreError::Conflict`], reads see every committed write.
//! * Write revisions come from the `counters` row, which each commit
//!   updates first: commits that write tasks take turns on that row, so
//!   revisions follow the order commits land in, across processes.
//! * Like the SQLite store's file lock, a session advisory lock says who
//!   uses the database: an embedded server alone (exclusive), or the
//!   Temporal engine's processes together (shared); a second embedded
//!   server, or one beside the Temporal processes, is refused before it
//!   writes anything. The lock's connection is checked before each commit.
//! * Connections are pooled (`pool`), their I/O on a runtime thread of the
//!   store's own, so the store opens synchronously like the others.
//! * Durability is the server's: a commit returns once PostgreSQL says it
//!   committed (its `synchronous_commit` decides what that means).
//!
//! TLS is not built: reach the database over a private network or a local
//! TLS tunnel.

mod pool;
mod schema;

#[cfg(any(test, feature = "temporal"))]
pub mod local;

use std::sync::Arc;

use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Config, GenericClient, IsolationLevel, Row};

use self::pool::{Pool, Runtime, Statements};
use super::{
    ListPage, ListQuery, LogEntry, MessageLookup, PushConfigRecord, StoreError, StoreFuture,
    StoredEvent, StoredPushConfig, StoredTask, TaskStore, TaskWrite,
};

/// Connections one store opens at most, unless configured.
pub const DEFAULT_MAX_CONNECTIONS: usize = 8;

/// The advisory lock that says which processes use the database.
const USERS_LOCK: i64 = 0x7468_7573_6572_7321; // "thusers!"

/// How to open a PostgreSQL store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PostgresOptions {
    /// A libpq URL or key-value string: `postgres://user@host:5432/db`.
    pub url: String,
    /// The password, when it is not in the URL (read from the environment).
    pub password: Option<String>,
    pub max_connections: usize,
    /// Whether several processes write the database (the Temporal engine's
    /// servers and workers), or one embedded server owns it.
    pub shared: bool,
}

impl PostgresOptions {
    pub fn new(url: impl Into<String>) -> Self {
        PostgresOptions {
            url: url.into(),
            password: None,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            shared: false,
        }
    }

    /// The same, for a database several processes write.
    pub fn shared(self) -> Self {
        PostgresOptions {
            shared: true,
            ..self
        }
    }
}

/// The PostgreSQL task store. Cheap to share; dropping it closes its
/// connections and gives up its claim on the database.
pub struct PostgresStore {
    pool: Pool,
    /// The connection holding the advisory lock, for as long as the store
    /// lives.
    users: Arc<Client>,
}

impl PostgresStore {
    /// Connect, create the tables if needed, and claim the database.
    pub fn open(options: &PostgresOptions) -> Result<Self, StoreError> {
        let mut config: Config = options.url.parse().map_err(|error| {
            StoreError::Unavailable(format!("the task store's URL does not parse: {error}"))
        })?;
        if let Some(password) = &options.password {
            config.password(password);
        }
        if config.get_application_name().is_none() {
            config.application_name("tiny-harness");
        }
        let runtime = Runtime::start()?;
        let users = runtime.block_on({
            let runtime = runtime.clone();
            let config = config.clone();
            let shared = options.shared;
            async move {
                let mut client = runtime.connect(&config).await?;
                schema::migrate(&mut client)
                    .await
                    .map_err(StoreError::Unavailable)?;
                claim(&client, shared).await?;
                Ok::<_, StoreError>(client)
            }
        })??;
        Ok(PostgresStore {
            pool: Pool::new(runtime, config, options.max_connections),
            users: Arc::new(users),
        })
    }

    /// Writes need the claim on the database still held: its connection
    /// gone, another server may have taken the database.
    fn check_claim(&self) -> Result<(), StoreError> {
        if self.users.is_closed() {
            return Err(StoreError::Unavailable(
                "the connection holding this server's claim on the task store was lost; \
                 restart the server"
                    .into(),
            ));
        }
        Ok(())
    }
}

/// Take the advisory lock: exclusive for an embedded server, shared among
/// the Temporal engine's processes.
async fn claim(client: &Client, shared: bool) -> Result<(), StoreError> {
    let sql = match shared {
        true => "SELECT pg_try_advisory_lock_shared($1)",
        false => "SELECT pg_try_advisory_lock($1)",
    };
    let taken: bool = client
        .query_one(sql, &[&USERS_LOCK])
        .await
        .map_err(classify)?
        .get(0);
    if taken {
        return Ok(());
    }
    Err(StoreError::Unavailable(match shared {
        true => "the task store's database is in use by another tiny-harness server, an \
                 embedded one, which owns it alone; the Temporal engine's processes cannot \
                 share it"
            .into(),
        false => "the task store's database is in use by another tiny-harness server \
                  (an embedded server owns its store alone)"
            .into(),
    }))
}

impl TaskStore for PostgresStore {
    fn commit(&self, writes: Vec<TaskWrite>) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            self.check_claim()?;
            let mut connection = self.pool.get().await?;
            let pool::Connection { client, statements } = &mut *connection;
            let transaction = client.transaction().await.map_err(classify)?;
            commit(&transaction, statements, &writes).await?;
            transaction.commit().await.map_err(classify)
        })
    }

    /// The idle connections are closed (and with them the server's memory
    /// for their sessions); a query opens one again.
    fn release_memory(&self) -> StoreFuture<'_, ()> {
        self.pool.clear();
        Box::pin(async { Ok(()) })
    }

    fn load(&self, task_id: String, history: Option<usize>) -> StoreFuture<'_, Option<StoredTask>> {
        Box::pin(async move {
            let mut connection = self.pool.get().await?;
            let pool::Connection { client, statements } = &mut *connection;
            let read = snapshot(client).await?;
            let task = load_task(&read, statements, &task_id, history, true).await?;
            read.commit().await.map_err(classify)?;
            Ok(task)
        })
    }

    fn head(&self, task_id: String) -> StoreFuture<'_, Option<String>> {
        Box::pin(async move {
            let row = self
                .query_opt("SELECT head FROM tasks WHERE id = $1", &[&task_id])
                .await?;
            row.map(|row| column(&row, 0)).transpose()
        })
    }

    fn events_after(&self, task_id: String, after: u64) -> StoreFuture<'_, Vec<StoredEvent>> {
        Box::pin(async move {
            let rows = self
                .query(
                    "SELECT event_seq, event FROM task_log
                     WHERE task_id = $1 AND event_seq > $2 ORDER BY event_seq",
                    &[&task_id, &int(after)],
                )
                .await?;
            rows.iter()
                .map(|row| {
                    Ok(StoredEvent {
                        seq: uint(column(row, 0)?),
                        document: column(row, 1)?,
                    })
                })
                .collect()
        })
    }

    fn log(&self, task_id: String) -> StoreFuture<'_, Vec<LogEntry>> {
        Box::pin(async move {
            let rows = self
                .query(
                    "SELECT position, at_ms, kind, change, event_seq, event FROM task_log
                     WHERE task_id = $1 ORDER BY position",
                    &[&task_id],
                )
                .await?;
            rows.iter()
                .map(|row| {
                    let seq: Option<i64> = column(row, 4)?;
                    let event: Option<String> = column(row, 5)?;
                    Ok(LogEntry {
                        position: uint(column(row, 0)?),
                        at_ms: column(row, 1)?,
                        kind: column(row, 2)?,
                        document: column(row, 3)?,
                        event: seq.zip(event).map(|(seq, document)| StoredEvent {
                            seq: uint(seq),
                            document,
                        }),
                    })
                })
                .collect()
        })
    }

    fn list(&self, query: ListQuery) -> StoreFuture<'_, ListPage> {
        Box::pin(async move {
            let mut connection = self.pool.get().await?;
            let pool::Connection { client, statements } = &mut *connection;
            let read = snapshot(client).await?;
            let page = list(&read, statements, &query).await?;
            read.commit().await.map_err(classify)?;
            Ok(page)
        })
    }

    fn find_message(&self, lookup: MessageLookup) -> StoreFuture<'_, Option<String>> {
        Box::pin(async move {
            let row = match lookup {
                MessageLookup::InTask {
                    task_id,
                    message_id,
                } => {
                    self.query_opt(
                        "SELECT task_id FROM messages WHERE task_id = $1 AND message_id = $2",
                        &[&task_id, &message_id],
                    )
                    .await?
                }
                MessageLookup::Started {
                    created_by,
                    message_id,
                } => {
                    self.query_opt(
                        "SELECT m.task_id FROM messages m JOIN tasks t ON t.id = m.task_id
                         WHERE m.message_id = $1 AND m.position = 0 AND t.created_by = $2
                         LIMIT 1",
                        &[&message_id, &created_by],
                    )
                    .await?
                }
            };
            row.map(|row| column(&row, 0)).transpose()
        })
    }

    fn message(&self, task_id: String, message_id: String) -> StoreFuture<'_, Option<String>> {
        Box::pin(async move {
            let row = self
                .query_opt(
                    "SELECT document FROM messages WHERE task_id = $1 AND message_id = $2",
                    &[&task_id, &message_id],
                )
                .await?;
            row.map(|row| column(&row, 0)).transpose()
        })
    }

    fn recovery_candidates(&self) -> StoreFuture<'_, Vec<String>> {
        Box::pin(async move {
            // As on SQLite: tasks with a turn running or due, then open
            // parents written before one of their finished sub-tasks.
            let rows = self
                .query(
                    "SELECT id FROM tasks WHERE active
                     UNION
                     SELECT p.id FROM tasks c JOIN tasks p ON p.id = c.parent_id
                     WHERE c.parent_id IS NOT NULL AND c.terminal AND NOT p.terminal
                         AND c.write_rev > p.write_rev",
                    &[],
                )
                .await?;
            rows.iter().map(|row| column(row, 0)).collect()
        })
    }

    fn purge_terminal(&self, before_ms: i64) -> StoreFuture<'_, Vec<String>> {
        Box::pin(async move {
            self.check_claim()?;
            let mut connection = self.pool.get().await?;
            let transaction = connection.client.transaction().await.map_err(classify)?;
            let ids = purge(&transaction, before_ms).await?;
            transaction.commit().await.map_err(classify)?;
            Ok(ids)
        })
    }

    fn put_push_config(&self, config: StoredPushConfig) -> StoreFuture<'_, u64> {
        Box::pin(async move {
            self.check_claim()?;
            let row = self
                .query_opt(
                    "INSERT INTO push_configs (task_id, config_id, document, delivered_seq)
                     VALUES ($1, $2, $3, (SELECT COALESCE(MAX(event_seq), 0)
                                          FROM task_log WHERE task_id = $1))
                     ON CONFLICT (task_id, config_id) DO UPDATE SET document = EXCLUDED.document
                     RETURNING delivered_seq",
                    &[&config.task_id, &config.config_id, &config.document],
                )
                .await?
                .ok_or_else(|| {
                    StoreError::Corrupt("storing a push configuration returned no cursor".into())
                })?;
            Ok(uint(column(&row, 0)?))
        })
    }

    fn push_delivered(&self, task_id: String, config_id: String, seq: u64) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            self.check_claim()?;
            self.execute(
                "UPDATE push_configs SET delivered_seq = GREATEST(delivered_seq, $3)
                 WHERE task_id = $1 AND config_id = $2",
                &[&task_id, &config_id, &int(seq)],
            )
            .await
            .map(|_| ())
        })
    }

    fn delete_push_config(&self, task_id: String, config_id: String) -> StoreFuture<'_, bool> {
        Box::pin(async move {
            self.check_claim()?;
            let deleted = self
                .execute(
                    "DELETE FROM push_configs WHERE task_id = $1 AND config_id = $2",
                    &[&task_id, &config_id],
                )
                .await?;
            Ok(deleted > 0)
        })
    }

    fn push_configs(&self) -> StoreFuture<'_, Vec<PushConfigRecord>> {
        Box::pin(async move {
            let rows = self
                .query(
                    "SELECT task_id, config_id, document, delivered_seq FROM push_configs",
                    &[],
                )
                .await?;
            rows.iter().map(push_config).collect()
        })
    }

    fn push_configs_of(&self, task_id: String) -> StoreFuture<'_, Vec<PushConfigRecord>> {
        Box::pin(async move {
            let rows = self
                .query(
                    "SELECT task_id, config_id, document, delivered_seq FROM push_configs
                     WHERE task_id = $1",
                    &[&task_id],
                )
                .await?;
            rows.iter().map(push_config).collect()
        })
    }
}

type Params<'a> = [&'a (dyn ToSql + Sync)];

/// One statement outside a transaction, on a pooled connection.
impl PostgresStore {
    async fn query(&self, sql: &'static str, params: &Params<'_>) -> Result<Vec<Row>, StoreError> {
        let mut connection = self.pool.get().await?;
        let pool::Connection { client, statements } = &mut *connection;
        let statement = statements.get(client, sql).await?;
        client.query(&statement, params).await.map_err(classify)
    }

    async fn query_opt(
        &self,
        sql: &'static str,
        params: &Params<'_>,
    ) -> Result<Option<Row>, StoreError> {
        let mut connection = self.pool.get().await?;
        let pool::Connection { client, statements } = &mut *connection;
        let statement = statements.get(client, sql).await?;
        client.query_opt(&statement, params).await.map_err(classify)
    }

    async fn execute(&self, sql: &'static str, params: &Params<'_>) -> Result<u64, StoreError> {
        let mut connection = self.pool.get().await?;
        let pool::Connection { client, statements } = &mut *connection;
        let statement = statements.get(client, sql).await?;
        client.execute(&statement, params).await.map_err(classify)
    }
}

/// A read-only transaction that sees one snapshot throughout.
async fn snapshot(client: &mut Client) -> Result<tokio_postgres::Transaction<'_>, StoreError> {
    client
        .build_transaction()
        .isolation_level(IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await
        .map_err(classify)
}

// --- Writes ----------------------------------------------------------------------------------

/// Every write of one commit, in the caller's transaction.
async fn commit(
    client: &impl GenericClient,
    statements: &mut Statements,
    writes: &[TaskWrite],
) -> Result<(), StoreError> {
    if writes.is_empty() {
        return Ok(());
    }
    // First, so that commits take turns on the counter from here to their
    // end and revisions follow the order they land in.
    let taken = i64::try_from(writes.len()).unwrap_or(i64::MAX);
    let reserve = statements
        .get(
            client,
            "UPDATE counters SET value = value + $1 WHERE name = 'write_rev' RETURNING value",
        )
        .await?;
    let last: i64 = column(
        &client
            .query_one(&reserve, &[&taken])
            .await
            .map_err(classify)?,
        0,
    )?;
    for (revision, write) in (last - taken + 1..).zip(writes) {
        write_task(client, statements, write, revision).await?;
    }
    Ok(())
}

/// Store one task's write at write revision `revision`.
async fn write_task(
    client: &impl GenericClient,
    statements: &mut Statements,
    write: &TaskWrite,
    revision: i64,
) -> Result<(), StoreError> {
    let head = &write.head;
    match &write.created {
        Some(created) => {
            let insert = statements
                .get(
                    client,
                    "INSERT INTO tasks (id, context_id, parent_id, created_by, state, terminal,
                         active, status_at_ms, status_rev, write_rev, head)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9, $10)",
                )
                .await?;
            client
                .execute(
                    &insert,
                    &[
                        &write.task_id,
                        &head.context_id,
                        &created.parent_id,
                        &created.created_by,
                        &head.state,
                        &head.terminal,
                        &head.active,
                        &head.status_at_ms,
                        &revision,
                        &head.document,
                    ],
                )
                .await
                .map_err(classify)?;
        }
        None => {
            let update = statements
                .get(
                    client,
                    "UPDATE tasks SET state = $2, terminal = $3, active = $4, status_at_ms = $5,
                         status_rev = CASE WHEN $6 THEN $7 ELSE status_rev END,
                         write_rev = $7, head = $8
                     WHERE id = $1",
                )
                .await?;
            let updated = client
                .execute(
                    &update,
                    &[
                        &write.task_id,
                        &head.state,
                        &head.terminal,
                        &head.active,
                        &head.status_at_ms,
                        &head.status_changed,
                        &revision,
                        &head.document,
                    ],
                )
                .await
                .map_err(classify)?;
            if updated == 0 {
                // A bug in the caller; a conflict, so it fails alone.
                return Err(StoreError::Conflict(format!(
                    "task {} does not exist",
                    write.task_id
                )));
            }
        }
    }
    append_rows(client, statements, write).await
}

/// The log entries, messages, artifacts and participants of a write, one
/// statement per table (their rows as arrays), not one per row.
async fn append_rows(
    client: &impl GenericClient,
    statements: &mut Statements,
    write: &TaskWrite,
) -> Result<(), StoreError> {
    let id = &write.task_id;
    if !write.entries.is_empty() {
        let entries = &write.entries;
        let positions: Vec<i64> = entries.iter().map(|e| int(e.position)).collect();
        let at: Vec<i64> = entries.iter().map(|e| e.at_ms).collect();
        let kinds: Vec<&str> = entries.iter().map(|e| e.kind.as_str()).collect();
        let changes: Vec<&str> = entries.iter().map(|e| e.document.as_str()).collect();
        let seqs: Vec<Option<i64>> = entries
            .iter()
            .map(|e| e.event.as_ref().map(|event| int(event.seq)))
            .collect();
        let events: Vec<Option<&str>> = entries
            .iter()
            .map(|e| e.event.as_ref().map(|event| event.document.as_str()))
            .collect();
        let insert = statements
            .get(
                client,
                "INSERT INTO task_log (task_id, position, at_ms, kind, change, event_seq, event)
                 SELECT $1, * FROM UNNEST($2::BIGINT[], $3::BIGINT[], $4::TEXT[], $5::TEXT[],
                                          $6::BIGINT[], $7::TEXT[])",
            )
            .await?;
        client
            .execute(
                &insert,
                &[id, &positions, &at, &kinds, &changes, &seqs, &events],
            )
            .await
            .map_err(classify)?;
    }
    if !write.messages.is_empty() {
        let positions: Vec<i64> = write.messages.iter().map(|m| int(m.position)).collect();
        let ids: Vec<&str> = write
            .messages
            .iter()
            .map(|m| m.message_id.as_str())
            .collect();
        let documents: Vec<&str> = write.messages.iter().map(|m| m.document.as_str()).collect();
        let insert = statements
            .get(
                client,
                "INSERT INTO messages (task_id, position, message_id, document)
                 SELECT $1, * FROM UNNEST($2::BIGINT[], $3::TEXT[], $4::TEXT[])",
            )
            .await?;
        client
            .execute(&insert, &[id, &positions, &ids, &documents])
            .await
            .map_err(classify)?;
    }
    if !write.artifacts.is_empty() {
        let positions: Vec<i64> = write.artifacts.iter().map(|a| int(a.position)).collect();
        let documents: Vec<&str> = write
            .artifacts
            .iter()
            .map(|a| a.document.as_str())
            .collect();
        let insert = statements
            .get(
                client,
                "INSERT INTO artifacts (task_id, position, document)
                 SELECT $1, * FROM UNNEST($2::BIGINT[], $3::TEXT[])",
            )
            .await?;
        client
            .execute(&insert, &[id, &positions, &documents])
            .await
            .map_err(classify)?;
    }
    if let Some(participants) = &write.participants {
        let forget = statements
            .get(client, "DELETE FROM participants WHERE task_id = $1")
            .await?;
        client.execute(&forget, &[id]).await.map_err(classify)?;
        let insert = statements
            .get(
                client,
                "INSERT INTO participants (task_id, participant_id)
                 SELECT $1, UNNEST($2::TEXT[]) ON CONFLICT DO NOTHING",
            )
            .await?;
        client
            .execute(&insert, &[id, participants])
            .await
            .map_err(classify)?;
    }
    Ok(())
}

/// Delete the terminal tasks that ended before `before_ms`, everything
/// they hold with them; their ids.
async fn purge(client: &impl GenericClient, before_ms: i64) -> Result<Vec<String>, StoreError> {
    let ids: Vec<String> = client
        .query(
            "SELECT id FROM tasks WHERE terminal AND status_at_ms < $1 FOR UPDATE",
            &[&before_ms],
        )
        .await
        .map_err(classify)?
        .iter()
        .map(|row| column(row, 0))
        .collect::<Result<_, _>>()?;
    if ids.is_empty() {
        return Ok(ids);
    }
    for sql in [
        "DELETE FROM task_log WHERE task_id = ANY($1)",
        "DELETE FROM messages WHERE task_id = ANY($1)",
        "DELETE FROM artifacts WHERE task_id = ANY($1)",
        "DELETE FROM participants WHERE task_id = ANY($1)",
        "DELETE FROM push_configs WHERE task_id = ANY($1)",
        "DELETE FROM tasks WHERE id = ANY($1)",
    ] {
        client.execute(sql, &[&ids]).await.map_err(classify)?;
    }
    Ok(ids)
}

// --- Reads -----------------------------------------------------------------------------------

async fn load_task(
    client: &impl GenericClient,
    statements: &mut Statements,
    id: &str,
    history: Option<usize>,
    artifacts: bool,
) -> Result<Option<StoredTask>, StoreError> {
    let head = statements
        .get(client, "SELECT head, status_rev FROM tasks WHERE id = $1")
        .await?;
    let Some(row) = client.query_opt(&head, &[&id]).await.map_err(classify)? else {
        return Ok(None);
    };
    let (head, revision): (String, i64) = (column(&row, 0)?, column(&row, 1)?);
    // The newest position, from the primary key: no count over a long
    // history.
    let newest = statements
        .get(
            client,
            "SELECT MAX(position) + 1 FROM messages WHERE task_id = $1",
        )
        .await?;
    let history_len: Option<i64> = column(
        &client.query_one(&newest, &[&id]).await.map_err(classify)?,
        0,
    )?;
    // The newest `limit` messages, oldest first; NULL is no limit.
    let limit: Option<i64> = history.map(|n| i64::try_from(n).unwrap_or(i64::MAX));
    let messages = statements
        .get(
            client,
            "SELECT document FROM (
                 SELECT position, document FROM messages WHERE task_id = $1
                 ORDER BY position DESC LIMIT $2
             ) newest ORDER BY position",
        )
        .await?;
    let history = documents(client.query(&messages, &[&id, &limit]).await)?;
    let artifacts = match artifacts {
        true => {
            let read = statements
                .get(
                    client,
                    "SELECT document FROM artifacts WHERE task_id = $1 ORDER BY position",
                )
                .await?;
            documents(client.query(&read, &[&id]).await)?
        }
        false => Vec::new(),
    };
    Ok(Some(StoredTask {
        head,
        history,
        artifacts,
        revision: uint(revision),
        history_len: history_len.map_or(0, uint),
    }))
}

fn documents(rows: Result<Vec<Row>, tokio_postgres::Error>) -> Result<Vec<String>, StoreError> {
    rows.map_err(classify)?
        .iter()
        .map(|row| column(row, 0))
        .collect()
}

async fn list(
    client: &impl GenericClient,
    statements: &mut Statements,
    query: &ListQuery,
) -> Result<ListPage, StoreError> {
    let mut from = String::from("FROM tasks t");
    let mut filters: Vec<String> = Vec::new();
    let mut values: Vec<Box<dyn ToSql + Sync + Send>> = Vec::new();
    // The placeholder of a value added.
    fn next(
        value: Box<dyn ToSql + Sync + Send>,
        values: &mut Vec<Box<dyn ToSql + Sync + Send>>,
    ) -> String {
        values.push(value);
        format!("${}", values.len())
    }
    if let Some(participant) = &query.participant {
        let at = next(Box::new(participant.clone()), &mut values);
        from.push_str(&format!(
            " JOIN participants p ON p.task_id = t.id AND p.participant_id = {at}"
        ));
    }
    if let Some(context_id) = &query.context_id {
        let at = next(Box::new(context_id.clone()), &mut values);
        filters.push(format!("t.context_id = {at}"));
    }
    if let Some(state) = &query.state {
        let at = next(Box::new(state.clone()), &mut values);
        filters.push(format!("t.state = {at}"));
    }
    if let Some(after) = query.status_after_ms {
        let at = next(Box::new(after), &mut values);
        filters.push(format!("t.status_at_ms >= {at}"));
    }
    let filter = |filters: &[String]| match filters.is_empty() {
        true => String::new(),
        false => format!(" WHERE {}", filters.join(" AND ")),
    };
    fn params(values: &[Box<dyn ToSql + Sync + Send>]) -> Vec<&(dyn ToSql + Sync)> {
        values
            .iter()
            .map(|value| value.as_ref() as &(dyn ToSql + Sync))
            .collect()
    }
    let total: i64 = column(
        &client
            .query_one(
                &format!("SELECT COUNT(*) {from}{}", filter(&filters)),
                &params(&values),
            )
            .await
            .map_err(classify)?,
        0,
    )?;
    if let Some(before) = query.before_revision {
        let at = next(Box::new(int(before)), &mut values);
        filters.push(format!("t.status_rev < {at}"));
    }
    // One more than the page, to know whether another page follows.
    let limit = i64::try_from(query.limit).unwrap_or(i64::MAX - 1) + 1;
    let at = next(Box::new(limit), &mut values);
    let sql = format!(
        "SELECT t.id {from}{} ORDER BY t.status_rev DESC LIMIT {at}",
        filter(&filters)
    );
    let ids: Vec<String> = documents(client.query(&sql, &params(&values)).await)?;
    let more = ids.len() > query.limit;
    let mut tasks = Vec::with_capacity(query.limit.min(ids.len()));
    for id in ids.iter().take(query.limit) {
        if let Some(task) =
            load_task(client, statements, id, query.history, query.artifacts).await?
        {
            tasks.push(task);
        }
    }
    Ok(ListPage {
        tasks,
        total: uint(total),
        more,
    })
}

fn push_config(row: &Row) -> Result<PushConfigRecord, StoreError> {
    Ok(PushConfigRecord {
        config: StoredPushConfig {
            task_id: column(row, 0)?,
            config_id: column(row, 1)?,
            document: column(row, 2)?,
        },
        delivered_seq: uint(column(row, 3)?),
    })
}

// --- Values ----------------------------------------------------------------------------------

/// Column `index` of `row`, or why this build cannot read it.
fn column<'a, T: tokio_postgres::types::FromSql<'a>>(
    row: &'a Row,
    index: usize,
) -> Result<T, StoreError> {
    row.try_get(index)
        .map_err(|error| StoreError::Corrupt(error.to_string()))
}

/// PostgreSQL integers are signed; counters never get near the limit.
fn int(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn uint(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

/// What a PostgreSQL error means for the caller: integrity violations are
/// conflicts (nothing of the transaction was kept); a server that cannot
/// write or is gone makes the store unavailable.
fn classify(error: tokio_postgres::Error) -> StoreError {
    let Some(code) = error.code() else {
        return StoreError::Unavailable(match error.is_closed() {
            true => "the connection to the task store closed".into(),
            false => format!("the task store failed: {error}"),
        });
    };
    let detail = error
        .as_db_error()
        .map_or_else(|| error.to_string(), |db| db.message().to_owned());
    match code.code() {
        // Class 23: integrity constraint violation.
        class if class.starts_with("23") => StoreError::Conflict(detail),
        "53100" => StoreError::Unavailable(format!("the disk is full ({detail})")),
        "25006" => StoreError::Unavailable(format!("the database is read-only ({detail})")),
        // Class XX: internal error (data corrupted, an index corrupted).
        class if class.starts_with("XX") => StoreError::Corrupt(detail),
        _ => StoreError::Unavailable(detail),
    }
}
