"""A model given by its catalogue name, ``"provider/id"``, as ``Agent(model=...)`` takes it."""

from __future__ import annotations

import importlib

from ._messages import Model

__all__ = ["as_model"]


def as_model(model: Model | str) -> Model:
    """``model`` itself, or for a name the catalogue's model of that name.

    The catalogue (:mod:`pi_core.models`) sits above the core, so it is imported here, by name,
    on the first name given: ``import pi_core`` never loads it.

    Raises:
        pi_core.models.ModelNotFoundError: the catalogue has no model of that name; the message
            names the closest ones it has.
    """
    if not isinstance(model, str):
        return model
    catalogue = importlib.import_module("pi_core.models")
    found: Model = catalogue.get_model(model)
    return found
