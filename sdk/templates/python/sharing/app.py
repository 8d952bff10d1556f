"""The component's entry point: componentize-py looks here for ``WitWorld`` and
``Sharing``, which the SDK builds around the policy class."""

from weft_policy import sharing

from policy import NoOverCommit

WitWorld, Sharing = sharing.export(NoOverCommit)
