//! The subscription bridge: forwards a daemon subscription's events to the
//! window over a Tauri channel.
//!
//! The UI creates the channel first and passes it to `subscribe`, which
//! returns only once the daemon accepted the subscription; with `after_seq`
//! the daemon replays what was recorded after it, then live events, so
//! nothing is missed between a history read and going live. Forwarding
//! stops on `unsubscribe`, when the channel can no longer deliver (the page
//! went away), when the daemon ends the subscription, or when the window is
//! destroyed ([`Bridges::stop_all`]).

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use tauri::async_runtime::JoinHandle;
use tauri::ipc::Channel;
use tauri::{AppHandle, Manager};
use weft::model::Event;

use crate::commands::{Result, client};

/// The live bridges, by subscription id.
#[derive(Default)]
pub struct Bridges {
    next: AtomicU64,
    tasks: Mutex<HashMap<String, JoinHandle<()>>>,
}

impl Bridges {
    /// Stops every bridge (the window is gone).
    pub fn stop_all(&self) {
        for (_, task) in lock(&self.tasks).drain() {
            task.abort();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Subscribes to one run's events (`run`, with `seq > after_seq`) or to
/// every run's new events (`run` absent) and forwards them to `channel`.
/// Returns the subscription id to pass to `unsubscribe`.
pub async fn subscribe(
    app: &AppHandle,
    run: Option<String>,
    after_seq: u64,
    channel: Channel<Event>,
) -> Result<String> {
    let bridges = app.state::<Bridges>();
    let id = format!("app-{}", bridges.next.fetch_add(1, Ordering::Relaxed) + 1);
    let client = client().await?;
    let mut subscription = client.subscribe(id.clone(), run, after_seq).await?;
    let task = tauri::async_runtime::spawn(async move {
        // The client lives as long as the bridge: dropping it closes the
        // connection, which ends the subscription in the daemon.
        let _client = client;
        while let Some(event) = subscription.next().await {
            if channel.send(event).is_err() {
                break;
            }
        }
    });
    lock(&bridges.tasks).insert(id.clone(), task);
    Ok(id)
}

/// Stops forwarding `subscription`; false when there was no such bridge.
pub async fn unsubscribe(app: &AppHandle, subscription: String) -> Result<bool> {
    let removed = lock(&app.state::<Bridges>().tasks).remove(&subscription);
    Ok(match removed {
        Some(task) => {
            task.abort();
            true
        }
        None => false,
    })
}
