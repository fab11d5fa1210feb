"""gitliza: a git-native blackboard for teams of coding agents."""
from __future__ import annotations

__version__ = "0.1.0"
