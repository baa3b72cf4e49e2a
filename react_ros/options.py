"""A dataset kind's own options, declared once and read from every entry point.

Each kind declares a small frozen dataclass whose fields are made with
`option()`: default, help text and validation sit next to each other. From
that one declaration come the CLI flags of `play`/`convert`/`info`
(`--tactile-latency`), the player node's ROS parameters (`tactile_latency`)
and the launch file's arguments (`tactile_latency:=15`). Values arrive as
Python values (CLI, tests), as ROS parameter values of any type (`-p x:=2` is
an integer even for a float option) or as launch strings; `Option.coerce`
turns each into the declared type or says what is wrong.

Supported types: bool, int, float, str, tuple[str, ...] (a list of words:
repeated on the command line, a string array or one comma-separated string as
a parameter or launch argument), and `int | None` etc. (None = unset, spelled
'' in a launch argument and left undeclared-valued as a parameter, or spelled
as the option's `unset` number there, which any negative value also means).

The player's options (react_ros/play_options.py) are declared the same way.
"""
from __future__ import annotations

import dataclasses
import math
import re
import types
import typing
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Sequence, TypeVar

from react_ros.errors import ReactRosError

_SPEC = 'react_ros.option'
TRUE, FALSE = ('true', '1', 'yes', 'on'), ('false', '0', 'no', 'off')


@dataclass(frozen=True)
class _Spec:
    help: str
    metavar: str | None
    choices: tuple[str, ...] | None
    check: Callable[[Any], str | None] | None
    short: str | None
    const: Any
    unset: float | None
    aliases: tuple[str, ...]


def option(default: Any, help: str, *, metavar: str | None = None,
           choices: Sequence[str] | None = None,
           check: Callable[[Any], str | None] | None = None, short: str | None = None,
           const: Any = None, unset: float | None = None,
           aliases: Sequence[str] = ()) -> Any:
    """A field of a kind's (or the player's) options.

    `check(value)` returns why a value is wrong, or None. `short` is the CLI
    flag's one-letter alias ('-r'); `aliases` are more CLI spellings of it (a
    name it had before, `--exclude` for `--exclude-topics`), listed after the
    flag; `const` is what the flag alone means (it then takes its value
    optionally, `--clock` = `--clock 100`); `unset` spells None where a surface
    needs a number (-1.0: ROS parameters had -1 = off).
    """
    return dataclasses.field(default=default, metadata={_SPEC: _Spec(
        help, metavar, tuple(choices) if choices else None, check, short, const, unset,
        tuple(aliases))})


def same_as(cls: type, name: str) -> Any:
    """Another options class's field `name`, declared there once (convert's --topics is
    play's)."""
    f = next(f for f in dataclasses.fields(cls) if f.name == name)
    return dataclasses.field(default=f.default, metadata=f.metadata)


def between(low: int, high: int) -> Callable[[Any], str | None]:
    return lambda v: None if v is None or low <= v <= high else f'must be {low}-{high}, got {v}'


def regular_expression(text: str) -> str | None:
    """Why `text` is no regular expression, or None ('' is none given)."""
    try:
        re.compile(text)
    except re.error as err:
        return f'not a regular expression: {err}'
    return None


def at_least(low: float) -> Callable[[Any], str | None]:
    return lambda v: None if v is None or v >= low else f'must be >= {low:g}, got {v:g}'


def above(low: float) -> Callable[[Any], str | None]:
    return lambda v: None if v is None or v > low else f'must be > {low:g}, got {v:g}'


