"""Weft's policy SDK for Python: write a pricing, scheduling or sharing policy as
a plain class, and let the SDK do the component glue.

- ``log.info(...)`` (and ``trace``, ``debug``, ``warn``, ``error``) writes one
  line into the host's log through ``weft:policy/host.log``; run natively (in
  unit tests) the lines go to stderr.
- ``Params`` reads ``configure``'s ``key=value`` pairs as typed values; a key
  the policy never reads, other than a standard key of its kind, refuses the
  load with a message naming it.
- ``weft_policy.pricing``, ``.scheduling`` and ``.sharing`` each hold a
  ``Policy`` base class, typed views of the host's inputs (rows instead of
  columns) and ``export``, which builds the classes componentize-py looks for
  (``WitWorld`` and the kind's interface class). Every export is wrapped: an
  exception is logged through ``host.log`` with its traceback before the call
  traps, and ``configure`` turns one into ``err`` instead.

Integers are Python ints: 64-bit values arrive whole. Nothing here imports the
generated ``wit_world`` bindings except ``export``, so the policy and its
tests run natively with plain ``pytest``.
"""

from .log import log
from .params import ParamError, Params

__all__ = ["log", "ParamError", "Params"]
