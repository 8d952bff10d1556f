"""{{name}}: a pricing policy. It starts as "context pricing", Weft's flat
pricing with two factors from the row's context, to change into your own.

A pricing policy answers three questions for the host:

1. What are the price multiplicators now? The host asks every multiplicator
   interval with the market: the cluster's utilization, each partition's and
   leaf queue's load, and what this answered last time. This policy is flat:
   the multiplicators are always 1.
2. What does this usage cost? The host sends a batch of containers' usage
   (seconds since each was last charged, over [start, end] on its clock, its
   memory, vcores and GPUs, and its context: app, queue, user, project, node
   label and attributes, …); the SDK calls ``price`` once per container.
3. What would this ask cost? ``quote``: the SDK's default prices one
   container's row and multiplies by the containers, so a quote is what the
   charges will be.

The price of one container is HOPS-1385's formula for each resource,
``seconds × base price × allocated / unit``, the container paying for its
dominant (most expensive) resource, then times

- its project's factor, ``project.NAME=FACTOR`` (1 for a project without one),
- a time factor ``1 − f × (1 − night.factor)``, f the fraction of its
  interval in the night (``night.start-hour`` to ``night.end-hour``, UTC,
  22 to 6 by default): with ``night.factor=0.5`` nights cost half.

So ``--param project.ml=2 --param night.factor=0.5`` charges project "ml"
twice what the others pay, and nights half price.

Everything here is plain Python: ``test_policy.py`` runs it natively with
pytest. ``app.py`` is the only file that knows it becomes a component.
"""

from typing import Dict

from weft_policy import ParamError, Params
from weft_policy.pricing import Market, Multiplicators, Policy, UsageRow, night_fraction


class ContextPricing(Policy):
    name = "{{name}}"
    version = "0.1.0"

    def __init__(self) -> None:
        # HopsYARN's defaults: base price 1 for both, 1024 MB and 1 GPU per unit.
        self.base_price_general = 1.0
        self.base_price_gpu = 1.0
        self.unit_memory_mb = 1024.0
        self.unit_gpus = 1.0
        # Project name → factor; a project not here pays 1.
        self.project_factors: Dict[str, float] = {}
        # 1.0: nights cost what days cost.
        self.night_factor = 1.0
        self.night_start_hour = 22
        self.night_end_hour = 6

    def configure(self, params: Params) -> None:
        # Standard quota keys: the host always passes them. The multiplicator
        # thresholds and increments are standard too, so leaving them unread
        # is fine; any other key this does not read refuses the load.
        self.base_price_general = params.number("price.base.general", 1.0, min=0)
        self.base_price_gpu = params.number("price.base.gpu", 1.0, min=0)
        self.unit_memory_mb = params.number("minimum.charged.mb", 1024.0, min=0)
        self.unit_gpus = params.number("minimum.charged.gpu", 1.0, min=0)
        if self.unit_memory_mb == 0 or self.unit_gpus == 0:
            raise ParamError(
                f"{self.name}: a unit (minimum.charged.mb, minimum.charged.gpu) must be above 0"
            )
        # project.NAME: any number of them, each read as a number so a bad
        # one is refused naming its key.
        self.project_factors = {}
        for project, _ in params.with_prefix("project."):
            if not project:
                raise ParamError(f"{self.name}: project. needs a project name (project.NAME=FACTOR)")
            self.project_factors[project] = params.number(f"project.{project}", 1.0, min=0)
        self.night_factor = params.number("night.factor", 1.0, min=0)
        self.night_start_hour = params.integer("night.start-hour", 22, min=0, max=23)
        self.night_end_hour = params.integer("night.end-hour", 6, min=0, max=23)

    def multiplicators(self, market: Market) -> Multiplicators:
        # Flat: the price never moves with demand. A surge price would rise
        # with market.utilization; one that moves smoothly would step from
        # market.last, e.g. last.general + 0.2 × (target − last.general),
        # since the host hands back what this answered the time before.
        return Multiplicators(general=1.0, gpu=1.0)

    def price(self, row: UsageRow, multiplicators: Multiplicators) -> float:
        # Flat: the multiplicators are always 1, so the host's are not needed.
        # One vcore is one unit: the minimum allocation.
        cpu = row.seconds * self.base_price_general * row.vcores
        memory = row.seconds * self.base_price_general * row.memory_mb / self.unit_memory_mb
        gpu = row.seconds * self.base_price_gpu * row.gpus / self.unit_gpus
        # The container pays for its dominant resource…
        dominant = max(cpu, memory, gpu)
        # …times its project's factor…
        project = self.project_factors.get(row.context.project, 1.0)
        # …times the time factor: the night part of its interval at the
        # night factor, the rest at 1.
        night = night_fraction(row.start_ms, row.end_ms, self.night_start_hour, self.night_end_hour)
        time = 1.0 - night * (1.0 - self.night_factor)
        return dominant * project * time

    # quote: the SDK's default, containers × price of one container's row.
