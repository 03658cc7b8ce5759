"""The run viewer page in headless Chromium (Playwright) against ``pi-core serve`` on 127.0.0.1,
on both backends: parallel tools draw overlapping bars, abort and stop work from the page, a
pending approval is shown and approved, a durable run started from the CLI shows up and streams.
The screenshots of docs/ui.md are taken here: ``PI_CORE_REFRESH_SCREENSHOTS=1`` writes them into
docs/images (a plain run only checks that they are not blank, and leaves the checkout alone)."""

from __future__ import annotations

import concurrent.futures
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from backends import BACKENDS
from pi_core import ToolExecutionStart
from ui.browser import DOCS, chromium_path, distinct_colors, served_page

sync_api = pytest.importorskip("playwright.sync_api")

WAIT_MS = 30_000
VIEWPORT = {"width": 1200, "height": 760}


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    executable = chromium_path()
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport=VIEWPORT)
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    yield opened
    context.close()
    assert errors == []


def open_page(page: Any, url: str) -> None:
    page.goto(url + "/")
    page.wait_for_selector("body[data-ready=true]")


@contextmanager
def page_on(page: Any, agent: str, backend: str = "asyncio") -> Iterator[None]:
    """``pi-core serve`` of ``agent`` on ``backend``, with ``page`` opened on it."""
    with served_page("--backend", backend, "--agent", agent) as (_, url):
        open_page(page, url)
        yield


def wait_first_bar(page: Any) -> None:
    page.wait_for_selector(".lane:not([hidden]) [data-tool-call-id]", timeout=WAIT_MS)


def send(page: Any, text: str) -> None:
    page.fill("#input", text)
    page.click("#send")


def wait_status(page: Any, text: str) -> None:
    page.wait_for_function(
        "(text) => document.getElementById('status').textContent === text",
        arg=text,
        timeout=WAIT_MS,
    )


def bar_boxes(page: Any) -> dict[str, dict[str, float]]:
    """Each tool call's bar: its tool's name (from the lane's label) and its box."""
    boxes = {}
    for bar in page.query_selector_all("[data-tool-call-id]"):
        if not bar.is_visible():
            continue
        label = bar.evaluate("b => b.closest('.lane').querySelector('.lane-label').textContent")
        boxes[label.split(" ")[0].rstrip(":")] = bar.bounding_box()
    return boxes


def save_screenshot(page: Any, name: str) -> None:
    """Take the screenshot ``docs/images/<name>`` shows; write it there only when refreshing."""
    png = page.screenshot()
    assert distinct_colors(page, png) > 20, "the screenshot is blank"
    if os.environ.get("PI_CORE_REFRESH_SCREENSHOTS") == "1":
        DOCS.mkdir(parents=True, exist_ok=True)
        (DOCS / name).write_bytes(png)


@pytest.mark.parametrize("backend", BACKENDS)
def test_parallel_tools_draw_overlapping_bars(page: Any, backend: str) -> None:
    with page_on(page, "ui_agents:demo", backend):
        send(page, "sleep 1.5 and 1/0 and list the files")
        wait_status(page, "idle")
        boxes = bar_boxes(page)
        assert sorted(boxes) == ["calculate", "list_dir", "now", "sleep"]
        sleep = boxes["sleep"]
        for name in ("calculate", "now", "list_dir"):
            other = boxes[name]
            # Drawn while the sleep ran: its bar lies within the sleep's span, in its own lane.
            assert sleep["x"] <= other["x"] < sleep["x"] + sleep["width"]
            assert other["x"] + other["width"] <= sleep["x"] + sleep["width"] + 1
            assert other["y"] != sleep["y"]
        assert sleep["width"] > 10 * boxes["now"]["width"]
        error = page.locator(".bar.error")
        assert error.count() == 1
        assert error.evaluate("b => getComputedStyle(b).backgroundColor") == "rgb(214, 69, 69)"
        assert page.locator("details.thinking").count() == 2
        assert page.locator("details.thinking[open]").count() == 0  # folded once complete
        assert (
            "Here is what the tools reported" in page.locator(".msg.assistant").last.text_content()
        )
        totals = page.locator("#totals").text_content()
        assert " in · " in totals and " out · $" in totals
        if backend == "asyncio":
            save_screenshot(page, "ui-parallel-tools.png")


