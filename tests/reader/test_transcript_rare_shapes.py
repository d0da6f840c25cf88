"""Shapes the nine fixture conversations do not reach (issue 22): providers' own tools, approvals,
failed calls that never ran, code execution. Each message is built with its library's own types
and serializer, never typed by hand, and must count its calls and errors."""

from __future__ import annotations

from typing import Any

from evaldag import ScorerRun, checks
from evaldag.transcripts import extract_tool_calls, is_tool_error, tool_invocations


def read(output: Any) -> tuple[list[str], list[bool], list[str]]:
    """The tools called (Mastra's states), each invocation's error flag, and its state."""
    run = ScorerRun(input="q", output=output)
    invocations = tool_invocations(run.output)
    return (
        extract_tool_calls(run.output).tools,
        [is_tool_error(invocation) for invocation in invocations],
        [invocation["state"] for invocation in invocations],
    )


def test_openai_responses_own_tools_are_calls_and_their_failures_errors():
    from openai.types.responses import (
        ResponseCodeInterpreterToolCall,
        ResponseFileSearchToolCall,
        ResponseFunctionWebSearch,
        ResponseOutputMessage,
        ResponseOutputText,
    )
    from openai.types.responses.mcp_tool_call_error import McpToolExecutionError
    from openai.types.responses.response_function_web_search import ActionSearch
    from openai.types.responses.response_output_item import McpCall

    items = [
        ResponseFunctionWebSearch(
            id="ws_1", status="completed", type="web_search_call",
            action=ActionSearch(type="search", query="weather Paris"),
        ),
        ResponseFileSearchToolCall(
            id="fs_1", queries=["refund policy"], status="failed", type="file_search_call"
        ),
        ResponseCodeInterpreterToolCall(
            id="ci_1", code="print(1)", container_id="c", outputs=[], status="completed",
            type="code_interpreter_call",
        ),
        McpCall(
            id="mcp_1", arguments='{"table": "users"}', name="delete_db", server_label="db",
            type="mcp_call",
            error=McpToolExecutionError(
                content="permission denied", type="mcp_tool_execution_error"
            ),
        ),
        ResponseOutputMessage(
            id="msg_1", role="assistant", status="completed", type="message",
            content=[ResponseOutputText(type="output_text", text="Done.", annotations=[])],
        ),
    ]  # fmt: skip
    output = [item.model_dump(mode="json") for item in items]
    tools, errors, _ = read(output)
    assert tools == ["web_search", "file_search", "code_interpreter", "delete_db"]
    assert errors == [False, True, False, True]
    assert checks.did_not_call("delete_db").run(input="q", output=output).score == 0


def test_anthropic_server_tools_and_their_error_results():
    from anthropic.types import (
        ServerToolUseBlock,
        TextBlock,
        WebSearchToolResultBlock,
        WebSearchToolResultError,
    )

    blocks = [
        ServerToolUseBlock(
            id="srv_1", name="web_search", input={"query": "x"}, type="server_tool_use"
        ),
        WebSearchToolResultBlock(
            tool_use_id="srv_1", type="web_search_tool_result",
            content=WebSearchToolResultError(
                type="web_search_tool_result_error", error_code="max_uses_exceeded"
            ),
        ),
        TextBlock(text="I could not search.", type="text"),
    ]  # fmt: skip
    message = {"role": "assistant", "content": [b.model_dump(mode="json") for b in blocks]}
    tools, errors, states = read([message])
    assert (tools, errors, states) == (["web_search"], [True], ["output-error"])


def test_gemini_code_execution_is_a_call_whose_failed_outcome_is_an_error():
    from google.genai import types

    content = types.Content(
        role="model",
        parts=[
            types.Part(executable_code=types.ExecutableCode(code="1/0", language="PYTHON")),
            types.Part(
                code_execution_result=types.CodeExecutionResult(
                    outcome="OUTCOME_FAILED", output="ZeroDivisionError"
                )
            ),
            types.Part(text="The code failed."),
        ],
    )
    for dump in ({"by_alias": True}, {}):  # the REST JSON and the SDK's snake_case
        output = [content.model_dump(mode="json", exclude_none=True, **dump)]
        assert read(output) == (["code_execution"], [True], ["output-error"])
    assert read([content]) == (["code_execution"], [True], ["output-error"])


