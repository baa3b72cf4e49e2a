"""Side files read as text: missing, unreadable, non-UTF-8 and unparsable files refused
with one message naming the file, before any value in them is looked at."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from react_ros.errors import DatasetFormatError


def read_text(path: Path) -> str:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise DatasetFormatError(path, 'file is missing') from None
    except IsADirectoryError:
        raise DatasetFormatError(path, 'is a folder, not a file') from None
    except OSError as exc:
        raise DatasetFormatError(path, f'cannot be read ({exc.strerror})') from None
    try:
        return raw.decode('utf-8')
    except UnicodeDecodeError as exc:
        raise DatasetFormatError(path, f'not UTF-8 text (byte {exc.start})') from None


def read_yaml(path: Path, required: bool = True) -> Any:
    """The YAML document of `path`; None for a missing file that is not required."""
    if not required and not path.exists():
        return None
    text = read_text(path)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise DatasetFormatError(path, f'not valid YAML ({exc})'.replace('\n', ' ')) from None


__all__ = ['read_text', 'read_yaml']
