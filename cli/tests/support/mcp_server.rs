//! `dsh-test-mcp-server`: the MCP server of the integration tests, which is
//! `dsh_tool_mcp::test_server`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    dsh_tool_mcp::test_server::main()
}
