//! Push notifications (A2A 3.1.7-3.1.10, 4.3): webhook configurations per
//! task, and the delivery of every stream event of the task to each of them.
//!
//! * Configurations are stored (so they survive restarts) and cached here,
//!   by task, for delivery. Each belongs to the participant who created it:
//!   it holds their webhook's credentials, so only they (and admins) can
//!   read or delete it.
//! * A task's actor hands every event, once committed, to [`Pusher::post`].
//!   Each configuration (webhook) has a worker of its own that delivers its
//!   events in order, retrying with backoff (`deliver`): a webhook that is
//!   down delays nobody else's notifications. A deleted configuration gets
//!   nothing more.
//! * The task's log is the outbox. Each configuration has a stored cursor,
//!   the number of the last event delivered to it (or given up on), moved
//!   after each delivery. A restart resends the events after each cursor
//!   before anything new: a crash loses no notification, and repeats at
//!   most those in flight when it happened (delivery is at least once).
//! * On the Temporal engine, the worker that stores a step posts its events
//!   (`Pusher::post_stored`); its pusher is shared ([`Pusher::shared`]):
//!   it reads a task's configurations from the store before using them,
//!   since other processes create and delete them.
//! * `address`: which webhooks may be reached at all; `configs`: how many
//!   there may be, per task and per participant.

pub(crate) mod address;
mod configs;
mod deliver;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock, Weak};
use std::time::Duration;

use reqwest::header::HeaderValue;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use crate::a2a::error::A2aError;
use crate::a2a::types::{StreamResponse, TaskPushNotificationConfig};
use crate::outbound::{self, ExtraRoots};
use crate::store::{PushConfigRecord, StoreError, StoredPushConfig, TaskStore};
use configs::{Caps, Configs};

pub use deliver::{SEQ_HEADER, TOKEN_HEADER};

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
    /// Roots trusted for https webhooks on top of the system's.
    pub extra_roots: ExtraRoots,
    /// Configurations one task may have: each event fans out to every one of them.
    pub max_configs_per_task: u32,
    /// Configurations one participant may own over all tasks.
    pub max_configs_per_participant: u32,
}

