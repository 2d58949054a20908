//! `mandate run`: one task, headless. Where the GUI would ask a person, `--approve` decides;
//! the gate, scope and stale checks apply exactly as in the GUI.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::{ApproveArg, GrantArg, RunArgs, EXIT_FAILED, EXIT_OK, EXIT_USAGE};
use crate::agent::{
    run_task, AgentEnv, EventSink, Governance, Interaction, TaskEnd, TaskHandle, TaskStore,
};
use crate::llm::{provider_for, ProviderConfig, RetryPolicy};
use crate::protocol::{
    ApprovalDecision, ApprovalDetail, ApprovalPolicy, ApprovalRequest, Budget, Event,
};
use crate::secrets::KeyringStore;
use crate::settings::AppDirs;
use crate::workspace::Workspace;

/// `--approve` in place of a person.
struct FlagInteraction {
    approve: ApproveArg,
    /// What approved commands may do beyond their confinement (`--grant`).
    grant: crate::protocol::CommandGrants,
    sink: Arc<dyn EventSink>,
}

#[async_trait]
impl Interaction for FlagInteraction {
    async fn approve(
        &self,
        task_id: &str,
        request: ApprovalRequest,
        _: &CancellationToken,
    ) -> ApprovalDecision {
        let intents = matches!(
            request.detail,
            ApprovalDetail::ScopeExpansion { .. } | ApprovalDetail::NewIntent { .. }
        );
        // Hooks are confirmed with --trust-hooks, never by --approve.
        let hooks = matches!(request.detail, ApprovalDetail::UserHooks { .. });
        self.sink.emit(Event::ApprovalRequested {
            task_id: task_id.into(),
            request,
        });
        if hooks {
            return ApprovalDecision::Reject {
                reason: "hooks are confirmed with --trust-hooks".into(),
            };
        }
        if intents {
            // The agent's mandate is widened by a person, never by a flag.
            return ApprovalDecision::Reject {
                reason: "an unattended run cannot change intents; ask the user to change the intents file (or run in the window, where they can approve it)".into(),
            };
        }
        match self.approve {
            // `--approve allow` approves the action, not more rights for it: a command still
            // gets no network and no `.git/` unless `--grant` says so.
            ApproveArg::Allow => ApprovalDecision::Approve {
                rejected_hunks: Vec::new(),
                edited_content: None,
                grant: Some(self.grant),
            },
            ApproveArg::Deny => ApprovalDecision::Reject {
                reason: "this unattended run was started with --approve deny, so every action that needs approval is refused".into(),
            },
        }
    }

    async fn ask(
        &self,
        _: &str,
        _: &str,
        _: &str,
        _: &[String],
        _: &CancellationToken,
    ) -> Option<String> {
        None
    }

    fn approver(&self) -> crate::protocol::Approver {
        crate::protocol::Approver::Headless
    }
}

pub(super) fn usage(message: &str) -> i32 {
    eprintln!("mandate run: {message}");
    EXIT_USAGE
}

pub async fn run_headless(root: &Path, args: RunArgs) -> i32 {
    match run_checked(root, args).await {
        Ok(code) | Err(code) => code,
    }
}

