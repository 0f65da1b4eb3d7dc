"""Traffic tools: one module per tool, each with a parser of its real output and a runner."""
from .base import Server, Target, ToolFailed, ToolResult  # noqa: F401
