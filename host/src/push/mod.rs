//! Push notifications (A2A 3.1.7-3.1.10, 4.3): webhook configurations per
//! task, and the delivery of every stream event of the task to each of them.
//!
//! * Configurations are stored (so they survive restarts) and cached here,
//!   by task, for delivery. Each belongs to the participant who created it:
//!   it holds their webhook's credentials, so only they (and admins) can
//!   read or delete it.
//! * A task's actor hands every event, once committed, to [`Pusher::post`];
//!   a worker per task delivers them in order, each to every configuration
//!   of the task as it stands at delivery time (a deleted configuration gets
//!   nothing more), retrying with backoff (`deliver`).
//! * `address`: which webhooks may be reached at all.

mod address;
mod deliver;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock, Weak};
use std::time::Duration;

use reqwest::header::HeaderValue;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::a2a::error::A2aError;
use crate::a2a::types::{StreamResponse, TaskPushNotificationConfig};
use crate::store::{StoreError, StoredPushConfig, TaskStore};

pub use deliver::TOKEN_HEADER;

/// How webhooks are reached (`[push]` in the configuration).
#[derive(Clone, Debug, PartialEq)]
pub struct PushSettings {
    /// Whether webhooks may resolve to loopback, private or link-local
    /// addresses. Off by default: a webhook is a request the server makes on
    /// a client's behalf.
    pub allow_private: bool,
    /// Attempts per event and webhook, the first included.
    pub max_attempts: u32,
    /// The wait before the first retry; it doubles after each.
    pub initial_backoff: Duration,
    /// How long one attempt may take.
    pub timeout: Duration,
}

impl Default for PushSettings {
    fn default() -> Self {
        PushSettings {
            allow_private: false,
            max_attempts: 5,
            initial_backoff: Duration::from_millis(500),
            timeout: Duration::from_secs(10),
        }
    }
}

/// Who asks about configurations.
#[derive(Clone, Debug)]
pub struct Viewer {
    pub id: String,
    /// Admins see and delete every configuration.
    pub admin: bool,
}

/// A stored configuration and whose it is.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Registered {
    owner: String,
    config: TaskPushNotificationConfig,
}

impl Registered {
    fn visible_to(&self, viewer: &Viewer) -> bool {
        viewer.admin || self.owner == viewer.id
    }

    fn id(&self) -> &str {
        self.config.id.as_deref().unwrap_or_default()
    }
}

/// How long a task's delivery worker waits for more events before it stops.
const WORKER_IDLE: Duration = Duration::from_secs(60);

/// Push configurations and their delivery.
pub struct Pusher {
    store: Arc<dyn TaskStore>,
    settings: PushSettings,
    client: reqwest::Client,
    /// Every configuration, by task id.
    configs: RwLock<HashMap<String, Vec<Registered>>>,
    /// The delivery queue of each task with work in flight.
    queues: Mutex<HashMap<String, mpsc::UnboundedSender<Arc<[u8]>>>>,
    this: Weak<Pusher>,
}

