"""The component's entry point: componentize-py looks here for ``WitWorld`` and
``Pricing``, which the SDK builds around the policy class."""

from weft_policy import pricing

from policy import ContextPricing

WitWorld, Pricing = pricing.export(ContextPricing)
