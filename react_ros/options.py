"""A dataset kind's own options, declared once and read from every entry point.

Each kind declares a small frozen dataclass whose fields are made with
`option()`: default, help text and validation sit next to each other. From
that one declaration come the CLI flags of `play`/`convert`/`info`
(`--tactile-latency`), the player node's ROS parameters (`tactile_latency`)
and the launch file's arguments (`tactile_latency:=15`). Values arrive as
Python values (CLI, tests), as ROS parameter values of any type (`-p x:=2` is
an integer even for a float option) or as launch strings; `Option.coerce`
turns each into the declared type or says what is wrong.

Supported types: bool, int, float, str, and `int | None` etc. (None = unset,
spelled '' in a launch argument and left undeclared-valued as a parameter).
"""
from __future__ import annotations

import dataclasses
import math
import types
import typing
from dataclasses import dataclass
from typing import Any, Callable, Sequence, TypeVar

from react_ros.errors import ReactRosError

_SPEC = 'react_ros.option'
TRUE, FALSE = ('true', '1', 'yes', 'on'), ('false', '0', 'no', 'off')


@dataclass(frozen=True)
class _Spec:
    help: str
    metavar: str | None
    choices: tuple[str, ...] | None
    check: Callable[[Any], str | None] | None


def option(default: Any, help: str, *, metavar: str | None = None,
           choices: Sequence[str] | None = None,
           check: Callable[[Any], str | None] | None = None) -> Any:
    """A field of a kind's options. `check(value)` returns why a value is wrong, or None."""
    return dataclasses.field(default=default, metadata={_SPEC: _Spec(
        help, metavar, tuple(choices) if choices else None, check)})


def at_least(low: float) -> Callable[[Any], str | None]:
    return lambda v: None if v is None or v >= low else f'must be >= {low:g}, got {v}'


@dataclass(frozen=True)
class Option:
    """One declared option, as every entry point needs it."""

    name: str  # the field, the ROS parameter and the launch argument
    type: type  # bool, int, float or str
    optional: bool  # None allowed (means "not set")
    default: Any
    help: str
    metavar: str | None
    choices: tuple[str, ...] | None
    check: Callable[[Any], str | None] | None

    @property
    def flag(self) -> str:
        return '--' + self.name.replace('_', '-')

    def coerce(self, value: Any, source: str | None = None) -> Any:
        """`value` (Python, ROS parameter or launch text) as the declared type."""
        where = source or self.flag
        if isinstance(value, str) and value == '' and self.optional:
            return None
        if value is None:
            if self.optional:
                return None
            raise ReactRosError(f'{where}: a value is required')
        try:
            out = self._convert(value)
        except (TypeError, ValueError):
            raise ReactRosError(f'{where}: expected {self._expected()}, got {value!r}') from None
        why = self._why_wrong(out)
        if why:
            raise ReactRosError(f'{where}: {why}')
        return out

    def text(self, value: Any) -> str:
        """`value` as a launch argument spells it."""
        if value is None:
            return ''
        if isinstance(value, bool):
            return 'true' if value else 'false'
        return str(value)

    def _convert(self, value: Any) -> Any:
        if self.type is bool:
            if isinstance(value, bool):
                return value
            if isinstance(value, str) and value.lower() in TRUE + FALSE:
                return value.lower() in TRUE
            raise ValueError
        if self.type is int:
            if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                raise ValueError
            return int(value)
        if self.type is float:
            if isinstance(value, bool):
                raise ValueError
            return float(value)
        if not isinstance(value, str):
            raise ValueError
        return value

    def _why_wrong(self, value: Any) -> str | None:
        if self.type is float and not math.isfinite(value):
            return f'must be a finite number, got {value}'
        if self.choices is not None and value not in self.choices:
            return f'must be one of {", ".join(self.choices)}, got {value!r}'
        return self.check(value) if self.check is not None else None

    def _expected(self) -> str:
        names = {bool: 'true or false', int: 'an integer', float: 'a number', str: 'a string'}
        return names[self.type] + (' (or empty for none)' if self.optional else '')


T = TypeVar('T', bound='KindOptions')


class KindOptions:
    """Base of a kind's options dataclass (declare it `@dataclass(frozen=True)`)."""

    def __post_init__(self) -> None:
        # Checked here, so every entry point (CLI, node, launch, a test) gets the
        # same refusal for the same value.
        for opt in options_of(type(self)):
            value = getattr(self, opt.name)
            coerced = opt.coerce(value)
            if coerced != value or type(coerced) is not type(value):
                object.__setattr__(self, opt.name, coerced)

    @classmethod
    def from_values(cls: type[T], values: dict[str, Any],
                    source: Callable[[Option], str] | None = None) -> T:
        """Build from raw values by field name; what is missing keeps its default."""
        kwargs = {}
        for opt in options_of(cls):
            if opt.name in values:
                kwargs[opt.name] = opt.coerce(values[opt.name], source(opt) if source else None)
        return cls(**kwargs)


@dataclass(frozen=True)
class NoOptions(KindOptions):
    """A kind with no options of its own."""


def options_of(cls: type) -> tuple[Option, ...]:
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        spec = f.metadata.get(_SPEC)
        if spec is None:
            raise TypeError(f'{cls.__name__}.{f.name}: declare kind options with option()')
        base, optional = _unwrap(hints[f.name])
        out.append(Option(f.name, base, optional, f.default, spec.help, spec.metavar,
                          spec.choices, spec.check))
    return tuple(out)


def _unwrap(hint: Any) -> tuple[type, bool]:
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1 and rest[0] in (bool, int, float, str):
            return rest[0], True
    elif hint in (bool, int, float, str):
        return hint, False
    raise TypeError(f'unsupported option type {hint!r}')


__all__ = ['KindOptions', 'NoOptions', 'Option', 'at_least', 'option', 'options_of']
