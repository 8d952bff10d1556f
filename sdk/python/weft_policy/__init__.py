"""Weft's policy SDK for Python: write a pricing, scheduling or sharing policy as
a plain class, and let the SDK do the component glue.

- ``log.info(...)`` (and ``trace``, ``debug``, ``warn``, ``error``) writes one
  line into the host's log through ``weft:policy/host.log``; run natively (in
  unit tests) the lines go to stderr.
- ``Params`` reads ``configure``'s ``key=value`` pairs as typed values (and
  families of keys, ``params.with_prefix("project.")``); a key the policy
  never reads, other than a standard key of its kind, refuses the load with a
  message naming it.
- ``weft_policy.pricing``, ``.scheduling`` and ``.sharing`` each hold a
  ``Policy`` base class, typed views of the host's inputs (rows instead of
  columns, WIT enums as their names) and ``export``, which builds the classes
  componentize-py looks for (``WitWorld`` and the kind's interface class).
  What the host sends is checked as the WIT promises it (columns of one
  length, indices in range, finite numbers where it says so): pricing and
  scheduling input that breaks a promise traps with a message naming it;
  sharing puts it in ``admission.problem`` for the policy to answer. Every
  export is wrapped: an exception is logged through ``host.log`` with its
  traceback before the call traps, and ``configure`` turns one into ``err``
  instead.
- ``weft_policy.scheduling.keep_rules`` cuts a round's placements to the
  host's partition, constraint and gang rules, and ``schedule_keeping_rules``
  wraps a round with it, running it again while it places gangs in part:
  first with the first of them alone in play, then without it (the Rust
  SDK's functions of the same names).

The SDK implements ``weft:policy@0.3.0``. Integers are Python ints: 64-bit
values arrive whole. Nothing here imports the generated ``wit_world``
bindings except ``export``, so the policy and its tests run natively with
plain ``pytest``.
"""

from .log import log
from .params import ParamError, Params

__all__ = ["log", "ParamError", "Params"]