def test_a_gemini_response_holds_the_calls_of_automatic_function_calling():
    """google-genai runs the model's calls itself (automatic function calling) and keeps them in
    the response's ``automatic_function_calling_history``: its candidate holds only the last
    answer. The calls of this turn count, those of the history the request gave do not."""
    import httpx
    from google import genai
    from google.genai import types

    answers = [
        {"candidates": [{"content": {"role": "model", "parts": [
            {"functionCall": {"name": "delete_db", "args": {"table": "users"}}}
        ]}}]},
        {"candidates": [{"content": {"role": "model", "parts": [{"text": "Deleted."}]}}]},
    ]  # fmt: skip

    def delete_db(table: str) -> dict[str, str]:
        """Deletes a table."""
        raise PermissionError("not allowed")

    client = genai.Client(
        api_key="key",
        http_options=types.HttpOptions(
            httpx_client=httpx.Client(
                transport=httpx.MockTransport(lambda _: httpx.Response(200, json=answers.pop(0)))
            )
        ),
    )
    earlier = [
        types.Content(role="user", parts=[types.Part(text="Which tables are there?")]),
        types.Content(
            role="model",
            parts=[types.Part(function_call=types.FunctionCall(name="list_tables", args={}))],
        ),
        types.Content(
            role="user",
            parts=[types.Part.from_function_response(name="list_tables", response={"output": []})],
        ),
        types.Content(role="model", parts=[types.Part(text="users")]),
    ]
    response = client.models.generate_content(
        model="gemini-2.5-flash",
        contents=[*earlier, types.Content(role="user", parts=[types.Part(text="Delete users")])],
        config=types.GenerateContentConfig(tools=[delete_db]),
    )
    assert response.automatic_function_calling_history
    for output in (
        response,
        response.model_dump(mode="json", exclude_none=True),
        response.model_dump(mode="json", exclude_none=True, by_alias=True),
    ):
        assert read(output) == (["delete_db"], [True], ["result"])
        assert checks.did_not_call("delete_db").run(input="q", output=output).score == 0


def test_langchain_invalid_tool_calls_are_failed_calls():
    from langchain_core.messages import AIMessage, messages_to_dict
    from langchain_core.messages.tool import invalid_tool_call

    message = AIMessage(
        content="",
        invalid_tool_calls=[
            invalid_tool_call(name="delete_db", args="{bad", id="c1", error="bad JSON")
        ],
    )
    output = messages_to_dict([message])
    assert read(output) == (["delete_db"], [True], ["output-error"])
    assert checks.did_not_call("delete_db").run(input="q", output=output).score == 0


def test_pydantic_ai_outcomes():
    from pydantic_ai.messages import (
        ModelMessagesTypeAdapter,
        ModelRequest,
        ModelResponse,
        ToolCallPart,
        ToolReturnPart,
    )

    def conversation(outcome: str) -> list[Any]:
        messages = [
            ModelResponse(
                parts=[ToolCallPart(tool_name="delete_db", args={"t": 1}, tool_call_id="c1")]
            ),
            ModelRequest(
                parts=[
                    ToolReturnPart(
                        tool_name="delete_db", content="no", tool_call_id="c1", outcome=outcome
                    )
                ]
            ),
        ]
        return ModelMessagesTypeAdapter.dump_python(messages, mode="json")

    assert read(conversation("success")) == (["delete_db"], [False], ["result"])
    assert read(conversation("failed")) == (["delete_db"], [True], ["output-error"])
    assert read(conversation("interrupted")) == (["delete_db"], [True], ["output-error"])
    # denied: the call did not run (Mastra's output-denied, which the checks do not count)
    assert read(conversation("denied")) == ([], [False], ["output-denied"])