/// The run itself; `Err` is the exit code of a usage error, already printed.
async fn run_checked(root: &Path, args: RunArgs) -> Result<i32, i32> {
    let prompt = checked_prompt(&args)?;
    let dirs = AppDirs::from_env();
    let (settings, _) = crate::settings::Settings::load(&dirs);
    let target = super::run_provider::target(&args, &settings)?;
    let workspace =
        Workspace::new(root).map_err(|e| usage(&format!("cannot open {}: {e}", root.display())))?;
    let api_key = super::run_provider::api_key(&args, &target, &settings).await?;
    if let Some(key) = &api_key {
        crate::secrets::remember(key);
    }
    let gov = Arc::new(Governance::new(workspace, &dirs));
    for done in &gov.recovered {
        eprintln!("mandate: recovered: {done}.");
    }
    if args.trust_hooks {
        trust_hooks(&gov).await?;
    }
    let store = Arc::new(TaskStore::new(&dirs.data, gov.root()));
    let sink: Arc<dyn EventSink> = Arc::new(super::run_log::CliSink::new(args.json));
    let mcp = crate::mcp::McpHub::new(
        gov.root(),
        &dirs,
        Arc::new(KeyringStore),
        sink.clone(),
        args.trust_mcp.iter().cloned().collect(),
    );
    let tools = mcp_tools(&mcp, &args.trust_mcp, sink.as_ref()).await;
    let provider = provider_for(ProviderConfig {
        kind: target.kind,
        base_url: target.base_url.clone(),
        model: target.model.clone(),
        api_key,
        retry: RetryPolicy::from_env(),
    });
    gov.code_index
        .use_embeddings(crate::settings::embeddings_endpoint(&settings.code_search));
    let context = context_config(&args, &settings.context, &provider.model_id(), &dirs);
    let profiles = super::run_provider::CliProfiles(settings.clone());
    let env = agent_env(
        &args,
        gov,
        provider,
        sink.clone(),
        store,
        tools,
        context,
        profiles,
    );
    let (task, text) = task_to_run(&args, &env, prompt)?;
    if let (Some(profile), None) = (&target.profile, task.summary().profile) {
        task.set_profile(Some(profile.id.clone()));
    }
    attach_images(&args, &env, &task, text.is_some()).await?;
    sink.emit(Event::TaskUpdated {
        task: task.summary(),
    });
    let cancel_task = task.clone();
    let interrupted = tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            cancel_task.cancel();
        }
    });
    let gov = env.gov.clone();
    let end = run_task(env, task.clone(), text).await;
    // Nothing the run started outlives it (a paused run keeps none either).
    gov.processes
        .end_all(crate::protocol::ProcessStopper::Mandate)
        .await;
    interrupted.abort();
    mcp.shutdown();
    if !args.json {
        report_end(&end, &task);
    }
    Ok(match end {
        TaskEnd::Completed(_) => EXIT_OK,
        _ => EXIT_FAILED,
    })
}

/// `--image`: each file read and re-encoded, and the model checked to read images.
async fn attach_images(
    args: &RunArgs,
    env: &AgentEnv,
    task: &TaskHandle,
    has_request: bool,
) -> Result<(), i32> {
    if args.image.is_empty() {
        return Ok(());
    }
    if !has_request {
        return Err(usage("--image goes with a request"));
    }
    if args.image.len() > crate::images::MAX_PER_MESSAGE {
        return Err(usage(&crate::images::ImageError::TooMany.to_string()));
    }
    let mut images = Vec::new();
    for path in &args.image {
        images.push(crate::images::from_file(path).map_err(|e| usage(&e.to_string()))?);
    }
    match crate::images::verdict_for_task(env.provider.as_ref(), &env.gov, task).await {
        crate::images::Verdict::Accepted => {}
        crate::images::Verdict::Unknown(note) => eprintln!("mandate: {note}"),
        crate::images::Verdict::Refused(why) => return Err(usage(&why)),
    }
    task.attach_images(images);
    Ok(())
}

/// The request, after the arguments that can be wrong without opening anything are checked.
fn checked_prompt(args: &RunArgs) -> Result<String, i32> {
    if let Err(e) = context_config_check(args) {
        return Err(usage(&e.to_string()));
    }
    if args.max_cost.is_some_and(|c| !c.is_finite() || c <= 0.0) {
        return Err(usage("--max-cost must be a positive number of US dollars"));
    }
    if args.max_turns == Some(0) {
        return Err(usage("--max-turns must be at least 1"));
    }
    if args.max_tokens == Some(0) {
        return Err(usage("--max-tokens must be at least 1"));
    }
    if !args.grant.is_empty() && args.approve != ApproveArg::Allow {
        return Err(usage(
            "--grant widens what approved commands may do, so it needs --approve allow",
        ));
    }
    let prompt = args.prompt.join(" ");
    if prompt.trim().is_empty() && args.resume.is_none() {
        return Err(usage(
            "give the request as the last argument (or --resume TASK_ID)",
        ));
    }
    Ok(prompt)
}

