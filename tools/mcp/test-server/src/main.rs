//! `dsh-mcp-test-server`: see the crate's documentation.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    dsh_mcp_test_server::main()
}
