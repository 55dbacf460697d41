"""The MCP server: Engram's operations as tools for agents (the official `mcp` SDK).

Every tool is the REST API's own operation, called in process: the tool's arguments become
the query or JSON body of that route, the route's view runs with the caller's bearer token
(authentication, scope, ceiling, read-only tokens, throttling, validation, tracking), and
its JSON answer is the tool's structured result; a 4xx answer is a tool error carrying the
API's message and field errors. So no rule is written twice: MCP is another transport for
the same views (docs/mcp.md).

Transports: streamable HTTP at /mcp, mounted beside Django by config/asgi.py (a bearer
token of the API authenticates; without one, 401 with the WWW-Authenticate header the
specification asks for), and stdio (`manage.py mcp`, the token given once at start).
"""

from __future__ import annotations

import io
import json
import sys
from contextvars import ContextVar
from datetime import datetime
from typing import Annotated, Any, Literal
from urllib.parse import parse_qs, urlencode, urlparse

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.handlers.wsgi import WSGIRequest
from django.db import close_old_connections
from django.urls import Resolver404, resolve
from jsonschema import Draft202012Validator
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field
from rest_framework import exceptions

from memories.auth import token_for_secret
from memories.models import ApiToken

API = "/api/v1"
INSTRUCTIONS = (
    "Engram is your long-term memory. Call `recall` with the user's question (or the topic "
    "at hand) before answering, and `remember` each fact, preference, decision or event "
    "worth keeping, one memory per fact, in plain sentences. Say which conversation a "
    "memory comes from with `session_id`. When a fact changes, `remember` the new one with "
    "`supersedes` naming the old memory's id instead of forgetting it. Memories you never "
    "use fade and are eventually forgotten; `reinforce_due` lists those worth revisiting."
)

# The stdio transport's token (manage.py mcp) and its access: no HTTP header carries one.
_stdio_secret: ContextVar[str | None] = ContextVar("engram_mcp_stdio_secret", default=None)
_stdio_writes: ContextVar[bool] = ContextVar("engram_mcp_stdio_writes", default=False)


# --- Calling the API in process ------------------------------------------------------------------


def _host() -> str:
    """A host name Django accepts (ALLOWED_HOSTS), for the links the API builds."""
    for host in settings.ALLOWED_HOSTS:
        if host == "*":
            return "localhost"
        return host.lstrip(".") or "localhost"
    return "localhost"


def api_call(
    secret: str,
    method: str,
    path: str,
    *,
    query: dict[str, Any] | None = None,
    body: Any = None,
) -> tuple[int, Any]:
    """(status, decoded JSON) of an API route called with the bearer `secret`, through the
    route's own view, as an HTTP request would reach it."""
    payload = b"" if body is None else json.dumps(body).encode()
    environ = {
        "REQUEST_METHOD": method,
        "SCRIPT_NAME": "",
        "PATH_INFO": path,
        "QUERY_STRING": urlencode(
            {k: v for k, v in (query or {}).items() if v is not None}, doseq=True
        ),
        "SERVER_NAME": _host(),
        "SERVER_PORT": "443",
        "HTTP_HOST": _host(),
        "REMOTE_ADDR": "127.0.0.1",
        "HTTP_AUTHORIZATION": f"Bearer {secret}",
        "HTTP_ACCEPT": "application/json",
        "HTTP_X_ENGRAM_CLIENT": "mcp",
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(payload)),
        "wsgi.input": io.BytesIO(payload),
        "wsgi.errors": sys.stderr,
        "wsgi.url_scheme": "https",
        "wsgi.version": (1, 0),
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    request = WSGIRequest(environ)
    try:
        match = resolve(path)
    except Resolver404:
        return 404, {"error": {"status": 404, "code": "not_found", "message": "Not found."}}
    response = match.func(request, *match.args, **match.kwargs)
    if hasattr(response, "render"):
        response.render()
    content = response.content if not getattr(response, "streaming", False) else b""
    return response.status_code, json.loads(content) if content else None


