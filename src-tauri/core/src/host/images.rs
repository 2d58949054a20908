//! Images attached to the next message: pasted into the message box (their bytes come over
//! IPC) or dropped on the window (the host reads the files). Each is decoded and re-encoded
//! (`crate::images`), kept here by id until the message that carries it is sent, and checked
//! against the model the task will use.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Mutex;

use base64::Engine;

use super::{err, Host};
use crate::agent::TaskHandle;
use crate::images::{Prepared, Verdict, MAX_PER_MESSAGE};
use crate::protocol::{Event, ImageView, IpcError, IpcErrorCode, NoticeLevel};

/// How many attached images are kept waiting for their message (the oldest goes first).
const KEPT: usize = 32;

#[derive(Default)]
pub(super) struct Attached(Mutex<VecDeque<Prepared>>);

impl Attached {
    fn keep(&self, image: Prepared) {
        let mut kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        kept.retain(|k| k.view.id != image.view.id);
        kept.push_back(image);
        while kept.len() > KEPT {
            kept.pop_front();
        }
    }

    fn get(&self, ids: &[String]) -> Result<Vec<Prepared>, IpcError> {
        let kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        ids.iter()
            .map(|id| {
                kept.iter()
                    .find(|k| &k.view.id == id)
                    .cloned()
                    .ok_or_else(|| {
                        err(
                            IpcErrorCode::NotFound,
                            "an attached image is no longer kept; attach it again",
                        )
                    })
            })
            .collect()
    }

    fn forget(&self, ids: &[String]) {
        let mut kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        kept.retain(|k| !ids.contains(&k.view.id));
    }
}

impl Host {
    /// An image pasted into the message box.
    pub(super) async fn attach_image(
        &self,
        name: String,
        data_base64: String,
    ) -> Result<ImageView, IpcError> {
        // Base64 is a third larger than what it carries.
        if data_base64.len() as u64 > crate::images::MAX_INPUT_BYTES / 3 * 4 + 4 {
            return Err(err(
                IpcErrorCode::InvalidInput,
                format!(
                    "the image is larger than {} MB",
                    crate::images::MAX_INPUT_BYTES >> 20
                ),
            ));
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data_base64.trim())
            .map_err(|e| err(IpcErrorCode::InvalidInput, format!("not base64: {e}")))?;
        let name = match name.trim() {
            "" => "pasted image".to_string(),
            n => n.chars().take(120).collect(),
        };
        let prepared = tokio::task::spawn_blocking(move || crate::images::prepare(&name, &bytes))
            .await
            .map_err(|e| err(IpcErrorCode::Internal, e.to_string()))?
            .map_err(|e| err(IpcErrorCode::InvalidInput, e.to_string()))?;
        let view = prepared.view.clone();
        self.images.keep(prepared);
        Ok(view)
    }

    /// Files dropped on the window: each one an image is attached; the page is told which.
    pub fn drop_files(self: &std::sync::Arc<Self>, paths: Vec<PathBuf>) {
        let host = self.clone();
        self.runtime.spawn(async move {
            let read = tokio::task::spawn_blocking(move || {
                paths
                    .iter()
                    .take(MAX_PER_MESSAGE)
                    .map(|p| crate::images::from_file(p))
                    .collect::<Vec<_>>()
            })
            .await
            .unwrap_or_default();
            let (mut images, mut errors) = (Vec::new(), Vec::new());
            for r in read {
                match r {
                    Ok(prepared) => {
                        images.push(prepared.view.clone());
                        host.images.keep(prepared);
                    }
                    Err(e) => errors.push(e.to_string()),
                }
            }
            host.sink.emit(Event::ImagesDropped { images, errors });
        });
    }

    /// The images a message carries, once the model the task will use is known to read them
    /// (or not known not to). They are given to the task for its next turn.
    pub(super) async fn give_images(
        &self,
        task: &TaskHandle,
        ids: &[String],
    ) -> Result<(), IpcError> {
        if ids.is_empty() {
            return Ok(());
        }
        if ids.len() > MAX_PER_MESSAGE {
            return Err(err(
                IpcErrorCode::InvalidInput,
                crate::images::ImageError::TooMany.to_string(),
            ));
        }
        let images = self.images.get(ids)?;
        let profile = task.summary().profile;
        let provider = crate::llm::provider_for(self.provider_config(profile.as_deref()).await?);
        let gov = self.governance();
        match crate::images::verdict_for_task(provider.as_ref(), &gov, task).await {
            Verdict::Accepted => {}
            Verdict::Unknown(note) => self.notice(NoticeLevel::Warning, note),
            Verdict::Refused(why) => return Err(err(IpcErrorCode::InvalidInput, why)),
        }
        self.images.forget(ids);
        task.attach_images(images);
        Ok(())
    }
}