def test_pydantic_ai_builtin_tools_that_failed_are_errors():
    """pydantic-ai keeps a built-in tool's failure as its return's ``outcome``, or (a success
    to pydantic-ai) as the provider's own record in its content: both are errors, as they are
    in the provider's own messages."""
    from anthropic.types.beta import (
        BetaBashCodeExecutionResultBlock,
        BetaBashCodeExecutionToolResultBlock,
        BetaMCPToolResultBlock,
        BetaMCPToolUseBlock,
        BetaServerToolUseBlock,
        BetaWebSearchToolResultBlock,
        BetaWebSearchToolResultError,
    )
    from google.genai.types import CodeExecutionResult, ExecutableCode, Outcome
    from openai.types.responses import ResponseFunctionWebSearch
    from pydantic_ai.messages import (
        ModelMessagesTypeAdapter,
        ModelResponse,
        NativeToolCallPart,
        NativeToolReturnPart,
    )
    from pydantic_ai.models.anthropic import _native_tools as anthropic_tools
    from pydantic_ai.models.google import _map_code_execution_result, _map_executable_code_part
    from pydantic_ai.models.openai import _native_tools as openai_tools

    def read_parts(*parts: Any) -> tuple[list[str], list[bool], list[str]]:
        messages = [ModelResponse(parts=list(parts))]
        return read(ModelMessagesTypeAdapter.dump_python(messages, mode="json"))

    search = BetaServerToolUseBlock(
        type="server_tool_use", id="srvtoolu_1", name="web_search", input={"query": "q"}
    )
    search_error = BetaWebSearchToolResultBlock(
        type="web_search_tool_result",
        tool_use_id="srvtoolu_1",
        content=BetaWebSearchToolResultError(
            type="web_search_tool_result_error", error_code="unavailable"
        ),
    )
    assert read_parts(
        anthropic_tools.map_server_tool_use_block(search, "anthropic"),
        anthropic_tools.map_web_search_tool_result_block(search_error, "anthropic"),
    ) == (["web_search"], [True], ["output-error"])
    mcp_use = anthropic_tools.map_mcp_server_use_block(
        BetaMCPToolUseBlock(
            type="mcp_tool_use", id="mcptoolu_1", name="run", server_name="db", input={}
        ),
        "anthropic",
    )
    mcp_error = BetaMCPToolResultBlock(
        type="mcp_tool_result", tool_use_id="mcptoolu_1", is_error=True, content="denied"
    )
    assert read_parts(
        mcp_use, anthropic_tools.map_mcp_server_result_block(mcp_error, mcp_use, "anthropic")
    )[1:] == ([True], ["output-error"])
    web_search = ResponseFunctionWebSearch(
        id="ws_1", type="web_search_call", status="failed", action={"type": "search", "query": "q"}
    )
    assert read_parts(*openai_tools.map_web_search_tool_call(web_search, "openai"))[1:] == (
        [True],
        ["output-error"],
    )
    code = _map_executable_code_part(
        ExecutableCode(code="1/0", language="PYTHON"), "google-gla", file_search_enabled=False
    )
    result = CodeExecutionResult(outcome=Outcome.OUTCOME_FAILED, output="ZeroDivisionError")
    assert read_parts(
        code, _map_code_execution_result(result, "google-gla", code.tool_call_id)
    ) == (["code_execution"], [True], ["output-error"])
    bash = BetaServerToolUseBlock(
        type="server_tool_use",
        id="srvtoolu_2",
        name="bash_code_execution",
        input={"command": "make"},
    )
    exited = BetaBashCodeExecutionToolResultBlock(
        type="bash_code_execution_tool_result", tool_use_id="srvtoolu_2",
        content=BetaBashCodeExecutionResultBlock(
            type="bash_code_execution_result", content=[], return_code=2, stderr="no rule",
            stdout="",
        ),
    )  # fmt: skip
    assert read_parts(
        anthropic_tools.map_server_tool_use_block(bash, "anthropic"),
        anthropic_tools.map_bash_code_execution_tool_result_block(exited, "anthropic"),
    )[1:] == ([True], ["output-error"])
    # an MCP call that failed, as pydantic-ai's ElevenLabs agents record it: outcome 'failed'
    call = NativeToolCallPart(tool_name="mcp_server:db", args={}, tool_call_id="t1")
    failed = NativeToolReturnPart(
        tool_name="mcp_server:db", content="boom", tool_call_id="t1", outcome="failed"
    )
    assert read_parts(call, failed)[1:] == ([True], ["output-error"])
    succeeded = NativeToolReturnPart(tool_name="mcp_server:db", content="ok", tool_call_id="t1")
    assert read_parts(call, succeeded)[1:] == ([False], ["result"])


