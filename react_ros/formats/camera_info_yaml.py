"""A camera-info YAML (ROS's CameraInfo layout: width, height, distortion_model, d, k, r, p),
checked value by value where it is read.

UMI ships one per camera (`meta/sensor/<cam>.metadata_interface.camera_info.meta.yaml`).
Every value that reaches a sensor_msgs/CameraInfo is checked for type, count and
finiteness here, so a message is never written that a reader cannot deserialise
(an R of 4 numbers, say) or that projects nowhere (NaN in K). Errors name the file
and the key.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from react_ros.errors import DatasetFormatError
from react_ros.formats.text_files import read_yaml

# Distortion models ROS 2 names (sensor_msgs/distortion_models.hpp) and their D lengths.
D_LENGTHS = {'plumb_bob': (5,), 'rational_polynomial': (8,), 'equidistant': (4,)}
IDENTITY = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]


def _numbers(doc: dict[str, Any], key: str, count: int, path: Path,
             default: list[float] | None = None) -> list[float]:
    if key not in doc or doc[key] is None:
        if default is not None:
            return list(default)
        raise DatasetFormatError(path, f'key {key!r} is missing')
    value = doc[key]
    if not isinstance(value, list):
        raise DatasetFormatError(path, f'{key!r} must be a list of {count} numbers, '
                                 f'not {value!r}')
    if len(value) != count:
        raise DatasetFormatError(path, f'{key!r} must hold {count} numbers, it holds '
                                 f'{len(value)}')
    return [_number(v, key, path) for v in value]


def _number(v: Any, key: str, path: Path) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise DatasetFormatError(path, f'{key!r} must hold numbers, not {v!r}')
    if not math.isfinite(v):
        raise DatasetFormatError(path, f'{key!r} must hold finite numbers, not {v}')
    return float(v)


def _size(doc: dict[str, Any], key: str, path: Path) -> int:
    value = doc.get(key)
    if value is None:
        raise DatasetFormatError(path, f'key {key!r} is missing')
    if isinstance(value, bool) or not isinstance(value, int):
        raise DatasetFormatError(path, f'{key!r} must be an integer number of pixels, '
                                 f'not {value!r}')
    if value <= 0:
        raise DatasetFormatError(path, f'{key!r} must be positive, not {value}')
    return value


def read_camera_info(path: Path) -> dict[str, Any]:
    """The file as a CameraInfo-layout dict with every field present and checked."""
    doc = read_yaml(path)
    if not isinstance(doc, dict):
        raise DatasetFormatError(path, f'expected a mapping of CameraInfo fields, not a '
                                 f'{type(doc).__name__}')
    width, height = _size(doc, 'width', path), _size(doc, 'height', path)
    model = doc.get('distortion_model', 'plumb_bob')
    if model not in D_LENGTHS:
        raise DatasetFormatError(path, f"'distortion_model' {model!r} is none of "
                                 f'{", ".join(D_LENGTHS)}')
    d = doc.get('d', [])
    if not isinstance(d, list):
        raise DatasetFormatError(path, f"'d' must be a list of numbers, not {d!r}")
    if d and len(d) not in D_LENGTHS[model]:
        raise DatasetFormatError(path, f"'d' holds {len(d)} numbers; {model} takes "
                                 f'{" or ".join(map(str, D_LENGTHS[model]))}')
    d = [_number(v, 'd', path) for v in d]
    k = _numbers(doc, 'k', 9, path)
    if k[0] <= 0 or k[4] <= 0:
        raise DatasetFormatError(path, f"'k' focal lengths must be positive, not "
                                 f'fx={k[0]}, fy={k[4]}')
    r = _numbers(doc, 'r', 9, path, IDENTITY)
    p = _numbers(doc, 'p', 12, path, [k[0], 0, k[2], 0, 0, k[4], k[5], 0, 0, 0, 1, 0])
    return {'width': width, 'height': height, 'distortion_model': model, 'd': d, 'k': k,
            'r': r, 'p': p}


__all__ = ['D_LENGTHS', 'read_camera_info']
