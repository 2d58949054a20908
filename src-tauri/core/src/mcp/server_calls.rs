//! Calling a tool of a running server: a call waits (bounded) for a restart in progress but
//! never for a server that is down, has its time limit, and runs a watched server (one that
//! may write in the workspace, or runs unconfined) only for its duration (thawed for the
//! call, stopped again after it).

use std::time::Duration;

use crate::mcp::rpc::{Peer, RpcError};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::Server;
use crate::protocol::McpStatus;

/// Why a call did not give a result.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The call was not sent.
    #[error("MCP server `{server}` is not running ({why}); its tools are unavailable. The call was not sent.")]
    NotRunning { server: String, why: String },
    #[error("MCP server `{server}` refused the call: {message}")]
    Refused { server: String, message: String },
    /// Sent, but no answer: whether it took effect is unknown.
    #[error("MCP server `{server}` stopped while running `{tool}` ({why}); it is restarted. Whether the call took effect is unknown.")]
    Lost {
        server: String,
        tool: String,
        why: String,
    },
    #[error("MCP server `{server}` did not answer `{tool}` within {} s; the call was cancelled. Whether it took effect is unknown.", .limit.as_secs())]
    Timeout {
        server: String,
        tool: String,
        limit: Duration,
    },
    #[error("the call to `{tool}` was cancelled")]
    Cancelled { tool: String, sent: bool },
    /// A watched server ran while it was left stopped: it was killed, the call not sent.
    #[error("MCP server `{server}` ran between its calls although it was stopped ({why}); it was killed and the call was not sent. What it changed meanwhile cannot be told apart from other changes and was not undone.")]
    RanWhileStopped { server: String, why: String },
}

impl CallError {
    /// Whether the request reached the server.
    pub fn was_sent(&self) -> bool {
        !matches!(
            self,
            CallError::NotRunning { .. }
                | CallError::Cancelled { sent: false, .. }
                | CallError::RanWhileStopped { .. }
        )
    }
}

impl Server {
    /// Calls a tool; waits (bounded) for a restart in progress, never for a server that is down.
    pub async fn call(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
        cancel: &CancellationToken,
    ) -> Result<Value, CallError> {
        let peer = self.ready_peer(cancel).await?;
        let limit = self.def.tool_timeout;
        // A watched server runs only for the duration of a call. Checked again right before
        // it is continued: it may have been woken while this call's watch began.
        let watched = self.jail().filter(|j| j.watched());
        if let Some(jail) = &watched {
            if let Some(why) = jail.woken().await {
                self.fail(format!(
                    "it ran between its calls although it was stopped ({why})"
                ));
                return Err(CallError::RanWhileStopped {
                    server: self.def.name.clone(),
                    why,
                });
            }
            jail.thaw();
        }
        let outcome = tokio::select! {
            r = tokio::time::timeout(limit, peer.call_tool(tool, arguments)) => Some(r),
            () = cancel.cancelled() => None,
        };
        if let Some(jail) = &watched {
            // One that cannot be stopped is killed (and restarted): either way it runs no more.
            let _ = jail.freeze().await;
        }
        let Some(outcome) = outcome else {
            return Err(CallError::Cancelled {
                tool: tool.into(),
                sent: true,
            });
        };
        let server = self.def.name.clone();
        match outcome {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(RpcError::Refused { message, .. })) => Err(CallError::Refused {
                server,
                message: crate::mcp::result::redact(&message),
            }),
            Ok(Err(e)) => Err(CallError::Lost {
                server,
                tool: tool.into(),
                why: crate::mcp::result::redact(&e.to_string()),
            }),
            Err(_) => Err(CallError::Timeout {
                server,
                tool: tool.into(),
                limit,
            }),
        }
    }

    /// Waits (bounded) until it is ready, as a call does; says why not.
    pub async fn ready(&self, cancel: &CancellationToken) -> Result<(), CallError> {
        self.ready_peer(cancel).await.map(|_| ())
    }

    async fn ready_peer(&self, cancel: &CancellationToken) -> Result<Peer, CallError> {
        let mut rx = self.state.subscribe();
        // A restart pauses at most 16 s, then has its start-up time.
        let limit = self.def.startup_timeout + Duration::from_secs(20);
        let waited = tokio::select! {
            r = tokio::time::timeout(limit, rx.wait_for(|s| !matches!(s.status, McpStatus::Starting | McpStatus::Restarting))) => r,
            () = cancel.cancelled() => return Err(CallError::Cancelled { tool: self.def.name.clone(), sent: false }),
        };
        let state = match waited {
            Ok(Ok(state)) => state.clone(),
            _ => self.state(),
        };
        match (state.status, state.peer) {
            (McpStatus::Ready, Some(peer)) if !self.cancel.is_cancelled() => Ok(peer),
            (status, _) => Err(CallError::NotRunning {
                server: self.def.name.clone(),
                why: match (status, state.error) {
                    (_, Some(e)) => e,
                    (McpStatus::Stopped, None) => "it was stopped: its definition changed, it was removed, or Mandate is closing".into(),
                    (McpStatus::Starting | McpStatus::Restarting, None) => "it is still starting".into(),
                    (other, None) => format!("{other:?}"),
                },
            }),
        }
    }
}