def test_pydantic_ai_mcp_calls_are_calls_of_the_mcp_servers_tool():
    """pydantic-ai names a call its provider made to an MCP server's tool ``mcp_server:<id>``,
    the tool in its arguments: it is a call of that tool, as in the provider's own messages, in
    pydantic-ai's messages and in the GenAI messages its instrumentation records."""
    from anthropic.types.beta import BetaMCPToolUseBlock
    from openai.types.responses.response_output_item import McpCall
    from pydantic_ai.messages import ModelMessagesTypeAdapter, ModelResponse
    from pydantic_ai.models.anthropic import _native_tools as anthropic_tools
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.openai import _native_tools as openai_tools

    anthropic_call = anthropic_tools.map_mcp_server_use_block(
        BetaMCPToolUseBlock(
            type="mcp_tool_use", id="mcptoolu_1", name="delete_db", server_name="db", input={}
        ),
        "anthropic",
    )
    openai_call = McpCall(
        type="mcp_call", id="mcp_1", name="delete_db", arguments='{"table": "t"}',
        server_label="db", output="dropped", status="completed",
    )  # fmt: skip
    messages = [ModelResponse(parts=[anthropic_call, *openai_tools.map_mcp_call(openai_call, "o")])]
    for output in (
        ModelMessagesTypeAdapter.dump_python(messages, mode="json"),
        InstrumentationSettings().messages_to_otel_messages(messages),
    ):
        run = ScorerRun(input="q", output=output)
        assert extract_tool_calls(run.output).tools == ["delete_db", "delete_db"]
        assert [i["args"] for i in tool_invocations(run.output)] == [{}, {"table": "t"}]
        assert checks.did_not_call("delete_db").run(input="q", output=output).score == 0


def test_openai_chat_completion_object_and_legacy_function_calling():
    from openai.types.chat import ChatCompletion, ChatCompletionFunctionMessageParam

    completion = ChatCompletion.model_validate(
        {
            "id": "c", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{
                "index": 0, "finish_reason": "function_call",
                "message": {
                    "role": "assistant", "content": None,
                    "function_call": {"name": "delete_db", "arguments": '{"table": "users"}'},
                },
            }],
        }
    )  # fmt: skip
    assert read(completion) == (["delete_db"], [True], ["call"])
    answered = [
        completion.choices[0].message,
        ChatCompletionFunctionMessageParam(
            role="function", name="delete_db", content='{"deleted": 3}'
        ),
    ]
    assert read(answered) == (["delete_db"], [False], ["result"])


def test_code_that_exited_non_zero_is_a_failed_call_for_every_provider():
    """Anthropic's code execution results and OpenAI's shell outputs carry an exit code: a
    non-zero one (or a timeout) fails the call, as Gemini's ``OUTCOME_FAILED`` does."""
    from anthropic.types import (
        BashCodeExecutionResultBlock,
        BashCodeExecutionToolResultBlock,
        CodeExecutionResultBlock,
        CodeExecutionToolResultBlock,
        ServerToolUseBlock,
    )
    from openai.types.responses import (
        ResponseFunctionShellToolCall,
        ResponseFunctionShellToolCallOutput,
    )
    from openai.types.responses.response_function_shell_tool_call import Action
    from openai.types.responses.response_function_shell_tool_call_output import (
        Output,
        OutputOutcomeExit,
        OutputOutcomeTimeout,
    )

    def ran(id: str, name: str) -> ServerToolUseBlock:
        return ServerToolUseBlock(id=id, name=name, input={"command": "x"}, type="server_tool_use")

    def python(id: str, return_code: int, stdout: str) -> CodeExecutionToolResultBlock:
        return CodeExecutionToolResultBlock(
            tool_use_id=id, type="code_execution_tool_result",
            content=CodeExecutionResultBlock(
                content=[], return_code=return_code, stderr="", stdout=stdout,
                type="code_execution_result",
            ),
        )  # fmt: skip

    blocks = [
        ran("b1", "bash_code_execution"),
        BashCodeExecutionToolResultBlock(
            tool_use_id="b1", type="bash_code_execution_tool_result",
            content=BashCodeExecutionResultBlock(
                content=[], return_code=127, stderr="ls: not found", stdout="",
                type="bash_code_execution_result",
            ),
        ),
        ran("b2", "code_execution"),
        python("b2", 1, "Traceback: boom"),
        ran("b3", "code_execution"),
        python("b3", 0, "ok"),
    ]  # fmt: skip
    message = {"role": "assistant", "content": [b.model_dump(mode="json") for b in blocks]}
    run = ScorerRun(input="q", output=[message])
    invocations = tool_invocations(run.output)
    assert [i["state"] for i in invocations] == ["output-error", "output-error", "result"]
    assert [i.get("errorText") for i in invocations] == ["ls: not found", "Traceback: boom", None]
    assert checks.no_tool_errors().run(input="q", output=[message]).score == 0

    def shell(call_id: str, *outputs: Output) -> list[dict[str, Any]]:
        items = [
            ResponseFunctionShellToolCall(
                id=f"sh_{call_id}", call_id=call_id, type="shell_call", status="completed",
                action=Action(commands=["make test"], max_output_length=None, timeout_ms=None),
            ),
            ResponseFunctionShellToolCallOutput(
                id=f"sho_{call_id}", call_id=call_id, type="shell_call_output",
                status="completed", output=list(outputs),
            ),
        ]  # fmt: skip
        return [item.model_dump(mode="json") for item in items]

    exited = Output(
        outcome=OutputOutcomeExit(type="exit", exit_code=2), stderr="3 failed", stdout=""
    )
    timed_out = Output(outcome=OutputOutcomeTimeout(type="timeout"), stderr="", stdout="slow")
    passed = Output(outcome=OutputOutcomeExit(type="exit", exit_code=0), stderr="", stdout="ok")
    output = [*shell("c1", exited), *shell("c2", timed_out), *shell("c3", passed)]
    run = ScorerRun(input="q", output=output)
    invocations = tool_invocations(run.output)
    assert [i["state"] for i in invocations] == ["output-error", "output-error", "result"]
    assert [i.get("errorText") for i in invocations] == ["3 failed", "slow", None]


