"""The ``crawlkit`` command: thin typer wrappers over the :mod:`crawlkit` library."""
