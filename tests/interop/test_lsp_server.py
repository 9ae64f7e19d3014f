"""Drives the lsp_server example with pytest-lsp, impersonating VS Code and Neovim.

    LSP_SERVER=target/debug/examples/lsp_server \
        tests/interop/.venv/bin/python -m pytest tests/interop/test_lsp_server.py \
        -W error::pytest_lsp.LspSpecificationWarning

Each test runs once per client: the server sees that client's name and whole capability set (as
pytest-lsp recorded it from the real editor), and pytest-lsp checks what the server sends against
those capabilities, a specification warning failing the test. tests/tests/interop/stdio.rs runs
this file under cargo test.
"""

import asyncio
import os

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

SERVER = os.environ["LSP_SERVER"]
CLIENTS = ["visual-studio-code", "neovim"]
# Long enough for a loaded machine; a server that stalled on a call waits out 30 s or more.
STEP = 10
URI = "file:///interop/notes.txt"
TEXT = "héllo 😀 wörld\nfn main() {\n    let answer = 42;\n}\n"


@pytest_lsp.fixture(params=CLIENTS, config=ClientServerConfig(server_command=[SERVER]))
async def client(request, lsp_client: LanguageClient):
    """A started server and a client with `request.param`'s capabilities, not yet initialized."""
    lsp_client.set_configuration({"level": "verbose"}, section="example")
    lsp_client.editor = request.param
    yield
    # A test that ended the session leaves nothing to end.
    if lsp_client._server is not None and lsp_client._server.returncode is None:
        await asyncio.wait_for(lsp_client.shutdown_session(), STEP)


async def initialize(client: LanguageClient) -> types.InitializeResult:
    """`initialize` with the editor's capabilities, then `initialized`."""
    params = types.InitializeParams(capabilities=client_capabilities(client.editor))
    return await asyncio.wait_for(client.initialize_session(params), STEP)


def open_notes(client: LanguageClient):
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=URI, language_id="plaintext", version=1, text=TEXT
            )
        )
    )


async def hover(client: LanguageClient, line: int, character: int) -> str | None:
    """The hover's markdown at the position; `None` for no hover."""
    result = await asyncio.wait_for(
        client.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=URI),
                position=types.Position(line=line, character=character),
            )
        ),
        STEP,
    )
    if result is None:
        return None
    assert isinstance(result.contents, types.MarkupContent)
    assert result.contents.kind == types.MarkupKind.Markdown
    return result.contents.value


async def until(check, what: str):
    """Waits until `check()` holds, for at most STEP seconds."""
    for _ in range(STEP * 100):
        if check():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"no {what} within {STEP} s")


def configuration_logs(client: LanguageClient) -> list[types.LogMessageParams]:
    return [m for m in client.log_messages if "configuration of" in m.message]


@pytest.mark.asyncio
async def test_initialize_answers_the_servers_capabilities(client: LanguageClient):
    result = await initialize(client)
    assert result.server_info is not None
    assert result.server_info.name == "jrpc-lsp-example"
    assert result.capabilities.hover_provider is True
    assert result.capabilities.text_document_sync == types.TextDocumentSyncKind.Full


@pytest.mark.asyncio
async def test_hover_shows_the_word_under_the_cursor(client: LanguageClient):
    await initialize(client)
    open_notes(client)
    # Positions are UTF-16 code units: 😀 is two, é one.
    assert await hover(client, 0, 1) == "`héllo`"
    assert await hover(client, 0, 10) == "`wörld`"
    assert await hover(client, 2, 10) == "`answer`"
    assert await hover(client, 2, 2) is None
    assert await hover(client, 9, 0) is None
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=URI, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text="replaced text")],
        )
    )
    assert await hover(client, 0, 13) == "`text`"


@pytest.mark.asyncio
async def test_initialized_greets_then_asks_the_configuration(client: LanguageClient):
    await initialize(client)
    await until(lambda: len(client.log_messages) >= 2, "greeting and configuration")
    greeting, configured = client.log_messages[:2]
    assert greeting.type == types.MessageType.Info
    assert greeting.message == "jrpc-lsp-example is ready"
    assert configured.type == types.MessageType.Info
    assert configured.message == 'configuration of "example": [{"level":"verbose"}]'


@pytest.mark.asyncio
async def test_a_hover_right_after_initialized_is_answered_while_configuration_is_asked(
    client: LanguageClient,
):
    """The hover goes out right behind `initialized`, whose handler is awaiting the client's
    answer to `workspace/configuration`: the answer is read while it waits, and the hover is
    answered once it is done, well within STEP (a stalled server waits out its call timeout)."""
    await initialize(client)
    open_notes(client)
    assert await hover(client, 2, 5) == "`let`"
    # The configuration's log went out before the hover's answer: the server asked, got the
    # answer and logged it while the hover waited.
    assert [m.message for m in configuration_logs(client)] == [
        'configuration of "example": [{"level":"verbose"}]'
    ]


@pytest.mark.asyncio
async def test_shutdown_then_exit_with_null_params_exits_0(client: LanguageClient):
    """pytest-lsp sends `shutdown` and `exit` with `"params": null`, as lsp4j does."""
    await initialize(client)
    await asyncio.wait_for(client.shutdown_session(), STEP)
    assert client._server.returncode == 0


@pytest.mark.asyncio
async def test_exit_without_shutdown_exits_1(client: LanguageClient):
    await initialize(client)
    client.exit(None)
    await asyncio.wait_for(client._server.wait(), STEP)
    assert client._server.returncode == 1