def test_an_incomplete_openai_mcp_call_is_a_failed_call():
    """An ``mcp_call`` whose status is ``incomplete`` did not finish, as OpenAI's other tools'
    ``incomplete`` calls: an error, not a success without a result."""
    from openai.types.responses.response_output_item import McpCall

    item = McpCall(
        id="mcp_1", arguments="{}", name="deploy", server_label="ops", type="mcp_call",
        status="incomplete",
    )  # fmt: skip
    assert read([item.model_dump(mode="json")]) == (["deploy"], [True], ["output-error"])


def test_gemini_server_side_tool_calls_are_calls_answered_by_their_tool_responses():
    """Gemini 3's ``tool_call`` / ``tool_response`` parts record a tool Google ran (search, URL
    context, file search): a call of its tool type, answered by the response of its id."""
    from google.genai import types

    content = types.Content(
        role="model",
        parts=[
            types.Part(
                tool_call=types.ToolCall(
                    id="t1", tool_type=types.ToolType.GOOGLE_SEARCH_WEB, args={"query": "Paris"}
                )
            ),
            types.Part(
                tool_response=types.ToolResponse(
                    id="t1", tool_type=types.ToolType.GOOGLE_SEARCH_WEB, response={"hits": 3}
                )
            ),
            types.Part(
                tool_call=types.ToolCall(id="t2", tool_type=types.ToolType.URL_CONTEXT, args={})
            ),
            types.Part(
                tool_response=types.ToolResponse(
                    id="t2", tool_type=types.ToolType.URL_CONTEXT, response={"error": "404"}
                )
            ),
            types.Part(text="It is sunny."),
        ],
    )
    for dump in ({"by_alias": True}, {}):  # the REST JSON and the SDK's snake_case
        output = [content.model_dump(mode="json", exclude_none=True, **dump)]
        assert read(output) == (
            ["google_search_web", "url_context"],
            [False, True],
            ["result", "result"],
        )
    assert read([content])[0] == ["google_search_web", "url_context"]
    run = ScorerRun(input="q", output=[content])
    assert tool_invocations(run.output)[0]["result"] == {"hits": 3}


def test_openai_tool_search_and_programs_are_calls_answered_by_their_outputs():
    """``tool_search_call`` and ``program`` (programmatic tool calling) are answered by their
    ``tool_search_output`` / ``program_output`` items; an ``incomplete`` output is an error. A
    program's own function calls are items of their own, read as the calls they are."""
    from openai.types.responses import (
        FunctionTool,
        ResponseFunctionToolCall,
        ResponseToolSearchCall,
        ResponseToolSearchOutputItem,
    )
    from openai.types.responses.response_function_tool_call import CallerProgram
    from openai.types.responses.response_output_item import Program, ProgramOutput

    weather = FunctionTool(name="get_weather", parameters={}, strict=True, type="function")
    items = [
        ResponseToolSearchCall(
            id="ts_1", call_id="tsc_1", arguments={"query": "weather"}, execution="server",
            status="completed", type="tool_search_call",
        ),
        ResponseToolSearchOutputItem(
            id="tso_1", call_id="tsc_1", execution="server", status="completed",
            tools=[weather], type="tool_search_output",
        ),
        Program(id="p_1", call_id="pc_1", code="await get_weather()", fingerprint="f",
                type="program"),
        ResponseFunctionToolCall(
            id="fc_1", call_id="fc_1", name="get_weather", arguments="{}", type="function_call",
            caller=CallerProgram(caller_id="pc_1", type="program"),
        ),
        ProgramOutput(id="po_1", call_id="pc_1", result="timed out", status="incomplete",
                      type="program_output"),
    ]  # fmt: skip
    output = [item.model_dump(mode="json") for item in items]
    tools, errors, states = read(output)
    assert tools == ["tool_search", "program", "get_weather"]
    assert errors == [False, True, True]  # the program failed; its call was never answered
    assert states == ["result", "output-error", "call"]
    run = ScorerRun(input="q", output=output)
    assert tool_invocations(run.output)[0]["result"][0]["name"] == "get_weather"


