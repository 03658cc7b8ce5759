"""Providers: stream functions that turn a model call into the provider stream protocol.

Each provider lives in its own module and is imported by name, so that importing one never pulls
in the dependencies of another:

* :mod:`pi_core.providers.faux` — :class:`~pi_core.providers.faux.FauxProvider`, a scripted model
  for tests and demos (scripted replies, chunked streaming, abort, usage and cache simulation).
* :mod:`pi_core.providers.openai` — api ``"openai-completions"`` (OpenAI-compatible Chat
  Completions).
* :mod:`pi_core.providers.anthropic` — api ``"anthropic-messages"`` (Anthropic Messages API).
* :mod:`pi_core.providers.openai_responses` — api ``"openai-responses"`` (OpenAI Responses API).
* :mod:`pi_core.providers.google` — api ``"google-generative-ai"`` (Google Gemini API).

:func:`pi_core.stream_simple` reaches the four real providers by their ``api`` without any
registration, importing a provider's module when a model of its api is first streamed. Another
provider is reached through it once registered under its ``api`` with
:func:`pi_core.register_provider`, or used directly as an agent's ``stream_fn``.
"""