@dataclass(frozen=True)
class Option:
    """One declared option, as every entry point needs it."""

    name: str  # the field, the ROS parameter and the launch argument
    type: type  # bool, int, float, str or tuple (of str)
    optional: bool  # None allowed (means "not set")
    default: Any
    help: str
    metavar: str | None
    choices: tuple[str, ...] | None
    check: Callable[[Any], str | None] | None
    short: str | None = None
    const: Any = None
    unset: float | None = None
    aliases: tuple[str, ...] = ()

    @property
    def flag(self) -> str:
        return '--' + self.name.replace('_', '-')

    @property
    def flags(self) -> tuple[str, ...]:
        """Every CLI spelling: the short one, the flag, then the aliases."""
        return ((self.short,) if self.short else ()) + (self.flag,) + self.aliases

    @property
    def expected(self) -> str:
        """What a value must be, for a refusal: 'a number', 'raw or h264'."""
        if self.choices is not None:
            return ' or '.join(self.choices)
        return self._expected()

    def read(self, value: Any) -> Any:
        """A ROS parameter's or launch argument's `value` as the declared type.

        Only the type (and the choices) are checked: ranges are the player's to
        refuse, for every caller alike. '' and, with `unset`, any negative
        number mean None. Raises ValueError.
        """
        if value is None or (value == '' and self.optional):
            if self.optional:
                return None
            raise ValueError(value)
        if self.type is bool and type(value) is int and value in (0, 1):
            return bool(value)  # `-p loop:=1` arrives as an integer
        out = self._convert(value)
        if self.unset is not None and out < 0:
            return None
        if self.choices is not None and out not in self.choices:
            raise ValueError(value)
        return out

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
            return '' if self.unset is None else str(self.unset)
        if isinstance(value, bool):
            return 'true' if value else 'false'
        if isinstance(value, tuple):
            return ','.join(value)
        return str(value)

    def parameter(self, value: Any) -> Any:
        """`value` as a ROS parameter holds it (None: declared without a value)."""
        if value is None:
            return '' if self.type is tuple else self.unset
        return ','.join(value) if isinstance(value, tuple) else value

    def _convert(self, value: Any) -> Any:
        if self.type is tuple:  # words: one string with commas or spaces, or a list
            items = value.replace(',', ' ').split() if isinstance(value, str) else value
            return tuple(str(v) for v in items if str(v))
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
        names = {bool: 'true or false', int: 'an integer', float: 'a number', str: 'a string',
                 tuple: 'words'}
        return names[self.type] + (' (or empty for none)' if self.optional else '')


T = TypeVar('T', bound='KindOptions')
O = TypeVar('O', bound='Options')


class Options:
    """Base of an options dataclass (declare it `@dataclass(frozen=True)`, its fields with
    option()): a kind's, the player's, convert's."""

    @classmethod
    def from_args(cls: type[O], args: Any) -> O:
        """From parsed CLI flags (an argparse.Namespace holding every field)."""
        return cls(**{opt.name: getattr(args, opt.name) for opt in options_of(cls)})

    def __post_init__(self) -> None:
        # Checked here, once, so every entry point (CLI, node, launch, a test) gets the
        # same refusal for the same value; a list given becomes the declared tuple.
        for opt in options_of(type(self)):
            value = getattr(self, opt.name)
            coerced = opt.coerce(value)
            if coerced != value or type(coerced) is not type(value):
                object.__setattr__(self, opt.name, coerced)


class KindOptions(Options):
    """Base of a kind's options dataclass (declare it `@dataclass(frozen=True)`)."""

    # The kind's options a convert-all run sets from its own option of the same name
    # (TrueTrace's verify follows the run's --verify): convert-all has no flag of the
    # kind's for them.
    FROM_RUN: ClassVar[frozenset[str]] = frozenset()

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
            raise TypeError(f'{cls.__name__}.{f.name}: declare options with option()')
        base, optional = _unwrap(hints[f.name])
        out.append(Option(f.name, base, optional, f.default, spec.help, spec.metavar,
                          spec.choices, spec.check, spec.short, spec.const, spec.unset,
                          spec.aliases))
    return tuple(out)


def _unwrap(hint: Any) -> tuple[type, bool]:
    if hint == tuple[str, ...]:
        return tuple, False
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1 and rest[0] in (bool, int, float, str):
            return rest[0], True
        if len(rest) == 1 and rest[0] == tuple[str, ...]:
            return tuple, True
    elif hint in (bool, int, float, str):
        return hint, False
    raise TypeError(f'unsupported option type {hint!r}')


__all__ = ['KindOptions', 'NoOptions', 'Option', 'Options', 'above', 'at_least', 'between', 'option',
           'options_of', 'regular_expression', 'same_as']
