"""Puts the SDK (the folder above) on the import path, as a generated project has it."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
