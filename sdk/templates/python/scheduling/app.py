"""The component's entry point: componentize-py looks here for ``WitWorld`` and
``Scheduling``, which the SDK builds around the policy class."""

from weft_policy import scheduling

from policy import Fifo

WitWorld, Scheduling = scheduling.export(Fifo)