def test_anthropic_tool_listings_fallbacks_and_compactions_are_kept_not_refused():
    """An MCP server's ``mcp_tool_listing``, a ``fallback`` marker (one model declined, the next
    continues) and a ``compaction`` summary of earlier turns hold no call and no text of the
    reply: they are kept in the message as given, and the calls and text around them read."""
    from anthropic.types.beta import (
        BetaCompactionBlock,
        BetaFallbackBlock,
        BetaFallbackInfo,
        BetaFallbackRefusalTrigger,
        BetaMCPTool,
        BetaMCPToolListingBlock,
        BetaMCPToolResultBlock,
        BetaMCPToolUseBlock,
        BetaTextBlock,
    )

    from evaldag.transcripts import get_assistant_message

    blocks = [
        BetaCompactionBlock(type="compaction", content="The user asked about the users table."),
        BetaMCPToolListingBlock(
            type="mcp_tool_listing", mcp_server_name="db",
            tools=[BetaMCPTool(name="count_users", input_schema={"type": "object"})],
        ),
        BetaFallbackBlock.model_validate({
            "type": "fallback", "from": BetaFallbackInfo(model="claude-opus-4-1"),
            "to": BetaFallbackInfo(model="claude-sonnet-4-5"),
            "trigger": BetaFallbackRefusalTrigger(type="refusal"),
        }),
        BetaMCPToolUseBlock(
            type="mcp_tool_use", id="m1", name="count_users", server_name="db", input={}
        ),
        BetaMCPToolResultBlock(type="mcp_tool_result", tool_use_id="m1", is_error=False,
                               content="42"),
        BetaTextBlock(type="text", text="There are 42 users."),
    ]  # fmt: skip
    message = {
        "role": "assistant",
        "content": [b.model_dump(mode="json", by_alias=True) for b in blocks],
    }
    assert read([message]) == (["count_users"], [False], ["result"])
    run = ScorerRun(input="q", output=[message])
    assert get_assistant_message(run.output) == "There are 42 users."
    kinds = [part["type"] for part in run.output[0]["content"]["parts"]]
    assert kinds == ["compaction", "mcp_tool_listing", "fallback", "tool-invocation", "text"]


def test_anthropic_advisor_results_answer_their_calls_and_their_errors_are_errors():
    """The advisor tool's ``advisor_tool_result`` answers its ``server_tool_use`` like the other
    server tools' results: an ``advisor_tool_result_error`` content is a failed call."""
    from anthropic.types.beta import (
        BetaAdvisorResultBlock,
        BetaAdvisorToolResultBlock,
        BetaAdvisorToolResultErrorObject,
        BetaServerToolUseBlock,
    )

    blocks = [
        BetaServerToolUseBlock(type="server_tool_use", id="a1", name="advisor", input={}),
        BetaAdvisorToolResultBlock(
            type="advisor_tool_result", tool_use_id="a1",
            content=BetaAdvisorResultBlock(type="advisor_result", text="Check the index first."),
        ),
        BetaServerToolUseBlock(type="server_tool_use", id="a2", name="advisor", input={}),
        BetaAdvisorToolResultBlock(
            type="advisor_tool_result", tool_use_id="a2",
            content=BetaAdvisorToolResultErrorObject(
                type="advisor_tool_result_error", error_code="overloaded"
            ),
        ),
    ]  # fmt: skip
    message = {"role": "assistant", "content": [b.model_dump(mode="json") for b in blocks]}
    assert read([message]) == (["advisor", "advisor"], [False, True], ["result", "output-error"])
