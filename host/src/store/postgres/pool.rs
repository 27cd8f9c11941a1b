//! Connections to the database: opened on the store's own runtime thread
//! (their I/O runs there, whatever runtime awaits their queries), kept for
//! the next query, at most `max_connections` at once, each with the
//! statements it has prepared.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::runtime::Handle;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot};
use tokio_postgres::{Client, Config, GenericClient, NoTls, Statement};

use super::classify;
use crate::store::StoreError;

/// The store's runtime: a thread driving every connection's I/O until the
/// store (every clone of this) is dropped.
#[derive(Clone)]
pub(super) struct Runtime {
    handle: Handle,
    _stop: Arc<oneshot::Sender<()>>,
}

impl Runtime {
    pub(super) fn start() -> Result<Runtime, StoreError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|error| StoreError::Unavailable(format!("cannot start a runtime: {error}")))?;
        let handle = runtime.handle().clone();
        let (stop, stopped) = oneshot::channel::<()>();
        std::thread::Builder::new()
            .name("task-store-postgres".into())
            .spawn(move || {
                // Until the store is dropped (the sender with it).
                let _ = runtime.block_on(stopped);
            })
            .map_err(|error| StoreError::Unavailable(format!("cannot start a thread: {error}")))?;
        Ok(Runtime {
            handle,
            _stop: Arc::new(stop),
        })
    }

    /// A new connection, its I/O spawned on this runtime.
    pub(super) async fn connect(&self, config: &Config) -> Result<Client, StoreError> {
        let config = config.clone();
        let handle = self.handle.clone();
        let connected = self.handle.spawn(async move {
            let (client, connection) = config.connect(NoTls).await?;
            handle.spawn(async move {
                if let Err(error) = connection.await {
                    tracing::warn!(%error, "a connection to the task store ended");
                }
            });
            Ok::<_, tokio_postgres::Error>(client)
        });
        match connected.await {
            Ok(Ok(client)) => Ok(client),
            Ok(Err(error)) => Err(StoreError::Unavailable(format!(
                "cannot connect to the task store: {error}"
            ))),
            Err(error) => Err(StoreError::Unavailable(format!(
                "connecting to the task store failed: {error}"
            ))),
        }
    }

    /// Run `work` to its end from a thread outside any runtime or inside one
    /// (opening the store is synchronous).
    pub(super) fn block_on<T: Send + 'static>(
        &self,
        work: impl Future<Output = T> + Send + 'static,
    ) -> Result<T, StoreError> {
        let (done, result) = std::sync::mpsc::channel();
        self.handle.spawn(async move {
            let _ = done.send(work.await);
        });
        result
            .recv()
            .map_err(|_| StoreError::Unavailable("the task store's runtime stopped".into()))
    }
}

/// A connection and the statements prepared on it, by their SQL.
pub(super) struct Connection {
    pub(super) client: Client,
    pub(super) statements: Statements,
}

/// Statements prepared on one connection.
#[derive(Default)]
pub(super) struct Statements(HashMap<&'static str, Statement>);

impl Statements {
    /// `sql` prepared on `client` (the connection's client or a transaction
    /// on it), once per connection.
    pub(super) async fn get(
        &mut self,
        client: &impl GenericClient,
        sql: &'static str,
    ) -> Result<Statement, StoreError> {
        if let Some(statement) = self.0.get(sql) {
            return Ok(statement.clone());
        }
        let statement = client.prepare(sql).await.map_err(classify)?;
        self.0.insert(sql, statement.clone());
        Ok(statement)
    }
}

/// Open connections nobody is using, and a permit per connection in use.
pub(super) struct Pool {
    runtime: Runtime,
    config: Config,
    idle: Mutex<Vec<Connection>>,
    permits: Arc<Semaphore>,
}

impl Pool {
    pub(super) fn new(runtime: Runtime, config: Config, max_connections: usize) -> Pool {
        Pool {
            runtime,
            config,
            idle: Mutex::new(Vec::new()),
            permits: Arc::new(Semaphore::new(max_connections.max(1))),
        }
    }

    /// A connection for one operation, given back when dropped (unless it
    /// broke meanwhile).
    pub(super) async fn get(&self) -> Result<Pooled<'_>, StoreError> {
        let permit = Arc::clone(&self.permits)
            .acquire_owned()
            .await
            .map_err(|_| StoreError::Unavailable("the store is closing".into()))?;
        let idle = self.idle().pop();
        let connection = match idle {
            Some(connection) if !connection.client.is_closed() => connection,
            _ => Connection {
                client: self.runtime.connect(&self.config).await?,
                statements: Statements::default(),
            },
        };
        Ok(Pooled {
            pool: self,
            connection: Some(connection),
            _permit: permit,
        })
    }

    /// Close every idle connection (a query opens one again).
    pub(super) fn clear(&self) {
        self.idle().clear();
    }

    // The pool only ever holds connections nobody is using, so a panic
    // elsewhere cannot leave one half-used.
    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<Connection>> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A connection taken from the pool.
pub(super) struct Pooled<'a> {
    pool: &'a Pool,
    connection: Option<Connection>,
    _permit: OwnedSemaphorePermit,
}

impl std::ops::Deref for Pooled<'_> {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        self.connection.as_ref().expect("taken only on drop")
    }
}

impl std::ops::DerefMut for Pooled<'_> {
    fn deref_mut(&mut self) -> &mut Connection {
        self.connection.as_mut().expect("taken only on drop")
    }
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        // A transaction dropped unfinished (its future cancelled) rolls back
        // on the connection before its next query, so the connection can
        // go back; one that broke cannot.
        if let Some(connection) = self.connection.take()
            && !connection.client.is_closed()
        {
            self.pool.idle().push(connection);
        }
    }
}
