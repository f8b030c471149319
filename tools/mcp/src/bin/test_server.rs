//! `dsh-mcp-test-server`: see `dsh_tool_mcp::test_server`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    dsh_tool_mcp::test_server::main()
}
