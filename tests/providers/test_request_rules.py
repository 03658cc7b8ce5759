"""The request validators catch what each API rejects (so that their silence means something)."""

from __future__ import annotations

from _request_rules import (
    anthropic_problems,
    chat_completions_problems,
    gemini_problems,
    responses_problems,
)


def test_chat_completions_rules() -> None:
    call = {
        "id": "call_" + "x" * 40,
        "type": "function",
        "function": {"name": "t", "arguments": "[]"},
    }
    body = {
        "messages": [
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "user", "content": "Too soon"},
            {"role": "tool", "tool_call_id": "nobody", "content": "late"},
        ]
    }
    assert chat_completions_problems(body) == [
        "messages[1] repeats a tool call id or has one too long",
        "messages[1] has arguments that are not a JSON object",
        f"messages[2] comes before the answers to ['{call['id']}']",
        "messages[3] answers no pending call",
    ]


def test_anthropic_rules() -> None:
    body = {
        "messages": [
            {"role": "assistant", "content": [{"type": "text", "text": " "}]},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "t"}, {"type": "tool_use", "id": "a|b", "name": "t", "input": {}}]},
            {"role": "user", "content": [{"type": "text", "text": "no results"}]},
        ]
    }  # fmt: skip
    assert anthropic_problems(body) == [
        "messages[0] is assistant, expected user",
        "messages[0] has a blank text block",
        "messages[1] has thinking without a signature",
        "messages[1] has tool id 'a|b'",
        "messages[1] calls ['a|b'] but the next message answers []",
    ]


def test_responses_rules() -> None:
    message = {"type": "message", "role": "assistant", "content": [], "id": "msg_1"}
    body = {
        "input": [
            {"type": "reasoning", "id": "rs_1", "summary": []},
            message,
            message,
            {"type": "reasoning", "id": "rs_2", "summary": [], "encrypted_content": "e"},
            {"type": "function_call_output", "call_id": "c1", "output": "x"},
            {"type": "function_call", "id": "call_1", "call_id": "c1", "name": "t", "arguments": "{}"},
        ]
    }  # fmt: skip
    assert responses_problems(body) == [
        "input[0] is reasoning without encrypted content",
        "input[2] has id 'msg_1'",
        "input[3] is reasoning without its following item",
        "input[4] answers 'c1', not a pending call",
        "input[5] has id 'call_1'",
        "call 'c1' is never answered",
    ]


def test_gemini_rules() -> None:
    call = {"functionCall": {"name": "t", "args": {}}}
    answer = {"functionResponse": {"name": "t", "response": {"output": "ok"}}}
    body = {
        "contents": [
            {"role": "user", "parts": [{"text": "Hi"}]},
            {"role": "model", "parts": [call, {**call, "thoughtSignature": "not base64!"}]},
            {"role": "user", "parts": [answer]},
            {"role": "user", "parts": [{"text": "Tool result image:"}]},
            {"role": "user", "parts": [answer]},
            {"role": "model", "parts": []},
        ],
        "tools": [{"functionDeclarations": [{"name": "t", "parametersJsonSchema": {"type": ["string", "null"], "$ref": "#/x"}}]}],
    }  # fmt: skip
    assert gemini_problems(body) == [
        "contents[1] has signature 'not base64!'",
        "contents[1] calls ['t', 't'] and the next turn does not answer all",
        "contents[2] answers ['t'] after calls ['t', 't']",
        "contents[4] answers ['t'] after calls []",
        "contents[5] is empty or of role 'model'",
        "$.$ref",
        "$.type is a list",
    ]