def _error_text(status: int, data: Any) -> str:
    """The API's error as a model reads it: the message, then each field's problems."""
    error = data.get("error") if isinstance(data, dict) else None
    if not isinstance(error, dict):
        return f"HTTP {status}"
    lines = [f"{error.get('message', 'Error')} (HTTP {status}, {error.get('code', 'error')})"]
    for field, problems in (error.get("fields") or {}).items():
        lines.append(f"- {field}: {json.dumps(problems, ensure_ascii=False)}")
    if "retry_after" in error:
        lines.append(f"Retry after {error['retry_after']} seconds.")
    return "\n".join(lines)


def _secret() -> str:
    """The caller's API token: the bearer token of this HTTP request, or stdio's."""
    access = get_access_token()
    secret = access.token if access is not None else _stdio_secret.get()
    if not secret:
        raise ToolError("Authentication required: no API token.")
    return secret


def _caller_writes() -> bool:
    """Whether the caller's token may write (a read-only token's recall does not track)."""
    access = get_access_token()
    return "write" in access.scopes if access is not None else _stdio_writes.get()


def _dispatch(secret: str, method: str, path: str, query, body) -> tuple[int, Any]:
    close_old_connections()
    try:
        return api_call(secret, method, path, query=query, body=body)
    finally:
        close_old_connections()


async def call(
    method: str, path: str, *, query: dict[str, Any] | None = None, body: Any = None
) -> Any:
    """The API's answer to the caller's request, or a ToolError with its message."""
    status, data = await sync_to_async(_dispatch, thread_sensitive=True)(
        _secret(), method, f"{API}{path}", query, body
    )
    if status >= 400:
        raise ToolError(_error_text(status, data))
    return data


def _body(**fields: Any) -> dict[str, Any]:
    """The arguments a caller gave (None means not given), as a JSON body."""
    return {name: value for name, value in fields.items() if value is not None}


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _cursor(page: dict[str, Any]) -> dict[str, Any]:
    """A list page with its next cursor instead of a URL (pass it back as `cursor`)."""
    following = page.get("next")
    cursor = parse_qs(urlparse(following).query).get("cursor", [None])[0] if following else None
    return {"results": page.get("results", []), "next_cursor": cursor}


# --- Authentication over HTTP -----------------------------------------------------------------


class ApiTokenVerifier:
    """MCP's TokenVerifier over the API's tokens (memories.auth.token_for_secret)."""

    async def verify_token(self, token: str) -> AccessToken | None:
        return await sync_to_async(_verify, thread_sensitive=True)(token)


def _verify(secret: str) -> AccessToken | None:
    close_old_connections()
    try:
        found = token_for_secret(secret)
    except exceptions.AuthenticationFailed:
        return None
    finally:
        close_old_connections()
    scopes = ["read", "write"] if found.access == ApiToken.Access.WRITE else ["read"]
    return AccessToken(token=secret, client_id=f"token-{found.pk}", scopes=scopes)


# --- The tools ------------------------------------------------------------------------------------

Id = Annotated[int, Field(ge=1, description="A memory's id (from remember, recall or list).")]
Namespace = Annotated[
    str | None,
    Field(
        description="Slug of one of your namespaces. Optional when your token covers a single "
        "namespace."
    ),
]
Classification = Literal["public", "internal", "confidential", "restricted"]
READ = ToolAnnotations(readOnlyHint=True, destructiveHint=False, openWorldHint=False)
WRITE = ToolAnnotations(readOnlyHint=False, destructiveHint=False, openWorldHint=False)


async def _namespace(namespace: str | None) -> str:
    """The namespace named, or the caller's only one."""
    if namespace:
        return namespace
    found = await call("GET", "/namespaces")
    items = found.get("results", []) if isinstance(found, dict) else found
    slugs = [item["slug"] for item in items]
    if len(slugs) == 1:
        return slugs[0]
    raise ToolError(
        "namespace: required (your token covers "
        + (f"{len(slugs)} namespaces: {', '.join(slugs[:20])})." if slugs else "no namespace).")
    )