@pytest.mark.parametrize("backend", BACKENDS)
def test_abort_from_the_page(page: Any, backend: str) -> None:
    with page_on(page, "ui_agents:demo", backend):
        send(page, "sleep 30")
        wait_first_bar(page)
        page.click("#abort")
        wait_status(page, "aborted")
        assert "Aborted" in page.locator(".msg.error").last.text_content()
        assert page.locator(".bar.error").count() >= 1  # the calls were answered "aborted"
        # The conversation goes on after the abort.
        send(page, "2+2 please")
        wait_status(page, "idle")
        assert "2+2 = 4" in page.locator(".log").text_content()


def offset_of_tool_start(database_url: str, run_id: str, tool_name: str) -> int:
    """The offset of the run's first ``tool_execution_start`` of ``tool_name``."""
    import anyio

    from pi_core.durable import DurableRuns

    async def read() -> int:
        async with DurableRuns(database_url) as runs:
            async for offset, event in runs.events(run_id):
                if isinstance(event, ToolExecutionStart) and event.tool_name == tool_name:
                    return offset
        raise AssertionError(f"no call of {tool_name} in the run")

    # In a thread of its own: Playwright's sync API keeps an event loop running in this one.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(anyio.run, read).result(timeout=60)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_durable_run_started_from_the_cli_shows_and_streams(
    page: Any, backend: str, tmp_path: Any
) -> None:
    from durable._workers import running_worker, start_counting_run, wait_until

    database_url = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    work = tmp_path / "counts"
    with running_worker(database_url, "w1", stall=True):
        run_id = start_counting_run(database_url, work)
        wait_until((work / "slow").exists, "the slow tool to start")
        with served_page(
            "--backend", backend, "--db", database_url, "--agent", "ui_agents:demo"
        ) as (
            _,
            url,
        ):
            open_page(page, url)
            page.click(f"#runs li[data-run-id='{run_id}']", timeout=WAIT_MS)
            # Followed from the start: both marks done, the slow call still running, live.
            page.wait_for_selector("[data-tool-call-id='mark-b'].done", timeout=WAIT_MS)
            page.wait_for_selector("[data-tool-call-id='slow-1']:not(.done)", timeout=WAIT_MS)
            assert page.locator("[data-tool-call-id='mark-a'].done").count() == 1
            assert "Setting the marks." in page.locator(".log").text_content()
            assert (
                page.locator(f"#runs li[data-run-id='{run_id}'] .state").text_content() == "running"
            )
            if backend == "asyncio":
                save_screenshot(page, "ui-durable-run.png")
            # From an offset: only what came after it (the slow call's turn).
            slow_start = offset_of_tool_start(database_url, run_id, "slow")
            page.fill("#offset", str(slow_start - 1))
            page.click(f"#runs li[data-run-id='{run_id}']")
            page.wait_for_selector("[data-tool-call-id='slow-1']", timeout=WAIT_MS)
            assert page.locator("[data-tool-call-id='mark-a']").count() == 0
            # Act on it: the abort reaches the worker, and the followed stream shows the end.
            page.click("#abort")
            page.wait_for_selector("[data-tool-call-id='slow-1'].error", timeout=WAIT_MS)


def test_sub_agent_calls_are_drawn_under_their_parent_call(page: Any) -> None:
    with page_on(page, "ui_agents:demo"):
        send(page, "research the time and 17 * 23")
        wait_status(page, "idle")
        parents = page.locator(".lane.has-children")
        assert parents.count() == 2
        children = page.locator(".lane.child [data-tool-call-id]")
        assert children.count() >= 6  # each child ran sleep, calculate and now
        labels = page.locator(".lane.child .lane-label").all_text_contents()
        assert any(label.startswith("↳ calculate → 17 * 23 = 391") for label in labels)
        save_screenshot(page, "ui-sub-agents.png")


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_pending_approval_is_shown_and_approved(page: Any, backend: str) -> None:
    with page_on(page, "ui_agents:approving", backend):
        send(page, "delete my notes")
        wait_status(page, "waiting for approval")
        card = page.locator(".approval")
        assert card.count() == 1
        assert "delete_file" in card.text_content() and "deletes notes.txt" in card.text_content()
        pending = page.locator(".bar.pending")
        assert pending.count() == 1
        call_id = pending.get_attribute("data-tool-call-id")
        if backend == "asyncio":
            save_screenshot(page, "ui-approval.png")
        page.click("[data-approve]")
        wait_status(page, "idle")
        assert page.locator(".approval").count() == 0
        assert (
            "delete_file: deleted notes.txt" in page.locator(".msg.assistant").last.text_content()
        )
        assert page.locator(f".bar.done[data-tool-call-id='{call_id}']").count() == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_stop_from_the_page_finishes_the_turn(page: Any, backend: str) -> None:
    with page_on(page, "ui_agents:demo", backend):
        send(page, "sleep 1.5 and 6*7")
        wait_first_bar(page)
        page.click("#stop")
        wait_status(page, "idle")
        # The turn's calls finished (none was cut), and no second turn was asked for.
        assert page.locator(".bar.done").count() == 3
        assert page.locator(".bar.error").count() == 0
        assert page.locator(".turn").count() == 1