/// `--trust-hooks`: the workspace's hooks as they are now are confirmed for this run.
async fn trust_hooks(gov: &Arc<Governance>) -> Result<(), i32> {
    let hooks = gov.clone();
    match tokio::task::spawn_blocking(move || hooks.user_hooks.confirm_current()).await {
        Ok(Ok(0)) => Ok(()),
        Ok(Ok(n)) => {
            eprintln!(
                "mandate: running the workspace's {n} hooks as they are now (--trust-hooks)."
            );
            Ok(())
        }
        Ok(Err(e)) => Err(usage(&format!("--trust-hooks: the hooks do not load: {e}"))),
        Err(e) => Err(usage(&format!("--trust-hooks: {e}"))),
    }
}

/// What the agent runs with, headless: `--approve` answers for the person.
#[allow(clippy::too_many_arguments)]
fn agent_env(
    args: &RunArgs,
    gov: Arc<Governance>,
    provider: Box<dyn crate::llm::Provider>,
    sink: Arc<dyn EventSink>,
    store: Arc<TaskStore>,
    tools: Vec<Box<dyn crate::tools::Tool>>,
    context: crate::context::ContextConfig,
    profiles: super::run_provider::CliProfiles,
) -> Arc<AgentEnv> {
    Arc::new(AgentEnv {
        gov,
        provider: Arc::from(provider),
        sink: sink.clone(),
        interaction: Arc::new(FlagInteraction {
            approve: args.approve,
            grant: crate::protocol::CommandGrants {
                network: args.grant.contains(&GrantArg::Network),
                write_git: args.grant.contains(&GrantArg::Git),
            },
            sink,
        }),
        store,
        tasks: Default::default(),
        tools: Arc::new(tools),
        approval: ApprovalPolicy {
            ask_before_writes: true,
            ask_before_safe_commands: args.ask_safe_commands,
            switch_modes_without_asking: false,
        },
        custom_instructions: String::new(),
        max_turns: args.max_turns,
        interactive: false,
        render_interval: Duration::from_millis(100),
        context,
        budget: Budget {
            max_cost_usd: args.max_cost,
            max_tokens: args.max_tokens,
        },
        profiles: Some(Arc::new(profiles)),
    })
}

/// The flags' figures checked as Settings checks them.
fn context_config_check(args: &RunArgs) -> Result<(), crate::settings::SettingsError> {
    if let Some(p) = args.condense_threshold.filter(|p| !(10..=95).contains(p)) {
        return Err(crate::settings::SettingsError::Invalid(format!(
            "--condense-threshold is 10 to 95 (percent of the usable input), not {p}"
        )));
    }
    let probe = crate::protocol::ContextSettings {
        threshold_percent: 80,
        models: vec![crate::protocol::ModelOverride {
            model: "--context-window, --max-output, --thinking-budget".into(),
            context_window: args.context_window,
            max_output: args.max_output,
            thinking_budget: args.thinking_budget,
            prices: None,
        }],
    };
    crate::settings::check_context(probe).map(|_| ())
}

/// Settings' context figures for this model, with the flags over them.
fn context_config(
    args: &RunArgs,
    settings: &crate::protocol::ContextSettings,
    model_id: &str,
    dirs: &AppDirs,
) -> crate::context::ContextConfig {
    let mut c = crate::context::ContextConfig::from_settings(settings, model_id, &dirs.data);
    if let Some(p) = args.condense_threshold {
        c.threshold_percent = p;
    }
    let o = &mut c.model_override;
    o.context_window = args.context_window.or(o.context_window);
    o.max_output = args.max_output.or(o.max_output);
    o.thinking_budget = args.thinking_budget.or(o.thinking_budget);
    c.reasoning_effort = args.reasoning_effort.map(|e| {
        match e {
            super::EffortArg::Low => "low",
            super::EffortArg::Medium => "medium",
            super::EffortArg::High => "high",
        }
        .to_string()
    });
    c
}

