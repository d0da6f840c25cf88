"""What makes two targets the same target, in named parts (as a scorer's, in
``evaldag._scorer.fingerprint``).

A function's parts are what it reaches: its code, its closure and default values, and the
helpers, classes and module constants of the user's modules it uses. An agent's are its model
settings (without credentials, nor how its calls travel), instructions, step limit, and each
tool's schema and what its function reaches. A workflow's are its Hamilton config and fixed
inputs (without credentials), its final variables, the input an item's input goes to, and what
the function of each node that runs reaches.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evaldag._judge.settings import reply_settings
from evaldag._scorer.fingerprint import Parts, digest
from evaldag._scorer.reach import SECRET, Reach, masked
from evaldag._targets.agent import Agent
from evaldag._targets.workflow import Workflow

TARGET = "the target"


def target_parts(target: Any) -> Parts:
    """Everything about ``target`` (a callable, an agent or a workflow; None for none) that
    decides its outputs."""
    if target is None:
        return {}
    reach = Reach()
    parts: dict[str, Any] = {}
    if isinstance(target, Agent):
        parts = {
            "its model settings": reply_settings(target.model),
            "its instructions": target.instructions,
            "its max_steps": target.max_steps,
        }
        for tool in target.tools:
            parts[f"tool '{tool.name}': its schema"] = tool.schema
            reach.add(tool.function, f"tool '{tool.name}': ")
    elif isinstance(target, Workflow):
        parts = {
            "its config": _settings(reach, target.driver.graph.config, "its config"),
            "its inputs": _settings(reach, target.inputs, "its inputs"),
            "its final variables": list(target.final_vars),
            "its input name": target.input_name,
        }
        functions: dict[str, Any] = {}
        for name in sorted(target.nodes):
            for fn in target.driver.graph.nodes[name].originating_functions or ():
                functions.setdefault(f"{fn.__module__}.{fn.__qualname__}", fn)
        for where, fn in sorted(functions.items()):
            reach.add(fn, f"function {where}: ")
    else:
        reach.add(target)
    return {TARGET: {label: digest(data) for label, data in {**parts, **reach.parts}.items()}}


def _settings(reach: Reach, settings: Mapping[str, Any], label: str) -> list[Any]:
    """Config or inputs as data, credentials counted by presence only."""
    return [
        [name, SECRET if masked(name, value) else reach.value(value, f"{label}: {name}")]
        for name, value in settings.items()
    ]
