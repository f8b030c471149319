"""An OAuth authorization server and an MCP server it protects, on
127.0.0.1, for dsh's tests of `dsh mcp login` (built on the official
Python SDK, `mcp` on PyPI, after its `examples/servers/simple-auth`).

Two origins, as in a real deployment: the authorization server (dynamic
client registration, PKCE, refresh tokens) and the MCP server (protected
resource metadata pointing at it, bearer tokens required, one tool,
`whoami`). The authorization server approves at once: its `/authorize`
redirects to the client's callback with a code, so a test drives the
"browser" step with one GET that follows redirects.

Usage: python3 server.py [--access-seconds N]
Prints one JSON line, {"issuer": ..., "url": ...}, once both listen, and
serves until killed.
"""

import argparse
import asyncio
import json
import secrets
import socket
import sys
import time

import uvicorn
from pydantic import AnyHttpUrl
from starlette.applications import Starlette

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    TokenVerifier,
    construct_redirect_uri,
)
from mcp.server.auth.routes import create_auth_routes
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver.server import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

SCOPE = "user"
SUBJECT = "demo_user"


class ApprovingProvider(OAuthAuthorizationServerProvider):
    """Registers any client, approves every authorization at once, and
    issues access tokens that live `access_seconds`, with refresh tokens."""

    def __init__(self, access_seconds: int):
        self.access_seconds = access_seconds
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        # How many access tokens were issued: the tool says which one
        # its caller holds, so a test sees a refresh.
        self.issued = 0

    async def get_client(self, client_id):
        return self.clients.get(client_id)

    async def register_client(self, client_info):
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client, params: AuthorizationParams) -> str:
        code = AuthorizationCode(
            code=f"code_{secrets.token_hex(16)}",
            client_id=client.client_id,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            expires_at=time.time() + 300,
            scopes=params.scopes or [SCOPE],
            code_challenge=params.code_challenge,
            resource=params.resource,
            subject=SUBJECT,
        )
        self.codes[code.code] = code
        return construct_redirect_uri(str(params.redirect_uri), code=code.code, state=params.state)

    async def load_authorization_code(self, client, authorization_code):
        return self.codes.get(authorization_code)

    def _tokens(self, client_id, scopes, resource) -> OAuthToken:
        self.issued += 1
        token = f"access_{self.issued}_{secrets.token_hex(16)}"
        self.access[token] = AccessToken(
            token=token,
            client_id=client_id,
            scopes=scopes,
            expires_at=int(time.time()) + self.access_seconds,
            resource=resource,
            subject=SUBJECT,
            claims={"n": self.issued},
        )
        refresh = f"refresh_{secrets.token_hex(16)}"
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource, subject=SUBJECT
        )
        return OAuthToken(
            access_token=token,
            expires_in=self.access_seconds,
            scope=" ".join(scopes),
            refresh_token=refresh,
        )

    async def exchange_authorization_code(self, client, authorization_code) -> OAuthToken:
        del self.codes[authorization_code.code]
        return self._tokens(client.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client, refresh_token):
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(self, client, refresh_token, scopes) -> OAuthToken:
        del self.refresh[refresh_token.token]
        return self._tokens(client.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token):
        found = self.access.get(token)
        if found is None or (found.expires_at and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token):
        self.access.pop(getattr(token, "token", ""), None)
        self.refresh.pop(getattr(token, "token", ""), None)


class Verifier(TokenVerifier):
    """The MCP server's check of a bearer token: the provider's own
    table (one process), as introspection would answer."""

    def __init__(self, provider: ApprovingProvider):
        self.provider = provider

    async def verify_token(self, token):
        return await self.provider.load_access_token(token)


def listening() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    return sock


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--access-seconds", type=int, default=3600)
    args = parser.parse_args()

    auth_sock, mcp_sock = listening(), listening()
    issuer = f"http://127.0.0.1:{auth_sock.getsockname()[1]}"
    url = f"http://127.0.0.1:{mcp_sock.getsockname()[1]}/mcp"

    provider = ApprovingProvider(args.access_seconds)
    auth_app = Starlette(
        routes=create_auth_routes(
            provider=provider,
            issuer_url=AnyHttpUrl(issuer),
            client_registration_options=ClientRegistrationOptions(
                enabled=True, valid_scopes=[SCOPE], default_scopes=[SCOPE]
            ),
        )
    )

    server = MCPServer(
        name="protected",
        instructions="A server that needs an OAuth login.",
        token_verifier=Verifier(provider),
        auth=AuthSettings(
            issuer_url=AnyHttpUrl(issuer),
            resource_server_url=AnyHttpUrl(url),
            required_scopes=[SCOPE],
            # The verifier reads the provider's own table.
            validate_token_resource=False,
        ),
    )

    @server.tool()
    async def whoami() -> str:
        """Says who the caller is logged in as, and which access token it holds."""
        from mcp.server.auth.middleware.auth_context import get_access_token

        token = get_access_token()
        number = (token.claims or {}).get("n") if token else None
        return f"{SUBJECT}, access token {number}"

    mcp_app = server.streamable_http_app(host="127.0.0.1")

    def serve(app, sock):
        config = uvicorn.Config(app, log_level="warning", lifespan="on")
        return uvicorn.Server(config).serve(sockets=[sock])

    tasks = [asyncio.create_task(serve(auth_app, auth_sock)), asyncio.create_task(serve(mcp_app, mcp_sock))]
    # The sockets listen already: a client that connects now waits for
    # uvicorn to accept.
    print(json.dumps({"issuer": issuer, "url": url}), flush=True)
    await asyncio.gather(*tasks)


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