/// The task `--resume` names (with the request as a new message, if one is given), or a new one.
fn task_to_run(
    args: &RunArgs,
    env: &AgentEnv,
    prompt: String,
) -> Result<(Arc<TaskHandle>, Option<String>), i32> {
    let store = &env.store;
    let modes = crate::modes::load_modes(env.gov.root(), env.gov.config_dir());
    let mut problems = modes.problems.clone();
    let commands =
        crate::modes::commands::load_commands(env.gov.root(), env.gov.config_dir(), &mut problems);
    for problem in &problems {
        eprintln!("note: {problem}");
    }
    // A prompt that starts with `/NAME` runs the person's command (in its mode, unless
    // --mode says otherwise).
    let (_, command) = crate::modes::commands::expand_message(&prompt, &commands);
    let wanted = args
        .mode
        .clone()
        .or_else(|| command.and_then(|c| c.mode.clone()));
    let mode = match wanted.as_deref() {
        Some(slug) => Some(modes.get(slug).ok_or_else(|| {
            let known: Vec<&str> = modes.modes.iter().map(|m| m.slug.as_str()).collect();
            usage(&format!(
                "there is no mode `{slug}` (modes here: {})",
                known.join(", ")
            ))
        })?),
        None => None,
    };
    let (task, text) = match &args.resume {
        Some(id) => match store.load(id) {
            Ok(record) => (
                TaskHandle::new(record, store.clone()),
                (!prompt.trim().is_empty()).then_some(prompt),
            ),
            Err(e) => return Err(usage(&e.to_string())),
        },
        None => (
            TaskHandle::create(
                store.clone(),
                &env.gov.root().display().to_string(),
                &prompt,
                &env.provider.model_id(),
            ),
            Some(prompt),
        ),
    };
    // A resumed task keeps its mode unless one is named; a new one starts in Code.
    let mode = match mode {
        Some(mode) => Some(mode),
        None if args.resume.is_none() => modes.get(crate::modes::DEFAULT_MODE),
        None => None,
    };
    if let Some(mode) = mode {
        task.set_mode(mode);
    }
    Ok((task, text))
}

/// The end of the run for a person reading the terminal.
fn report_end(end: &TaskEnd, task: &TaskHandle) {
    match end {
        TaskEnd::Completed(result) => {
            // Not a panic when the reader is gone (`mandate run … | head`).
            let _ = std::io::Write::write_fmt(
                &mut std::io::stdout(),
                format_args!("\nCompleted:\n{result}\n"),
            );
        }
        TaskEnd::Failed(m) => eprintln!("\nFailed: {m}"),
        TaskEnd::Cancelled => eprintln!("\nStopped."),
        TaskEnd::Paused(m) => eprintln!("\nPaused: {m}"),
        TaskEnd::Idle | TaskEnd::AlreadyRunning => {}
    }
    eprintln!("task {}", task.id);
}

/// Mandate's tools and those of the MCP servers this run may start; what the person should know
/// about the others is printed as notes. `--trust-mcp` servers show their command first.
async fn mcp_tools(
    mcp: &crate::mcp::McpHub,
    trusted: &[String],
    sink: &dyn EventSink,
) -> Vec<Box<dyn crate::tools::Tool>> {
    let overview = mcp.overview(false).await;
    for name in trusted {
        match overview.servers.iter().find(|s| &s.name == name) {
            Some(s) if s.source == crate::protocol::McpSource::Project => {
                eprintln!("mandate: --trust-mcp {name}: starting `{}`", s.target)
            }
            Some(_) => {}
            None => eprintln!(
                "mandate: --trust-mcp {name}: there is no such MCP server in {}",
                crate::mcp::PROJECT_FILE
            ),
        }
    }
    let run = mcp.prepare_run().await;
    for note in run.notes {
        sink.emit(Event::Notice {
            level: crate::protocol::NoticeLevel::Warning,
            message: note,
        });
    }
    let mut tools = crate::tools::registry();
    tools.extend(run.tools);
    tools
}
