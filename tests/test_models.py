"""The model catalogue: lookups, errors, the shipped data, its generator and lazy loading."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from pi_core import Model, ModelCompat, ModelCost, PiCoreError, serialization
from pi_core.models import (
    CATALOGUE_VERSION,
    ModelNotFoundError,
    api_key_env,
    get_model,
    get_models,
    get_providers,
)

ROOT = Path(__file__).resolve().parent.parent
GENERATOR = ROOT / "scripts" / "generate_models.py"
SHIPPED = ROOT / "src" / "pi_core" / "_models_data.py"


def load_module(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- lookups ------------------------------------------------------------------------------------


def test_every_model_of_every_provider_is_a_complete_model() -> None:
    providers = get_providers()
    assert providers == sorted(providers)
    assert {"anthropic", "openai", "google"} <= set(providers)
    assert len(providers) == 43
    assert get_models("typesafe") == []  # it lists classifier models only, no chat models
    total = 0
    for provider in providers:
        models = get_models(provider)
        assert [model.id for model in models] == sorted(model.id for model in models)
        for model in models:
            total += 1
            assert model.provider == provider and model.type == "chat"
            assert model.api, model
            assert model.base_url.startswith("http") or "azure" in (model.api, provider), model
            assert model.context_window > 0 and model.max_tokens > 0, model
            assert set(model.input) <= {"text", "image"} and "text" in model.input
            assert all(price >= 0 for price in vars_of(model.cost)), model
            assert get_model(provider, model.id) is model  # built once, then shared
    assert total > 500


def vars_of(cost: ModelCost) -> list[float]:
    return [cost.input, cost.output, cost.cache_read, cost.cache_write]


def test_a_model_answers_with_the_row_it_was_generated_from() -> None:
    rows = json.loads(load_module(SHIPPED, "_shipped_models").ROWS)
    for row in rows[:: max(1, len(rows) // 40)]:
        provider, model_id, name, api, base_url, reasoning, inputs, cost, window, limit, headers = (
            row[:11]
        )
        assert get_model(provider, model_id) == Model(
            model_id,
            name=name,
            api=api,
            provider=provider,
            base_url=base_url,
            reasoning=bool(reasoning),
            input=tuple(inputs),
            cost=ModelCost(cost[0], cost[1], cost[2], cost[3], row[12].get("costTiers")),
            context_window=window,
            max_tokens=limit,
            headers=headers,
            compat=serialization.from_dict(row[11], ModelCompat) if row[11] else None,
            type=row[12]["type"],
            thinking_level_map=row[12].get("thinkingLevelMap"),
            prompt_cache=row[12].get("promptCache"),
            input_limits=row[12].get("inputLimits"),
        )


def test_compat_settings_come_with_the_models_that_have_them() -> None:
    rows = json.loads(load_module(SHIPPED, "_shipped_models").ROWS)
    with_compat = [row for row in rows if row[11]]
    assert with_compat
    for row in with_compat:
        compat = get_model(row[0], row[1]).compat
        assert compat is not None
        assert serialization.to_dict(compat) == row[11]  # every setting, none lost


def test_prices_fill_in_usage_cost() -> None:
    from pi_core.providers._common import make_usage

    model = get_model("anthropic", "claude-sonnet-4-5")
    usage = make_usage(model, input=1_000_000, output=0, cache_read=0, cache_write=0)
    assert usage.cost.total == model.cost.input > 0


def test_unknown_names_raise_with_the_closest_matches() -> None:
    with pytest.raises(ModelNotFoundError, match=r"Unknown provider 'anthropc'.*'anthropic'"):
        get_model("anthropc", "claude-sonnet-4-5")
    with pytest.raises(ModelNotFoundError, match=r"Unknown provider 'nobody'$"):
        get_models("nobody")
    with pytest.raises(ModelNotFoundError) as caught:
        get_model("anthropic", "claude-sonet-4-5")
    assert "did you mean 'claude-sonnet-4-5'" in str(caught.value)
    assert isinstance(caught.value, PiCoreError) and isinstance(caught.value, LookupError)


def test_a_model_name_is_the_provider_then_the_id() -> None:
    assert get_model("openai/gpt-4o-mini") is get_model("openai", "gpt-4o-mini")
    # The provider ends at the first slash; an id may have slashes of its own.
    routed = get_model("openrouter/openai/gpt-4o-mini")
    assert (routed.provider, routed.id) == ("openrouter", "openai/gpt-4o-mini")


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            "gpt-4o",
            "A model name is provider/id (e.g. 'openai/gpt-4o-mini'), not 'gpt-4o'; "
            "did you mean 'openai/gpt-4o', ",
        ),
        ("gpt-4o-mni", "not 'gpt-4o-mni'; did you mean 'openai/gpt-4o-mini', "),
        ("openai", "not 'openai'; 'openai' is a provider: get_models('openai') lists its models"),
        ("no-such-thing-at-all", "not 'no-such-thing-at-all'"),
        ("openai/gpt-4o-mni", "Unknown model 'gpt-4o-mni' of provider 'openai'; did you mean"),
        ("opnai/gpt-4o", "Unknown provider 'opnai'; did you mean 'openai'"),
    ],
)
def test_a_bad_model_name_says_what_a_name_is_and_what_was_meant(name: str, message: str) -> None:
    with pytest.raises(ModelNotFoundError) as caught:
        get_model(name)
    assert message in str(caught.value)


def test_api_key_variables_follow_the_typescript_names() -> None:
    assert api_key_env("openai") == "OPENAI_API_KEY"
    assert api_key_env("google") == "GEMINI_API_KEY"
    assert api_key_env("minimax-cn") == "MINIMAX_CN_API_KEY"
    assert api_key_env("huggingface") == "HF_TOKEN"


def test_importing_pi_core_leaves_the_catalogue_alone() -> None:
    code = (
        "import sys, pi_core, pi_core.providers.openai; "
        "assert 'pi_core.models' not in sys.modules and 'pi_core._models_data' not in sys.modules; "
        "import pi_core.models as m; assert not m._built; print('ok')"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.stdout.strip() == "ok", done.stderr


# --- the generator ------------------------------------------------------------------------------

FAKE_CATALOGUE = """\
export const MODELS = {
    "acme": {
        "rocket-1": {
            id: "rocket-1", name: "Rocket \\u00e9 \\"1\\"", api: "openai-completions",
            provider: "acme", baseUrl: "https://acme.test/v1", reasoning: true,
            input: ["text", "image"],
            cost: { input: 1.5, output: 6, cacheRead: 0.15, cacheWrite: 0 },
            contextWindow: 128000, maxTokens: 8192,
            compat: { supportsStore: false, maxTokensField: "max_tokens" },
            type: "chat", thinkingLevelMap: { off: null, max: "max" },
        },
        "anvil": {
            id: "anvil", name: "Anvil", api: "anthropic-messages", provider: "acme",
            baseUrl: "https://acme.test", reasoning: false, input: ["text"],
            cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
            contextWindow: 1000, maxTokens: 100, headers: { "X-Acme": "yes" },
        },
    },
};
"""


@pytest.fixture
def fake_package(tmp_path: Path) -> Path:
    if shutil.which("node") is None:
        pytest.skip("node is not on PATH; the generator reads pi-ai's catalogue with it")
    package = tmp_path / "package"
    (package / "dist").mkdir(parents=True)
    (package / "package.json").write_text(json.dumps({"name": "x", "version": "9.8.7"}))
    (package / "dist" / "models.generated.js").write_text(FAKE_CATALOGUE)
    return package


def test_the_generator_writes_rows_that_read_back(fake_package: Path, tmp_path: Path) -> None:
    output = tmp_path / "data.py"
    generator = load_module(GENERATOR, "_generate_models")
    assert generator.main(["--package", str(fake_package), "--output", str(output)]) == 0
    data = load_module(output, "_fake_models")
    assert data.CATALOGUE_VERSION == "9.8.7"
    assert data.PROVIDERS == ["acme"]
    assert "pi-ai 9.8.7" in output.read_text()
    rows = json.loads(data.ROWS)
    assert rows == [
        ["acme", "anvil", "Anvil", "anthropic-messages", "https://acme.test", 0, ["text"],
         [0, 0, 0, 0], 1000, 100, {"X-Acme": "yes"}, None, None],
        ["acme", "rocket-1", 'Rocket é "1"', "openai-completions", "https://acme.test/v1", 1,
         ["text", "image"], [1.5, 6, 0.15, 0], 128000, 8192, None,
         {"supportsStore": False, "maxTokensField": "max_tokens"},
         {"type": "chat", "thinkingLevelMap": {"off": None, "max": "max"}}],
    ]  # fmt: skip


def test_the_shipped_data_names_its_source() -> None:
    text = SHIPPED.read_text()
    assert f"@earendil-works/pi-ai {CATALOGUE_VERSION} " in text
    assert "scripts/generate_models.py" in text


def test_the_docs_example_runs() -> None:
    page = (ROOT / "docs" / "models.md").read_text()
    example = re.findall(r"```python\n(.*?)```", page, flags=re.S)[0]
    done = subprocess.run(
        [sys.executable, "-c", example], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "anthropic-messages https://api.anthropic.com" in done.stdout
