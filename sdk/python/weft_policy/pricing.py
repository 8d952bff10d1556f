"""Pricing policies (world ``pricing-policy``): the ``Policy`` base class an
author subclasses, the rows it sees, and ``export``, the component glue.

An author writes ``price(row, multiplicators)`` for one container's usage; the
SDK prices a batch row by row, so a row's charge can only depend on that row,
as the contract requires, and checks each charge is finite and at least 0.
"""

import math
from typing import Any, Iterable, List, NamedTuple, Tuple, Type

from . import _component
from .columns import rows
from . import params as _params
from .params import Params

# The quota settings the host always passes first (wit/pricing.wit). A policy
# reads those it uses; the others are accepted and ignored.
STANDARD_KEYS = (
    "price.base.general",
    "price.base.gpu",
    "multiplicator.threshold.general",
    "multiplicator.threshold.gpu",
    "multiplicator.increment.general",
    "multiplicator.increment.gpu",
    "minimum.charged.mb",
    "minimum.charged.gpu",
)


class Utilization(NamedTuple):
    """Cluster utilization as fractions of capacity, each finite and at
    least 0 (above 1 when demand exceeds capacity)."""

    memory: float
    vcores: float
    gpus: float


class Multiplicators(NamedTuple):
    """Price multiplicators: ``general`` for CPU and memory, ``gpu`` for GPUs."""

    general: float
    gpu: float


class UsageRow(NamedTuple):
    """One container's use since it was last charged."""

    seconds: float
    memory_mb: int
    vcores: int
    gpus: int


class Policy:
    """A pricing policy. Subclass it, set ``name`` and ``version``, and write
    ``price``; ``configure`` and ``multiplicators`` have defaults (no
    parameters of its own, multiplicators always 1)."""

    name = "pricing-policy"
    version = "0.1.0"

    def configure(self, params: Params) -> None:
        """Reads the parameters this policy uses (standard keys included)."""

    def multiplicators(self, utilization: Utilization) -> Multiplicators:
        """The multiplicators for this utilization: finite, at least 0."""
        return Multiplicators(general=1.0, gpu=1.0)

    def price(self, row: UsageRow, multiplicators: Multiplicators) -> float:
        """One container's charge in credits: finite, at least 0."""
        raise NotImplementedError(f"{type(self).__name__} has no price method")


def usage_rows(usage: Any) -> List[UsageRow]:
    """The WIT ``usage`` record (any object with its four columns) as rows."""
    return rows("usage", usage, ("seconds", "memory-mb", "vcores", "gpus"), UsageRow)


def charge(policy: Policy, usage: Any, multiplicators: Multiplicators) -> List[float]:
    """What ``charge`` answers: one price per row, in order. A price that is
    not a finite number at least 0 raises, naming the row."""
    charges = []
    for i, row in enumerate(usage_rows(usage)):
        price = policy.price(row, multiplicators)
        if isinstance(price, bool) or not isinstance(price, (int, float)):
            raise TypeError(f"price of row {i} ({row}) is {price!r}, not a number")
        price = float(price)
        if not math.isfinite(price) or price < 0:
            raise ValueError(f"price of row {i} ({row}) is {price}: a charge must be finite and at least 0")
        charges.append(price)
    return charges


def checked_multiplicators(policy: Policy, utilization: Utilization) -> Multiplicators:
    """``policy.multiplicators``, refused unless both are finite and at least 0."""
    answer = policy.multiplicators(utilization)
    general, gpu = float(answer.general), float(answer.gpu)
    for name, value in (("general", general), ("gpu", gpu)):
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"multiplicator {name} is {value}: it must be finite and at least 0")
    return Multiplicators(general, gpu)


def configured(policy_class: Type[Policy], pairs: Iterable[Tuple[str, str]]) -> Policy:
    """A new ``policy_class`` object configured with ``pairs`` as the host
    would (this kind's standard keys known); raises ParamError. For tests."""
    return _params.configured(policy_class, pairs, STANDARD_KEYS)


def export(policy_class: Type[Policy]) -> Tuple[Type, Type]:
    """The ``WitWorld`` and ``Pricing`` classes componentize-py looks for in the
    app module: ``WitWorld, Pricing = pricing.export(MyPricing)``."""
    from wit_world.exports import pricing as wit

    _component.use_host_log()
    active = _component.Active(policy_class, "pricing", STANDARD_KEYS)

    def multiplicators(utilization: Any) -> Any:
        view = Utilization(utilization.memory, utilization.vcores, utilization.gpus)
        answer = checked_multiplicators(active.policy, view)
        return wit.PriceMultiplicators(general=answer.general, gpu=answer.gpu)

    def charge_batch(usage: Any, multiplicators: Any) -> List[float]:
        view = Multiplicators(multiplicators.general, multiplicators.gpu)
        return charge(active.policy, usage, view)

    guarded_multiplicators = _component.guarded("multiplicators", multiplicators)
    guarded_charge = _component.guarded("charge", charge_batch)

    class Pricing:
        def multiplicators(self, utilization: Any) -> Any:
            return guarded_multiplicators(utilization)

        def charge(self, usage: Any, multiplicators: Any) -> List[float]:
            return guarded_charge(usage, multiplicators)

    return _component.world_class(active), Pricing
