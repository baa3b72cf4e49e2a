"""The kind kit: what a dataset kind's author builds and tests a kind with.

    react_ros.kit.contract   KindContract: the generic checks every kind passes
    react_ros.kit.bad_input  Refused / Accepted: a kind's tables of bad input
    react_ros.kit.release    sample releases, convert-all runs and what they leave
    react_ros.kit.live       a subscriber node in the test process, player subprocesses
    react_ros.kit.template/  a kind folder to copy (docs/kinds.md, "Adding a dataset kind")

Only tests import it: it needs pytest and rosbags (requirements/test.txt), which the
package itself does not. Nothing is imported until a name is used, so the template's
modules import without them.
"""
from __future__ import annotations

import importlib
from typing import Any

_NAMES = {
    'KindContract': 'contract', 'Refused': 'bad_input', 'Accepted': 'bad_input',
    'tree_digest': 'bad_input', 'write_release': 'release',
}


def __getattr__(name: str) -> Any:
    if name not in _NAMES:
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    return getattr(importlib.import_module(f'{__name__}.{_NAMES[name]}'), name)


__all__ = sorted(_NAMES)