impl Default for PushSettings {
    fn default() -> Self {
        PushSettings {
            allow_private: false,
            max_attempts: 5,
            initial_backoff: Duration::from_millis(500),
            timeout: Duration::from_secs(10),
            extra_roots: ExtraRoots::default(),
            max_configs_per_task: 10,
            max_configs_per_participant: 100,
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

/// A stored configuration and whose it is (the stored document).
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Registered {
    owner: String,
    config: TaskPushNotificationConfig,
}

/// A configuration in the delivery cache.
#[derive(Clone, Debug)]
struct Webhook {
    registered: Registered,
    /// Events numbered up to this were delivered or given up on.
    delivered_seq: u64,
}

/// A webhook: its task id and configuration id.
type WebhookKey = (String, String);

/// An event waiting for delivery: its number in the task's sequence and
/// its `StreamResponse` JSON.
struct Pending {
    seq: u64,
    body: Arc<[u8]>,
}

impl Registered {
    fn visible_to(&self, viewer: &Viewer) -> bool {
        viewer.admin || self.owner == viewer.id
    }

    fn id(&self) -> &str {
        self.config.id.as_deref().unwrap_or_default()
    }
}

/// How long a webhook's delivery worker waits for more events before it stops.
const WORKER_IDLE: Duration = Duration::from_secs(60);

/// Push configurations and their delivery.
pub struct Pusher {
    store: Arc<dyn TaskStore>,
    settings: PushSettings,
    client: reqwest::Client,
    /// Every configuration, by task id.
    configs: RwLock<Configs>,
    /// Held by a creation from its cap check to its insertion, so concurrent
    /// creations cannot together exceed a cap. Creations are rare.
    creating: tokio::sync::Mutex<()>,
    /// The delivery queue of each webhook with work in flight, by task id
    /// and configuration id.
    queues: Mutex<HashMap<WebhookKey, mpsc::UnboundedSender<Pending>>>,
    /// Other processes change the configurations too (the Temporal
    /// engine's servers share one store): a task's are read again from the
    /// store before they are used, and all of them before a creation's cap
    /// check.
    shared: bool,
    this: Weak<Pusher>,
}

impl Pusher {
    /// The configurations of a store this process alone writes.
    pub fn new(store: Arc<dyn TaskStore>, settings: PushSettings) -> Arc<Self> {
        Self::build(store, settings, false)
    }

    /// The configurations of a store other processes write too.
    pub fn shared(store: Arc<dyn TaskStore>, settings: PushSettings) -> Arc<Self> {
        Self::build(store, settings, true)
    }

    fn build(store: Arc<dyn TaskStore>, settings: PushSettings, shared: bool) -> Arc<Self> {
        let client = outbound::client_builder(&settings.extra_roots)
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
            creating: tokio::sync::Mutex::default(),
            queues: Mutex::default(),
            shared,
            this: this.clone(),
        })
    }

    /// Read every stored configuration into the cache.
    pub(crate) async fn load(&self) -> Result<(), StoreError> {
        let stored = self.store.push_configs().await?;
        let mut cache = self.write_configs();
        let configs = self.readable(stored, &cache);
        *cache = Configs::from_stored(configs);
        Ok(())
    }

    /// On a shared store, read task `task_id`'s configurations again (one
    /// another process created or deleted shows here).
    pub(crate) async fn refresh(&self, task_id: &str) -> Result<(), StoreError> {
        if !self.shared {
            return Ok(());
        }
        let stored = self.store.push_configs_of(task_id.to_owned()).await?;
        let mut cache = self.write_configs();
        let webhooks = self.readable(stored, &cache).remove(task_id);
        cache.replace_task(task_id, webhooks.unwrap_or_default());
        Ok(())
    }

    /// The stored configurations that parse, by task. A cursor this process
    /// moved and has not stored yet stays where it is.
    fn readable(
        &self,
        stored: Vec<PushConfigRecord>,
        cached: &Configs,
    ) -> HashMap<String, Vec<Webhook>> {
        let mut configs: HashMap<String, Vec<Webhook>> = HashMap::new();
        for PushConfigRecord {
            config: row,
            delivered_seq,
        } in stored
        {
            match serde_json::from_str::<Registered>(&row.document) {
                Ok(registered) => {
                    let known = cached
                        .get(&row.task_id)
                        .and_then(|webhooks| {
                            webhooks
                                .iter()
                                .find(|w| w.registered.id() == registered.id())
                        })
                        .map_or(0, |webhook| webhook.delivered_seq);
                    configs.entry(row.task_id).or_default().push(Webhook {
                        registered,
                        delivered_seq: delivered_seq.max(known),
                    });
                }
                Err(error) => {
                    tracing::warn!(task = %row.task_id, config = %row.config_id, %error, "skipping an unreadable push configuration");
                }
            }
        }
        configs
    }

    /// Drop the cached configurations of `task_ids`, which the store purged
    /// (retention) with their configurations.
    pub(crate) fn forget(&self, task_ids: &[String]) {
        if task_ids.is_empty() {
            return;
        }
        let mut configs = self.write_configs();
        for task_id in task_ids {
            configs.remove_task(task_id);
        }
    }

    /// Queue again, after a restart, the events each webhook was owed (the
    /// task's events after its cursor). Call once, after [`Pusher::load`]
    /// and before tasks run, so they go out before anything new.
    pub(crate) async fn resend_undelivered(&self) -> Result<(), StoreError> {
        let behind: Vec<(WebhookKey, u64)> = self
            .read_configs()
            .iter()
            .flat_map(|(task_id, webhooks)| {
                webhooks.iter().map(|webhook| {
                    let key = (task_id.clone(), webhook.registered.id().to_owned());
                    (key, webhook.delivered_seq)
                })
            })
            .collect();
        for (key, after) in behind {
            let undelivered = self.store.events_after(key.0.clone(), after).await?;
            if undelivered.is_empty() {
                continue;
            }
            tracing::info!(
                task = %key.0,
                config = %key.1,
                events = undelivered.len(),
                "resending push notifications a restart left undelivered"
            );
            for event in undelivered {
                let body: Arc<[u8]> = event.document.into_bytes().into();
                self.queue(
                    &key,
                    Pending {
                        seq: event.seq,
                        body,
                    },
                );
            }
        }
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
        let _creating = self.creating.lock().await;
        if self.shared {
            // The caps count every process's configurations.
            self.load().await.map_err(A2aError::from)?;
        }
        let taken = self
            .find(&config.task_id, &id)
            .is_some_and(|webhook| webhook.registered.owner != owner);
        if taken {
            return Err(A2aError::invalid_field(
                "id",
                format!(
                    "push notification config `{id}` already exists for this task; choose another id"
                ),
            ));
        }
        self.read_configs()
            .check_room(self.caps(), &config.task_id, owner, &id)?;
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
        let delivered_seq = self
            .store
            .put_push_config(stored)
            .await
            .map_err(A2aError::from)?;
        self.write_configs().insert(
            &config.task_id,
            Webhook {
                registered,
                delivered_seq,
            },
        );
        Ok(config)
    }

    pub(crate) fn get(
        &self,
        viewer: &Viewer,
        task_id: &str,
        id: &str,
    ) -> Result<TaskPushNotificationConfig, A2aError> {
        self.find(task_id, id)
            .filter(|webhook| webhook.registered.visible_to(viewer))
            .map(|webhook| webhook.registered.config)
            // Spec 3.1.8: a configuration that does not exist is TaskNotFound.
            .ok_or_else(|| A2aError::TaskNotFound {
                task_id: task_id.to_owned(),
            })
    }

    /// The configurations of `task_id` that `viewer` may see, ordered by id,
    /// those after `after` (an id) only, at most `limit`; and whether more
    /// follow.
    pub(crate) fn list(
        &self,
        viewer: &Viewer,
        task_id: &str,
        after: Option<&str>,
        limit: usize,
    ) -> (Vec<TaskPushNotificationConfig>, bool) {
        let mut visible: Vec<TaskPushNotificationConfig> = self
            .read_configs()
            .get(task_id)
            .into_iter()
            .flatten()
            .filter(|webhook| webhook.registered.visible_to(viewer))
            .filter(|webhook| after.is_none_or(|after| webhook.registered.id() > after))
            .map(|webhook| webhook.registered.config.clone())
            .collect();
        visible.sort_by(|a, b| a.id.cmp(&b.id));
        let more = visible.len() > limit;
        visible.truncate(limit);
        (visible, more)
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
            .is_some_and(|webhook| webhook.registered.visible_to(viewer));
        if !mine {
            return Ok(());
        }
        self.store
            .delete_push_config(task_id.to_owned(), id.to_owned())
            .await
            .map_err(A2aError::from)?;
        self.write_configs().remove(task_id, id);
        Ok(())
    }

    /// Queue events another process committed (a Temporal worker's step),
    /// each numbered in its task's sequence and as stored, for each of the
    /// task's webhooks as the store has them now.
    #[cfg(feature = "temporal")]
    pub(crate) async fn post_stored(&self, task_id: &str, events: Vec<(u64, String)>) {
        if events.is_empty() {
            return;
        }
        if let Err(error) = self.refresh(task_id).await {
            tracing::warn!(task = %task_id, %error, "cannot read the task's push configurations; using those known");
        }
        let webhooks: Vec<(String, u64)> = self
            .read_configs()
            .get(task_id)
            .into_iter()
            .flatten()
            .map(|webhook| (webhook.registered.id().to_owned(), webhook.delivered_seq))
            .collect();
        for (seq, document) in events {
            let body: Arc<[u8]> = document.into_bytes().into();
            for (id, delivered_seq) in &webhooks {
                if *delivered_seq < seq {
                    let key = (task_id.to_owned(), id.clone());
                    let body = Arc::clone(&body);
                    self.queue(&key, Pending { seq, body });
                }
            }
        }
    }

    /// Whether task `task_id` has no webhook in this process's cache (a
    /// shared store's other processes may have registered one).
    pub(crate) fn watches_nothing(&self, task_id: &str) -> bool {
        !self.shared
            && self
                .read_configs()
                .get(task_id)
                .is_none_or(|webhooks| webhooks.is_empty())
    }

    /// Queue `event`, committed as number `seq` of its task, for each of the
    /// task's webhooks, if it has any.
    pub(crate) fn post(&self, task_id: &str, seq: u64, event: &StreamResponse) {
        let owed: Vec<WebhookKey> = self
            .read_configs()
            .get(task_id)
            .into_iter()
            .flatten()
            .filter(|webhook| webhook.delivered_seq < seq)
            .map(|webhook| (task_id.to_owned(), webhook.registered.id().to_owned()))
            .collect();
        if owed.is_empty() {
            return;
        }
        let body: Arc<[u8]> = match serde_json::to_vec(event) {
            Ok(body) => body.into(),
            Err(error) => {
                tracing::error!(task = %task_id, %error, "cannot serialize a push notification");
                return;
            }
        };
        for key in owed {
            let body = Arc::clone(&body);
            self.queue(&key, Pending { seq, body });
        }
    }

    /// Hand `pending` to the webhook's delivery worker, starting one if none
    /// runs.
    fn queue(&self, key: &WebhookKey, pending: Pending) {
        let mut queues = self.queues();
        let pending = match queues.get(key) {
            Some(queue) => match queue.send(pending) {
                Ok(()) => return,
                Err(closed) => closed.0,
            },
            None => pending,
        };
        let (queue, events) = mpsc::unbounded_channel();
        let _ = queue.send(pending);
        queues.insert(key.clone(), queue);
        tokio::spawn(work(self.this.clone(), key.clone(), events));
    }

    /// Deliver one event to one webhook, as it is configured now, unless it
    /// was deleted or already had the event; then move its cursor past it.
    async fn deliver_one(&self, (task_id, config_id): &WebhookKey, pending: Pending) {
        let Some(webhook) = self.find(task_id, config_id) else {
            return;
        };
        if webhook.delivered_seq >= pending.seq {
            return;
        }
        let config = webhook.registered.config;
        if let Err(undelivered) = deliver::deliver(
            &self.client,
            &self.settings,
            &config,
            pending.seq,
            &pending.body,
        )
        .await
        {
            tracing::warn!(
                task = %task_id,
                config = %config_id,
                attempts = undelivered.attempts,
                error = %undelivered.last_error,
                "a push notification could not be delivered"
            );
        }
        self.delivered(task_id, config_id, pending.seq).await;
    }

    /// Move webhook `config_id`'s cursor to `seq`, in the cache and the
    /// store. A store that cannot take the write only means the event may
    /// be sent again after a restart.
    async fn delivered(&self, task_id: &str, config_id: &str, seq: u64) {
        if let Some(webhook) = self.write_configs().get_mut(task_id, config_id) {
            webhook.delivered_seq = webhook.delivered_seq.max(seq);
        }
        if let Err(error) = self
            .store
            .push_delivered(task_id.to_owned(), config_id.to_owned(), seq)
            .await
        {
            tracing::warn!(task = %task_id, config = %config_id, seq, %error, "cannot record a push delivery; it may be repeated after a restart");
        }
    }

    /// Stop webhook `key`'s worker if no event waits for it. Under the
    /// queues' lock, so [`Pusher::queue`] never hands an event to a worker
    /// that is going away.
    fn retire(&self, key: &WebhookKey, events: &mpsc::UnboundedReceiver<Pending>) -> bool {
        let mut queues = self.queues();
        if events.is_empty() {
            queues.remove(key);
            true
        } else {
            false
        }
    }

    fn find(&self, task_id: &str, id: &str) -> Option<Webhook> {
        self.read_configs()
            .get(task_id)?
            .iter()
            .find(|webhook| webhook.registered.id() == id)
            .cloned()
    }

    fn caps(&self) -> Caps {
        Caps {
            per_task: self.settings.max_configs_per_task,
            per_participant: self.settings.max_configs_per_participant,
        }
    }

    // These locks guard plain map operations, which cannot panic halfway.
    fn read_configs(&self) -> std::sync::RwLockReadGuard<'_, Configs> {
        self.configs.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write_configs(&self) -> std::sync::RwLockWriteGuard<'_, Configs> {
        self.configs.write().unwrap_or_else(PoisonError::into_inner)
    }

    fn queues(&self) -> MutexGuard<'_, HashMap<WebhookKey, mpsc::UnboundedSender<Pending>>> {
        self.queues.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A webhook's delivery worker: its events in order, until it has been idle
/// a while or the pusher is gone.
async fn work(pusher: Weak<Pusher>, key: WebhookKey, mut events: mpsc::UnboundedReceiver<Pending>) {
    loop {
        match tokio::time::timeout(WORKER_IDLE, events.recv()).await {
            Ok(Some(pending)) => {
                let Some(pusher) = pusher.upgrade() else {
                    return;
                };
                pusher.deliver_one(&key, pending).await;
            }
            Ok(None) => return,
            Err(_) => {
                let Some(pusher) = pusher.upgrade() else {
                    return;
                };
                if pusher.retire(&key, &events) {
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
