"""The demo's tools: safe arithmetic, file access confined to the working directory, sleep."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from pi_core import AbortController, AgentTool, AgentToolResult, TextContent
from pi_core.cli._calc import MAX_EXPRESSION_LENGTH, CalculationError, calculate
from pi_core.cli._tools import MAX_READ_BYTES, PathEscapeError, Workspace, make_demo_tools

# --- calculate ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "value"),
    [
        ("2 + 3 * 4", 14),
        ("(2 + 3) * 4", 20),
        ("7 / 2", 3.5),
        ("7 // 2", 3),
        ("-7 % 3", 2),
        ("2 ** 10", 1024),
        ("-(3 - 5)", 2),
        ("+4", 4),
        ("1.5e3 * 2", 3000.0),
        ("2 ** -1", 0.5),
        (" 6*7 ", 42),
        ("2 ** 4000", 2**4000),
    ],
)
def test_calculate_evaluates_arithmetic(expression: str, value: float) -> None:
    assert calculate(expression) == value


@pytest.mark.parametrize(
    "expression",
    [
        "x + 1",  # a name
        "abs(-1)",  # a call
        "__import__('os').system('true')",  # a call of a name
        "(1).__class__",  # an attribute
        "[1, 2][0]",  # a subscript
        "'a' * 3",  # a string
        "True + 1",  # a bool
        "1j * 2",  # a complex number
        "lambda: 1",
        "1 if 2 else 3",
        "1 << 100",  # an operator outside the list
        "1 < 2",
        "1; 2",
        "",
    ],
)
def test_calculate_rejects_anything_but_arithmetic(expression: str) -> None:
    with pytest.raises(CalculationError):
        calculate(expression)


@pytest.mark.parametrize(
    "expression",
    [
        "9 ** 9 ** 9",
        "2 ** 5000",
        "(10 ** 1000) ** 1000",
        "((2 ** 4000) * (2 ** 4000))",
        "10.0 ** 400",  # float overflow
        "2 ** (2 ** 4000)",
    ],
)
def test_calculate_refuses_huge_results_quickly(expression: str) -> None:
    with pytest.raises(CalculationError, match=r"too large|not a finite"):
        calculate(expression)


def test_calculate_refuses_long_expressions_division_by_zero_and_complex_results() -> None:
    with pytest.raises(CalculationError, match="longer than"):
        calculate("1+" * MAX_EXPRESSION_LENGTH + "1")
    with pytest.raises(CalculationError, match="division by zero"):
        calculate("1 / (2 - 2)")
    with pytest.raises(CalculationError, match="division by zero"):
        calculate("5 % 0")
    with pytest.raises(CalculationError, match="not a real number"):
        calculate("(-8) ** 0.5")


# --- path confinement -----------------------------------------------------------------------------


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "hello.txt").write_text("hello\nworld\n")
    (root / "sub" / "inner.txt").write_text("inner")
    (tmp_path / "secret.txt").write_text("secret")
    return Workspace(root)


def test_paths_inside_the_root_resolve(workspace: Workspace) -> None:
    assert workspace.resolve("hello.txt") == workspace.root / "hello.txt"
    assert workspace.resolve("sub/../hello.txt") == workspace.root / "hello.txt"
    assert workspace.resolve(".") == workspace.root
    assert workspace.read_text("sub/inner.txt") == "inner"
    assert workspace.list_dir(".") == "hello.txt\nsub/"


@pytest.mark.parametrize("path", ["../secret.txt", "sub/../../secret.txt", "/etc/passwd", ".."])
def test_paths_escaping_the_root_are_rejected(workspace: Workspace, path: str) -> None:
    with pytest.raises(PathEscapeError, match="outside the working directory"):
        workspace.resolve(path)


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
def test_symlinks_are_resolved_before_the_check(workspace: Workspace) -> None:
    secret = workspace.root.parent / "secret.txt"
    try:
        (workspace.root / "link.txt").symlink_to(secret)
        (workspace.root / "linkdir").symlink_to(workspace.root.parent, target_is_directory=True)
        (workspace.root / "inside.txt").symlink_to(workspace.root / "hello.txt")
    except OSError:
        pytest.skip("cannot create symlinks here")
    with pytest.raises(PathEscapeError):
        workspace.read_text("link.txt")
    with pytest.raises(PathEscapeError):
        workspace.list_dir("linkdir")
    assert workspace.read_text("inside.txt").startswith("hello")


def test_reading_is_bounded_and_needs_a_file(workspace: Workspace) -> None:
    (workspace.root / "big.txt").write_bytes(b"x" * (MAX_READ_BYTES + 10))
    text = workspace.read_text("big.txt")
    assert text.endswith(f"[truncated after {MAX_READ_BYTES} bytes]")
    with pytest.raises(FileNotFoundError):
        workspace.read_text("sub")
    with pytest.raises(NotADirectoryError):
        workspace.list_dir("hello.txt")


# --- the tools as the agent calls them ------------------------------------------------------------


def _tools(root: Path) -> dict[str, AgentTool]:
    return {tool.name: tool for tool in make_demo_tools(root)}


def _text(result: object) -> str:
    if isinstance(result, str):
        return result
    assert isinstance(result, AgentToolResult)
    return " ".join(b.text for b in result.content if isinstance(b, TextContent))


@pytest.mark.anyio
async def test_tools_run_through_their_execute(workspace: Workspace) -> None:
    tools = _tools(workspace.root)
    assert sorted(tools) == ["calculate", "list_dir", "now", "read_file", "sleep"]
    signal = AbortController().signal
    calc = await tools["calculate"].execute("1", {"expression": "6*7"}, signal, lambda _: None)
    assert _text(calc) == "6*7 = 42"
    read = await tools["read_file"].execute("2", {"path": "hello.txt"}, signal, lambda _: None)
    assert _text(read) == "hello\nworld\n"
    with pytest.raises(PathEscapeError):
        await tools["read_file"].execute("3", {"path": "../secret.txt"}, signal, lambda _: None)
    listing = await tools["list_dir"].execute("4", {}, signal, lambda _: None)
    assert _text(listing) == "hello.txt\nsub/"


@pytest.mark.anyio
async def test_sleep_reports_progress(workspace: Workspace) -> None:
    sleep = _tools(workspace.root)["sleep"]
    updates: list[str] = []
    signal = AbortController().signal
    done = await sleep.execute("1", {"seconds": 0.5}, signal, lambda p: updates.append(_text(p)))
    assert updates == ["0.25 / 0.5 s"]
    assert _text(done) == "slept 0.5 s"
    with pytest.raises(ValueError, match="between 0 and 60"):
        await sleep.execute("2", {"seconds": 61}, signal, lambda _: None)


@pytest.mark.anyio
async def test_sleep_stops_at_once_on_abort(workspace: Workspace) -> None:
    sleep = _tools(workspace.root)["sleep"]
    controller = AbortController()
    failures: list[Exception] = []

    async def call() -> None:
        try:
            await sleep.execute("1", {"seconds": 60}, controller.signal, lambda _: None)
        except RuntimeError as exc:
            failures.append(exc)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            await anyio.wait_all_tasks_blocked()
            controller.abort()
    assert [str(exc) for exc in failures] == ["sleep aborted after 0.00 s"]
