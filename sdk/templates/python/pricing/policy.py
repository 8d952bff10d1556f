"""{{name}}: a pricing policy. It starts as a copy of Weft's flat-pricing, the
simplest one, to change into your own.

A pricing policy answers two questions for the host:

1. What are the price multiplicators now? The host asks every multiplicator
   interval with the cluster's utilization. A flat policy ignores it: the
   multiplicators are always 1.
2. What does this usage cost? The host sends a batch of containers' usage
   (seconds since each was last charged, its memory, vcores and GPUs); the SDK
   calls ``price`` once per container, in order.

The price of one container is HOPS-1385's formula for each resource,
``seconds × multiplicator × base price × allocated / unit``, and the container
pays for its dominant (most expensive) resource.

Everything here is plain Python: ``test_policy.py`` runs it natively with
pytest. ``app.py`` is the only file that knows it becomes a component.
"""

from weft_policy import Params, ParamError
from weft_policy.pricing import Multiplicators, Policy, UsageRow, Utilization


class FlatPricing(Policy):
    name = "{{name}}"
    version = "0.1.0"

    def __init__(self) -> None:
        # HopsYARN's defaults: base price 1 for both, 1024 MB and 1 GPU per unit.
        self.base_price_general = 1.0
        self.base_price_gpu = 1.0
        self.unit_memory_mb = 1024.0
        self.unit_gpus = 1.0

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

    def multiplicators(self, utilization: Utilization) -> Multiplicators:
        # Flat: the price never moves with demand.
        return Multiplicators(general=1.0, gpu=1.0)

    def price(self, row: UsageRow, multiplicators: Multiplicators) -> float:
        # Flat: the multiplicators are always 1, so the host's are not needed.
        # One vcore is one unit: the minimum allocation.
        cpu = row.seconds * self.base_price_general * row.vcores
        memory = row.seconds * self.base_price_general * row.memory_mb / self.unit_memory_mb
        gpu = row.seconds * self.base_price_gpu * row.gpus / self.unit_gpus
        # The container pays for its dominant resource.
        return max(cpu, memory, gpu)
