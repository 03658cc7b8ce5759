"""The model catalogue: every model pi-ai knows, with its api, limits and prices.

``get_model("anthropic", "claude-sonnet-4-5")`` returns a ready :class:`~pi_core.Model`: the api
that selects the provider, the base URL, the context window, the output limit, whether it
reasons, what input it takes and what its tokens cost (so ``Usage.cost`` is filled in), plus the
extra headers some providers need and the compatibility settings of its server
(:class:`~pi_core.ModelCompat`) where the original has them. The data is generated from the
catalogue of pi-ai, the TypeScript Pi's provider package, by ``scripts/generate_models.py``;
:data:`CATALOGUE_VERSION` names the pi-ai version it came from.

Importing :mod:`pi_core` does not load the catalogue; importing this module does not parse it
either: the data is read on the first lookup and each :class:`~pi_core.Model` is built once, when
it is first asked for.

A model not in the catalogue (a local server, a fine-tune, a model newer than the data) is
described by hand with :class:`~pi_core.Model`, or by copying a close one with
``attrs.evolve(get_model(...), id=...)``.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from ._compat import ModelCompat
from ._exceptions import PiCoreError
from ._messages import Model, ModelCost
from ._models_data import CATALOGUE_SOURCE, CATALOGUE_VERSION, PROVIDERS, ROWS
from ._public import publish_module_names
from ._thinking import clamp_thinking_level, supported_thinking_levels

__all__ = [
    "CATALOGUE_SOURCE",
    "CATALOGUE_VERSION",
    "ModelNotFoundError",
    "api_key_env",
    "clamp_thinking_level",
    "get_model",
    "get_models",
    "get_providers",
    "supported_thinking_levels",
]


publish_module_names(globals(), ["clamp_thinking_level", "supported_thinking_levels"], __name__)


class ModelNotFoundError(PiCoreError, LookupError):
    """Raised by :func:`get_model` and :func:`get_models` for a provider or model id that the
    catalogue does not have; the message names the closest ones it does have."""


def get_providers() -> list[str]:
    """The providers of the catalogue, sorted (``"anthropic"``, ``"google"``, ``"openai"`` …)."""
    return list(PROVIDERS)


def get_models(provider: str) -> list[Model]:
    """Every model of ``provider``, sorted by id.

    Raises:
        ModelNotFoundError: the catalogue has no such provider.
    """
    return [_build(row) for row in _rows_of(provider).values()]


def get_model(provider: str, model_id: str | None = None) -> Model:
    """The model ``model_id`` of ``provider``; or, given one argument, the model of a name
    ``"provider/id"`` (``get_model("openai/gpt-4o-mini")``, as ``pi-core --model`` and
    ``Agent(model=...)`` take it: the provider is what comes before the first ``/``).

    Raises:
        ModelNotFoundError: the catalogue has no such provider or no such model of it, or a name
            has no ``/``; the message names the closest ones it has.
    """
    if model_id is None:
        provider, _, model_id = provider.partition("/")
        if not model_id:
            raise ModelNotFoundError(_not_a_name(provider))
    rows = _rows_of(provider)
    row = rows.get(model_id)
    if row is None:
        raise ModelNotFoundError(
            f"Unknown model {model_id!r} of provider {provider!r}{_suggest(model_id, rows)}"
        )
    return _build(row)


_MAKERS = ("anthropic", "google", "openai")
"""Providers that make the models they serve: their listing of a model is named first."""


def _not_a_name(text: str) -> str:
    """Why ``text`` is not a model name, with the names it may have meant (the maker's own
    listing first, then the shortest)."""
    import difflib  # only for the error message

    message = f"A model name is provider/id (e.g. 'openai/gpt-4o-mini'), not {text!r}"
    index = _index()
    if text in index:
        return f"{message}; {text!r} is a provider: get_models({text!r}) lists its models"
    ids = {model_id for rows in index.values() for model_id in rows}
    close = [text] if text in ids else difflib.get_close_matches(text, list(ids), n=1, cutoff=0.6)
    names = sorted(
        (
            f"{provider}/{model_id}"
            for model_id in close
            for provider, rows in index.items()
            if model_id in rows
        ),
        key=lambda name: (name.split("/")[0] not in _MAKERS, len(name), name),
    )
    return f"{message}; did you mean {', '.join(map(repr, names[:3]))}?" if names else message


_KEY_VARIABLES = {
    "google": "GEMINI_API_KEY",
    "google-vertex": "GOOGLE_CLOUD_API_KEY",
    "azure-openai-responses": "AZURE_OPENAI_API_KEY",
    "github-copilot": "GITHUB_TOKEN",
    "vercel-ai-gateway": "AI_GATEWAY_API_KEY",
    "moonshotai": "MOONSHOT_API_KEY",
    "moonshotai-cn": "MOONSHOT_API_KEY",
    "huggingface": "HF_TOKEN",
    "opencode-go": "OPENCODE_API_KEY",
    "kimi-coding": "KIMI_API_KEY",
    "cloudflare-workers-ai": "CLOUDFLARE_API_KEY",
    "cloudflare-ai-gateway": "CLOUDFLARE_API_KEY",
}


def api_key_env(provider: str) -> str:
    """The environment variable that holds the API key of ``provider`` by convention (the one
    the TypeScript Pi reads): ``GEMINI_API_KEY`` for ``"google"``, ``HF_TOKEN`` for
    ``"huggingface"``, else the provider's name in capitals with ``_API_KEY``
    (``"openai"`` → ``OPENAI_API_KEY``, ``"minimax-cn"`` → ``MINIMAX_CN_API_KEY``)."""
    known = _KEY_VARIABLES.get(provider)
    return known or provider.upper().replace("-", "_").replace(".", "_") + "_API_KEY"


def _rows_of(provider: str) -> dict[str, tuple[Any, ...]]:
    index = _index()
    rows = index.get(provider)
    if rows is None:
        raise ModelNotFoundError(f"Unknown provider {provider!r}{_suggest(provider, index)}")
    return rows


def _suggest(name: str, known: dict[str, Any]) -> str:
    import difflib  # only for the error message

    close = difflib.get_close_matches(name, list(known), n=3, cutoff=0.6)
    if not close:
        close = [key for key in known if name.lower() in key.lower()][:3]
    return f"; did you mean {', '.join(map(repr, close))}?" if close else ""


@functools.cache
def _index() -> dict[str, dict[str, tuple[Any, ...]]]:
    """Provider → model id → data row, parsed once."""
    index: dict[str, dict[str, tuple[Any, ...]]] = {provider: {} for provider in PROVIDERS}
    for row in json.loads(ROWS):
        index.setdefault(row[0], {})[row[1]] = tuple(row)
    return index


_built: dict[tuple[str, str], Model] = {}


def _build(row: tuple[Any, ...]) -> Model:
    """The model of a data row, built on first use and then shared (models are frozen)."""
    key = (row[0], row[1])
    model = _built.get(key)
    if model is None:
        model = _built[key] = _make_model(row)
    return model


def _make_model(row: tuple[Any, ...]) -> Model:
    (provider, model_id, name, api, base_url, reasoning, inputs, cost, window, limit, headers) = (
        row[:11]
    )
    return Model(
        model_id,
        name=name,
        api=api,
        provider=provider,
        base_url=base_url,
        reasoning=bool(reasoning),
        input=tuple(inputs),
        cost=_cost(cost, row[12] if len(row) > 12 else None),
        context_window=window,
        max_tokens=limit,
        headers=dict(headers) if headers else None,
        compat=_compat(row[11]),
        **_rest(row[12] if len(row) > 12 else None),
    )


def _rest(record: dict[str, Any] | None) -> dict[str, Any]:
    """The Model fields of a row's last column (newer catalogues' fields)."""
    if not record:
        return {}
    return {
        "type": record.get("type"),
        "thinking_level_map": record.get("thinkingLevelMap"),
        "prompt_cache": record.get("promptCache"),
        "input_limits": record.get("inputLimits"),
    }


def _cost(prices: list[float], record: dict[str, Any] | None) -> ModelCost:
    tiers = (record or {}).get("costTiers")
    input, output, cache_read, cache_write = map(float, prices)
    return ModelCost(input, output, cache_read, cache_write, list(tiers) if tiers else None)


def _compat(record: dict[str, Any] | None) -> ModelCompat | None:
    """The TypeScript Pi's ``compat`` record (camelCase) as a :class:`~pi_core.ModelCompat`."""
    if not record:
        return None
    from .serialization import from_dict  # cattrs only when a model has compat settings

    return from_dict(record, ModelCompat)
