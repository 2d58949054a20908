//! A real MCP server for the tests, on the official SDK's server side: over stdio (default) or
//! streamable HTTP on 127.0.0.1 (`--http`, prints its URL on the first line of stdout).
//!
//! Tools: `lookup` (read-only), `env_report` (read-only: the names of the variables it was given,
//! and `MCP_TEST_TOKEN` if set), `write_marker` (mutating, no annotations: writes a file — the
//! proof that nothing happens without approval), `crash` (read-only: exits at once),
//! `weird name!` (read-only, a name to sanitize) and `broken_schema` (its input schema is not an
//! object schema). `--hang` never answers `initialize`; `--exit-at-start` exits before it.
//! Each start appends `start PID` to `$MCP_TEST_STARTS` when that is set.

use std::sync::Arc;

use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::ServiceExt;
use serde_json::{json, Value};

#[derive(Clone, Default)]
struct TestServer;

fn tool(wire: Value) -> Tool {
    serde_json::from_value(wire).expect("a valid tool")
}

fn tools() -> Vec<Tool> {
    let object = |props: Value, required: Value| json!({"type": "object", "properties": props, "required": required});
    vec![
        tool(json!({"name": "lookup", "description": "Looks a key up.",
            "inputSchema": object(json!({"key": {"type": "string"}}), json!(["key"])),
            "annotations": {"readOnlyHint": true}})),
        tool(
            json!({"name": "env_report", "description": "Names the environment variables it sees.",
            "inputSchema": object(json!({}), json!([])), "annotations": {"readOnlyHint": true}}),
        ),
        tool(
            json!({"name": "write_marker", "description": "Writes TEXT to the file PATH.",
            "inputSchema": object(json!({"path": {"type": "string"}, "text": {"type": "string"}}), json!(["path", "text"]))}),
        ),
        tool(json!({"name": "crash", "description": "Exits at once.",
            "inputSchema": object(json!({}), json!([])), "annotations": {"readOnlyHint": true}})),
        tool(
            json!({"name": "weird name!", "description": "A tool with an odd name.",
            "inputSchema": object(json!({}), json!([])), "annotations": {"readOnlyHint": true}}),
        ),
        tool(
            json!({"name": "broken_schema", "description": "Its schema is not an object schema.",
            "inputSchema": {"type": "string"}}),
        ),
    ]
}

fn text(t: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(t)])
}

fn arg<'a>(args: &'a Option<serde_json::Map<String, Value>>, key: &str) -> &'a str {
    args.as_ref()
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
        .unwrap_or("")
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_instructions("A server for Mandate's tests.")
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = &request.arguments;
        let result = match request.name.as_ref() {
            "lookup" => text(format!("the value of {}", arg(args, "key"))),
            "env_report" => {
                let mut names: Vec<String> = std::env::vars().map(|(k, _)| k).collect();
                names.sort();
                let token = std::env::var("MCP_TEST_TOKEN").unwrap_or_default();
                text(format!("variables: {}\ntoken: {token}", names.join(" ")))
            }
            "write_marker" => {
                let path = arg(args, "path");
                match std::fs::write(path, arg(args, "text")) {
                    Ok(()) => text(format!("wrote {path}")),
                    Err(e) => CallToolResult::error(vec![ContentBlock::text(format!(
                        "cannot write {path}: {e}"
                    ))]),
                }
            }
            "crash" => {
                eprintln!("crashing on purpose");
                std::process::exit(1);
            }
            "weird name!" => text("odd but fine"),
            other => return Err(ErrorData::invalid_params(format!("no tool {other}"), None)),
        };
        Ok(result.into())
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Ok(path) = std::env::var("MCP_TEST_STARTS") {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        writeln!(f, "start {}", std::process::id())?;
    }
    if args.iter().any(|a| a == "--exit-at-start") {
        eprintln!("this server refuses to start");
        std::process::exit(3);
    }
    if args.iter().any(|a| a == "--hang") {
        // Reads what it is sent and never answers.
        let mut sink = Vec::new();
        use tokio::io::AsyncReadExt;
        let _ = tokio::io::stdin().read_to_end(&mut sink).await;
        std::future::pending::<()>().await;
    }
    if args.iter().any(|a| a == "--http") {
        return serve_http().await;
    }
    let service = TestServer.serve(rmcp::transport::stdio()).await?;
    service.waiting().await?;
    Ok(())
}

async fn serve_http() -> anyhow::Result<()> {
    use hyper_util::rt::{TokioExecutor, TokioIo};
    use hyper_util::server::conn::auto::Builder;
    use hyper_util::service::TowerToHyperService;
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::StreamableHttpService;

    let service = TowerToHyperService::new(StreamableHttpService::new(
        || Ok(TestServer),
        Arc::new(LocalSessionManager::default()),
        Default::default(),
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    println!("http://{}/mcp", listener.local_addr()?);
    loop {
        let (stream, _) = listener.accept().await?;
        let service = service.clone();
        tokio::spawn(async move {
            let _ = Builder::new(TokioExecutor::default())
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