impl Pusher {
    pub fn new(store: Arc<dyn TaskStore>, settings: PushSettings) -> Arc<Self> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            // A proxy would connect on our behalf to whatever the webhook
            // names, around the address check.
            .no_proxy()
            .dns_resolver(address::GuardedResolver {
                allow_private: settings.allow_private,
            })
            .timeout(settings.timeout)
            .build()
            .unwrap_or_else(|error| {
                tracing::error!(%error, "cannot configure the push client; using the defaults");
                reqwest::Client::new()
            });
        Arc::new_cyclic(|this| Pusher {
            store,
            settings,
            client,
            configs: RwLock::default(),
            queues: Mutex::default(),
            this: this.clone(),
        })
    }

    /// Read every stored configuration into the cache.
    pub(crate) async fn load(&self) -> Result<(), StoreError> {
        let stored = self.store.push_configs().await?;
        let mut configs: HashMap<String, Vec<Registered>> = HashMap::new();
        for row in stored {
            match serde_json::from_str::<Registered>(&row.document) {
                Ok(registered) => configs.entry(row.task_id).or_default().push(registered),
                Err(error) => {
                    tracing::warn!(task = %row.task_id, config = %row.config_id, %error, "skipping an unreadable push configuration");
                }
            }
        }
        *self.write_configs() = configs;
        Ok(())
    }

    /// Register `config` (its `taskId` set and visible to `owner`): checked,
    /// given an id if it has none, stored, then used for the task's next
    /// events.
    pub(crate) async fn create(
        &self,
        owner: &str,
        mut config: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, A2aError> {
        address::check_url(&config.url, self.settings.allow_private)
            .await
            .map_err(|problem| A2aError::invalid_field("url", problem))?;
        check_headers(&config)?;
        let id = config
            .id
            .take()
            .filter(|id| !id.trim().is_empty())
            .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        config.id = Some(id.clone());
        let taken = self
            .find(&config.task_id, &id)
            .is_some_and(|r| r.owner != owner);
        if taken {
            return Err(A2aError::invalid_field(
                "id",
                format!(
                    "push notification config `{id}` already exists for this task; choose another id"
                ),
            ));
        }
        let registered = Registered {
            owner: owner.to_owned(),
            config: config.clone(),
        };
        let document = serde_json::to_string(&registered)
            .map_err(|error| A2aError::Internal(error.to_string()))?;
        let stored = StoredPushConfig {
            task_id: config.task_id.clone(),
            config_id: id.clone(),
            document,
        };
        self.store
            .put_push_config(stored)
            .await
            .map_err(crate::task::store_error)?;
        let mut configs = self.write_configs();
        let list = configs.entry(config.task_id.clone()).or_default();
        list.retain(|existing| existing.id() != id);
        list.push(registered);
        Ok(config)
    }

    pub(crate) fn get(
        &self,
        viewer: &Viewer,
        task_id: &str,
        id: &str,
    ) -> Result<TaskPushNotificationConfig, A2aError> {
        self.find(task_id, id)
            .filter(|registered| registered.visible_to(viewer))
            .map(|registered| registered.config)
            // Spec 3.1.8: a configuration that does not exist is TaskNotFound.
            .ok_or_else(|| A2aError::TaskNotFound {
                task_id: task_id.to_owned(),
            })
    }

    pub(crate) fn list(&self, viewer: &Viewer, task_id: &str) -> Vec<TaskPushNotificationConfig> {
        self.read_configs()
            .get(task_id)
            .into_iter()
            .flatten()
            .filter(|registered| registered.visible_to(viewer))
            .map(|registered| registered.config.clone())
            .collect()
    }

    /// Delete a configuration; no notification goes to it afterwards.
    pub(crate) async fn delete(
        &self,
        viewer: &Viewer,
        task_id: &str,
        id: &str,
    ) -> Result<(), A2aError> {
        let mine = self
            .find(task_id, id)
            .is_some_and(|registered| registered.visible_to(viewer));
        if !mine {
            return Ok(());
        }
        self.store
            .delete_push_config(task_id.to_owned(), id.to_owned())
            .await
            .map_err(crate::task::store_error)?;
        if let Some(list) = self.write_configs().get_mut(task_id) {
            list.retain(|registered| registered.id() != id);
        }
        Ok(())
    }

    /// Queue `event` (committed) for the task's webhooks, if it has any.
    pub(crate) fn post(&self, task_id: &str, event: &StreamResponse) {
        if self.read_configs().get(task_id).is_none_or(Vec::is_empty) {
            return;
        }
        let body: Arc<[u8]> = match serde_json::to_vec(event) {
            Ok(body) => body.into(),
            Err(error) => {
                tracing::error!(task = %task_id, %error, "cannot serialize a push notification");
                return;
            }
        };
        let mut queues = self.queues();
        if let Some(queue) = queues.get(task_id)
            && queue.send(Arc::clone(&body)).is_ok()
        {
            return;
        }
        let (queue, events) = mpsc::unbounded_channel();
        let _ = queue.send(body);
        queues.insert(task_id.to_owned(), queue);
        tokio::spawn(work(self.this.clone(), task_id.to_owned(), events));
    }

    /// Deliver one event to every configuration the task has now.
    async fn deliver_all(&self, task_id: &str, body: Arc<[u8]>) {
        let configs: Vec<TaskPushNotificationConfig> = self
            .read_configs()
            .get(task_id)
            .into_iter()
            .flatten()
            .map(|registered| registered.config.clone())
            .collect();
        let mut deliveries = JoinSet::new();
        for config in configs {
            let (client, settings, body) = (
                self.client.clone(),
                self.settings.clone(),
                Arc::clone(&body),
            );
            deliveries.spawn(async move {
                let result = deliver::deliver(&client, &settings, &config, &body).await;
                (config.id, result)
            });
        }
        while let Some(done) = deliveries.join_next().await {
            match done {
                Ok((_, Ok(_))) => {}
                Ok((config, Err(undelivered))) => tracing::warn!(
                    task = %task_id,
                    config = config.as_deref().unwrap_or_default(),
                    attempts = undelivered.attempts,
                    error = %undelivered.last_error,
                    "a push notification could not be delivered"
                ),
                Err(error) => tracing::error!(task = %task_id, %error, "a push delivery failed"),
            }
        }
    }

    /// Stop task `task_id`'s worker if no event waits for it. Under the
    /// queues' lock, so [`Pusher::post`] never hands an event to a worker
    /// that is going away.
    fn retire(&self, task_id: &str, events: &mpsc::UnboundedReceiver<Arc<[u8]>>) -> bool {
        let mut queues = self.queues();
        if events.is_empty() {
            queues.remove(task_id);
            true
        } else {
            false
        }
    }

    fn find(&self, task_id: &str, id: &str) -> Option<Registered> {
        self.read_configs()
            .get(task_id)?
            .iter()
            .find(|registered| registered.id() == id)
            .cloned()
    }

    // These locks guard plain map operations, which cannot panic halfway.
    fn read_configs(&self) -> std::sync::RwLockReadGuard<'_, HashMap<String, Vec<Registered>>> {
        self.configs.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write_configs(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<String, Vec<Registered>>> {
        self.configs.write().unwrap_or_else(PoisonError::into_inner)
    }

    fn queues(&self) -> MutexGuard<'_, HashMap<String, mpsc::UnboundedSender<Arc<[u8]>>>> {
        self.queues.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A task's delivery worker: its events in order, until it has been idle a
/// while or the pusher is gone.
async fn work(
    pusher: Weak<Pusher>,
    task_id: String,
    mut events: mpsc::UnboundedReceiver<Arc<[u8]>>,
) {
    loop {
        match tokio::time::timeout(WORKER_IDLE, events.recv()).await {
            Ok(Some(body)) => {
                let Some(pusher) = pusher.upgrade() else {
                    return;
                };
                pusher.deliver_all(&task_id, body).await;
            }
            Ok(None) => return,
            Err(_) => {
                let Some(pusher) = pusher.upgrade() else {
                    return;
                };
                if pusher.retire(&task_id, &events) {
                    return;
                }
            }
        }
    }
}

/// The authentication and token go into HTTP headers; refuse values that
/// cannot (control characters would split the request).
fn check_headers(config: &TaskPushNotificationConfig) -> Result<(), A2aError> {
    let valid = |value: &str| HeaderValue::from_str(value).is_ok();
    if let Some(authentication) = &config.authentication {
        if authentication.scheme.trim().is_empty() || !valid(&authentication.scheme) {
            return Err(A2aError::invalid_field(
                "authentication.scheme",
                "authentication.scheme must be an HTTP authentication scheme such as Bearer",
            ));
        }
        if authentication
            .credentials
            .as_deref()
            .is_some_and(|c| !valid(c))
        {
            return Err(A2aError::invalid_field(
                "authentication.credentials",
                "authentication.credentials must be printable text without line breaks",
            ));
        }
    }
    if config.token.as_deref().is_some_and(|token| !valid(token)) {
        return Err(A2aError::invalid_field(
            "token",
            "token must be printable text without line breaks",
        ));
    }
    Ok(())
}