def test_a_pending_call_denied_on_the_page_ends_as_an_error(page: Any) -> None:
    with page_on(page, "ui_agents:approving"):
        send(page, "delete my notes")
        wait_status(page, "waiting for approval")
        call_id = page.locator(".bar.pending").get_attribute("data-tool-call-id")
        page.click("[data-deny]")
        wait_status(page, "idle")
        assert page.locator(".approval").count() == 0
        # The model was told the call was denied, and why; the call's bar is an error.
        reply = page.locator(".msg.assistant").last.text_content()
        assert "delete_file: Tool call denied: denied on the page" in reply
        assert page.locator(f".bar.error[data-tool-call-id='{call_id}']").count() == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_steering_from_the_page_reaches_the_next_turn(page: Any, backend: str) -> None:
    with page_on(page, "ui_agents:demo", backend):
        send(page, "sleep 3 and 6*7")  # time to type while the tools run
        wait_first_bar(page)
        page.fill("#input", "keep it short")
        page.click("#steer")
        wait_status(page, "idle")
        log = page.locator(".log").text_content()
        assert "Steering queued: keep it short" in log
        # The steering message entered the run after the tools, and the second turn saw it.
        assert (
            'You said: "keep it short". Noted.'
            in page.locator(".msg.assistant").last.text_content()
        )
        assert page.locator(".turn").count() == 2


def test_a_server_with_a_token_asks_for_it_on_the_page(page: Any) -> None:
    env = {"PI_CORE_UI_TOKEN": "page-token-1"}
    with served_page("--agent", "ui_agents:demo", "--token-env", "PI_CORE_UI_TOKEN", env=env) as (
        _,
        url,
    ):
        page.goto(url + "/")
        page.wait_for_selector("body[data-ready=sign-in]", timeout=WAIT_MS)
        assert page.locator("#view").is_hidden()
        page.fill("#token", "wrong")
        page.click("#sign-in button")  # the page starts again, and says the token was refused
        page.wait_for_selector("#sign-in-error:has-text('refused')", timeout=WAIT_MS)
        page.fill("#token", "page-token-1")
        page.click("#sign-in button")
        page.wait_for_selector("body[data-ready=true]", timeout=WAIT_MS)
        assert page.locator("#sign-in").is_hidden()
        send(page, "6*7")
        wait_status(page, "idle")
        assert "6*7 = 42" in page.locator(".log").text_content()


def test_a_durable_run_waiting_for_approval_is_approved_from_the_page(
    page: Any, tmp_path: Any
) -> None:
    from durable._approving_agents import TARGET
    from durable._counting_agents import counts
    from durable._workers import client, running_worker, wait_until

    database_url = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    work = tmp_path / "counts"
    work.mkdir()

    def ask(call: Any) -> Any:  # in a thread of its own, beside Playwright's event loop
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            return pool.submit(client, database_url, call).result(timeout=60)

    with running_worker(database_url, "w1", target=TARGET):
        run_id = ask(lambda runs: runs.start("sending", "go", params={"dir": str(work)}))
        wait_until(
            lambda: ask(lambda runs: runs.status(run_id)).state == "waiting",
            "the run to wait for its call",
        )
        with served_page("--db", database_url, "--agent", "ui_agents:demo") as (_, url):
            open_page(page, url)
            page.click(f"#runs li[data-run-id='{run_id}']", timeout=WAIT_MS)
            card = page.locator(".approval")
            card.wait_for(timeout=WAIT_MS)
            assert "sends 5 to bob" in card.text_content()
            page.click("[data-approve]")
            page.wait_for_selector(
                ".msg.assistant:has-text('send: sent 5 to bob')", timeout=WAIT_MS
            )
    assert counts(work) == {"model": 2, "mark": 1, "send": 1}  # approved once, run once
