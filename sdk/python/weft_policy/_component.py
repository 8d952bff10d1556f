"""The component glue every kind shares: the host's log as the SDK's sink, the
active policy object, ``describe`` and ``configure``, and the wrapper that logs
an export's exception with its traceback before the call traps.

Only ``export`` (in each kind's module) calls in here, and only inside a
component: this is where the generated ``wit_world`` bindings are imported.
"""

import traceback
from typing import Any, Callable, Sequence, Type

from .log import log
from .params import ParamError, configured


def use_host_log() -> None:
    """Points ``log`` at ``weft:policy/host.log``."""
    from wit_world.imports import host

    levels = {
        "trace": host.Level.TRACE,
        "debug": host.Level.DEBUG,
        "info": host.Level.INFO,
        "warn": host.Level.WARN,
        "error": host.Level.ERROR,
    }
    log.use_sink(lambda level, message: host.log(levels[level], message))


def guarded(export: str, call: Callable[..., Any]) -> Callable[..., Any]:
    """``call``, but an exception other than a ``result``'s ``Err`` is logged
    through the host with its traceback and re-raised, which traps the call:
    the host then answers from the previous good version."""
    from componentize_py_types import Err

    def run(*args: Any) -> Any:
        try:
            return call(*args)
        except Err:
            raise
        except BaseException:
            log.error(f"{export} failed:\n{traceback.format_exc()}")
            raise

    return run


class Active:
    """The policy object in force in this instance. Each ``configure`` builds
    a fresh one, so a refused configure leaves the previous one untouched and
    configure is repeatable."""

    def __init__(self, policy_class: Type, kind: str, standard_keys: Sequence[str]) -> None:
        self.policy_class = policy_class
        self.kind = kind
        self.standard_keys = standard_keys
        # Until configure: the class's defaults (the host configures first).
        self.policy = policy_class()

    def describe(self) -> Any:
        from wit_world.imports import types

        kinds = {
            "pricing": types.PolicyKind.PRICING,
            "scheduling": types.PolicyKind.SCHEDULING,
            "sharing": types.PolicyKind.SHARING,
        }
        return types.PolicyInfo(
            name=str(self.policy.name),
            version=str(self.policy.version),
            kind=kinds[self.kind],
        )

    def configure(self, pairs: list) -> None:
        """Configures a new policy object and makes it the active one, or
        raises ``Err(message)``: a ParamError's message as it is, any other
        exception logged with its traceback and named in the message."""
        from componentize_py_types import Err

        name = str(self.policy.name)
        try:
            candidate = configured(self.policy_class, pairs, self.standard_keys)
        except ParamError as refusal:
            raise Err(str(refusal))
        except Exception as error:
            log.error(f"configure failed:\n{traceback.format_exc()}")
            raise Err(f"{name}: configure failed: {type(error).__name__}: {error}")
        self.policy = candidate


def world_class(active: Active) -> Type:
    """The ``WitWorld`` class componentize-py calls for the base world's
    exports."""

    class WitWorld:
        def describe(self) -> Any:
            return guarded("describe", active.describe)()

        def configure(self, params: list) -> None:
            active.configure(params)

    return WitWorld