class StrictToolServer(MCPServer):
    """Tool arguments held to each tool's input schema as JSON, before the SDK's own
    validation (pydantic, which would take true or "1" for an id and drop names it does
    not know): a wrong type or an unknown argument is a tool error naming it, and nothing
    runs. The listed schemas say so too (additionalProperties: false)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._validators: dict[str, Draft202012Validator] = {}

    def seal(self) -> None:
        """Close every registered tool's schema to arguments it does not declare."""
        for tool in self._tool_manager.list_tools():
            tool.parameters["additionalProperties"] = False
            self._validators[tool.name] = Draft202012Validator(tool.parameters)

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        validator = self._validators.get(name)
        if validator is not None:
            errors = sorted(
                validator.iter_errors(arguments or {}), key=lambda e: list(e.absolute_path)
            )
            if errors:
                raise ToolError(
                    "Invalid arguments:\n"
                    + "\n".join(f"- {_argument_error(error)}" for error in errors[:20])
                )
        return await super().call_tool(name, arguments, context)


def _argument_error(error: Any) -> str:
    """One refusal of the input schema, naming the argument ("id: true is not an integer")."""
    path = ".".join(str(part) for part in error.absolute_path)
    if error.validator == "additionalProperties":
        unknown = sorted(set(error.instance) - set(error.schema.get("properties", {})))
        return "; ".join(f"{name}: unknown argument" for name in unknown)
    if error.validator in ("type", "anyOf"):
        expected = _expected_types(error.schema)
        shown = json.dumps(error.instance)[:60]
        return f"{path}: {shown} is not {expected}"
    return f"{path or 'arguments'}: {error.message}"


def _expected_types(schema: dict[str, Any]) -> str:
    types = [schema["type"]] if "type" in schema else []
    types += [option.get("type") for option in schema.get("anyOf", []) if option.get("type")]
    names = {
        "integer": "an integer",
        "number": "a number",
        "string": "a string",
        "boolean": "true or false",
        "array": "a list",
        "object": "an object",
        "null": "null",
    }
    return " or ".join(names.get(t, t) for t in types) or "of the expected type"


