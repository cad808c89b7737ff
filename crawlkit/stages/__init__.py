"""The stages: one module per command, named like the command (see README.md)."""
