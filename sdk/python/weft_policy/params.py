"""``Params``: ``configure``'s ``key=value`` pairs read as typed values, with
the standard keys of the policy's kind known and every other unread key
refused."""

import math
import re
from typing import Any, Iterable, List, Optional, Sequence, Tuple, Type

# Bounds on what the host may hand over, so a hostile list cannot make
# configure slow or its messages huge.
MAX_PARAMS = 1024
MAX_KEY_CHARS = 256
MAX_VALUE_CHARS = 4096

# A decimal number as an operator writes one: 1, -2.5, .5, 3., 1e-3.
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_INTEGER = re.compile(r"[+-]?\d+")


class ParamError(Exception):
    """A parameter the policy refuses; the message names it. ``configure``
    answers ``err`` with it and the host keeps the policy it had."""


class Params:
    """The parameters of one ``configure`` call.

    Each reader (``number``, ``integer``, ``string``, ``boolean``) takes the
    key's last value, or ``default`` when the key was not given, and marks the
    key as known; ``with_prefix`` lists (and marks) a family of keys such as
    ``project.NAME``. After the policy's ``configure`` the SDK calls
    ``refuse_unknown``: a key given but never read, and not one of
    ``standard_keys``, refuses the load.
    """

    def __init__(
        self,
        pairs: Iterable[Tuple[str, str]],
        policy: str,
        standard_keys: Sequence[str] = (),
    ) -> None:
        self.policy = policy
        self.standard_keys = tuple(standard_keys)
        self._values: dict = {}
        self._read: set = set()
        # Families read with with_prefix, named in refuse_unknown's message.
        self._prefixes: list = []
        for count, (key, value) in enumerate(pairs, start=1):
            if count > MAX_PARAMS:
                raise ParamError(f"{policy}: at most {MAX_PARAMS} parameters are accepted")
            if len(key) > MAX_KEY_CHARS:
                raise ParamError(
                    f"{policy}: parameter key {key[:40]!r}… is longer than {MAX_KEY_CHARS} characters"
                )
            if len(value) > MAX_VALUE_CHARS:
                raise ParamError(
                    f"{policy}: the value of {key} is longer than {MAX_VALUE_CHARS} characters"
                )
            # Later pairs win: an operator's --param overrides the standard one.
            self._values[key] = value

    def given(self, key: str) -> bool:
        """Whether the key was given at all (reading nothing)."""
        return key in self._values

    def with_prefix(self, prefix: str) -> List[Tuple[str, str]]:
        """Every key given that starts with ``prefix``, as (the rest of the
        key, its value), in the order first given, each key once (its last
        value). Marks them all as known, as the Rust SDK's
        ``Params::with_prefix`` does; read a value with a typed reader
        (``params.number(prefix + rest, ...)``) to check it."""
        if prefix not in self._prefixes:
            self._prefixes.append(prefix)
        family = []
        for key, value in self._values.items():
            if key.startswith(prefix):
                self._read.add(key)
                family.append((key[len(prefix):], value.strip()))
        return family

    def _raw(self, key: str) -> Optional[str]:
        self._read.add(key)
        value = self._values.get(key)
        return None if value is None else value.strip()

    def number(
        self,
        key: str,
        default: float,
        *,
        min: Optional[float] = None,
        max: Optional[float] = None,
    ) -> float:
        """A finite decimal number within [min, max]."""
        raw = self._raw(key)
        if raw is None:
            return default
        value = float(raw) if _NUMBER.fullmatch(raw) else math.nan
        if not math.isfinite(value) or _outside(value, min, max):
            raise ParamError(f"{self.policy}: {key} must be {_describe('a number', min, max)}, not {raw!r}")
        return value

    def integer(
        self,
        key: str,
        default: int,
        *,
        min: Optional[int] = None,
        max: Optional[int] = None,
    ) -> int:
        """A whole number within [min, max]."""
        raw = self._raw(key)
        if raw is None:
            return default
        if not _INTEGER.fullmatch(raw) or _outside(int(raw), min, max):
            raise ParamError(
                f"{self.policy}: {key} must be {_describe('a whole number', min, max)}, not {raw!r}"
            )
        return int(raw)

    def string(self, key: str, default: str, *, choices: Optional[Sequence[str]] = None) -> str:
        """Text, one of ``choices`` when they are given."""
        raw = self._raw(key)
        if raw is None:
            return default
        if choices is not None and raw not in choices:
            raise ParamError(f"{self.policy}: {key} must be {' or '.join(choices)}, not {raw!r}")
        return raw

    def boolean(self, key: str, default: bool) -> bool:
        """``true`` or ``false``."""
        raw = self._raw(key)
        if raw is None:
            return default
        if raw not in ("true", "false"):
            raise ParamError(f"{self.policy}: {key} must be true or false, not {raw!r}")
        return raw == "true"

    def unknown(self) -> list:
        """Keys given that the policy did not read and its kind does not define."""
        return [
            key for key in self._values if key not in self._read and key not in self.standard_keys
        ]

    def refuse_unknown(self) -> None:
        """Raises ParamError naming the first unknown key, if any."""
        unknown = self.unknown()
        if not unknown:
            return
        key = unknown[0]
        # A family is named once (``project.*``), not by the members given.
        known = sorted(
            read
            for read in self._read - set(self.standard_keys)
            if not read.startswith(tuple(self._prefixes))
        )
        known += [f"{prefix}*" for prefix in self._prefixes]
        takes = f"it takes {', '.join(known)}" if known else "it takes none of its own"
        raise ParamError(f"{self.policy} has no parameter {key!r} (given {key}={self._values[key]}); {takes}")


def configured(policy_class: Type, pairs: Iterable[Tuple[str, str]], standard_keys: Sequence[str]) -> Any:
    """A new ``policy_class`` object configured with ``pairs``, as the host
    configures one; raises ParamError for a bad value or an unread key that is
    not one of ``standard_keys``."""
    candidate = policy_class()
    params = Params(pairs, str(candidate.name), standard_keys)
    candidate.configure(params)
    params.refuse_unknown()
    return candidate


def _outside(value: float, low: Optional[float], high: Optional[float]) -> bool:
    return (low is not None and value < low) or (high is not None and value > high)


def _describe(what: str, low: Optional[float], high: Optional[float]) -> str:
    if low is not None and high is not None:
        return f"{what} from {low:g} to {high:g}"
    if low is not None:
        return f"{what} at least {low:g}"
    if high is not None:
        return f"{what} at most {high:g}"
    return what