def build_server() -> MCPServer:
    """The server with every tool; its HTTP app needs the public URL (settings.MCP_URL)."""
    server = StrictToolServer(
        name="engram",
        title="Engram memory",
        instructions=INSTRUCTIONS,
        version="1",
        token_verifier=ApiTokenVerifier(),
        auth=AuthSettings(
            issuer_url=settings.MCP_ISSUER_URL,
            resource_server_url=settings.MCP_URL,
            validate_token_resource=False,  # the API's tokens are not bound to a resource
            required_scopes=["read"],
        ),
    )

    @server.tool(annotations=WRITE)
    async def remember(
        content: Annotated[
            str, Field(description="The memory: one fact, preference, decision or event.")
        ],
        namespace: Namespace = None,
        topic: Annotated[str | None, Field(description="A short topic (a deck).")] = None,
        keywords: Annotated[list[str] | None, Field(description="Words to find it by.")] = None,
        session_id: Annotated[
            str | None,
            Field(
                max_length=100,
                description="Your id of the conversation it comes from: turns of one "
                "session are linked, so recalling one brings its neighbours.",
            ),
        ] = None,
        position: Annotated[
            int | None, Field(ge=0, description="Its turn number within the session.")
        ] = None,
        supersedes: Annotated[
            list[int] | None,
            Field(description="Ids of memories this one replaces (a fact that changed)."),
        ] = None,
        classification: Annotated[
            Classification | None,
            Field(description="Sensitivity; default: your token's default level."),
        ] = None,
        cue: Annotated[
            str | None, Field(description="A question whose answer is this memory.")
        ] = None,
        created_at: Annotated[
            datetime | None, Field(description="When it happened (ISO 8601); default: now.")
        ] = None,
    ) -> dict[str, Any]:
        """Store a memory. An exact copy of a memory you already have is not stored twice:
        the existing one answers, with deduplicated true, and counts as a use."""
        body = _body(
            namespace=await _namespace(namespace),
            content=content,
            topic=topic,
            keywords=keywords,
            session_id=session_id,
            position=position,
            supersedes=supersedes,
            classification=classification,
            cue=cue,
            created_at=_iso(created_at),
        )
        return await call("POST", "/memories", body=body)

    @server.tool(annotations=READ)
    async def recall(
        query: Annotated[str, Field(description="What you want to remember, in words.")],
        namespaces: Annotated[
            list[str] | None, Field(description="Namespaces to search; default: all yours.")
        ] = None,
        limit: Annotated[int, Field(ge=1, le=100, description="How many results.")] = 10,
        topic: Annotated[str | None, Field(description="Only this topic.")] = None,
        tier: Annotated[
            Literal["short_term", "long_term", "core"] | None, Field(description="Only this tier.")
        ] = None,
        time_start: Annotated[
            datetime | None, Field(description="Only memories created at or after this.")
        ] = None,
        time_end: Annotated[
            datetime | None, Field(description="Only memories created before this.")
        ] = None,
        as_of: Annotated[
            datetime | None,
            Field(description="What was true at this instant (facts that changed)."),
        ] = None,
        session_id: Annotated[
            str | None, Field(description="The conversation asking (recorded on what it recalls).")
        ] = None,
        track: Annotated[
            bool | None,
            Field(
                description="Count this recall as a use of what it returns (default: yes, "
                "unless your token is read-only)."
            ),
        ] = None,
    ) -> dict[str, Any]:
        """Find the memories that answer a query, best first, each with why it was found.
        Recalled memories are strengthened (track), so recall what you use."""
        if track is None:
            track = _caller_writes()
        body = _body(
            query=query,
            namespaces=namespaces,
            limit=limit,
            topic=topic,
            tier=tier,
            time_start=_iso(time_start),
            time_end=_iso(time_end),
            as_of=_iso(as_of),
            session_id=session_id,
            track=track,
        )
        return await call("POST", "/recall", body=body)

    @server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=True))
    async def forget(
        id: Id,
        reason: Annotated[str, Field(description="Why it should be forgotten (required).")],
    ) -> dict[str, Any]:
        """Forget a memory (wrong, obsolete or unwanted). It leaves recall and lists; `restore`
        brings it back. For a fact that changed, prefer remember with supersedes."""
        return await call("POST", f"/memories/{id}/forget", body={"reason": reason})

    @server.tool(annotations=WRITE)
    async def restore(id: Id) -> dict[str, Any]:
        """Bring back a forgotten memory."""
        return await call("POST", f"/memories/{id}/restore", body={})

    @server.tool(annotations=WRITE)
    async def update(
        id: Id,
        content: Annotated[str | None, Field(description="The corrected text.")] = None,
        topic: Annotated[str | None, Field(description="A new topic.")] = None,
        keywords: Annotated[list[str] | None, Field(description="New keywords.")] = None,
        classification: Annotated[Classification | None, Field(description="A new level.")] = None,
        cue: Annotated[str | None, Field(description="A new review question.")] = None,
        valid_until: Annotated[
            datetime | None, Field(description="Since when it is no longer true.")
        ] = None,
    ) -> dict[str, Any]:
        """Correct a memory in place (its history keeps the old values)."""
        body = _body(
            content=content,
            topic=topic,
            keywords=keywords,
            classification=classification,
            cue=cue,
            valid_until=_iso(valid_until),
        )
        if not body:
            raise ToolError("Nothing to change: give at least one field.")
        return await call("PATCH", f"/memories/{id}", body=body)

    @server.tool(annotations=READ)
    async def get(id: Id) -> dict[str, Any]:
        """A memory with its links (associations) and its recent history."""
        memory = await call("GET", f"/memories/{id}")
        links = await call("GET", "/associations", query={"memory": id})
        history = await call("GET", f"/memories/{id}/history", query={"limit": 10})
        return {
            "memory": memory,
            "links": links.get("results", []),
            "history": history.get("results", []),
        }

    @server.tool(name="list", annotations=READ)
    async def list_memories(
        namespace: Namespace = None,
        topic: Annotated[str | None, Field(description="Only this topic.")] = None,
        tier: Annotated[Literal["short_term", "long_term", "core"] | None, Field()] = None,
        status: Annotated[
            Literal["active", "promoted", "archived", "forgotten"] | None,
            Field(description="Default: every status but forgotten."),
        ] = None,
        session_id: Annotated[str | None, Field(description="Only this conversation.")] = None,
        q: Annotated[str | None, Field(description="Only memories containing this text.")] = None,
        as_of: Annotated[datetime | None, Field(description="What was valid then.")] = None,
        limit: Annotated[int, Field(ge=1, le=100)] = 20,
        cursor: Annotated[
            str | None, Field(description="next_cursor of the previous page.")
        ] = None,
    ) -> dict[str, Any]:
        """Browse memories, newest first, a page at a time (pass next_cursor back as cursor)."""
        query = _body(
            namespace=namespace,
            topic=topic,
            tier=tier,
            status=status,
            session_id=session_id,
            q=q,
            as_of=_iso(as_of),
            limit=limit,
            cursor=cursor,
        )
        return _cursor(await call("GET", "/memories", query=query))

    @server.tool(annotations=WRITE)
    async def link(
        source: Id,
        target: Id,
        kind: Annotated[str, Field(description="What the link means, e.g. 'related'.")] = "related",
        weight: Annotated[float, Field(ge=0, le=1, description="Strength of the link.")] = 1.0,
    ) -> dict[str, Any]:
        """Associate two memories of one namespace, so recalling one brings the other."""
        body = {"source": source, "target": target, "kind": kind, "weight": weight}
        return await call("POST", "/associations", body=body)

    @server.tool(annotations=WRITE)
    async def relate(
        subject: Annotated[str, Field(description="An entity (person, project, place...).")],
        predicate: Annotated[str, Field(description="The relation, e.g. 'works_at'.")],
        object: Annotated[str, Field(description="The other entity.")],
        namespace: Namespace = None,
        memory: Annotated[int | None, Field(ge=1, description="The memory that states it.")] = None,
    ) -> dict[str, Any]:
        """Record a relation between two entities in the namespace's graph."""
        body = _body(
            namespace=await _namespace(namespace),
            subject=subject,
            predicate=predicate,
            object=object,
            memory=memory,
        )
        return await call("POST", "/relations", body=body)

    @server.tool(annotations=READ)
    async def graph(
        entity: Annotated[str, Field(description="The entity's name.")],
        namespace: Namespace = None,
    ) -> dict[str, Any]:
        """An entity's relations, both ways."""
        query = _body(namespace=namespace, entity=entity)
        return _cursor(await call("GET", "/relations", query=query))

    @server.tool(annotations=READ)
    async def reinforce_due(
        namespace: Namespace = None,
        limit: Annotated[int, Field(ge=1, le=100)] = 20,
    ) -> dict[str, Any]:
        """Memories worth revisiting now: first those decay will forget within days unless
        used (soonest first, with forget_at), then those fading in the review danger zone,
        most urgent first. Recall or use them to keep them."""
        found = await call(
            "GET", "/memories/reinforce", query=_body(namespace=namespace, limit=limit)
        )
        return {"results": found}

    server.seal()
    return server


def asgi_app():
    """The streamable HTTP app (stateless, JSON answers) that config/asgi.py mounts at /mcp."""
    return build_server().streamable_http_app(
        streamable_http_path="/mcp", stateless_http=True, json_response=True
    )


def run_stdio(secret: str) -> None:
    """Serve MCP over stdin/stdout for one token (manage.py mcp)."""
    token = token_for_secret(secret)  # fails now, with the API's message, not per call
    _stdio_secret.set(secret)
    _stdio_writes.set(token.access == ApiToken.Access.WRITE)
    build_server().run("stdio")
