"""Sample episode generators, one per dataset, faithful to its format document."""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Mapping

from react_ros.samples.react import write_react_sample
from react_ros.samples.umi import write_umi_sample

SAMPLES: Mapping[str, Callable[..., Path]] = {
    'umi': write_umi_sample,
    'react': write_react_sample,
}
